// Kernels.cpp — the CPU reference implementation of the "kernels" half of runtime/tgrt.h.
//
// This backend is the correctness oracle: fp32 storage, straightforward loops, reductions
// accumulated in double, OpenBLAS cblas_sgemm for GEMM. Every kernel runs synchronously.
// Errors (bad sizes, ids/targets out of range, NULL pointers) print "tgrt: <loc>: <what>"
// to stderr and exit(1).
//
// Math of each kernel family (x, y row-major float32; sums over the named index):
//   embedding   out[i,:] = table[ids[i],:];           dtable[v,:] = sum_{i: ids[i]=v} dout[i,:]
//   positional  out[b,t,:] = x[b,t,:] + wpe[t,:];      dwpe[t,:] = sum_b dout[b,t,:]
//   layer norm  mu = mean_d x, rstd = 1/sqrt(mean_d (x-mu)^2 + eps), xhat = (x-mu) rstd,
//               y = xhat*gamma + beta;  dbeta = sum_r dy, dgamma = sum_r dy*xhat,
//               g = dy*gamma, dx = rstd (g - mean_d g - xhat mean_d(g xhat))
//   matmul      C_b = alpha op(A_b) op(B_b) + beta C_b   (cblas_sgemm per batch entry)
//   bias        out = x + bias;                        dbias = sum_r dy
//   GELU (tanh) y = 0.5 x (1 + tanh(u)), u = c (x + a x^3), c = sqrt(2/pi), a = 0.044715;
//               dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) c (1 + 3 a x^2)
//   dropout     keep_i = u_i >= rate, y_i = keep_i ? x_i / (1 - rate) : 0, where u_i is a
//               24-bit uniform from splitmix64 (Steele et al. 2014) of a key derived from
//               (seed, step, micro_batch) and the counter i (see dropoutUniform)
//   causal mask y[b,i,j] = x[b,i,j] if j <= i' and (window <= 0 or i' - j < window),
//               i' = i + tk - tq; else masked_value
//   softmax     y = exp(x - max) / sum exp(x - max);   dx = y (dy - sum(dy y))
//   cross-ent.  loss = mean_{valid r} (logsumexp(z_r) - z_r[t_r]);
//               dz_r = dloss (softmax(z_r) - onehot(t_r)) / n_valid
//   attention   s_ij = scale q_i.k_j over visible j (causal: j <= i, and i - j < window when
//               window > 0), lse_i = logsumexp_j s_ij, P_ij = exp(s_ij - lse_i),
//               out_i = sum_j P_ij v_j;  D_i = dout_i.out_i, dv_j = sum_i P_ij dout_i,
//               dS_ij = P_ij (dout_i.v_j - D_i), dq_i = scale sum_j dS_ij k_j,
//               dk_j = scale sum_i dS_ij q_i   (Dao et al. 2022, recomputing P from lse)
//   grad norm   acc0 += sum g^2; norm = sqrt(acc0), clip = norm > max ? max/(norm+1e-6) : 1
//   AdamW       g' = g clip; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
//               p -= lr (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd p)
//               (Loshchilov & Hutter 2019)
#include "runtime/cpu/CpuContext.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

using tgrt_cpu::checkCtx;
using tgrt_cpu::checkNonNegative;
using tgrt_cpu::fail;

namespace {

/// Fails unless every pointer is non-NULL; used only when the element count is > 0.
void checkPtrs(const char* loc, const char* kernel, std::initializer_list<const void*> ptrs) {
  int index = 0;
  for (const void* p : ptrs) {
    if (!p) fail(loc, "%s: pointer argument #%d is NULL", kernel, index);
    ++index;
  }
}

/// splitmix64 output function (Steele, Lea & Flood 2014, "Fast splittable pseudorandom
/// number generators"): a bijective 64-bit mixer.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL; // splitmix64 increment, 2^64 / phi

/// Dropout stream key for (seed, step, micro_batch): three chained mixes so that each of the
/// three inputs changes every mask bit with probability ~1/2.
inline uint64_t dropoutKey(uint64_t seed, int64_t step, int32_t microBatch) {
  uint64_t h = mix64(seed + kGolden);
  h = mix64(h ^ ((uint64_t)step * kGolden));
  h = mix64(h ^ ((uint64_t)(uint32_t)microBatch * 0xD1B54A32D192ED03ULL));
  return h;
}

/// Uniform in [0, 1) with 24 random bits (exactly representable in float) for element i:
/// the splitmix64 stream value number i+1 of the state `key`.
inline float dropoutUniform(uint64_t key, uint64_t i) {
  const uint64_t bits = mix64(key + (i + 1) * kGolden);
  return (float)(bits >> 40) * (1.0f / 16777216.0f);
}

/// Visible key range [lo, hi] of query i in self-attention (tq = tk = t): all keys when not
/// causal; j <= i and, with window > 0, i - j < window when causal.
inline void visibleRange(int64_t i, int64_t t, int32_t causal, int64_t window, int64_t& lo,
                         int64_t& hi) {
  if (!causal) {
    lo = 0;
    hi = t - 1;
    return;
  }
  hi = i;
  lo = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
}

inline double dotd(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t x = 0; x < n; ++x) s += (double)a[x] * (double)b[x];
  return s;
}

