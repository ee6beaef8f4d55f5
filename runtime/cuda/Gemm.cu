// Gemm.cu — tgc's own GEMM on Hopper (sm_90a): out [m, n] = alpha a [m, k] op(b), b [n, k]
// (trans_b) or [k, n], bf16 operands, f32 accumulators, bf16 out, with its epilogue (none,
// + bias, + bias then GELU with the pre-activation stored too). docs/design-notes.md "A GEMM
// with its own epilogue" says why and what it measured: 0.985x cuBLASLt's speed at 8192^3,
// 0.80-0.89x at the examples' K 768-1024 and 0.74-0.81x with GELU (H200, 2026-11-30), so the
// runtime, which times cuBLASLt and the two persistent schedules per shape (Kernels.cu
// ownGemmChoice, TGRT_OWN_GEMM), still runs cuBLASLt at the examples' shapes.
//
// Structure (the Hopper warp-specialized GEMM of CUTLASS's sm90 kernels and of
// FlashAttention-3, Shah et al. 2024, section 3.1; written from the PTX ISA, no code taken):
// - Two consumer warpgroups (threads 0-255) and a producer warp (threads 256-287; with
//   PersistentEpilogue a third warpgroup whose other three warps are the epilogue).
// - The producer's first thread streams the k tiles (64 deep) of a and b into a ring of
//   STAGES shared-memory stages with TMA (cp.async.bulk.tensor.2d, 128-byte swizzle; TMA's
//   zero fill covers the edges of m, n and k). Each stage has two mbarriers: `full` (one
//   arrival by the producer announcing the stage's bytes, completed by the copies) and
//   `empty` (one arrival per consuming warpgroup once its MMAs on the stage are done).
// - A consumer warpgroup waits on `full`, issues the k step's wgmma (A K-major, B K-major or
//   MN-major, both through descriptors into the swizzled stage), commits, and waits for the
//   previous stage's group (wait_group 1) before releasing that stage: one group of MMAs is
//   always in flight.
// - The schedules (GemmSchedule, CudaRuntime.h): a block per 128 x 128 or 128 x 256 tile
//   (Cooperative*), the persistent ping-pong over 128 x 128 tiles, the persistent cooperative
//   128 x 256 (4 stages; stores through two 64 x 64 boxes of shared memory and TMA), that
//   with the epilogue on its own warps (3 stages beside a whole-tile buffer), and that in
//   2-block clusters sharing b's tile by TMA multicast. Tiles are visited in groups of 8
//   tile rows per column sweep, so a group's rows of a stay in L2 while b's columns stream by.
// - The epilogue: alpha, + bias (f32 add), rounded to bf16 (RNE); with GELU the rounded sum is
//   stored as `pre` and out = GELU(pre) rounded, GELU as x sigmoid(2u) with the hardware
//   exponential (Gelu.cuh geluFast: within a bf16 unit in the last place of the exact value).
//
// Limits (checked, located errors): n and k multiples of 8 (TMA's 16-byte row pitch), all
// pointers 16-byte aligned (the bias 4-byte), a compute capability 9.0 device (the sm_90a
// cubin).
//
// The CPU emulator runs every schedule (tgrt-cuda-emu-check --gemm): TMA loads (multicast
// too) and stores, mbarriers (remote arrivals too), named barriers, stmatrix, clusters and
// the spin waits are emulated in runtime/cuda/emu.
#include "runtime/cuda/Dtype.cuh"
#include "runtime/cuda/Gelu.cuh"
#include "runtime/cuda/Hopper.cuh"
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/Swiglu.cuh"

#ifndef TGRT_CUDA_EMULATE
#include <cudaTypedefs.h> // PFN_cuTensorMapEncodeTiled
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tgrt_cuda {
namespace {
using namespace hopper;

constexpr int kGemmBM = 128;       ///< tile rows (2 consumer warpgroups x 64)
constexpr int kGemmBK = 64;        ///< k per stage: one 128-byte swizzle row of bf16
constexpr int kGemmConsumers = 2;  ///< consumer warpgroups
constexpr int kGemmThreads = kGemmConsumers * 128 + 32; ///< + the producer warp
constexpr int kGemmGroupM = 8;     ///< tile rows per column sweep (L2 reuse of a)

/// wgmma.mma_async m64n128k16, f32 += bf16 x bf16, A K-major and B K-major (TRANSB 0) or
/// MN-major (TRANSB 1) from shared memory (descriptors descA, descB); d: this thread's 64 accumulators (warp w of the warpgroup: rows
/// 16 w + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1) at d[4 j ..]). Issued, not waited for.
template <int TRANSB>
__device__ __forceinline__ void wgmmaSS128(float (&d)[64], uint64_t descA, uint64_t descB) {
#ifdef TGRT_CUDA_EMULATE
  emu::wgmma(d, 128, false, nullptr, descA, descB, TRANSB);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, %67;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(descA), "l"(descB), "r"(1), "n"(TRANSB));
#else
  (void)d;
  (void)descA;
  (void)descB;
  __trap();
#endif
}

/// wgmma.mma_async m64n256k16, f32 += bf16 x bf16, A K-major and B K-major (TRANSB 0) or
/// MN-major (TRANSB 1) from shared memory (descriptors descA, descB); d: this thread's 128 accumulators (warp w of the warpgroup: rows
/// 16 w + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1) at d[4 j ..]). Issued, not waited for.
template <int TRANSB>
__device__ __forceinline__ void wgmmaSS256(float (&d)[128], uint64_t descA, uint64_t descB) {
#ifdef TGRT_CUDA_EMULATE
  emu::wgmma(d, 256, false, nullptr, descA, descB, TRANSB);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
               "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
               "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
               "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
               "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, %131;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                 "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                 "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                 "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                 "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                 "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                 "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                 "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                 "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
               : "l"(descA), "l"(descB), "r"(1), "n"(TRANSB));
#else
  (void)d;
  (void)descA;
  (void)descB;
  __trap();
#endif
}

template <int BN, int TRANSB>
struct WgmmaTile;
template <int TRANSB>
struct WgmmaTile<128, TRANSB> {
  static __device__ __forceinline__ void mma(float (&d)[64], uint64_t a, uint64_t b) {
    wgmmaSS128<TRANSB>(d, a, b);
  }
};
template <int TRANSB>
struct WgmmaTile<256, TRANSB> {
  static __device__ __forceinline__ void mma(float (&d)[128], uint64_t a, uint64_t b) {
    wgmmaSS256<TRANSB>(d, a, b);
  }
};

