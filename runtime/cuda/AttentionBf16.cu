// AttentionBf16.cu — fused causal / sliding-window attention on bf16 and f16 tensors, forward
// and backward, on the tensor cores. Two kernel families, templates on the element type E
// (Bf16 or F16 below: the conversions and the MMA instructions; the instantiations differ in
// nothing else):
// - head dim 64 on Hopper (the default there; TGRT_ATTN_WGMMA=0 turns it off): warpgroup MMAs
//   (wgmma.mma_async m64n64k16, sm_90a), operands from 128-byte-swizzled shared memory (see
//   "wgmma (sm_90)" below);
// - otherwise mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 per warp.
//
// Same algorithm, masking, tile skipping and determinism as the fp32 kernels of Attention.cu
// (FlashAttention-2, Dao 2023; see the comment there): a forward kernel with the softmax
// online, and a backward of three kernels (D = rowsum(dout * out); dk, dv per key tile; dq per
// query tile), each output element summed by one thread in a fixed order, no atomics. (A
// backward that adds dq's share per key tile into an fp32 buffer with atomics, FA2's
// Algorithm 2, was measured on the mma.sync kernels: 0.518 against 0.524 ms alone, 0.3 ms
// slower per GPT-2 step; not kept. bench/results/2026-11-26-h100/call34, call36.)
//
// Grouped-query attention as in Attention.cu: k, v through their own layout (Layout::group);
// the dk / dv kernels (both families) run one block per (kv problem, key tile) and step through
// the group's query heads and their query tiles in one double-buffered sequence (the next
// step's Q, dO tiles are copied during this one's math, across head boundaries too).
//
// Arithmetic. Inputs are bf16 or f16 (uint16_t bit patterns); every product runs on the tensor
// cores with 2-byte operands and fp32 accumulators. The scores, the running max / sum, lse, D,
// P and dS are fp32 in registers; P and dS are rounded to E only as operands of the next
// product (P V, P^T dO, dS^T Q, dS K). Outputs are rounded to E (RNE) once, when stored. Scores
// are kept in the log2 domain (x = scale * log2(e) * q.k, p = 2^(x - m)), so one ex2 per
// element. (f16: P in [0, 1] and the softmax statistics are safe; dS, dq, dk, dv overflow to
// inf only where the values exceed f16's range, which dynamic loss scaling detects.)
//
// Warp tiling. A block is 4 warps (128 threads); each warp owns 16 rows of the tile it
// produces (query rows in the forward and dq, key rows in dk/dv) and the full width of the
// other side. A product C[16 x N] += A[16 x K] B[K x N] is (K/16) x (N/8) mma.sync calls.
// Shared-memory tiles are row-major [rows][HD + 8] E (16 bytes of padding per row, so the
// 8 row addresses of an ldmatrix fall in distinct bank groups). Operands come from shared
// memory through ldmatrix (.trans where the product needs the tile's transpose, e.g. V in
// P V); the left operand P or dS of the second product comes straight from the first
// product's accumulators (the m16n8 C fragment of two adjacent n-tiles is the m16k16 A
// fragment), rounded to E.
//
// Fragment layouts (PTX ISA, lane = 4 g + q): A {A[g][2q..], A[g+8][2q..], A[g][2q+8..],
// A[g+8][2q+8..]}, B {B[2q..][g], B[2q+8..][g]}, C {C[g][2q], C[g][2q+1], C[g+8][2q],
// C[g+8][2q+1]}.
//
// The CPU emulator (runtime/cuda/emu) implements mma.sync, ldmatrix and wgmma (emu::wgmma) and
// so runs both families; it implements mma.sync and ldmatrix as (emu::mmaBf16m16n8k16,
// emu::mmaF16m16n8k16, emu::ldmatrix), so tgrt-cuda-emu-check runs these kernels too.
#include "runtime/cuda/Dtype.cuh"
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/AttentionMask.cuh"
#include "runtime/cuda/AttentionSteps.cuh"
#include "runtime/cuda/Hopper.cuh"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace tgrt_cuda {
namespace {
using namespace attn;
using namespace hopper;

constexpr int kThreads = 128; // 4 warps
constexpr int kPad = 8;       // bf16 elements of padding per shared-memory row (16 bytes)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
/// The default of TGRT_ATTN_MINB (see attnOccupancyVariant).
constexpr bool kAttnOccupancyDefault = true;
/// Blocks per SM the wgmma kernels' register allocation allows (__launch_bounds__); the dk/dv
/// kernel takes 190 registers unbounded (2 blocks), 3 under TGRT_ATTN_MINB=1's variant.
constexpr int kFwdWgMinBlocks = 4;

// ------------------------------------------------------------------ primitives --

/// The 32 accumulator operands %0..%31 of an m64n64 wgmma (f32) and their constraints.
#define TGRT_WG_ACC32 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, " \
  "%8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define TGRT_WG_D32(d) \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), \
  "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
  "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), \
  "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), \
  "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
  "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

/// wgmma.mma_async m64n64k16 with f32 accumulators on element type TY (bf16 or f16): the
/// body of E::wgmmaRS / E::wgmmaSS below (d += A B for the warpgroup's 64 x 64 accumulators:
/// warp w rows 16 w.., the mma.sync C fragment layout per n-tile of 8; issued, not waited
/// for). RS: A from registers `a` (the m16n8k16 A fragment of the warp's 16 rows), B through
/// `descB`; SS: A through `descA` (K-major) too. TRANSB 0: B K-major, 1: MN-major. F16 is the
/// emulator's operand type flag. Callers fence, commit and wait.
#ifdef TGRT_CUDA_EMULATE
#define TGRT_WGMMA_RS(TY, F16) emu::wgmma(&d[0][0], 64, F16, a, 0, descB, TRANSB)
#define TGRT_WGMMA_SS(TY, F16) emu::wgmma(&d[0][0], 64, F16, nullptr, descA, descB, TRANSB)
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TGRT_WGMMA_RS(TY, F16)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " TGRT_WG_ACC32 ", "      \
               "{%32, %33, %34, %35}, %36, p, 1, 1, %37;\n}\n"                                     \
               : TGRT_WG_D32(d)                                                                   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(descB), "n"(TRANSB), "r"(1))
#define TGRT_WGMMA_SS(TY, F16)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %35, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " TGRT_WG_ACC32 ", "      \
               "%32, %33, p, 1, 1, 0, %34;\n}\n"                                                   \
               : TGRT_WG_D32(d)                                                                   \
               : "l"(descA), "l"(descB), "n"(TRANSB), "r"(1))
#else // compute_90 PTX: never chosen (ctx->attn_wgmma needs compute capability 9.0)
#define TGRT_WGMMA_RS(TY, F16) __trap()
#define TGRT_WGMMA_SS(TY, F16) __trap()
#endif

/// The element types: conversions to / from float and the m16n8k16 tensor-core product.
struct Bf16 {
  static constexpr const char* kFwdName = "attention_fwd_bf16_kernel";
  static constexpr const char* kDName = "attention_bwd_d_bf16_kernel";
  static constexpr const char* kDkDvName = "attention_bwd_dkdv_bf16_kernel";
  static constexpr const char* kDqName = "attention_bwd_dq_bf16_kernel";
  static constexpr const char* kFwdWgName = "attention_fwd_wg_bf16_kernel";
  static constexpr const char* kDkDvWgName = "attention_bwd_dkdv_wg_bf16_kernel";
  static constexpr const char* kDqWgName = "attention_bwd_dq_wg_bf16_kernel";
  static __device__ __forceinline__ float toFloat(uint16_t h) { return bf16ToFloat(h); }
  /// Two floats rounded to bf16 (RNE) in one 32-bit word: lo in bits 0-15 (the lower column /
  /// address), hi in bits 16-31.
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) { return packBf16(lo, hi); }
  /// d += a b: one m16n8k16 bf16 tensor-core product with fp32 accumulators.
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
#ifdef TGRT_CUDA_EMULATE
    const uint32_t b[2] = {b0, b1};
    emu::mmaBf16m16n8k16(d, a, b, d);
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
  /// d += A B on wgmma, A from registers (see TGRT_WGMMA_RS).
  template <int TRANSB>
  static __device__ __forceinline__ void wgmmaRS(float (&d)[8][4], const uint32_t (&a)[4],
                                                 uint64_t descB) {
    TGRT_WGMMA_RS("bf16", false);
  }
  /// d += A B on wgmma, A from shared memory (see TGRT_WGMMA_SS).
  template <int TRANSB>
  static __device__ __forceinline__ void wgmmaSS(float (&d)[8][4], uint64_t descA,
                                                 uint64_t descB) {
    TGRT_WGMMA_SS("bf16", false);
  }
};
struct F16 {
  static constexpr const char* kFwdName = "attention_fwd_f16_kernel";
  static constexpr const char* kDName = "attention_bwd_d_f16_kernel";
  static constexpr const char* kDkDvName = "attention_bwd_dkdv_f16_kernel";
  static constexpr const char* kDqName = "attention_bwd_dq_f16_kernel";
  static constexpr const char* kFwdWgName = "attention_fwd_wg_f16_kernel";
  static constexpr const char* kDkDvWgName = "attention_bwd_dkdv_wg_f16_kernel";
  static constexpr const char* kDqWgName = "attention_bwd_dq_wg_f16_kernel";
  static __device__ __forceinline__ float toFloat(uint16_t h) { return f16ToFloat(h); }
  /// Two floats rounded to f16 (RNE; overflow to inf) in one word, lo in bits 0-15.
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) { return packF16(lo, hi); }
  /// d += a b: one m16n8k16 f16 tensor-core product with fp32 accumulators.
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
#ifdef TGRT_CUDA_EMULATE
    const uint32_t b[2] = {b0, b1};
    emu::mmaF16m16n8k16(d, a, b, d);
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
  /// d += A B on wgmma, A from registers (see TGRT_WGMMA_RS).
  template <int TRANSB>
  static __device__ __forceinline__ void wgmmaRS(float (&d)[8][4], const uint32_t (&a)[4],
                                                 uint64_t descB) {
    TGRT_WGMMA_RS("f16", true);
  }
  /// d += A B on wgmma, A from shared memory (see TGRT_WGMMA_SS).
  template <int TRANSB>
  static __device__ __forceinline__ void wgmmaSS(float (&d)[8][4], uint64_t descA,
                                                 uint64_t descB) {
    TGRT_WGMMA_SS("f16", true);
  }
};