/// Max and log-sum-exp (double) of one row of logits.
inline double rowLogSumExp(const float* z, int64_t vocab) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < vocab; ++c) mx = std::max(mx, z[c]);
  double sum = 0.0;
  for (int64_t c = 0; c < vocab; ++c) sum += std::exp((double)z[c] - mx);
  return mx + std::log(sum);
}

/// Number of rows whose target is not ignore_index; fails on targets outside [0, vocab).
int64_t countValid(const char* loc, const int32_t* targets, int64_t rows, int64_t vocab,
                   int64_t ignore_index) {
  int64_t valid = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = targets[r];
    if (t == ignore_index) continue;
    if (t < 0 || t >= vocab)
      fail(loc, "cross_entropy target %lld at row %lld is outside [0, %lld)", (long long)t,
           (long long)r, (long long)vocab);
    ++valid;
  }
  return valid;
}

constexpr double kGeluC = 0.7978845608028654; // sqrt(2/pi)
constexpr double kGeluA = 0.044715;

/// bf16 storage -> float (exact).
std::vector<float> bf16ToFloat(const uint16_t* x, int64_t n) {
  std::vector<float> f((size_t)n);
  for (int64_t i = 0; i < n; ++i) f[(size_t)i] = tgrt_bf16_to_float(x[i]);
  return f;
}
void floatToBf16(const std::vector<float>& f, uint16_t* x) {
  for (size_t i = 0; i < f.size(); ++i) x[i] = tgrt_bf16_from_float(f[i]);
}

} // namespace

extern "C" {

// ----------------------------------------------------------------------- embedding --

/// out[i,:] = table[ids[i],:]. table [vocab, d] f32, ids [n_tokens] i32, out [n_tokens, d] f32.
/// Errors: id outside [0, vocab), negative sizes.
void tgrt_embedding_fwd(tgrt_ctx* ctx, const char* loc, const float* table, const int32_t* ids,
                        float* out, int64_t n_tokens, int64_t d, int64_t vocab) {
  (void)ctx;
  checkNonNegative(loc, "embedding_fwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  if (n_tokens == 0 || d == 0) return;
  checkPtrs(loc, "embedding_fwd", {table, ids, out});
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab)
      fail(loc, "embedding id %lld at position %lld is outside [0, %lld)", (long long)id,
           (long long)i, (long long)vocab);
    std::memcpy(out + i * d, table + id * d, (size_t)d * sizeof(float));
  }
}

/// dtable = 0; dtable[ids[i],:] += dout[i,:] in increasing i (deterministic).
/// dout [n_tokens, d], dtable [vocab, d]. Errors: id outside [0, vocab).
void tgrt_embedding_bwd(tgrt_ctx* ctx, const char* loc, const int32_t* ids, const float* dout,
                        float* dtable, int64_t n_tokens, int64_t d, int64_t vocab) {
  (void)ctx;
  checkNonNegative(loc, "embedding_bwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  if (vocab * d > 0) {
    checkPtrs(loc, "embedding_bwd", {dtable});
    std::memset(dtable, 0, (size_t)(vocab * d) * sizeof(float));
  }
  if (n_tokens == 0 || d == 0) return;
  checkPtrs(loc, "embedding_bwd", {ids, dout});
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab)
      fail(loc, "embedding id %lld at position %lld is outside [0, %lld)", (long long)id,
           (long long)i, (long long)vocab);
    float* row = dtable + id * d;
    const float* src = dout + i * d;
    for (int64_t c = 0; c < d; ++c) row[c] += src[c];
  }
}

/// out[b,s,:] = x[b,s,:] + wpe[s,:] for s < t. x, out [batch, t, d]; wpe [>= t, d].
/// out may alias x.
void tgrt_positional_fwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* wpe,
                         float* out, int64_t batch, int64_t t, int64_t d) {
  (void)ctx;
  checkNonNegative(loc, "positional_fwd(batch, t, d)", batch, t, d);
  if (batch * t * d == 0) return;
  checkPtrs(loc, "positional_fwd", {x, wpe, out});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < t; ++s) {
      const int64_t base = (b * t + s) * d;
      for (int64_t c = 0; c < d; ++c) out[base + c] = x[base + c] + wpe[s * d + c];
    }
}

/// dwpe[s,:] = sum_b dout[b,s,:] for s < t (double accumulation), 0 for t <= s < context.
/// dout [batch, t, d], dwpe [context, d] (overwritten). Errors: context < t.
void tgrt_positional_bwd(tgrt_ctx* ctx, const char* loc, const float* dout, float* dwpe,
                         int64_t batch, int64_t t, int64_t d, int64_t context) {
  (void)ctx;
  checkNonNegative(loc, "positional_bwd(batch, t, d, context)", batch, t, d, context);
  if (context < t) fail(loc, "positional_bwd: context %lld < t %lld", (long long)context, (long long)t);
  if (context * d == 0) return;
  checkPtrs(loc, "positional_bwd", {dwpe});
  if (batch > 0 && t > 0) checkPtrs(loc, "positional_bwd", {dout});
  std::vector<double> acc((size_t)d);
  for (int64_t s = 0; s < t; ++s) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = dout + (b * t + s) * d;
      for (int64_t c = 0; c < d; ++c) acc[c] += row[c];
    }
    for (int64_t c = 0; c < d; ++c) dwpe[s * d + c] = (float)acc[c];
  }
  std::memset(dwpe + t * d, 0, (size_t)((context - t) * d) * sizeof(float));
}

