// Attention.cu — fused causal / sliding-window attention, forward and backward, fp32.
//
// FlashAttention-2 style (Dao 2023): a block owns a tile of query rows (forward, dq) or of key
// rows (dk, dv), streams the other side's tiles through shared memory, and never forms the
// t x t score matrix. The forward keeps the softmax online (running max m and sum l per row)
// and saves lse = m + log(l); the backward recomputes P = exp(s - lse).
//
// Sliding window w (causal only): query i sees keys j with i - w < j <= i. A query tile
// [q0, q0+BR) therefore needs only key tiles that meet [q0 - w + 1, q0 + BR - 1]; the others
// are never loaded, so the work is ~ t * (w + BR) instead of ~ t^2 / 2.
//
// Determinism without float atomics: the backward runs three kernels,
//   1. D_i  = sum_d dout[i,d] * out[i,d]                              (one warp per row)
//   2. per key tile:   dv_j = sum_i P_ij dout_i,  dk_j = scale sum_i dS_ij q_i
//   3. per query tile: dq_i = scale sum_j dS_ij k_j
// with dS_ij = P_ij (dout_i . v_j - D_i). Kernels 2 and 3 both recompute S and dP; each
// output element is summed by one thread in a fixed order.
//
// Grouped-query attention (tgrt_attention_gqa_fwd / _bwd; Ainslie et al. 2023): k and v have
// kv_heads heads in their own layout (Layout::group = heads / kv_heads) and query problem h
// reads kv head h / group in place. The forward and dq kernels only take k, v rows from there.
// The dk / dv kernel has one block per (kv problem, key tile) and loops over the group's query
// heads in order, each over its query tiles, accumulating dK, dV in registers: the sums over
// the group need neither atomics nor workspace. kv_heads = heads (group 1) is plain attention:
// the same kernels compute exactly what they computed before GQA existed.
//
// bf16 / f16: gqaFwd / gqaBwd below are the one place that picks the implementation: the
// tensor-core kernels of AttentionBf16.cu, or cuDNN's fused SDPA (CudnnAttention.cu) when the
// context's AttentionImpl asks for it (TGRT_ATTN=cudnn) and cuDNN takes the call.
//
// Arithmetic: plain FMA on fp32 (no tensor cores). With TGRT_TF32=1 (Context::tf32) the entry
// points below hand over to AttentionTf32.cu (TF32 tensor cores) instead. Each block has 256 threads as a 16 x 16
// grid (ty, tx); a tile product C[rows x cols] += A^T B over a shared-memory reduction index is
// an outer-product loop in which thread (ty, tx) owns RM rows x RN cols of C. Operands sit in
// shared memory "reduction-major" (index [kk][row] / [kk][col]) so each step loads one float4
// of A (broadcast) and RN/4 float4s of B (consecutive across tx, conflict-free).
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/AttentionMask.cuh"

#include <cmath>
#include <initializer_list>
#include <type_traits>

