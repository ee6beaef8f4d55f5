// Abi.cu — the extern "C" tgrt_* symbols of runtime/tgrt.h for the CUDA backend: each one
// forwards to its tgrt_cuda:: namesake (CudaRuntime.h). Kept apart from the implementation so
// that tools/cuda-check can link the CUDA code next to the CPU backend's tgrt_* symbols.
// Every kernel call opens a ProfileScope (TGRT_PROFILE=1; one flag test when unset).
#include "runtime/cuda/CudaRuntime.h"

namespace {
/// The opaque tgrt_ctx handed to emitted code is a tgrt_cuda::Context.
inline tgrt_cuda::Context* C(tgrt_ctx* ctx) { return reinterpret_cast<tgrt_cuda::Context*>(ctx); }
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

void tgrt_set_step(tgrt_ctx* ctx, int64_t step) {
  tgrt_cuda::setStep(C(ctx), step);
}

void tgrt_set_lr(tgrt_ctx* ctx, float lr) {
  tgrt_cuda::setLr(C(ctx), lr);
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

void tgrt_embedding_fwd(tgrt_ctx* ctx, const char* loc, const float* table, const int32_t* ids, float* out, int64_t n_tokens, int64_t d, int64_t vocab) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_embedding_fwd", loc);
  tgrt_cuda::embeddingFwd(C(ctx), loc, table, ids, out, n_tokens, d, vocab);
}

void tgrt_embedding_bwd(tgrt_ctx* ctx, const char* loc, const int32_t* ids, const float* dout, float* dtable, int64_t n_tokens, int64_t d, int64_t vocab) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_embedding_bwd", loc);
  tgrt_cuda::embeddingBwd(C(ctx), loc, ids, dout, dtable, n_tokens, d, vocab);
}

void tgrt_positional_fwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* wpe, float* out, int64_t batch, int64_t t, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_positional_fwd", loc);
  tgrt_cuda::positionalFwd(C(ctx), loc, x, wpe, out, batch, t, d);
}

void tgrt_positional_bwd(tgrt_ctx* ctx, const char* loc, const float* dout, float* dwpe, int64_t batch, int64_t t, int64_t d, int64_t context) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_positional_bwd", loc);
  tgrt_cuda::positionalBwd(C(ctx), loc, dout, dwpe, batch, t, d, context);
}

void tgrt_add(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, float* out, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_add", loc);
  tgrt_cuda::add(C(ctx), loc, a, b, out, n);
}

void tgrt_accumulate(tgrt_ctx* ctx, const char* loc, float* dst, const float* src, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_accumulate", loc);
  tgrt_cuda::accumulate(C(ctx), loc, dst, src, n);
}

void tgrt_fill(tgrt_ctx* ctx, const char* loc, float* out, int64_t n, float value) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_fill", loc);
  tgrt_cuda::fill(C(ctx), loc, out, n, value);
}

void tgrt_zero(tgrt_ctx* ctx, const char* loc, void* p, int64_t bytes) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_zero", loc);
  tgrt_cuda::zero(C(ctx), loc, p, bytes);
}

void tgrt_copy2d(tgrt_ctx* ctx, const char* loc, const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_copy2d", loc);
  tgrt_cuda::copy2d(C(ctx), loc, src, src_ld, dst, dst_ld, rows, cols);
}

void tgrt_transpose4(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2, int32_t p3) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_transpose4", loc);
  tgrt_cuda::transpose4(C(ctx), loc, x, y, d0, d1, d2, d3, p0, p1, p2, p3);
}

void tgrt_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_fwd", loc);
  tgrt_cuda::layerNormFwd(C(ctx), loc, x, gamma, beta, y, mean, rstd, rows, d, eps);
}

void tgrt_layer_norm_bwd(tgrt_ctx* ctx, const char* loc, const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd", loc);
  tgrt_cuda::layerNormBwd(C(ctx), loc, dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, d);
}

void tgrt_matmul(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, float* c, int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c, float alpha, float beta) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul", loc);
  tgrt_cuda::matmul(C(ctx), loc, a, b, c, batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c, alpha, beta);
}

