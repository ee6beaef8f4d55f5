/* tgrt.h — the C ABI between code emitted by tgc and a runtime backend.
 *
 * Emitted code (from tg-lower-to-emitc) calls one function per kernel family with
 * raw pointers into the three planned regions (persistent, arena, workspace). The same
 * signatures are implemented by runtime/cpu (reference, OpenBLAS) and runtime/cuda.
 *
 * Conventions
 *  - Every tensor is dense, row-major, float32 unless stated (token ids: int32).
 *  - Sizes are element counts (int64_t); "bytes" says bytes.
 *  - `loc` names the op in the model (e.g. "layers.3.attn.qkv"): a backend that fails
 *    reports it and aborts with a non-zero exit ("tgrt: <loc>: <what>").
 *  - Output buffers never alias inputs unless the function says so.
 *  - On CUDA every pointer is a device pointer and calls are asynchronous on the
 *    context's stream; on CPU they run synchronously.
 *  - This header never includes MLIR: the runtime is plain C/C++.
 */
#ifndef TGRT_H
#define TGRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- model info --
 * Emitted code defines `const tgrt_model* tg_model_info(void)` describing the plan. */

enum tgrt_region { TGRT_PERSISTENT = 0, TGRT_ARENA = 1, TGRT_WORKSPACE = 2 };

/* How the driver initialises a parameter (GPT-2 scheme). */
enum tgrt_init {
  TGRT_INIT_NORMAL = 0, /* N(0, std)                                   */
  TGRT_INIT_ZEROS = 1,
  TGRT_INIT_ONES = 2,
};

typedef struct tgrt_param {
  const char* name;       /* e.g. "layers.0.attn.qkv.weight"              */
  int32_t rank;           /* 1..4                                        */
  int64_t shape[4];       /* unused trailing dims are 1                  */
  int64_t numel;          /* elements                                    */
  int64_t offset;         /* bytes into the persistent region: value     */
  int64_t grad_offset;    /* bytes: gradient accumulator (same numel)    */
  int64_t m_offset;       /* bytes: AdamW first moment                   */
  int64_t v_offset;       /* bytes: AdamW second moment                  */
  int32_t init;           /* enum tgrt_init                              */
  float init_std;         /* std for TGRT_INIT_NORMAL                    */
  int32_t weight_decay;   /* 1 if AdamW applies decoupled weight decay   */
} tgrt_param;

typedef struct tgrt_model {
  const char* name;             /* spec name                                  */
  const char* spec_json;        /* the full validated spec, as JSON text      */
  int32_t n_params;
  const tgrt_param* params;
  int64_t persistent_bytes;     /* params, grads, moments, inputs, scalars    */
  int64_t arena_bytes;          /* all transient tensors (planned offsets)    */
  int64_t workspace_bytes;      /* backend scratch (cuBLASLt, attention)      */
  int64_t tokens_offset;        /* bytes in persistent: int32 [batch, context] */
  int64_t targets_offset;       /* bytes in persistent: int32 [batch, context] */
  int32_t batch_size;           /* micro-batch, sequences                     */
  int32_t context;              /* tokens per sequence                        */
  int32_t vocab_size;
  int32_t grad_accum;           /* micro-batches per optimizer step           */
  /* optimizer schedule (the driver computes lr(step) on the host) */
  float lr, min_lr, beta1, beta2, eps, weight_decay, grad_clip;
  int32_t warmup_steps;
  int32_t decay;                /* 0 none, 1 cosine, 2 linear (to min_lr)     */
  int32_t seed;
} tgrt_model;

/* Emitted code provides these four symbols. */
const tgrt_model* tg_model_info(void);
struct tgrt_ctx;
typedef struct tgrt_ctx tgrt_ctx;
void tg_micro_step(tgrt_ctx* ctx);     /* forward + backward; grads += ; loss reported */
void tg_optimizer_step(tgrt_ctx* ctx); /* clip, AdamW on every param, zero grads      */
void tg_eval_step(tgrt_ctx* ctx);      /* forward only; loss reported                 */

/* ------------------------------------------------------------ context (driver) -- */

/* Creates a context: allocates the persistent region, the arena and the workspace with
 * the sizes in `model` (one allocation each), zero-filled. On CUDA, first compares the
 * total with free device memory and, if it does not fit, prints both numbers and
 * returns NULL. Returns NULL (message on stderr) on any failure. */
