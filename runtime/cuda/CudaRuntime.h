// CudaRuntime.h — the CUDA backend of runtime/tgrt.h as plain C++ functions in namespace
// tgrt_cuda. Abi.cu wraps each one as the extern "C" tgrt_* symbol; the check tool
// (tools/cuda-check) calls these directly so that it can link the CPU backend's tgrt_*
// symbols in the same program and compare the two.
//
// Every function has the meaning, arguments and error behaviour of its tgrt_* namesake in
// tgrt.h; pointers are device pointers and calls are asynchronous on the context's stream.
//
// Element types (enum tgrt_dtype). Every kernel takes f32, bf16 and f16 tensors (`void*` and
// the dtype arguments of tgrt.h), computes in float (AdamW on all-f32 tensors and the
// reductions' partial sums in double, as before) and rounds each output once (RNE, NaN and
// overflow as tgrt.h's helpers, bit for bit: Dtype.cuh). The f32 path computes exactly what
// the fp32-only backend computed (checked bit for bit against it on an H100). Memory-bound
// kernels move 16 bytes per access (4 f32 / 8 bf16 or f16 elements) when pointers and row
// lengths allow. Layer norm has vectorised kernels for one dtype everywhere and for x, gamma,
// beta f32 with y / dy bf16 or f16; other combinations run a generic scalar kernel. GEMMs run
// cuBLASLt with A, B, C, D (and the bias / GELU aux) of the call's dtype, CUBLAS_COMPUTE_32F
// and float alpha / beta (TF32 only for f32 with TGRT_TF32=1). matmul_bias_gelu fuses the
// GELU (CUBLASLT_EPILOGUE_GELU_AUX_BIAS) by default for bf16 / f16 and for f32 in TF32 mode;
// TGRT_GELU_EPILOGUE=0/1 forces it off / on. Attention: f32 (exact fp32 or TF32 kernels), bf16
// and f16 (tensor cores; head dims 32, 64, 128; 16-byte aligned tensors), plain and
// grouped-query (one implementation: plain attention is GQA with kv_heads = heads). The Llama
// family's RMSNorm, RoPE and SwiGLU: Llama.cu.
//
// Workspace (tgrt_model::workspace_bytes). Calls are ordered on one stream, so the scratch
// of one call never overlaps another's; the region must hold the largest single need (the
// same for every dtype):
//   - cuBLASLt GEMM: it gets the whole region; 32 MiB lets it pick its fastest algorithms
//     (with less it picks ones that need less; 0 works).
//   - attention_bwd, attention_gqa_bwd (f32, bf16, f16): 4*bh*t bytes with bh = batch *
//     heads, the query heads (D = rowsum(dout*out), float32); grouped-query attention needs
//     nothing more (dk, dv of a kv head are summed over its group in registers).
//   - embedding_bwd: 12*n_tokens bytes + a radix-sort scratch of about 8*n_tokens + 64 KiB,
//     + 8*d*min(ceil(n_tokens/32), 512) bytes (float32 sums of the pieces of runs that cross
//     a chunk of the sorted tokens).
//   - layer_norm_bwd / bias_grad: 8*d*ceil(rows/chunk) bytes (float32 partials), at most
//     2 KiB * d.
//   - rms_norm_bwd: 4*d*p bytes (float32 dgamma partials), p = min(512, ceil(rows / 8)) (a
//     warp per row, d <= 1024 f32 / 2048 bf16, f16), min(512, rows) (a block per row, d <=
//     8192) or min(512, ceil(rows / 32)) (the scalar kernels); at most 2 KiB * d.
//   - cross_entropy: 8*rows bytes (fwd_bwd: 256 + 8*rows); grad_norm_sq: 8 KiB.
//   - cuDNN attention (TGRT_ATTN=cudnn; CudnnAttention.cu): its graph's get_workspace_size(),
//     which tgrt-cuda-check --cudnn prints per shape. The forward needs little or none; the
//     backward about 4*bh*t*(hd + 1) bytes (bh = batch * heads: a float32 dQ accumulator and
//     the row sums) plus the engine's scratch; with TGRT_ATTN=cudnn-det on Hopper (cuDNN <
//     9.25) 2*bh*ceil64(t)^2 bytes more. When the region is smaller, the context allocates
//     the larger buffer beside the plan once and says so on stderr.
// Recommended: workspace_bytes = max(32 MiB, 4*bh*t,
// 24*n_tokens + 1 MiB + 8*d*min(ceil(n_tokens/32), 512), 2 KiB*d_max),
// where n_tokens = batch*context (also the cross-entropy rows) and d_max the widest row that
// layer_norm_bwd / rms_norm_bwd / bias_grad reduce. A call whose need exceeds the region fails with
// "tgrt: <loc>: workspace too small ...".
//
// Embedding backward order: the tokens are sorted stably by id and cut into chunks of
// max(32, ceil(n_tokens/512)); each
// id's tokens are summed in token order within a chunk, then the chunks' float32 sums in chunk
// order (a run of one id over many chunks is spread over many blocks). Deterministic (the
// order depends only on the ids), but an id with tokens in more than one chunk is not
// bit-equal to the CPU's token-order sum (tgrt-cuda-check compares within the dtype's
// tolerance, and two runs bit for bit).
//
// Loss scaling: setLossScale holds the context's scale S (1 until set; must be positive and
// finite). fillLossScaled writes value*S; clipScale divides the norm by S and folds 1/S into
// the AdamW factor (NaN when the norm is not finite); adamw reads that factor on the device
// and skips the update when it is not finite, so a skipped step needs no host round trip.
#ifndef TGRT_CUDA_CUDARUNTIME_H
#define TGRT_CUDA_CUDARUNTIME_H