namespace tgrt_cuda {
namespace {
using namespace attn;

constexpr int kThreads = 256; // 16 x 16

// Row (or column) owned by thread coordinate t (ty or tx, 0..15) at fragment slot i, for a
// fragment of R slots: R >= 4 takes groups of 4 consecutive indices 64 apart (float4 loads),
// R = 2 two consecutive indices, R = 1 one. The tile extent is 16 * R.
template <int R>
__device__ __forceinline__ int fragIndex(int t, int i) {
  if constexpr (R >= 4) return (i / 4) * 64 + 4 * t + (i % 4);
  else return R * t + i;
}

/// v[i] = row[fragIndex<R>(t, i)] (vector loads; row 16-byte aligned).
template <int R>
__device__ __forceinline__ void loadFrag(const float* row, int t, float (&v)[R]) {
  if constexpr (R >= 4) {
#pragma unroll
    for (int g = 0; g < R / 4; ++g) {
      const float4 x = *reinterpret_cast<const float4*>(row + g * 64 + 4 * t);
      v[4 * g + 0] = x.x;
      v[4 * g + 1] = x.y;
      v[4 * g + 2] = x.z;
      v[4 * g + 3] = x.w;
    }
  } else if constexpr (R == 2) {
    const float2 x = *reinterpret_cast<const float2*>(row + 2 * t);
    v[0] = x.x;
    v[1] = x.y;
  } else {
    v[0] = row[t];
  }
}

/// row[fragIndex<R>(t, i)] = v[i] (vector stores; row 16-byte aligned).
template <int R>
__device__ __forceinline__ void storeFrag(float* row, int t, const float (&v)[R]) {
  if constexpr (R >= 4) {
#pragma unroll
    for (int g = 0; g < R / 4; ++g)
      *reinterpret_cast<float4*>(row + g * 64 + 4 * t) =
          make_float4(v[4 * g], v[4 * g + 1], v[4 * g + 2], v[4 * g + 3]);
  } else if constexpr (R == 2) {
    *reinterpret_cast<float2*>(row + 2 * t) = make_float2(v[0], v[1]);
  } else {
    row[t] = v[0];
  }
}

// Tile product on shared memory, reduction-major operands:
//   acc[i][j] += sum_{kk < K} A[kk * lda + fragIndex<RM>(ty, i)] * B[kk * ldb + fragIndex<RN>(tx, j)]
template <int RM, int RN, int K>
__device__ __forceinline__ void tileProduct(const float* A, int lda, const float* B, int ldb,
                                            int ty, int tx, float (&acc)[RM][RN]) {
#pragma unroll 4
  for (int kk = 0; kk < K; ++kk) {
    float a[RM], b[RN];
    loadFrag<RM>(A + kk * lda, ty, a);
    loadFrag<RN>(B + kk * ldb, tx, b);
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < RN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

/// Stores a thread's RM x RN fragment (rows by ty, cols by tx) as dst[row * ld + col].
template <int RM, int RN>
__device__ __forceinline__ void storeTile(float* dst, int ld, int ty, int tx,
                                          const float (&v)[RM][RN]) {
#pragma unroll
  for (int i = 0; i < RM; ++i) storeFrag<RN>(dst + fragIndex<RM>(ty, i) * ld, tx, v[i]);
}

/// Stores the fragment transposed: dst[col * ld + row].
template <int RM, int RN>
__device__ __forceinline__ void storeTileT(float* dst, int ld, int ty, int tx,
                                           const float (&v)[RM][RN]) {
#pragma unroll
  for (int j = 0; j < RN; ++j) {
    float col[RM];
#pragma unroll
    for (int i = 0; i < RM; ++i) col[i] = v[i][j];
    storeFrag<RM>(dst + fragIndex<RN>(tx, j) * ld, ty, col);
  }
}

/// Copies rows [row0, row0 + R) of a [t, HD] matrix with row stride `ld` elements (a multiple
/// of 4) into shared memory, as `nat`
/// [R][HD + 4] and/or transposed as `tr` [HD][R + 4] (either may be NULL). Rows >= t are
/// zero. Consecutive threads take consecutive rows so the transposed stores hit distinct banks.
template <int R, int HD>
__device__ __forceinline__ void loadTile(const float* __restrict__ g, int64_t ld, int64_t row0,
                                         int64_t t, float* nat, float* tr) {
  constexpr int C4 = HD / 4;
  for (int idx = threadIdx.x; idx < R * C4; idx += kThreads) {
    const int r = idx % R, c4 = idx / R;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row0 + r < t)
      v = *reinterpret_cast<const float4*>(g + (row0 + r) * ld + 4 * c4);
    if (nat) *reinterpret_cast<float4*>(nat + r * (HD + 4) + 4 * c4) = v;
    if (tr) {
      tr[(4 * c4 + 0) * (R + 4) + r] = v.x;
      tr[(4 * c4 + 1) * (R + 4) + r] = v.y;
      tr[(4 * c4 + 2) * (R + 4) + r] = v.z;
      tr[(4 * c4 + 3) * (R + 4) + r] = v.w;
    }
  }
}

/// Loads lse and D for rows [row0, row0 + R) (rows >= t get lse = -inf, D = 0).
template <int R>
__device__ __forceinline__ void loadRowStats(const float* lse, const float* D, int64_t row0,
                                             int64_t t, float* lseS, float* dS) {
  for (int r = threadIdx.x; r < R; r += kThreads) {
    const bool in = row0 + r < t;
    lseS[r] = in ? lse[row0 + r] : -INFINITY;
    dS[r] = in ? D[row0 + r] : 0.0f;
  }
}

/// Is key j visible to query i (both < t)? Causal: j <= i and, with a window, i - j < window.
__device__ __forceinline__ bool visible(int64_t i, int64_t j, int64_t t, int causal,
                                        int64_t window) {
  if (i >= t || j >= t) return false;
  if (!causal) return true;
  return j <= i && (window <= 0 || i - j < window);
}

/// Max over the 16 threads of a half-warp that share ty (lanes differ in tx = lane & 15).
__device__ __forceinline__ float rowMax16(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float rowSum16(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---------------------------------------------------------------------- forward --

template <int HD, int BR, int BC>
constexpr size_t fwdSmemFloats() {
  return (size_t)HD * (BR + 4) + (size_t)HD * (BC + 4) + (size_t)BC * (HD + 4) +
         (size_t)BC * (BR + 4);
}

// Flash attention forward. Block = (head h, query tile [q0, q0 + BR)); for each visible key
// tile [k0, k0 + BC):
//   S = scale * Q K^T (masked entries -inf);  m' = max(m, rowmax S);
//   P = exp(S - m');  l = l * exp(m - m') + rowsum P;  O = O * exp(m - m') + P V;  m = m'.
// Finally out = O / l and lse = m + log l (a row with no visible key: out 0, lse -inf).
// Shared memory: Qt [HD][BR+4], Kt [HD][BC+4], V [BC][HD+4], Pt [BC][BR+4].
template <int HD, int BR, int BC, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_fwd_kernel(const float* __restrict__ q, const float* __restrict__ k,
                         const float* __restrict__ v, float* __restrict__ out,
                         float* __restrict__ lse, int64_t t, Layout li, Layout lk, Layout lo,
                         int causal, int64_t window, float scale) {
  constexpr int RM = BR / 16, RNS = BC / 16, RNO = HD / 16;
  constexpr int LQ = BR + 4, LK = BC + 4, LV = HD + 4;
  TGRT_DYNAMIC_SMEM(smem);
  float* Qt = smem;
  float* Kt = Qt + HD * LQ;
  float* Vs = Kt + HD * LK;
  float* Pt = Vs + BC * LV;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t qb = nqb - 1 - (int64_t)(blockIdx.x % nqb); // longest tiles first
  const int64_t q0 = qb * BR;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;

  loadTile<BR, HD>(q + base, li.st, q0, t, nullptr, Qt);

  float o[RM][RNO];
  float m[RM], l[RM];
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < RNO; ++j) o[i][j] = 0.0f;
  }

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    __syncthreads(); // the previous tile's Kt, V and Pt are no longer read
    loadTile<BC, HD>(k + kbase, kst, k0, t, nullptr, Kt);
    loadTile<BC, HD>(v + kbase, kst, k0, t, Vs, nullptr);
    __syncthreads();

    float s[RM][RNS];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < RNS; ++j) s[i][j] = 0.0f;
    tileProduct<RM, RNS, HD>(Qt, LQ, Kt, LK, ty, tx, s);

#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const int64_t qi = q0 + fragIndex<RM>(ty, i);
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < RNS; ++j) {
        const int64_t kj = k0 + fragIndex<RNS>(tx, j);
        s[i][j] = visible(qi, kj, t, causal, window) ? s[i][j] * scale : -INFINITY;
        mx = fmaxf(mx, s[i][j]);
      }
      const float mNew = fmaxf(m[i], rowMax16(mx));
      const float mUse = mNew == -INFINITY ? 0.0f : mNew; // nothing visible yet: p = 0
      const float corr = expf(m[i] - mUse);
      l[i] *= corr;
#pragma unroll
      for (int j = 0; j < RNO; ++j) o[i][j] *= corr;
#pragma unroll
      for (int j = 0; j < RNS; ++j) {
        s[i][j] = expf(s[i][j] - mUse);
        l[i] += s[i][j]; // this thread's share; the 16 shares are added at the end
      }
      m[i] = mNew;
    }
    storeTileT<RM, RNS>(Pt, LQ, ty, tx, s);
    __syncthreads();
    tileProduct<RM, RNO, BC>(Pt, LQ, Vs, LV, ty, tx, o);
  }

  float lsum[RM];