/// ldmatrix .x4: lanes 8i..8i+7 give the 8 row addresses (16 bytes each) of matrix i.
__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], const uint16_t* rowAddr) {
#ifdef TGRT_CUDA_EMULATE
  emu::ldmatrix(r, 4, false, rowAddr);
#else
  const uint32_t a = (uint32_t)__cvta_generic_to_shared(rowAddr);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
#endif
}
/// ldmatrix .x4 .trans (each 8 x 8 matrix transposed).
__device__ __forceinline__ void ldsm4t(uint32_t (&r)[4], const uint16_t* rowAddr) {
#ifdef TGRT_CUDA_EMULATE
  emu::ldmatrix(r, 4, true, rowAddr);
#else
  const uint32_t a = (uint32_t)__cvta_generic_to_shared(rowAddr);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
#endif
}

// Shared-memory tile [rows][LD], LD = HD + kPad; `lane` is the caller's lane.
//
// A operand, rows r0..r0+15, k columns kk*16..kk*16+15 (tile row-major = A row-major).
__device__ __forceinline__ void loadA(uint32_t (&a)[4], const uint16_t* tile, int ld, int r0,
                                      int kk, int lane) {
  ldsm4(a, tile + (r0 + (lane & 15)) * ld + kk * 16 + (lane >> 4) * 8);
}
// B operands of two adjacent n-tiles n0/8, n0/8 + 1 where B = tile^T (B[k][n] = tile[n][k]):
// tile rows n0..n0+15, columns kk*16..+15. {b[0], b[1]} is n-tile 0, {b[2], b[3]} n-tile 1.
__device__ __forceinline__ void loadBt(uint32_t (&b)[4], const uint16_t* tile, int ld, int n0,
                                       int kk, int lane) {
  ldsm4(b, tile + (n0 + (lane >> 4) * 8 + (lane & 7)) * ld + kk * 16 + ((lane >> 3) & 1) * 8);
}
// B operands of two adjacent n-tiles where B = tile (B[k][n] = tile[k][n]): tile rows
// kk*16..+15, columns n0..n0+15.
__device__ __forceinline__ void loadBn(uint32_t (&b)[4], const uint16_t* tile, int ld, int n0,
                                       int kk, int lane) {
  ldsm4t(b, tile + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * ld + n0 + (lane >> 4) * 8);
}

/// cp.async.cg (16 bytes global -> shared, through L2 only; PTX ISA "cp.async", sm_80+) and
/// its group commit / wait: the copies of a group overlap the math issued after them, and
/// cpAsyncWait<N> waits until at most N of this thread's groups are still in flight. The
/// emulator copies at once (the waits are then no-ops).
__device__ __forceinline__ void cpAsync16(uint16_t* s, const uint16_t* g) {
#ifdef TGRT_CUDA_EMULATE
  std::memcpy(s, g, 16);
#else
  const uint32_t a = (uint32_t)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g) : "memory");
#endif
}
__device__ __forceinline__ void cpAsyncCommit() {
#ifndef TGRT_CUDA_EMULATE
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
#ifndef TGRT_CUDA_EMULATE
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/// Starts copying rows [row0, row0 + R) of a 2-byte [t, HD] matrix with row stride `ld`
/// elements (a multiple of 8) into shared memory [R][HD + kPad] (16-byte cp.async copies) and
/// returns; rows >= t are zeroed with plain stores. The tile is ready after the matching
/// cpAsyncWait and a __syncthreads.
template <int R, int HD>
__device__ __forceinline__ void loadTileAsync(const uint16_t* __restrict__ g, int64_t ld,
                                              int64_t row0, int64_t t, uint16_t* s) {
  constexpr int C8 = HD / 8, LD = HD + kPad;
  for (int idx = threadIdx.x; idx < R * C8; idx += kThreads) {
    const int r = idx / C8, c = idx % C8;
    uint16_t* dst = s + r * LD + 8 * c;
    if (row0 + r < t)
      cpAsync16(dst, g + (row0 + r) * ld + 8 * c);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
  }
}



/// loadTileAsync of the same rows of two matrices (K and V, or Q and dO) into two tiles.
template <int R, int HD>
__device__ __forceinline__ void loadPairAsync(const uint16_t* __restrict__ a, int64_t lda,
                                              const uint16_t* __restrict__ b, int64_t ldb,
                                              int64_t row0, int64_t t, uint16_t* sa,
                                              uint16_t* sb) {
  loadTileAsync<R, HD>(a, lda, row0, t, sa);
  loadTileAsync<R, HD>(b, ldb, row0, t, sb);
}

/// The step to key tile kb of a loop over double-buffered K, V tiles (the forward and dq
/// kernels): once every warp is done with the other buffer (the previous tile), starts copying
/// tile kb + 1 into it (when kb < kbHi; else an empty group, so the wait always means "this
/// tile"), waits for tile kb, and returns its K and V buffers.
template <int BC, int HD>
__device__ __forceinline__ void nextKeyTile(int64_t kb, int64_t kbLo, int64_t kbHi,
                                            const uint16_t* __restrict__ k,
                                            const uint16_t* __restrict__ v, int64_t ld,
                                            int64_t t, uint16_t* Kb, uint16_t* Vb,
                                            const uint16_t*& Ks, const uint16_t*& Vs) {
  constexpr int LD = HD + kPad;
  const int buf = (int)((kb - kbLo) & 1);
  Ks = Kb + buf * BC * LD;
  Vs = Vb + buf * BC * LD;
  __syncthreads();
  if (kb < kbHi)
    loadPairAsync<BC, HD>(k, ld, v, ld, (kb + 1) * BC, t, Kb + (buf ^ 1) * BC * LD,
                          Vb + (buf ^ 1) * BC * LD);
  cpAsyncCommit();
  cpAsyncWait<1>();
  __syncthreads();
}

// ------------------------------------------------------------- wgmma (sm_90) --
//
// The head-dim-64 kernels below run their products as warpgroup MMAs (PTX ISA "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate", wgmma.mma_async m64n64k16): the block's 4
// warps are one warpgroup and each instruction is a 64 x 64 x 16 product, where mma.sync
// needs 32 instructions and the ldmatrix loads of B per warp. B (and A where it is a tile)
// is read from shared memory through a matrix descriptor, in the 128-byte swizzled layout
// below (rows of 64 elements, 16-byte chunks permuted per row). The
// accumulators of warp w are rows 16 w .. + 15 in the m16n8 C fragment layout per 8 columns,
// and an A operand from registers is the m16n8k16 A fragment of those rows: the softmax and
// the conversions of the mma.sync kernels carry over unchanged.
//
// Ordering: shared memory written by threads (cp.async, stores) is made visible to the
// tensor cores' async proxy by fence.proxy.async before the barrier; a batch of wgmma is
// wgFence, the instructions, wgCommit, wgWait0, then keep() on every register the batch read
// or wrote, so the compiler neither reuses nor reads them before the wait. The primitives
// (wgFence, wgCommit, wgWait, fenceProxyAsync, wgDesc, checkSwizzleBase) are Hopper.cuh's.

template <int N>
__device__ __forceinline__ void keep(float (&x)[N][4]) {
#ifndef TGRT_CUDA_EMULATE
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(x[i][e])::"memory");
#endif
}
template <int N>
__device__ __forceinline__ void keep(uint32_t (&x)[N][4]) {
#ifndef TGRT_CUDA_EMULATE
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(x[i][e])::"memory");
#endif
}

