//===- AttentionSteps.cuh - the per-tile softmax / dS steps of the flash kernels ----===//
//
// Shared by the TF32 (AttentionTf32.cu) and bf16 / f16 (AttentionBf16.cu, both its mma.sync
// and its wgmma kernels) flash-attention kernels: the accumulators they work on are, per warp,
// the m16n8 C fragments of 16 rows (lane = 4 g + tq holds rows g, g + 8 and columns 2 tq,
// 2 tq + 1 of every n-tile of 8), whatever instruction produced them. FlashAttention-2 (Dao
// 2023), scores in the log2 domain (one ex2 per element).
//
//===----------------------------------------------------------------------------===//
#ifndef TGRT_CUDA_ATTENTIONSTEPS_CUH
#define TGRT_CUDA_ATTENTIONSTEPS_CUH
#include "runtime/cuda/Dtype.cuh"

#include <cstdint>
// Include after runtime/cuda/Internal.h and AttentionMask.cuh.
namespace tgrt_cuda {
namespace attn {

/// 2^x (x = -inf gives 0): Dtype.cuh's.
using tgrt_cuda::fastExp2;

/// One key tile of the forward's online softmax for this lane's two query rows (row0, row0 +
/// 8): the scores s (16 rows x NS * 8 keys from k0, C fragments) go to log2 units and are
/// masked unless the tile is `full`; the running max m and this lane's share l of the sum are
/// updated, corr is the factor the output accumulators must be rescaled by; s becomes
/// P = 2^(x - m).
template <int NS>
__device__ __forceinline__ void onlineSoftmaxP(float (&s)[NS][4], float (&m)[2], float (&l)[2],
                                               float (&corr)[2], bool full, int64_t row0,
                                               int64_t k0, int tq, int64_t t, int causal,
                                               int64_t window, float scaleLog2) {
#pragma unroll
  for (int j = 0; j < NS; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float x = s[j][e] * scaleLog2;
      if (!full && !visibleKey(row0 + 8 * (e >> 1), k0 + j * 8 + 2 * tq + (e & 1), t, causal,
                               window))
        x = -INFINITY;
      s[j][e] = x;
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < NS; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
    const float mNew = fmaxf(m[r], quadMax(mx));
    const float mUse = mNew == -INFINITY ? 0.0f : mNew; // nothing visible yet: p = 0
    corr[r] = fastExp2(m[r] - mUse);
    l[r] *= corr[r];
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = fastExp2(s[j][2 * r + e] - mUse);
        s[j][2 * r + e] = p;
        l[r] += p; // this lane's share; the quad's shares are added at the end
      }
    m[r] = mNew;
  }
}
/// o (16 rows x NO * 8, C fragments) rows g, g + 8 times corr[0], corr[1].
template <int NO>
__device__ __forceinline__ void rescaleRows(float (&o)[NO][4], const float (&corr)[2]) {
#pragma unroll
  for (int n = 0; n < NO; ++n) {
    o[n][0] *= corr[0];
    o[n][1] *= corr[0];
    o[n][2] *= corr[1];
    o[n][3] *= corr[1];
  }
}
/// onlineSoftmaxP, then the output accumulators o rescaled by corr (the mma.sync forward).
template <int NS, int NO>
__device__ __forceinline__ void onlineSoftmax(float (&s)[NS][4], float (&o)[NO][4],
                                              float (&m)[2], float (&l)[2], bool full,
                                              int64_t row0, int64_t k0, int tq, int64_t t,
                                              int causal, int64_t window, float scaleLog2) {
  float corr[2];
  onlineSoftmaxP(s, m, l, corr, full, row0, k0, tq, t, causal, window, scaleLog2);
  rescaleRows(o, corr);
}

/// The first step of dsTransposed (split so the second product can still be running during
/// it): s = S^T becomes P^T ...
template <int NQ>
__device__ __forceinline__ void pTransposed(float (&s)[NQ][4], const float* LS, bool full,
                                            int64_t q0, int64_t key0, int tq, int64_t t,
                                            int causal, int64_t window, float scaleLog2) {
#pragma unroll
  for (int j = 0; j < NQ; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = j * 8 + 2 * tq + (e & 1);
      float p = fastExp2(s[j][e] * scaleLog2 - LS[c]);
      if (!full && !visibleKey(q0 + c, key0 + 8 * (e >> 1), t, causal, window)) p = 0.0f;
      s[j][e] = p;
    }
}
/// ... then dp = dP^T becomes dS^T = P^T (dP^T - D) (p = P^T, masked entries already 0).
template <int NQ>
__device__ __forceinline__ void dsFromP(const float (&p)[NQ][4], float (&dp)[NQ][4],
                                        const float* DS, int tq) {
#pragma unroll
  for (int j = 0; j < NQ; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) dp[j][e] = p[j][e] * (dp[j][e] - DS[j * 8 + 2 * tq + (e & 1)]);
}

/// dS^T of the dk/dv kernels for this lane's keys (key0, key0 + 8) and the BQ = NQ * 8
/// queries from q0: s = S^T (raw products) becomes P^T = 2^(scale log2e s - L) (0 where masked
/// unless the tile is `full`), dp = dP^T becomes dS^T = P^T (dP^T - D); LS, DS are the query
/// rows' lse (log2 units) and D in shared memory (pTransposed then dsFromP).
template <int NQ>
__device__ __forceinline__ void dsTransposed(float (&s)[NQ][4], float (&dp)[NQ][4],
                                             const float* LS, const float* DS, bool full,
                                             int64_t q0, int64_t key0, int tq, int64_t t,
                                             int causal, int64_t window, float scaleLog2) {
  pTransposed(s, LS, full, q0, key0, tq, t, causal, window, scaleLog2);
  dsFromP(s, dp, DS, tq);
}

/// The first step of dsRows: s = S becomes P, masked ...
template <int NS>
__device__ __forceinline__ void pRows(float (&s)[NS][4], const float (&L)[2], bool full,
                                      int64_t row0, int64_t k0, int tq, int64_t t, int causal,
                                      int64_t window, float scaleLog2) {
#pragma unroll
  for (int j = 0; j < NS; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1;
      float p = fastExp2(s[j][e] * scaleLog2 - L[r]);
      if (!full && !visibleKey(row0 + 8 * r, k0 + j * 8 + 2 * tq + (e & 1), t, causal, window))
        p = 0.0f;
      s[j][e] = p;
    }
}
/// ... then dp = dP becomes dS = P (dP - D).
template <int NS>
__device__ __forceinline__ void dsFromPRows(const float (&p)[NS][4], float (&dp)[NS][4],
                                            const float (&Dr)[2]) {
#pragma unroll
  for (int j = 0; j < NS; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) dp[j][e] = p[j][e] * (dp[j][e] - Dr[e >> 1]);
}

/// dS of the dq kernels for this lane's query rows (row0, row0 + 8; lse L in log2 units, D
/// Dr) and the NS * 8 keys from k0: s = S becomes P = 2^(scale log2e s - L), dp = dP becomes
/// dS = P (dP - D) (pRows then dsFromPRows).
template <int NS>
__device__ __forceinline__ void dsRows(float (&s)[NS][4], float (&dp)[NS][4],
                                       const float (&L)[2], const float (&Dr)[2], bool full,
                                       int64_t row0, int64_t k0, int tq, int64_t t, int causal,
                                       int64_t window, float scaleLog2) {
  pRows(s, L, full, row0, k0, tq, t, causal, window, scaleLog2);
  dsFromPRows(s, dp, Dr);
}

} // namespace attn
} // namespace tgrt_cuda
#endif
