// Abi.cu — the extern "C" tgrt_* symbols of runtime/tgrt.h for the CUDA backend: each one
// forwards to its tgrt_cuda:: namesake (CudaRuntime.h). Kept apart from the implementation so
// that tools/cuda-check can link the CUDA code next to the CPU backend's tgrt_* symbols.
// Every kernel call opens a ProfileScope (TGRT_PROFILE=1; one flag test when unset).
//
// The kernels' forwarders are generated from the kernel list, runtime/tgrt_kernels.def: each
// TGRT_KERNEL entry becomes
//   ret tgrt_x(tgrt_ctx* ctx, const char* loc, <its other parameters>) {
//     tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_x", loc);
//     return tgrt_cuda::<TGRT_CUDA_tgrt_x>(C(ctx), loc, <the other arguments in order>);
//   }
// The TGRT_KERNEL_CUSTOM entries are written by hand: below (layer norm backward into the
// residual gradient, ZeRO-1 / ZeRO-2 AdamW) or in Comm.cu (the collectives).
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/Power.h"

#include <cstddef>
#include <cstdio>
#include <tuple>

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

// ---------------------------------------------------- generated kernel forwarders --
// The tgrt_cuda:: function of each TGRT_KERNEL entry of tgrt_kernels.def: it takes the
// kernel's arguments in the same order, the tgrt_cuda::Context for ctx. A plain kernel added to
// the list without a line here fails to compile (TGRT_CUDA_tgrt_... is not a member of
// tgrt_cuda).
#define TGRT_CUDA_tgrt_embedding_fwd embeddingFwd
#define TGRT_CUDA_tgrt_embedding_fwd_split embeddingFwdSplit
#define TGRT_CUDA_tgrt_embedding_bwd embeddingBwd
#define TGRT_CUDA_tgrt_embedding_bwd_acc embeddingBwdAcc
#define TGRT_CUDA_tgrt_positional_fwd positionalFwd
#define TGRT_CUDA_tgrt_positional_bwd positionalBwd
#define TGRT_CUDA_tgrt_add add
#define TGRT_CUDA_tgrt_add_mixed addMixed
#define TGRT_CUDA_tgrt_accumulate accumulate
#define TGRT_CUDA_tgrt_fill fill
#define TGRT_CUDA_tgrt_fill_loss_scaled fillLossScaled
#define TGRT_CUDA_tgrt_cast cast
#define TGRT_CUDA_tgrt_zero zero
#define TGRT_CUDA_tgrt_copy2d copy2d
#define TGRT_CUDA_tgrt_transpose4 transpose4
#define TGRT_CUDA_tgrt_layer_norm_fwd layerNormFwd
#define TGRT_CUDA_tgrt_layer_norm_fwd_ones layerNormFwdOnes
#define TGRT_CUDA_tgrt_matmul_bias_lda matmulBiasLda
#define TGRT_CUDA_tgrt_matmul_bias_gelu_lda matmulBiasGeluLda
#define TGRT_CUDA_tgrt_add_layer_norm_fwd addLayerNormFwd
#define TGRT_CUDA_tgrt_add_layer_norm_fwd_ones addLayerNormFwdOnes
#define TGRT_CUDA_tgrt_layer_norm_bwd layerNormBwd
#define TGRT_CUDA_tgrt_matmul matmul
#define TGRT_CUDA_tgrt_matmul_acc matmulAcc
#define TGRT_CUDA_tgrt_matmul_wgrad matmulWgrad
#define TGRT_CUDA_tgrt_matmul_wgrad_lda matmulWgradLda
#define TGRT_CUDA_tgrt_matmul_acc_lda matmulAccLda
#define TGRT_CUDA_tgrt_matmul_dgelu_bgrad matmulDgeluBgrad
#define TGRT_CUDA_tgrt_matmul_bias matmulBias
#define TGRT_CUDA_tgrt_matmul_bias_gelu matmulBiasGelu
#define TGRT_CUDA_tgrt_bias_add biasAdd
#define TGRT_CUDA_tgrt_bias_grad biasGrad
#define TGRT_CUDA_tgrt_bias_grad_acc biasGradAcc
#define TGRT_CUDA_tgrt_matmul_bias_residual matmulBiasResidual
#define TGRT_CUDA_tgrt_linear_cross_entropy linearCrossEntropy
#define TGRT_CUDA_tgrt_linear_cross_entropy_store linearCrossEntropyStore
#define TGRT_CUDA_tgrt_gelu_fwd geluFwd
#define TGRT_CUDA_tgrt_gelu_bwd geluBwd
#define TGRT_CUDA_tgrt_dropout dropout
#define TGRT_CUDA_tgrt_causal_mask causalMask
#define TGRT_CUDA_tgrt_softmax_fwd softmaxFwd
#define TGRT_CUDA_tgrt_softmax_bwd softmaxBwd
#define TGRT_CUDA_tgrt_cross_entropy_fwd crossEntropyFwd
#define TGRT_CUDA_tgrt_cross_entropy_bwd crossEntropyBwd
#define TGRT_CUDA_tgrt_cross_entropy_fwd_bwd crossEntropyFwdBwd
#define TGRT_CUDA_tgrt_attention_fwd attentionFwd
#define TGRT_CUDA_tgrt_attention_bwd attentionBwd
#define TGRT_CUDA_tgrt_rms_norm_fwd rmsNormFwd
#define TGRT_CUDA_tgrt_rms_norm_bwd rmsNormBwd
#define TGRT_CUDA_tgrt_rms_norm_bwd_acc rmsNormBwdAcc
#define TGRT_CUDA_tgrt_rope rope
#define TGRT_CUDA_tgrt_swiglu_fwd swigluFwd
#define TGRT_CUDA_tgrt_swiglu_bwd swigluBwd
#define TGRT_CUDA_tgrt_attention_gqa_fwd attentionGqaFwd
#define TGRT_CUDA_tgrt_attention_gqa_bwd attentionGqaBwd
#define TGRT_CUDA_tgrt_grad_norm_sq gradNormSq
#define TGRT_CUDA_tgrt_clip_scale clipScale
#define TGRT_CUDA_tgrt_adamw_wc adamw
#define TGRT_CUDA_tgrt_adamw_wc_g adamwG
#define TGRT_CUDA_tgrt_adamw_split adamwSplit
#define TGRT_CUDA_tgrt_adamw adamw
#define TGRT_CUDA_tgrt_adamw_islands adamwIslands
#define TGRT_CUDA_tgrt_report_loss reportLoss