// A swizzled R x 64 tile (2-byte elements; the canonical 128-byte-swizzle layout of the PTX
// ISA, "Shared Memory Matrix Layout"): row r is 128 bytes at r * 128, and its 16-byte chunk c
// (elements 8c .. 8c + 7) sits at chunk c ^ (r % 8), so the 8 rows of a core matrix fall in
// distinct banks for the tensor cores' reads and the copies' writes. Tiles start at
// multiples of 1024 bytes (the swizzle is a function of the address). Two readings by wgmma,
// per k step kk of 16:
// - kDesc: rows are M (or N), columns are K (K-major; Q, K, V, dO as the left factor or as
//   B = tile^T): start kk * 32 bytes into the rows, 8-row groups 1024 bytes apart (SBO).
// - mnDesc: rows are K, columns are N (MN-major, transB 1; V in P V, dO in P^T dO, Q in
//   dS^T Q, K in dS K): start at row 16 kk, 8-row groups along K 1024 bytes apart (SBO); the
//   64 columns are one swizzle row, so the N-group stride (LBO) is never used.
template <int HD>
__device__ __forceinline__ uint64_t kDesc(const uint16_t* tile, int kk) {
  static_assert(HD == 64, "128-byte rows");
  return wgDesc(tile + kk * 16, 16, 1024);
}
template <int HD>
__device__ __forceinline__ uint64_t mnDesc(const uint16_t* tile, int kk) {
  static_assert(HD == 64, "128-byte rows");
  return wgDesc(tile + kk * 16 * HD, 8192, 1024);
}

/// loadTileAsync into a swizzled tile (see above): 8 consecutive threads copy one row's 128
/// bytes (coalesced reads, conflict-free writes); rows >= t are zeroed with plain stores.
template <int R, int HD>
__device__ __forceinline__ void loadTileBlkAsync(const uint16_t* __restrict__ g, int64_t ld,
                                                 int64_t row0, int64_t t, uint16_t* s) {
  static_assert(HD == 64, "128-byte rows");
  for (int idx = threadIdx.x; idx < R * 8; idx += kThreads) {
    const int r = idx >> 3, c = idx & 7;
    uint16_t* dst = s + r * 64 + ((c ^ (r & 7)) * 8);
    if (row0 + r < t)
      cpAsync16(dst, g + (row0 + r) * ld + 8 * c);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
  }
}

/// nextKeyTile over blocked K, V tiles (the wgmma forward and dq kernels): the same double
/// buffering, and the fence that hands the landed tiles to the tensor cores.
template <int BC, int HD>
__device__ __forceinline__ void nextKeyTileBlk(int64_t kb, int64_t kbLo, int64_t kbHi,
                                               const uint16_t* __restrict__ k,
                                               const uint16_t* __restrict__ v, int64_t ld,
                                               int64_t t, uint16_t* Kb, uint16_t* Vb,
                                               const uint16_t*& Ks, const uint16_t*& Vs) {
  const int buf = (int)((kb - kbLo) & 1);
  Ks = Kb + buf * BC * HD;
  Vs = Vb + buf * BC * HD;
  __syncthreads();
  if (kb < kbHi) {
    loadTileBlkAsync<BC, HD>(k, ld, (kb + 1) * BC, t, Kb + (buf ^ 1) * BC * HD);
    loadTileBlkAsync<BC, HD>(v, ld, (kb + 1) * BC, t, Vb + (buf ^ 1) * BC * HD);
  }
  cpAsyncCommit();
  cpAsyncWait<1>();
  fenceProxyAsync();
  __syncthreads();
}

/// The A fragment (16 rows x 16 k) made of two adjacent C fragments c0, c1 (n-tiles 2kk and
/// 2kk + 1 of a 16 x N accumulator), rounded to E.
template <typename E>
__device__ __forceinline__ void accToA(uint32_t (&a)[4], const float (&c0)[4],
                                       const float (&c1)[4]) {
  a[0] = E::pack(c0[0], c0[1]);
  a[1] = E::pack(c0[2], c0[3]);
  a[2] = E::pack(c1[0], c1[1]);
  a[3] = E::pack(c1[2], c1[3]);
}

/// Stores a warp's 16 x HD fp32 accumulator (rows r0.., n-tiles of 8) as E rows of `dst`
/// ([t, HD], row stride `ld` elements) times `mul`, skipping rows >= t. Writes exactly the
/// HD elements of each row.
template <typename E, int HD>
__device__ __forceinline__ void storeRows(uint16_t* dst, int64_t ld, int64_t r0, int64_t t,
                                          const float (&acc)[HD / 8][4], float mul0, float mul1,
                                          int lane) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t r = r0 + g + 8 * h;
    if (r >= t) continue;
    const float mul = h ? mul1 : mul0;
#pragma unroll
    for (int n = 0; n < HD / 8; ++n)
      *reinterpret_cast<uint32_t*>(dst + r * ld + n * 8 + 2 * q) =
          E::pack(acc[n][2 * h] * mul, acc[n][2 * h + 1] * mul);
  }
}

/// lse (in log2 units) and D of this lane's two query rows row0, row0 + 8 (the dq kernels);
/// rows >= t and rows with no visible key get L = +inf (so p = 0) and D = 0.
__device__ __forceinline__ void laneRowStats(const float* lse, const float* D, int64_t row0,
                                             int64_t t, float (&L)[2], float (&Dr)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + 8 * r;
    const float x = row < t ? lse[row] : -INFINITY;
    L[r] = x == -INFINITY ? INFINITY : x * kLog2e;
    Dr[r] = row < t ? D[row] : 0.0f;
  }
}

// ---------------------------------------------------------------------- forward --

constexpr int kFwdBR = 64, kFwdBC = 64;

/// Occupancy variants (template argument MINB, the blocks per SM that __launch_bounds__
/// makes the register allocation allow). The kernels are latency-bound at 2-3 blocks of 4
/// warps (Nsight Compute on an H100: ~5 cycles per issued instruction, 12-19% occupancy), so
/// the "occupancy" variant (TGRT_ATTN_MINB=1) caps registers at hd <= 64 for a fourth forward
/// block and a third dk/dv block, at the price of a few spilled registers. The other variant
/// asks for the 3 / 2 blocks that plain __launch_bounds__(kThreads) gave (an explicit 1 lets
/// ptxas take up to 255 registers).
template <int HD>
constexpr int fwdMinBlocks(bool occupancy) {
  return HD <= 64 ? (occupancy ? 4 : 3) : 1;
}
template <int HD>
constexpr int dkdvMinBlocks(bool occupancy) {
  return HD <= 64 ? (occupancy ? 3 : 2) : 1;
}
/// TGRT_ATTN_MINB (read once): 1 = the occupancy variants above (the default: on an H100,
/// bh 192, t 1024, hd 64, fwd + bwd 0.689 ms against 0.718, the same bits; logs in
/// bench/results/2026-11-23-h100/call22), 0 = the previous 3 / 2 blocks per SM.
bool attnOccupancyVariant() {
  static const bool v = [] {
    const char* e = std::getenv("TGRT_ATTN_MINB");
    return e ? std::strcmp(e, "1") == 0 : kAttnOccupancyDefault;
  }();
  return v;
}

template <int HD>
constexpr size_t fwdSmemBytes() {
  return (size_t)(kFwdBR + 4 * kFwdBC) * (HD + kPad) * 2;
}

// Block = (head h, query tile [q0, q0 + 64)); warp w owns queries q0 + 16 w .. + 15. For each
// visible key tile [k0, k0 + 64): S = Q K^T (in log2 units), online softmax, O += P V.
// K and V are double-buffered: the next tile's cp.async copies run during this tile's math.
// Shared memory: Q [64][HD+8], K [2][64][HD+8], V [2][64][HD+8] (E).
template <typename E, int HD, int MINB, bool GQA>
__global__ void __launch_bounds__(kThreads, MINB)
    attention_fwd_lp_kernel(const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                              const uint16_t* __restrict__ v, uint16_t* __restrict__ out,
                              float* __restrict__ lse, int64_t t, Layout li, Layout lk,
                              Layout lo, int causal, int64_t window, float scaleLog2) {
  constexpr int BR = kFwdBR, BC = kFwdBC, LD = HD + kPad;
  constexpr int KT = HD / 16, NS = BC / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  uint16_t* Qs = reinterpret_cast<uint16_t*>(smemF);
  uint16_t* Kb = Qs + BR * LD; // K buffers 0, 1
  uint16_t* Vb = Kb + 2 * BC * LD;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t q0 = (nqb - 1 - (int64_t)(blockIdx.x % nqb)) * BR; // longest tiles first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  loadTileAsync<BR, HD>(q + base, li.st, q0, t, Qs);
  cpAsyncCommit();
  if (kbLo <= kbHi) {
    loadPairAsync<BC, HD>(k + kbase, kst, v + kbase, kst, kbLo * BC, t, Kb, Vb);
  }
  cpAsyncCommit();
  cpAsyncWait<1>(); // Q has landed (the first K, V may still be in flight)
  __syncthreads();
  uint32_t qf[KT][4];
#pragma unroll
  for (int kk = 0; kk < KT; ++kk) loadA(qf[kk], Qs, LD, warp * 16, kk, lane);

  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int64_t row0 = q0 + warp * 16 + g; // this lane's rows: row0, row0 + 8

  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    const uint16_t *Ks, *Vs;
    nextKeyTile<BC, HD>(kb, kbLo, kbHi, k + kbase, v + kbase, kst, t, Kb, Vb, Ks, Vs);

    float s[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KT; ++kk)
#pragma unroll
      for (int j = 0; j < NS; j += 2) {
        uint32_t b[4];
        loadBt(b, Ks, LD, j * 8, kk, lane);
        E::mma(s[j], qf[kk], b[0], b[1]);
        E::mma(s[j + 1], qf[kk], b[2], b[3]);
      }

    onlineSoftmax(s, o, m, l, tileFull(q0, BR, k0, BC, t, causal, window), row0, k0, tq, t,
                  causal, window, scaleLog2);

#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      uint32_t a[4];
      accToA<E>(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < NO; n += 2) {
        uint32_t b[4];
        loadBn(b, Vs, LD, n * 8, kk, lane);
        E::mma(o[n], a, b[0], b[1]);
        E::mma(o[n + 1], a, b[2], b[3]);
      }
    }
  }

  cpAsyncWait<0>(); // nothing may be in flight at exit (only if no key tile was visited)
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float ls = quadSum(l[r]);
    inv[r] = ls > 0.0f ? 1.0f / ls : 0.0f;
    const int64_t row = row0 + 8 * r;
    if (tq == 0 && row < t) lse[h * t + row] = ls > 0.0f ? (m[r] + log2f(ls)) * kLn2 : -INFINITY;
  }
  storeRows<E, HD>(out + obase, lo.st, q0 + warp * 16, t, o, inv[0], inv[1], lane);
}