/// B's stage layout and loads. TB 1: b [n, k] (K-major), one TMA box of 64 (k) x BN (n rows),
/// 128-byte swizzled rows of k. TB 0: b [k, n] (N contiguous, MN-major for wgmma), BN / 64
/// boxes of 64 (n) x 64 (k rows), each 8 KB: chunk c holds columns n0 + 64 c .. + 63.
/// CL > 1 (a cluster of CL blocks on the same columns of b): the block of rank `rank` loads
/// the CL-th part `rank` of the tile (TB 1: n rows BN / CL * rank .., one box of BN / CL rows;
/// TB 0: its BN / 64 / CL chunks) and multicasts it to every block of the cluster, so each
/// block's stage gets the whole tile and reads 1 / CL of it from L2.
template <int BN, int TB, int CL = 1>
struct BTile {
  static_assert(CL == 1 || (TB ? BN % (8 * CL) == 0 : (BN / 64) % CL == 0), "cluster split of B");
  static __device__ __forceinline__ void load(uint16_t* dst, const TensorMap* map, int kt,
                                              int n0, uint64_t* bar, unsigned rank = 0) {
    constexpr uint16_t kMask = (uint16_t)((1u << CL) - 1u);
    if (TB) {
      if (CL == 1)
        hopper::tmaLoad2d(dst, map, kt * kGemmBK, n0, bar);
      else
        hopper::tmaLoad2dMulticast(dst + rank * (BN / CL) * kGemmBK, map, kt * kGemmBK,
                                   n0 + (int)rank * (BN / CL), bar, kMask);
    } else {
      constexpr int kPart = BN / 64 / CL; // chunks per block
#pragma unroll
      for (int p = 0; p < kPart; ++p) {
        const int c = (int)rank * kPart + p;
        if (CL == 1)
          hopper::tmaLoad2d(dst + c * 64 * kGemmBK, map, n0 + 64 * c, kt * kGemmBK, bar);
        else
          hopper::tmaLoad2dMulticast(dst + c * 64 * kGemmBK, map, n0 + 64 * c, kt * kGemmBK, bar,
                                     kMask);
      }
    }
  }
  /// The descriptor of k step kk (16 deep): K-major rows kk * 32 bytes in, 8-row groups 1024
  /// bytes apart; MN-major rows 16 kk .. of each chunk, 8-row k groups 1024 bytes apart, the
  /// 64-column chunks 8192 bytes apart (the leading byte offset).
  static __device__ __forceinline__ uint64_t desc(const uint16_t* b, int kk) {
    return TB ? wgDesc(b + kk * 16, 16, 1024) : wgDesc(b + kk * 16 * 64, 64 * kGemmBK * 2, 1024);
  }
};

/// Keeps the compiler from moving or reading accumulators around in-flight wgmma.
template <int N>
__device__ __forceinline__ void fenceAcc(float (&x)[N]) {
#ifndef TGRT_CUDA_EMULATE
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(x[i])::"memory");
#else
  (void)x;
#endif
}

/// The epilogue of one warpgroup's 64 x BN accumulator block (rows r0 .., columns n0 ..):
/// alpha, + bias (f32), rounded to bf16 (RNE) and stored (EPI 0 none, 1 bias, 2 bias + GELU:
/// pre = the rounded sum, out = GELU(pre) rounded). Rows >= M and columns >= N are skipped
/// (N % 8 == 0, so a column pair is either whole or out).
template <int EPI, int BN>
__device__ __forceinline__ void storeTile(const float (&acc)[BN / 2], int r0, int n0,
                                          uint16_t* __restrict__ out, uint16_t* __restrict__ pre,
                                          const uint16_t* __restrict__ bias, int M, int N,
                                          float alpha) {
  const int lane = (int)threadIdx.x % 32, w = ((int)threadIdx.x / 32) % 4;
  const int row0 = r0 + w * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = n0 + 8 * j + 2 * (lane % 4);
    if (col >= N) continue;
    float b0 = 0.0f, b1 = 0.0f;
    if (EPI >= 1) {
      b0 = bf16ToFloat(bias[col]);
      b1 = bf16ToFloat(bias[col + 1]);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row >= M) continue;
      const size_t at = (size_t)row * (size_t)N + (size_t)col;
      uint32_t p = packBf16(alpha * acc[4 * j + 2 * h] + b0, alpha * acc[4 * j + 2 * h + 1] + b1);
      if (EPI == 2) {
        *reinterpret_cast<uint32_t*>(pre + at) = p;
        p = packBf16(geluFast(bf16ToFloat((uint16_t)(p & 0xffffu))),
                     geluFast(bf16ToFloat((uint16_t)(p >> 16))));
      }
      *reinterpret_cast<uint32_t*>(out + at) = p;
    }
  }
}

/// Bytes of a warpgroup's staging buffer in storeTileStaged: two 64 x 64 bf16 boxes.
constexpr int kStagedBoxBytes = 64 * 64 * 2;
constexpr int kStagedBytes = 2 * kStagedBoxBytes;

/// storeTile through shared memory and TMA (the persistent cooperative kernel), one 64 x 64
/// box at a time (the subtiled epilogue of CUTLASS's sm90 collective epilogues): the
/// warpgroup writes the box, rounded as storeTile does, into one of the two 8 KB halves of
/// `stage` (kStagedBytes; stmatrix into the 128-byte swizzle, conflict-free), then one thread
/// stores it with cp.async.bulk.tensor (rows >= M, columns >= N clipped by TMA) while the
/// warpgroup writes the next box into the other half. GELU: each box's pre, then its out.
/// Named barrier `bar` (128 threads) orders the warpgroup; before a half is written again
/// its previous store must have read it (wait_group.read 1: all but the newest group).
/// Small staging leaves shared memory for a fourth pipeline stage.
template <int EPI, int BN>
__device__ __forceinline__ void storeTileStaged(float (&acc)[BN / 2], uint16_t* stage, int r0,
                                                int n0, const TensorMap* mapOut,
                                                const TensorMap* mapPre,
                                                const uint16_t* __restrict__ bias, int N,
                                                float alpha, int bar) {
  const int lane = (int)threadIdx.x % 32, w = ((int)threadIdx.x / 32) % 4;
  const int q = lane % 4;
  const bool leader = threadIdx.x % 128 == 0;
  unsigned char* st = reinterpret_cast<unsigned char*>(stage);
  int half = 0; // the half the next box goes into
  // Writes the box's pairs (pair(j, h): the u32 of columns 8 j + 2 q of row 16 w + g + 8 h,
  // j within the box) into the free half and stores it at column c0 of `map`.
  auto emit = [&](const TensorMap* map, int c0, auto&& pair) {
    unsigned char* box = st + half * kStagedBoxBytes;
    if (leader) bulkWaitRead<1>();
    namedBarrierSync(bar, 128);
    // stmatrix x4 of the 8 x 8 matrices (j, h), (j, h + 1), (j + 1, h), (j + 1, h + 1):
    // matrix (j, h) is the warp's rows 16 w + 8 h .. + 7, the box's columns 8 j .. + 7; lane
    // 8 i + r gives the address of row r of the i-th (its 16 bytes at chunk j ^ r: the swizzle).
    const int mi = lane / 8, mr = lane % 8;
#pragma unroll
    for (int j = 0; j < 8; j += 2) {
      const int jj = j + mi / 2, hh = mi % 2;
      unsigned char* row = box + (16 * w + 8 * hh + mr) * 128 + ((jj ^ mr) << 4);
      stmatrixX4(row, pair(j, 0), pair(j, 1), pair(j + 1, 0), pair(j + 1, 1));
    }
    fenceProxyAsync();
    namedBarrierSync(bar, 128);
    if (leader) {
      if (c0 < N) hopper::tmaStore2d(map, box, c0, r0);
      bulkCommit();
    }
    half ^= 1;
  };
#pragma unroll
  for (int b = 0; b < BN / 64; ++b) {
    auto sum = [&](int j, int h) { // the bias pair (columns 8 j + 2 q, + 1): one word
      const int x = 4 * (8 * b + j) + 2 * h, col = n0 + 64 * b + 8 * j + 2 * q;
      const uint32_t bp =
          EPI >= 1 && col < N ? __ldg(reinterpret_cast<const uint32_t*>(bias + col)) : 0u;
      return packBf16(alpha * acc[x] + bitsFloat(bp << 16),
                      alpha * acc[x + 1] + bitsFloat(bp & 0xffff0000u));
    };
    if (EPI == 2) {
      emit(mapPre, n0 + 64 * b, sum);
      emit(mapOut, n0 + 64 * b, [&](int j, int h) {
        const uint32_t p = sum(j, h);
        return packBf16(geluFast(bf16ToFloat((uint16_t)(p & 0xffffu))),
                        geluFast(bf16ToFloat((uint16_t)(p >> 16))));
      });
    } else {
      emit(mapOut, n0 + 64 * b, sum);
    }
  }
}