#pragma unroll
  for (int i = 0; i < RM; ++i) lsum[i] = rowSum16(l[i]); // every lane shuffles, then diverges
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int64_t qi = q0 + fragIndex<RM>(ty, i);
    if (qi >= t) continue;
    const float inv = lsum[i] > 0.0f ? 1.0f / lsum[i] : 0.0f;
    float row[RNO];
#pragma unroll
    for (int j = 0; j < RNO; ++j) row[j] = o[i][j] * inv;
    storeFrag<RNO>(out + obase + qi * lo.st, tx, row);
    if (tx == 0) lse[h * t + qi] = lsum[i] > 0.0f ? m[i] + logf(lsum[i]) : -INFINITY;
  }
}

// --------------------------------------------------------------------- backward --

// D[r] = sum_d dout[r, d] * out[r, d], one warp per row r = bh * t + i of the [bh, t, hd]
// rows of out / dout (layout lo).
__global__ void attention_bwd_d_kernel(const float* __restrict__ out,
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

/// P and dS of one (query tile, key tile) pair from S = Q K^T and dP = dO V^T in registers:
///   P = exp(scale S - lse) on visible entries (0 elsewhere),  dS = P (dP - D).
/// s becomes P and dp becomes dS.
template <int RM, int RN>
__device__ __forceinline__ void probsAndGrads(float (&s)[RM][RN], float (&dp)[RM][RN],
                                              const float* lseS, const float* dS, int64_t q0,
                                              int64_t k0, int64_t t, int causal, int64_t window,
                                              float scale, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int r = fragIndex<RM>(ty, i);
    const float L = lseS[r], Dr = dS[r];
#pragma unroll
    for (int j = 0; j < RN; ++j) {
      const int64_t kj = k0 + fragIndex<RN>(tx, j);
      const bool vis = L != -INFINITY && visible(q0 + r, kj, t, causal, window);
      const float p = vis ? expf(s[i][j] * scale - L) : 0.0f;
      s[i][j] = p;
      dp[i][j] = p * (dp[i][j] - Dr);
    }
  }
}

template <int HD, int BR, int BC>
constexpr size_t dkdvSmemFloats() {
  return 2 * (size_t)HD * (BC + 4) + 2 * (size_t)HD * (BR + 4) + 2 * (size_t)BR * (HD + 4) +
         2 * (size_t)BR * (BC + 4) + 2 * (size_t)BR;
}