/// Shared memory of the wgmma forward: Q [64 * HD], K, V [2][64 * HD], blocked (E).
template <int HD>
constexpr size_t fwdWgSmemBytes() {
  return (size_t)(kFwdBR + 4 * kFwdBC) * HD * 2;
}

// The forward on wgmma (head dim 64; see "wgmma (sm_90)" above): the same blocks, tiles,
// double buffering and online softmax as attention_fwd_lp_kernel; per key tile S = Q K^T is 4
// wgmma (A = Q, B = K^T, both from shared memory) and O += P V is 4 (A = P from registers,
// B = V MN-major). (A software-pipelined form, P_{i-1} V_{i-1} running during tile i's
// softmax with V triple-buffered as in FlashAttention-3, measured 0.161 against 0.154 ms:
// not kept; bench/results/2026-11-26-h100/call37.)
template <typename E, int HD, int MINB, bool GQA>
__global__ void __launch_bounds__(kThreads, MINB)
    attention_fwd_wg_kernel(const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                            const uint16_t* __restrict__ v, uint16_t* __restrict__ out,
                            float* __restrict__ lse, int64_t t, Layout li, Layout lk, Layout lo,
                            int causal, int64_t window, float scaleLog2) {
  static_assert(HD == 64, "the wgmma kernels are m64n64: head dim 64");
  constexpr int BR = kFwdBR, BC = kFwdBC, KT = HD / 16, NS = BC / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  checkSwizzleBase(smemF);
  uint16_t* Qs = reinterpret_cast<uint16_t*>(smemF);
  uint16_t* Kb = Qs + BR * HD; // K buffers 0, 1
  uint16_t* Vb = Kb + 2 * BC * HD;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t q0 = (nqb - 1 - (int64_t)(blockIdx.x % nqb)) * BR; // longest tiles first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  loadTileBlkAsync<BR, HD>(q + base, li.st, q0, t, Qs);
  cpAsyncCommit();
  if (kbLo <= kbHi) {
    loadTileBlkAsync<BC, HD>(k + kbase, kst, kbLo * BC, t, Kb);
    loadTileBlkAsync<BC, HD>(v + kbase, kst, kbLo * BC, t, Vb);
  }
  cpAsyncCommit();

  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int64_t row0 = q0 + warp * 16 + g; // this lane's rows: row0, row0 + 8

  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    const uint16_t *Ks, *Vs; // (the first wait also covers Q)
    nextKeyTileBlk<BC, HD>(kb, kbLo, kbHi, k + kbase, v + kbase, kst, t, Kb, Vb, Ks, Vs);

    float s[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    wgFence();
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) E::template wgmmaSS<0>(s, kDesc<HD>(Qs, kk), kDesc<HD>(Ks, kk));
    wgCommit();
    wgWait0();
    keep(s);

    onlineSoftmax(s, o, m, l, tileFull(q0, BR, k0, BC, t, causal, window), row0, k0, tq, t,
                  causal, window, scaleLog2);

    uint32_t pa[BC / 16][4];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) accToA<E>(pa[kk], s[2 * kk], s[2 * kk + 1]);
    keep(o);
    wgFence();
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) E::template wgmmaRS<1>(o, pa[kk], mnDesc<HD>(Vs, kk));
    wgCommit();
    wgWait0();
    keep(o);
    keep(pa);
  }

  cpAsyncWait<0>(); // nothing may be in flight at exit (only if no key tile was visited)
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float ls = quadSum(l[r]);
    inv[r] = ls > 0.0f ? 1.0f / ls : 0.0f;
    const int64_t row = row0 + 8 * r;
    if (tq == 0 && row < t) lse[h * t + row] = ls > 0.0f ? (m[r] + log2f(ls)) * kLn2 : -INFINITY;
  }
  storeRows<E, HD>(out + obase, lo.st, q0 + warp * 16, t, o, inv[0], inv[1], lane);
}

// --------------------------------------------------------------------- backward --

// D[r] = sum_d dout[r, d] * out[r, d] (fp32) for the rows r = bh * t + i of the [bh, t, HD] E
// rows of out / dout (layout lo). HD / 8 consecutive lanes per row, each with one 16-byte
// load of out and of dout; the lanes' partial sums are added by shuffles (xor offsets below
// HD / 8 stay inside the row's lane group). The loop runs whole warps so every lane reaches
// every shuffle.
template <typename E, int HD>
__global__ void attention_bwd_d_lp_kernel(const uint16_t* __restrict__ out,
                                          const uint16_t* __restrict__ dout,
                                          float* __restrict__ D, int64_t rows, int64_t t,
                                          Layout lo) {
  constexpr int TPR = HD / 8; // lanes per row: 4, 8 or 16
  const int lane = threadIdx.x & 31;
  const int64_t n = rows * TPR;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t w0 = blockIdx.x * (int64_t)blockDim.x + (threadIdx.x & ~31); w0 < n;
       w0 += stride) {
    const int64_t i = w0 + lane;
    float s = 0.0f;
    if (i < n) {
      const int64_t r = i / TPR;
      const int64_t off = lo.base(r / t) + (r % t) * lo.st + (i % TPR) * 8;
      const uint4 a = *reinterpret_cast<const uint4*>(out + off);
      const uint4 b = *reinterpret_cast<const uint4*>(dout + off);
      const uint32_t aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s += E::toFloat((uint16_t)(aw[j] & 0xffffu)) * E::toFloat((uint16_t)(bw[j] & 0xffffu));
        s += E::toFloat((uint16_t)(aw[j] >> 16)) * E::toFloat((uint16_t)(bw[j] >> 16));
      }
    }
#pragma unroll
    for (int o = TPR / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (i < n && i % TPR == 0) D[i / TPR] = s;
  }
}

/// Query rows per dk/dv step (register pressure: hd 128 keeps 2 x 64 accumulators).
template <int HD>
__host__ __device__ constexpr int kvQueryTile() {
  return HD >= 128 ? 32 : 64;
}
constexpr int kKvBK = 64; // keys per dk/dv block (4 warps x 16)

template <int HD>
constexpr size_t dkdvSmemBytes() {
  return (size_t)(2 * kKvBK + 4 * kvQueryTile<HD>()) * (HD + kPad) * 2 +
         2 * (size_t)kvQueryTile<HD>() * 4;
}

/// lse (in log2 units) and D of query rows [row0, row0 + R) into shared memory; rows >= t and
/// rows with no visible key get L = +inf (so p = 2^(x - L) = 0) and D = 0.
template <int R>
__device__ __forceinline__ void loadRowStats(const float* lse, const float* D, int64_t row0,
                                             int64_t t, float* LS, float* DS) {
  for (int r = threadIdx.x; r < R; r += kThreads) {
    const bool in = row0 + r < t;
    const float L = in ? lse[row0 + r] : -INFINITY;
    LS[r] = L == -INFINITY ? INFINITY : L * kLog2e;
    DS[r] = in ? D[row0 + r] : 0.0f;
  }
}

// dK, dV for the key tile [k0, k0 + 64) of head h; warp w owns keys k0 + 16 w .. + 15. For
// each query tile [q0, q0 + BQ) that sees the keys (transposed products, keys as rows):
//   S^T = K Q^T, dP^T = V dO^T, P^T = 2^(scale log2e S^T - L), dS^T = P^T (dP^T - D),
//   dV += P^T dO,  dK += dS^T Q;  finally dK *= scale.
// Q and dO are double-buffered (cp.async copies of the next query tile during this one's math).
// Shared memory: K, V [64][HD+8]; Q, dO [2][BQ][HD+8] (E); L, D [BQ] (fp32).