tgrt_ctx* tgrt_ctx_create(const tgrt_model* model);
void tgrt_ctx_destroy(tgrt_ctx* ctx);
/* Base pointer of a region (enum tgrt_region). */
char* tgrt_region(tgrt_ctx* ctx, int32_t region);
/* Host <-> region copies; offsets and sizes in bytes. */
void tgrt_upload(tgrt_ctx* ctx, int32_t region, int64_t offset, const void* src, int64_t bytes);
void tgrt_download(tgrt_ctx* ctx, int32_t region, int64_t offset, void* dst, int64_t bytes);
void tgrt_synchronize(tgrt_ctx* ctx);
/* Optimizer step counter (1-based inside AdamW's bias correction) and learning rate. */
void tgrt_set_step(tgrt_ctx* ctx, int64_t step);
void tgrt_set_lr(tgrt_ctx* ctx, float lr);
/* Index of the micro-batch within the optimizer step (dropout masks depend on it). */
void tgrt_set_micro_batch(tgrt_ctx* ctx, int32_t index);
/* Sum of losses reported since the last call, and how many; resets both. */
double tgrt_take_loss(tgrt_ctx* ctx, int64_t* count);
/* Global gradient norm (before clipping) of the last optimizer step. */
float tgrt_last_grad_norm(tgrt_ctx* ctx);
/* "cpu" or "cuda". */
const char* tgrt_backend_name(void);

/* ------------------------------------------------------------------ kernels -- */

/* out[i,:] = table[ids[i],:] for i < n_tokens; table [vocab, d]. Errors: id out of range. */
void tgrt_embedding_fwd(tgrt_ctx* ctx, const char* loc, const float* table, const int32_t* ids,
                        float* out, int64_t n_tokens, int64_t d, int64_t vocab);
/* dtable = 0; dtable[ids[i],:] += dout[i,:]  (deterministic order). */
void tgrt_embedding_bwd(tgrt_ctx* ctx, const char* loc, const int32_t* ids, const float* dout,
                        float* dtable, int64_t n_tokens, int64_t d, int64_t vocab);
/* out[b,t,:] = x[b,t,:] + wpe[t,:]; x [batch, t, d], wpe [context >= t, d]. */
void tgrt_positional_fwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* wpe,
                         float* out, int64_t batch, int64_t t, int64_t d);
/* dwpe[t,:] = sum_b dout[b,t,:] for t < tlen, 0 for tlen <= t < context. */
void tgrt_positional_bwd(tgrt_ctx* ctx, const char* loc, const float* dout, float* dwpe,
                         int64_t batch, int64_t t, int64_t d, int64_t context);
/* out = a + b (n elements). out may alias a or b. */
void tgrt_add(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, float* out, int64_t n);
/* dst += src (n elements). */
void tgrt_accumulate(tgrt_ctx* ctx, const char* loc, float* dst, const float* src, int64_t n);
/* out[i] = value. */
void tgrt_fill(tgrt_ctx* ctx, const char* loc, float* out, int64_t n, float value);
/* Sets `bytes` bytes at p to zero. */
void tgrt_zero(tgrt_ctx* ctx, const char* loc, void* p, int64_t bytes);
/* Copies a rows x cols block: dst[r*dst_ld + c] = src[r*src_ld + c]. (split / concat / copy) */
void tgrt_copy2d(tgrt_ctx* ctx, const char* loc, const float* src, int64_t src_ld, float* dst,
                 int64_t dst_ld, int64_t rows, int64_t cols);
/* y = permute(x): x has shape [d0,d1,d2,d3] (pad lower ranks with leading 1s), y has shape
 * [d_p0, d_p1, d_p2, d_p3] with y[i_p0,i_p1,i_p2,i_p3] = x[i0,i1,i2,i3]. */
void tgrt_transpose4(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t d0,
                     int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2,
                     int32_t p3);

/* Layer normalisation (Ba et al. 2016) over the last dim d of x [rows, d]:
 *   mean = E[x], rstd = 1/sqrt(Var[x] + eps) (biased variance),
 *   y = (x - mean) * rstd * gamma + beta.  mean, rstd: [rows]. */
void tgrt_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* gamma,
                         const float* beta, float* y, float* mean, float* rstd, int64_t rows,
                         int64_t d, float eps);
/* xhat = (x-mean)*rstd; dbeta = sum_rows dy; dgamma = sum_rows dy*xhat (both overwritten);
 * g = dy*gamma; dx = rstd * (g - mean_d(g) - xhat * mean_d(g*xhat)). */
void tgrt_layer_norm_bwd(tgrt_ctx* ctx, const char* loc, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta, int64_t rows, int64_t d);

/* Batched row-major GEMM: for b < batch,
 *   C_b = alpha * op(A_b) * op(B_b) + beta * C_b,  C_b is m x n,
 *   op(A_b) is m x k (A_b stored k x m when trans_a), op(B_b) is k x n (n x k when trans_b),
 *   A_b = a + b*stride_a, etc. (strides in elements; 0 broadcasts a weight).
 * beta = 0 means C is not read (may hold garbage/NaN). */
void tgrt_matmul(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, float* c,
                 int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                 int32_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 float alpha, float beta);