// dK, dV for one key tile [k0, k0 + BC) of head h, over every query tile that sees it:
//   S = Q K^T, dP = dO V^T, P = exp(scale S - lse), dS = P (dP - D),
//   dV += P^T dO,  dK += dS^T Q;  finally dK *= scale.
// Shared memory: Kt, Vt [HD][BC+4]; Qt, dOt [HD][BR+4]; Q, dO [BR][HD+4]; P, dS [BR][BC+4];
// lse, D [BR].
template <int HD, int BR, int BC, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_dkdv_kernel(const float* __restrict__ q, const float* __restrict__ k,
                              const float* __restrict__ v, const float* __restrict__ dout,
                              const float* __restrict__ lse, const float* __restrict__ D,
                              float* __restrict__ dk, float* __restrict__ dv, int64_t t, Layout li,
                              Layout lk, Layout lo, int causal, int64_t window, float scale) {
  constexpr int RMS = BR / 16, RNS = BC / 16; // S tile: rows = queries, cols = keys
  constexpr int RMK = BC / 16, RNK = HD / 16; // dK / dV tile: rows = keys, cols = head dim
  constexpr int LK = BC + 4, LQ = BR + 4, LN = HD + 4, LP = BC + 4;
  TGRT_DYNAMIC_SMEM(smem);
  float* Kt = smem;
  float* Vt = Kt + HD * LK;
  float* Qt = Vt + HD * LK;
  float* dOt = Qt + HD * LQ;
  float* Qn = dOt + HD * LQ;
  float* dOn = Qn + BR * LN;
  float* Ps = dOn + BR * LN;
  float* dSs = Ps + BR * LP;
  float* lseS = dSs + BR * LP;
  float* DS = lseS + BR;

  const int64_t nkb = (t + BC - 1) / BC;
  const int64_t hk = blockIdx.x / nkb; // the kv problem (the problem without GQA)
  const int64_t h0 = GQA ? lk.firstQuery(hk) : hk; // its group's first query problem
  const int64_t kb = blockIdx.x % nkb; // causal: low key tiles have the most work, first
  const int64_t k0 = kb * BC;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t base0 = li.base(h0), obase0 = lo.base(h0);
  const int64_t kbase = GQA ? lk.kvBase(h0) : base0, kst = GQA ? lk.st : li.st;

  loadTile<BC, HD>(k + kbase, kst, k0, t, nullptr, Kt);
  loadTile<BC, HD>(v + kbase, kst, k0, t, nullptr, Vt);

  float dK[RMK][RNK], dV[RMK][RNK];
#pragma unroll
  for (int i = 0; i < RMK; ++i)
#pragma unroll
    for (int j = 0; j < RNK; ++j) {
      dK[i][j] = 0.0f;
      dV[i][j] = 0.0f;
    }

  int64_t qbLo, qbHi;
  queryTiles(k0, BR, BC, t, causal, window, qbLo, qbHi);
  // The group's query heads h0 .. h0 + group - 1 in order (one head without GQA), each over
  // its query tiles: dK and dV sum them all. The heads of a group are consecutive heads of one
  // sequence: head h0 + gi's rows start gi * sh after head h0's.
  const int64_t group = GQA ? lk.group : 1;
  for (int64_t gi = 0; gi < group; ++gi) {
    const int64_t h = h0 + gi, base = base0 + gi * li.sh, obase = obase0 + gi * lo.sh;
    for (int64_t qb = qbLo; qb <= qbHi; ++qb) {
      const int64_t q0 = qb * BR;
      __syncthreads(); // the previous tile's Q, dO, P, dS are no longer read
      loadTile<BR, HD>(q + base, li.st, q0, t, Qn, Qt);
      loadTile<BR, HD>(dout + obase, lo.st, q0, t, dOn, dOt);
      loadRowStats<BR>(lse + h * t, D + h * t, q0, t, lseS, DS);
      __syncthreads();

      float s[RMS][RNS], dp[RMS][RNS];
#pragma unroll
      for (int i = 0; i < RMS; ++i)
#pragma unroll
        for (int j = 0; j < RNS; ++j) {
          s[i][j] = 0.0f;
          dp[i][j] = 0.0f;
        }
      tileProduct<RMS, RNS, HD>(Qt, LQ, Kt, LK, ty, tx, s);
      tileProduct<RMS, RNS, HD>(dOt, LQ, Vt, LK, ty, tx, dp);
      probsAndGrads<RMS, RNS>(s, dp, lseS, DS, q0, k0, t, causal, window, scale, ty, tx);
      storeTile<RMS, RNS>(Ps, LP, ty, tx, s);
      storeTile<RMS, RNS>(dSs, LP, ty, tx, dp);
      __syncthreads();
      tileProduct<RMK, RNK, BR>(Ps, LP, dOn, LN, ty, tx, dV);  // dV[c][d] += P[r][c] dO[r][d]
      tileProduct<RMK, RNK, BR>(dSs, LP, Qn, LN, ty, tx, dK); // dK[c][d] += dS[r][c] Q[r][d]
    }
  }

#pragma unroll
  for (int i = 0; i < RMK; ++i) {
    const int64_t kj = k0 + fragIndex<RMK>(ty, i);
    if (kj >= t) continue;
    float row[RNK];
#pragma unroll
    for (int j = 0; j < RNK; ++j) row[j] = dK[i][j] * scale;
    storeFrag<RNK>(dk + kbase + kj * kst, tx, row);
    storeFrag<RNK>(dv + kbase + kj * kst, tx, dV[i]);
  }
}

template <int HD, int BR, int BC>
constexpr size_t dqSmemFloats() {
  return 2 * (size_t)HD * (BR + 4) + 2 * (size_t)HD * (BC + 4) + (size_t)BC * (HD + 4) +
         (size_t)BC * (BR + 4) + 2 * (size_t)BR;
}

// dQ for one query tile [q0, q0 + BR) of head h, over its visible key tiles:
//   S = Q K^T, dP = dO V^T, P = exp(scale S - lse), dS = P (dP - D),  dQ += dS K;
//   finally dQ *= scale.
// Shared memory: Qt, dOt [HD][BR+4]; Kt, Vt [HD][BC+4]; K [BC][HD+4]; dSt [BC][BR+4];
// lse, D [BR].
template <int HD, int BR, int BC, bool GQA>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_dq_kernel(const float* __restrict__ q, const float* __restrict__ k,
                            const float* __restrict__ v, const float* __restrict__ dout,
                            const float* __restrict__ lse, const float* __restrict__ D,
                            float* __restrict__ dq, int64_t t, Layout li, Layout lk, Layout lo,
                            int causal, int64_t window, float scale) {
  constexpr int RMS = BR / 16, RNS = BC / 16, RNQ = HD / 16;
  constexpr int LQ = BR + 4, LK = BC + 4, LN = HD + 4;
  TGRT_DYNAMIC_SMEM(smem);
  float* Qt = smem;
  float* dOt = Qt + HD * LQ;
  float* Kt = dOt + HD * LQ;
  float* Vt = Kt + HD * LK;
  float* Kn = Vt + HD * LK;
  float* dSt = Kn + BC * LN;
  float* lseS = dSt + BC * LQ;
  float* DS = lseS + BR;

  const int64_t nqb = (t + BR - 1) / BR;
  const int64_t h = blockIdx.x / nqb;
  const int64_t qb = nqb - 1 - (int64_t)(blockIdx.x % nqb);
  const int64_t q0 = qb * BR;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t base = li.base(h), obase = lo.base(h);
  const int64_t kbase = GQA ? lk.kvBase(h) : base, kst = GQA ? lk.st : li.st;

  loadTile<BR, HD>(q + base, li.st, q0, t, nullptr, Qt);
  loadTile<BR, HD>(dout + obase, lo.st, q0, t, nullptr, dOt);
  loadRowStats<BR>(lse + h * t, D + h * t, q0, t, lseS, DS);

  float dQ[RMS][RNQ];
#pragma unroll
  for (int i = 0; i < RMS; ++i)
#pragma unroll
    for (int j = 0; j < RNQ; ++j) dQ[i][j] = 0.0f;

  int64_t kbLo, kbHi;
  keyTiles(q0, BR, BC, t, causal, window, kbLo, kbHi);
  for (int64_t kb = kbLo; kb <= kbHi; ++kb) {
    const int64_t k0 = kb * BC;
    __syncthreads();
    loadTile<BC, HD>(k + kbase, kst, k0, t, Kn, Kt);
    loadTile<BC, HD>(v + kbase, kst, k0, t, nullptr, Vt);
    __syncthreads();

    float s[RMS][RNS], dp[RMS][RNS];
#pragma unroll
    for (int i = 0; i < RMS; ++i)
#pragma unroll
      for (int j = 0; j < RNS; ++j) {
        s[i][j] = 0.0f;
        dp[i][j] = 0.0f;
      }
    tileProduct<RMS, RNS, HD>(Qt, LQ, Kt, LK, ty, tx, s);
    tileProduct<RMS, RNS, HD>(dOt, LQ, Vt, LK, ty, tx, dp);
    probsAndGrads<RMS, RNS>(s, dp, lseS, DS, q0, k0, t, causal, window, scale, ty, tx);
    storeTileT<RMS, RNS>(dSt, LQ, ty, tx, dp);
    __syncthreads();
    tileProduct<RMS, RNQ, BC>(dSt, LQ, Kn, LN, ty, tx, dQ); // dQ[r][d] += dS[r][c] K[c][d]
  }

#pragma unroll
  for (int i = 0; i < RMS; ++i) {
    const int64_t qi = q0 + fragIndex<RMS>(ty, i);
    if (qi >= t) continue;
    float row[RNQ];
#pragma unroll
    for (int j = 0; j < RNQ; ++j) row[j] = dQ[i][j] * scale;
    storeFrag<RNQ>(dq + base + qi * li.st, tx, row);
  }
}

