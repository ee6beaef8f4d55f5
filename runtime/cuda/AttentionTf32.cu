// AttentionTf32.cu — fused causal / sliding-window attention on fp32 tensors with the products
// on the TF32 tensor cores (mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32). Used by
// tgrt_attention_fwd / tgrt_attention_bwd when TGRT_TF32=1 (Attention.cu dispatches on
// Context::tf32); without it the exact fp32 kernels of Attention.cu run.
//
// Same algorithm, masking, tile skipping and determinism as Attention.cu and AttentionBf16.cu
// (FlashAttention-2): a forward kernel with the softmax online, and a backward of three
// kernels (D = rowsum(dout * out); dk, dv per key tile; dq per query tile), each output
// element summed by one thread in a fixed order, no atomics.
//
// Arithmetic. Inputs and outputs are fp32. Every product takes TF32 operands (fp32 rounded to
// 10 mantissa bits, round-to-nearest ties away, cvt.rna.tf32.f32) and accumulates in fp32. The
// q, k, v, dout tiles are rounded once, when copied into shared memory; P and dS are rounded
// when they become operands of the next product. Scores, running max / sum, lse, D, P, dS and
// the output accumulators are fp32. Scores in the log2 domain (one ex2 per element), as in
// the bf16 kernels. Expected error: a few 1e-4 relative to the largest value (TF32's 2^-11
// unit roundoff on both operands), against ~1e-6 for the fp32 kernels. Exception: the
// forward's S = Q K^T runs in 3xTF32 by default (Context::tf32_split_scores, see the forward
// kernel), which makes lse fp32-accurate; single TF32 scores put ~3e-4 relative error on lse
// (window 1: lse = s_ii, the rounding of q.k itself).
//
// Warp tiling as in AttentionBf16.cu: 4 warps, each owns 16 rows of the tile it produces and
// the full width of the other side; C[16 x N] += A[16 x K] B[K x N] is (K/8) x (N/8) mma.
// Shared-memory tiles are row-major fp32 [rows][HD + 4] (the 4-float pad puts the 32 words a
// warp reads for one fragment in 32 distinct banks, for every access pattern below).
//
// Fragment layouts (PTX ISA, m16n8k8 .tf32; lane = 4 g + q): A {A[g][q], A[g+8][q],
// A[g][q+4], A[g+8][q+4]}, B {B[q][g], B[q+4][g]}, C {C[g][2q], C[g][2q+1], C[g+8][2q],
// C[g+8][2q+1]}. The C fragment of an n-tile of the first product (P or dS, 16 x 8) becomes
// the A fragment of the second product's k-tile without shuffles by permuting that k-tile:
// A column q holds key 2q and column q + 4 key 2q + 1, i.e. a = {c0, c2, c1, c3}; the B
// operand (V, dO, Q or K rows) is read with the same permutation (rows 2q and 2q + 1).
//
// Grouped-query attention as in Attention.cu: k, v through their own layout (Layout::group),
// the dk / dv kernel loops over the group's query heads (registers, no atomics).
//
// The CPU emulator (runtime/cuda/emu) implements the tf32 mma and cvt.rna
// (emu::mmaTf32m16n8k8, emu::tf32Rna), so tgrt-cuda-emu-check runs these kernels too.
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/AttentionMask.cuh"
#include "runtime/cuda/AttentionSteps.cuh"

#include <cmath>
#include <cstring>
#include <initializer_list>