// ---------------------------------------------------------------------- elementwise --

/// out = a + b over n f32 elements; out may alias a or b.
void tgrt_add(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, float* out,
              int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "add(n)", n);
  if (n == 0) return;
  checkPtrs(loc, "add", {a, b, out});
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

/// dst += src over n f32 elements.
void tgrt_accumulate(tgrt_ctx* ctx, const char* loc, float* dst, const float* src, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "accumulate(n)", n);
  if (n == 0) return;
  checkPtrs(loc, "accumulate", {dst, src});
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

/// out[i] = value for i < n.
void tgrt_fill(tgrt_ctx* ctx, const char* loc, float* out, int64_t n, float value) {
  (void)ctx;
  checkNonNegative(loc, "fill(n)", n);
  if (n == 0) return;
  checkPtrs(loc, "fill", {out});
  std::fill(out, out + n, value);
}

/// Sets `bytes` bytes at p to zero.
void tgrt_zero(tgrt_ctx* ctx, const char* loc, void* p, int64_t bytes) {
  (void)ctx;
  checkNonNegative(loc, "zero(bytes)", bytes);
  if (bytes == 0) return;
  checkPtrs(loc, "zero", {p});
  std::memset(p, 0, (size_t)bytes);
}

/// dst[r*dst_ld + c] = src[r*src_ld + c] for r < rows, c < cols (elements).
/// Errors: src_ld or dst_ld < cols.
void tgrt_copy2d(tgrt_ctx* ctx, const char* loc, const float* src, int64_t src_ld, float* dst,
                 int64_t dst_ld, int64_t rows, int64_t cols) {
  (void)ctx;
  checkNonNegative(loc, "copy2d(src_ld, dst_ld, rows, cols)", src_ld, dst_ld, rows, cols);
  if (rows == 0 || cols == 0) return;
  if (src_ld < cols || dst_ld < cols)
    fail(loc, "copy2d: leading dimensions (src %lld, dst %lld) smaller than cols %lld",
         (long long)src_ld, (long long)dst_ld, (long long)cols);
  checkPtrs(loc, "copy2d", {src, dst});
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_ld, src + r * src_ld, (size_t)cols * sizeof(float));
}

/// y = permute(x, p): x [d0,d1,d2,d3], y [d_p0,d_p1,d_p2,d_p3],
/// y[i_p0,i_p1,i_p2,i_p3] = x[i0,i1,i2,i3]. Errors: p not a permutation of {0,1,2,3}.
void tgrt_transpose4(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t d0,
                     int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2,
                     int32_t p3) {
  (void)ctx;
  checkNonNegative(loc, "transpose4(d0, d1, d2, d3)", d0, d1, d2, d3);
  const int64_t dims[4] = {d0, d1, d2, d3};
  const int32_t perm[4] = {p0, p1, p2, p3};
  bool seen[4] = {false, false, false, false};
  for (int32_t p : perm) {
    if (p < 0 || p > 3 || seen[p])
      fail(loc, "transpose4: (%d, %d, %d, %d) is not a permutation of (0, 1, 2, 3)", (int)p0,
           (int)p1, (int)p2, (int)p3);
    seen[p] = true;
  }
  if (d0 * d1 * d2 * d3 == 0) return;
  checkPtrs(loc, "transpose4", {x, y});
  // Row-major strides of y, then the y-stride of each x axis: x axis perm[j] is y axis j.
  int64_t ystride[4];
  ystride[3] = 1;
  for (int j = 2; j >= 0; --j) ystride[j] = ystride[j + 1] * dims[perm[j + 1]];
  int64_t sx[4];
  for (int j = 0; j < 4; ++j) sx[perm[j]] = ystride[j];
  int64_t src = 0;
  for (int64_t i0 = 0; i0 < d0; ++i0)
    for (int64_t i1 = 0; i1 < d1; ++i1)
      for (int64_t i2 = 0; i2 < d2; ++i2) {
        const int64_t base = i0 * sx[0] + i1 * sx[1] + i2 * sx[2];
        for (int64_t i3 = 0; i3 < d3; ++i3) y[base + i3 * sx[3]] = x[src++];
      }
}

// ----------------------------------------------------------------------- layer norm --