#include "runtime/tgrt.h"

#include <cstdint>

namespace tgrt_cuda {

struct Context;

/// Minimum workspace bytes recommended for cuBLASLt (see the header comment).
constexpr int64_t kRecommendedGemmWorkspace = 32ll << 20;

// ---------------------------------------------------------------- context (driver) --
Context* createContext(const tgrt_model* model);
void destroyContext(Context* ctx);
char* region(Context* ctx, int32_t region);
void upload(Context* ctx, int32_t region, int64_t offset, const void* src, int64_t bytes);
void download(Context* ctx, int32_t region, int64_t offset, void* dst, int64_t bytes);
/// tgrt_upload_async: src copied into a pinned staging buffer (Context::staging), then
/// cudaMemcpyAsync on the context's stream; returns without waiting for the device (it waits
/// only when the staging buffer it reuses is still being copied from). Errors as upload.
void uploadAsync(Context* ctx, int32_t region, int64_t offset, const void* src, int64_t bytes);
void synchronize(Context* ctx);
/// tgrt_take_weights_stale: 1 once after upload wrote parameter values, then 0.
int32_t takeWeightsStale(Context* ctx);
void setStep(Context* ctx, int64_t step);
void setLr(Context* ctx, float lr);
void setLossScale(Context* ctx, float scale);
void setMicroBatch(Context* ctx, int32_t index);
double takeLoss(Context* ctx, int64_t* count);
/// tgrt_run_graph: fn's work on the context's stream as a CUDA graph (captured at slot's first
/// call, replayed after); 1 when it ran as a graph, 0 when call by call.
int32_t runGraph(Context* ctx, int32_t slot, void (*fn)(tgrt_ctx*));
/// Sets the GEMM algorithm choice (as TGRT_GEMM_AUTOTUNE: 1 the heuristic's algorithms timed
/// and cached, 2 also the wave model's tile configurations, 0 the heuristic's first) and the tuning cache file (NULL or "": none) for plans made from now on.
void setGemmAutotune(Context* ctx, int mode, const char* cachePath);
/// GEMM plans whose algorithm was timed this run, and taken from the tuning cache.
void gemmTuneCounts(Context* ctx, int* timed, int* cached);
/// TGRT_GEMM_STEP_TUNE=1 (Context::step_tune): GEMM plans decided by their times in the
/// step, how many of them took another algorithm than the fastest alone, and whether a plan
/// is still being timed (1: the steps run call by call).
void gemmStepTuneCounts(Context* ctx, int* decided, int* changed, int* active);
/// Sets TGRT_CUDA_SYNC's mode (synchronise after every launch; tests); returns the old one.
bool setSyncEach(Context* ctx, bool on);
float lastGradNorm(Context* ctx);
/// The context's stream as a cudaStream_t (void* keeps CUDA headers out of this header).
void* stream(Context* ctx);
/// Device name, e.g. "NVIDIA H100 80GB HBM3".
const char* deviceName(Context* ctx);

// -------------------------------------------------------------------------- kernels --
// Floating tensors are `void*` with their tgrt_dtype (`dt`, or one per tensor group) as in
// tgrt.h; every kernel takes f32, bf16 and f16 (float arithmetic, outputs rounded once).
void embeddingFwd(Context* ctx, const char* loc, int32_t dt, const void* table,
                  const int32_t* ids, void* out, int64_t n_tokens, int64_t d, int64_t vocab);
/// tgrt_embedding_fwd_split: the f32 rows of a table with split master values (hi the bf16
/// working copy, lo the low halves). Kernels.cu.
void embeddingFwdSplit(Context* ctx, const char* loc, const void* hi, const void* lo,
                       const int32_t* ids, void* out, int64_t n_tokens, int64_t d, int64_t vocab);
void embeddingBwd(Context* ctx, const char* loc, int32_t dt, const int32_t* ids,
                  const void* dout, void* dtable, int64_t n_tokens, int64_t d, int64_t vocab);
/// tgrt_embedding_bwd_acc: embeddingBwd's row sums added into dtable (only the rows ids name
/// are read and written; no memset of the table).
void embeddingBwdAcc(Context* ctx, const char* loc, int32_t dt, const int32_t* ids,
                     const void* dout, void* dtable, int64_t n_tokens, int64_t d, int64_t vocab);
void positionalFwd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* wpe,
                   void* out, int64_t batch, int64_t t, int64_t d);
void positionalBwd(Context* ctx, const char* loc, int32_t dt, const void* dout, void* dwpe,
                   int64_t batch, int64_t t, int64_t d, int64_t context);
void add(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* out,
         int64_t n);
/// out = a + b across types, optionally low = out in low_dt (tgrt_add_mixed).
void addMixed(Context* ctx, const char* loc, int32_t out_dt, const void* a, int32_t b_dt,
              const void* b, void* out, int32_t low_dt, void* low, int64_t n);
