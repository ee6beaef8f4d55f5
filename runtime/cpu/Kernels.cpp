// Kernels.cpp — the CPU reference implementation of the "kernels" half of runtime/tgrt.h.
//
// This backend is the correctness oracle: straightforward loops, reductions accumulated in
// double, OpenBLAS cblas_sgemm for GEMM. Every kernel runs synchronously. Errors (bad sizes,
// ids/targets out of range, NULL pointers, an unknown dtype) print "tgrt: <loc>: <what>" to
// stderr and exit(1).
//
// Element types (enum tgrt_dtype). Floating tensors are f32, bf16 or f16 (bf16 / f16 stored
// as uint16_t bit patterns). Each kernel is written once over float values: a load widens an
// element to float (exact), a store rounds a float to the element type (round to nearest
// even, overflow to +-inf, NaN stays NaN; tgrt_bf16_from_float / tgrt_f16_from_float).
//   - f32: the loads and stores are plain float accesses, so the results are exactly those of
//     the former fp32-only reference (same loops, same double accumulation).
//   - bf16 / f16: every input is widened exactly, the f32 computation runs unchanged, and
//     every output is rounded once from the float value the f32 path would have stored, i.e.
//     low(x) == round_dt(f32 kernel on the widened x), bit for bit. Where the f32 path
//     computes in double, the value is rounded to float first and then to dt (the rounding
//     of the f32 result, by definition of this oracle).
//   - Intermediate values never pass through low-precision storage, except where the ABI
//     makes them an output: tgrt_matmul_bias_gelu rounds pre to dt and computes GELU from the
//     rounded pre (bit-equal to tgrt_matmul_bias then tgrt_gelu_fwd). Accumulations stay
//     wide: tgrt_embedding_bwd sums into a float buffer and rounds each element once.
//   - GEMM: A and B are widened to float buffers (C too when beta != 0), cblas_sgemm runs in
//     fp32, the bias is added in float, and C is rounded once.
//   - Attention: the low-precision versions widen q, k, v (and out, dout) to float, run the
//     f32 algorithm (so P is NOT rounded to dt before P V, unlike the CUDA tensor-core
//     kernels) and round out / dq / dk / dv; lse stays float32.
//   - Cross-entropy reads low-precision logits row by row (no float32 copy of the tensor).
//   - AdamW: p, g in p_dt, m, v in state_dt; the update is computed in double from the
//     widened values and each of p, m, v is rounded once (to float, then to its dtype).
//
// Loss scaling (fp16-mixed). The context holds the current loss scale S (1 by default,
// tgrt_set_loss_scale). tgrt_fill_loss_scaled seeds the backward with value * S. The
// gradients then carry the factor S: tgrt_clip_scale returns norm = sqrt(sum g^2) / S and the
// AdamW factor acc[1] = (1/S) * clip(norm), or NaN when norm is not finite; tgrt_adamw
// changes nothing when that factor is not finite (the driver skips the step and lowers S).
//
// Math of each kernel family (x, y row-major; sums over the named index):
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
//   GQA         the attention above with query head h reading kv head h / (heads / kv_heads);
//               dk, dv of a kv head = the float sum of its group's per-head dk, dv
//               (Ainslie et al. 2023; tgrt_attention_fwd / _bwd are the case kv_heads = heads)
//   RMSNorm     rstd = 1/sqrt(mean_d x^2 + eps), xhat = x rstd, y = xhat*gamma;
//               dgamma = sum_r dy*xhat, g = dy*gamma, dx = rstd (g - xhat mean_d(g xhat))
//               (Zhang & Sennrich 2019)
//   RoPE        pair (x_i, x_{i+hd/2}) of position p rotated by a = p f_i, f_i from
//               tgrt_rope_inv_freq: (x1 c - sign x2 s, x2 c + sign x1 s) (Su et al. 2021)
//   SwiGLU      y = silu(g) u, s = sigmoid(g); dg = dy u s (1 + g (1 - s)), du = dy silu(g)
//               (Shazeer 2020)
//   grad norm   acc0 += sum g^2; norm = sqrt(acc0) / S,
//               acc1 = (1/S) (norm > max ? max/(norm+1e-6) : 1), NaN if norm is not finite
//   AdamW       g' = g clip; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
//               p -= lr (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd p)
//               (Loshchilov & Hutter 2019)
#include "runtime/cpu/CpuContext.h"
#include "runtime/AdamwIslands.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
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

// ------------------------------------------------------------- element types --

/// Fails unless dt is a known enum tgrt_dtype value; `what` names the kernel (and, for
/// kernels with several dtypes, the tensor group).
void checkDtype(const char* loc, const char* what, int32_t dt) {
  if (tgrt_dtype_size(dt) == 0)
    fail(loc, "%s: unknown dtype %d (expected 0 = f32, 1 = bf16, 2 = f16)", what, (int)dt);
}

/// Bytes of one element of a checked dtype, as size_t (for memcpy / memset).
inline size_t elemBytes(int32_t dt) { return (size_t)tgrt_dtype_size(dt); }

/// Element access for one dtype: T is the stored type, ld widens element i of p to float
/// (exact), st rounds v to the dtype (nearest even) and stores it as element i of p.
struct F32Io {
  using T = float;
  static constexpr int32_t kDt = TGRT_F32;
  static float ld(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
  static void st(void* p, int64_t i, float v) { static_cast<float*>(p)[i] = v; }
};
struct Bf16Io {
  using T = uint16_t;
  static constexpr int32_t kDt = TGRT_BF16;
  static float ld(const void* p, int64_t i) {
    return tgrt_bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  static void st(void* p, int64_t i, float v) {
    static_cast<uint16_t*>(p)[i] = tgrt_bf16_from_float(v);
  }
};
struct F16Io {
  using T = uint16_t;
  static constexpr int32_t kDt = TGRT_F16;
  static float ld(const void* p, int64_t i) {
    return tgrt_f16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  static void st(void* p, int64_t i, float v) {
    static_cast<uint16_t*>(p)[i] = tgrt_f16_from_float(v);
  }
};

/// Element i of p (dt: f32, bf16 or f16, already checked) widened to float (exact).
inline float ldAs(int32_t dt, const void* p, int64_t i) {
  return dt == TGRT_BF16  ? Bf16Io::ld(p, i)
         : dt == TGRT_F16 ? F16Io::ld(p, i)
                          : F32Io::ld(p, i);
}

/// Calls fn(Io{}) with the element access struct of dt (F32Io, Bf16Io or F16Io); fails on an
/// unknown dtype. fn is a generic lambda, instantiated once per dtype.
template <class Fn>
void withDtype(const char* loc, const char* what, int32_t dt, Fn&& fn) {
  switch (dt) {
  case TGRT_F32:
    fn(F32Io{});
    return;
  case TGRT_BF16:
    fn(Bf16Io{});
    return;
  case TGRT_F16:
    fn(F16Io{});
    return;
  default:
    checkDtype(loc, what, dt); // fails
  }
}

/// dst[i] = widened src[offset + i] for i < n.
template <class Io>
void widenTo(const void* src, int64_t offset, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Io::ld(src, offset + i);
}

/// dst[offset + i] = src[i] rounded to the dtype, for i < n.
template <class Io>
void roundFrom(const float* src, int64_t n, void* dst, int64_t offset) {
  for (int64_t i = 0; i < n; ++i) Io::st(dst, offset + i, src[i]);
}

/// n elements of dt at p widened to a float vector.
std::vector<float> widen(const char* loc, const char* what, int32_t dt, const void* p,
                         int64_t n) {
  std::vector<float> f((size_t)n);
  withDtype(loc, what, dt, [&](auto io) { widenTo<decltype(io)>(p, 0, n, f.data()); });
  return f;
}

/// Stores f (all of it) into p as dt, each element rounded once.
void roundInto(const char* loc, const char* what, int32_t dt, const std::vector<float>& f,
               void* p) {
  withDtype(loc, what, dt,
            [&](auto io) { roundFrom<decltype(io)>(f.data(), (int64_t)f.size(), p, 0); });
}

// ------------------------------------------------------------------- helpers --

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

/// dotd over elements [ao, ao + n) of a and [bo, bo + n) of b, both of the dtype of Io.
template <class Io>
inline double dotIo(const void* a, int64_t ao, const void* b, int64_t bo, int64_t n) {
  double s = 0.0;
  for (int64_t x = 0; x < n; ++x) s += (double)Io::ld(a, ao + x) * (double)Io::ld(b, bo + x);
  return s;
}

/// Max and log-sum-exp (double) of the row of logits z[off, off + vocab) (dtype of Io).
template <class Io>
inline double rowLogSumExp(const void* z, int64_t off, int64_t vocab) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < vocab; ++c) mx = std::max(mx, Io::ld(z, off + c));
  double sum = 0.0;
  for (int64_t c = 0; c < vocab; ++c) sum += std::exp((double)Io::ld(z, off + c) - mx);
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

/// The float32 grouped-query attention forward (see tgrt_attention_gqa_fwd); arguments
/// already checked. q, out [batch * heads, t, hd] and k, v [batch * kvHeads, t, hd] are
/// contiguous; query head h of batch entry b reads kv head b * kvHeads + h / (heads /
/// kvHeads). kvHeads == heads is plain multi-head attention (tgrt_attention_fwd).
void attentionFwdF32(const float* q, const float* k, const float* v, float* out, float* lse,
                     int64_t batch, int64_t heads, int64_t kvHeads, int64_t t, int64_t hd,
                     int32_t causal, int64_t window, float scale) {
  const int64_t group = heads / kvHeads;
  std::vector<double> s((size_t)t), o((size_t)hd);
  for (int64_t h = 0; h < batch * heads; ++h) {
    const int64_t kvh = (h / heads) * kvHeads + (h % heads) / group;
    const float* qh = q + h * t * hd;
    const float* kh = k + kvh * t * hd;
    const float* vh = v + kvh * t * hd;
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

/// The float32 grouped-query attention backward (see tgrt_attention_gqa_bwd); arguments
/// already checked; layouts as attentionFwdF32 (dq like q, dk / dv like k / v). Each query
/// head's dk, dv contribution is accumulated in double and rounded to float (the
/// multi-head result of that head), then the group's contributions are summed in float in
/// head order (the first one assigned, so kvHeads == heads gives exactly the multi-head
/// values, signed zeros included).
void attentionBwdF32(const float* q, const float* k, const float* v, const float* out,
                     const float* lse, const float* dout, float* dq, float* dk, float* dv,
                     int64_t batch, int64_t heads, int64_t kvHeads, int64_t t, int64_t hd,
                     int32_t causal, int64_t window, float scale) {
  const int64_t group = heads / kvHeads;
  std::vector<double> dkAcc((size_t)(t * hd)), dvAcc((size_t)(t * hd)), dqRow((size_t)hd);
  for (int64_t h = 0; h < batch * heads; ++h) {
    const int64_t g = (h % heads) % group; // index within the group
    const int64_t kvOff = ((h / heads) * kvHeads + (h % heads) / group) * t * hd;
    const int64_t off = h * t * hd;
    const float *qh = q + off, *kh = k + kvOff, *vh = v + kvOff, *oh = out + off,
                *doh = dout + off;
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
      const float dkx = (float)(scale * dkAcc[x]), dvx = (float)dvAcc[x];
      if (g == 0) {
        dk[kvOff + x] = dkx;
        dv[kvOff + x] = dvx;
      } else {
        dk[kvOff + x] += dkx;
        dv[kvOff + x] += dvx;
      }
    }
  }
}

/// ids[i] (a token id of an embedding call), failing with the call's location when it is
/// outside [0, vocab).
int64_t tokenId(const char* loc, const int32_t* ids, int64_t i, int64_t vocab) {
  const int64_t id = ids[i];
  if (id < 0 || id >= vocab)
    fail(loc, "embedding id %lld at position %lld is outside [0, %lld)", (long long)id,
         (long long)i, (long long)vocab);
  return id;
}

} // namespace

extern "C" {

// ----------------------------------------------------------------------- embedding --

/// out[i,:] = table[ids[i],:] (a copy of dt elements, exact for every dtype).
/// table [vocab, d], ids [n_tokens] i32, out [n_tokens, d]; table, out: dt.
/// Errors: id outside [0, vocab), negative sizes, unknown dtype.
void tgrt_embedding_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* table,
                        const int32_t* ids, void* out, int64_t n_tokens, int64_t d,
                        int64_t vocab) {
  (void)ctx;
  checkNonNegative(loc, "embedding_fwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  checkDtype(loc, "embedding_fwd", dt);
  if (n_tokens == 0 || d == 0) return;
  checkPtrs(loc, "embedding_fwd", {table, ids, out});
  const size_t rowBytes = (size_t)d * elemBytes(dt);
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int64_t id = tokenId(loc, ids, i, vocab);
    std::memcpy(static_cast<char*>(out) + (size_t)i * rowBytes,
                static_cast<const char*>(table) + (size_t)id * rowBytes, rowBytes);
  }
}

/// out[i,j] = tgrt_split_join(hi[ids[i],j], lo[ids[i],j]): the f32 rows of a table with split
/// master values (tgrt_param.split). hi, lo [vocab, d] 16-bit; out [n_tokens, d] f32.
/// Errors: id outside [0, vocab), negative sizes, a NULL pointer.
void tgrt_embedding_fwd_split(tgrt_ctx* ctx, const char* loc, const void* hi, const void* lo,
                              const int32_t* ids, void* out, int64_t n_tokens, int64_t d,
                              int64_t vocab) {
  (void)ctx;
  checkNonNegative(loc, "embedding_fwd_split(n_tokens, d, vocab)", n_tokens, d, vocab);
  if (n_tokens == 0 || d == 0) return;
  checkPtrs(loc, "embedding_fwd_split", {hi, lo, ids, out});
  const uint16_t* h = static_cast<const uint16_t*>(hi);
  const uint16_t* l = static_cast<const uint16_t*>(lo);
  float* o = static_cast<float*>(out);
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int64_t id = tokenId(loc, ids, i, vocab);
    for (int64_t j = 0; j < d; ++j) o[i * d + j] = tgrt_split_join(h[id * d + j], l[id * d + j]);
  }
}

/// dtable = 0; dtable[ids[i],:] += dout[i,:] in increasing i (deterministic), float32 sums;
/// bf16 / f16: the sums run in a float buffer and each dtable element is rounded once.
/// dout [n_tokens, d], dtable [vocab, d] (both dt). Errors: id outside [0, vocab), unknown
/// dtype.
void tgrt_embedding_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const int32_t* ids,
                        const void* dout, void* dtable, int64_t n_tokens, int64_t d,
                        int64_t vocab) {
  (void)ctx;
  checkNonNegative(loc, "embedding_bwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  checkDtype(loc, "embedding_bwd", dt);
  // f32 sums in place in dtable; bf16 / f16 in a float buffer rounded at the end.
  const bool lowp = dt != TGRT_F32;
  std::vector<float> buf;
  float* acc = static_cast<float*>(dtable);
  if (vocab * d > 0) {
    checkPtrs(loc, "embedding_bwd", {dtable});
    if (lowp) {
      buf.assign((size_t)(vocab * d), 0.0f);
      acc = buf.data();
    } else {
      std::memset(acc, 0, (size_t)(vocab * d) * sizeof(float));
    }
  }
  if (n_tokens > 0 && d > 0) {
    checkPtrs(loc, "embedding_bwd", {ids, dout});
    withDtype(loc, "embedding_bwd", dt, [&](auto io) {
      using Io = decltype(io);
      for (int64_t i = 0; i < n_tokens; ++i) {
        const int64_t id = tokenId(loc, ids, i, vocab);
        float* row = acc + id * d;
        for (int64_t c = 0; c < d; ++c) row[c] += Io::ld(dout, i * d + c);
      }
    });
  }
  if (lowp && vocab * d > 0) roundInto(loc, "embedding_bwd", dt, buf, dtable);
}

/// tgrt_embedding_bwd added into dtable (tgrt_kernels.def): each touched row's float32 sums
/// (token order) rounded to dt, then added to the row and rounded again, as
/// tgrt_embedding_bwd into a scratch table + tgrt_accumulate. Rows no id names are not read.
/// Errors: id outside [0, vocab), unknown dtype.
void tgrt_embedding_bwd_acc(tgrt_ctx* ctx, const char* loc, int32_t dt, const int32_t* ids,
                            const void* dout, void* dtable, int64_t n_tokens, int64_t d,
                            int64_t vocab) {
  (void)ctx;
  checkNonNegative(loc, "embedding_bwd_acc(n_tokens, d, vocab)", n_tokens, d, vocab);
  checkDtype(loc, "embedding_bwd_acc", dt);
  if (n_tokens == 0 || d == 0) return;
  checkPtrs(loc, "embedding_bwd_acc", {ids, dout, dtable});
  withDtype(loc, "embedding_bwd_acc", dt, [&](auto io) {
    using Io = decltype(io);
    // The touched ids in first-seen order, each with its float32 row of sums.
    std::vector<int64_t> slot((size_t)vocab, -1), order;
    std::vector<float> sums;
    for (int64_t i = 0; i < n_tokens; ++i) {
      const int64_t id = tokenId(loc, ids, i, vocab);
      if (slot[(size_t)id] < 0) {
        slot[(size_t)id] = (int64_t)order.size();
        order.push_back(id);
        sums.resize(sums.size() + (size_t)d, 0.0f);
      }
      float* row = sums.data() + slot[(size_t)id] * d;
      for (int64_t c = 0; c < d; ++c) row[c] += Io::ld(dout, i * d + c);
    }
    alignas(4) unsigned char cell[4]; // a sum rounded to dt: the scratch table's element
    for (size_t k = 0; k < order.size(); ++k)
      for (int64_t c = 0; c < d; ++c) {
        Io::st(cell, 0, sums[k * (size_t)d + (size_t)c]);
        const int64_t e = order[k] * d + c;
        Io::st(dtable, e, Io::ld(dtable, e) + Io::ld(cell, 0));
      }
  });
}

/// out[b,s,:] = x[b,s,:] + wpe[s,:] for s < t (float add, rounded to dt).
/// x, out [batch, t, d]; wpe [>= t, d]; all dt. out may alias x.
void tgrt_positional_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                         const void* wpe, void* out, int64_t batch, int64_t t, int64_t d) {
  (void)ctx;
  checkNonNegative(loc, "positional_fwd(batch, t, d)", batch, t, d);
  checkDtype(loc, "positional_fwd", dt);
  if (batch * t * d == 0) return;
  checkPtrs(loc, "positional_fwd", {x, wpe, out});
  withDtype(loc, "positional_fwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < t; ++s) {
        const int64_t base = (b * t + s) * d;
        for (int64_t c = 0; c < d; ++c)
          Io::st(out, base + c, Io::ld(x, base + c) + Io::ld(wpe, s * d + c));
      }
  });
}