template <typename E, int HD, int MINB, bool GQA>
__global__ void __launch_bounds__(kThreads, MINB)
    attention_bwd_dkdv_lp_kernel(const uint16_t* __restrict__ q,
                                   const uint16_t* __restrict__ k,
                                   const uint16_t* __restrict__ v,
                                   const uint16_t* __restrict__ dout,
                                   const float* __restrict__ lse, const float* __restrict__ D,
                                   uint16_t* __restrict__ dk, uint16_t* __restrict__ dv,
                                   int64_t t, Layout li, Layout lk, Layout lo, int causal,
                                   int64_t window, float scale, float scaleLog2) {
  constexpr int BK = kKvBK, BQ = kvQueryTile<HD>(), LD = HD + kPad;
  constexpr int KT = HD / 16, NQ = BQ / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  uint16_t* Ks = reinterpret_cast<uint16_t*>(smemF);
  uint16_t* Vs = Ks + BK * LD;
  uint16_t* Qb = Vs + BK * LD;     // Q buffers 0, 1
  uint16_t* dOb = Qb + 2 * BQ * LD; // dO buffers 0, 1
  float* LS = reinterpret_cast<float*>(dOb + 2 * BQ * LD);
  float* DS = LS + BQ;

  const int64_t nkb = (t + BK - 1) / BK;
  const int64_t hk = blockIdx.x / nkb; // the kv problem (the problem without GQA)
  const int64_t h0 = GQA ? lk.firstQuery(hk) : hk; // its group's first query problem
  const int64_t k0 = (int64_t)(blockIdx.x % nkb) * BK; // low key tiles see the most queries
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base0 = li.base(h0), obase0 = lo.base(h0);
  const int64_t kbase = GQA ? lk.kvBase(h0) : base0, kst = GQA ? lk.st : li.st;
  const int64_t key0 = k0 + warp * 16 + g; // this lane's keys: key0, key0 + 8

  int64_t qbLo, qbHi;
  queryTiles(k0, BQ, BK, t, causal, window, qbLo, qbHi);
  loadPairAsync<BK, HD>(k + kbase, kst, v + kbase, kst, k0, t, Ks, Vs);
  cpAsyncCommit();
  if (qbLo <= qbHi) {
    loadPairAsync<BQ, HD>(q + base0, li.st, dout + obase0, lo.st, qbLo * BQ, t, Qb, dOb);
  }
  cpAsyncCommit();

  float dK[NO][4], dV[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dK[n][e] = dV[n][e] = 0.0f;

  // The group's query heads h0 .. h0 + group - 1 in order (one head without GQA), each over
  // its query tiles: dK and dV sum them all. The heads of a group are consecutive heads of one
  // sequence (head h0 + gi's rows start gi * sh after head h0's); the Q, dO buffers alternate
  // over the steps (gi, qb) in order, and the last tile of a head prefetches the next head's
  // first.
  const int64_t group = GQA ? lk.group : 1;
  int gbuf = 0; // GQA: the buffer of this step (steps alternate across heads too)
  for (int64_t gi = 0; gi < group; ++gi) {
    const int64_t h = h0 + gi, base = base0 + gi * li.sh, obase = obase0 + gi * lo.sh;
    for (int64_t qb = qbLo; qb <= qbHi; ++qb) {
      const int64_t q0 = qb * BQ;
      const int buf = GQA ? gbuf : (int)((qb - qbLo) & 1);
      if constexpr (GQA) gbuf ^= 1;
      const uint16_t* Qs = Qb + buf * BQ * LD;
      const uint16_t* dOs = dOb + buf * BQ * LD;
      __syncthreads(); // every warp is done with the other buffers and with LS, DS
      if (qb < qbHi) {
        loadPairAsync<BQ, HD>(q + base, li.st, dout + obase, lo.st, q0 + BQ, t,
                              Qb + (buf ^ 1) * BQ * LD, dOb + (buf ^ 1) * BQ * LD);
      } else if (GQA && gi + 1 < group) { // the next head's first query tile
        loadPairAsync<BQ, HD>(q + base + li.sh, li.st, dout + obase + lo.sh, lo.st, qbLo * BQ, t,
                              Qb + (buf ^ 1) * BQ * LD, dOb + (buf ^ 1) * BQ * LD);
      }
      cpAsyncCommit(); // (empty on the last step)
      loadRowStats<BQ>(lse + h * t, D + h * t, q0, t, LS, DS);
      cpAsyncWait<1>(); // K, V and this tile's Q, dO have landed
      __syncthreads();

      float s[NQ][4], dp[NQ][4];
#pragma unroll
      for (int j = 0; j < NQ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KT; ++kk) {
        uint32_t ka[4], va[4];
        loadA(ka, Ks, LD, warp * 16, kk, lane);
        loadA(va, Vs, LD, warp * 16, kk, lane);
#pragma unroll
        for (int j = 0; j < NQ; j += 2) {
          uint32_t b[4];
          loadBt(b, Qs, LD, j * 8, kk, lane);
          E::mma(s[j], ka, b[0], b[1]);
          E::mma(s[j + 1], ka, b[2], b[3]);
          loadBt(b, dOs, LD, j * 8, kk, lane);
          E::mma(dp[j], va, b[0], b[1]);
          E::mma(dp[j + 1], va, b[2], b[3]);
        }
      }

      // Query tiles are no wider than key tiles here, so "full" uses the tile's extremes.
      dsTransposed(s, dp, LS, DS, tileFull(q0, BQ, k0, BK, t, causal, window), q0, key0, tq, t,
                   causal, window, scaleLog2);

#pragma unroll
      for (int kk = 0; kk < BQ / 16; ++kk) {
        uint32_t pa[4], dsa[4];
        accToA<E>(pa, s[2 * kk], s[2 * kk + 1]);
        accToA<E>(dsa, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
        for (int n = 0; n < NO; n += 2) {
          uint32_t b[4];
          loadBn(b, dOs, LD, n * 8, kk, lane);
          E::mma(dV[n], pa, b[0], b[1]);
          E::mma(dV[n + 1], pa, b[2], b[3]);
          loadBn(b, Qs, LD, n * 8, kk, lane);
          E::mma(dK[n], dsa, b[0], b[1]);
          E::mma(dK[n + 1], dsa, b[2], b[3]);
        }
      }
    }
  }

  cpAsyncWait<0>(); // nothing may be in flight at exit (only if no query tile was visited)
  storeRows<E, HD>(dk + kbase, kst, k0 + warp * 16, t, dK, scale, scale, lane);
  storeRows<E, HD>(dv + kbase, kst, k0 + warp * 16, t, dV, 1.0f, 1.0f, lane);
}

constexpr int kDqBR = 64, kDqBC = 64;

template <int HD>
constexpr size_t dqSmemBytes() {
  return (size_t)(2 * kDqBR + 4 * kDqBC) * (HD + kPad) * 2;
}

// dQ for the query tile [q0, q0 + 64) of head h; warp w owns queries q0 + 16 w .. + 15. For
// each visible key tile: S = Q K^T, dP = dO V^T, P = 2^(scale log2e S - L), dS = P (dP - D),
// dQ += dS K;  finally dQ *= scale. K and V are double-buffered as in the forward.
// Shared memory: Q, dO [64][HD+8]; K, V [2][64][HD+8] (E).
template <typename E, int HD, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_dq_lp_kernel(const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                                 const uint16_t* __restrict__ v,
                                 const uint16_t* __restrict__ dout,
                                 const float* __restrict__ lse, const float* __restrict__ D,
                                 uint16_t* __restrict__ dq, int64_t t, Layout li, Layout lk,
                                 Layout lo, int causal, int64_t window, float scale,
                                 float scaleLog2) {
  constexpr int BR = kDqBR, BC = kDqBC, LD = HD + kPad;
  constexpr int KT = HD / 16, NS = BC / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  uint16_t* Qs = reinterpret_cast<uint16_t*>(smemF);
  uint16_t* dOs = Qs + BR * LD;
  uint16_t* Kb = dOs + BR * LD; // K buffers 0, 1
  uint16_t* Vb = Kb + 2 * BC * LD;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t q0 = (nqb - 1 - (int64_t)(blockIdx.x % nqb)) * BR;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;
  const int64_t row0 = q0 + warp * 16 + g; // this lane's rows: row0, row0 + 8

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  loadPairAsync<BR, HD>(q + base, li.st, dout + obase, lo.st, q0, t, Qs, dOs);
  if (kbLo <= kbHi) {
    loadPairAsync<BC, HD>(k + kbase, kst, v + kbase, kst, kbLo * BC, t, Kb, Vb);
  }
  cpAsyncCommit();
  float L[2], Dr[2];
  laneRowStats(lse + h * t, D + h * t, row0, t, L, Dr);

  float dQ[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) dQ[n][0] = dQ[n][1] = dQ[n][2] = dQ[n][3] = 0.0f;

  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    const uint16_t *Ks, *Vs; // (with this tile's K, V, the Q and dO of the first group land)
    nextKeyTile<BC, HD>(kb, kbLo, kbHi, k + kbase, v + kbase, kst, t, Kb, Vb, Ks, Vs);

    float s[NS][4], dp[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      uint32_t qa[4], da[4];
      loadA(qa, Qs, LD, warp * 16, kk, lane);
      loadA(da, dOs, LD, warp * 16, kk, lane);
#pragma unroll
      for (int j = 0; j < NS; j += 2) {
        uint32_t b[4];
        loadBt(b, Ks, LD, j * 8, kk, lane);
        E::mma(s[j], qa, b[0], b[1]);
        E::mma(s[j + 1], qa, b[2], b[3]);
        loadBt(b, Vs, LD, j * 8, kk, lane);
        E::mma(dp[j], da, b[0], b[1]);
        E::mma(dp[j + 1], da, b[2], b[3]);
      }
    }

    dsRows(s, dp, L, Dr, tileFull(q0, BR, k0, BC, t, causal, window), row0, k0, tq, t, causal,
           window, scaleLog2);

#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      uint32_t a[4];
      accToA<E>(a, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < NO; n += 2) {
        uint32_t b[4];
        loadBn(b, Ks, LD, n * 8, kk, lane);
        E::mma(dQ[n], a, b[0], b[1]);
        E::mma(dQ[n + 1], a, b[2], b[3]);
      }
    }
  }

  cpAsyncWait<0>(); // nothing may be in flight at exit (only if no key tile was visited)
  storeRows<E, HD>(dq + base, li.st, q0 + warp * 16, t, dQ, scale, scale, lane);
}