/// Layer norm (Ba et al. 2016) over the last dim: x, y [rows, d]; gamma, beta [d];
/// mean, rstd [rows] (outputs). Statistics in double, biased variance, two passes.
void tgrt_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* gamma,
                         const float* beta, float* y, float* mean, float* rstd, int64_t rows,
                         int64_t d, float eps) {
  (void)ctx;
  checkNonNegative(loc, "layer_norm_fwd(rows, d)", rows, d);
  if (rows == 0) return;
  if (d == 0) fail(loc, "layer_norm_fwd: d must be > 0");
  checkPtrs(loc, "layer_norm_fwd", {x, gamma, beta, y, mean, rstd});
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    double mu = 0.0;
    for (int64_t c = 0; c < d; ++c) mu += xr[c];
    mu /= (double)d;
    double var = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      const double dx = xr[c] - mu;
      var += dx * dx;
    }
    var /= (double)d;
    const double rs = 1.0 / std::sqrt(var + (double)eps);
    float* yr = y + r * d;
    for (int64_t c = 0; c < d; ++c)
      yr[c] = (float)((xr[c] - mu) * rs * gamma[c] + beta[c]);
    mean[r] = (float)mu;
    rstd[r] = (float)rs;
  }
}

/// Layer norm backward: dy, x, dx [rows, d]; gamma, dgamma, dbeta [d]; mean, rstd [rows]
/// from the forward. dgamma and dbeta are overwritten (not accumulated).
void tgrt_layer_norm_bwd(tgrt_ctx* ctx, const char* loc, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta, int64_t rows, int64_t d) {
  (void)ctx;
  checkNonNegative(loc, "layer_norm_bwd(rows, d)", rows, d);
  if (d == 0) return;
  checkPtrs(loc, "layer_norm_bwd", {dgamma, dbeta});
  std::vector<double> dg((size_t)d, 0.0), db((size_t)d, 0.0), xhat((size_t)d), g((size_t)d);
  if (rows > 0) checkPtrs(loc, "layer_norm_bwd", {dy, x, gamma, mean, rstd, dx});
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    const float* dyr = dy + r * d;
    const double mu = mean[r], rs = rstd[r];
    double meanG = 0.0, meanGX = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      xhat[c] = (xr[c] - mu) * rs;
      g[c] = (double)dyr[c] * gamma[c];
      meanG += g[c];
      meanGX += g[c] * xhat[c];
      db[c] += dyr[c];
      dg[c] += dyr[c] * xhat[c];
    }
    meanG /= (double)d;
    meanGX /= (double)d;
    float* dxr = dx + r * d;
    for (int64_t c = 0; c < d; ++c) dxr[c] = (float)(rs * (g[c] - meanG - xhat[c] * meanGX));
  }
  for (int64_t c = 0; c < d; ++c) {
    dgamma[c] = (float)dg[c];
    dbeta[c] = (float)db[c];
  }
}

// --------------------------------------------------------------------------- matmul --

/// Batched row-major GEMM via cblas_sgemm, one call per batch entry:
///   C_b = alpha op(A_b) op(B_b) + beta C_b, C_b [m, n], op(A_b) [m, k], op(B_b) [k, n];
/// A_b stored [k, m] when trans_a, B_b stored [n, k] when trans_b; X_b = x + b*stride_x
/// (elements, 0 broadcasts). beta == 0: C is never read (NaN-safe), per the BLAS contract.
/// Errors: negative sizes or strides.
void tgrt_matmul(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, float* c,
                 int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                 int32_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 float alpha, float beta) {
  (void)ctx;
  checkNonNegative(loc, "matmul(batch, m, n, k)", batch, m, n, k);
  checkNonNegative(loc, "matmul(stride_a, stride_b, stride_c)", stride_a, stride_b, stride_c);
  if (batch == 0 || m == 0 || n == 0) return;
  const int64_t kMaxBlas = std::numeric_limits<int>::max();
  if (m > kMaxBlas || n > kMaxBlas || k > kMaxBlas)
    fail(loc, "matmul: dimension exceeds the BLAS int range (m %lld, n %lld, k %lld)",
         (long long)m, (long long)n, (long long)k);
  checkPtrs(loc, "matmul", {c});
  if (k > 0) checkPtrs(loc, "matmul", {a, b});
  const int lda = (int)std::max<int64_t>(1, trans_a ? m : k);
  const int ldb = (int)std::max<int64_t>(1, trans_b ? k : n);
  const int ldc = (int)n;
  for (int64_t bi = 0; bi < batch; ++bi) {
    float* cb = c + bi * stride_c;
    if (k == 0) { // alpha * (empty product) = 0, so C = beta C
      if (beta == 0.0f)
        std::memset(cb, 0, (size_t)(m * n) * sizeof(float));
      else if (beta != 1.0f)
        for (int64_t i = 0; i < m * n; ++i) cb[i] *= beta;
      continue;
    }
    // BLAS contract (and OpenBLAS): with beta == 0, C is not read on input.
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                a + bi * stride_a, lda, b + bi * stride_b, ldb, beta, cb, ldc);
  }
}