// ------------------------------------------------------------------ host side --

/// Raises a kernel's dynamic shared-memory limit once (above 48 KiB needs an opt-in).
template <typename Kernel>
void allowSmem(const char* loc, Kernel* kernel, size_t bytes, bool& done) {
  if (done) return;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes), loc,
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  done = true;
}

constexpr size_t kMaxSmemBytes = 227 * 1024; // Hopper's per-block opt-in limit

/// Tile shapes used unless setAttentionTiles overrides them, chosen by the sweep in
/// bench/cuda/NOTES.md (H100, t 1024, bh 192, causal): forward 128 queries x 64 keys at
/// hd 64 and 128 (12-16% faster than 64 x 64 at full causal), 64 x 64 at hd 32 (same speed);
/// dk/dv 32 x 64 at hd 64 and 128 (128 needs it to fit shared memory), 64 x 64 at hd 32; dq
/// 64 x 64. With a short window a query tile also visits ~(window + BR) keys per row, so the
/// forward keeps 64-row tiles there (window < 512).
AttentionTiles defaultTiles(int64_t hd, int64_t window) {
  AttentionTiles d{64, 64, 64, 64, 64, 64};
  if (hd >= 64) {
    if (window <= 0 || window >= 512) d.fwd_br = 128;
    d.kv_br = 32;
  }
  return d;
}

template <int HD, int BR, int BC, bool GQA>
void launchFwd(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
               float* out, float* lse, int64_t bh, int64_t t, const Layout& li,
               const Layout& lk, const Layout& lo, int causal, int64_t window, float scale) {
  constexpr size_t smem = fwdSmemFloats<HD, BR, BC>() * sizeof(float);
  if constexpr (smem > kMaxSmemBytes) {
    fail(loc, "attention_fwd: tiles %dx%d need %zu bytes of shared memory at hd %d", BR, BC,
         smem, HD);
  } else {
    static bool smemSet = false;
    auto* kernel = attention_fwd_kernel<HD, BR, BC, GQA>;
    allowSmem(loc, kernel, smem, smemSet);
    const int64_t blocks = bh * ((t + BR - 1) / BR);
    if (blocks > 0x7fffffff) fail(loc, "attention_fwd: bh * t too large");
    launch(ctx, loc, "attention_fwd_kernel", kernel, dim3((unsigned)blocks), dim3(kThreads), smem,
           q, k, v, out, lse, t, li, lk, lo, causal, window, scale);
  }
}

template <int HD, int BR, int BC, bool GQA>
void launchDkDv(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                const float* dout, const float* lse, const float* D, float* dk, float* dv,
                int64_t bh, int64_t t, const Layout& li, const Layout& lk, const Layout& lo,
                int causal, int64_t window, float scale) {
  constexpr size_t smem = dkdvSmemFloats<HD, BR, BC>() * sizeof(float);
  if constexpr (smem > kMaxSmemBytes) {
    fail(loc, "attention_bwd: dk/dv tiles %dx%d need %zu bytes of shared memory at hd %d", BR,
         BC, smem, HD);
  } else {
    static bool smemSet = false;
    auto* kernel = attention_bwd_dkdv_kernel<HD, BR, BC, GQA>;
    allowSmem(loc, kernel, smem, smemSet);
    const int64_t blocks = bh / lk.group * ((t + BC - 1) / BC); // kv problems x key tiles
    if (blocks > 0x7fffffff) fail(loc, "attention_bwd: bh * t too large");
    launch(ctx, loc, "attention_bwd_dkdv_kernel", kernel, dim3((unsigned)blocks), dim3(kThreads),
           smem, q, k, v, dout, lse, D, dk, dv, t, li, lk, lo, causal, window, scale);
  }
}

template <int HD, int BR, int BC, bool GQA>
void launchDq(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
              const float* dout, const float* lse, const float* D, float* dq, int64_t bh, int64_t t,
              const Layout& li, const Layout& lk, const Layout& lo, int causal, int64_t window,
              float scale) {
  constexpr size_t smem = dqSmemFloats<HD, BR, BC>() * sizeof(float);
  if constexpr (smem > kMaxSmemBytes) {
    fail(loc, "attention_bwd: dq tiles %dx%d need %zu bytes of shared memory at hd %d", BR, BC,
         smem, HD);
  } else {
    static bool smemSet = false;
    auto* kernel = attention_bwd_dq_kernel<HD, BR, BC, GQA>;
    allowSmem(loc, kernel, smem, smemSet);
    const int64_t blocks = bh * ((t + BR - 1) / BR);
    if (blocks > 0x7fffffff) fail(loc, "attention_bwd: bh * t too large");
    launch(ctx, loc, "attention_bwd_dq_kernel", kernel, dim3((unsigned)blocks), dim3(kThreads),
           smem, q, k, v, dout, lse, D, dq, t, li, lk, lo, causal, window, scale);
  }
}