/// dwpe[s,:] = sum_b dout[b,s,:] for s < t (double accumulation), 0 for t <= s < context.
/// dout [batch, t, d], dwpe [context, d] (overwritten); both dt. Errors: context < t,
/// unknown dtype.
void tgrt_positional_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* dout,
                         void* dwpe, int64_t batch, int64_t t, int64_t d, int64_t context) {
  (void)ctx;
  checkNonNegative(loc, "positional_bwd(batch, t, d, context)", batch, t, d, context);
  checkDtype(loc, "positional_bwd", dt);
  if (context < t)
    fail(loc, "positional_bwd: context %lld < t %lld", (long long)context, (long long)t);
  if (context * d == 0) return;
  checkPtrs(loc, "positional_bwd", {dwpe});
  if (batch > 0 && t > 0) checkPtrs(loc, "positional_bwd", {dout});
  withDtype(loc, "positional_bwd", dt, [&](auto io) {
    using Io = decltype(io);
    std::vector<double> acc((size_t)d);
    for (int64_t s = 0; s < t; ++s) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t row = (b * t + s) * d;
        for (int64_t c = 0; c < d; ++c) acc[c] += Io::ld(dout, row + c);
      }
      for (int64_t c = 0; c < d; ++c) Io::st(dwpe, s * d + c, (float)acc[c]);
    }
  });
  std::memset(static_cast<char*>(dwpe) + (size_t)(t * d) * elemBytes(dt), 0,
              (size_t)((context - t) * d) * elemBytes(dt));
}

// ---------------------------------------------------------------------- elementwise --

/// out = a + b over n elements (float add, rounded to dt); out may alias a or b.
void tgrt_add(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b,
              void* out, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "add(n)", n);
  checkDtype(loc, "add", dt);
  if (n == 0) return;
  checkPtrs(loc, "add", {a, b, out});
  withDtype(loc, "add", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) Io::st(out, i, Io::ld(a, i) + Io::ld(b, i));
  });
}

/// out = a + b in float, rounded to out_dt; low = out converted to low_dt when low != NULL
/// (tgrt.h). Errors: negative n, unknown dtypes, NULL pointers.
void tgrt_add_mixed(tgrt_ctx* ctx, const char* loc, int32_t out_dt, const void* a, int32_t b_dt,
                    const void* b, void* out, int32_t low_dt, void* low, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "add_mixed(n)", n);
  checkDtype(loc, "add_mixed (a, out)", out_dt);
  checkDtype(loc, "add_mixed (b)", b_dt);
  if (low) checkDtype(loc, "add_mixed (low)", low_dt);
  if (n == 0) return;
  checkPtrs(loc, "add_mixed", {a, b, out});
  withDtype(loc, "add_mixed", out_dt, [&](auto io) {
    using Io = decltype(io);
    withDtype(loc, "add_mixed", b_dt, [&](auto ib) {
      using Ib = decltype(ib);
      if (!low) {
        for (int64_t i = 0; i < n; ++i) Io::st(out, i, Io::ld(a, i) + Ib::ld(b, i));
        return;
      }
      withDtype(loc, "add_mixed", low_dt, [&](auto il) {
        using Il = decltype(il);
        for (int64_t i = 0; i < n; ++i) {
          Io::st(out, i, Io::ld(a, i) + Ib::ld(b, i));
          Il::st(low, i, Io::ld(out, i));
        }
      });
    });
  });
}

/// dst += src over n elements (float add, rounded to dt).
void tgrt_accumulate(tgrt_ctx* ctx, const char* loc, int32_t dt, void* dst, const void* src,
                     int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "accumulate(n)", n);
  checkDtype(loc, "accumulate", dt);
  if (n == 0) return;
  checkPtrs(loc, "accumulate", {dst, src});
  withDtype(loc, "accumulate", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) Io::st(dst, i, Io::ld(dst, i) + Io::ld(src, i));
  });
}

/// out[i] = value rounded to dt, for i < n.
void tgrt_fill(tgrt_ctx* ctx, const char* loc, int32_t dt, void* out, int64_t n, float value) {
  (void)ctx;
  checkNonNegative(loc, "fill(n)", n);
  checkDtype(loc, "fill", dt);
  if (n == 0) return;
  checkPtrs(loc, "fill", {out});
  withDtype(loc, "fill", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) Io::st(out, i, value);
  });
}

/// out[i] = value * S (float product, rounded to dt) with S the context's loss scale
/// (tgrt_set_loss_scale, 1 by default): the seed of a loss-scaled backward.
/// Errors: NULL ctx, negative n, unknown dtype.
void tgrt_fill_loss_scaled(tgrt_ctx* ctx, const char* loc, int32_t dt, void* out, int64_t n,
                           float value) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "fill_loss_scaled(n)", n);
  checkDtype(loc, "fill_loss_scaled", dt);
  if (n == 0) return;
  checkPtrs(loc, "fill_loss_scaled", {out});
  const float scaled = value * ctx->loss_scale;
  withDtype(loc, "fill_loss_scaled", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) Io::st(out, i, scaled);
  });
}

/// dst[i] = src[i] converted from src_dt to dst_dt for i < n: widening is exact, narrowing
/// rounds to nearest even (overflow to +-inf, NaN stays NaN); src_dt == dst_dt copies the
/// bits. dst may equal src only when the dtypes are equal. Errors: unknown dtype.
void tgrt_cast(tgrt_ctx* ctx, const char* loc, int32_t src_dt, const void* src, int32_t dst_dt,
               void* dst, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "cast(n)", n);
  checkDtype(loc, "cast (src_dt)", src_dt);
  checkDtype(loc, "cast (dst_dt)", dst_dt);
  if (n == 0) return;
  checkPtrs(loc, "cast", {src, dst});
  if (src_dt == dst_dt) {
    if (src != dst) std::memmove(dst, src, (size_t)n * elemBytes(src_dt));
    return;
  }
  withDtype(loc, "cast (src_dt)", src_dt, [&](auto sio) {
    withDtype(loc, "cast (dst_dt)", dst_dt, [&](auto dio) {
      using S = decltype(sio);
      using D = decltype(dio);
      for (int64_t i = 0; i < n; ++i) D::st(dst, i, S::ld(src, i));
    });
  });
}

/// Sets `bytes` bytes at p to zero.
void tgrt_zero(tgrt_ctx* ctx, const char* loc, void* p, int64_t bytes) {
  (void)ctx;
  checkNonNegative(loc, "zero(bytes)", bytes);
  if (bytes == 0) return;
  checkPtrs(loc, "zero", {p});
  std::memset(p, 0, (size_t)bytes);
}

/// dst[r*dst_ld + c] = src[r*src_ld + c] for r < rows, c < cols (elements of dt, copied
/// bit for bit). Errors: src_ld or dst_ld < cols, unknown dtype.
void tgrt_copy2d(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* src, int64_t src_ld,
                 void* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  (void)ctx;
  checkNonNegative(loc, "copy2d(src_ld, dst_ld, rows, cols)", src_ld, dst_ld, rows, cols);
  checkDtype(loc, "copy2d", dt);
  if (rows == 0 || cols == 0) return;
  if (src_ld < cols || dst_ld < cols)
    fail(loc, "copy2d: leading dimensions (src %lld, dst %lld) smaller than cols %lld",
         (long long)src_ld, (long long)dst_ld, (long long)cols);
  checkPtrs(loc, "copy2d", {src, dst});
  const size_t es = elemBytes(dt);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(dst) + (size_t)(r * dst_ld) * es,
                static_cast<const char*>(src) + (size_t)(r * src_ld) * es, (size_t)cols * es);
}

/// y = permute(x, p): x [d0,d1,d2,d3], y [d_p0,d_p1,d_p2,d_p3] (both dt, copied bit for bit),
/// y[i_p0,i_p1,i_p2,i_p3] = x[i0,i1,i2,i3]. Errors: p not a permutation of {0,1,2,3},
/// unknown dtype.
void tgrt_transpose4(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                     int64_t d0, int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1,
                     int32_t p2, int32_t p3) {
  (void)ctx;
  checkNonNegative(loc, "transpose4(d0, d1, d2, d3)", d0, d1, d2, d3);
  checkDtype(loc, "transpose4", dt);
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
  withDtype(loc, "transpose4", dt, [&](auto io) {
    using T = typename decltype(io)::T;
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    int64_t src = 0;
    for (int64_t i0 = 0; i0 < d0; ++i0)
      for (int64_t i1 = 0; i1 < d1; ++i1)
        for (int64_t i2 = 0; i2 < d2; ++i2) {
          const int64_t base = i0 * sx[0] + i1 * sx[1] + i2 * sx[2];
          for (int64_t i3 = 0; i3 < d3; ++i3) ys[base + i3 * sx[3]] = xs[src++];
        }
  });
}