// ------------------------------------------------------------ backward on wgmma --

/// Shared memory of the wgmma dk/dv kernel: K, V [64 * HD]; Q, dO [2][64 * HD] (blocked E);
/// L, D [64] (fp32).
template <int HD>
constexpr size_t dkdvWgSmemBytes() {
  return (size_t)(2 * kKvBK + 4 * 64) * HD * 2 + 2 * 64 * 4;
}

// dK, dV on wgmma (head dim 64): attention_bwd_dkdv_lp_kernel's blocks and tiles (64 keys,
// query tiles of 64); per query tile S^T = K Q^T and dP^T = V dO^T are 4 + 4 wgmma (both
// factors from shared memory), dV += P^T dO and dK += dS^T Q 4 + 4 (A from registers).
template <typename E, int HD, int MINB, bool GQA>
__global__ void __launch_bounds__(kThreads, MINB)
    attention_bwd_dkdv_wg_kernel(const uint16_t* __restrict__ q,
                                 const uint16_t* __restrict__ k,
                                 const uint16_t* __restrict__ v,
                                 const uint16_t* __restrict__ dout,
                                 const float* __restrict__ lse, const float* __restrict__ D,
                                 uint16_t* __restrict__ dk, uint16_t* __restrict__ dv, int64_t t,
                                 Layout li, Layout lk, Layout lo, int causal, int64_t window,
                                 float scale, float scaleLog2) {
  static_assert(HD == 64, "the wgmma kernels are m64n64: head dim 64");
  constexpr int BK = kKvBK, BQ = 64, KT = HD / 16, NQ = BQ / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  checkSwizzleBase(smemF);
  uint16_t* Ks = reinterpret_cast<uint16_t*>(smemF);
  uint16_t* Vs = Ks + BK * HD;
  uint16_t* Qb = Vs + BK * HD;     // Q buffers 0, 1
  uint16_t* dOb = Qb + 2 * BQ * HD; // dO buffers 0, 1
  float* LS = reinterpret_cast<float*>(dOb + 2 * BQ * HD);
  float* DS = LS + BQ;

  const int64_t nkb = (t + BK - 1) / BK;
  const int64_t hk = blockIdx.x / nkb; // the kv problem (the problem without GQA)
  const int64_t h0 = GQA ? lk.firstQuery(hk) : hk; // its group's first query problem
  const int64_t k0 = (int64_t)(blockIdx.x % nkb) * BK;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base0 = li.base(h0), obase0 = lo.base(h0);
  const int64_t kbase = GQA ? lk.kvBase(h0) : base0, kst = GQA ? lk.st : li.st;
  const int64_t key0 = k0 + warp * 16 + g; // this lane's keys: key0, key0 + 8

  int64_t qbLo, qbHi;
  queryTiles(k0, BQ, BK, t, causal, window, qbLo, qbHi);
  loadTileBlkAsync<BK, HD>(k + kbase, kst, k0, t, Ks);
  loadTileBlkAsync<BK, HD>(v + kbase, kst, k0, t, Vs);
  cpAsyncCommit();
  if (qbLo <= qbHi) {
    loadTileBlkAsync<BQ, HD>(q + base0, li.st, qbLo * BQ, t, Qb);
    loadTileBlkAsync<BQ, HD>(dout + obase0, lo.st, qbLo * BQ, t, dOb);
  }
  cpAsyncCommit();

  float dK[NO][4], dV[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dK[n][e] = dV[n][e] = 0.0f;

  // The group's query heads h0 .. h0 + group - 1 in order (one head without GQA), each over
  // its query tiles: dK and dV sum them all. The heads of a group are consecutive heads of one
  // sequence (head h0 + gi's rows start gi * sh after head h0's); the Q, dO buffers alternate
  // over the steps (gi, qb) in order, and the last tile of a head prefetches the next head's
  // first.
  const int64_t group = GQA ? lk.group : 1;
  int gbuf = 0; // GQA: the buffer of this step (steps alternate across heads too)
  for (int64_t gi = 0; gi < group; ++gi) {
    const int64_t h = h0 + gi, base = base0 + gi * li.sh, obase = obase0 + gi * lo.sh;
    for (int64_t qb = qbLo; qb <= qbHi; ++qb) {
      const int64_t q0 = qb * BQ;
      const int buf = GQA ? gbuf : (int)((qb - qbLo) & 1);
      if constexpr (GQA) gbuf ^= 1;
      const uint16_t* Qs = Qb + buf * BQ * HD;
      const uint16_t* dOs = dOb + buf * BQ * HD;
      __syncthreads(); // every warp is done with the other buffers and with LS, DS
      if (qb < qbHi) {
        loadTileBlkAsync<BQ, HD>(q + base, li.st, q0 + BQ, t, Qb + (buf ^ 1) * BQ * HD);
        loadTileBlkAsync<BQ, HD>(dout + obase, lo.st, q0 + BQ, t, dOb + (buf ^ 1) * BQ * HD);
      } else if (GQA && gi + 1 < group) { // the next head's first query tile
        loadTileBlkAsync<BQ, HD>(q + base + li.sh, li.st, qbLo * BQ, t, Qb + (buf ^ 1) * BQ * HD);
        loadTileBlkAsync<BQ, HD>(dout + obase + lo.sh, lo.st, qbLo * BQ, t,
                                 dOb + (buf ^ 1) * BQ * HD);
      }
      cpAsyncCommit(); // (empty on the last step)
      loadRowStats<BQ>(lse + h * t, D + h * t, q0, t, LS, DS);
      cpAsyncWait<1>(); // K, V and this tile's Q, dO have landed
      fenceProxyAsync();
      __syncthreads();

      float s[NQ][4], dp[NQ][4];
#pragma unroll
      for (int j = 0; j < NQ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.0f;
      // Four groups, each overlapping the math of the step before it: S^T | dP^T (during P^T)
      // | dV += P^T dO (during dS^T) | dK += dS^T Q.
      wgFence();
#pragma unroll
      for (int kk = 0; kk < KT; ++kk) E::template wgmmaSS<0>(s, kDesc<HD>(Ks, kk), kDesc<HD>(Qs, kk));
      wgCommit();
#pragma unroll
      for (int kk = 0; kk < KT; ++kk)
        E::template wgmmaSS<0>(dp, kDesc<HD>(Vs, kk), kDesc<HD>(dOs, kk));
      wgCommit();
      wgWait<1>();
      keep(s);
      pTransposed(s, LS, tileFull(q0, BQ, k0, BK, t, causal, window), q0, key0, tq, t, causal,
                  window, scaleLog2);
      uint32_t pa[BQ / 16][4], dsa[BQ / 16][4];
#pragma unroll
      for (int kk = 0; kk < BQ / 16; ++kk) accToA<E>(pa[kk], s[2 * kk], s[2 * kk + 1]);
      keep(dV);
      wgFence();
#pragma unroll
      for (int kk = 0; kk < BQ / 16; ++kk) E::template wgmmaRS<1>(dV, pa[kk], mnDesc<HD>(dOs, kk));
      wgCommit();
      wgWait<1>(); // dP^T
      keep(dp);
      dsFromP(s, dp, DS, tq);
#pragma unroll
      for (int kk = 0; kk < BQ / 16; ++kk) accToA<E>(dsa[kk], dp[2 * kk], dp[2 * kk + 1]);
      keep(dK);
      wgFence();
#pragma unroll
      for (int kk = 0; kk < BQ / 16; ++kk) E::template wgmmaRS<1>(dK, dsa[kk], mnDesc<HD>(Qs, kk));
      wgCommit();
      wgWait0();
      keep(dV);
      keep(dK);
      keep(pa);
      keep(dsa);
    }
  }

  cpAsyncWait<0>(); // nothing may be in flight at exit (only if no query tile was visited)
  storeRows<E, HD>(dk + kbase, kst, k0 + warp * 16, t, dK, scale, scale, lane);
  storeRows<E, HD>(dv + kbase, kst, k0 + warp * 16, t, dV, 1.0f, 1.0f, lane);
}

/// Shared memory of the wgmma dq kernel: Q, dO [64 * HD]; K, V [2][64 * HD] (blocked E).
template <int HD>
constexpr size_t dqWgSmemBytes() {
  return (size_t)(2 * kDqBR + 4 * kDqBC) * HD * 2;
}

// dQ on wgmma (head dim 64): attention_bwd_dq_lp_kernel's blocks and tiles; per key tile
// S = Q K^T and dP = dO V^T are 4 + 4 wgmma (shared memory), dQ += dS K 4 (A from registers,
// B = K MN-major).
template <typename E, int HD, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_dq_wg_kernel(const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                               const uint16_t* __restrict__ v, const uint16_t* __restrict__ dout,
                               const float* __restrict__ lse, const float* __restrict__ D,
                               uint16_t* __restrict__ dq, int64_t t, Layout li, Layout lk,
                               Layout lo, int causal, int64_t window, float scale,
                               float scaleLog2) {
  static_assert(HD == 64, "the wgmma kernels are m64n64: head dim 64");
  constexpr int BR = kDqBR, BC = kDqBC, KT = HD / 16, NS = BC / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  checkSwizzleBase(smemF);
  uint16_t* Qs = reinterpret_cast<uint16_t*>(smemF);
  uint16_t* dOs = Qs + BR * HD;
  uint16_t* Kb = dOs + BR * HD; // K buffers 0, 1
  uint16_t* Vb = Kb + 2 * BC * HD;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t q0 = (nqb - 1 - (int64_t)(blockIdx.x % nqb)) * BR;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;
  const int64_t row0 = q0 + warp * 16 + g; // this lane's rows: row0, row0 + 8

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  loadTileBlkAsync<BR, HD>(q + base, li.st, q0, t, Qs);
  loadTileBlkAsync<BR, HD>(dout + obase, lo.st, q0, t, dOs);
  if (kbLo <= kbHi) {
    loadTileBlkAsync<BC, HD>(k + kbase, kst, kbLo * BC, t, Kb);
    loadTileBlkAsync<BC, HD>(v + kbase, kst, kbLo * BC, t, Vb);
  }
  cpAsyncCommit();
  float L[2], Dr[2];
  laneRowStats(lse + h * t, D + h * t, row0, t, L, Dr);

  float dQ[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) dQ[n][0] = dQ[n][1] = dQ[n][2] = dQ[n][3] = 0.0f;

  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    const uint16_t *Ks, *Vs; // (with this tile's K, V, the Q and dO of the first group land)
    nextKeyTileBlk<BC, HD>(kb, kbLo, kbHi, k + kbase, v + kbase, kst, t, Kb, Vb, Ks, Vs);

    float s[NS][4], dp[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.0f;
    // S | dP (running during P = 2^(...)).
    wgFence();
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) E::template wgmmaSS<0>(s, kDesc<HD>(Qs, kk), kDesc<HD>(Ks, kk));
    wgCommit();
#pragma unroll
    for (int kk = 0; kk < KT; ++kk)
      E::template wgmmaSS<0>(dp, kDesc<HD>(dOs, kk), kDesc<HD>(Vs, kk));
    wgCommit();
    wgWait<1>();
    keep(s);
    pRows(s, L, tileFull(q0, BR, k0, BC, t, causal, window), row0, k0, tq, t, causal, window,
          scaleLog2);
    wgWait0();
    keep(dp);
    dsFromPRows(s, dp, Dr);

    uint32_t dsa[BC / 16][4];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) accToA<E>(dsa[kk], dp[2 * kk], dp[2 * kk + 1]);
    keep(dQ);
    wgFence();
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) E::template wgmmaRS<1>(dQ, dsa[kk], mnDesc<HD>(Ks, kk));
    wgCommit();
    wgWait0();
    keep(dQ);
    keep(dsa);
  }

  cpAsyncWait<0>(); // nothing may be in flight at exit (only if no key tile was visited)
  storeRows<E, HD>(dq + base, li.st, q0 + warp * 16, t, dQ, scale, scale, lane);
}