/// The origin (m0, n0) of tile t of a tilesM x tilesN grid of BM x BN tiles, visited in
/// groups of kGemmGroupM tile rows per column sweep (a group's rows of a stay in L2).
template <int BM, int BN>
__device__ __forceinline__ void tileOrigin(int t, int tilesM, int tilesN, int& m0, int& n0) {
  const int perGroup = kGemmGroupM * tilesN;
  const int first = t / perGroup * kGemmGroupM;
  const int groupRows = tilesM - first < kGemmGroupM ? tilesM - first : kGemmGroupM;
  m0 = (first + (t % perGroup) % groupRows) * BM;
  n0 = (t % perGroup) / groupRows * BN;
}

/// The origin of tile u of this block when clusters of CL blocks take CL tiles stacked along
/// m (CL x 128 rows, the same columns of b) at a time: the cluster's tile u of the grid of
/// CL x 128 by BN tiles (tileOrigin's order), this block's 128 rows (rank) in it.
template <int BN, int CL>
__device__ __forceinline__ void clusterTileOrigin(int u, int tilesM, int tilesN, unsigned rank,
                                                  int& m0, int& n0) {
  tileOrigin<kGemmBM * CL, BN>(u, (tilesM + CL - 1) / CL, tilesN, m0, n0);
  m0 += (int)rank * kGemmBM;
}

/// A consumer warpgroup releases a stage: one arrival on its `empty` barrier in every block
/// of the cluster (their producers multicast into this block's stage too). Called by the
/// warpgroup's threads t < CL (t = its thread index): thread t arrives at block t's barrier,
/// so the CL arrivals go out at once (CUTLASS's consumer_release spreads them the same way).
template <int CL>
__device__ __forceinline__ void releaseStage(uint64_t* empty, int t) {
  if (CL == 1)
    mbarArrive(empty);
  else
    mbarArriveCluster(empty, (unsigned)t);
}

/// The work of one block of a (persistent) grid: the tiles of out, the k tiles, and the units
/// it walks, first, first + grid, ... (with clusters of CL blocks: its cluster's units, tile
/// stacks of CL x 128 rows, of which it takes row block `rank`).
struct TileWalk {
  int tilesM, tilesN, kTiles, grid, first, myTiles;
  unsigned rank;
};
/// The walk of this block: every unit when PERSIST, else its one tile (blockIdx.x).
template <int BN, int CL, bool PERSIST>
__device__ __forceinline__ TileWalk tileWalk(int M, int N, int K) {
  static_assert(CL == 1 || PERSIST, "clusters only in the persistent schedules");
  TileWalk w;
  w.tilesM = (M + kGemmBM - 1) / kGemmBM;
  w.tilesN = (N + BN - 1) / BN;
  w.kTiles = (K + kGemmBK - 1) / kGemmBK;
  const int units = (w.tilesM + CL - 1) / CL * w.tilesN;
  w.grid = PERSIST ? (int)gridDim.x / CL : 1;
  w.first = (int)blockIdx.x / CL;
  w.myTiles = PERSIST ? (w.first < units ? (units - w.first + w.grid - 1) / w.grid : 0) : 1;
  w.rank = CL > 1 ? clusterCtaRank() : 0u;
  return w;
}

/// Thread 0 initialises the ring's barriers (`full`: the producer's one arrival; `empty`:
/// one per consumer warpgroup of each of the CL blocks) and runs more() (a kernel's own
/// barriers), then the block (with clusters: the cluster, before any remote arrival or
/// multicast) meets.
template <int STAGES, int CL, typename More>
__device__ __forceinline__ void initRing(uint64_t* full, uint64_t* empty, More more) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarInit(&full[s], 1);
      mbarInit(&empty[s], kGemmConsumers * CL);
    }
    more();
    fenceBarrierInit();
  }
  if (CL > 1)
    clusterSync();
  else
    __syncthreads();
}

/// Shared memory a kernel with BN-wide tiles and STAGES stages asks for: the stages, the
/// 2 x STAGES + 2 mbarriers and 1024 bytes to align the swizzled tiles.
constexpr size_t gemmSmemBytes(int bn, int stages, size_t staging) {
  return (size_t)stages * (kGemmBM + bn) * kGemmBK * 2 + staging + (2 * stages + 2) * 8 + 1024;
}

/// The producer's loop (its one thread): tiles first, + grid, ... (myTiles of them; with
/// clusters, CL > 1, the cluster's tiles, clusterTileOrigin), each k tile into stage
/// pos % STAGES of the ring (pos counts k tiles over all of this block's tiles), after the
/// stage's `empty` barrier completed its previous phase (an arrival per consumer warpgroup
/// of every block of the cluster). The stage's `full` barrier expects the whole A and B
/// tiles: A from this block's copy, B's parts from the cluster's multicasts.
template <int BN, int TB, int STAGES, int CL = 1>
__device__ __forceinline__ void produceTiles(const TensorMap* mapA, const TensorMap* mapB,
                                             uint16_t* sA, uint16_t* sB, uint64_t* full,
                                             uint64_t* empty, int first, int grid, int myTiles,
                                             int tilesM, int tilesN, int kTiles,
                                             unsigned rank = 0) {
  constexpr int kABytes = kGemmBM * kGemmBK * 2, kBBytes = BN * kGemmBK * 2;
  for (int i = 0; i < myTiles; ++i) {
    int m0, n0;
    clusterTileOrigin<BN, CL>(first + i * grid, tilesM, tilesN, rank, m0, n0);
    for (int kt = 0; kt < kTiles; ++kt) {
      const int pos = i * kTiles + kt, s = pos % STAGES;
      if (pos >= STAGES) mbarWait(&empty[s], (unsigned)(pos / STAGES - 1) & 1u);
      mbarArriveExpectTx(&full[s], kABytes + kBBytes);
      hopper::tmaLoad2d(sA + s * (kABytes / 2), mapA, kt * kGemmBK, m0, &full[s]);
      BTile<BN, TB, CL>::load(sB + s * (kBBytes / 2), mapB, kt, n0, &full[s], rank);
    }
  }
}

/// A consumer warpgroup's main loop over this block's i-th tile (both warpgroups on it,
/// warpgroup wg on rows 64 wg ..): acc = its 64 x BN block of a b. Each stage is released
/// (releaseStage by the warpgroup's first thread) once its MMAs are done; the last one after
/// the final wait.
template <int BN, int TB, int STAGES, int CL = 1>
__device__ __forceinline__ void consumeTile(float (&acc)[BN / 2], const uint16_t* sA,
                                            const uint16_t* sB, uint64_t* full, uint64_t* empty,
                                            int wg, int i, int kTiles) {
  constexpr int kABytes = kGemmBM * kGemmBK * 2, kBBytes = BN * kGemmBK * 2;
  const int t = (int)threadIdx.x % 128;
  const bool releaser = t < CL; // releaseStage
  // (wgmma's scale-d 0 on the tile's first MMA instead of zeroing: more spills, 12 -> 40
  // bytes in Persistent256.)
#pragma unroll
  for (int x = 0; x < BN / 2; ++x) acc[x] = 0.0f;
  int pos = i * kTiles;
  for (int kt = 0; kt < kTiles; ++kt, ++pos) {
    const int s = pos % STAGES;
    mbarWait(&full[s], (unsigned)(pos / STAGES) & 1u);
    const uint16_t* a = sA + s * (kABytes / 2) + wg * 64 * kGemmBK;
    const uint16_t* b = sB + s * (kBBytes / 2);
    fenceAcc(acc);
    wgFence();
#pragma unroll
    for (int kk = 0; kk < kGemmBK / 16; ++kk)
      WgmmaTile<BN, 1 - TB>::mma(acc, wgDesc(a + kk * 16, 16, 1024), BTile<BN, TB>::desc(b, kk));
    wgCommit();
    wgWait<1>(); // the previous stage's MMAs are done: hand it back to the producer
    fenceAcc(acc);
    if (kt > 0 && releaser) releaseStage<CL>(&empty[(pos - 1) % STAGES], t);
  }
  wgWait0();
  fenceAcc(acc);
  if (releaser) releaseStage<CL>(&empty[(pos - 1) % STAGES], t);
}