namespace {
/// Parameter I of a kernel's function type (its declaration in tgrt.h): the generated
/// forwarders name their parameters by position, a2, a3, ..., since the list's parameter
/// lists cannot be split into types and names by the preprocessor.
template <class F> struct KernelParams;
template <class R, class... A> struct KernelParams<R(A...)> {
  using type = std::tuple<A...>;
};
template <class F, std::size_t I>
using KernelParam = std::tuple_element_t<I, typename KernelParams<F>::type>;
} // namespace

#define TGRT_ABI_CAT(a, b) TGRT_ABI_CAT_(a, b)
#define TGRT_ABI_CAT_(a, b) a##b
// The number of parameters of a parenthesised parameter list (1 to 32).
#define TGRT_ABI_COUNT(...)                                                                   \
  TGRT_ABI_COUNT_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, \
                  15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define TGRT_ABI_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
                        _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, \
                        _32, n, ...)                                                             \
  n
// m(F, i) for each position i after (ctx, loc) of the parameter list `params`.
#define TGRT_ABI_AFTER_LOC(params, m, F) TGRT_ABI_CAT(TGRT_ABI_POS_, TGRT_ABI_COUNT params)(m, F)
#define TGRT_ABI_POS_2(m, F)
#define TGRT_ABI_POS_3(m, F) m(F, 2)
#define TGRT_ABI_POS_4(m, F) TGRT_ABI_POS_3(m, F) m(F, 3)
#define TGRT_ABI_POS_5(m, F) TGRT_ABI_POS_4(m, F) m(F, 4)
#define TGRT_ABI_POS_6(m, F) TGRT_ABI_POS_5(m, F) m(F, 5)
#define TGRT_ABI_POS_7(m, F) TGRT_ABI_POS_6(m, F) m(F, 6)
#define TGRT_ABI_POS_8(m, F) TGRT_ABI_POS_7(m, F) m(F, 7)
#define TGRT_ABI_POS_9(m, F) TGRT_ABI_POS_8(m, F) m(F, 8)
#define TGRT_ABI_POS_10(m, F) TGRT_ABI_POS_9(m, F) m(F, 9)
#define TGRT_ABI_POS_11(m, F) TGRT_ABI_POS_10(m, F) m(F, 10)
#define TGRT_ABI_POS_12(m, F) TGRT_ABI_POS_11(m, F) m(F, 11)
#define TGRT_ABI_POS_13(m, F) TGRT_ABI_POS_12(m, F) m(F, 12)
#define TGRT_ABI_POS_14(m, F) TGRT_ABI_POS_13(m, F) m(F, 13)
#define TGRT_ABI_POS_15(m, F) TGRT_ABI_POS_14(m, F) m(F, 14)
#define TGRT_ABI_POS_16(m, F) TGRT_ABI_POS_15(m, F) m(F, 15)
#define TGRT_ABI_POS_17(m, F) TGRT_ABI_POS_16(m, F) m(F, 16)
#define TGRT_ABI_POS_18(m, F) TGRT_ABI_POS_17(m, F) m(F, 17)
#define TGRT_ABI_POS_19(m, F) TGRT_ABI_POS_18(m, F) m(F, 18)
#define TGRT_ABI_POS_20(m, F) TGRT_ABI_POS_19(m, F) m(F, 19)
#define TGRT_ABI_POS_21(m, F) TGRT_ABI_POS_20(m, F) m(F, 20)
#define TGRT_ABI_POS_22(m, F) TGRT_ABI_POS_21(m, F) m(F, 21)
#define TGRT_ABI_POS_23(m, F) TGRT_ABI_POS_22(m, F) m(F, 22)
#define TGRT_ABI_POS_24(m, F) TGRT_ABI_POS_23(m, F) m(F, 23)
#define TGRT_ABI_POS_25(m, F) TGRT_ABI_POS_24(m, F) m(F, 24)
#define TGRT_ABI_POS_26(m, F) TGRT_ABI_POS_25(m, F) m(F, 25)
#define TGRT_ABI_POS_27(m, F) TGRT_ABI_POS_26(m, F) m(F, 26)
#define TGRT_ABI_POS_28(m, F) TGRT_ABI_POS_27(m, F) m(F, 27)
#define TGRT_ABI_POS_29(m, F) TGRT_ABI_POS_28(m, F) m(F, 28)
#define TGRT_ABI_POS_30(m, F) TGRT_ABI_POS_29(m, F) m(F, 29)
#define TGRT_ABI_POS_31(m, F) TGRT_ABI_POS_30(m, F) m(F, 30)
#define TGRT_ABI_POS_32(m, F) TGRT_ABI_POS_31(m, F) m(F, 31)
#define TGRT_ABI_PARAM(F, i) , KernelParam<F, i> a##i
#define TGRT_ABI_ARG(F, i) , a##i