// ------------------------------------------------------------------ host side --


template <typename Kernel>
void allowSmem16(const char* loc, Kernel* kernel, size_t bytes, bool& done) {
  if (done) return;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes), loc,
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  done = true;
}

unsigned blocksFor(const char* loc, int64_t bh, int64_t t, int tile) {
  const int64_t blocks = bh * ((t + tile - 1) / tile);
  if (blocks > 0x7fffffff) fail(loc, "attention (bf16 / f16): bh * t too large");
  return (unsigned)blocks;
}

template <typename E, int HD, bool GQA>
void fwdHD(Context* ctx, const char* loc, const uint16_t* q, const uint16_t* k,
           const uint16_t* v, uint16_t* out, float* lse, int64_t bh, int64_t t, Layout li,
           Layout lk, Layout lo, int causal, int64_t window, float scale) {
  if constexpr (HD == 64) {
    if (ctx->attn_wgmma) {
      constexpr size_t smem = fwdWgSmemBytes<HD>();
      static bool smemSet = false;
      auto* kernel = attention_fwd_wg_kernel<E, HD, kFwdWgMinBlocks, GQA>;
      allowSmem16(loc, kernel, smem, smemSet);
      launch(ctx, loc, E::kFwdWgName, kernel, dim3(blocksFor(loc, bh, t, kFwdBR)),
             dim3(kThreads), smem, q, k, v, out, lse, t, li, lk, lo, causal, window,
             scale * kLog2e);
      return;
    }
  }
  constexpr size_t smem = fwdSmemBytes<HD>();
  const bool occ = attnOccupancyVariant();
  static bool smemSet[2] = {false, false};
  auto* kernel = occ ? attention_fwd_lp_kernel<E, HD, fwdMinBlocks<HD>(true), GQA>
                     : attention_fwd_lp_kernel<E, HD, fwdMinBlocks<HD>(false), GQA>;
  allowSmem16(loc, kernel, smem, smemSet[occ]);
  launch(ctx, loc, E::kFwdName, kernel, dim3(blocksFor(loc, bh, t, kFwdBR)), dim3(kThreads), smem,
         q, k, v, out, lse, t, li, lk, lo, causal, window, scale * kLog2e);
}

template <typename E, int HD, bool GQA>
void bwdHD(Context* ctx, const char* loc, const uint16_t* q, const uint16_t* k,
           const uint16_t* v, const uint16_t* out, const float* lse, const uint16_t* dout,
           uint16_t* dq, uint16_t* dk, uint16_t* dv, int64_t bh, int64_t t, Layout li,
           Layout lk, Layout lo, int causal, int64_t window, float scale) {
  checkWorkspace(ctx, loc, "attention_bwd (bf16 / f16; D = rowsum(dout * out))",
                 bh * t * (int64_t)sizeof(float));
  float* D = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  launch(ctx, loc, E::kDName, attention_bwd_d_lp_kernel<E, HD>,
         dim3(gridFor(bh * t * (HD / 8), 256)), dim3(256), 0, out, dout, D, bh * t, t, lo);
  if constexpr (HD == 64) {
    if (ctx->attn_wgmma) {
      {
        constexpr size_t smem = dkdvWgSmemBytes<HD>();
        const bool occ = attnOccupancyVariant();
        static bool smemSet[2] = {false, false};
        auto* kernel = occ ? attention_bwd_dkdv_wg_kernel<E, HD, 3, GQA>
                           : attention_bwd_dkdv_wg_kernel<E, HD, 2, GQA>;
        allowSmem16(loc, kernel, smem, smemSet[occ]);
        launch(ctx, loc, E::kDkDvWgName, kernel,
               dim3(blocksFor(loc, bh / lk.group, t, kKvBK)),
               dim3(kThreads), smem, q, k, v, dout, lse, (const float*)D, dk, dv, t, li, lk, lo,
               causal, window, scale, scale * kLog2e);
      }
      constexpr size_t smem = dqWgSmemBytes<HD>();
      static bool smemSet = false;
      auto* kernel = attention_bwd_dq_wg_kernel<E, HD, GQA>;
      allowSmem16(loc, kernel, smem, smemSet);
      launch(ctx, loc, E::kDqWgName, kernel, dim3(blocksFor(loc, bh, t, kDqBR)), dim3(kThreads),
             smem, q, k, v, dout, lse, (const float*)D, dq, t, li, lk, lo, causal, window, scale,
             scale * kLog2e);
      return;
    }
  }
  const bool occ = attnOccupancyVariant();
  {
    constexpr size_t smem = dkdvSmemBytes<HD>();
    static bool smemSet[2] = {false, false};
    auto* kernel = occ ? attention_bwd_dkdv_lp_kernel<E, HD, dkdvMinBlocks<HD>(true), GQA>
                       : attention_bwd_dkdv_lp_kernel<E, HD, dkdvMinBlocks<HD>(false), GQA>;
    allowSmem16(loc, kernel, smem, smemSet[occ]);
    // One block per (kv problem, key tile): bh / group kv problems.
    launch(ctx, loc, E::kDkDvName, kernel, dim3(blocksFor(loc, bh / lk.group, t, kKvBK)),
           dim3(kThreads), smem, q, k, v, dout, lse, (const float*)D, dk, dv, t, li, lk, lo,
           causal, window, scale, scale * kLog2e);
  }
  {
    constexpr size_t smem = dqSmemBytes<HD>();
    static bool smemSet = false;
    auto* kernel = attention_bwd_dq_lp_kernel<E, HD, GQA>;
    allowSmem16(loc, kernel, smem, smemSet);
    launch(ctx, loc, E::kDqName, kernel, dim3(blocksFor(loc, bh, t, kDqBR)), dim3(kThreads), smem,
           q, k, v, dout, lse, (const float*)D, dq, t, li, lk, lo, causal, window, scale,
           scale * kLog2e);
  }
}