void accumulate(Context* ctx, const char* loc, int32_t dt, void* dst, const void* src,
                int64_t n);
void fill(Context* ctx, const char* loc, int32_t dt, void* out, int64_t n, float value);
/// fill with value * the context's loss scale (setLossScale), the product rounded to float
/// on the host, then to dt.
void fillLossScaled(Context* ctx, const char* loc, int32_t dt, void* out, int64_t n,
                    float value);
void cast(Context* ctx, const char* loc, int32_t src_dt, const void* src, int32_t dst_dt,
          void* dst, int64_t n);
void zero(Context* ctx, const char* loc, void* p, int64_t bytes);
void copy2d(Context* ctx, const char* loc, int32_t dt, const void* src, int64_t src_ld, void* dst,
            int64_t dst_ld, int64_t rows, int64_t cols);
void transpose4(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t d0,
                int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2,
                int32_t p3);
/// Vectorised (row in registers) for every dtype combination where x, gamma / beta and y
/// share one type, or x, gamma / beta are f32 and y bf16 / f16; other combinations run a
/// scalar kernel that reads each tensor in its own type.
void layerNormFwd(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                  const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean,
                  float* rstd, int64_t rows, int64_t d, float eps);
/// tgrt_layer_norm_fwd_ones: y [rows, d + TGRT_ONES_COLUMNS], its last columns 1, 0, ...
void layerNormFwdOnes(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                  const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean,
                  float* rstd, int64_t rows, int64_t d, float eps);
/// tgrt_add_layer_norm_fwd: x = a + b (add_mixed), then layerNormFwd(x). One register
/// kernel for the typed shapes (bit-equal to the two calls); else the two calls.
void addLayerNormFwd(Context* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt,
                     const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta,
                     int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                     float eps);
/// tgrt_add_layer_norm_fwd_ones: addLayerNormFwd with y [rows, d + TGRT_ONES_COLUMNS], its
/// last columns 1, 0, ... (the register kernel with a row pitch; else the two calls).
void addLayerNormFwdOnes(Context* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt,
                         const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta,
                         int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                         float eps);
void layerNormBwd(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                  const void* x, int32_t p_dt, const void* gamma, const float* mean,
                  const float* rstd, void* dx, void* dgamma, void* dbeta, int64_t rows,
                  int64_t d);
void matmul(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* c,
            int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
            int64_t stride_a, int64_t stride_b, int64_t stride_c, float alpha, float beta);
/// Layer norm backward accumulated into the residual gradient (tgrt_layer_norm_bwd_acc).
/// `slots`: tgrt_layer_norm_bwd_acc_slots (dgamma, dbeta added into, each sum rounded to p_dt
/// first); else they are overwritten. dbias not NULL (not with `slots`):
/// tgrt_layer_norm_bwd_acc_bgrad, dbias (db_dt) = the column sums of low (or of the updated
/// dres without low).
void layerNormBwdAcc(Context* ctx, const char* loc, bool slots, int32_t y_dt, const void* dy,
                     int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                     const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low,
                     void* dgamma, void* dbeta, int64_t rows, int64_t d,
                     int32_t db_dt = TGRT_F32, void* dbias = nullptr);
/// C (c_dt) = alpha op(A) op(B) + beta C, A and B in ab_dt (tgrt_matmul_acc: beta 1; C not
/// read with beta 0).
void matmulAcc(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
               int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
               int32_t trans_b, float alpha, float beta = 1.0f);
/// C (c_dt) = alpha op(A) op(B) (C not read) and, dbias not NULL, dbias (c_dt) = column
/// sums of B (tgrt_matmul_wgrad): the GEMM then the own column sums stored into dbias, or
/// (TGRT_BGRAD_EPILOGUE=1, when cuBLASLt has an algorithm) one call with
/// CUBLASLT_EPILOGUE_BGRADA.
void matmulWgrad(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
                 int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                 int32_t trans_b, float alpha, void* dbias);