/// out [M, N] = alpha A B^T (+ bias) (GELU: pre too); see the file comment. EPI: 0 none,
/// 1 bias, 2 bias + GELU. A through mapA (box 64 x 128), B through mapB (box 64 x BN). Both
/// consumer warpgroups work on one tile (rows 64 c ..) and consume every stage. PERSIST: one
/// block per SM walks the tiles blockIdx.x, + gridDim.x, ... (the producer loads the next
/// tile's first stages during the epilogue); else a block per tile. CL 2 (PERSIST only,
/// Cluster256): clusters of 2 blocks on vertically adjacent tiles sharing B by multicast, as
/// gemm_bf16_epiwg_kernel's CL 2 (cluster barriers after the inits and before exit).
template <int BN, int STAGES, int MINB, int EPI, bool PERSIST, int TB, int CL = 1>
__global__ void __launch_bounds__(kGemmThreads, MINB)
    gemm_tn_bf16_kernel(const __grid_constant__ TensorMap mapA,
                        const __grid_constant__ TensorMap mapB,
                        const __grid_constant__ TensorMap mapOut,
                        const __grid_constant__ TensorMap mapPre, uint16_t* __restrict__ out,
                        uint16_t* __restrict__ pre, const uint16_t* __restrict__ bias, int M,
                        int N, int K, float alpha) {
  constexpr int kABytes = kGemmBM * kGemmBK * 2, kBBytes = BN * kGemmBK * 2;
  TGRT_DYNAMIC_SMEM(raw);
  unsigned char* smem = alignSmem1024(raw);
  uint16_t* sA = reinterpret_cast<uint16_t*>(smem);
  uint16_t* sB = reinterpret_cast<uint16_t*>(smem + STAGES * kABytes);
  // PERSIST: each consumer warpgroup's staging buffer for the TMA stores (storeTileStaged).
  uint16_t* sOut = reinterpret_cast<uint16_t*>(smem + STAGES * (kABytes + kBBytes));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * (kABytes + kBBytes) +
                                               (PERSIST ? kGemmConsumers * kStagedBytes : 0));
  uint64_t* empty = full + STAGES;

  const TileWalk tw = tileWalk<BN, CL, PERSIST>(M, N, K);
  initRing<STAGES, CL>(full, empty, [] {});

  const int wg = (int)threadIdx.x / 128;
  const bool leader = threadIdx.x % 128 == 0;
  if (wg == kGemmConsumers) { // the producer warp: one thread issues every copy
    if (threadIdx.x == kGemmConsumers * 128)
      produceTiles<BN, TB, STAGES, CL>(&mapA, &mapB, sA, sB, full, empty, tw.first, tw.grid,
                                       tw.myTiles, tw.tilesM, tw.tilesN, tw.kTiles, tw.rank);
  } else {
    for (int i = 0; i < tw.myTiles; ++i) {
      int m0, n0;
      clusterTileOrigin<BN, CL>(tw.first + i * tw.grid, tw.tilesM, tw.tilesN, tw.rank, m0, n0);
      float acc[BN / 2];
      consumeTile<BN, TB, STAGES, CL>(acc, sA, sB, full, empty, wg, i, tw.kTiles);
      if (PERSIST)
        storeTileStaged<EPI, BN>(acc, sOut + wg * (kStagedBytes / 2), m0 + wg * 64, n0, &mapOut,
                                 &mapPre, bias, N, alpha, 1 + wg);
      else
        storeTile<EPI, BN>(acc, m0 + wg * 64, n0, out, pre, bias, M, N, alpha);
    }
    if (PERSIST && leader) bulkWaitRead<0>(); // shared memory stays until the stores read it
  }
  if (CL > 1) clusterSync(); // the other block's multicasts and arrivals are done
}

/// The persistent ping-pong schedule (CUTLASS's sm90 "pingpong" kernels; FlashAttention-3's
/// inter-warpgroup overlap): one block per SM walks the tiles blockIdx.x, + gridDim.x, ...;
/// its two consumer warpgroups take them in turn, each a whole 128 x 128 tile (two m64n128k16
/// per k16 step, 128 accumulators per thread), so one warpgroup's epilogue runs while the
/// other's MMAs do. The producer fills one ring of STAGES stages in tile order; the order
/// barriers let warpgroup c start its main loop only after the other issued its last MMAs,
/// which also keeps every wait on a stage's `full` barrier within one phase of the barrier
/// (the parity wait cannot tell phases two apart).
template <int STAGES, int EPI>
__global__ void __launch_bounds__(kGemmThreads, 1)
    gemm_tn_bf16_pingpong_kernel(const __grid_constant__ TensorMap mapA,
                                 const __grid_constant__ TensorMap mapB,
                                 const __grid_constant__ TensorMap mapOut,
                                 const __grid_constant__ TensorMap mapPre,
                                 uint16_t* __restrict__ out, uint16_t* __restrict__ pre,
                                 const uint16_t* __restrict__ bias, int M, int N, int K,
                                 float alpha) {
  constexpr int BN = 128;
  constexpr int kABytes = kGemmBM * kGemmBK * 2, kBBytes = BN * kGemmBK * 2;
  TGRT_DYNAMIC_SMEM(raw);
  unsigned char* smem = alignSmem1024(raw);
  uint16_t* sA = reinterpret_cast<uint16_t*>(smem);
  uint16_t* sB = reinterpret_cast<uint16_t*>(smem + STAGES * kABytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * (kABytes + kBBytes));
  uint64_t* empty = full + STAGES;
  uint64_t* order = empty + STAGES; // order[c]: warpgroup c may start its next main loop

  const int tilesM = (M + kGemmBM - 1) / kGemmBM, tilesN = (N + BN - 1) / BN;
  const int tiles = tilesM * tilesN, kTiles = (K + kGemmBK - 1) / kGemmBK;
  const int grid = (int)gridDim.x, first = (int)blockIdx.x;
  const int myTiles = first < tiles ? (tiles - first + grid - 1) / grid : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarInit(&full[s], 1);
      mbarInit(&empty[s], 1);
    }
    mbarInit(&order[0], 1);
    mbarInit(&order[1], 1);
    fenceBarrierInit();
  }
  __syncthreads();

  const int wg = (int)threadIdx.x / 128;
  if (wg == kGemmConsumers) { // the producer warp: one thread issues every copy
    if (threadIdx.x == kGemmConsumers * 128) {
      for (int i = 0; i < myTiles; ++i) {
        int m0, n0;
        tileOrigin<kGemmBM, BN>(first + i * grid, tilesM, tilesN, m0, n0);
        for (int kt = 0; kt < kTiles; ++kt) {
          const int pos = i * kTiles + kt, s = pos % STAGES;
          if (pos >= STAGES) mbarWait(&empty[s], (unsigned)(pos / STAGES - 1) & 1u);
          mbarArriveExpectTx(&full[s], kABytes + kBBytes);
          hopper::tmaLoad2d(sA + s * (kABytes / 2), &mapA, kt * kGemmBK, m0, &full[s]);
          hopper::tmaLoad2d(sB + s * (kBBytes / 2), &mapB, kt * kGemmBK, n0, &full[s]);
        }
      }
    }
    return;
  }

  const bool leader = threadIdx.x % 128 == 0;
  for (int i = wg, j = 0; i < myTiles; i += kGemmConsumers, ++j) {
    int m0, n0;
    tileOrigin<kGemmBM, BN>(first + i * grid, tilesM, tilesN, m0, n0);
    // Warpgroup 0's j-th main loop follows warpgroup 1's (j-1)-th, warpgroup 1's j-th
    // follows warpgroup 0's j-th.
    if (wg == 0 && j > 0) mbarWait(&order[0], (unsigned)(j - 1) & 1u);
    if (wg == 1) mbarWait(&order[1], (unsigned)j & 1u);
    float acc0[64], acc1[64];
#pragma unroll
    for (int e = 0; e < 64; ++e) acc0[e] = acc1[e] = 0.0f;
    int pos = i * kTiles;
    for (int kt = 0; kt < kTiles; ++kt, ++pos) {
      const int s = pos % STAGES;
      mbarWait(&full[s], (unsigned)(pos / STAGES) & 1u);
      const uint16_t* a = sA + s * (kABytes / 2);
      const uint16_t* b = sB + s * (kBBytes / 2);
      fenceAcc(acc0);
      fenceAcc(acc1);
      wgFence();
#pragma unroll
      for (int kk = 0; kk < kGemmBK / 16; ++kk) {
        const uint64_t db = wgDesc(b + kk * 16, 16, 1024);
        wgmmaSS128<0>(acc0, wgDesc(a + kk * 16, 16, 1024), db);
        wgmmaSS128<0>(acc1, wgDesc(a + 64 * kGemmBK + kk * 16, 16, 1024), db);
      }
      wgCommit();
      if (kt == kTiles - 1 && leader) mbarArrive(&order[1 - wg]); // the other may go on
      wgWait<1>(); // the previous stage's MMAs are done: hand it back to the producer
      fenceAcc(acc0);
      fenceAcc(acc1);
      if (kt > 0 && leader) mbarArrive(&empty[(pos - 1) % STAGES]);
    }
    wgWait0();
    fenceAcc(acc0);
    fenceAcc(acc1);
    if (leader) mbarArrive(&empty[(pos - 1) % STAGES]);
    storeTile<EPI, BN>(acc0, m0, n0, out, pre, bias, M, N, alpha);
    storeTile<EPI, BN>(acc1, m0 + 64, n0, out, pre, bias, M, N, alpha);
  }
}