namespace tgrt_cuda {
namespace {
using namespace attn;

constexpr int kThreads = 128; // 4 warps
constexpr int kPad = 4;       // floats of padding per shared-memory row
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ------------------------------------------------------------------ primitives --

/// fp32 rounded to TF32 (cvt.rna.tf32.f32: nearest, ties away from zero), as a float whose
/// low 13 mantissa bits are zero.
__device__ __forceinline__ float toTf32(float x) {
#ifdef TGRT_CUDA_EMULATE
  return emu::tf32Rna(x);
#else
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
#endif
}

__device__ __forceinline__ uint32_t bitsOf(float x) {
#ifdef TGRT_CUDA_EMULATE
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#else
  return __float_as_uint(x);
#endif
}

__device__ __forceinline__ float asFloat(uint32_t u) {
#ifdef TGRT_CUDA_EMULATE
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#else
  return __uint_as_float(u);
#endif
}


/// d += a b: one m16n8k8 TF32 tensor-core product with fp32 accumulators. Operands are
/// already TF32-rounded floats.
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
#ifdef TGRT_CUDA_EMULATE
  const uint32_t b[2] = {b0, b1};
  emu::mmaTf32m16n8k8(d, a, b, d);
#else
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// Shared-memory tile [rows][LD] of TF32-rounded floats, LD = HD + kPad.
//
// A operand, rows r0..r0+15, k columns kk*8..kk*8+7 (tile row-major = A row-major).
__device__ __forceinline__ void loadA(uint32_t (&a)[4], const float* tile, int ld, int r0,
                                      int kk, int lane) {
  const int g = lane >> 2, q = lane & 3;
  const float* p = tile + (r0 + g) * ld + kk * 8 + q;
  a[0] = bitsOf(p[0]);
  a[1] = bitsOf(p[8 * ld]);
  a[2] = bitsOf(p[4]);
  a[3] = bitsOf(p[8 * ld + 4]);
}
// B operand of n-tile n0/8 where B = tile^T (B[k][n] = tile[n][k]): tile rows n0..n0+7,
// columns kk*8..kk*8+7.
__device__ __forceinline__ void loadBt(uint32_t& b0, uint32_t& b1, const float* tile, int ld,
                                       int n0, int kk, int lane) {
  const float* p = tile + (n0 + (lane >> 2)) * ld + kk * 8 + (lane & 3);
  b0 = bitsOf(p[0]);
  b1 = bitsOf(p[4]);
}
// B operand of n-tile n0/8 where B = tile (B[k][n] = tile[k][n]) for a k-tile permuted as the
// A fragment made by accToA (column q = row 2q, column q + 4 = row 2q + 1 of the k-tile).
__device__ __forceinline__ void loadBnPerm(uint32_t& b0, uint32_t& b1, const float* tile, int ld,
                                           int n0, int kk, int lane) {
  const float* p = tile + (kk * 8 + 2 * (lane & 3)) * ld + n0 + (lane >> 2);
  b0 = bitsOf(p[0]);
  b1 = bitsOf(p[ld]);
}

/// The A fragment (16 rows x 8 k, k permuted, see the header) made of the C fragment c of
/// one n-tile, rounded to TF32.
__device__ __forceinline__ void accToA(uint32_t (&a)[4], const float (&c)[4]) {
  a[0] = bitsOf(toTf32(c[0]));
  a[1] = bitsOf(toTf32(c[2]));
  a[2] = bitsOf(toTf32(c[1]));
  a[3] = bitsOf(toTf32(c[3]));
}

/// x = hi + lo with hi = TF32(x) and lo = TF32(x - hi) (3xTF32: hi*hi + hi*lo + lo*hi
/// recovers an fp32-accurate product; the dropped lo*lo is ~2^-22 relative).
__device__ __forceinline__ void splitTf32(float x, uint32_t& hi, uint32_t& lo) {
  const float h = toTf32(x);
  hi = bitsOf(h);
  lo = bitsOf(toTf32(x - h));
}
/// loadA of an unrounded tile, split into hi and lo fragments.
__device__ __forceinline__ void loadASplit(uint32_t (&hi)[4], uint32_t (&lo)[4],
                                           const float* tile, int ld, int r0, int kk, int lane) {
  const int g = lane >> 2, q = lane & 3;
  const float* p = tile + (r0 + g) * ld + kk * 8 + q;
  splitTf32(p[0], hi[0], lo[0]);
  splitTf32(p[8 * ld], hi[1], lo[1]);
  splitTf32(p[4], hi[2], lo[2]);
  splitTf32(p[8 * ld + 4], hi[3], lo[3]);
}

/// Copies rows [row0, row0 + R) of an fp32 [t, HD] matrix with row stride `ld` elements (a
/// multiple of 4) into shared memory
/// [R][HD + kPad], rounded to TF32 unless kRound is false, with 16-byte accesses; rows >= t
/// are zero.
template <int R, int HD, bool kRound = true>
__device__ __forceinline__ void loadTile(const float* __restrict__ g, int64_t ld, int64_t row0,
                                         int64_t t, float* s) {
  constexpr int C4 = HD / 4, LD = HD + kPad;
  for (int idx = threadIdx.x; idx < R * C4; idx += kThreads) {
    const int r = idx / C4, c = idx % C4;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row0 + r < t) {
      v = *reinterpret_cast<const float4*>(g + (row0 + r) * ld + 4 * c);
      if (!kRound) {
        *reinterpret_cast<float4*>(s + r * LD + 4 * c) = v;
        continue;
      }
      v.x = toTf32(v.x);
      v.y = toTf32(v.y);
      v.z = toTf32(v.z);
      v.w = toTf32(v.w);
    }
    *reinterpret_cast<float4*>(s + r * LD + 4 * c) = v;
  }
}

/// Stores a warp's 16 x HD fp32 accumulator (rows r0.., n-tiles of 8) into rows of `dst`
/// ([t, HD], row stride `ld` elements) times mul0 (rows r0 + g) / mul1 (rows r0 + g + 8),
/// skipping rows >= t. Writes exactly the HD elements of each row.
template <int HD>
__device__ __forceinline__ void storeRows(float* dst, int64_t ld, int64_t r0, int64_t t,
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
      *reinterpret_cast<float2*>(dst + r * ld + n * 8 + 2 * q) =
          make_float2(acc[n][2 * h] * mul, acc[n][2 * h + 1] * mul);
  }
}