/// Selects matmulWgrad's bias-gradient path (tests): the BGRADA epilogue or the own kernel.
void setBgradEpilogue(Context* ctx, bool on);
/// The own bias gradient's row chunks (tests, TGRT_BGRAD_CHUNKS): 1..256; else (0) the
/// default, a function of the columns (Kernels.cu biasGradChunks).
void setBgradChunks(Context* ctx, int chunks);
/// The fused layer-norm backward's RELOAD variant (tests, TGRT_LN_BWD_RELOAD; default on).
void setLnBwdReload(Context* ctx, bool on);
/// AdamW's arithmetic for all-f32 p, m, v: f32 (true, the default) or f64 (false, the CPU
/// reference's; TGRT_ADAMW_MATH). The check tool's switch; returns the setting before.
bool setAdamwF32(Context* ctx, bool f32);
/// AdamW's largest grid in blocks (Context::adamw_blocks, TGRT_ADAMW_BLOCKS; default 65536):
/// tests and the check tool; returns the value before. Aborts (fail) on a value < 1.
int setAdamwBlocks(Context* ctx, int blocks);
/// The 16-bit cross-entropy's variant (Context::ce_fast: 0, 6 or 7, or -1 per vocabulary, the
/// default; tests and the bench, TGRT_CE_FAST); returns the variant before. Aborts (fail) on
/// another value.
int setCeFast(Context* ctx, int variant);
/// The 16-bit cross-entropy's variant by default (Context::ce_fast -1) for rows of `vocab`
/// logits of `elemBytes` bytes (2: bf16 / f16) on a device with `smCount` SMs and `l2Bytes`
/// bytes of L2: 7 (blocks of 256 threads, 4 rows per SM) when those rows, each read twice,
/// fit in half of L2 (4 x vocab x elemBytes x smCount <= l2Bytes / 2), so the second read
/// hits L2; else 6 (blocks of 512, 2 rows per SM), also when a size is 0 (unknown). On an
/// H100 (132 SMs, l2CacheSize 52428800): 7 up to V 24824 in bf16; H200s report 52428800 or
/// 62914560 (60 MiB, driver 580.159.04, 2026-11-30), the latter 7 up to V 29789 (7/8 of L2
/// before 2026-12-01). Kernels.cu has the measurements it rests on; never fails.
int ceVariantFor(int64_t vocab, int64_t elemBytes, int64_t smCount, int64_t l2Bytes);
/// ceVariantFor on the context's device (its SMs and L2, read at creation): the variant the
/// 16-bit cross-entropy takes by default (Context::ce_fast -1) for rows of `vocab` logits of
/// `elemBytes` bytes. Never fails.
int ceAutoVariant(const Context* ctx, int64_t vocab, int64_t elemBytes);
/// dx = alpha op(A) op(B) * GELU'(pre), dbias = column sums of dx (tgrt_matmul_dgelu_bgrad).
void matmulDgeluBgrad(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                      const void* pre, void* dx, void* dbias, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b, float alpha);
/// C = alpha op(A) op(B) + bias (tgrt_matmul_bias): cuBLASLt's bias epilogue (bias of C's
/// dtype), falling back to the GEMM and the bias kernel when no epilogue algorithm exists
/// for the shape.
/// lda: a's rows that far apart (0: k; a not transposed).
void matmulBias(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                const void* bias, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                int32_t trans_b, float alpha, int64_t lda = 0);
/// tgrt_matmul_wgrad_lda: C = alpha a^T op(b) with a [k, m] stored rows lda apart (no bias
/// gradient).
void matmulWgradLda(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
                    int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                    int32_t trans_b, float alpha);
/// tgrt_matmul_acc_lda: C += alpha a^T op(b) with a [k, m] stored rows lda apart.
void matmulAccLda(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
                  int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                  int32_t trans_b, float alpha);
/// tgrt_matmul_bias_lda: matmulBias with a [m, k] rows lda apart.
void matmulBiasLda(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                   const void* bias, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                   int32_t trans_b, float alpha);
/// tgrt_matmul_bias_gelu_lda: matmulBiasGelu with a [m, k] rows lda apart.
void matmulBiasGeluLda(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                       const void* bias, void* pre, void* out, int64_t m, int64_t n, int64_t k,
                       int64_t lda, int32_t trans_b, float alpha);
/// pre = alpha op(A) op(B) + bias, out = GELU(pre) (tgrt_matmul_bias_gelu): one cuBLASLt call
/// with CUBLASLT_EPILOGUE_GELU_AUX_BIAS (aux = pre, of out's dtype) for bf16 / f16, and for
/// f32 in TF32 mode; otherwise (TGRT_GELU_EPILOGUE=0, exact f32), or when that epilogue has
/// no algorithm for the shape, matmulBias then geluFwd.
void matmulBiasGelu(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                    const void* bias, void* pre, void* out, int64_t m, int64_t n, int64_t k,
                    int32_t trans_a, int32_t trans_b, float alpha, int64_t lda = 0);