// ----------------------------------------------------------------------- layer norm --

/// Layer norm (Ba et al. 2016) over the last dim: x [rows, d] (x_dt), gamma, beta [d] (p_dt),
/// y [rows, d] (y_dt), mean, rstd [rows] float32 (outputs). Statistics in double, biased
/// variance, two passes; each y element rounded once to y_dt. Errors: d == 0 with rows > 0,
/// unknown dtype.
namespace {
/// tgrt_layer_norm_fwd (ldy == d) and tgrt_layer_norm_fwd_ones (ldy == d + TGRT_ONES_COLUMNS:
/// row r of y starts at r * ldy, its columns d.. are 1, 0, ..., 0).
void layerNormFwdRows(const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                      const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean,
                      float* rstd, int64_t rows, int64_t d, float eps, int64_t ldy) {
  checkNonNegative(loc, "layer_norm_fwd(rows, d)", rows, d);
  checkDtype(loc, "layer_norm_fwd (x_dt)", x_dt);
  checkDtype(loc, "layer_norm_fwd (p_dt)", p_dt);
  checkDtype(loc, "layer_norm_fwd (y_dt)", y_dt);
  if (rows == 0) return;
  if (d == 0) fail(loc, "layer_norm_fwd: d must be > 0");
  checkPtrs(loc, "layer_norm_fwd", {x, gamma, beta, y, mean, rstd});
  withDtype(loc, "layer_norm_fwd (x_dt)", x_dt, [&](auto xio) {
    withDtype(loc, "layer_norm_fwd (p_dt)", p_dt, [&](auto pio) {
      withDtype(loc, "layer_norm_fwd (y_dt)", y_dt, [&](auto yio) {
        using X = decltype(xio);
        using P = decltype(pio);
        using Y = decltype(yio);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t o = r * d;
          double mu = 0.0;
          for (int64_t c = 0; c < d; ++c) mu += X::ld(x, o + c);
          mu /= (double)d;
          double var = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            const double dx = X::ld(x, o + c) - mu;
            var += dx * dx;
          }
          var /= (double)d;
          const double rs = 1.0 / std::sqrt(var + (double)eps);
          for (int64_t c = 0; c < d; ++c)
            Y::st(y, r * ldy + c,
                  (float)((X::ld(x, o + c) - mu) * rs * P::ld(gamma, c) + P::ld(beta, c)));
          for (int64_t c = d; c < ldy; ++c) Y::st(y, r * ldy + c, c == d ? 1.0f : 0.0f);
          mean[r] = (float)mu;
          rstd[r] = (float)rs;
        }
      });
    });
  });
}
} // namespace

void tgrt_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x,
                         int32_t p_dt, const void* gamma, const void* beta, int32_t y_dt,
                         void* y, float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  (void)ctx;
  layerNormFwdRows(loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps, d);
}

/// tgrt_layer_norm_fwd into y [rows, d + TGRT_ONES_COLUMNS] whose last columns are 1, 0, ...
/// (the "bias rows" form, tgrt.h). Errors: as tgrt_layer_norm_fwd.
void tgrt_layer_norm_fwd_ones(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x,
                              int32_t p_dt, const void* gamma, const void* beta, int32_t y_dt,
                              void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                              float eps) {
  (void)ctx;
  layerNormFwdRows(loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps,
                   d + TGRT_ONES_COLUMNS);
}

namespace {
/// tgrt_add_layer_norm_fwd (ldy == d) and _ones (ldy == d + TGRT_ONES_COLUMNS): the add,
/// then the layer norm's rows.
void addLayerNormFwdRows(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt,
                         const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta,
                         int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                         float eps, int64_t ldy) {
  checkNonNegative(loc, "add_layer_norm_fwd(rows, d)", rows, d);
  tgrt_add_mixed(ctx, loc, x_dt, a, b_dt, b, x, TGRT_F32, nullptr, rows * d);
  layerNormFwdRows(loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps, ldy);
}
} // namespace

/// x = a + b (tgrt_add_mixed), then tgrt_layer_norm_fwd of x (tgrt.h): on the CPU the two
/// calls in turn. Errors: those of the two calls.
void tgrt_add_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* a,
                             int32_t b_dt, const void* b, void* x, int32_t p_dt,
                             const void* gamma, const void* beta, int32_t y_dt, void* y,
                             float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  addLayerNormFwdRows(ctx, loc, x_dt, a, b_dt, b, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows,
                      d, eps, d);
}

/// tgrt_add_layer_norm_fwd into y [rows, d + TGRT_ONES_COLUMNS] (tgrt_layer_norm_fwd_ones'
/// rows): on the CPU the two calls in turn. Errors: those of the two calls.
void tgrt_add_layer_norm_fwd_ones(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* a,
                                  int32_t b_dt, const void* b, void* x, int32_t p_dt,
                                  const void* gamma, const void* beta, int32_t y_dt, void* y,
                                  float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  addLayerNormFwdRows(ctx, loc, x_dt, a, b_dt, b, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows,
                      d, eps, d + TGRT_ONES_COLUMNS);
}

/// Layer norm backward: dy [rows, d] (y_dt); x, dx [rows, d] (x_dt); gamma, dgamma, dbeta [d]
/// (p_dt); mean, rstd [rows] float32 from the forward. Sums in double; dgamma and dbeta are
/// overwritten (not accumulated). Errors: unknown dtype.
void tgrt_layer_norm_bwd(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                         int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                         const float* mean, const float* rstd, void* dx, void* dgamma,
                         void* dbeta, int64_t rows, int64_t d) {
  (void)ctx;
  checkNonNegative(loc, "layer_norm_bwd(rows, d)", rows, d);
  checkDtype(loc, "layer_norm_bwd (y_dt)", y_dt);
  checkDtype(loc, "layer_norm_bwd (x_dt)", x_dt);
  checkDtype(loc, "layer_norm_bwd (p_dt)", p_dt);
  if (d == 0) return;
  checkPtrs(loc, "layer_norm_bwd", {dgamma, dbeta});
  if (rows > 0) checkPtrs(loc, "layer_norm_bwd", {dy, x, gamma, mean, rstd, dx});
  withDtype(loc, "layer_norm_bwd (y_dt)", y_dt, [&](auto yio) {
    withDtype(loc, "layer_norm_bwd (x_dt)", x_dt, [&](auto xio) {
      withDtype(loc, "layer_norm_bwd (p_dt)", p_dt, [&](auto pio) {
        using Y = decltype(yio);
        using X = decltype(xio);
        using P = decltype(pio);
        std::vector<double> dg((size_t)d, 0.0), db((size_t)d, 0.0), xhat((size_t)d),
            g((size_t)d);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t o = r * d;
          const double mu = mean[r], rs = rstd[r];
          double meanG = 0.0, meanGX = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            const float dyc = Y::ld(dy, o + c);
            xhat[c] = (X::ld(x, o + c) - mu) * rs;
            g[c] = (double)dyc * P::ld(gamma, c);
            meanG += g[c];
            meanGX += g[c] * xhat[c];
            db[c] += dyc;
            dg[c] += dyc * xhat[c];
          }
          meanG /= (double)d;
          meanGX /= (double)d;
          for (int64_t c = 0; c < d; ++c)
            X::st(dx, o + c, (float)(rs * (g[c] - meanG - xhat[c] * meanGX)));
        }
        for (int64_t c = 0; c < d; ++c) {
          P::st(dgamma, c, (float)dg[c]);
          P::st(dbeta, c, (float)db[c]);
        }
      });
    });
  });
}

/// tgrt_layer_norm_bwd into a scratch dx, then tgrt_add_mixed into dres (and low): the
/// unfused chain, so the result equals the separate calls bit for bit (tgrt.h).
void tgrt_layer_norm_bwd_acc(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                             int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                             const float* mean, const float* rstd, void* dres, int32_t low_dt,
                             void* low, void* dgamma, void* dbeta, int64_t rows, int64_t d) {
  checkNonNegative(loc, "layer_norm_bwd_acc(rows, d)", rows, d);
  checkDtype(loc, "layer_norm_bwd_acc (x, dres)", x_dt);
  std::vector<unsigned char> dx((size_t)(rows * d) * elemBytes(x_dt) + 1);
  tgrt_layer_norm_bwd(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dx.data(), dgamma,
                      dbeta, rows, d);
  tgrt_add_mixed(ctx, loc, x_dt, dres, x_dt, dx.data(), dres, low_dt, low, rows * d);
}

/// tgrt_layer_norm_bwd_acc into scratch dgamma / dbeta, then tgrt_accumulate of each into
/// the slots: the unfused chain, bit for bit (tgrt.h).
void tgrt_layer_norm_bwd_acc_slots(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                                   int32_t x_dt, const void* x, int32_t p_dt,
                                   const void* gamma, const float* mean, const float* rstd,
                                   void* dres, int32_t low_dt, void* low, void* dgamma,
                                   void* dbeta, int64_t rows, int64_t d) {
  checkNonNegative(loc, "layer_norm_bwd_acc_slots(rows, d)", rows, d);
  checkDtype(loc, "layer_norm_bwd_acc_slots (gamma, dgamma, dbeta)", p_dt);
  std::vector<unsigned char> dg((size_t)d * elemBytes(p_dt) + 1), db(dg.size());
  tgrt_layer_norm_bwd_acc(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt,
                          low, dg.data(), db.data(), rows, d);
  tgrt_accumulate(ctx, loc, p_dt, dgamma, dg.data(), d);
  tgrt_accumulate(ctx, loc, p_dt, dbeta, db.data(), d);
}

/// tgrt_layer_norm_bwd_acc, then the bias gradient of the residual gradient (tgrt.h):
/// dbias zeroed and tgrt_bias_grad_acc of low (or, without low, of the updated dres) into it.
void tgrt_layer_norm_bwd_acc_bgrad(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                                   int32_t x_dt, const void* x, int32_t p_dt,
                                   const void* gamma, const float* mean, const float* rstd,
                                   void* dres, int32_t low_dt, void* low, void* dgamma,
                                   void* dbeta, int32_t db_dt, void* dbias, int64_t rows,
                                   int64_t d) {
  checkNonNegative(loc, "layer_norm_bwd_acc_bgrad(rows, d)", rows, d);
  checkDtype(loc, "layer_norm_bwd_acc_bgrad (dbias)", db_dt);
  tgrt_layer_norm_bwd_acc(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt,
                          low, dgamma, dbeta, rows, d);
  if (d == 0) return;
  checkPtrs(loc, "layer_norm_bwd_acc_bgrad", {dbias});
  std::memset(dbias, 0, (size_t)(d * tgrt_dtype_size(db_dt)));
  tgrt_bias_grad_acc(ctx, loc, low ? low_dt : x_dt, low ? low : dres, db_dt, dbias, rows, d);
}

// --------------------------------------------------------------------------- matmul --

/// Batched row-major GEMM via cblas_sgemm, one call per batch entry:
///   C_b = alpha op(A_b) op(B_b) + beta C_b, C_b [m, n], op(A_b) [m, k], op(B_b) [k, n];
/// A_b stored [k, m] when trans_a, B_b stored [n, k] when trans_b; X_b = x + b*stride_x
/// (elements, 0 broadcasts); a, b, c: dt. beta == 0: C is never read (NaN-safe), per the
/// BLAS contract. bf16 / f16: A_b, B_b (and C_b when beta != 0) are widened to float
/// buffers, the fp32 GEMM runs on them and C_b is rounded once.
/// Errors: negative sizes or strides, a dimension above INT_MAX, unknown dtype.
void tgrt_matmul(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                 void* c, int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                 int32_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 float alpha, float beta) {
  (void)ctx;
  checkNonNegative(loc, "matmul(batch, m, n, k)", batch, m, n, k);
  checkNonNegative(loc, "matmul(stride_a, stride_b, stride_c)", stride_a, stride_b, stride_c);
  checkDtype(loc, "matmul", dt);
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
  withDtype(loc, "matmul", dt, [&](auto io) {
    using Io = decltype(io);
    // Float copies of the current A_b, B_b and C_b (low precision only); a broadcast
    // operand (stride 0) is widened once.
    std::vector<float> af, bf, cf;
    if (Io::kDt != TGRT_F32 && k > 0) {
      af.resize((size_t)(m * k));
      bf.resize((size_t)(k * n));
      cf.resize((size_t)(m * n));
    }
    for (int64_t bi = 0; bi < batch; ++bi) {
      const int64_t co = bi * stride_c;
      if (k == 0) { // alpha * (empty product) = 0, so C = beta C
        if (beta == 0.0f)
          std::memset(static_cast<char*>(c) + (size_t)co * elemBytes(dt), 0,
                      (size_t)(m * n) * elemBytes(dt));
        else if (beta != 1.0f)
          for (int64_t i = 0; i < m * n; ++i) Io::st(c, co + i, Io::ld(c, co + i) * beta);
        continue;
      }
      if constexpr (Io::kDt == TGRT_F32) {
        // BLAS contract (and OpenBLAS): with beta == 0, C is not read on input.
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                    static_cast<const float*>(a) + bi * stride_a, lda,
                    static_cast<const float*>(b) + bi * stride_b, ldb, beta,
                    static_cast<float*>(c) + co, ldc);
      } else {
        if (bi == 0 || stride_a != 0) widenTo<Io>(a, bi * stride_a, m * k, af.data());
        if (bi == 0 || stride_b != 0) widenTo<Io>(b, bi * stride_b, k * n, bf.data());
        if (beta != 0.0f) widenTo<Io>(c, co, m * n, cf.data());
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                    af.data(), lda, bf.data(), ldb, beta, cf.data(), ldc);
        roundFrom<Io>(cf.data(), m * n, c, co);
      }
    }
  });
}