// ---------------------------------------------------------------------- forward --

constexpr int kFwdBR = 64, kFwdBC = 64;

template <int HD>
constexpr size_t fwdSmemBytes() {
  return (size_t)(kFwdBR + 2 * kFwdBC) * (HD + kPad) * 4;
}

// Block = (head h, query tile [q0, q0 + 64)); warp w owns queries q0 + 16 w .. + 15. For each
// visible key tile [k0, k0 + 64): S = Q K^T (in log2 units), online softmax, O += P V.
// Shared memory: Q [64][HD+4], K [64][HD+4], V [64][HD+4] (TF32-rounded fp32). The Q
// fragments stay in registers up to hd 64 (hd 128 reloads them from shared memory: 64 more
// registers would spill).
// SPLIT (the default, Context::tf32_split_scores): S = Q K^T in 3xTF32 (Q and K kept unrounded
// in shared memory and split into hi + lo TF32 parts: Qhi Khi + Qhi Klo + Qlo Khi), so the
// scores, the softmax and lse are fp32-accurate (lse within ~1e-6 instead of ~3e-4) at the cost
// of two more products for S; P V stays single TF32.
template <int HD, bool SPLIT, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_fwd_tf32_kernel(const float* __restrict__ q, const float* __restrict__ k,
                              const float* __restrict__ v, float* __restrict__ out,
                              float* __restrict__ lse, int64_t t, Layout li, Layout lk, Layout lo,
                              int causal, int64_t window, float scaleLog2) {
  constexpr int BR = kFwdBR, BC = kFwdBC, LD = HD + kPad;
  constexpr int KT = HD / 8, NS = BC / 8, NO = HD / 8;
  constexpr bool kQInRegs = HD <= 64;
  constexpr int QF = kQInRegs ? KT : 1;
  TGRT_DYNAMIC_SMEM(smemF);
  float* Qs = smemF;
  float* Ks = Qs + BR * LD;
  float* Vs = Ks + BC * LD;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t q0 = (nqb - 1 - (int64_t)(blockIdx.x % nqb)) * BR; // longest tiles first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;

  loadTile<BR, HD, !SPLIT>(q + base, li.st, q0, t, Qs);
  __syncthreads();
  uint32_t qf[QF][4], qlo[SPLIT ? QF : 1][4];
  if constexpr (kQInRegs) {
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      if constexpr (SPLIT) loadASplit(qf[kk], qlo[kk], Qs, LD, warp * 16, kk, lane);
      else loadA(qf[kk], Qs, LD, warp * 16, kk, lane);
    }
  }

  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int64_t row0 = q0 + warp * 16 + g; // this lane's rows: row0, row0 + 8

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    __syncthreads(); // the previous K, V are no longer read
    loadTile<BC, HD, !SPLIT>(k + kbase, kst, k0, t, Ks);
    loadTile<BC, HD>(v + kbase, kst, k0, t, Vs);
    __syncthreads();

    float s[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      uint32_t qa[4], ql[4];
      if constexpr (kQInRegs) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          qa[e] = qf[kk][e];
          if constexpr (SPLIT) ql[e] = qlo[kk][e];
        }
      } else {
        if constexpr (SPLIT) loadASplit(qa, ql, Qs, LD, warp * 16, kk, lane);
        else loadA(qa, Qs, LD, warp * 16, kk, lane);
      }