/// The own Hopper GEMM's epilogue (Gemm.cu): none, + bias, + bias then GELU (pre stored).
/// SwigluBwd: the product dy = alpha a op(b) [m, n], rounded to bf16, is SwiGLU's output
/// gradient (tgrt_swiglu_bwd with f = n); `pre` is its input x = [gate | up] [m, 2n] (read)
/// and `out` its input gradient dx = [dgate | dup] [m, 2n] (written; dy itself is not
/// stored), the bits of tgrt_swiglu_bwd on that dy. Only the epilogue-warpgroup schedules.
enum class GemmEpilogue { None = 0, Bias = 1, BiasGelu = 2, SwigluBwd = 3 };
/// The own Hopper GEMM's schedule (Gemm.cu): PingPong (persistent, one block per SM, its two
/// consumer warpgroups on alternate 128 x 128 tiles), Cooperative256 (a block per 128 x 256
/// tile, both warpgroups on it), Cooperative128 (a block per 128 x 128 tile, two blocks per
/// SM), Persistent256 (gemmBf16's default: Cooperative256's tiles walked by one block per SM,
/// 4 stages, stores through two 64 x 64 boxes of shared memory and TMA), PersistentEpilogue
/// (3 stages, the stores and GELU done by a third warpgroup while the consumers run the next
/// tile), ClusterEpilogue
/// (PersistentEpilogue in clusters of 2 blocks on vertically adjacent tiles, sharing each
/// stage's tile of b by TMA multicast: half of b's L2 reads), Cluster256 (Persistent256 in
/// such clusters).
enum class GemmSchedule {
  PingPong = 0,
  Cooperative256 = 1,
  Cooperative128 = 2,
  Persistent256 = 3,
  PersistentEpilogue = 4,
  ClusterEpilogue = 5,
  Cluster256 = 6
};
/// tgc's own GEMM (Gemm.cu; TMA + mbarrier + wgmma, warp-specialized): out [m, n] = alpha a
/// [m, k] op(b), every matrix bf16 row-major: b [n, k] with trans_b (nn.Linear's [out, in]
/// weight), else b [k, n] (the persistent 128 x 256 schedules only); f32 accumulation, out rounded once
/// (RNE). Bias: + bias [n] (bf16) in f32 first. BiasGelu: pre [m, n] = the biased sum rounded
/// to bf16, out = GELU(pre) (tanh form as x sigmoid(2u), Gelu.cuh geluFast: within a bf16
/// unit in the last place of tgrt_gelu_fwd of that pre). Fails (located) unless n and k
/// are multiples of 8, pointers 16-byte aligned (the bias 4-byte) and the device has compute
/// capability 9.0.
/// blocks (the persistent schedules): the grid, 0 = one block per SM (tests pass 1 or 2 so
/// that each block walks many tiles). The bias / GELU epilogue GEMMs take it where it is
/// timed faster than cuBLASLt (Kernels.cu ownGemmChoice, TGRT_OWN_GEMM).
void gemmBf16(Context* ctx, const char* loc, const void* a, const void* b, const void* bias,
              void* pre, void* out, int64_t m, int64_t n, int64_t k, int32_t trans_b, float alpha,
              GemmEpilogue epi, GemmSchedule sched = GemmSchedule::Persistent256, int blocks = 0);
/// The bias / GELU epilogue GEMMs' use of gemmBf16 (tests; TGRT_OWN_GEMM): 0 never, 1 where
/// timed faster than cuBLASLt, 2 always where it applies; every plan decides again.
void setOwnGemm(Context* ctx, int mode);
/// True when gemmBf16 runs on ctx's device (compute capability 9.0, the sm_90a cubin).
bool ownGemmAvailable(const Context* ctx);
/// Selects matmulBiasGelu's path for every dtype (tests): the GELU_AUX_BIAS epilogue or bias
/// epilogue + geluFwd.
void setGeluEpilogue(Context* ctx, bool on);
/// Path of matmulDgeluBgrad (as TGRT_DGELU_EPILOGUE): 0 own kernels, 1 DGELU epilogue + own
/// bias gradient, 2 DGELU_BGRAD epilogue.
void setDgeluEpilogue(Context* ctx, int mode);
void biasAdd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* bias,
             void* out, int64_t rows, int64_t n);
void biasGrad(Context* ctx, const char* loc, int32_t dt, const void* dy, void* dbias,
              int64_t rows, int64_t n);
/// tgrt_linear_cross_entropy: per chunk of rows the logits GEMM into scratch, the
/// cross-entropy backward kernel in place (row losses into scratch, the valid count over all
/// rows counted first), the dx GEMM and the dw GEMM with beta 1; the loss at the end.
void linearCrossEntropy(Context* ctx, const char* loc, int32_t dt, const void* x, const void* w,
                        const int32_t* targets, const float* dloss, float* loss, void* dx,
                        int32_t dw_dt, void* dw, void* scratch, int64_t rows, int64_t d,
                        int64_t vocab, int64_t chunk_rows, int64_t ignore_index);
/// tgrt_linear_cross_entropy_store: linearCrossEntropy with the first chunk's dw GEMM at beta
/// 0 (dw written, not added to).
void linearCrossEntropyStore(Context* ctx, const char* loc, int32_t dt, const void* x,
                             const void* w, const int32_t* targets, const float* dloss,
                             float* loss, void* dx, int32_t dw_dt, void* dw, void* scratch,
                             int64_t rows, int64_t d, int64_t vocab, int64_t chunk_rows,
                             int64_t ignore_index);
/// dbias (acc_dt) += column sums of dy (dy_dt) (tgrt_bias_grad_acc): the column-sum kernels
/// with an accumulating store.
void biasGradAcc(Context* ctx, const char* loc, int32_t dy_dt, const void* dy, int32_t acc_dt,
                 void* dbias, int64_t rows, int64_t n);
/// out = res + (alpha op(A) op(B) + bias) (tgrt_matmul_bias_residual): one cuBLASLt call (C =
/// res, beta 1, D = out, bias epilogue in D's type); without an algorithm, copy + matmulAcc +
/// biasAdd.
void matmulBiasResidual(Context* ctx, const char* loc, int32_t ab_dt, const void* a,
                        const void* b, int32_t c_dt, const void* bias, const void* res, void* out,
                        int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
                        float alpha);
void geluFwd(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t n);
void geluBwd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* dy, void* dx,
             int64_t n);
void dropout(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t n,
             float rate, uint64_t seed);
void causalMask(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t batch,
                int64_t tq, int64_t tk, int64_t window, float masked_value);
void softmaxFwd(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t rows,
                int64_t n);