/* Linear layer in one call: C = alpha * op(A) op(B) + bias, bias [n] added to every row;
 * C [m, n], op(A) [m, k], op(B) [k, n] as in tgrt_matmul (batch 1). C must not alias A or B.
 * CUDA: one cuBLASLt call with the bias epilogue (CUBLASLT_EPILOGUE_BIAS). */
void tgrt_matmul_bias(tgrt_ctx* ctx, const char* loc, const float* a, const float* b,
                      const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b, float alpha);
/* MLP up-projection in one call: pre = alpha * op(A) op(B) + bias (as tgrt_matmul_bias) and
 * out = GELU(pre) (tanh approximation, as tgrt_gelu_fwd); pre, out [m, n]; pre is kept for
 * the backward (tgrt_gelu_bwd reads it). pre and out must not alias each other, A or B.
 * CUDA: with TGRT_TF32=1 one cuBLASLt call with CUBLASLT_EPILOGUE_GELU_AUX_BIAS (D = out,
 * the aux output = pre); in exact fp32 mode, and for shapes the epilogue does not take
 * (n % 8 != 0), the bias epilogue then the own GELU kernel (bit-equal to the unfused ops). */
void tgrt_matmul_bias_gelu(tgrt_ctx* ctx, const char* loc, const float* a, const float* b,
                           const float* bias, float* pre, float* out, int64_t m, int64_t n,
                           int64_t k, int32_t trans_a, int32_t trans_b, float alpha);
/* out[r,:] = x[r,:] + bias[:]; x [rows, n]. out may alias x. */
void tgrt_bias_add(tgrt_ctx* ctx, const char* loc, const float* x, const float* bias, float* out,
                   int64_t rows, int64_t n);
/* dbias[:] = sum_r dy[r,:] (overwritten). */
void tgrt_bias_grad(tgrt_ctx* ctx, const char* loc, const float* dy, float* dbias, int64_t rows,
                    int64_t n);
/* GELU, tanh approximation (Hendrycks & Gimpel 2016):
 *   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void tgrt_gelu_fwd(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t n);
/* dx = dy * dGELU/dx(x). dx may alias dy. */
void tgrt_gelu_bwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* dy, float* dx,
                   int64_t n);
/* Inverted dropout: keep element i iff u(seed, step, i) >= rate, u uniform in [0,1) from a
 * counter-based hash of (seed, optimizer step from ctx, micro-batch index, i); y = keep ? x/(1-rate) : 0.
 * The same call with dy in place of x is the backward (the mask is regenerated). */
void tgrt_dropout(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t n, float rate,
                  uint64_t seed);
/* Causal (optionally sliding-window) mask on scores x [batch, tq, tk] (query i sits at key
 * position i + tk - tq): y[b,i,j] = x[b,i,j] if j <= i' and (window <= 0 or i' - j < window),
 * else masked_value. y may alias x. */
void tgrt_causal_mask(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t batch,
                      int64_t tq, int64_t tk, int64_t window, float masked_value);
/* Row softmax over the last dim: y = exp(x - max) / sum exp(x - max); x [rows, n].
 * A row of all -inf gives zeros. */
void tgrt_softmax_fwd(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t rows,
                      int64_t n);
/* dx = y * (dy - sum_n(dy * y)). dx may alias dy. */
void tgrt_softmax_bwd(tgrt_ctx* ctx, const char* loc, const float* y, const float* dy, float* dx,
                      int64_t rows, int64_t n);
/* loss[0] = mean over rows r with targets[r] != ignore_index of
 *   logsumexp(logits[r,:]) - logits[r, targets[r]]; 0 if no row counts. */
void tgrt_cross_entropy_fwd(tgrt_ctx* ctx, const char* loc, const float* logits,
                            const int32_t* targets, float* loss, int64_t rows, int64_t vocab,
                            int64_t ignore_index);
/* dlogits[r,:] = dloss[0] * (softmax(logits[r,:]) - onehot(targets[r])) / n_valid, rows with
 * ignore_index get 0. dlogits MAY alias logits (computed in place). */
void tgrt_cross_entropy_bwd(tgrt_ctx* ctx, const char* loc, const float* logits,
                            const int32_t* targets, const float* dloss, float* dlogits,
                            int64_t rows, int64_t vocab, int64_t ignore_index);
