// Abi.cu — the extern "C" tgrt_* symbols of runtime/tgrt.h for the CUDA backend: each one
// forwards to its tgrt_cuda:: namesake (CudaRuntime.h). Kept apart from the implementation so
// that tools/cuda-check can link the CUDA code next to the CPU backend's tgrt_* symbols.
// Every kernel call opens a ProfileScope (TGRT_PROFILE=1; one flag test when unset).
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Internal.h"

#include <cstdio>

namespace {
/// The opaque tgrt_ctx handed to emitted code is a tgrt_cuda::Context.
inline tgrt_cuda::Context* C(tgrt_ctx* ctx) { return reinterpret_cast<tgrt_cuda::Context*>(ctx); }

/// tgrt_adamw_owned: true when ctx's rank owns the range (always without a communicator);
/// with one, an owner outside [0, ranks) fails naming loc.
bool ownsRange(tgrt_cuda::Context* ctx, const char* loc, const char* what, int32_t owner) {
  tgrt_cuda::checkCtx(ctx, loc);
  int32_t rank = 0, ranks = 1;
  if (!tgrt_cuda::commRank(ctx, &rank, &ranks)) return true;
  if (owner < 0 || owner >= ranks)
    tgrt_cuda::fail(loc, "%s: owner %d outside [0, %d)", what, (int)owner, (int)ranks);
  return owner == rank;
}

/// tgrt_adamw_chunk: this rank's (rank 0 without a communicator) span [*begin, *begin + *count)
/// of n elements in chunks of c (tgrt_shard_span); false when it holds nothing. Fails on a NULL
/// ctx, negative n or c, or (with a communicator) c < ceil(n / ranks), naming loc.
bool chunkSpan(tgrt_cuda::Context* ctx, const char* loc, const char* what, int64_t n, int64_t c,
               int64_t* begin, int64_t* count) {
  tgrt_cuda::checkCtx(ctx, loc);
  if (n < 0 || c < 0)
    tgrt_cuda::fail(loc, "%s: negative size (n %lld, c %lld)", what, (long long)n, (long long)c);
  int32_t rank = 0, ranks = 1;
  if (tgrt_cuda::commRank(ctx, &rank, &ranks)) {
    const int64_t need = (n + ranks - 1) / ranks;
    if (c < need)
      tgrt_cuda::fail(loc, "%s: chunk of %lld elements < ceil(%lld / %d ranks) = %lld (the "
                           "ranks' shards do not cover the tensor)",
                      what, (long long)c, (long long)n, (int)ranks, (long long)need);
  }
  tgrt_shard_span(n, c, rank, begin, count);
  return *count > 0;
}

/// p + bytes, or NULL when p is NULL (adamw then reports the NULL pointer).
void* offsetPtr(void* p, int64_t bytes) { return p ? static_cast<char*>(p) + bytes : nullptr; }
} // namespace