void softmaxBwd(Context* ctx, const char* loc, int32_t dt, const void* y, const void* dy,
                void* dx, int64_t rows, int64_t n);
/// Reads the logits in their dtype (never a float32 copy of them).
void crossEntropyFwd(Context* ctx, const char* loc, int32_t dt, const void* logits,
                     const int32_t* targets, float* loss, int64_t rows, int64_t vocab,
                     int64_t ignore_index);
void crossEntropyBwd(Context* ctx, const char* loc, int32_t dt, const void* logits,
                     const int32_t* targets, const float* dloss, void* dlogits, int64_t rows,
                     int64_t vocab, int64_t ignore_index);
void crossEntropyFwdBwd(Context* ctx, const char* loc, int32_t dt, const void* logits,
                        const int32_t* targets, float* loss, const float* dloss, void* dlogits,
                        int64_t rows, int64_t vocab, int64_t ignore_index);
/// Flash attention on dt: f32 runs the exact fp32 kernels (Attention.cu), or the TF32 ones
/// (AttentionTf32.cu) when the context has TGRT_TF32=1; bf16 / f16 run the tensor-core
/// kernels of AttentionBf16.cu (attentionFwd16 / attentionBwd16), or cuDNN's fused SDPA
/// (CudnnAttention.cu) when the context's AttentionImpl says so (TGRT_ATTN). Arguments as
/// tgrt_attention_fwd / tgrt_attention_bwd (strided layouts, in elements; rows of hd
/// contiguous elements, 16-byte aligned: strides multiples of 4 (f32) / 8 (bf16, f16)).
void attentionFwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                  const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t t,
                  int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                  int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                  int64_t window, float scale);
void attentionBwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                  const void* v, const void* out, const float* lse, const void* dout, void* dq,
                  void* dk, void* dv, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                  int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                  int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                  int64_t window, float scale);
/// bf16 / f16 attention (AttentionBf16.cu; dt TGRT_BF16 or TGRT_F16): 2-byte bit patterns,
/// mma.sync m16n8k16 tensor cores with fp32 accumulation, fp32 softmax and lse.
void attentionFwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                    const void* v, void* out, float* lse, int64_t batch, int64_t heads, int64_t t,
                    int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                    int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                    int32_t causal, int64_t window, float scale);
void attentionBwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                    const void* v, const void* out, const float* lse, const void* dout, void* dq,
                    void* dk, void* dv, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                    int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                    int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                    int32_t causal, int64_t window, float scale);
/// TF32 tensor-core attention (AttentionTf32.cu): fp32 in / out like attentionFwd /
/// attentionBwd, products on mma.sync m16n8k8 TF32 with fp32 accumulation and softmax.
/// attentionFwd / attentionBwd run these for f32 when the context has TGRT_TF32=1; the check
/// tool calls them directly.
void attentionFwdTf32(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                      float* out, float* lse, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                      int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                      int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                      int32_t causal, int64_t window, float scale);
void attentionBwdTf32(Context* ctx, const char* loc, const float* q, const float* k, const float* v,
                      const float* out, const float* lse, const float* dout, float* dq, float* dk,
                      float* dv, int64_t batch, int64_t heads, int64_t t, int64_t hd,
                      int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                      int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                      int32_t causal, int64_t window, float scale);
/// Grouped-query attention (tgrt_attention_gqa_fwd / _bwd): k, v (and dk, dv) have kv_heads
/// heads (heads % kv_heads == 0) in their own strides; query head h reads kv head
/// h / (heads / kv_heads) in place. The one implementation of every attention family:
/// attentionFwd / attentionBwd are these with kv_heads = heads and the kv strides = the in
/// strides (the same kernels, the same bits). The backward's dk / dv kernels own a (kv head,
/// key tile) and loop over the group's query heads and their query tiles, accumulating in
/// registers (deterministic, no float atomics, no extra workspace: D is 4 * batch * heads * t
/// bytes as before). dt f32: exact fp32 kernels, or TF32 with TGRT_TF32=1; bf16 / f16: the
/// tensor-core kernels.
void attentionGqaFwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                     const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                     int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                     int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                     int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                     int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                     float scale);
void attentionGqaBwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                     const void* v, const void* out, const float* lse, const void* dout, void* dq,
                     void* dk, void* dv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
                     int64_t hd, int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                     int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                     int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                     int32_t causal, int64_t window, float scale);
/// attentionGqaFwd / attentionGqaBwd of the bf16 / f16 kernels (AttentionBf16.cu) and of the
/// TF32 kernels (AttentionTf32.cu), for the check tool; attentionFwd16 etc. above are these
/// with kv_heads = heads, kv strides = in strides.
void attentionGqaFwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale);
void attentionGqaBwd16(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, const void* out, const float* lse, const void* dout,
                       void* dq, void* dk, void* dv, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale);
void attentionGqaFwdTf32(Context* ctx, const char* loc, const float* q, const float* k,
                         const float* v, float* out, float* lse, int64_t batch, int64_t heads,
                         int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                         int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                         int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                         int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                         int64_t window, float scale);
void attentionGqaBwdTf32(Context* ctx, const char* loc, const float* q, const float* k,
                         const float* v, const float* out, const float* lse, const float* dout,
                         float* dq, float* dk, float* dv, int64_t batch, int64_t heads,
                         int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                         int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                         int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                         int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                         int64_t window, float scale);