/// Threads of the epilogue-warpgroup kernel: the two consumer warpgroups, then a warpgroup
/// whose first warp is the producer and whose other three warps are the epilogue.
constexpr int kEpiThreads = 3 * 128;
constexpr int kEpiWarpsThreads = 96;

/// The SwiGLU-backward epilogue (EPI 3) of the epilogue warps: the staged tile (the
/// consumers' rounded alpha a b, 128 x BN in the swizzled 64 x 64 boxes) is dy of SwiGLU at
/// rows m0 .., columns n0 .. of y [M, N]; x = [gate | up] [M, 2 N] and dx = [dgate | dup]
/// [M, 2 N] (the layout of tgrt_swiglu_fwd / _bwd, f = N). Each of the kEpiWarpsThreads
/// threads (e: its index) takes 16-byte chunks of 8 columns, kUnroll at a time: the staged dy,
/// gate and up loaded first, then swigluGrad (Swiglu.cuh, the elementwise kernel's
/// arithmetic: the same bits for the same dy) and two 16-byte stores.
/// Brings the tile's gate and up rows of x [M, 2 N] (rows m0 .., columns n0 .. and N + n0 ..,
/// BN wide) into L2 (prefetch.global.L2, one 128-byte line per instruction), so that
/// swigluBwdFromStage's loads of them hit L2: issued by the epilogue threads (e) before they
/// wait for the tile's product, a main loop ahead.
template <int BN>
__device__ __forceinline__ void prefetchSwigluTile(const uint16_t* x, int e, int m0, int n0,
                                                   int M, int N) {
  constexpr int kLines = BN * 2 / 128; // 128-byte lines per row of gate (and of up)
  for (int idx = e; idx < kGemmBM * 2 * kLines; idx += kEpiWarpsThreads) {
    const int row = idx / (2 * kLines), part = idx % (2 * kLines);
    const int col = n0 + (part % kLines) * 64;
    if (m0 + row >= M || col >= N) continue;
    const uint16_t* at = x + (size_t)(m0 + row) * 2 * (size_t)N + (part / kLines) * (size_t)N + col;
#ifdef TGRT_CUDA_EMULATE
    (void)at;
#else
    asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
#endif
  }
}

template <int BN>
__device__ __forceinline__ void swigluBwdFromStage(const unsigned char* st, int e, int m0,
                                                   int n0, const uint16_t* __restrict__ x,
                                                   uint16_t* __restrict__ dx, int M, int N) {
  constexpr int kChunks = kGemmBM * BN / 8, kUnroll = 4;
  const size_t pitch = 2 * (size_t)N;
  for (int c0 = e; c0 < kChunks; c0 += kUnroll * kEpiWarpsThreads) {
    uint4 v[kUnroll], gv[kUnroll], uv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) { // the loads first (one latency for all)
      const int c = c0 + u * kEpiWarpsThreads;
      const int row = c / (BN / 8), chunk = c % (BN / 8);
      const int r = row % 64, cb = chunk % 8;
      const int gr = m0 + row, gc = n0 + 8 * chunk;
      const bool in = c < kChunks && gr < M && gc < N;
      const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
      v[u] = in ? *reinterpret_cast<const uint4*>(st + ((row / 64) * 4 + chunk / 8) * 64 * 128 +
                                                  r * 128 + ((cb ^ (r & 7)) << 4))
                : zero;
      const uint16_t* xr = x + (size_t)gr * pitch + gc;
      gv[u] = in ? *reinterpret_cast<const uint4*>(xr) : zero;
      uv[u] = in ? *reinterpret_cast<const uint4*>(xr + N) : zero;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = c0 + u * kEpiWarpsThreads;
      const int row = c / (BN / 8), chunk = c % (BN / 8);
      const int gr = m0 + row, gc = n0 + 8 * chunk;
      if (c >= kChunks || gr >= M || gc >= N) continue;
      const uint32_t d[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
      const uint32_t g[4] = {gv[u].x, gv[u].y, gv[u].z, gv[u].w};
      const uint32_t up[4] = {uv[u].x, uv[u].y, uv[u].z, uv[u].w};
      uint32_t og[4], ou[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float dg0, du0, dg1, du1;
        swigluGrad(bf16ToFloat((uint16_t)(g[q] & 0xffffu)), bf16ToFloat((uint16_t)(up[q] & 0xffffu)),
                   bf16ToFloat((uint16_t)(d[q] & 0xffffu)), dg0, du0);
        swigluGrad(bf16ToFloat((uint16_t)(g[q] >> 16)), bf16ToFloat((uint16_t)(up[q] >> 16)),
                   bf16ToFloat((uint16_t)(d[q] >> 16)), dg1, du1);
        og[q] = packBf16(dg0, dg1);
        ou[q] = packBf16(du0, du1);
      }
      uint16_t* dr = dx + (size_t)gr * pitch + gc;
      *reinterpret_cast<uint4*>(dr) = make_uint4(og[0], og[1], og[2], og[3]);
      *reinterpret_cast<uint4*>(dr + N) = make_uint4(ou[0], ou[1], ou[2], ou[3]);
    }
  }
}