/* Fused attention (FlashAttention, Dao et al. 2022, with online softmax):
 * q, k, v, out [bh, t, hd]; lse [bh, t] = logsumexp of the scaled, masked scores row.
 * s = scale * q k^T; causal: key j visible to query i iff j <= i; window > 0 additionally
 * requires i - j < window. out = softmax(s) v. Never materialises t x t on CUDA.
 * CUDA precision: by default exact fp32 arithmetic (CUDA cores). With TGRT_TF32=1 in the
 * environment at context creation (which also lets cuBLASLt GEMMs use TF32) this and
 * tgrt_attention_bwd run on the TF32 tensor cores: fp32 in / out, products with operands
 * rounded to TF32 (10 mantissa bits, cvt.rna) and fp32 accumulation, fp32 online softmax,
 * lse and D; the forward's scores use 3xTF32 (hi/lo split), so lse stays fp32-accurate.
 * Expected error ~5e-4 (out) and ~1.5e-3 (dq, dk, dv) relative to the largest value, against
 * ~1e-6 in fp32; same masking, tile skipping and determinism (no float atomics). */
void tgrt_attention_fwd(tgrt_ctx* ctx, const char* loc, const float* q, const float* k,
                        const float* v, float* out, float* lse, int64_t bh, int64_t t,
                        int64_t hd, int32_t causal, int64_t window, float scale);
/* Backward of tgrt_attention_fwd: with P = exp(s - lse), D_i = sum(dout_i * out_i),
 * dv = P^T dout, dS = P * (dout v^T - D), dq = scale dS k, dk = scale dS^T q (overwritten). */
void tgrt_attention_bwd(tgrt_ctx* ctx, const char* loc, const float* q, const float* k,
                        const float* v, const float* out, const float* lse, const float* dout,
                        float* dq, float* dk, float* dv, int64_t bh, int64_t t, int64_t hd,
                        int32_t causal, int64_t window, float scale);
/* bf16 variants of the two above. bf16 tensors are stored as uint16_t bit patterns (the
 * upper half of the float32; tgrt_bf16_from_float rounds to nearest even). q, k, v, out,
 * dout, dq, dk, dv: bf16 [bh, t, hd]; lse: float32 [bh, t]. Products take bf16 operands
 * with float32 accumulation (the softmax, lse and D = rowsum(dout * out) are float32; dq,
 * dk, dv are accumulated in float32 and rounded once when stored); same masking as the
 * float32 versions; deterministic (no float atomics). CUDA: hd 32, 64 or 128 (tensor cores,
 * mma.sync m16n8k16); every tensor 16-byte aligned. CPU reference: converts to float32,
 * runs the float32 kernel above and rounds the bf16 outputs (RNE). */
void tgrt_attention_fwd_bf16(tgrt_ctx* ctx, const char* loc, const uint16_t* q,
                             const uint16_t* k, const uint16_t* v, uint16_t* out, float* lse,
                             int64_t bh, int64_t t, int64_t hd, int32_t causal, int64_t window,
                             float scale);
void tgrt_attention_bwd_bf16(tgrt_ctx* ctx, const char* loc, const uint16_t* q,
                             const uint16_t* k, const uint16_t* v, const uint16_t* out,
                             const float* lse, const uint16_t* dout, uint16_t* dq, uint16_t* dk,
                             uint16_t* dv, int64_t bh, int64_t t, int64_t hd, int32_t causal,
                             int64_t window, float scale);
/* bf16 <-> float32 on the host: to float is exact; from float rounds to nearest, ties to
 * even (NaN stays a quiet NaN, overflow gives +-inf). */
static inline float tgrt_bf16_to_float(uint16_t h) {
  union {
    uint32_t u;
    float f;
  } x;
  x.u = (uint32_t)h << 16;
  return x.f;
}
static inline uint16_t tgrt_bf16_from_float(float f) {
  union {
    uint32_t u;
    float f;
  } x;
  x.f = f;
  if ((x.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x.u >> 16) | 0x40u); /* NaN */
  return (uint16_t)((x.u + 0x7fffu + ((x.u >> 16) & 1u)) >> 16);
}
/* acc[0] += sum(g[i]^2). */
void tgrt_grad_norm_sq(tgrt_ctx* ctx, const char* loc, const float* g, int64_t n, float* acc);
/* From acc[0] = sum of squares: norm = sqrt(acc[0]); acc[1] = clip scale =
 * (max_norm > 0 && norm > max_norm) ? max_norm / (norm + 1e-6) : 1. Records norm for
 * tgrt_last_grad_norm. */
void tgrt_clip_scale(tgrt_ctx* ctx, const char* loc, float* acc, float max_norm);
/* AdamW (Loshchilov & Hutter 2019), step t and lr from the context, g' = g * clip[1]:
 *   m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;
 *   p -= lr * (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + weight_decay * p). */
void tgrt_adamw(tgrt_ctx* ctx, const char* loc, float* p, const float* g, float* m, float* v,
                int64_t n, float beta1, float beta2, float eps, float weight_decay,
                const float* clip);
/* Adds loss[0] to the context's loss sum (read back with tgrt_take_loss). */
void tgrt_report_loss(tgrt_ctx* ctx, const char* loc, const float* loss);

#ifdef __cplusplus
}
#endif
#endif /* TGRT_H */