// The Llama family (Llama.cu), as tgrt.h.
/// RMSNorm: row in registers (a warp per row, or the block per row for wide rows, d <= 8192)
/// for all-one-type and x, gamma f32 with y bf16 / f16; else a scalar kernel.
void rmsNormFwd(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                const void* gamma, int32_t y_dt, void* y, float* rstd, int64_t rows, int64_t d,
                float eps);
/// dx and the blocks' dgamma partials in one pass, then the partials summed in block order
/// (workspace: see the header comment).
void rmsNormBwd(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                const void* x, int32_t p_dt, const void* gamma, const float* rstd, void* dx,
                void* dgamma, int64_t rows, int64_t d);
/// tgrt_rms_norm_bwd_acc: rmsNormBwd with its dx added into dres (and low), one pass.
void rmsNormBwdAcc(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                   const void* x, int32_t p_dt, const void* gamma, const float* rstd,
                   void* dres, int32_t low_dt, void* low, void* dgamma, int64_t rows,
                   int64_t d);
/// scaling: NULL or 4 floats of host memory (read on the host, like loc); the inverse
/// frequencies are computed on the host (tgrt_rope_inv_freq) and passed to the kernel, so
/// they are the CPU backend's bit for bit; cos / sin are sincosf (full precision). hd <= 512.
void rope(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t batch,
          int64_t t, int64_t heads, int64_t kv_heads, int64_t hd, float theta,
          const float* scaling, int32_t sign);
void swigluFwd(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t rows,
               int64_t f);
void swigluBwd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* dy,
               void* dx, int64_t rows, int64_t f);
void gradNormSq(Context* ctx, const char* loc, int32_t dt, const void* g, int64_t n, float* acc);
/// Unscales by the context's loss scale S (setLossScale): acc[1] = (1/S) * clip factor, NaN
/// when the norm is not finite.
void clipScale(Context* ctx, const char* loc, float* acc, float max_norm);
/// p, g: p_dt; m, v: state_dt. Reads clip[1] on the device and changes nothing when it is not
/// finite (no host synchronisation).
/// tgrt_adamw; with w (w_dt bf16 / f16) tgrt_adamw_wc: the same kernel also writes the
/// updated values' working copy.
void adamw(Context* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt,
           void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay,
           const float* clip, int32_t w_dt = TGRT_F32, void* w = nullptr);
/// tgrt_adamw_wc_g: adamw with the gradients in their own dtype g_dt (p_dt, or a 2-byte
/// type: mixed precision's weight gradients in the compute type, widened exactly).
void adamwG(Context* ctx, const char* loc, int32_t p_dt, void* p, int32_t g_dt, const void* g,
            int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps,
            float weight_decay, const float* clip, int32_t w_dt, void* w);
/// tgrt_adamw_split: AdamW on split master values (hi the bf16 working copies, lo the low
/// halves; tgrt.h tgrt_split_value), float arithmetic, g bf16 or f32. Kernels.cu.
void adamwSplit(Context* ctx, const char* loc, void* hi, void* lo, int32_t g_dt, const void* g,
                int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                float eps, float weight_decay, const float* clip);
/// tgrt_adamw_islands: adamw with weight decay 0 on the islands (tg-bias-rows' biases inside
/// a run of decayed weights).
void adamwIslands(Context* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                  int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                  float eps, float weight_decay, const float* clip, int32_t w_dt, void* w,
                  int64_t base, int64_t period, int64_t reps, int64_t s0, int64_t l0, int64_t s1,
                  int64_t l1);
/// ctx's data-parallel rank and its communicator's size (tgrt_set_comm; Comm.cu): false, rank
/// 0 of 1, when ctx has no communicator. rank, ranks may be NULL. For tgrt_adamw_owned.
bool commRank(const Context* ctx, int32_t* rank, int32_t* ranks);
void reportLoss(Context* ctx, const char* loc, const float* loss);
/// tgrt_tensor_stats (Stats.cu): dt is a tgrt_dtype or TGRT_CHECK_I32; synchronises (the
/// result is on the host when it returns); partials in the workspace ((blocks + 1) * 40 bytes,
/// at most 5160 bytes).
void tensorStats(Context* ctx, const char* loc, int32_t dt, const void* x, int64_t rows,
                 int64_t cols, int64_t ld, tgrt_stats* out);