/// out[r,:] = x[r,:] + bias[:]; x, out [rows, n]; bias [n]. out may alias x.
/// Linear layer: the GEMM (beta 0) then the row-broadcast bias, in place on C.
void tgrt_matmul_bias(tgrt_ctx* ctx, const char* loc, const float* a, const float* b,
                      const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_matmul(ctx, loc, a, b, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
  tgrt_bias_add(ctx, loc, c, bias, c, m, n);
}

/// pre = alpha op(A) op(B) + bias, out = GELU(pre): the two reference kernels in turn.
void tgrt_matmul_bias_gelu(tgrt_ctx* ctx, const char* loc, const float* a, const float* b,
                           const float* bias, float* pre, float* out, int64_t m, int64_t n,
                           int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_bias_gelu(m, n, k)", m, n, k);
  tgrt_matmul_bias(ctx, loc, a, b, bias, pre, m, n, k, trans_a, trans_b, alpha);
  tgrt_gelu_fwd(ctx, loc, pre, out, m * n);
}

void tgrt_bias_add(tgrt_ctx* ctx, const char* loc, const float* x, const float* bias, float* out,
                   int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "bias_add(rows, n)", rows, n);
  if (rows * n == 0) return;
  checkPtrs(loc, "bias_add", {x, bias, out});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) out[r * n + c] = x[r * n + c] + bias[c];
}

/// dbias[:] = sum_r dy[r,:] (double accumulation, overwritten); dy [rows, n], dbias [n].
void tgrt_bias_grad(tgrt_ctx* ctx, const char* loc, const float* dy, float* dbias, int64_t rows,
                    int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "bias_grad(rows, n)", rows, n);
  if (n == 0) return;
  checkPtrs(loc, "bias_grad", {dbias});
  if (rows > 0) checkPtrs(loc, "bias_grad", {dy});
  std::vector<double> acc((size_t)n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) acc[c] += dy[r * n + c];
  for (int64_t c = 0; c < n; ++c) dbias[c] = (float)acc[c];
}

// ----------------------------------------------------------------------------- GELU --


/// GELU, tanh approximation (Hendrycks & Gimpel 2016): x, y [n]; y may alias x.
void tgrt_gelu_fwd(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "gelu_fwd(n)", n);
  if (n == 0) return;
  checkPtrs(loc, "gelu_fwd", {x, y});
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    y[i] = (float)(0.5 * xi * (1.0 + std::tanh(kGeluC * (xi + kGeluA * xi * xi * xi))));
  }
}

/// dx = dy * GELU'(x) with GELU' = 0.5(1+tanh u) + 0.5 x (1-tanh^2 u) c (1 + 3a x^2);
/// x, dy, dx [n]; dx may alias dy.
void tgrt_gelu_bwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* dy, float* dx,
                   int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "gelu_bwd(n)", n);
  if (n == 0) return;
  checkPtrs(loc, "gelu_bwd", {x, dy, dx});
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double th = std::tanh(kGeluC * (xi + kGeluA * xi * xi * xi));
    const double grad =
        0.5 * (1.0 + th) + 0.5 * xi * (1.0 - th * th) * kGeluC * (1.0 + 3.0 * kGeluA * xi * xi);
    dx[i] = (float)(dy[i] * grad);
  }
}

// -------------------------------------------------------------------------- dropout --

/// Inverted dropout, x, y [n] (y may alias x). Element i is kept iff u_i >= rate where
/// u_i = (splitmix64(key + (i+1)*0x9E3779B97F4A7C15) >> 40) / 2^24 and
/// key = mix(mix(mix(seed + G) ^ step*G) ^ micro_batch*0xD1B54A32D192ED03) (mix = splitmix64
/// finaliser, G = 0x9E3779B97F4A7C15; step and micro_batch from ctx). Kept elements are
/// scaled by 1/(1-rate); rate 1 drops everything. Calling it with dy in place of x is the
/// backward. Errors: rate outside [0, 1], NULL ctx.
void tgrt_dropout(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t n, float rate,
                  uint64_t seed) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "dropout(n)", n);
  if (!(rate >= 0.0f && rate <= 1.0f)) fail(loc, "dropout rate %g outside [0, 1]", (double)rate);
  if (n == 0) return;
  checkPtrs(loc, "dropout", {x, y});
  if (rate == 0.0f) {
    if (y != x) std::memcpy(y, x, (size_t)n * sizeof(float));
    return;
  }
  const uint64_t key = dropoutKey(seed, ctx->step, ctx->micro_batch);
  const float scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  for (int64_t i = 0; i < n; ++i)
    y[i] = dropoutUniform(key, (uint64_t)i) >= rate ? x[i] * scale : 0.0f;
}

// ---------------------------------------------------------------- softmax and mask --

/// Causal / sliding-window mask on scores x, y [batch, tq, tk] (y may alias x): query i sits at
/// key position i' = i + tk - tq; keeps x where j <= i' and (window <= 0 or i' - j < window),
/// writes masked_value elsewhere.
void tgrt_causal_mask(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t batch,
                      int64_t tq, int64_t tk, int64_t window, float masked_value) {
  (void)ctx;
  checkNonNegative(loc, "causal_mask(batch, tq, tk)", batch, tq, tk);
  if (batch * tq * tk == 0) return;
  checkPtrs(loc, "causal_mask", {x, y});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t ip = i + tk - tq;
      const int64_t base = (b * tq + i) * tk;
      for (int64_t j = 0; j < tk; ++j) {
        const bool keep = j <= ip && (window <= 0 || ip - j < window);
        y[base + j] = keep ? x[base + j] : masked_value;
      }
    }
}