extern "C" {

tgrt_ctx* tgrt_ctx_create(const tgrt_model* model) {
  return reinterpret_cast<tgrt_ctx*>(tgrt_cuda::createContext(model));
}

void tgrt_ctx_destroy(tgrt_ctx* ctx) {
  tgrt_cuda::destroyContext(C(ctx));
}

char* tgrt_region(tgrt_ctx* ctx, int32_t region) {
  return tgrt_cuda::region(C(ctx), region);
}

void tgrt_upload(tgrt_ctx* ctx, int32_t region, int64_t offset, const void* src, int64_t bytes) {
  tgrt_cuda::upload(C(ctx), region, offset, src, bytes);
}

void tgrt_download(tgrt_ctx* ctx, int32_t region, int64_t offset, void* dst, int64_t bytes) {
  tgrt_cuda::download(C(ctx), region, offset, dst, bytes);
}

void tgrt_synchronize(tgrt_ctx* ctx) {
  tgrt_cuda::synchronize(C(ctx));
}

int32_t tgrt_take_weights_stale(tgrt_ctx* ctx) {
  return tgrt_cuda::takeWeightsStale(C(ctx));
}

void tgrt_set_step(tgrt_ctx* ctx, int64_t step) {
  tgrt_cuda::setStep(C(ctx), step);
}

void tgrt_set_lr(tgrt_ctx* ctx, float lr) {
  tgrt_cuda::setLr(C(ctx), lr);
}

void tgrt_set_loss_scale(tgrt_ctx* ctx, float scale) {
  tgrt_cuda::setLossScale(C(ctx), scale);
}

void tgrt_set_micro_batch(tgrt_ctx* ctx, int32_t index) {
  tgrt_cuda::setMicroBatch(C(ctx), index);
}

double tgrt_take_loss(tgrt_ctx* ctx, int64_t* count) {
  return tgrt_cuda::takeLoss(C(ctx), count);
}

float tgrt_last_grad_norm(tgrt_ctx* ctx) {
  return tgrt_cuda::lastGradNorm(C(ctx));
}

void tgrt_embedding_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* table, const int32_t* ids, void* out, int64_t n_tokens, int64_t d, int64_t vocab) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_embedding_fwd", loc);
  tgrt_cuda::embeddingFwd(C(ctx), loc, dt, table, ids, out, n_tokens, d, vocab);
}

void tgrt_embedding_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const int32_t* ids, const void* dout, void* dtable, int64_t n_tokens, int64_t d, int64_t vocab) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_embedding_bwd", loc);
  tgrt_cuda::embeddingBwd(C(ctx), loc, dt, ids, dout, dtable, n_tokens, d, vocab);
}

void tgrt_positional_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* wpe, void* out, int64_t batch, int64_t t, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_positional_fwd", loc);
  tgrt_cuda::positionalFwd(C(ctx), loc, dt, x, wpe, out, batch, t, d);
}

void tgrt_positional_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* dout, void* dwpe, int64_t batch, int64_t t, int64_t d, int64_t context) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_positional_bwd", loc);
  tgrt_cuda::positionalBwd(C(ctx), loc, dt, dout, dwpe, batch, t, d, context);
}

void tgrt_add(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* out, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_add", loc);
  tgrt_cuda::add(C(ctx), loc, dt, a, b, out, n);
}

void tgrt_add_mixed(tgrt_ctx* ctx, const char* loc, int32_t out_dt, const void* a, int32_t b_dt, const void* b, void* out, int32_t low_dt, void* low, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_add_mixed", loc);
  tgrt_cuda::addMixed(C(ctx), loc, out_dt, a, b_dt, b, out, low_dt, low, n);
}

void tgrt_accumulate(tgrt_ctx* ctx, const char* loc, int32_t dt, void* dst, const void* src, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_accumulate", loc);
  tgrt_cuda::accumulate(C(ctx), loc, dt, dst, src, n);
}

void tgrt_fill(tgrt_ctx* ctx, const char* loc, int32_t dt, void* out, int64_t n, float value) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_fill", loc);
  tgrt_cuda::fill(C(ctx), loc, dt, out, n, value);
}

void tgrt_fill_loss_scaled(tgrt_ctx* ctx, const char* loc, int32_t dt, void* out, int64_t n, float value) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_fill_loss_scaled", loc);
  tgrt_cuda::fillLossScaled(C(ctx), loc, dt, out, n, value);
}

void tgrt_cast(tgrt_ctx* ctx, const char* loc, int32_t src_dt, const void* src, int32_t dst_dt, void* dst, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_cast", loc);
  tgrt_cuda::cast(C(ctx), loc, src_dt, src, dst_dt, dst, n);
}

void tgrt_zero(tgrt_ctx* ctx, const char* loc, void* p, int64_t bytes) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_zero", loc);
  tgrt_cuda::zero(C(ctx), loc, p, bytes);
}

void tgrt_copy2d(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* src, int64_t src_ld, void* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_copy2d", loc);
  tgrt_cuda::copy2d(C(ctx), loc, dt, src, src_ld, dst, dst_ld, rows, cols);
}