#pragma unroll
      for (int j = 0; j < NS; ++j) {
        uint32_t b0, b1;
        loadBt(b0, b1, Ks, LD, j * 8, kk, lane);
        if constexpr (SPLIT) {
          uint32_t h0, l0, h1, l1;
          splitTf32(asFloat(b0), h0, l0);
          splitTf32(asFloat(b1), h1, l1);
          mma(s[j], qa, l0, l1); // small terms first
          mma(s[j], ql, h0, h1);
          mma(s[j], qa, h0, h1);
        } else {
          mma(s[j], qa, b0, b1);
        }
      }
    }

    onlineSoftmax(s, o, m, l, tileFull(q0, BR, k0, BC, t, causal, window), row0, k0, tq, t,
                  causal, window, scaleLog2);

#pragma unroll
    for (int kk = 0; kk < NS; ++kk) {
      uint32_t a[4];
      accToA(a, s[kk]);
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        uint32_t b0, b1;
        loadBnPerm(b0, b1, Vs, LD, n * 8, kk, lane);
        mma(o[n], a, b0, b1);
      }
    }
  }

  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float ls = quadSum(l[r]);
    inv[r] = ls > 0.0f ? 1.0f / ls : 0.0f;
    const int64_t row = row0 + 8 * r;
    if (tq == 0 && row < t) lse[h * t + row] = ls > 0.0f ? (m[r] + log2f(ls)) * kLn2 : -INFINITY;
  }
  storeRows<HD>(out + obase, lo.st, q0 + warp * 16, t, o, inv[0], inv[1], lane);
}

// --------------------------------------------------------------------- backward --