/// C += alpha op(A) op(B) with A, B in ab_dt and C in c_dt (tgrt.h): the float32 GEMM of the
/// widened A, B with beta 1 onto C (widened when c_dt is not f32, then rounded once).
/// Errors: as tgrt_matmul.
void tgrt_matmul_acc(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                     const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k,
                     int32_t trans_a, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_acc(m, n, k)", m, n, k);
  checkDtype(loc, "matmul_acc (a, b)", ab_dt);
  checkDtype(loc, "matmul_acc (c)", c_dt);
  if (m * n == 0 || k == 0) return; // C += 0
  checkPtrs(loc, "matmul_acc", {a, b, c});
  std::vector<float> af, bf;
  const void* ap = a;
  const void* bp = b;
  if (ab_dt != TGRT_F32) {
    af = widen(loc, "matmul_acc", ab_dt, a, m * k);
    bf = widen(loc, "matmul_acc", ab_dt, b, k * n);
    ap = af.data();
    bp = bf.data();
  }
  if (c_dt == TGRT_F32) {
    tgrt_matmul(ctx, loc, TGRT_F32, ap, bp, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha,
                1.0f);
    return;
  }
  std::vector<float> cf = widen(loc, "matmul_acc", c_dt, c, m * n);
  tgrt_matmul(ctx, loc, TGRT_F32, ap, bp, cf.data(), 1, m, n, k, trans_a, trans_b, 0, 0, 0,
              alpha, 1.0f);
  roundInto(loc, "matmul_acc", c_dt, cf, c);
}

/// A weight gradient written into its slot and the bias gradient from its B (tgrt.h): C
/// zeroed then tgrt_matmul_acc (the product rounded once to c_dt); dbias zeroed then
/// tgrt_bias_grad_acc of B's k rows. Errors: as tgrt_matmul_acc; dbias with trans_b = 1.
void tgrt_matmul_wgrad(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                       const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k,
                       int32_t trans_a, int32_t trans_b, float alpha, void* dbias) {
  checkNonNegative(loc, "matmul_wgrad(m, n, k)", m, n, k);
  checkDtype(loc, "matmul_wgrad (a, b)", ab_dt);
  checkDtype(loc, "matmul_wgrad (c, dbias)", c_dt);
  if (dbias && trans_b)
    fail(loc, "matmul_wgrad: a bias gradient needs trans_b = 0 (B stored [k, n]), got 1");
  const int64_t ces = tgrt_dtype_size(c_dt);
  if (m * n > 0) {
    checkPtrs(loc, "matmul_wgrad", {c});
    std::memset(c, 0, (size_t)(m * n * ces));
    tgrt_matmul_acc(ctx, loc, ab_dt, a, b, c_dt, c, m, n, k, trans_a, trans_b, alpha);
  }
  if (!dbias || n == 0) return;
  std::memset(dbias, 0, (size_t)(n * ces));
  tgrt_bias_grad_acc(ctx, loc, ab_dt, b, c_dt, dbias, k, n);
}

/// The MLP backward through the GELU (tgrt.h): the unfused chain tgrt_matmul (into dx) ->
/// tgrt_gelu_bwd (in place) -> tgrt_bias_grad, so the CPU result equals the separate calls.
void tgrt_matmul_dgelu_bgrad(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a,
                             const void* b, const void* pre, void* dx, void* dbias, int64_t m,
                             int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
                             float alpha) {
  tgrt_matmul(ctx, loc, dt, a, b, dx, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
  tgrt_gelu_bwd(ctx, loc, dt, pre, dx, dx, m * n);
  if (dbias) tgrt_bias_grad(ctx, loc, dt, dx, dbias, m, n); // NULL: no bias gradient
}

/// out = res + (alpha op(A) op(B) + bias) (tgrt.h): the float32 GEMM of the widened A, B,
/// then, per element, (product + bias) + res in float, rounded once to c_dt. out may alias
/// res. Errors: as tgrt_matmul; NULL bias, res or out.
void tgrt_matmul_bias_residual(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                               const void* b, int32_t c_dt, const void* bias, const void* res,
                               void* out, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                               int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_bias_residual(m, n, k)", m, n, k);
  checkDtype(loc, "matmul_bias_residual (a, b)", ab_dt);
  checkDtype(loc, "matmul_bias_residual (bias, res, out)", c_dt);
  if (m * n == 0) return;
  checkPtrs(loc, "matmul_bias_residual", {res, out});
  if (k > 0) checkPtrs(loc, "matmul_bias_residual", {a, b});
  // bias NULL: no bias (0 added: bit-equal to the formula below with a zero bias).
  const std::vector<float> af = widen(loc, "matmul_bias_residual", ab_dt, a, m * k),
                           bf = widen(loc, "matmul_bias_residual", ab_dt, b, k * n),
                           biasf = bias ? widen(loc, "matmul_bias_residual", c_dt, bias, n)
                                        : std::vector<float>((size_t)n, 0.0f),
                           resf = widen(loc, "matmul_bias_residual", c_dt, res, m * n);
  std::vector<float> cf((size_t)(m * n));
  tgrt_matmul(ctx, loc, TGRT_F32, af.data(), bf.data(), cf.data(), 1, m, n, k, trans_a, trans_b,
              0, 0, 0, alpha, 0.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t col = 0; col < n; ++col)
      cf[r * n + col] = (cf[r * n + col] + biasf[col]) + resf[r * n + col];
  roundInto(loc, "matmul_bias_residual", c_dt, cf, out);
}

/// Linear layer: C = alpha op(A) op(B) + bias[:] on every row (batch 1; shapes as
/// tgrt_matmul; a, b, bias, c: dt). f32: the GEMM (beta 0) then the row-broadcast bias in
/// place on C. bf16 / f16: the fp32 GEMM of the widened A, B into a float buffer, the
/// widened bias added in float, C rounded once. C must not alias A or B.
/// Errors: as tgrt_matmul; NULL bias.
void tgrt_matmul_bias(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                      const void* bias, void* c, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_bias(m, n, k)", m, n, k);
  checkDtype(loc, "matmul_bias", dt);
  if (dt == TGRT_F32) {
    tgrt_matmul(ctx, loc, dt, a, b, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
    tgrt_bias_add(ctx, loc, dt, c, bias, c, m, n);
    return;
  }
  if (m * n == 0) return;
  checkPtrs(loc, "matmul_bias", {bias, c});
  if (k > 0) checkPtrs(loc, "matmul_bias", {a, b});
  const std::vector<float> af = widen(loc, "matmul_bias", dt, a, m * k),
                           bf = widen(loc, "matmul_bias", dt, b, k * n),
                           biasf = widen(loc, "matmul_bias", dt, bias, n);
  std::vector<float> cf((size_t)(m * n));
  tgrt_matmul(ctx, loc, TGRT_F32, af.data(), bf.data(), cf.data(), 1, m, n, k, trans_a, trans_b,
              0, 0, 0, alpha, 0.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t col = 0; col < n; ++col) cf[r * n + col] = cf[r * n + col] + biasf[col];
  roundInto(loc, "matmul_bias", dt, cf, c);
}

/// pre = alpha op(A) op(B) + bias (tgrt_matmul_bias, rounded to dt), out = GELU(pre) from the
/// rounded pre (tgrt_gelu_fwd): the two reference kernels in turn, so the result is bit-equal
/// to the unfused ops. pre, out [m, n]; all dt.
void tgrt_matmul_bias_gelu(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a,
                           const void* b, const void* bias, void* pre, void* out, int64_t m,
                           int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_bias_gelu(m, n, k)", m, n, k);
  checkDtype(loc, "matmul_bias_gelu", dt);
  tgrt_matmul_bias(ctx, loc, dt, a, b, bias, pre, m, n, k, trans_a, trans_b, alpha);
  tgrt_gelu_fwd(ctx, loc, dt, pre, out, m * n);
}

namespace {
/// A [m, k] whose rows are lda elements apart, gathered into contiguous rows (the CPU's
/// tgrt_matmul_bias_lda / _gelu_lda / tgrt_matmul_wgrad_lda then run the contiguous kernels).
/// Errors: lda < k (the row's elements).
std::vector<uint8_t> gatherRows(const char* loc, const char* what, int32_t dt, const void* a,
                                int64_t m, int64_t k, int64_t lda) {
  checkDtype(loc, what, dt);
  if (lda < k)
    fail(loc, "%s: lda %lld is less than the %lld elements read from each row", what,
         (long long)lda, (long long)k);
  const size_t es = (size_t)tgrt_dtype_size(dt);
  std::vector<uint8_t> out((size_t)(m * k) * es);
  if (m * k > 0) checkPtrs(loc, what, {a});
  for (int64_t r = 0; r < m; ++r)
    std::memcpy(out.data() + (size_t)(r * k) * es,
                static_cast<const uint8_t*>(a) + (size_t)(r * lda) * es, (size_t)k * es);
  return out;
}
} // namespace

/// tgrt_matmul_bias with A's rows lda apart (tgrt.h): the rows gathered, then the kernel.
void tgrt_matmul_bias_lda(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a,
                          const void* b, const void* bias, void* c, int64_t m, int64_t n,
                          int64_t k, int64_t lda, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_bias_lda(m, n, k)", m, n, k);
  const std::vector<uint8_t> ac = gatherRows(loc, "matmul_bias_lda", dt, a, m, k, lda);
  tgrt_matmul_bias(ctx, loc, dt, ac.data(), b, bias, c, m, n, k, 0, trans_b, alpha);
}

/// tgrt_matmul_wgrad with A [k, m] stored with its rows lda apart, read transposed (tgrt.h):
/// the rows gathered, then the kernel (no bias gradient).
void tgrt_matmul_wgrad_lda(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                           const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k,
                           int64_t lda, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_wgrad_lda(m, n, k)", m, n, k);
  const std::vector<uint8_t> ac = gatherRows(loc, "matmul_wgrad_lda", ab_dt, a, k, m, lda);
  tgrt_matmul_wgrad(ctx, loc, ab_dt, ac.data(), b, c_dt, c, m, n, k, 1, trans_b, alpha, nullptr);
}

/// tgrt_matmul_acc with A [k, m] stored with its rows lda apart, read transposed (tgrt.h):
/// the rows gathered, then the kernel.
void tgrt_matmul_acc_lda(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                         const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k,
                         int64_t lda, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_acc_lda(m, n, k)", m, n, k);
  const std::vector<uint8_t> ac = gatherRows(loc, "matmul_acc_lda", ab_dt, a, k, m, lda);
  tgrt_matmul_acc(ctx, loc, ab_dt, ac.data(), b, c_dt, c, m, n, k, 1, trans_b, alpha);
}

/// tgrt_matmul_bias_gelu with A's rows lda apart (tgrt.h): the rows gathered, then the kernel.
void tgrt_matmul_bias_gelu_lda(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a,
                               const void* b, const void* bias, void* pre, void* out, int64_t m,
                               int64_t n, int64_t k, int64_t lda, int32_t trans_b, float alpha) {
  checkNonNegative(loc, "matmul_bias_gelu_lda(m, n, k)", m, n, k);
  const std::vector<uint8_t> ac = gatherRows(loc, "matmul_bias_gelu_lda", dt, a, m, k, lda);
  tgrt_matmul_bias_gelu(ctx, loc, dt, ac.data(), b, bias, pre, out, m, n, k, 0, trans_b, alpha);
}

/// out[r,:] = x[r,:] + bias[:] (float add, rounded to dt); x, out [rows, n]; bias [n]; all
/// dt. out may alias x.
void tgrt_bias_add(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* bias,
                   void* out, int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "bias_add(rows, n)", rows, n);
  checkDtype(loc, "bias_add", dt);
  if (rows * n == 0) return;
  checkPtrs(loc, "bias_add", {x, bias, out});
  withDtype(loc, "bias_add", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c)
        Io::st(out, r * n + c, Io::ld(x, r * n + c) + Io::ld(bias, c));
  });
}

/// dbias[:] = sum_r dy[r,:] (double accumulation, overwritten); dy [rows, n], dbias [n]; dt.
void tgrt_bias_grad(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* dy, void* dbias,
                    int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "bias_grad(rows, n)", rows, n);
  checkDtype(loc, "bias_grad", dt);
  if (n == 0) return;
  checkPtrs(loc, "bias_grad", {dbias});
  if (rows > 0) checkPtrs(loc, "bias_grad", {dy});
  withDtype(loc, "bias_grad", dt, [&](auto io) {
    using Io = decltype(io);
    std::vector<double> acc((size_t)n, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) acc[c] += Io::ld(dy, r * n + c);
    for (int64_t c = 0; c < n; ++c) Io::st(dbias, c, (float)acc[c]);
  });
}