template <typename E>
void fwdE(Context* ctx, const char* loc, const char* what, const uint16_t* q, const uint16_t* k,
          const uint16_t* v, uint16_t* out, float* lse, int64_t bh, int64_t t, int64_t hd,
          const Layout& li, const Layout& lk, const Layout& lo, int32_t causal, int64_t window,
          float scale) {
  if (!withHdGqa(hd, li, lk, [&](auto hdC, auto gqaC) {
        fwdHD<E, decltype(hdC)::value, decltype(gqaC)::value>(ctx, loc, q, k, v, out, lse, bh, t,
                                                              li, lk, lo, causal, window, scale);
      }))
    fail(loc, "%s: head dim %lld is not supported on CUDA (32, 64 or 128)", what, (long long)hd);
}

template <typename E>
void bwdE(Context* ctx, const char* loc, const char* what, const uint16_t* q, const uint16_t* k,
          const uint16_t* v, const uint16_t* out, const float* lse, const uint16_t* dout,
          uint16_t* dq, uint16_t* dk, uint16_t* dv, int64_t bh, int64_t t, int64_t hd,
          const Layout& li, const Layout& lk, const Layout& lo, int32_t causal, int64_t window,
          float scale) {
  if (!withHdGqa(hd, li, lk, [&](auto hdC, auto gqaC) {
        bwdHD<E, decltype(hdC)::value, decltype(gqaC)::value>(ctx, loc, q, k, v, out, lse, dout,
                                                              dq, dk, dv, bh, t, li, lk, lo,
                                                              causal, window, scale);
      }))
    fail(loc, "%s: head dim %lld is not supported on CUDA (32, 64 or 128)", what, (long long)hd);
}

/// The bf16 / f16 forward of tgrt_attention_gqa_fwd (gqa) or tgrt_attention_fwd (its
/// messages; kv_heads = heads, kv strides = in strides).
void fwd16(Context* ctx, const char* loc, bool gqa, int32_t dt, const void* q, const void* k,
           const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t kv_heads,
           int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
           int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
           int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
           float scale) {
  checkCtx(ctx, loc);
  const Layouts ls = checkedLayouts(loc, /*forward=*/true, gqa, batch, heads, kv_heads, t, hd,
                                    in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                                    kv_stride_h, kv_stride_t, out_stride_b, out_stride_h,
                                    out_stride_t);
  const char* fn = gqa ? "attention_gqa_fwd" : "attention_fwd";
  if (dt != TGRT_BF16 && dt != TGRT_F16)
    fail(loc, "%s (tensor cores): dtype %d is not bf16 or f16", fn, (int)dt);
  const int64_t bh = batch * heads;
  if (bh * t == 0) return;
  const Layout &li = ls.in, &lk = ls.kv, &lo = ls.out;
  const char* what = gqa ? "attention_gqa_fwd (bf16 / f16)" : "attention_fwd (bf16 / f16)";
  checkAlignedTensors16(loc, what, {q, k, v, out});
  checkRowStrides16(loc, what, li, lk, lo, 8);
  const auto* q16 = static_cast<const uint16_t*>(q);
  const auto* k16 = static_cast<const uint16_t*>(k);
  const auto* v16 = static_cast<const uint16_t*>(v);
  auto* o16 = static_cast<uint16_t*>(out);
  if (dt == TGRT_BF16)
    fwdE<Bf16>(ctx, loc, what, q16, k16, v16, o16, lse, bh, t, hd, li, lk, lo, causal, window,
               scale);
  else
    fwdE<F16>(ctx, loc, what, q16, k16, v16, o16, lse, bh, t, hd, li, lk, lo, causal, window,
              scale);
}

/// The bf16 / f16 backward, as fwd16.
void bwd16(Context* ctx, const char* loc, bool gqa, int32_t dt, const void* q, const void* k,
           const void* v, const void* out, const float* lse, const void* dout, void* dq,
           void* dk, void* dv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
           int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
           int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
           int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
           float scale) {
  checkCtx(ctx, loc);
  const Layouts ls = checkedLayouts(loc, /*forward=*/false, gqa, batch, heads, kv_heads, t, hd,
                                    in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                                    kv_stride_h, kv_stride_t, out_stride_b, out_stride_h,
                                    out_stride_t);
  const char* fn = gqa ? "attention_gqa_bwd" : "attention_bwd";
  if (dt != TGRT_BF16 && dt != TGRT_F16)
    fail(loc, "%s (tensor cores): dtype %d is not bf16 or f16", fn, (int)dt);
  const int64_t bh = batch * heads;
  if (bh * t * hd == 0) return;
  const Layout &li = ls.in, &lk = ls.kv, &lo = ls.out;
  const char* what = gqa ? "attention_gqa_bwd (bf16 / f16)" : "attention_bwd (bf16 / f16)";
  checkAlignedTensors16(loc, what, {q, k, v, out, dout, dq, dk, dv});
  checkRowStrides16(loc, what, li, lk, lo, 8);
  const auto* q16 = static_cast<const uint16_t*>(q);
  const auto* k16 = static_cast<const uint16_t*>(k);
  const auto* v16 = static_cast<const uint16_t*>(v);
  const auto* o16 = static_cast<const uint16_t*>(out);
  const auto* do16 = static_cast<const uint16_t*>(dout);
  auto* dq16 = static_cast<uint16_t*>(dq);
  auto* dk16 = static_cast<uint16_t*>(dk);
  auto* dv16 = static_cast<uint16_t*>(dv);
  if (dt == TGRT_BF16)
    bwdE<Bf16>(ctx, loc, what, q16, k16, v16, o16, lse, do16, dq16, dk16, dv16, bh, t, hd, li, lk,
               lo, causal, window, scale);
  else
    bwdE<F16>(ctx, loc, what, q16, k16, v16, o16, lse, do16, dq16, dk16, dv16, bh, t, hd, li, lk,
              lo, causal, window, scale);
}

} // namespace

void attentionFwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                    const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                    int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h,
                    int64_t in_stride_t, int64_t out_stride_b, int64_t out_stride_h,
                    int64_t out_stride_t, int32_t causal, int64_t window, float scale) {
  fwd16(ctx, loc, false, dt, q, k, v, out, lse, batch, heads, heads, t, hd, in_stride_b,
        in_stride_h, in_stride_t, in_stride_b, in_stride_h, in_stride_t, out_stride_b,
        out_stride_h, out_stride_t, causal, window, scale);
}

void attentionGqaFwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale) {
  fwd16(ctx, loc, true, dt, q, k, v, out, lse, batch, heads, kv_heads, t, hd, in_stride_b,
        in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b,
        out_stride_h, out_stride_t, causal, window, scale);
}

void setAttentionForm(Context* ctx, const AttentionForm& form) {
  checkCtx(ctx, "set_attention_form");
  ctx->attn_wgmma = form.wgmma && ctx->attn_wgmma_ok;
}

AttentionForm attentionForm(const Context* ctx) {
  return {ctx->attn_wgmma};
}

void attentionBwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                    const void* v, const void* out, const float* lse, const void* dout,
                    void* dq, void* dk, void* dv, int64_t batch, int64_t heads, int64_t t,
                    int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                    int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                    int32_t causal, int64_t window, float scale) {
  bwd16(ctx, loc, false, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, heads, t, hd,
        in_stride_b, in_stride_h, in_stride_t, in_stride_b, in_stride_h, in_stride_t,
        out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void attentionGqaBwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, const void* out, const float* lse, const void* dout,
                       void* dq, void* dk, void* dv, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale) {
  bwd16(ctx, loc, true, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, kv_heads, t, hd,
        in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t,
        out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

} // namespace tgrt_cuda