// D[r] = sum_d dout[r, d] * out[r, d] (fp32), one warp per row r = bh * t + i of the
// [bh, t, hd] rows of out / dout (layout lo).
__global__ void attention_bwd_d_tf32_kernel(const float* __restrict__ out,
                                            const float* __restrict__ dout, float* __restrict__ D,
                                            int64_t rows, int64_t t, int64_t hd, Layout lo) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const int64_t off = lo.base(r / t) + (r % t) * lo.st;
    float s = 0.0f;
    for (int64_t c = lane; c < hd; c += 32)
      s += dout[off + c] * out[off + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) D[r] = s;
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
  return (size_t)(2 * kKvBK + 2 * kvQueryTile<HD>()) * (HD + kPad) * 4 +
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
// Shared memory: K, V [64][HD+4]; Q, dO [BQ][HD+4]; L, D [BQ].
// GQA (hd 64) asks for 3 blocks per SM as plain attention gets (168 registers; ptxas would
// take 254 for the group loop, 2 blocks); 0 is no bound (plain attention's code unchanged).
template <int HD, bool GQA>
__global__ void __launch_bounds__(kThreads, GQA && HD == 64 ? 3 : 0)
    attention_bwd_dkdv_tf32_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                   const float* __restrict__ v, const float* __restrict__ dout,
                                   const float* __restrict__ lse, const float* __restrict__ D,
                                   float* __restrict__ dk, float* __restrict__ dv, int64_t t,
                                   Layout li, Layout lk, Layout lo, int causal, int64_t window,
                                   float scale, float scaleLog2) {
  constexpr int BK = kKvBK, BQ = kvQueryTile<HD>(), LD = HD + kPad;
  constexpr int KT = HD / 8, NQ = BQ / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  float* Ks = smemF;
  float* Vs = Ks + BK * LD;
  float* Qs = Vs + BK * LD;
  float* dOs = Qs + BQ * LD;
  float* LS = dOs + BQ * LD;
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

  loadTile<BK, HD>(k + kbase, kst, k0, t, Ks);
  loadTile<BK, HD>(v + kbase, kst, k0, t, Vs);

  float dK[NO][4], dV[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dK[n][e] = dV[n][e] = 0.0f;

  int64_t qbLo, qbHi;
  queryTiles(k0, BQ, BK, t, causal, window, qbLo, qbHi);
  // The group's query heads h0 .. h0 + group - 1 in order (one head without GQA), each over
  // its query tiles: dK and dV sum them all. The heads of a group are consecutive heads of one
  // sequence: head h0 + gi's rows start gi * sh after head h0's.
  const int64_t group = GQA ? lk.group : 1;
  for (int64_t gi = 0; gi < group; ++gi) {
    const int64_t h = h0 + gi, base = base0 + gi * li.sh, obase = obase0 + gi * lo.sh;
    for (int64_t qb = qbLo; qb <= qbHi; ++qb) {
      const int64_t q0 = qb * BQ;
      __syncthreads();
      loadTile<BQ, HD>(q + base, li.st, q0, t, Qs);
      loadTile<BQ, HD>(dout + obase, lo.st, q0, t, dOs);
      loadRowStats<BQ>(lse + h * t, D + h * t, q0, t, LS, DS);
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
        for (int j = 0; j < NQ; ++j) {
          uint32_t b0, b1;
          loadBt(b0, b1, Qs, LD, j * 8, kk, lane);
          mma(s[j], ka, b0, b1);
          loadBt(b0, b1, dOs, LD, j * 8, kk, lane);
          mma(dp[j], va, b0, b1);
        }
      }

      // Query tiles are no wider than key tiles here, so "full" uses the tile's extremes.
      dsTransposed(s, dp, LS, DS, tileFull(q0, BQ, k0, BK, t, causal, window), q0, key0, tq, t,
                   causal, window, scaleLog2);

#pragma unroll
      for (int kk = 0; kk < NQ; ++kk) {
        uint32_t pa[4], dsa[4];
        accToA(pa, s[kk]);
        accToA(dsa, dp[kk]);
#pragma unroll
        for (int n = 0; n < NO; ++n) {
          uint32_t b0, b1;
          loadBnPerm(b0, b1, dOs, LD, n * 8, kk, lane);
          mma(dV[n], pa, b0, b1);
          loadBnPerm(b0, b1, Qs, LD, n * 8, kk, lane);
          mma(dK[n], dsa, b0, b1);
        }
      }
    }
  }

  storeRows<HD>(dk + kbase, kst, k0 + warp * 16, t, dK, scale, scale, lane);
  storeRows<HD>(dv + kbase, kst, k0 + warp * 16, t, dV, 1.0f, 1.0f, lane);
}

constexpr int kDqBR = 64, kDqBC = 64;