/// dbias[:] = round_acc(dbias[:] + sum_r dy[r,:]) (tgrt.h): the column sums in double as
/// tgrt_bias_grad, rounded to float, added to the widened slot in float, rounded once to
/// acc_dt. dy [rows, n]: dy_dt; dbias [n]: acc_dt.
void tgrt_bias_grad_acc(tgrt_ctx* ctx, const char* loc, int32_t dy_dt, const void* dy,
                        int32_t acc_dt, void* dbias, int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "bias_grad_acc(rows, n)", rows, n);
  checkDtype(loc, "bias_grad_acc (dy)", dy_dt);
  checkDtype(loc, "bias_grad_acc (dbias)", acc_dt);
  if (n == 0 || rows == 0) return; // dbias += 0
  checkPtrs(loc, "bias_grad_acc", {dy, dbias});
  const std::vector<float> g = widen(loc, "bias_grad_acc", dy_dt, dy, rows * n);
  std::vector<double> acc((size_t)n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) acc[c] += g[r * n + c];
  std::vector<float> out = widen(loc, "bias_grad_acc", acc_dt, dbias, n);
  for (int64_t c = 0; c < n; ++c) out[c] = out[c] + (float)acc[c];
  roundInto(loc, "bias_grad_acc", acc_dt, out, dbias);
}

// ----------------------------------------------------------------------------- GELU --


/// GELU, tanh approximation (Hendrycks & Gimpel 2016), in double: x, y [n] (dt); y may
/// alias x.
void tgrt_gelu_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                   int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "gelu_fwd(n)", n);
  checkDtype(loc, "gelu_fwd", dt);
  if (n == 0) return;
  checkPtrs(loc, "gelu_fwd", {x, y});
  withDtype(loc, "gelu_fwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) {
      const double xi = Io::ld(x, i);
      Io::st(y, i, (float)(0.5 * xi * (1.0 + std::tanh(kGeluC * (xi + kGeluA * xi * xi * xi)))));
    }
  });
}

/// dx = dy * GELU'(x) with GELU' = 0.5(1+tanh u) + 0.5 x (1-tanh^2 u) c (1 + 3a x^2), in
/// double; x, dy, dx [n] (dt); dx may alias dy.
void tgrt_gelu_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* dy,
                   void* dx, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "gelu_bwd(n)", n);
  checkDtype(loc, "gelu_bwd", dt);
  if (n == 0) return;
  checkPtrs(loc, "gelu_bwd", {x, dy, dx});
  withDtype(loc, "gelu_bwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) {
      const double xi = Io::ld(x, i);
      const double th = std::tanh(kGeluC * (xi + kGeluA * xi * xi * xi));
      const double grad =
          0.5 * (1.0 + th) + 0.5 * xi * (1.0 - th * th) * kGeluC * (1.0 + 3.0 * kGeluA * xi * xi);
      Io::st(dx, i, (float)(Io::ld(dy, i) * grad));
    }
  });
}

// -------------------------------------------------------------------------- dropout --

/// Inverted dropout, x, y [n] (dt; y may alias x). Element i is kept iff u_i >= rate where
/// u_i = (splitmix64(key + (i+1)*0x9E3779B97F4A7C15) >> 40) / 2^24 and
/// key = mix(mix(mix(seed + G) ^ step*G) ^ micro_batch*0xD1B54A32D192ED03) (mix = splitmix64
/// finaliser, G = 0x9E3779B97F4A7C15; step and micro_batch from ctx). Kept elements are
/// scaled by 1/(1-rate) in float and rounded to dt; rate 1 drops everything; rate 0 copies.
/// Calling it with dy in place of x is the backward. Errors: rate outside [0, 1], NULL ctx,
/// unknown dtype.
void tgrt_dropout(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                  int64_t n, float rate, uint64_t seed) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "dropout(n)", n);
  checkDtype(loc, "dropout", dt);
  if (!(rate >= 0.0f && rate <= 1.0f)) fail(loc, "dropout rate %g outside [0, 1]", (double)rate);
  if (n == 0) return;
  checkPtrs(loc, "dropout", {x, y});
  if (rate == 0.0f) {
    if (y != x) std::memcpy(y, x, (size_t)n * elemBytes(dt));
    return;
  }
  const uint64_t key = dropoutKey(seed, ctx->step, ctx->micro_batch);
  const float scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  withDtype(loc, "dropout", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i)
      Io::st(y, i, dropoutUniform(key, (uint64_t)i) >= rate ? Io::ld(x, i) * scale : 0.0f);
  });
}

// ---------------------------------------------------------------- softmax and mask --

/// Causal / sliding-window mask on scores x, y [batch, tq, tk] (dt; y may alias x): query i
/// sits at key position i' = i + tk - tq; keeps x (bit for bit) where j <= i' and (window <= 0
/// or i' - j < window), writes masked_value (rounded to dt) elsewhere.
void tgrt_causal_mask(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                      int64_t batch, int64_t tq, int64_t tk, int64_t window,
                      float masked_value) {
  (void)ctx;
  checkNonNegative(loc, "causal_mask(batch, tq, tk)", batch, tq, tk);
  checkDtype(loc, "causal_mask", dt);
  if (batch * tq * tk == 0) return;
  checkPtrs(loc, "causal_mask", {x, y});
  withDtype(loc, "causal_mask", dt, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    T masked;
    Io::st(&masked, 0, masked_value);
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < tq; ++i) {
        const int64_t ip = i + tk - tq;
        const int64_t base = (b * tq + i) * tk;
        for (int64_t j = 0; j < tk; ++j) {
          const bool keep = j <= ip && (window <= 0 || ip - j < window);
          ys[base + j] = keep ? xs[base + j] : masked;
        }
      }
  });
}

/// Row softmax over the last dim, x, y [rows, n] (dt; y may alias x); sum in double; a row
/// whose maximum is -inf (all masked) gives zeros.
void tgrt_softmax_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                      int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "softmax_fwd(rows, n)", rows, n);
  checkDtype(loc, "softmax_fwd", dt);
  if (rows * n == 0) return;
  checkPtrs(loc, "softmax_fwd", {x, y});
  withDtype(loc, "softmax_fwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r * n;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t c = 0; c < n; ++c) mx = std::max(mx, Io::ld(x, o + c));
      if (mx == -std::numeric_limits<float>::infinity()) {
        for (int64_t c = 0; c < n; ++c) Io::st(y, o + c, 0.0f);
        continue;
      }
      double sum = 0.0;
      for (int64_t c = 0; c < n; ++c) sum += std::exp((double)Io::ld(x, o + c) - mx);
      const double inv = 1.0 / sum;
      for (int64_t c = 0; c < n; ++c)
        Io::st(y, o + c, (float)(std::exp((double)Io::ld(x, o + c) - mx) * inv));
    }
  });
}

/// dx = y * (dy - sum_n(dy*y)) per row (the dot in double); y, dy, dx [rows, n] (dt); dx may
/// alias dy.
void tgrt_softmax_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* y, const void* dy,
                      void* dx, int64_t rows, int64_t n) {
  (void)ctx;
  checkNonNegative(loc, "softmax_bwd(rows, n)", rows, n);
  checkDtype(loc, "softmax_bwd", dt);
  if (rows * n == 0) return;
  checkPtrs(loc, "softmax_bwd", {y, dy, dx});
  withDtype(loc, "softmax_bwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r * n;
      const double dot = dotIo<Io>(dy, o, y, o, n);
      for (int64_t c = 0; c < n; ++c)
        Io::st(dx, o + c, (float)(Io::ld(y, o + c) * (Io::ld(dy, o + c) - dot)));
    }
  });
}

// -------------------------------------------------------------------- cross entropy --


/// loss[0] = mean over rows with targets[r] != ignore_index of logsumexp(logits[r,:]) -
/// logits[r, targets[r]] (double accumulation); 0 when no row counts. logits [rows, vocab]
/// (dt, widened element by element, never copied), targets [rows] i32, loss [1] float32.
/// Errors: target outside [0, vocab) and != ignore_index, unknown dtype.
void tgrt_cross_entropy_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits,
                            const int32_t* targets, float* loss, int64_t rows, int64_t vocab,
                            int64_t ignore_index) {
  (void)ctx;
  checkNonNegative(loc, "cross_entropy_fwd(rows, vocab)", rows, vocab);
  checkDtype(loc, "cross_entropy_fwd", dt);
  checkPtrs(loc, "cross_entropy_fwd", {loss});
  if (rows > 0) checkPtrs(loc, "cross_entropy_fwd", {logits, targets});
  const int64_t valid = countValid(loc, targets, rows, vocab, ignore_index);
  double sum = 0.0;
  withDtype(loc, "cross_entropy_fwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r) {
      if (targets[r] == ignore_index) continue;
      const int64_t o = r * vocab;
      sum += rowLogSumExp<Io>(logits, o, vocab) - (double)Io::ld(logits, o + targets[r]);
    }
  });
  loss[0] = valid > 0 ? (float)(sum / (double)valid) : 0.0f;
}

/// dlogits[r,:] = dloss[0] (softmax(logits[r,:]) - onehot(targets[r])) / n_valid, zeros for
/// ignored rows (logits, dlogits: dt; dloss float32 [1]). dlogits may alias logits (each
/// row's lse is computed before it is written, and element c is read before it is written).
void tgrt_cross_entropy_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits,
                            const int32_t* targets, const float* dloss, void* dlogits,
                            int64_t rows, int64_t vocab, int64_t ignore_index) {
  (void)ctx;
  checkNonNegative(loc, "cross_entropy_bwd(rows, vocab)", rows, vocab);
  checkDtype(loc, "cross_entropy_bwd", dt);
  if (rows == 0 || vocab == 0) return;
  checkPtrs(loc, "cross_entropy_bwd", {logits, targets, dloss, dlogits});
  const int64_t valid = countValid(loc, targets, rows, vocab, ignore_index);
  const double scale = valid > 0 ? (double)dloss[0] / (double)valid : 0.0;
  withDtype(loc, "cross_entropy_bwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r * vocab;
      if (targets[r] == ignore_index) {
        for (int64_t c = 0; c < vocab; ++c) Io::st(dlogits, o + c, 0.0f);
        continue;
      }
      const double lse = rowLogSumExp<Io>(logits, o, vocab);
      const int64_t t = targets[r];
      for (int64_t c = 0; c < vocab; ++c) {
        const double p = std::exp((double)Io::ld(logits, o + c) - lse);
        Io::st(dlogits, o + c, (float)(scale * (p - (c == t ? 1.0 : 0.0))));
      }
    }
  });
}

/// tgrt_cross_entropy_fwd then tgrt_cross_entropy_bwd (tgrt.h): the forward reads every
/// logit before the backward overwrites it when dlogits aliases logits.
void tgrt_cross_entropy_fwd_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits,
                                const int32_t* targets, float* loss, const float* dloss,
                                void* dlogits, int64_t rows, int64_t vocab,
                                int64_t ignore_index) {
  tgrt_cross_entropy_fwd(ctx, loc, dt, logits, targets, loss, rows, vocab, ignore_index);
  tgrt_cross_entropy_bwd(ctx, loc, dt, logits, targets, dloss, dlogits, rows, vocab,
                         ignore_index);
}

/// tg.linear_cross_entropy (tgrt.h): per chunk, the logits by tgrt_matmul into scratch, the
/// row losses (summed in double in row order) and dlogits in place with the global
/// n_valid (the formulas of tgrt_cross_entropy_fwd / _bwd), dx by tgrt_matmul, dw's chunk
/// product added in float; dw rounded once at the end.
void tgrt_linear_cross_entropy(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                               const void* w, const int32_t* targets, const float* dloss,
                               float* loss, void* dx, int32_t dw_dt, void* dw, void* scratch,
                               int64_t rows, int64_t d, int64_t vocab, int64_t chunk_rows,
                               int64_t ignore_index) {
  checkNonNegative(loc, "linear_cross_entropy(rows, d, vocab)", rows, d, vocab);
  checkDtype(loc, "linear_cross_entropy", dt);
  checkDtype(loc, "linear_cross_entropy (dw)", dw_dt);
  checkPtrs(loc, "linear_cross_entropy", {loss, dloss});
  if (rows == 0) {
    loss[0] = 0.0f;
    return;
  }
  if (chunk_rows < 1 || chunk_rows > rows)
    fail(loc, "linear_cross_entropy: chunk_rows %lld outside [1, %lld]", (long long)chunk_rows,
         (long long)rows);
  // dx and dw both NULL: the loss only (an evaluation step's), no backward GEMMs.
  const bool lossOnly = !dx && !dw;
  if (lossOnly)
    checkPtrs(loc, "linear_cross_entropy", {x, w, targets, scratch});
  else
    checkPtrs(loc, "linear_cross_entropy", {x, w, targets, dx, dw, scratch});
  const int64_t es = tgrt_dtype_size(dt);
  const int64_t valid = countValid(loc, targets, rows, vocab, ignore_index);
  const double scale = valid > 0 ? (double)dloss[0] / (double)valid : 0.0;
  char* logits = static_cast<char*>(scratch) + (256 + 8 * rows + 255) / 256 * 256;
  std::vector<float> dwf =
      lossOnly ? std::vector<float>()
               : widen(loc, "linear_cross_entropy (dw)", dw_dt, dw, vocab * d);
  double sum = 0.0;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    const char* xc = static_cast<const char*>(x) + r0 * d * es;
    tgrt_matmul(ctx, loc, dt, xc, w, logits, 1, n, vocab, d, 0, 1, 0, 0, 0, 1.0f, 0.0f);
    withDtype(loc, "linear_cross_entropy", dt, [&](auto io) {
      using Io = decltype(io);
      for (int64_t r = 0; r < n; ++r) {
        const int64_t o = r * vocab, t = targets[r0 + r];
        if (t == ignore_index) {
          for (int64_t c = 0; c < vocab; ++c) Io::st(logits, o + c, 0.0f);
          continue;
        }
        const double lse = rowLogSumExp<Io>(logits, o, vocab);
        sum += lse - (double)Io::ld(logits, o + t);
        for (int64_t c = 0; c < vocab; ++c) {
          const double p = std::exp((double)Io::ld(logits, o + c) - lse);
          Io::st(logits, o + c, (float)(scale * (p - (c == t ? 1.0 : 0.0))));
        }
      }
    });
    if (lossOnly)
      continue;
    tgrt_matmul(ctx, loc, dt, logits, w, static_cast<char*>(dx) + r0 * d * es, 1, n, d, vocab, 0,
                0, 0, 0, 0, 1.0f, 0.0f);
    const std::vector<float> gf = widen(loc, "linear_cross_entropy", dt, logits, n * vocab),
                             xf = widen(loc, "linear_cross_entropy", dt, xc, n * d);
    tgrt_matmul(ctx, loc, TGRT_F32, gf.data(), xf.data(), dwf.data(), 1, vocab, d, n, 1, 0, 0, 0,
                0, 1.0f, 1.0f);
  }
  if (!lossOnly)
    roundInto(loc, "linear_cross_entropy (dw)", dw_dt, dwf, dw);
  loss[0] = valid > 0 ? (float)(sum / (double)valid) : 0.0f;
}