/// Row softmax over the last dim, x, y [rows, n] (y may alias x); sum in double; a row whose
/// maximum is -inf (all masked) gives zeros.
void tgrt_softmax_fwd(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t rows,
                      int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "softmax_fwd(rows, n)", rows, n);
  if (rows * n == 0) return;
  checkPtrs(loc, "softmax_fwd", {x, y});
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < n; ++c) mx = std::max(mx, xr[c]);
    if (mx == -std::numeric_limits<float>::infinity()) {
      std::fill(yr, yr + n, 0.0f);
      continue;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < n; ++c) sum += std::exp((double)xr[c] - mx);
    const double inv = 1.0 / sum;
    for (int64_t c = 0; c < n; ++c) yr[c] = (float)(std::exp((double)xr[c] - mx) * inv);
  }
}

/// dx = y * (dy - sum_n(dy*y)) per row; y, dy, dx [rows, n]; dx may alias dy.
void tgrt_softmax_bwd(tgrt_ctx* ctx, const char* loc, const float* y, const float* dy, float* dx,
                      int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "softmax_bwd(rows, n)", rows, n);
  if (rows * n == 0) return;
  checkPtrs(loc, "softmax_bwd", {y, dy, dx});
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * n;
    const float* dyr = dy + r * n;
    float* dxr = dx + r * n;
    const double dot = dotd(dyr, yr, n);
    for (int64_t c = 0; c < n; ++c) dxr[c] = (float)(yr[c] * (dyr[c] - dot));
  }
}

// -------------------------------------------------------------------- cross entropy --


/// loss[0] = mean over rows with targets[r] != ignore_index of logsumexp(logits[r,:]) -
/// logits[r, targets[r]] (double accumulation); 0 when no row counts. logits [rows, vocab] f32,
/// targets [rows] i32, loss [1]. Errors: target outside [0, vocab) and != ignore_index.
void tgrt_cross_entropy_fwd(tgrt_ctx* ctx, const char* loc, const float* logits,
                            const int32_t* targets, float* loss, int64_t rows, int64_t vocab,
                            int64_t ignore_index) {
  (void)ctx;
  checkNonNegative(loc, "cross_entropy_fwd(rows, vocab)", rows, vocab);
  checkPtrs(loc, "cross_entropy_fwd", {loss});
  if (rows > 0) checkPtrs(loc, "cross_entropy_fwd", {logits, targets});
  const int64_t valid = countValid(loc, targets, rows, vocab, ignore_index);
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == ignore_index) continue;
    const float* z = logits + r * vocab;
    sum += rowLogSumExp(z, vocab) - (double)z[targets[r]];
  }
  loss[0] = valid > 0 ? (float)(sum / (double)valid) : 0.0f;
}

/// dlogits[r,:] = dloss[0] (softmax(logits[r,:]) - onehot(targets[r])) / n_valid, zeros for
/// ignored rows. dlogits may alias logits (each row's lse is computed before it is written).
void tgrt_cross_entropy_bwd(tgrt_ctx* ctx, const char* loc, const float* logits,
                            const int32_t* targets, const float* dloss, float* dlogits,
                            int64_t rows, int64_t vocab, int64_t ignore_index) {
  (void)ctx;
  checkNonNegative(loc, "cross_entropy_bwd(rows, vocab)", rows, vocab);
  if (rows == 0 || vocab == 0) return;
  checkPtrs(loc, "cross_entropy_bwd", {logits, targets, dloss, dlogits});
  const int64_t valid = countValid(loc, targets, rows, vocab, ignore_index);
  const double scale = valid > 0 ? (double)dloss[0] / (double)valid : 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * vocab;
    float* dz = dlogits + r * vocab;
    if (targets[r] == ignore_index) {
      std::fill(dz, dz + vocab, 0.0f);
      continue;
    }
    const double lse = rowLogSumExp(z, vocab);
    const int64_t t = targets[r];
    for (int64_t c = 0; c < vocab; ++c) {
      const double p = std::exp((double)z[c] - lse);
      dz[c] = (float)(scale * (p - (c == t ? 1.0 : 0.0)));
    }
  }
}

// ------------------------------------------------------------------------ attention --