void tgrt_transpose4(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2, int32_t p3) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_transpose4", loc);
  tgrt_cuda::transpose4(C(ctx), loc, dt, x, y, d0, d1, d2, d3, p0, p1, p2, p3);
}

void tgrt_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_fwd", loc);
  tgrt_cuda::layerNormFwd(C(ctx), loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps);
}

void tgrt_add_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt, const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_add_layer_norm_fwd", loc);
  tgrt_cuda::addLayerNormFwd(C(ctx), loc, x_dt, a, b_dt, b, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps);
}

void tgrt_layer_norm_bwd(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* mean, const float* rstd, void* dx, void* dgamma, void* dbeta, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd", loc);
  tgrt_cuda::layerNormBwd(C(ctx), loc, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dx, dgamma, dbeta, rows, d);
}

void tgrt_layer_norm_bwd_acc(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low, void* dgamma, void* dbeta, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd_acc", loc);
  tgrt_cuda::layerNormBwdAcc(C(ctx), loc, false, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt, low, dgamma, dbeta, rows, d);
}
void tgrt_layer_norm_bwd_acc_slots(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low, void* dgamma, void* dbeta, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd_acc_slots", loc);
  tgrt_cuda::layerNormBwdAcc(C(ctx), loc, true, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt, low, dgamma, dbeta, rows, d);
}

void tgrt_matmul(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c, float alpha, float beta) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul", loc);
  tgrt_cuda::matmul(C(ctx), loc, dt, a, b, c, batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c, alpha, beta);
}

void tgrt_matmul_acc(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_acc", loc);
  tgrt_cuda::matmulAcc(C(ctx), loc, ab_dt, a, b, c_dt, c, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_matmul_dgelu_bgrad(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b, const void* pre, void* dx, void* dbias, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_dgelu_bgrad", loc);
  tgrt_cuda::matmulDgeluBgrad(C(ctx), loc, dt, a, b, pre, dx, dbias, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_matmul_bias(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b, const void* bias, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_bias", loc);
  tgrt_cuda::matmulBias(C(ctx), loc, dt, a, b, bias, c, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_matmul_bias_gelu(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b, const void* bias, void* pre, void* out, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_bias_gelu", loc);
  tgrt_cuda::matmulBiasGelu(C(ctx), loc, dt, a, b, bias, pre, out, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_bias_add(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* bias, void* out, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_bias_add", loc);
  tgrt_cuda::biasAdd(C(ctx), loc, dt, x, bias, out, rows, n);
}

void tgrt_bias_grad(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* dy, void* dbias, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_bias_grad", loc);
  tgrt_cuda::biasGrad(C(ctx), loc, dt, dy, dbias, rows, n);
}

void tgrt_bias_grad_acc(tgrt_ctx* ctx, const char* loc, int32_t dy_dt, const void* dy, int32_t acc_dt, void* dbias, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_bias_grad_acc", loc);
  tgrt_cuda::biasGradAcc(C(ctx), loc, dy_dt, dy, acc_dt, dbias, rows, n);
}

void tgrt_matmul_bias_residual(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b, int32_t c_dt, const void* bias, const void* res, void* out, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_bias_residual", loc);
  tgrt_cuda::matmulBiasResidual(C(ctx), loc, ab_dt, a, b, c_dt, bias, res, out, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_linear_cross_entropy(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* w, const int32_t* targets, const float* dloss, float* loss, void* dx, int32_t dw_dt, void* dw, void* scratch, int64_t rows, int64_t d, int64_t vocab, int64_t chunk_rows, int64_t ignore_index) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_linear_cross_entropy", loc);
  tgrt_cuda::linearCrossEntropy(C(ctx), loc, dt, x, w, targets, dloss, loss, dx, dw_dt, dw, scratch, rows, d, vocab, chunk_rows, ignore_index);
}

void tgrt_gelu_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_gelu_fwd", loc);
  tgrt_cuda::geluFwd(C(ctx), loc, dt, x, y, n);
}

void tgrt_gelu_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* dy, void* dx, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_gelu_bwd", loc);
  tgrt_cuda::geluBwd(C(ctx), loc, dt, x, dy, dx, n);
}

void tgrt_dropout(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t n, float rate, uint64_t seed) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_dropout", loc);
  tgrt_cuda::dropout(C(ctx), loc, dt, x, y, n, rate, seed);
}

void tgrt_causal_mask(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t batch, int64_t tq, int64_t tk, int64_t window, float masked_value) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_causal_mask", loc);
  tgrt_cuda::causalMask(C(ctx), loc, dt, x, y, batch, tq, tk, window, masked_value);
}

void tgrt_softmax_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_softmax_fwd", loc);
  tgrt_cuda::softmaxFwd(C(ctx), loc, dt, x, y, rows, n);
}

void tgrt_softmax_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* y, const void* dy, void* dx, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_softmax_bwd", loc);
  tgrt_cuda::softmaxBwd(C(ctx), loc, dt, y, dy, dx, rows, n);
}

void tgrt_cross_entropy_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits, const int32_t* targets, float* loss, int64_t rows, int64_t vocab, int64_t ignore_index) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_cross_entropy_fwd", loc);
  tgrt_cuda::crossEntropyFwd(C(ctx), loc, dt, logits, targets, loss, rows, vocab, ignore_index);
}

void tgrt_cross_entropy_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits, const int32_t* targets, const float* dloss, void* dlogits, int64_t rows, int64_t vocab, int64_t ignore_index) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_cross_entropy_bwd", loc);
  tgrt_cuda::crossEntropyBwd(C(ctx), loc, dt, logits, targets, dloss, dlogits, rows, vocab, ignore_index);
}