/// tgrt_linear_cross_entropy with dw written (tgrt.h): dw zeroed, then the accumulating
/// call, so the bits are those of tgrt_zero + tgrt_linear_cross_entropy.
void tgrt_linear_cross_entropy_store(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                                     const void* w, const int32_t* targets, const float* dloss,
                                     float* loss, void* dx, int32_t dw_dt, void* dw,
                                     void* scratch, int64_t rows, int64_t d, int64_t vocab,
                                     int64_t chunk_rows, int64_t ignore_index) {
  checkNonNegative(loc, "linear_cross_entropy_store(rows, d, vocab)", rows, d, vocab);
  checkDtype(loc, "linear_cross_entropy_store (dw)", dw_dt);
  if (vocab * d > 0) {
    checkPtrs(loc, "linear_cross_entropy_store", {dw});
    std::memset(dw, 0, (size_t)(vocab * d * tgrt_dtype_size(dw_dt)));
  }
  tgrt_linear_cross_entropy(ctx, loc, dt, x, w, targets, dloss, loss, dx, dw_dt, dw, scratch, rows,
                            d, vocab, chunk_rows, ignore_index);
}

// ------------------------------------------------------------------------ attention --

/// A strided attention operand: element (b, h, i, j) at b * sb + h * sh + i * st + j.
struct AttnLayout {
  int64_t batch, heads, t, hd, sb, sh, st;
};

/// The batch * heads * t rows of hd elements of p (dt, layout l) widened into a contiguous
/// float [batch * heads, t, hd] vector.
std::vector<float> gatherAttn(const char* loc, const char* what, int32_t dt, const void* p,
                              const AttnLayout& l) {
  std::vector<float> f((size_t)(l.batch * l.heads * l.t * l.hd));
  withDtype(loc, what, dt, [&](auto io) {
    using Io = decltype(io);
    float* d = f.data();
    for (int64_t b = 0; b < l.batch; ++b)
      for (int64_t h = 0; h < l.heads; ++h)
        for (int64_t i = 0; i < l.t; ++i, d += l.hd)
          widenTo<Io>(p, b * l.sb + h * l.sh + i * l.st, l.hd, d);
  });
  return f;
}

/// Rounds the contiguous float [batch * heads, t, hd] f into p's strided rows (layout l);
/// only those elements of p are written.
void scatterAttn(const char* loc, const char* what, int32_t dt, const std::vector<float>& f,
                 void* p, const AttnLayout& l) {
  withDtype(loc, what, dt, [&](auto io) {
    using Io = decltype(io);
    const float* s = f.data();
    for (int64_t b = 0; b < l.batch; ++b)
      for (int64_t h = 0; h < l.heads; ++h)
        for (int64_t i = 0; i < l.t; ++i, s += l.hd)
          roundFrom<Io>(s, l.hd, p, b * l.sb + h * l.sh + i * l.st);
  });
}

namespace {

/// The size, stride, head-count and dtype checks shared by attentionFwd and attentionBwd
/// (`kernel` names the entry point in the message).
void checkAttentionArgs(const char* loc, const char* kernel, int32_t dt, int64_t batch,
                        int64_t heads, int64_t kvHeads, int64_t t, int64_t hd,
                        const int64_t inS[3], const int64_t kvS[3], const int64_t outS[3]) {
  const std::string kn(kernel);
  checkNonNegative(loc, (kn + "(batch, heads, t, hd)").c_str(), batch, heads, t, hd);
  checkNonNegative(loc, (kn + "(kv_heads)").c_str(), kvHeads);
  checkNonNegative(loc, (kn + "(in strides)").c_str(), inS[0], inS[1], inS[2]);
  checkNonNegative(loc, (kn + "(kv strides)").c_str(), kvS[0], kvS[1], kvS[2]);
  checkNonNegative(loc, (kn + "(out strides)").c_str(), outS[0], outS[1], outS[2]);
  if (kvHeads == 0 ? heads != 0 : heads % kvHeads != 0)
    fail(loc, "%s: heads %lld is not a multiple of kv_heads %lld", kernel, (long long)heads,
         (long long)kvHeads);
  checkDtype(loc, kernel, dt);
}

/// Grouped-query attention forward, the one implementation behind tgrt_attention_fwd
/// (kvHeads == heads, kv strides == in strides) and tgrt_attention_gqa_fwd; `kernel` names
/// the entry point in error messages. Checks the arguments, gathers q (in strides) and k, v
/// (kv strides, kvHeads heads) into contiguous float temporaries (bf16 / f16 widened), runs
/// attentionFwdF32 and scatters out back (out strides, rounded once).
void attentionFwd(const char* loc, const char* kernel, int32_t dt, const void* q, const void* k,
                  const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                  int64_t kvHeads, int64_t t, int64_t hd, const int64_t inS[3],
                  const int64_t kvS[3], const int64_t outS[3], int32_t causal, int64_t window,
                  float scale) {
  checkAttentionArgs(loc, kernel, dt, batch, heads, kvHeads, t, hd, inS, kvS, outS);
  const int64_t bh = batch * heads;
  if (bh * t == 0) return;
  checkPtrs(loc, kernel, {q, k, v, out, lse});
  const AttnLayout in{batch, heads, t, hd, inS[0], inS[1], inS[2]};
  const AttnLayout kvl{batch, kvHeads, t, hd, kvS[0], kvS[1], kvS[2]};
  const AttnLayout ol{batch, heads, t, hd, outS[0], outS[1], outS[2]};
  const std::vector<float> qf = gatherAttn(loc, kernel, dt, q, in),
                           kf = gatherAttn(loc, kernel, dt, k, kvl),
                           vf = gatherAttn(loc, kernel, dt, v, kvl);
  std::vector<float> of((size_t)(bh * t * hd));
  attentionFwdF32(qf.data(), kf.data(), vf.data(), of.data(), lse, batch, heads, kvHeads, t, hd,
                  causal, window, scale);
  scatterAttn(loc, kernel, dt, of, out, ol);
}

/// Grouped-query attention backward, the one implementation behind tgrt_attention_bwd and
/// tgrt_attention_gqa_bwd (see attentionFwd): q, dq in strides; k, v, dk, dv kv strides; out,
/// dout out strides. dk, dv of a kv head: the float sum of its group's per-head float results
/// (attentionBwdF32), rounded once to dt.
void attentionBwd(const char* loc, const char* kernel, int32_t dt, const void* q, const void* k,
                  const void* v, const void* out, const float* lse, const void* dout, void* dq,
                  void* dk, void* dv, int64_t batch, int64_t heads, int64_t kvHeads, int64_t t,
                  int64_t hd, const int64_t inS[3], const int64_t kvS[3], const int64_t outS[3],
                  int32_t causal, int64_t window, float scale) {
  checkAttentionArgs(loc, kernel, dt, batch, heads, kvHeads, t, hd, inS, kvS, outS);
  const int64_t bh = batch * heads;
  if (bh * t * hd == 0) return;
  checkPtrs(loc, kernel, {q, k, v, out, lse, dout, dq, dk, dv});
  const AttnLayout in{batch, heads, t, hd, inS[0], inS[1], inS[2]};
  const AttnLayout kvl{batch, kvHeads, t, hd, kvS[0], kvS[1], kvS[2]};
  const AttnLayout ol{batch, heads, t, hd, outS[0], outS[1], outS[2]};
  const std::vector<float> qf = gatherAttn(loc, kernel, dt, q, in),
                           kf = gatherAttn(loc, kernel, dt, k, kvl),
                           vf = gatherAttn(loc, kernel, dt, v, kvl),
                           of = gatherAttn(loc, kernel, dt, out, ol),
                           dof = gatherAttn(loc, kernel, dt, dout, ol);
  const int64_t nq = bh * t * hd, nkv = batch * kvHeads * t * hd;
  std::vector<float> dqf((size_t)nq), dkf((size_t)nkv), dvf((size_t)nkv);
  attentionBwdF32(qf.data(), kf.data(), vf.data(), of.data(), lse, dof.data(), dqf.data(),
                  dkf.data(), dvf.data(), batch, heads, kvHeads, t, hd, causal, window, scale);
  scatterAttn(loc, kernel, dt, dqf, dq, in);
  scatterAttn(loc, kernel, dt, dkf, dk, kvl);
  scatterAttn(loc, kernel, dt, dvf, dv, kvl);
}

} // namespace

/// Attention forward, one (batch, head, query) at a time: q, k, v (in strides), out (out
/// strides) dt; lse [batch, heads, t] float32. s_ij = scale q_i.k_j over visible keys (causal:
/// j <= i, and i - j < window when window > 0; the window only applies with causal),
/// lse_i = logsumexp_j s_ij (double), out_i = sum_j exp(s_ij - lse_i) v_j. A query with no
/// visible key (impossible in the causal case) gets out = 0, lse = -inf. The operands are
/// gathered into contiguous float [batch * heads, t, hd] temporaries (bf16 / f16 widened),
/// the f32 algorithm runs, out is scattered back (rounded once; P is not rounded). Only out's
/// strided elements are written. The grouped-query path with kv_heads = heads and the kv
/// strides equal to the in strides (one implementation). Errors: negative sizes or strides,
/// unknown dtype.
void tgrt_attention_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                        const void* k, const void* v, void* out, float* lse, int64_t batch,
                        int64_t heads, int64_t t, int64_t hd, int64_t in_stride_b,
                        int64_t in_stride_h, int64_t in_stride_t, int64_t out_stride_b,
                        int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                        int64_t window, float scale) {
  (void)ctx;
  const int64_t inS[3] = {in_stride_b, in_stride_h, in_stride_t};
  const int64_t outS[3] = {out_stride_b, out_stride_h, out_stride_t};
  attentionFwd(loc, "attention_fwd", dt, q, k, v, out, lse, batch, heads, heads, t, hd, inS, inS,
               outS, causal, window, scale);
}

/// Attention backward (dq, dk, dv in q, k, v's strided layout, overwritten: only their own
/// elements, so they may interleave in one buffer), recomputing P_ij = exp(s_ij - lse_i) with
/// the forward's visibility rule: D_i = dout_i.out_i, dv_j = sum_i P_ij dout_i,
/// dS_ij = P_ij (dout_i.v_j - D_i), dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i.
/// All accumulation in double. q, k, v, dq, dk, dv: dt, in strides; out, dout: dt, out
/// strides; lse float32 [batch, heads, t]. Operands gathered (widened) into contiguous float
/// temporaries, the f32 algorithm, dq, dk, dv scattered back rounded once. The grouped-query
/// path with kv_heads = heads (one implementation). Errors: negative sizes or strides,
/// unknown dtype.
void tgrt_attention_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                        const void* k, const void* v, const void* out, const float* lse,
                        const void* dout, void* dq, void* dk, void* dv, int64_t batch,
                        int64_t heads, int64_t t, int64_t hd, int64_t in_stride_b,
                        int64_t in_stride_h, int64_t in_stride_t, int64_t out_stride_b,
                        int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                        int64_t window, float scale) {
  (void)ctx;
  const int64_t inS[3] = {in_stride_b, in_stride_h, in_stride_t};
  const int64_t outS[3] = {out_stride_b, out_stride_h, out_stride_t};
  attentionBwd(loc, "attention_bwd", dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, heads,
               t, hd, inS, inS, outS, causal, window, scale);
}

/// Grouped-query attention (Ainslie et al. 2023; tgrt.h): tgrt_attention_fwd where query head
/// h of a batch entry reads kv head h / (heads / kv_heads), k and v read in place through the
/// kv strides (gathered once per kv head, never repeated per query head). Same algorithm,
/// gathering and rounding as tgrt_attention_fwd. Errors: as tgrt_attention_fwd; heads not a
/// multiple of kv_heads (kv_heads == 0 with heads > 0 included).
void tgrt_attention_gqa_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                            const void* k, const void* v, void* out, float* lse, int64_t batch,
                            int64_t heads, int64_t kv_heads, int64_t t, int64_t hd,
                            int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                            int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                            int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                            int32_t causal, int64_t window, float scale) {
  (void)ctx;
  const int64_t inS[3] = {in_stride_b, in_stride_h, in_stride_t};
  const int64_t kvS[3] = {kv_stride_b, kv_stride_h, kv_stride_t};
  const int64_t outS[3] = {out_stride_b, out_stride_h, out_stride_t};
  attentionFwd(loc, "attention_gqa_fwd", dt, q, k, v, out, lse, batch, heads, kv_heads, t, hd,
               inS, kvS, outS, causal, window, scale);
}