/// Persistent256 with the epilogue taken off the consumers (PersistentEpilogue): after a
/// tile's main loop each consumer thread only adds the bias, rounds, writes its pairs into
/// the tile's staging buffer (128 x 256 bf16, the boxes of storeTileStaged) and arrives on
/// `stFull`; it then starts the next tile while the epilogue warps store the buffer with TMA
/// (pre with GELU, else out) and, with GELU, read it back 16 bytes at a time, apply geluFast
/// and store out with coalesced 16-byte writes, then arrive on `stFree` once the buffer may
/// be written again (the consumers wait on it before their next tile's epilogue, a main loop
/// later). Same tiles, stages and producer as Persistent256.
/// CL 2 (ClusterEpilogue): launched in clusters of 2 blocks, which take the two 128-row tiles
/// of a 256 x 256 tile pair (clusterTileOrigin) and share each stage's B tile: each block
/// loads half of it and multicasts it to both (BTile), each consumer releases a stage in both
/// blocks (releaseStage), so a block reads 16 + 16 KB per k step from L2 instead of 16 + 32.
/// Every thread meets at a cluster barrier after the mbarrier inits (before any remote
/// arrival or multicast) and at the end (no block exits while the other may still write into
/// its shared memory).
template <int STAGES, int EPI, int TB, int CL>
__global__ void __launch_bounds__(kEpiThreads, 1)
    gemm_bf16_epiwg_kernel(const __grid_constant__ TensorMap mapA,
                           const __grid_constant__ TensorMap mapB,
                           const __grid_constant__ TensorMap mapOut,
                           const __grid_constant__ TensorMap mapPre, uint16_t* __restrict__ out,
                           uint16_t* __restrict__ pre, const uint16_t* __restrict__ bias, int M,
                           int N, int K, float alpha) {
  constexpr int BN = 256;
  constexpr int kABytes = kGemmBM * kGemmBK * 2, kBBytes = BN * kGemmBK * 2;
  TGRT_DYNAMIC_SMEM(raw);
  unsigned char* smem = alignSmem1024(raw);
  uint16_t* sA = reinterpret_cast<uint16_t*>(smem);
  uint16_t* sB = reinterpret_cast<uint16_t*>(smem + STAGES * kABytes);
  uint16_t* sOut = reinterpret_cast<uint16_t*>(smem + STAGES * (kABytes + kBBytes));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * (kABytes + kBBytes) +
                                               kGemmBM * BN * 2);
  uint64_t* empty = full + STAGES;
  uint64_t* stFull = empty + STAGES; // the staging buffer holds a tile (256 arrivals)
  uint64_t* stFree = stFull + 1;     // the epilogue is done with it (1 arrival)

  // The tiles (with clusters: the cluster's tile pairs) this block walks.
  const TileWalk tw = tileWalk<BN, CL, true>(M, N, K);
  initRing<STAGES, CL>(full, empty, [&] {
    mbarInit(stFull, kGemmConsumers * 128);
    mbarInit(stFree, 1);
  });

  const int wg = (int)threadIdx.x / 128;
  if (wg == kGemmConsumers) {
    const int t = (int)threadIdx.x - kGemmConsumers * 128;
    if (t == 0) // the producer
      produceTiles<BN, TB, STAGES, CL>(&mapA, &mapB, sA, sB, full, empty, tw.first, tw.grid,
                                       tw.myTiles, tw.tilesM, tw.tilesN, tw.kTiles, tw.rank);
    const int e = t - 32; // epilogue thread 0..95 (the producer warp's lanes: < 0)
    for (int i = 0; e >= 0 && i < tw.myTiles; ++i) {
      int m0, n0;
      clusterTileOrigin<BN, CL>(tw.first + i * tw.grid, tw.tilesM, tw.tilesN, tw.rank, m0, n0);
      if (EPI == 3) prefetchSwigluTile<BN>(pre, e, m0, n0, M, N);
      mbarWait(stFull, (unsigned)i & 1u);
      if (EPI != 3 && e == 0) {
        // Rows 64 h .. of the tile: warpgroup h's 64 x 256 block, four 64 x 64 boxes.
        for (int h = 0; h < kGemmConsumers; ++h)
          for (int box = 0; box < BN / 64; ++box)
            if (n0 + 64 * box < N)
              hopper::tmaStore2d(EPI == 2 ? &mapPre : &mapOut, sOut + (h * 4 + box) * 64 * 64,
                                 n0 + 64 * box, m0 + 64 * h);
        bulkCommit();
      }
      if (EPI == 2) { // out = GELU(pre), 8 columns per 16-byte chunk, kUnroll chunks at once
        constexpr int kChunks = kGemmBM * BN / 8, kUnroll = 4;
        const unsigned char* st = reinterpret_cast<const unsigned char*>(sOut);
        for (int c0 = e; c0 < kChunks; c0 += kUnroll * kEpiWarpsThreads) {
          uint4 v[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) { // the loads first (one latency for all)
            const int c = c0 + u * kEpiWarpsThreads;
            const int row = c / (BN / 8), chunk = c % (BN / 8);
            const int r = row % 64, cb = chunk % 8;
            v[u] = c < kChunks ? *reinterpret_cast<const uint4*>(
                                     st + ((row / 64) * 4 + chunk / 8) * 64 * 128 + r * 128 +
                                     ((cb ^ (r & 7)) << 4))
                               : make_uint4(0u, 0u, 0u, 0u);
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int c = c0 + u * kEpiWarpsThreads;
            const int row = c / (BN / 8), chunk = c % (BN / 8); // chunk: 8 columns
            const int gr = m0 + row, gc = n0 + 8 * chunk;
            if (c >= kChunks || gr >= M || gc >= N) continue;
            const uint32_t w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
            uint32_t o[4];
#pragma unroll
            for (int q = 0; q < 4; ++q)
              o[q] = packBf16(geluFast(bf16ToFloat((uint16_t)(w[q] & 0xffffu))),
                              geluFast(bf16ToFloat((uint16_t)(w[q] >> 16))));
            *reinterpret_cast<uint4*>(out + (size_t)gr * (size_t)N + gc) =
                make_uint4(o[0], o[1], o[2], o[3]);
          }
        }
      }
      if (EPI == 3) // dx = SwiGLU's backward with dy = the rounded tile (x = pre, dx = out)
        swigluBwdFromStage<BN>(reinterpret_cast<const unsigned char*>(sOut), e, m0, n0, pre,
                               out, M, N);
      if (EPI != 3 && e == 0) bulkWaitRead<0>();
      namedBarrierSync(3, kEpiWarpsThreads); // every epilogue thread is done reading
      if (e == 0) mbarArrive(stFree);
    }
    if (CL > 1) clusterSync();
    return;
  }

  const int lane = (int)threadIdx.x % 32, w = ((int)threadIdx.x / 32) % 4;
  const int g = lane / 4, q = lane % 4;
  unsigned char* st = reinterpret_cast<unsigned char*>(sOut) + wg * 4 * 64 * 128;
  for (int i = 0; i < tw.myTiles; ++i) {
    int m0, n0;
    clusterTileOrigin<BN, CL>(tw.first + i * tw.grid, tw.tilesM, tw.tilesN, tw.rank, m0, n0);
    float acc[BN / 2];
    consumeTile<BN, TB, STAGES, CL>(acc, sA, sB, full, empty, wg, i, tw.kTiles);
    if (i > 0) mbarWait(stFree, (unsigned)(i - 1) & 1u); // the previous tile's buffer is free
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * q;
      float b0 = 0.0f, b1 = 0.0f;
      if ((EPI == 1 || EPI == 2) && col < N) {
        b0 = bf16ToFloat(bias[col]);
        b1 = bf16ToFloat(bias[col + 1]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * w + g + 8 * h, c = 8 * (j % 8) + 2 * q;
        const int at = (j / 8) * 64 * 128 + r * 128 + ((c * 2) ^ ((r & 7) << 4));
        *reinterpret_cast<uint32_t*>(st + at) =
            packBf16(alpha * acc[4 * j + 2 * h] + b0, alpha * acc[4 * j + 2 * h + 1] + b1);
      }
    }
    fenceProxyAsync(); // the TMA store reads what these threads wrote
    mbarArrive(stFull);
  }
  if (CL > 1) clusterSync();
}