void tgrt_matmul_bias(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_bias", loc);
  tgrt_cuda::matmulBias(C(ctx), loc, a, b, bias, c, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_matmul_bias_gelu(tgrt_ctx* ctx, const char* loc, const float* a, const float* b, const float* bias, float* pre, float* out, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_matmul_bias_gelu", loc);
  tgrt_cuda::matmulBiasGelu(C(ctx), loc, a, b, bias, pre, out, m, n, k, trans_a, trans_b, alpha);
}

void tgrt_bias_add(tgrt_ctx* ctx, const char* loc, const float* x, const float* bias, float* out, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_bias_add", loc);
  tgrt_cuda::biasAdd(C(ctx), loc, x, bias, out, rows, n);
}

void tgrt_bias_grad(tgrt_ctx* ctx, const char* loc, const float* dy, float* dbias, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_bias_grad", loc);
  tgrt_cuda::biasGrad(C(ctx), loc, dy, dbias, rows, n);
}

void tgrt_gelu_fwd(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_gelu_fwd", loc);
  tgrt_cuda::geluFwd(C(ctx), loc, x, y, n);
}

void tgrt_gelu_bwd(tgrt_ctx* ctx, const char* loc, const float* x, const float* dy, float* dx, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_gelu_bwd", loc);
  tgrt_cuda::geluBwd(C(ctx), loc, x, dy, dx, n);
}

void tgrt_dropout(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t n, float rate, uint64_t seed) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_dropout", loc);
  tgrt_cuda::dropout(C(ctx), loc, x, y, n, rate, seed);
}

void tgrt_causal_mask(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t batch, int64_t tq, int64_t tk, int64_t window, float masked_value) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_causal_mask", loc);
  tgrt_cuda::causalMask(C(ctx), loc, x, y, batch, tq, tk, window, masked_value);
}

void tgrt_softmax_fwd(tgrt_ctx* ctx, const char* loc, const float* x, float* y, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_softmax_fwd", loc);
  tgrt_cuda::softmaxFwd(C(ctx), loc, x, y, rows, n);
}

void tgrt_softmax_bwd(tgrt_ctx* ctx, const char* loc, const float* y, const float* dy, float* dx, int64_t rows, int64_t n) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_softmax_bwd", loc);
  tgrt_cuda::softmaxBwd(C(ctx), loc, y, dy, dx, rows, n);
}

void tgrt_cross_entropy_fwd(tgrt_ctx* ctx, const char* loc, const float* logits, const int32_t* targets, float* loss, int64_t rows, int64_t vocab, int64_t ignore_index) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_cross_entropy_fwd", loc);
  tgrt_cuda::crossEntropyFwd(C(ctx), loc, logits, targets, loss, rows, vocab, ignore_index);
}

void tgrt_cross_entropy_bwd(tgrt_ctx* ctx, const char* loc, const float* logits, const int32_t* targets, const float* dloss, float* dlogits, int64_t rows, int64_t vocab, int64_t ignore_index) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_cross_entropy_bwd", loc);
  tgrt_cuda::crossEntropyBwd(C(ctx), loc, logits, targets, dloss, dlogits, rows, vocab, ignore_index);
}

void tgrt_attention_fwd(tgrt_ctx* ctx, const char* loc, const float* q, const float* k, const float* v, float* out, float* lse, int64_t bh, int64_t t, int64_t hd, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_fwd", loc);
  tgrt_cuda::attentionFwd(C(ctx), loc, q, k, v, out, lse, bh, t, hd, causal, window, scale);
}

void tgrt_attention_bwd(tgrt_ctx* ctx, const char* loc, const float* q, const float* k, const float* v, const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv, int64_t bh, int64_t t, int64_t hd, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_bwd", loc);
  tgrt_cuda::attentionBwd(C(ctx), loc, q, k, v, out, lse, dout, dq, dk, dv, bh, t, hd, causal, window, scale);
}

void tgrt_attention_fwd_bf16(tgrt_ctx* ctx, const char* loc, const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* out, float* lse, int64_t bh, int64_t t, int64_t hd, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_fwd_bf16", loc);
  tgrt_cuda::attentionFwdBf16(C(ctx), loc, q, k, v, out, lse, bh, t, hd, causal, window, scale);
}

void tgrt_attention_bwd_bf16(tgrt_ctx* ctx, const char* loc, const uint16_t* q, const uint16_t* k, const uint16_t* v, const uint16_t* out, const float* lse, const uint16_t* dout, uint16_t* dq, uint16_t* dk, uint16_t* dv, int64_t bh, int64_t t, int64_t hd, int32_t causal, int64_t window, float scale) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_attention_bwd_bf16", loc);
  tgrt_cuda::attentionBwdBf16(C(ctx), loc, q, k, v, out, lse, dout, dq, dk, dv, bh, t, hd, causal, window, scale);
}

void tgrt_grad_norm_sq(tgrt_ctx* ctx, const char* loc, const float* g, int64_t n, float* acc) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_grad_norm_sq", loc);
  tgrt_cuda::gradNormSq(C(ctx), loc, g, n, acc);
}

void tgrt_clip_scale(tgrt_ctx* ctx, const char* loc, float* acc, float max_norm) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_clip_scale", loc);
  tgrt_cuda::clipScale(C(ctx), loc, acc, max_norm);
}

void tgrt_adamw(tgrt_ctx* ctx, const char* loc, float* p, const float* g, float* m, float* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw", loc);
  tgrt_cuda::adamw(C(ctx), loc, p, g, m, v, n, beta1, beta2, eps, weight_decay, clip);
}

void tgrt_report_loss(tgrt_ctx* ctx, const char* loc, const float* loss) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_report_loss", loc);
  tgrt_cuda::reportLoss(C(ctx), loc, loss);
}
const char* tgrt_backend_name(void) { return "cuda"; }

} // extern "C"