#define TGRT_KERNEL(ret, name, access, params)                                                  \
  ret name(tgrt_ctx* ctx, const char* loc                                                     \
               TGRT_ABI_AFTER_LOC(params, TGRT_ABI_PARAM, decltype(name))) {                  \
    tgrt_cuda::ProfileScope prof_(C(ctx), #name, loc);                                          \
    return tgrt_cuda::TGRT_CUDA_##name(C(ctx), loc TGRT_ABI_AFTER_LOC(params, TGRT_ABI_ARG, _)); \
  }
#define TGRT_KERNEL_CUSTOM(ret, name, access, params)
#define TGRT_KERNEL_INLINE(ret, name, access, params)
extern "C" {
#include "runtime/tgrt_kernels.def"
} // extern "C"
#undef TGRT_KERNEL_INLINE
#undef TGRT_KERNEL_CUSTOM
#undef TGRT_KERNEL

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

void tgrt_upload_async(tgrt_ctx* ctx, int32_t region, int64_t offset, const void* src,
                       int64_t bytes) {
  tgrt_cuda::uploadAsync(C(ctx), region, offset, src, bytes);
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

int32_t tgrt_run_graph(tgrt_ctx* ctx, int32_t slot, void (*fn)(tgrt_ctx*)) {
  return tgrt_cuda::runGraph(C(ctx), slot, fn);
}

double tgrt_take_loss(tgrt_ctx* ctx, int64_t* count) {
  return tgrt_cuda::takeLoss(C(ctx), count);
}

float tgrt_last_grad_norm(tgrt_ctx* ctx) {
  return tgrt_cuda::lastGradNorm(C(ctx));
}

// ----------------------------------------------------- hand-written forwarders --
// The TGRT_KERNEL_CUSTOM entries of tgrt_kernels.def that are not collectives (Comm.cu).

void tgrt_layer_norm_bwd_acc(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low, void* dgamma, void* dbeta, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd_acc", loc);
  tgrt_cuda::layerNormBwdAcc(C(ctx), loc, false, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt, low, dgamma, dbeta, rows, d);
}

void tgrt_layer_norm_bwd_acc_slots(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low, void* dgamma, void* dbeta, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd_acc_slots", loc);
  tgrt_cuda::layerNormBwdAcc(C(ctx), loc, true, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt, low, dgamma, dbeta, rows, d);
}

void tgrt_layer_norm_bwd_acc_bgrad(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt, const void* x, int32_t p_dt, const void* gamma, const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low, void* dgamma, void* dbeta, int32_t db_dt, void* dbias, int64_t rows, int64_t d) {
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_layer_norm_bwd_acc_bgrad", loc);
  if (!dbias) tgrt_cuda::fail(loc, "layer_norm_bwd_acc_bgrad: NULL dbias");
  tgrt_cuda::layerNormBwdAcc(C(ctx), loc, false, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, dres, low_dt, low, dgamma, dbeta, rows, d, db_dt, dbias);
}

void tgrt_adamw_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip, int32_t owner) {
  if (!ownsRange(C(ctx), loc, "adamw_owned", owner)) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_owned", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip);
}

void tgrt_adamw_wc_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay, const float* clip, int32_t w_dt, void* w, int32_t owner) {
  if (!ownsRange(C(ctx), loc, "adamw_wc_owned", owner)) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_adamw_wc_owned", loc);
  tgrt_cuda::adamw(C(ctx), loc, p_dt, p, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip, w_dt, w);
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

const char* tgrt_backend_name(void) { return "cuda"; }

int32_t tgrt_power_sample(tgrt_ctx* ctx, double* energy_j, double* sm_mhz, double* max_sm_mhz,
                          double* power_w, double* limit_w) {
  tgrt_cuda::checkCtx(C(ctx), "power_sample");
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  tgrt_cuda::PowerSample s;
  std::string why;
  if (!tgrt_cuda::powerSample(device, s, why)) return 0;
  if (energy_j) *energy_j = s.energyJ;
  if (sm_mhz) *sm_mhz = s.smMhz;
  if (max_sm_mhz) *max_sm_mhz = s.maxSmMhz;
  if (power_w) *power_w = s.powerW;
  if (limit_w) *limit_w = s.limitW;
  return 1;
}

void tgrt_tensor_stats(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, int64_t rows,
                       int64_t cols, int64_t ld, tgrt_stats* out) {
  tgrt_cuda::tensorStats(C(ctx), loc, dt, x, rows, cols, ld, out);
}

// Data parallelism (tgrt_comm_*, tgrt_set_comm, tgrt_all_reduce_mean*, tgrt_broadcast, and
// ZeRO-2/3's tgrt_all_gather_start, tgrt_reduce_scatter_mean_start, tgrt_all_reduce_sum_f32):
// Comm.cu (NCCL).

} // extern "C"