/// A 2-D bf16 tensor map over `rows` x `cols` (cols contiguous), box 64 x boxRows, 128-byte
/// swizzle, zeros outside. False (with `why`) when the driver refuses it.
bool encodeBf16Map(TensorMap* map, const void* base, int64_t rows, int64_t cols, int boxRows,
                   const char** why) {
  std::memset(map, 0, sizeof *map);
#ifdef TGRT_CUDA_EMULATE
  map->base = base;
  map->dims[0] = (uint64_t)cols;
  map->dims[1] = (uint64_t)rows;
  map->rowBytes = (uint64_t)cols * 2;
  map->box[0] = (uint32_t)kGemmBK;
  map->box[1] = (uint32_t)boxRows;
  map->elemBytes = 2;
  map->swizzle128 = 1;
  (void)why;
  return true;
#else
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (!encode) {
    *why = "the driver has no cuTensorMapEncodeTiled";
    return false;
  }
  const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
  const cuuint32_t box[2] = {(cuuint32_t)kGemmBK, (cuuint32_t)boxRows};
  const cuuint32_t elem[2] = {1, 1};
  if (encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
             box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) !=
      CUDA_SUCCESS) {
    *why = "cuTensorMapEncodeTiled refused the tensor";
    return false;
  }
  return true;
#endif
}

/// True for the schedules with a b [k, n] (MN-major) path: the persistent 128 x 256 ones.
constexpr bool gemmScheduleTakesKN(GemmSchedule s) {
  return s == GemmSchedule::Persistent256 || s == GemmSchedule::PersistentEpilogue ||
         s == GemmSchedule::ClusterEpilogue || s == GemmSchedule::Cluster256;
}

/// The ping-pong kernel's stages: 6 x 32 KB.
constexpr int kPingPongStages = 6;

/// Says on stderr how many clusters the cluster schedules launch: once per process and grid
/// (each kernel instantiation asks the occupancy API once; they mostly agree).
void noteClusterGrid(int clusters, int blocksPerCluster, int sms) {
  static std::atomic<long long> last{-1};
  const long long key = (long long)clusters * 1000 + blocksPerCluster;
  if (last.exchange(key) != key)
    std::fprintf(stderr, "tgrt: gemm_bf16: %d clusters of %d blocks (%d SMs)\n", clusters,
                 blocksPerCluster, sms);
}

/// Launches schedule SCHED's kernel with epilogue EPI and b's layout TB (see gemmBf16).
template <int SCHED, int EPI, int TB>
void launchGemm(Context* ctx, const char* loc, const TensorMap& mapA, const TensorMap& mapB,
                const TensorMap& mapOut, const TensorMap& mapPre, void* out, void* pre,
                const void* bias, int64_t m, int64_t n, int64_t k, float alpha, int maxBlocks) {
  constexpr bool kCluster256 = SCHED == (int)GemmSchedule::Cluster256;
  constexpr int CL = SCHED == (int)GemmSchedule::ClusterEpilogue || kCluster256 ? 2 : 1;
  constexpr bool kEpiWg = SCHED == (int)GemmSchedule::PersistentEpilogue ||
                          SCHED == (int)GemmSchedule::ClusterEpilogue;
  constexpr bool kStore256 = SCHED == (int)GemmSchedule::Persistent256 || kCluster256;
  constexpr bool kPersist = SCHED == (int)GemmSchedule::PingPong || kStore256 || kEpiWg;
  constexpr int BN = SCHED == (int)GemmSchedule::Cooperative256 || kStore256 || kEpiWg ? 256 : 128;
  // Persistent256 has 4 stages beside its 32 KB of box staging; the epilogue-warpgroup
  // kernels 3 beside their 64 KB tile buffer (227 KB of shared memory per block).
  constexpr int STAGES = SCHED == (int)GemmSchedule::PingPong ? kPingPongStages
                         : kEpiWg                             ? 3
                         : BN == 256                          ? 4
                                                              : 3;
  using Kernel = void (*)(const TensorMap, const TensorMap, const TensorMap, const TensorMap,
                          uint16_t*, uint16_t*, const uint16_t*, int, int, int, float);
  // Only the schedule's kernel is instantiated (EPI 3, SwiGLU's backward, exists only in the
  // epilogue-warpgroup kernel).
  const Kernel kernel = []() -> Kernel {
    if constexpr (SCHED == (int)GemmSchedule::PingPong)
      return gemm_tn_bf16_pingpong_kernel<STAGES, EPI>;
    else if constexpr (kEpiWg)
      return gemm_bf16_epiwg_kernel<STAGES, EPI, TB, CL>;
    else if constexpr (kStore256)
      return gemm_tn_bf16_kernel<256, STAGES, 1, EPI, true, TB, CL>;
    else if constexpr (SCHED == (int)GemmSchedule::Cooperative256)
      return gemm_tn_bf16_kernel<256, STAGES, 1, EPI, false, 1>;
    else
      return gemm_tn_bf16_kernel<128, STAGES, 2, EPI, false, 1>;
  }();
  const size_t smem =
      gemmSmemBytes(BN, STAGES,
                    kStore256 ? kGemmConsumers * kStagedBytes : kEpiWg ? kGemmBM * BN * 2 : 0);
  static bool attrSet = false; // per instantiation, i.e. per kernel
  if (!attrSet) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
          loc, "cudaFuncSetAttribute(gemm_tn_bf16_kernel)");
    attrSet = true;
  }
  const int64_t tilesM = (m + kGemmBM - 1) / kGemmBM, tilesN = (n + BN - 1) / BN;
  if (CL > 1) { // persistent clusters: as many as run at once (or maxBlocks / CL), <= units
    static int maxClusters = [&] {
      int nc = 0;
#ifdef TGRT_CUDA_EMULATE
      nc = std::max(1, ctx->sm_count / CL);
#else
      cudaLaunchAttribute attr;
      const cudaLaunchConfig_t cfg =
          clusterLaunchConfig(dim3((unsigned)(std::max(1, ctx->sm_count) / CL * CL)),
                              dim3(kEpiWg ? kEpiThreads : kGemmThreads), smem, ctx->stream, CL,
                              attr);
      check(cudaOccupancyMaxActiveClusters(&nc, kernel, &cfg), loc,
            "cudaOccupancyMaxActiveClusters(gemm_bf16_epiwg_kernel)");
      if (nc <= 0) fail(loc, "gemm_bf16: no cluster of %d blocks of this kernel fits the GPU", CL);
#endif
      if (const char* env = std::getenv("TGRT_GEMM_CLUSTERS")) { // experiments: the grid
        const int v = std::atoi(env);
        if (v > 0) nc = v;
      }
      noteClusterGrid(nc, CL, ctx->sm_count);
      return nc;
    }();
    const int64_t units = (tilesM + CL - 1) / CL * tilesN;
    const int64_t clusters =
        std::min<int64_t>(units, maxBlocks > 0 ? std::max(1, maxBlocks / CL) : maxClusters);
    launchCluster(ctx, loc, "gemm_bf16_kernel", kernel, dim3((unsigned)(clusters * CL)),
                  dim3(kEpiWg ? kEpiThreads : kGemmThreads), smem, (unsigned)CL, mapA, mapB,
                  mapOut, mapPre,
                  static_cast<uint16_t*>(out), static_cast<uint16_t*>(pre),
                  static_cast<const uint16_t*>(bias), (int)m, (int)n, (int)k, alpha);
    return;
  }
  const int64_t tiles = tilesM * tilesN;
  const int64_t blocks =
      kPersist ? std::min<int64_t>(tiles, maxBlocks > 0 ? maxBlocks : std::max(1, ctx->sm_count))
               : tiles;
  launch(ctx, loc, "gemm_bf16_kernel", kernel, dim3((unsigned)blocks),
         dim3(kEpiWg ? kEpiThreads : kGemmThreads), smem, mapA, mapB, mapOut, mapPre,
         static_cast<uint16_t*>(out), static_cast<uint16_t*>(pre),
         static_cast<const uint16_t*>(bias), (int)m, (int)n, (int)k, alpha);
}