// ------------------------------------------------------------------- profiling --
/// TGRT_PROFILE=1 at context creation: every tgrt_* kernel call of runtime/tgrt.h (Abi.cu)
/// is timed with a pair of cudaEvents around its launch(es), keyed by (function, loc with
/// each all-digit component replaced by "*", e.g. "tgrt_matmul layers.*.attn.qkv"). A step
/// runs from tgrt_set_step to the next tgrt_synchronize (or tgrt_set_step); the first step
/// is warm-up and not counted, nor are calls outside a step (evaluation). The table (calls,
/// total ms, mean ms, ms per step, share of the event-timed step) goes to stderr when the
/// context is destroyed, or at exit. Unset: Abi.cu tests one global flag per call, nothing
/// else.
extern bool g_profile; ///< true once a context was created with TGRT_PROFILE=1
/// Starts timing one ABI call (no-op outside a profiled step); returns a handle for profileEnd.
int64_t profileBegin(Context* ctx, const char* fn, const char* loc);
void profileEnd(Context* ctx, int64_t handle);
/// RAII form used by Abi.cu: `ProfileScope ps(ctx, "tgrt_matmul", loc);`.
struct ProfileScope {
  Context* ctx = nullptr;
  int64_t handle = -1;
  ProfileScope(Context* c, const char* fn, const char* loc) {
    if (g_profile) {
      ctx = c;
      handle = profileBegin(c, fn, loc);
    }
  }
  ~ProfileScope() {
    if (handle >= 0) profileEnd(ctx, handle);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;
};

// ------------------------------------------------------------- tuning (testing) --
/// Tile shapes (query rows BR x key rows BC) of the flash attention kernels: forward, dk/dv
/// and dq. A pair left 0 keeps the default. Compiled shapes are listed in Attention.cu;
/// others fail at the next attention call. Used by tgrt-cuda-check --sweep.
struct AttentionTiles {
  int fwd_br, fwd_bc;
  int kv_br, kv_bc;
  int dq_br, dq_bc;
};
void setAttentionTiles(Context* ctx, const AttentionTiles& tiles);
/// TF32 attention forward (attentionFwdTf32): S = Q K^T in 3xTF32 (true, the default: lse
/// fp32-accurate) or in single TF32 (false: faster, lse ~3e-4 relative). For the check tool's
/// timings.
void setAttentionTf32Split(Context* ctx, bool split);
/// The kernels of the bf16 / f16 attention (attentionFwd, attentionBwd): `wgmma` the sm_90a
/// warpgroup kernels at head dim 64 (the default on Hopper; TGRT_ATTN_WGMMA=0 turns them off;
/// setting it elsewhere has no effect), else the mma.sync kernels. For the check tool.
struct AttentionForm {
  bool wgmma;
};
void setAttentionForm(Context* ctx, const AttentionForm& form);
AttentionForm attentionForm(const Context* ctx);
/// Whether these tiles (0 = default) are compiled and fit shared memory at head dim hd.
bool attentionTilesSupported(int64_t hd, const AttentionTiles& tiles);

// ------------------------------------------------------------ cuDNN attention --
/// Which implementation runs the bf16 / f16 attention of attentionFwd / attentionBwd /
/// attentionGqaFwd / attentionGqaBwd (f32 never changes): the own kernels (AttentionBf16.cu;
/// the default), or cuDNN's fused scaled-dot-product attention (CudnnAttention.cu), with the
/// backward's non-deterministic (dQ accumulated with atomics; the fastest) or deterministic
/// algorithm. TGRT_ATTN=own | cudnn | cudnn-det at context creation sets it. Only runtimes
/// built with TGRT_HAVE_CUDNN have cuDNN (others run the own kernels and say so); a call
/// cuDNN cannot take (library missing at run time, a shape it refuses, a failed launch)
/// runs on the own kernels, noted once per shape on stderr. Both implementations share
/// tgrt.h's lse (cuDNN's Stats [batch, heads, t, 1] float32, the natural-log logsumexp of
/// the scaled, masked scores), so one's forward feeds the other's backward.
enum class AttentionImpl : int { Own = 0, Cudnn = 1, CudnnDeterministic = 2 };
void setAttentionImpl(Context* ctx, AttentionImpl impl);
AttentionImpl attentionImpl(const Context* ctx);
#ifdef TGRT_HAVE_CUDNN
/// cuDNN's forward / backward of tgrt_attention_gqa_fwd / _bwd (arguments as
/// attentionGqaFwd / attentionGqaBwd; kv_heads = heads and kv strides = in strides is plain
/// attention): true when it ran on cuDNN (launched on the context's stream), false with
/// nothing launched when cuDNN is unavailable or refuses the call (noted on stderr once per
/// shape) or the call is not one it may take (not bf16 / f16, misaligned, empty, malformed:
/// the own path reports those). The graph of each shape is built on first use and cached.
bool cudnnAttentionFwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale);
bool cudnnAttentionBwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, const void* out, const float* lse, const void* dout,
                       void* dq, void* dk, void* dv, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale, bool deterministic);
/// Workspace bytes of cuDNN's forward (backward) graph for this call (built and cached
/// here), -1 when cuDNN refuses it.
int64_t cudnnAttentionWorkspace(Context* ctx, const char* loc, bool backward, int32_t dt,
                                int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
                                int64_t hd, int64_t in_stride_b, int64_t in_stride_h,
                                int64_t in_stride_t, int64_t kv_stride_b, int64_t kv_stride_h,
                                int64_t kv_stride_t, int64_t out_stride_b, int64_t out_stride_h,
                                int64_t out_stride_t, int32_t causal, int64_t window, float scale,
                                bool deterministic);
/// Whether cuDNN loads and has a handle for ctx (opens it on first use); its version
/// (cudnnGetVersion, e.g. 91900), 0 when unavailable.
bool cudnnAttentionAvailable(Context* ctx);
int64_t cudnnVersion(Context* ctx);
#endif

} // namespace tgrt_cuda

#endif // TGRT_CUDA_CUDARUNTIME_H