/// Backward of tgrt_attention_gqa_fwd (Ainslie et al. 2023; tgrt.h): dq as
/// tgrt_attention_bwd (in strides); dk, dv (kv strides, overwritten) of a kv head are the
/// float32 sum, in head order, of the float32 dk, dv that tgrt_attention_bwd computes for
/// each query head of its group (each accumulated in double), rounded once to dt.
/// Errors: as tgrt_attention_gqa_fwd.
void tgrt_attention_gqa_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                            const void* k, const void* v, const void* out, const float* lse,
                            const void* dout, void* dq, void* dk, void* dv, int64_t batch,
                            int64_t heads, int64_t kv_heads, int64_t t, int64_t hd,
                            int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                            int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                            int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                            int32_t causal, int64_t window, float scale) {
  (void)ctx;
  const int64_t inS[3] = {in_stride_b, in_stride_h, in_stride_t};
  const int64_t kvS[3] = {kv_stride_b, kv_stride_h, kv_stride_t};
  const int64_t outS[3] = {out_stride_b, out_stride_h, out_stride_t};
  attentionBwd(loc, "attention_gqa_bwd", dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads,
               kv_heads, t, hd, inS, kvS, outS, causal, window, scale);
}

// ---------------------------------------------------------------- the Llama family --

/// RMSNorm (Zhang & Sennrich 2019; tgrt.h) over the last dim: x [rows, d] (x_dt), gamma [d]
/// (p_dt), y [rows, d] (y_dt), rstd [rows] float32 (output). rstd = 1/sqrt(mean(x^2) + eps)
/// in double, y = x * rstd * gamma in double, each y element rounded once to y_dt (as
/// tgrt_layer_norm_fwd, without the mean and the bias). Errors: d == 0 with rows > 0, unknown
/// dtype, NULL pointers.
void tgrt_rms_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x,
                       int32_t p_dt, const void* gamma, int32_t y_dt, void* y, float* rstd,
                       int64_t rows, int64_t d, float eps) {
  (void)ctx;
  checkNonNegative(loc, "rms_norm_fwd(rows, d)", rows, d);
  checkDtype(loc, "rms_norm_fwd (x_dt)", x_dt);
  checkDtype(loc, "rms_norm_fwd (p_dt)", p_dt);
  checkDtype(loc, "rms_norm_fwd (y_dt)", y_dt);
  if (rows == 0) return;
  if (d == 0) fail(loc, "rms_norm_fwd: d must be > 0");
  checkPtrs(loc, "rms_norm_fwd", {x, gamma, y, rstd});
  withDtype(loc, "rms_norm_fwd (x_dt)", x_dt, [&](auto xio) {
    withDtype(loc, "rms_norm_fwd (p_dt)", p_dt, [&](auto pio) {
      withDtype(loc, "rms_norm_fwd (y_dt)", y_dt, [&](auto yio) {
        using X = decltype(xio);
        using P = decltype(pio);
        using Y = decltype(yio);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t o = r * d;
          double ms = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            const double xc = X::ld(x, o + c);
            ms += xc * xc;
          }
          ms /= (double)d;
          const double rs = 1.0 / std::sqrt(ms + (double)eps);
          for (int64_t c = 0; c < d; ++c)
            Y::st(y, o + c, (float)(X::ld(x, o + c) * rs * P::ld(gamma, c)));
          rstd[r] = (float)rs;
        }
      });
    });
  });
}

/// RMSNorm backward (tgrt.h): dy [rows, d] (y_dt); x, dx [rows, d] (x_dt); gamma, dgamma [d]
/// (p_dt); rstd [rows] float32 from the forward. With xhat = x rstd, g = dy gamma:
/// dx = rstd (g - xhat mean_d(g xhat)), dgamma = sum_r dy xhat (overwritten). Sums in double
/// (as tgrt_layer_norm_bwd), each output rounded once. Errors: unknown dtype, NULL pointers.
void tgrt_rms_norm_bwd(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                       int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                       const float* rstd, void* dx, void* dgamma, int64_t rows, int64_t d) {
  (void)ctx;
  checkNonNegative(loc, "rms_norm_bwd(rows, d)", rows, d);
  checkDtype(loc, "rms_norm_bwd (y_dt)", y_dt);
  checkDtype(loc, "rms_norm_bwd (x_dt)", x_dt);
  checkDtype(loc, "rms_norm_bwd (p_dt)", p_dt);
  if (d == 0) return;
  checkPtrs(loc, "rms_norm_bwd", {dgamma});
  if (rows > 0) checkPtrs(loc, "rms_norm_bwd", {dy, x, gamma, rstd, dx});
  withDtype(loc, "rms_norm_bwd (y_dt)", y_dt, [&](auto yio) {
    withDtype(loc, "rms_norm_bwd (x_dt)", x_dt, [&](auto xio) {
      withDtype(loc, "rms_norm_bwd (p_dt)", p_dt, [&](auto pio) {
        using Y = decltype(yio);
        using X = decltype(xio);
        using P = decltype(pio);
        std::vector<double> dg((size_t)d, 0.0), xhat((size_t)d), g((size_t)d);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t o = r * d;
          const double rs = rstd[r];
          double meanGX = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            const float dyc = Y::ld(dy, o + c);
            xhat[c] = X::ld(x, o + c) * rs;
            g[c] = (double)dyc * P::ld(gamma, c);
            meanGX += g[c] * xhat[c];
            dg[c] += dyc * xhat[c];
          }
          meanGX /= (double)d;
          for (int64_t c = 0; c < d; ++c)
            X::st(dx, o + c, (float)(rs * (g[c] - xhat[c] * meanGX)));
        }
        for (int64_t c = 0; c < d; ++c) P::st(dgamma, c, (float)dg[c]);
      });
    });
  });
}

/// tgrt_rms_norm_bwd into a scratch dx, then tgrt_add_mixed into dres (and low): the
/// unfused chain, so the result equals the separate calls bit for bit (tgrt.h). dgamma is
/// overwritten, as tgrt_rms_norm_bwd's.
void tgrt_rms_norm_bwd_acc(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                           int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                           const float* rstd, void* dres, int32_t low_dt, void* low,
                           void* dgamma, int64_t rows, int64_t d) {
  checkNonNegative(loc, "rms_norm_bwd_acc(rows, d)", rows, d);
  checkDtype(loc, "rms_norm_bwd_acc (x, dres)", x_dt);
  if (rows > 0 && d > 0) checkPtrs(loc, "rms_norm_bwd_acc", {dres});
  std::vector<unsigned char> dx((size_t)(rows * d) * elemBytes(x_dt) + 1);
  tgrt_rms_norm_bwd(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, rstd, dx.data(), dgamma, rows, d);
  tgrt_add_mixed(ctx, loc, x_dt, dres, x_dt, dx.data(), dres, low_dt, low, rows * d);
}

/// Rotary position embedding (Su et al. 2021, RoFormer; tgrt.h) on the q and k heads of a
/// packed x [batch, t, heads + 2 kv_heads, hd] (dt), the v heads copied. For pair i < hd/2 of
/// position p: a = p * tgrt_rope_inv_freq(i, hd, theta, scaling) (float product), c, s =
/// cos(a), sin(a) (computed in double, rounded to float), then
/// y_i = x_i c - sign x_{i+hd/2} s and y_{i+hd/2} = x_{i+hd/2} c + sign x_i s in double,
/// each rounded once (to float, then to dt). y may equal x (each pair is read before it is
/// written). Errors: odd hd, sign not +1 / -1, theta not > 0, scaling with factor > 0 whose
/// low_freq_factor, high_freq_factor, original_context are not 0 < low < high, > 0; negative
/// sizes, unknown dtype, NULL pointers.
void tgrt_rope(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
               int64_t batch, int64_t t, int64_t heads, int64_t kv_heads, int64_t hd,
               float theta, const float* scaling, int32_t sign) {
  (void)ctx;
  checkNonNegative(loc, "rope(batch, t, heads, kv_heads)", batch, t, heads, kv_heads);
  checkNonNegative(loc, "rope(hd)", hd);
  checkDtype(loc, "rope", dt);
  if (hd % 2 != 0) fail(loc, "rope: head dim %lld is odd", (long long)hd);
  if (sign != 1 && sign != -1) fail(loc, "rope: sign %d is not +1 or -1", (int)sign);
  if (!(theta > 0.0f)) fail(loc, "rope: theta %g is not > 0", (double)theta);
  if (scaling && scaling[0] > 0.0f &&
      !(scaling[1] > 0.0f && scaling[2] > scaling[1] && scaling[3] > 0.0f))
    fail(loc,
         "rope: scaling {factor %g, low_freq_factor %g, high_freq_factor %g, "
         "original_context %g} needs 0 < low_freq_factor < high_freq_factor and "
         "original_context > 0",
         (double)scaling[0], (double)scaling[1], (double)scaling[2], (double)scaling[3]);
  const int64_t nh = heads + 2 * kv_heads, half = hd / 2;
  if (batch * t * nh * hd == 0) return;
  checkPtrs(loc, "rope", {x, y});
  std::vector<float> invFreq((size_t)half), cs((size_t)half), sn((size_t)half);
  for (int64_t i = 0; i < half; ++i) invFreq[i] = tgrt_rope_inv_freq(i, hd, theta, scaling);
  const double sg = sign;
  withDtype(loc, "rope", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t p = 0; p < t; ++p) {
      for (int64_t i = 0; i < half; ++i) {
        const float a = (float)p * invFreq[i];
        cs[i] = (float)std::cos((double)a);
        sn[i] = (float)std::sin((double)a);
      }
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t row = (b * t + p) * nh * hd;
        for (int64_t n = 0; n < heads + kv_heads; ++n) {
          const int64_t o = row + n * hd;
          for (int64_t i = 0; i < half; ++i) {
            const double x1 = Io::ld(x, o + i), x2 = Io::ld(x, o + i + half);
            Io::st(y, o + i, (float)(x1 * cs[i] - sg * x2 * sn[i]));
            Io::st(y, o + i + half, (float)(x2 * cs[i] + sg * x1 * sn[i]));
          }
        }
        if (y != x && kv_heads > 0) // the v heads, bit for bit
          std::memcpy(static_cast<char*>(y) + (size_t)(row + (heads + kv_heads) * hd) *
                                                  elemBytes(dt),
                      static_cast<const char*>(x) + (size_t)(row + (heads + kv_heads) * hd) *
                                                        elemBytes(dt),
                      (size_t)(kv_heads * hd) * elemBytes(dt));
      }
    }
  });
}

/// SwiGLU (Shazeer 2020; tgrt.h): x [rows, 2f] = [gate | up], y [rows, f] =
/// silu(gate) up with silu(g) = g / (1 + exp(-g)), in double, rounded once; x, y: dt.
/// Errors: negative sizes, unknown dtype, NULL pointers.
void tgrt_swiglu_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                     int64_t rows, int64_t f) {
  (void)ctx;
  checkNonNegative(loc, "swiglu_fwd(rows, f)", rows, f);
  checkDtype(loc, "swiglu_fwd", dt);
  if (rows * f == 0) return;
  checkPtrs(loc, "swiglu_fwd", {x, y});
  withDtype(loc, "swiglu_fwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const double g = Io::ld(x, r * 2 * f + c), up = Io::ld(x, r * 2 * f + f + c);
        const double s = 1.0 / (1.0 + std::exp(-g));
        Io::st(y, r * f + c, (float)(g * s * up));
      }
  });
}

/// SwiGLU backward (tgrt.h): with s = sigmoid(gate), dgate = dy up s (1 + gate (1 - s)) and
/// dup = dy silu(gate), in double, each rounded once; dx [rows, 2f] = [dgate | dup]; x, dy,
/// dx: dt. Errors: negative sizes, unknown dtype, NULL pointers.
void tgrt_swiglu_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                     const void* dy, void* dx, int64_t rows, int64_t f) {
  (void)ctx;
  checkNonNegative(loc, "swiglu_bwd(rows, f)", rows, f);
  checkDtype(loc, "swiglu_bwd", dt);
  if (rows * f == 0) return;
  checkPtrs(loc, "swiglu_bwd", {x, dy, dx});
  withDtype(loc, "swiglu_bwd", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const int64_t o = r * 2 * f + c;
        const double g = Io::ld(x, o), up = Io::ld(x, o + f), d = Io::ld(dy, r * f + c);
        const double s = 1.0 / (1.0 + std::exp(-g));
        Io::st(dx, o, (float)(d * up * s * (1.0 + g * (1.0 - s))));
        Io::st(dx, o + f, (float)(d * g * s));
      }
  });
}

// ---------------------------------------------------------------------- optimizer --

/// acc[0] += sum_i g[i]^2 (the partial sum in double over the widened g, then one float
/// add); g [n] (dt), acc float32 [>= 1]. Errors: unknown dtype, NULL acc.
void tgrt_grad_norm_sq(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* g, int64_t n,
                       float* acc) {
  (void)ctx;
  checkNonNegative(loc, "grad_norm_sq(n)", n);
  checkDtype(loc, "grad_norm_sq", dt);
  checkPtrs(loc, "grad_norm_sq", {acc});
  if (n == 0) return;
  checkPtrs(loc, "grad_norm_sq", {g});
  double s = 0.0;
  withDtype(loc, "grad_norm_sq", dt, [&](auto io) {
    using Io = decltype(io);
    for (int64_t i = 0; i < n; ++i) {
      const double gi = Io::ld(g, i);
      s += gi * gi;
    }
  });
  acc[0] = (float)((double)acc[0] + s);
}