// The compiled tile shapes (BR query rows x BC key rows); others fail with a message.
//   forward: 64x64, 128x64, 64x32, 128x32
//   dk/dv:   64x64, 32x64, 32x32
//   dq:      64x64, 64x32, 32x64
// Each with GQA false (k, v in q's layout: plain attention) and true (separateKv).
template <int HD, bool GQA>
void attentionFwdHD(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                    float* out, float* lse, int64_t bh, int64_t t, const Layout& li,
                    const Layout& lk, const Layout& lo, int causal, int64_t window, float scale,
                    int br, int bc) {
  if (br == 64 && bc == 64)
    launchFwd<HD, 64, 64, GQA>(ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window,
                               scale);
  else if (br == 128 && bc == 64)
    launchFwd<HD, 128, 64, GQA>(ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window,
                                scale);
  else if (br == 64 && bc == 32)
    launchFwd<HD, 64, 32, GQA>(ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window,
                               scale);
  else if (br == 128 && bc == 32)
    launchFwd<HD, 128, 32, GQA>(ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window,
                                scale);
  else
    fail(loc, "attention_fwd: tile shape %dx%d is not compiled", br, bc);
}

template <int HD, bool GQA>
void attentionBwdHD(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                    const float* out, const float* lse, const float* dout, float* dq, float* dk,
                    float* dv, int64_t bh, int64_t t, const Layout& li, const Layout& lk,
                    const Layout& lo, int causal, int64_t window, float scale,
                    const AttentionTiles& tl) {
  checkWorkspace(ctx, loc, "attention_bwd (D = rowsum(dout * out))",
                 bh * t * (int64_t)sizeof(float));
  float* D = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  launch(ctx, loc, "attention_bwd_d_kernel", attention_bwd_d_kernel, dim3(gridFor(bh * t, 8)),
         dim3(256), 0, out, dout, D, bh * t, t, (int64_t)HD, lo);

  const int kbr = tl.kv_br, kbc = tl.kv_bc;
  if (kbr == 64 && kbc == 64)
    launchDkDv<HD, 64, 64, GQA>(ctx, loc, q, k, v, dout, lse, D, dk, dv, bh, t, li, lk, lo,
                                causal, window, scale);
  else if (kbr == 32 && kbc == 64)
    launchDkDv<HD, 32, 64, GQA>(ctx, loc, q, k, v, dout, lse, D, dk, dv, bh, t, li, lk, lo,
                                causal, window, scale);
  else if (kbr == 32 && kbc == 32)
    launchDkDv<HD, 32, 32, GQA>(ctx, loc, q, k, v, dout, lse, D, dk, dv, bh, t, li, lk, lo,
                                causal, window, scale);
  else
    fail(loc, "attention_bwd: dk/dv tile shape %dx%d is not compiled", kbr, kbc);

  const int qbr = tl.dq_br, qbc = tl.dq_bc;
  if (qbr == 64 && qbc == 64)
    launchDq<HD, 64, 64, GQA>(ctx, loc, q, k, v, dout, lse, D, dq, bh, t, li, lk, lo, causal,
                              window, scale);
  else if (qbr == 64 && qbc == 32)
    launchDq<HD, 64, 32, GQA>(ctx, loc, q, k, v, dout, lse, D, dq, bh, t, li, lk, lo, causal,
                              window, scale);
  else if (qbr == 32 && qbc == 64)
    launchDq<HD, 32, 64, GQA>(ctx, loc, q, k, v, dout, lse, D, dq, bh, t, li, lk, lo, causal,
                              window, scale);
  else
    fail(loc, "attention_bwd: dq tile shape %dx%d is not compiled", qbr, qbc);
}

/// Tile shapes for head dim hd and window: the overrides in `o` where set, else the defaults.
AttentionTiles resolveTiles(const AttentionTiles& o, int64_t hd, int64_t window) {
  AttentionTiles t = defaultTiles(hd, window);
  if (o.fwd_br > 0 && o.fwd_bc > 0) t.fwd_br = o.fwd_br, t.fwd_bc = o.fwd_bc;
  if (o.kv_br > 0 && o.kv_bc > 0) t.kv_br = o.kv_br, t.kv_bc = o.kv_bc;
  if (o.dq_br > 0 && o.dq_bc > 0) t.dq_br = o.dq_br, t.dq_bc = o.dq_bc;
  return t;
}

/// The f32 forward: exact fp32 kernels (TF32 is dispatched by gqaFwd). `what` names the call
/// in messages.
void attentionFwdF32(Context* ctx, const char* loc, const char* what, const float* q,
                     const float* k, const float* v, float* out, float* lse, int64_t bh,
                     int64_t t, int64_t hd, const Layout& li, const Layout& lk, const Layout& lo,
                     int32_t causal, int64_t window, float scale) {
  if (bh * t == 0) return;
  checkAlignedTensors16(loc, what, {q, k, v, out});
  checkRowStrides16(loc, what, li, lk, lo, 4);
  const AttentionTiles tl = resolveTiles(ctx->attn_tiles, hd, causal ? window : 0);
  if (!withHdGqa(hd, li, lk, [&](auto hdC, auto gqaC) {
        attentionFwdHD<decltype(hdC)::value, decltype(gqaC)::value>(
            ctx, loc, q, k, v, out, lse, bh, t, li, lk, lo, causal, window, scale, tl.fwd_br,
            tl.fwd_bc);
      }))
    fail(loc, "%s: head dim %lld is not supported on CUDA (32, 64 or 128)", what, (long long)hd);
}