void tgrt_cross_entropy_fwd_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits, const int32_t* targets, float* loss, const float* dloss, void* dlogits, int64_t rows, int64_t vocab, int64_t ignore_index) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_cross_entropy_fwd_bwd", loc);
  tgrt_cuda::crossEntropyFwdBwd(C(ctx), loc, dt, logits, targets, loss, dloss, dlogits, rows, vocab, ignore_index);
}

void tgrt_attention_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q, const void* k, const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t, int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_fwd", loc);
  tgrt_cuda::attentionFwd(C(ctx), loc, dt, q, k, v, out, lse, batch, heads, t, hd, in_stride_b, in_stride_h, in_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void tgrt_attention_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q, const void* k, const void* v, const void* out, const float* lse, const void* dout, void* dq, void* dk, void* dv, int64_t batch, int64_t heads, int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t, int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_bwd", loc);
  tgrt_cuda::attentionBwd(C(ctx), loc, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, t, hd, in_stride_b, in_stride_h, in_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

// The Llama family (tgrt.h; Llama.cu and the attention files).
void tgrt_rms_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, int32_t y_dt, void* y, float* rstd, int64_t rows, int64_t d, float eps) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_rms_norm_fwd", loc);
  tgrt_cuda::rmsNormFwd(C(ctx), loc, x_dt, x, p_dt, gamma, y_dt, y, rstd, rows, d, eps);
}

void tgrt_rms_norm_bwd(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* rstd, void* dx, void* dgamma, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_rms_norm_bwd", loc);
  tgrt_cuda::rmsNormBwd(C(ctx), loc, y_dt, dy, x_dt, x, p_dt, gamma, rstd, dx, dgamma, rows, d);
}

void tgrt_rope(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t batch, int64_t t, int64_t heads, int64_t kv_heads, int64_t hd, float theta, const float* scaling, int32_t sign) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_rope", loc);
  tgrt_cuda::rope(C(ctx), loc, dt, x, y, batch, t, heads, kv_heads, hd, theta, scaling, sign);
}