/// Attention forward, one (bh, query) at a time: q, k, v, out [bh, t, hd]; lse [bh, t].
/// s_ij = scale q_i.k_j over visible keys (causal: j <= i, and i - j < window when window > 0;
/// the window only applies with causal), lse_i = logsumexp_j s_ij (double), out_i =
/// sum_j exp(s_ij - lse_i) v_j. A query with no visible key (impossible in the causal case)
/// gets out = 0, lse = -inf.
void tgrt_attention_fwd(tgrt_ctx* ctx, const char* loc, const float* q, const float* k,
                        const float* v, float* out, float* lse, int64_t bh, int64_t t,
                        int64_t hd, int32_t causal, int64_t window, float scale) {
  (void)ctx;
  checkNonNegative(loc, "attention_fwd(bh, t, hd)", bh, t, hd);
  if (bh * t == 0) return;
  checkPtrs(loc, "attention_fwd", {q, k, v, out, lse});
  std::vector<double> s((size_t)t), o((size_t)hd);
  for (int64_t h = 0; h < bh; ++h) {
    const float* qh = q + h * t * hd;
    const float* kh = k + h * t * hd;
    const float* vh = v + h * t * hd;
    for (int64_t i = 0; i < t; ++i) {
      int64_t lo, hi;
      visibleRange(i, t, causal, window, lo, hi);
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = lo; j <= hi; ++j) {
        s[j] = (double)scale * dotd(qh + i * hd, kh + j * hd, hd);
        mx = std::max(mx, s[j]);
      }
      std::fill(o.begin(), o.end(), 0.0);
      double l = -std::numeric_limits<double>::infinity();
      if (lo <= hi) {
        double sum = 0.0;
        for (int64_t j = lo; j <= hi; ++j) sum += std::exp(s[j] - mx);
        l = mx + std::log(sum);
        for (int64_t j = lo; j <= hi; ++j) {
          const double p = std::exp(s[j] - l);
          const float* vj = vh + j * hd;
          for (int64_t c = 0; c < hd; ++c) o[c] += p * vj[c];
        }
      }
      float* oi = out + (h * t + i) * hd;
      for (int64_t c = 0; c < hd; ++c) oi[c] = (float)o[c];
      lse[h * t + i] = (float)l;
    }
  }
}

/// Attention backward (dq, dk, dv [bh, t, hd], overwritten), recomputing P_ij = exp(s_ij -
/// lse_i) with the forward's visibility rule: D_i = dout_i.out_i, dv_j = sum_i P_ij dout_i,
/// dS_ij = P_ij (dout_i.v_j - D_i), dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i.
/// All accumulation in double.
void tgrt_attention_bwd(tgrt_ctx* ctx, const char* loc, const float* q, const float* k,
                        const float* v, const float* out, const float* lse, const float* dout,
                        float* dq, float* dk, float* dv, int64_t bh, int64_t t, int64_t hd,
                        int32_t causal, int64_t window, float scale) {
  (void)ctx;
  checkNonNegative(loc, "attention_bwd(bh, t, hd)", bh, t, hd);
  if (bh * t * hd == 0) return;
  checkPtrs(loc, "attention_bwd", {q, k, v, out, lse, dout, dq, dk, dv});
  std::vector<double> dkAcc((size_t)(t * hd)), dvAcc((size_t)(t * hd)), dqRow((size_t)hd);
  for (int64_t h = 0; h < bh; ++h) {
    const int64_t off = h * t * hd;
    const float *qh = q + off, *kh = k + off, *vh = v + off, *oh = out + off, *doh = dout + off;
    std::fill(dkAcc.begin(), dkAcc.end(), 0.0);
    std::fill(dvAcc.begin(), dvAcc.end(), 0.0);
    for (int64_t i = 0; i < t; ++i) {
      const float* qi = qh + i * hd;
      const float* doi = doh + i * hd;
      const double Di = dotd(doi, oh + i * hd, hd);
      const double li = lse[h * t + i];
      std::fill(dqRow.begin(), dqRow.end(), 0.0);
      int64_t lo, hi;
      visibleRange(i, t, causal, window, lo, hi);
      if (!(li > -std::numeric_limits<double>::infinity())) hi = lo - 1; // no visible key
      for (int64_t j = lo; j <= hi; ++j) {
        const float* kj = kh + j * hd;
        const float* vj = vh + j * hd;
        const double p = std::exp((double)scale * dotd(qi, kj, hd) - li);
        const double ds = p * (dotd(doi, vj, hd) - Di);
        double* dvj = dvAcc.data() + j * hd;
        double* dkj = dkAcc.data() + j * hd;
        for (int64_t c = 0; c < hd; ++c) {
          dvj[c] += p * doi[c];
          dqRow[c] += ds * kj[c];
          dkj[c] += ds * qi[c];
        }
      }
      float* dqi = dq + off + i * hd;
      for (int64_t c = 0; c < hd; ++c) dqi[c] = (float)(scale * dqRow[c]);
    }
    for (int64_t x = 0; x < t * hd; ++x) {
      dk[off + x] = (float)(scale * dkAcc[x]);
      dv[off + x] = (float)dvAcc[x];
    }
  }
}

/// bf16 attention forward: the float32 reference on the widened inputs, out rounded to bf16
/// (RNE); lse stays float32.
void tgrt_attention_fwd_bf16(tgrt_ctx* ctx, const char* loc, const uint16_t* q,
                             const uint16_t* k, const uint16_t* v, uint16_t* out, float* lse,
                             int64_t bh, int64_t t, int64_t hd, int32_t causal, int64_t window,
                             float scale) {
  checkNonNegative(loc, "attention_fwd_bf16(bh, t, hd)", bh, t, hd);
  if (bh * t == 0) return;
  checkPtrs(loc, "attention_fwd_bf16", {q, k, v, out, lse});
  const int64_t n = bh * t * hd;
  const std::vector<float> qf = bf16ToFloat(q, n), kf = bf16ToFloat(k, n), vf = bf16ToFloat(v, n);
  std::vector<float> of((size_t)n);
  tgrt_attention_fwd(ctx, loc, qf.data(), kf.data(), vf.data(), of.data(), lse, bh, t, hd, causal,
                     window, scale);
  floatToBf16(of, out);
}