/// With S = the context's loss scale: norm = sqrt(acc[0]) / S (the unscaled global gradient
/// norm, in double); acc[1] = (1/S) * ((max_norm > 0 && norm > max_norm) ?
/// max_norm/(norm+1e-6) : 1), the factor tgrt_adamw multiplies the gradients by, or NaN when
/// norm is not finite (an overflowed step: tgrt_adamw then changes nothing). Records norm in
/// ctx for tgrt_last_grad_norm. acc: float32 [2]. Errors: NULL ctx or acc.
void tgrt_clip_scale(tgrt_ctx* ctx, const char* loc, float* acc, float max_norm) {
  checkCtx(ctx, loc);
  checkPtrs(loc, "clip_scale", {acc});
  const double S = ctx->loss_scale;
  const double norm = std::sqrt((double)acc[0]) / S;
  if (!std::isfinite(norm)) {
    acc[1] = std::numeric_limits<float>::quiet_NaN();
  } else {
    const float clip =
        (max_norm > 0.0f && norm > (double)max_norm) ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
    acc[1] = (float)((1.0 / S) * (double)clip);
  }
  ctx->last_grad_norm = (float)norm;
}

/// AdamW (Loshchilov & Hutter 2019) on p, g [n] (p_dt) and m, v [n] (state_dt), step t and lr
/// from ctx, g' = g*clip[1] (clip may be NULL: factor 1). Bias correction 1 - b^t and the
/// update in double from the widened values; m, v and p each rounded once (to float, then to
/// their dtype). When clip[1] is not finite (an overflowed step, see tgrt_clip_scale) p, m, v
/// are left unchanged. Errors: NULL ctx, ctx step < 1, unknown dtype.
void tgrt_adamw(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                float eps, float weight_decay, const float* clip) {
  tgrt_adamw_wc(ctx, loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip,
                TGRT_F32, nullptr);
}

/// tgrt_adamw_wc with weight decay 0 on the islands (tgrt.h): each stretch of the run in
/// turn, the islands at 0, the rest at weight_decay (the update is element by element).
void tgrt_adamw_islands(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                        int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                        float eps, float weight_decay, const float* clip, int32_t w_dt, void* w,
                        int64_t base, int64_t period, int64_t reps, int64_t s0, int64_t l0,
                        int64_t s1, int64_t l1) {
  const tgrt_adamw_islands_t islands{base, period, reps, s0, l0, s1, l1};
  if (!islands.fits(n)) {
    char why[256];
    islands.describe(why, sizeof why, n);
    fail(loc, "%s", why);
  }
  checkDtype(loc, "adamw (p_dt)", p_dt);
  checkDtype(loc, "adamw (state_dt)", state_dt);
  const size_t ps = (size_t)tgrt_dtype_size(p_dt), ss = (size_t)tgrt_dtype_size(state_dt);
  auto island = [&](int64_t i) { return islands.contains(i); };
  for (int64_t i = 0; i < n;) {
    const bool isl = island(i);
    int64_t j = i + 1;
    while (j < n && island(j) == isl) ++j;
    tgrt_adamw_wc(ctx, loc, p_dt, static_cast<char*>(p) + i * ps,
                  static_cast<const char*>(g) + i * ps, state_dt, static_cast<char*>(m) + i * ss,
                  static_cast<char*>(v) + i * ss, j - i, beta1, beta2, eps,
                  isl ? 0.0f : weight_decay, clip, w_dt,
                  w ? static_cast<char*>(w) + i * 2 : nullptr);
    i = j;
  }
}

/// tgrt_adamw that also writes w[i] = the updated p[i] (as rounded to p_dt) rounded to w_dt,
/// when w is not NULL (tgrt.h). Errors: as tgrt_adamw; w_dt not 2-byte.
void tgrt_adamw_wc(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                   int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                   float eps, float weight_decay, const float* clip, int32_t w_dt, void* w) {
  tgrt_adamw_wc_g(ctx, loc, p_dt, p, p_dt, g, state_dt, m, v, n, beta1, beta2, eps,
                  weight_decay, clip, w_dt, w);
}

/// tgrt_adamw_wc with g of g_dt (p_dt, or the working copy's 2-byte type: each g[i] widened
/// exactly; tgrt.h). Errors: as tgrt_adamw_wc; g_dt neither p_dt nor w_dt / 2-byte.
void tgrt_adamw_wc_g(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, int32_t g_dt,
                     const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1,
                     float beta2, float eps, float weight_decay, const float* clip, int32_t w_dt,
                     void* w) {
  checkCtx(ctx, loc);
  if (w && w_dt != TGRT_BF16 && w_dt != TGRT_F16)
    fail(loc, "adamw_wc: the working copy's dtype %d is not bf16 (1) or f16 (2)", (int)w_dt);
  checkNonNegative(loc, "adamw(n)", n);
  checkDtype(loc, "adamw (p_dt)", p_dt);
  checkDtype(loc, "adamw (state_dt)", state_dt);
  checkDtype(loc, "adamw (g_dt)", g_dt);
  if (g_dt != p_dt && (w ? g_dt != w_dt : g_dt != TGRT_BF16 && g_dt != TGRT_F16))
    fail(loc, "adamw_wc_g: the gradients' dtype %d is neither the values' (%d) nor the "
              "working copy's 2-byte type",
         (int)g_dt, (int)p_dt);
  if (g_dt != p_dt && p_dt != TGRT_F32)
    fail(loc, "adamw_wc_g: 2-byte gradients need f32 values, got dtype %d", (int)p_dt);
  if (ctx->step < 1)
    fail(loc, "adamw: optimizer step %lld must be >= 1 (set with tgrt_set_step)",
         (long long)ctx->step);
  if (n == 0) return;
  checkPtrs(loc, "adamw", {p, g, m, v});
  if (clip && !std::isfinite(clip[1])) return; // skipped step: nothing changes
  const double c = clip ? (double)clip[1] : 1.0;
  const double b1 = beta1, b2 = beta2, lr = ctx->lr, wd = weight_decay;
  const double bc1 = 1.0 - std::pow(b1, (double)ctx->step);
  const double bc2 = 1.0 - std::pow(b2, (double)ctx->step);
  withDtype(loc, "adamw (p_dt)", p_dt, [&](auto pio) {
    withDtype(loc, "adamw (state_dt)", state_dt, [&](auto sio) {
      using P = decltype(pio);
      using S = decltype(sio);
      for (int64_t i = 0; i < n; ++i) {
        const double gi = (double)ldAs(g_dt, g, i) * c;
        const double mi = b1 * S::ld(m, i) + (1.0 - b1) * gi;
        const double vi = b2 * S::ld(v, i) + (1.0 - b2) * gi * gi;
        S::st(m, i, (float)mi);
        S::st(v, i, (float)vi);
        const double pi = P::ld(p, i);
        P::st(p, i, (float)(pi - lr * ((mi / bc1) / (std::sqrt(vi / bc2) + eps) + wd * pi)));
        if (w) { // the working copy of the stored value
          const float pv = P::ld(p, i);
          if (w_dt == TGRT_BF16) static_cast<uint16_t*>(w)[i] = tgrt_bf16_from_float(pv);
          else static_cast<uint16_t*>(w)[i] = tgrt_f16_from_float(pv);
        }
      }
    });
  });
}

/// tgrt_adamw_wc_g on split master values (tgrt.h): each value joined from (hi[i], lo[i])
/// (tgrt_split_join), updated as tgrt_adamw_wc_g updates an f32 value (double arithmetic,
/// rounded once to float), and split again (tgrt_split_value), in blocks of 4096 through a
/// float buffer. Errors: as tgrt_adamw_wc_g; g_dt neither bf16 nor f32; hi or lo NULL.
void tgrt_adamw_split(tgrt_ctx* ctx, const char* loc, void* hi, void* lo, int32_t g_dt,
                      const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1,
                      float beta2, float eps, float weight_decay, const float* clip) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "adamw_split(n)", n);
  checkDtype(loc, "adamw_split (state_dt)", state_dt);
  if (g_dt != TGRT_BF16 && g_dt != TGRT_F32)
    fail(loc, "adamw_split: the gradients' dtype %d is neither bf16 (1) nor f32 (0)", (int)g_dt);
  if (n == 0) return;
  checkPtrs(loc, "adamw_split", {hi, lo});
  if (clip && !std::isfinite(clip[1])) return; // skipped step: nothing changes
  uint16_t* h = static_cast<uint16_t*>(hi);
  uint16_t* l = static_cast<uint16_t*>(lo);
  const int64_t gs = tgrt_dtype_size(g_dt), ss = tgrt_dtype_size(state_dt);
  constexpr int64_t kBlock = 4096;
  float p[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t k = std::min(kBlock, n - i);
    for (int64_t j = 0; j < k; ++j) p[j] = tgrt_split_join(h[i + j], l[i + j]);
    tgrt_adamw_wc_g(ctx, loc, TGRT_F32, p, g_dt, static_cast<const char*>(g) + i * gs, state_dt,
                    static_cast<char*>(m) + i * ss, static_cast<char*>(v) + i * ss, k, beta1,
                    beta2, eps, weight_decay, clip, TGRT_F32, nullptr);
    for (int64_t j = 0; j < k; ++j) tgrt_split_value(p[j], &h[i + j], &l[i + j]);
  }
}

namespace {
/// True when ctx's rank owns a range (tgrt_adamw_owned): always without a communicator, else
/// when owner is ctx's rank. Fails on an owner outside [0, ranks) with a communicator (no
/// rank would update that range).
bool ownsRange(tgrt_ctx* ctx, const char* loc, const char* what, int32_t owner) {
  checkCtx(ctx, loc);
  if (!ctx->comm) return true;
  if (owner < 0 || owner >= ctx->ranks)
    fail(loc, "%s: owner %d outside [0, %d)", what, (int)owner, (int)ctx->ranks);
  return owner == ctx->rank;
}
} // namespace

/// tgrt_adamw on the owning rank (or without a communicator), nothing elsewhere (tgrt.h).
void tgrt_adamw_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                      int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                      float eps, float weight_decay, const float* clip, int32_t owner) {
  if (!ownsRange(ctx, loc, "adamw_owned", owner)) return;
  tgrt_adamw(ctx, loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip);
}

/// tgrt_adamw_wc on the owning rank (or without a communicator), nothing elsewhere (tgrt.h).
void tgrt_adamw_wc_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                         int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                         float eps, float weight_decay, const float* clip, int32_t w_dt, void* w,
                         int32_t owner) {
  if (!ownsRange(ctx, loc, "adamw_wc_owned", owner)) return;
  tgrt_adamw_wc(ctx, loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip,
                w_dt, w);
}

/// Adds loss[0] (float32) to the context's loss sum and counts one report. Errors: NULL ctx
/// or loss.
void tgrt_report_loss(tgrt_ctx* ctx, const char* loc, const float* loss) {
  checkCtx(ctx, loc);
  checkPtrs(loc, "report_loss", {loss});
  ctx->loss_sum += (double)loss[0];
  ctx->loss_count += 1;
}

// ------------------------------------------------------------------ checks (debug) --

/// Statistics of rows x cols elements of x (dt: a tgrt_dtype or TGRT_CHECK_I32), rows ld
/// elements apart: counts of NaN, +inf, -inf and the min / max over the non-NaN elements
/// (NaN when there is none). The reference of the CUDA reduction kernel (Stats.cu); plain
/// comparisons, so the order of the elements does not matter. Errors: negative sizes,
/// ld < cols, unknown dt, NULL out (or NULL x with elements to read).
void tgrt_tensor_stats(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, int64_t rows,
                       int64_t cols, int64_t ld, tgrt_stats* out) {
  (void)ctx;
  checkNonNegative(loc, "tensor_stats(rows, cols, ld)", rows, cols, ld);
  checkPtrs(loc, "tensor_stats", {out});
  if (rows > 1 && ld < cols)
    fail(loc, "tensor_stats: row stride ld %lld < cols %lld", (long long)ld, (long long)cols);
  if (dt != TGRT_CHECK_I32) checkDtype(loc, "tensor_stats", dt);
  tgrt_stats s{rows * cols, 0, 0, 0, std::numeric_limits<double>::quiet_NaN(),
               std::numeric_limits<double>::quiet_NaN()};
  if (s.count > 0) checkPtrs(loc, "tensor_stats", {x});
  auto see = [&s](double v) {
    if (std::isnan(v)) {
      ++s.nan;
      return;
    }
    if (v == std::numeric_limits<double>::infinity()) ++s.pos_inf;
    if (v == -std::numeric_limits<double>::infinity()) ++s.neg_inf;
    if (!(v >= s.min)) s.min = v; // also replaces the initial NaN
    if (!(v <= s.max)) s.max = v;
  };
  if (dt == TGRT_CHECK_I32) {
    const int32_t* p = static_cast<const int32_t*>(x);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) see((double)p[r * ld + c]);
  } else {
    withDtype(loc, "tensor_stats", dt, [&](auto io) {
      using Io = decltype(io);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) see((double)Io::ld(x, r * ld + c));
    });
  }
  *out = s;
}

} // extern "C"