/// The f32 backward, as attentionFwdF32.
void attentionBwdF32(Context* ctx, const char* loc, const char* what, const float* q,
                     const float* k, const float* v, const float* out, const float* lse,
                     const float* dout, float* dq, float* dk, float* dv, int64_t bh, int64_t t,
                     int64_t hd, const Layout& li, const Layout& lk, const Layout& lo,
                     int32_t causal, int64_t window, float scale) {
  if (bh * t * hd == 0) return;
  checkAlignedTensors16(loc, what, {q, k, v, dout, dq, dk, dv});
  checkRowStrides16(loc, what, li, lk, lo, 4);
  const AttentionTiles tl = resolveTiles(ctx->attn_tiles, hd, causal ? window : 0);
  if (!withHdGqa(hd, li, lk, [&](auto hdC, auto gqaC) {
        attentionBwdHD<decltype(hdC)::value, decltype(gqaC)::value>(
            ctx, loc, q, k, v, out, lse, dout, dq, dk, dv, bh, t, li, lk, lo, causal, window,
            scale, tl);
      }))
    fail(loc, "%s: head dim %lld is not supported on CUDA (32, 64 or 128)", what, (long long)hd);
}

/// attentionGqaFwd; gqa false: the tgrt_attention_fwd call (its messages).
void gqaFwd(Context* ctx, const char* loc, bool gqa, int32_t dt, const void* q, const void* k,
            const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t kv_heads,
            int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
            int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
            int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
            float scale) {
  checkCtx(ctx, loc);
  switch (dt) {
  case TGRT_F32: {
    if (ctx->tf32) { // TGRT_TF32=1: TF32 tensor cores (AttentionTf32.cu)
      const auto* qf = static_cast<const float*>(q);
      const auto* kf = static_cast<const float*>(k);
      const auto* vf = static_cast<const float*>(v);
      auto* of = static_cast<float*>(out);
      if (gqa)
        attentionGqaFwdTf32(ctx, loc, qf, kf, vf, of, lse, batch, heads, kv_heads, t, hd,
                            in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h,
                            kv_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window,
                            scale);
      else
        attentionFwdTf32(ctx, loc, qf, kf, vf, of, lse, batch, heads, t, hd, in_stride_b,
                         in_stride_h, in_stride_t, out_stride_b, out_stride_h, out_stride_t,
                         causal, window, scale);
      return;
    }
    const Layouts ls = checkedLayouts(loc, /*forward=*/true, gqa, batch, heads, kv_heads, t, hd,
                                      in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                                      kv_stride_h, kv_stride_t, out_stride_b, out_stride_h,
                                      out_stride_t);
    attentionFwdF32(ctx, loc, gqa ? "attention_gqa_fwd" : "attention_fwd",
                    static_cast<const float*>(q), static_cast<const float*>(k),
                    static_cast<const float*>(v), static_cast<float*>(out), lse, batch * heads, t,
                    hd, ls.in, ls.kv, ls.out, causal, window, scale);
    return;
  }
  case TGRT_BF16:
  case TGRT_F16:
#ifdef TGRT_HAVE_CUDNN
    if (ctx->attn_impl != (int)AttentionImpl::Own &&
        cudnnAttentionFwd(ctx, loc, dt, q, k, v, out, lse, batch, heads, kv_heads, t, hd,
                          in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h,
                          kv_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window,
                          scale))
      return;
#endif
    if (gqa)
      attentionGqaFwd16(ctx, loc, dt, q, k, v, out, lse, batch, heads, kv_heads, t, hd,
                        in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h,
                        kv_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window,
                        scale);
    else
      attentionFwd16(ctx, loc, dt, q, k, v, out, lse, batch, heads, t, hd, in_stride_b,
                     in_stride_h, in_stride_t, out_stride_b, out_stride_h, out_stride_t, causal,
                     window, scale);
    return;
  default: fail(loc, "%s: unknown dtype %d", gqa ? "attention_gqa_fwd" : "attention_fwd", (int)dt);
  }
}

/// attentionGqaBwd; gqa false: the tgrt_attention_bwd call (its messages).
void gqaBwd(Context* ctx, const char* loc, bool gqa, int32_t dt, const void* q, const void* k,
            const void* v, const void* out, const float* lse, const void* dout, void* dq,
            void* dk, void* dv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
            int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
            int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
            int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
            float scale) {
  checkCtx(ctx, loc);
  switch (dt) {
  case TGRT_F32: {
    if (ctx->tf32) { // TGRT_TF32=1: TF32 tensor cores (AttentionTf32.cu)
      const auto* qf = static_cast<const float*>(q);
      const auto* kf = static_cast<const float*>(k);
      const auto* vf = static_cast<const float*>(v);
      const auto* of = static_cast<const float*>(out);
      const auto* dof = static_cast<const float*>(dout);
      auto* dqf = static_cast<float*>(dq);
      auto* dkf = static_cast<float*>(dk);
      auto* dvf = static_cast<float*>(dv);
      if (gqa)
        attentionGqaBwdTf32(ctx, loc, qf, kf, vf, of, lse, dof, dqf, dkf, dvf, batch, heads,
                            kv_heads, t, hd, in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                            kv_stride_h, kv_stride_t, out_stride_b, out_stride_h, out_stride_t,
                            causal, window, scale);
      else
        attentionBwdTf32(ctx, loc, qf, kf, vf, of, lse, dof, dqf, dkf, dvf, batch, heads, t, hd,
                         in_stride_b, in_stride_h, in_stride_t, out_stride_b, out_stride_h,
                         out_stride_t, causal, window, scale);
      return;
    }
    const Layouts ls = checkedLayouts(loc, /*forward=*/false, gqa, batch, heads, kv_heads, t, hd,
                                      in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                                      kv_stride_h, kv_stride_t, out_stride_b, out_stride_h,
                                      out_stride_t);
    attentionBwdF32(ctx, loc, gqa ? "attention_gqa_bwd" : "attention_bwd",
                    static_cast<const float*>(q), static_cast<const float*>(k),
                    static_cast<const float*>(v), static_cast<const float*>(out), lse,
                    static_cast<const float*>(dout), static_cast<float*>(dq),
                    static_cast<float*>(dk), static_cast<float*>(dv), batch * heads, t, hd,
                    ls.in, ls.kv, ls.out, causal, window, scale);
    return;
  }
  case TGRT_BF16:
  case TGRT_F16:
#ifdef TGRT_HAVE_CUDNN
    if (ctx->attn_impl != (int)AttentionImpl::Own &&
        cudnnAttentionBwd(ctx, loc, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads,
                          kv_heads, t, hd, in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                          kv_stride_h, kv_stride_t, out_stride_b, out_stride_h, out_stride_t,
                          causal, window, scale,
                          ctx->attn_impl == (int)AttentionImpl::CudnnDeterministic))
      return;
#endif
    if (gqa)
      attentionGqaBwd16(ctx, loc, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads,
                        kv_heads, t, hd, in_stride_b, in_stride_h, in_stride_t, kv_stride_b,
                        kv_stride_h, kv_stride_t, out_stride_b, out_stride_h, out_stride_t,
                        causal, window, scale);
    else
      attentionBwd16(ctx, loc, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, t, hd,
                     in_stride_b, in_stride_h, in_stride_t, out_stride_b, out_stride_h,
                     out_stride_t, causal, window, scale);
    return;
  default: fail(loc, "%s: unknown dtype %d", gqa ? "attention_gqa_bwd" : "attention_bwd", (int)dt);
  }
}

} // namespace

void attentionGqaFwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                     const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                     int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                     int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                     int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                     int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                     float scale) {
  gqaFwd(ctx, loc, true, dt, q, k, v, out, lse, batch, heads, kv_heads, t, hd, in_stride_b,
         in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b,
         out_stride_h, out_stride_t, causal, window, scale);
}

void attentionGqaBwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                     const void* v, const void* out, const float* lse, const void* dout, void* dq,
                     void* dk, void* dv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
                     int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                     int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                     int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                     int32_t causal, int64_t window, float scale) {
  gqaBwd(ctx, loc, true, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, kv_heads, t, hd,
         in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t,
         out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void attentionFwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                  const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t t,
                  int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                  int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                  int64_t window, float scale) {
  gqaFwd(ctx, loc, false, dt, q, k, v, out, lse, batch, heads, heads, t, hd, in_stride_b,
         in_stride_h, in_stride_t, in_stride_b, in_stride_h, in_stride_t, out_stride_b,
         out_stride_h, out_stride_t, causal, window, scale);
}

void attentionBwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                  const void* v, const void* out, const float* lse, const void* dout, void* dq,
                  void* dk, void* dv, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                  int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                  int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                  int64_t window, float scale) {
  gqaBwd(ctx, loc, false, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, heads, t, hd,
         in_stride_b, in_stride_h, in_stride_t, in_stride_b, in_stride_h, in_stride_t,
         out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

bool attentionTilesSupported(int64_t hd, const AttentionTiles& tiles) {
  if (hd != 32 && hd != 64 && hd != 128) return false;
  const AttentionTiles t = resolveTiles(tiles, hd, 0);
  auto is = [](int br, int bc, int a, int b) { return br == a && bc == b; };
  const bool fwd = is(t.fwd_br, t.fwd_bc, 64, 64) || is(t.fwd_br, t.fwd_bc, 128, 64) ||
                   is(t.fwd_br, t.fwd_bc, 64, 32) || is(t.fwd_br, t.fwd_bc, 128, 32);
  const bool kv = is(t.kv_br, t.kv_bc, 64, 64) || is(t.kv_br, t.kv_bc, 32, 64) ||
                  is(t.kv_br, t.kv_bc, 32, 32);
  const bool dq = is(t.dq_br, t.dq_bc, 64, 64) || is(t.dq_br, t.dq_bc, 64, 32) ||
                  is(t.dq_br, t.dq_bc, 32, 64);
  // The shared-memory formulas of fwdSmemFloats / dkdvSmemFloats / dqSmemFloats.
  const size_t H = (size_t)hd;
  const size_t fwdBytes = 4 * (H * (t.fwd_br + 4) + H * (t.fwd_bc + 4) + t.fwd_bc * (H + 4) +
                               (size_t)t.fwd_bc * (t.fwd_br + 4));
  const size_t kvBytes = 4 * (2 * H * (t.kv_bc + 4) + 2 * H * (t.kv_br + 4) +
                              2 * (size_t)t.kv_br * (H + 4) + 2 * (size_t)t.kv_br * (t.kv_bc + 4) +
                              2 * (size_t)t.kv_br);
  const size_t dqBytes = 4 * (2 * H * (t.dq_br + 4) + 2 * H * (t.dq_bc + 4) + t.dq_bc * (H + 4) +
                              (size_t)t.dq_bc * (t.dq_br + 4) + 2 * (size_t)t.dq_br);
  return fwd && kv && dq && fwdBytes <= kMaxSmemBytes && kvBytes <= kMaxSmemBytes &&
         dqBytes <= kMaxSmemBytes;
}

void setAttentionImpl(Context* ctx, AttentionImpl impl) {
  checkCtx(ctx, "set_attention_impl");
#ifdef TGRT_HAVE_CUDNN
  ctx->attn_impl = (int)impl;
#else
  (void)impl; // no cuDNN in this build: the own kernels
  ctx->attn_impl = (int)AttentionImpl::Own;
#endif
}

AttentionImpl attentionImpl(const Context* ctx) {
  return (AttentionImpl)ctx->attn_impl;
}

void setAttentionTiles(Context* ctx, const AttentionTiles& tiles) {
  checkCtx(ctx, "set_attention_tiles");
  ctx->attn_tiles = tiles;
}

} // namespace tgrt_cuda