template <int SCHED>
void launchGemmEpi(Context* ctx, const char* loc, GemmEpilogue epi, bool transB,
                   const TensorMap& mapA, const TensorMap& mapB, const TensorMap& mapOut,
                   const TensorMap& mapPre, void* out, void* pre, const void* bias, int64_t m,
                   int64_t n, int64_t k, float alpha, int maxBlocks) {
#define TGRT_GEMM_LAUNCH(E, T)                                                                     \
  return launchGemm<SCHED, E, T>(ctx, loc, mapA, mapB, mapOut, mapPre, out, pre, bias, m, n, k,  \
                                 alpha, maxBlocks)
  constexpr bool kEpiWg = SCHED == (int)GemmSchedule::PersistentEpilogue ||
                          SCHED == (int)GemmSchedule::ClusterEpilogue;
  if (transB || !gemmScheduleTakesKN((GemmSchedule)SCHED)) {
    switch (epi) {
    case GemmEpilogue::None: TGRT_GEMM_LAUNCH(0, 1);
    case GemmEpilogue::Bias: TGRT_GEMM_LAUNCH(1, 1);
    case GemmEpilogue::BiasGelu: TGRT_GEMM_LAUNCH(2, 1);
    case GemmEpilogue::SwigluBwd:
      if constexpr (kEpiWg) TGRT_GEMM_LAUNCH(3, 1);
      break;
    }
  } else {
    switch (epi) {
    case GemmEpilogue::None: TGRT_GEMM_LAUNCH(0, 0);
    case GemmEpilogue::Bias: TGRT_GEMM_LAUNCH(1, 0);
    case GemmEpilogue::BiasGelu: TGRT_GEMM_LAUNCH(2, 0);
    case GemmEpilogue::SwigluBwd:
      if constexpr (kEpiWg) TGRT_GEMM_LAUNCH(3, 0);
      break;
    }
  }
  fail(loc, "gemm_bf16: the SwiGLU-backward epilogue needs an epilogue-warpgroup schedule");
#undef TGRT_GEMM_LAUNCH
}

} // namespace

bool ownGemmAvailable(const Context* ctx) { return ctx && ctx->attn_wgmma_ok; }

void gemmBf16(Context* ctx, const char* loc, const void* a, const void* b, const void* bias,
              void* pre, void* out, int64_t m, int64_t n, int64_t k, int32_t trans_b, float alpha,
              GemmEpilogue epi, GemmSchedule sched, int blocks) {
  checkCtx(ctx, loc);
  if (m <= 0 || n <= 0 || k <= 0 || m > INT32_MAX / 2 || n > INT32_MAX / 2 || k > INT32_MAX / 2)
    fail(loc, "gemm_bf16: m, n, k must be in [1, 2^30] (got %lld, %lld, %lld)", (long long)m,
         (long long)n, (long long)k);
  if (n % 8 != 0 || k % 8 != 0)
    fail(loc, "gemm_bf16: n and k must be multiples of 8 (got n %lld, k %lld)", (long long)n,
         (long long)k);
  const bool swiglu = epi == GemmEpilogue::SwigluBwd;
  const void* ptrs[4] = {a, b, out, epi == GemmEpilogue::BiasGelu || swiglu ? pre : out};
  for (const void* p : ptrs)
    if (!p || reinterpret_cast<uintptr_t>(p) % 16 != 0)
      fail(loc, "gemm_bf16: a, b, out (and pre with GELU, x with SwiGLU) must be 16-byte "
                "aligned, non-NULL");
  if ((epi == GemmEpilogue::Bias || epi == GemmEpilogue::BiasGelu) &&
      (!bias || reinterpret_cast<uintptr_t>(bias) % 4 != 0))
    fail(loc, "gemm_bf16: the epilogue needs a 4-byte aligned bias (its pairs are read as words)");
  if (swiglu && sched != GemmSchedule::PersistentEpilogue && sched != GemmSchedule::ClusterEpilogue)
    fail(loc, "gemm_bf16: the SwiGLU-backward epilogue needs schedule PersistentEpilogue or "
              "ClusterEpilogue (got %d)", (int)sched);
  if (swiglu && (pre == out || (static_cast<const char*>(pre) < static_cast<const char*>(out) +
                                    2 * m * n * 2 &&
                                static_cast<const char*>(out) < static_cast<const char*>(pre) +
                                    2 * m * n * 2)))
    fail(loc, "gemm_bf16: the SwiGLU-backward epilogue's dx must not overlap x (each [m, 2n])");
  if (!trans_b && !gemmScheduleTakesKN(sched))
    fail(loc, "gemm_bf16: b [k, n] (trans_b 0) only with the persistent 128 x 256 schedules");
  if (!ownGemmAvailable(ctx))
    fail(loc, "gemm_bf16: needs a compute capability 9.0 GPU (the sm_90a kernels)");
  TensorMap mapA, mapB, mapOut, mapPre;
  const char* why = "";
  // b [n, k]'s box: the tile's rows of b (half of them with 2-block clusters, BTile).
  const int tileN =
      sched == GemmSchedule::Cooperative256 || sched == GemmSchedule::Persistent256 ||
              sched == GemmSchedule::PersistentEpilogue
          ? 256
          : 128; // PingPong, Cooperative128, the clusters' (256 / 2)
  if (!encodeBf16Map(&mapA, a, m, k, kGemmBM, &why) ||
      !(trans_b ? encodeBf16Map(&mapB, b, n, k, tileN, &why)
                : encodeBf16Map(&mapB, b, k, n, 64, &why)) ||
      !encodeBf16Map(&mapOut, out, m, n, 64, &why) ||
      !encodeBf16Map(&mapPre, epi == GemmEpilogue::BiasGelu ? pre : out, m, n, 64, &why))
    fail(loc, "gemm_bf16: %s", why);
#define TGRT_GEMM_SCHED(S)                                                                         \
  case GemmSchedule::S:                                                                            \
    return launchGemmEpi<(int)GemmSchedule::S>(ctx, loc, epi, trans_b != 0, mapA, mapB, mapOut,   \
                                               mapPre, out, pre, bias, m, n, k, alpha, blocks)
  switch (sched) {
    TGRT_GEMM_SCHED(PingPong);
    TGRT_GEMM_SCHED(Cooperative256);
    TGRT_GEMM_SCHED(Cooperative128);
    TGRT_GEMM_SCHED(Persistent256);
    TGRT_GEMM_SCHED(PersistentEpilogue);
    TGRT_GEMM_SCHED(ClusterEpilogue);
    TGRT_GEMM_SCHED(Cluster256);
  }
#undef TGRT_GEMM_SCHED
  fail(loc, "gemm_bf16: unknown schedule %d", (int)sched);
}

} // namespace tgrt_cuda