template <int HD>
constexpr size_t dqSmemBytes() {
  return (size_t)(2 * kDqBR + 2 * kDqBC) * (HD + kPad) * 4;
}

// dQ for the query tile [q0, q0 + 64) of head h; warp w owns queries q0 + 16 w .. + 15. For
// each visible key tile: S = Q K^T, dP = dO V^T, P = 2^(scale log2e S - L), dS = P (dP - D),
// dQ += dS K;  finally dQ *= scale.
// Shared memory: Q, dO [64][HD+4]; K, V [64][HD+4].
template <int HD, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_dq_tf32_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                 const float* __restrict__ v, const float* __restrict__ dout,
                                 const float* __restrict__ lse, const float* __restrict__ D,
                                 float* __restrict__ dq, int64_t t, Layout li, Layout lk,
                                 Layout lo, int causal, int64_t window, float scale,
                                 float scaleLog2) {
  constexpr int BR = kDqBR, BC = kDqBC, LD = HD + kPad;
  constexpr int KT = HD / 8, NS = BC / 8, NO = HD / 8;
  TGRT_DYNAMIC_SMEM(smemF);
  float* Qs = smemF;
  float* dOs = Qs + BR * LD;
  float* Ks = dOs + BR * LD;
  float* Vs = Ks + BC * LD;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t q0 = (nqb - 1 - (int64_t)(blockIdx.x % nqb)) * BR;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;
  const int64_t row0 = q0 + warp * 16 + g; // this lane's rows: row0, row0 + 8

  loadTile<BR, HD>(q + base, li.st, q0, t, Qs);
  loadTile<BR, HD>(dout + obase, lo.st, q0, t, dOs);
  float L[2], Dr[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + 8 * r;
    const float x = row < t ? lse[h * t + row] : -INFINITY;
    L[r] = x == -INFINITY ? INFINITY : x * kLog2e;
    Dr[r] = row < t ? D[h * t + row] : 0.0f;
  }

  float dQ[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) dQ[n][0] = dQ[n][1] = dQ[n][2] = dQ[n][3] = 0.0f;

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    __syncthreads();
    loadTile<BC, HD>(k + kbase, kst, k0, t, Ks);
    loadTile<BC, HD>(v + kbase, kst, k0, t, Vs);
    __syncthreads();

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
      for (int j = 0; j < NS; ++j) {
        uint32_t b0, b1;
        loadBt(b0, b1, Ks, LD, j * 8, kk, lane);
        mma(s[j], qa, b0, b1);
        loadBt(b0, b1, Vs, LD, j * 8, kk, lane);
        mma(dp[j], da, b0, b1);
      }
    }

    dsRows(s, dp, L, Dr, tileFull(q0, BR, k0, BC, t, causal, window), row0, k0, tq, t, causal,
           window, scaleLog2);

#pragma unroll
    for (int kk = 0; kk < NS; ++kk) {
      uint32_t a[4];
      accToA(a, dp[kk]);
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        uint32_t b0, b1;
        loadBnPerm(b0, b1, Ks, LD, n * 8, kk, lane);
        mma(dQ[n], a, b0, b1);
      }
    }
  }

  storeRows<HD>(dq + base, li.st, q0 + warp * 16, t, dQ, scale, scale, lane);
}

// ------------------------------------------------------------------ host side --

template <typename Kernel>
void allowSmemTf32(const char* loc, Kernel* kernel, size_t bytes, bool& done) {
  if (done) return;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes), loc,
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  done = true;
}

unsigned blocksFor(const char* loc, int64_t bh, int64_t t, int tile) {
  const int64_t blocks = bh * ((t + tile - 1) / tile);
  if (blocks > 0x7fffffff) fail(loc, "attention tf32: bh * t too large");
  return (unsigned)blocks;
}