void tgrt_swiglu_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t rows, int64_t f) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_swiglu_fwd", loc);
  tgrt_cuda::swigluFwd(C(ctx), loc, dt, x, y, rows, f);
}

void tgrt_swiglu_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* dy, void* dx, int64_t rows, int64_t f) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_swiglu_bwd", loc);
  tgrt_cuda::swigluBwd(C(ctx), loc, dt, x, dy, dx, rows, f);
}

void tgrt_attention_gqa_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q, const void* k, const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_gqa_fwd", loc);
  tgrt_cuda::attentionGqaFwd(C(ctx), loc, dt, q, k, v, out, lse, batch, heads, kv_heads, t, hd, in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void tgrt_attention_gqa_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q, const void* k, const void* v, const void* out, const float* lse, const void* dout, void* dq, void* dk, void* dv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_gqa_bwd", loc);
  tgrt_cuda::attentionGqaBwd(C(ctx), loc, dt, q, k, v, out, lse, dout, dq, dk, dv, batch, heads, kv_heads, t, hd, in_stride_b, in_stride_h, in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b, out_stride_h, out_stride_t, causal, window, scale);
}

void tgrt_grad_norm_sq(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* g, int64_t n, float* acc) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_grad_norm_sq", loc);
  tgrt_cuda::gradNormSq(C(ctx), loc, dt, g, n, acc);
}

void tgrt_clip_scale(tgrt_ctx* ctx, const char* loc, float* acc, float max_norm) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_clip_scale", loc);
  tgrt_cuda::clipScale(C(ctx), loc, acc, max_norm);
}

void tgrt_adamw_wc(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip, int32_t w_dt, void* w) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_wc", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip, w_dt, w);
}

void tgrt_adamw(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip);
}

void tgrt_adamw_wc_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip, int32_t w_dt, void* w, int32_t owner) {
  if (!ownsRange(C(ctx), loc, "adamw_wc_owned", owner)) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_wc_owned", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip, w_dt, w);
}

void tgrt_adamw_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip, int32_t owner) {
  if (!ownsRange(C(ctx), loc, "adamw_owned", owner)) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_owned", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip);
}

void tgrt_adamw_chunk(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, int64_t c, float beta1, float beta2, float eps, float weight_decay, const float* clip) {
  int64_t begin = 0, count = 0;
  if (!chunkSpan(C(ctx), loc, "adamw_chunk", n, c, &begin, &count)) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_chunk", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, offsetPtr(p, begin * tgrt_dtype_size(p_dt)), g, state_dt, m, v, count, beta1, beta2, eps, weight_decay, clip);
}

void tgrt_adamw_wc_chunk(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, int64_t c, float beta1, float beta2, float eps, float weight_decay, const float* clip, int32_t w_dt, void* w) {
  int64_t begin = 0, count = 0;
  if (!chunkSpan(C(ctx), loc, "adamw_wc_chunk", n, c, &begin, &count)) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_wc_chunk", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, offsetPtr(p, begin * tgrt_dtype_size(p_dt)), g, state_dt, m, v, count, beta1, beta2, eps, weight_decay, clip, w_dt, offsetPtr(w, begin * tgrt_dtype_size(w_dt)));
}

void tgrt_report_loss(tgrt_ctx* ctx, const char* loc, const float* loss) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_report_loss", loc);
  tgrt_cuda::reportLoss(C(ctx), loc, loss);
}
const char* tgrt_backend_name(void) { return "cuda"; }

void tgrt_tensor_stats(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, int64_t rows,
                       int64_t cols, int64_t ld, tgrt_stats* out) {
  tgrt_cuda::tensorStats(C(ctx), loc, dt, x, rows, cols, ld, out);
}

// Data parallelism (tgrt_comm_*, tgrt_set_comm, tgrt_all_reduce_mean*, tgrt_broadcast, and
// ZeRO-2/3's tgrt_all_gather_start, tgrt_reduce_scatter_mean_start, tgrt_all_reduce_sum_f32):
// Comm.cu (NCCL).

} // extern "C"