/// bf16 attention backward: the float32 reference on the widened inputs (out and dout as
/// stored in bf16), dq, dk, dv rounded to bf16 (RNE).
void tgrt_attention_bwd_bf16(tgrt_ctx* ctx, const char* loc, const uint16_t* q,
                             const uint16_t* k, const uint16_t* v, const uint16_t* out,
                             const float* lse, const uint16_t* dout, uint16_t* dq, uint16_t* dk,
                             uint16_t* dv, int64_t bh, int64_t t, int64_t hd, int32_t causal,
                             int64_t window, float scale) {
  checkNonNegative(loc, "attention_bwd_bf16(bh, t, hd)", bh, t, hd);
  if (bh * t * hd == 0) return;
  checkPtrs(loc, "attention_bwd_bf16", {q, k, v, out, lse, dout, dq, dk, dv});
  const int64_t n = bh * t * hd;
  const std::vector<float> qf = bf16ToFloat(q, n), kf = bf16ToFloat(k, n), vf = bf16ToFloat(v, n),
                           of = bf16ToFloat(out, n), dof = bf16ToFloat(dout, n);
  std::vector<float> dqf((size_t)n), dkf((size_t)n), dvf((size_t)n);
  tgrt_attention_bwd(ctx, loc, qf.data(), kf.data(), vf.data(), of.data(), lse, dof.data(),
                     dqf.data(), dkf.data(), dvf.data(), bh, t, hd, causal, window, scale);
  floatToBf16(dqf, dq);
  floatToBf16(dkf, dk);
  floatToBf16(dvf, dv);
}

// ---------------------------------------------------------------------- optimizer --

/// acc[0] += sum_i g[i]^2 (the partial sum in double); g [n].
void tgrt_grad_norm_sq(tgrt_ctx* ctx, const char* loc, const float* g, int64_t n, float* acc) {
  (void)ctx;
  checkNonNegative(loc, "grad_norm_sq(n)", n);
  checkPtrs(loc, "grad_norm_sq", {acc});
  if (n == 0) return;
  checkPtrs(loc, "grad_norm_sq", {g});
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += (double)g[i] * g[i];
  acc[0] = (float)((double)acc[0] + s);
}

/// norm = sqrt(acc[0]); acc[1] = (max_norm > 0 && norm > max_norm) ? max_norm/(norm+1e-6) : 1;
/// records norm in ctx for tgrt_last_grad_norm. Errors: NULL ctx or acc.
void tgrt_clip_scale(tgrt_ctx* ctx, const char* loc, float* acc, float max_norm) {
  checkCtx(ctx, loc);
  checkPtrs(loc, "clip_scale", {acc});
  const double norm = std::sqrt((double)acc[0]);
  acc[1] = (max_norm > 0.0f && norm > (double)max_norm) ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
  ctx->last_grad_norm = (float)norm;
}

/// AdamW (Loshchilov & Hutter 2019) on p, g, m, v [n], step t and lr from ctx, g' = g*clip[1]
/// (clip may be NULL: scale 1). Bias correction 1 - b^t and the update in double.
/// Errors: NULL ctx, ctx step < 1.
void tgrt_adamw(tgrt_ctx* ctx, const char* loc, float* p, const float* g, float* m, float* v,
                int64_t n, float beta1, float beta2, float eps, float weight_decay,
                const float* clip) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "adamw(n)", n);
  if (ctx->step < 1)
    fail(loc, "adamw: optimizer step %lld must be >= 1 (set with tgrt_set_step)",
         (long long)ctx->step);
  if (n == 0) return;
  checkPtrs(loc, "adamw", {p, g, m, v});
  const double c = clip ? (double)clip[1] : 1.0;
  const double b1 = beta1, b2 = beta2, lr = ctx->lr, wd = weight_decay;
  const double bc1 = 1.0 - std::pow(b1, (double)ctx->step);
  const double bc2 = 1.0 - std::pow(b2, (double)ctx->step);
  for (int64_t i = 0; i < n; ++i) {
    const double gi = (double)g[i] * c;
    const double mi = b1 * m[i] + (1.0 - b1) * gi;
    const double vi = b2 * v[i] + (1.0 - b2) * gi * gi;
    m[i] = (float)mi;
    v[i] = (float)vi;
    const double pi = p[i];
    p[i] = (float)(pi - lr * ((mi / bc1) / (std::sqrt(vi / bc2) + eps) + wd * pi));
  }
}

/// Adds loss[0] to the context's loss sum and counts one report. Errors: NULL ctx or loss.
void tgrt_report_loss(tgrt_ctx* ctx, const char* loc, const float* loss) {
  checkCtx(ctx, loc);
  checkPtrs(loc, "report_loss", {loss});
  ctx->loss_sum += (double)loss[0];
  ctx->loss_count += 1;
}

} // extern "C"