template <int HD, bool SPLIT, bool GQA>
void fwdHD(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
           float* out, float* lse, int64_t bh, int64_t t, const Layout& li, const Layout& lk,
           const Layout& lo, int causal, int64_t window, float scale) {
  constexpr size_t smem = fwdSmemBytes<HD>();
  static bool smemSet = false;
  auto* kernel = attention_fwd_tf32_kernel<HD, SPLIT, GQA>;
  allowSmemTf32(loc, kernel, smem, smemSet);
  launch(ctx, loc, "attention_fwd_tf32_kernel", kernel, dim3(blocksFor(loc, bh, t, kFwdBR)),
         dim3(kThreads), smem, q, k, v, out, lse, t, li, lk, lo, causal, window, scale * kLog2e);
}

template <int HD, bool GQA>
void fwdHD(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
           float* out, float* lse, int64_t bh, int64_t t, const Layout& li, const Layout& lk,
           const Layout& lo, int causal, int64_t window, float scale) {
  if (ctx->tf32_split_scores)
    fwdHD<HD, true, GQA>(ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window, scale);
  else
    fwdHD<HD, false, GQA>(ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window, scale);
}

template <int HD, bool GQA>
void bwdHD(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
           const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv,
           int64_t bh, int64_t t, const Layout& li, const Layout& lk, const Layout& lo,
           int causal, int64_t window, float scale) {
  checkWorkspace(ctx, loc, "attention_bwd (D = rowsum(dout * out))",
                 bh * t * (int64_t)sizeof(float));
  float* D = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  launch(ctx, loc, "attention_bwd_d_tf32_kernel", attention_bwd_d_tf32_kernel,
         dim3(gridFor(bh * t, 8)), dim3(256), 0, out, dout, D, bh * t, t, (int64_t)HD, lo);
  {
    constexpr size_t smem = dkdvSmemBytes<HD>();
    static bool smemSet = false;
    auto* kernel = attention_bwd_dkdv_tf32_kernel<HD, GQA>;
    allowSmemTf32(loc, kernel, smem, smemSet);
    // One block per (kv problem, key tile): bh / group kv problems.
    launch(ctx, loc, "attention_bwd_dkdv_tf32_kernel", kernel,
           dim3(blocksFor(loc, bh / lk.group, t, kKvBK)), dim3(kThreads), smem, q, k, v, dout,
           lse, (const float*)D, dk, dv, t, li, lk, lo, causal, window, scale, scale * kLog2e);
  }
  {
    constexpr size_t smem = dqSmemBytes<HD>();
    static bool smemSet = false;
    auto* kernel = attention_bwd_dq_tf32_kernel<HD, GQA>;
    allowSmemTf32(loc, kernel, smem, smemSet);
    launch(ctx, loc, "attention_bwd_dq_tf32_kernel", kernel, dim3(blocksFor(loc, bh, t, kDqBR)),
           dim3(kThreads), smem, q, k, v, dout, lse, (const float*)D, dq, t, li, lk, lo, causal,
           window, scale, scale * kLog2e);
  }
}

/// The TF32 forward of tgrt_attention_gqa_fwd (gqa) or tgrt_attention_fwd (its messages).
void fwdTf32(Context* ctx, const char* loc, bool gqa, const float* q, const float* k,
             const float* v, float* out, float* lse, int64_t batch, int64_t heads,
             int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h,
             int64_t in_stride_t, int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
             int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
             int64_t window, float scale) {
  checkCtx(ctx, loc);
  const Layouts ls = checkedLayouts(loc, /*forward=*/true, gqa, batch, heads, kv_heads, t, hd,
                                    in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                                    kv_stride_h, kv_stride_t, out_stride_b, out_stride_h,
                                    out_stride_t);
  const int64_t bh = batch * heads;
  if (bh * t == 0) return;
  const Layout &li = ls.in, &lk = ls.kv, &lo = ls.out;
  const char* what = gqa ? "attention_gqa_fwd (tf32)" : "attention_fwd (tf32)";
  checkAlignedTensors16(loc, what, {q, k, v, out});
  checkRowStrides16(loc, what, li, lk, lo, 4);
  if (!withHdGqa(hd, li, lk, [&](auto hdC, auto gqaC) {
        fwdHD<decltype(hdC)::value, decltype(gqaC)::value>(ctx, loc, q, k, v, out, lse, bh, t, li,
                                                           lk, lo, causal, window, scale);
      }))
    fail(loc, "%s: head dim %lld is not supported on CUDA (32, 64 or 128)",
         gqa ? "attention_gqa_fwd" : "attention_fwd", (long long)hd);
}

/// The TF32 backward, as fwdTf32.
void bwdTf32(Context* ctx, const char* loc, bool gqa, const float* q, const float* k,
             const float* v, const float* out, const float* lse, const float* dout, float* dq,
             float* dk, float* dv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
             int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
             int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
             int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
             float scale) {
  checkCtx(ctx, loc);
  const Layouts ls = checkedLayouts(loc, /*forward=*/false, gqa, batch, heads, kv_heads, t, hd,
                                    in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                                    kv_stride_h, kv_stride_t, out_stride_b, out_stride_h,
                                    out_stride_t);
  const int64_t bh = batch * heads;
  if (bh * t * hd == 0) return;
  const Layout &li = ls.in, &lk = ls.kv, &lo = ls.out;
  const char* what = gqa ? "attention_gqa_bwd (tf32)" : "attention_bwd (tf32)";
  checkAlignedTensors16(loc, what, {q, k, v, dout, dq, dk, dv});
  checkRowStrides16(loc, what, li, lk, lo, 4);
  if (!withHdGqa(hd, li, lk, [&](auto hdC, auto gqaC) {
        bwdHD<decltype(hdC)::value, decltype(gqaC)::value>(ctx, loc, q, k, v, out, lse, dout, dq,
                                                           dk, dv, bh, t, li, lk, lo, causal,
                                                           window, scale);
      }))
    fail(loc, "%s: head dim %lld is not supported on CUDA (32, 64 or 128)",
         gqa ? "attention_gqa_bwd" : "attention_bwd", (long long)hd);
}

} // namespace

void attentionFwdTf32(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                      float* out, float* lse, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                      int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                      int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                      int32_t causal, int64_t window, float scale) {
  fwdTf32(ctx, loc, false, q, k, v, out, lse, batch, heads, heads, t, hd, in_stride_b,
          in_stride_h, in_stride_t, in_stride_b, in_stride_h, in_stride_t, out_stride_b,
          out_stride_h, out_stride_t, causal, window, scale);
}

void attentionBwdTf32(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                      const float* out, const float* lse, const float* dout, float* dq, float* dk,
                      float* dv, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                      int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                      int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                      int32_t causal, int64_t window, float scale) {
  bwdTf32(ctx, loc, false, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, heads, t, hd,
          in_stride_b, in_stride_h, in_stride_t, in_stride_b, in_stride_h, in_stride_t,
          out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void attentionGqaFwdTf32(Context* ctx, const char* loc, const float* q, const float* k,
                         const float* v, float* out, float* lse, int64_t batch, int64_t heads,
                         int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                         int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                         int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                         int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                         int64_t window, float scale) {
  fwdTf32(ctx, loc, true, q, k, v, out, lse, batch, heads, kv_heads, t, hd, in_stride_b,
          in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b,
          out_stride_h, out_stride_t, causal, window, scale);
}

void attentionGqaBwdTf32(Context* ctx, const char* loc, const float* q, const float* k,
                         const float* v, const float* out, const float* lse, const float* dout,
                         float* dq, float* dk, float* dv, int64_t batch, int64_t heads,
                         int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                         int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                         int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                         int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                         int64_t window, float scale) {
  bwdTf32(ctx, loc, true, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, kv_heads, t, hd,
          in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t,
          out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void setAttentionTf32Split(Context* ctx, bool split) {
  checkCtx(ctx, "set_attention_tf32_split");
  ctx->tf32_split_scores = split;
}

} // namespace tgrt_cuda
