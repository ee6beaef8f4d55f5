// Internal.h — private to runtime/cuda: the context struct, the device-side state it owns,
// error reporting and the checked kernel launch shared by Context.cu, Kernels.cu and
// Attention.cu.
#ifndef TGRT_CUDA_INTERNAL_H
#define TGRT_CUDA_INTERNAL_H

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Device.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgrt_cuda {

/// Errors a kernel can only detect on the device (bad token ids, bad targets). The first one
/// wins (atomicCAS on code); the host reads it at the next synchronising call and fails with
/// the location of the launch that saw it.
enum DeviceErrorCode : int32_t {
  kNoError = 0,
  kEmbeddingIdOutOfRange = 1, ///< a = id, b = position, c = vocab
  kTargetOutOfRange = 2,      ///< a = target, b = row, c = vocab
};

/// Context state that lives in device memory (one small allocation besides the regions).
struct DeviceState {
  double loss_sum;      ///< sum of reported losses since the last tgrt_take_loss
  long long loss_count; ///< how many
  float grad_norm;      ///< norm recorded by the last clip_scale
  int32_t error_code;   ///< DeviceErrorCode
  int32_t error_loc;    ///< index into Context::locs
  int32_t pad;
  long long error_a, error_b, error_c;
};

/// Key of a cached cuBLASLt plan: everything that selects descriptors and the algorithm.
struct MatmulKey {
  int64_t batch, m, n, k, sa, sb, sc;
  int32_t ta, tb;
  uint32_t align_a, align_b, align_c;
  int32_t epilogue = 0;     ///< 0 none, 1 bias (CUBLASLT_EPILOGUE_BIAS, bias [n] per row),
                            ///< 2 bias + GELU with the pre-activation as aux output
                            ///< (CUBLASLT_EPILOGUE_GELU_AUX_BIAS, aux ld n), 3 GELU
                            ///< gradient from the aux input + bias gradient output
                            ///< (CUBLASLT_EPILOGUE_DGELU_BGRAD), 4 the GELU gradient
                            ///< alone (CUBLASLT_EPILOGUE_DGELU), 5 the bias gradient
                            ///< of cuBLASLt's A (CUBLASLT_EPILOGUE_BGRADA, in D's type)
  uint32_t align_bias = 0;  ///< alignment of the bias pointer (epilogues 1, 2)
  int32_t dt = TGRT_F32;    ///< element type of A, B, C, D, bias and aux (enum tgrt_dtype)
  int32_t cdt = -1;         ///< element type of C and D when not dt (tgrt_matmul_acc), else -1
  int64_t lda = 0;          ///< rows of our a this far apart (a [m, k], not transposed), or 0:
                            ///< k (tgrt_matmul_bias_lda: a bias-rows layer norm's output)
  bool operator==(const MatmulKey& o) const {
    return batch == o.batch && m == o.m && n == o.n && k == o.k && sa == o.sa && sb == o.sb &&
           sc == o.sc && ta == o.ta && tb == o.tb && align_a == o.align_a &&
           align_b == o.align_b && align_c == o.align_c && epilogue == o.epilogue &&
           align_bias == o.align_bias && dt == o.dt && cdt == o.cdt && lda == o.lda;
  }
};
struct MatmulKeyHash {
  size_t operator()(const MatmulKey& k) const {
    uint64_t h = 1469598103934665603ull;
    const int64_t v[17] = {k.batch,   k.m,       k.n,        k.k,          k.sa,
                           k.sb,      k.sc,      k.ta,       k.tb,         k.align_a,
                           k.align_b, k.align_c, k.epilogue, k.align_bias, k.dt,
                           k.cdt,     k.lda};
    for (int64_t x : v) h = (h ^ (uint64_t)x) * 1099511628211ull;
    return (size_t)h;
  }
};
/// TGRT_GEMM_STEP_TUNE: the candidates a plan times in the step (its fastest alone) and the
/// rounds (steps) each is timed in (Context::step_tune).
constexpr size_t kStepTuneCandidates = 4;
constexpr int kStepTuneRounds = 3;

/// Descriptors and the heuristic's algorithm for one MatmulKey (ok = an algorithm exists).
struct MatmulPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool ok = false;
  /// TGRT_GEMM_AUTOTUNE=1, 2: the algorithms to time (the heuristic's, then with 2 the tile
  /// configurations of addTileCandidates); the fastest of them becomes
  /// `algo` at the first call that may run more than once (see ltRun), then tuned is set.
  std::vector<cublasLtMatmulAlgo_t> candidates;
  size_t heuristic_count = 0; ///< candidates[0, heuristic_count): the heuristic's own
  bool tuned = false;
  /// The plan's line key in the tuning cache (Kernels.cu tuneKey; empty without a cache).
  std::string tune_key;
  /// The bias / GELU epilogue plans (bf16, b transposed): the own GEMM (Gemm.cu) runs the
  /// call instead: -1 not decided yet, 0 no, 1 yes (Kernels.cu ownGemmChoice), with schedule
  /// own_sched (a GemmSchedule, CudaRuntime.h).
  int own = -1;
  int own_sched = 3; ///< GemmSchedule::Persistent256
  /// TGRT_GEMM_STEP_TUNE=1 (Kernels.cu ltRun, stepTuneHarvest): the candidates timed again
  /// inside the training steps (indices into `candidates`, the fastest alone first, at most
  /// kStepTuneCandidates; the k-th call of a round takes candidate (round + k) mod n, so one
  /// step's layers spread over them at one clock), each call's time per candidate (ms,
  /// event-timed in place), and the round of the plan's first timed call (-1: none yet).
  /// step_done: decided (or nothing to decide).
  std::vector<size_t> step_order;
  std::vector<std::vector<float>> step_ms;
  int step_first_round = -1;
  int step_calls = 0; ///< the plan's calls in this round (the candidates alternate within it)
  bool step_done = true;
};

/// tgrt_run_graph's slots per context (0 = the driver's micro-step).
constexpr int kGraphSlots = 4;

struct Profile; ///< TGRT_PROFILE=1 state (Context.cu)
struct CudnnState; ///< cuDNN attention: handle, graph cache (CudnnAttention.cu)

struct Context {
  const tgrt_model* model = nullptr;
  /// Parameter values written by the host since the last tgrt_take_weights_stale;
  /// [values_lo, values_hi) is the persistent byte range of the model's parameter values.
  bool weights_stale = true;
  /// tgrt_take_weights_stale was called: the compiled steps refresh working copies from the
  /// flag (tgrt_run_graph then runs a step call by call while it is set).
  bool reads_stale = false;
  int64_t values_lo = 0, values_hi = 0;
  /// Indexed by enum tgrt_region: device memory, except TGRT_HOST (pinned host memory,
  /// cudaMallocHost: the offloaded AdamW moments; NULL without offload).
  char* regions[4] = {nullptr, nullptr, nullptr, nullptr};
  int64_t region_bytes[4] = {0, 0, 0, 0};
  DeviceState* state = nullptr; ///< device memory
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  bool tf32 = false;      ///< TGRT_TF32=1: cuBLASLt and attention use TF32 tensor cores
  /// TF32 attention forward: S = Q K^T in 3xTF32 (fp32-accurate lse); setAttentionTf32Split.
  bool tf32_split_scores = true;
  /// f32 matmulBiasGelu through CUBLASLT_EPILOGUE_GELU_AUX_BIAS: TGRT_GELU_EPILOGUE=1/0,
  /// default = tf32 (the epilogue's GELU precision is measured by tgrt-cuda-check, not
  /// documented).
  bool gelu_epilogue = false;
  /// The same for bf16 / f16: TGRT_GELU_EPILOGUE=1/0, default on (its error is far below the
  /// rounding of a 2-byte output).
  bool gelu_epilogue_low = true;
  /// tgrt_matmul_dgelu_bgrad on bf16 / f16 (TGRT_DGELU_EPILOGUE): 0 the GEMM then the own GELU
  /// backward and bias gradient kernels, 1 CUBLASLT_EPILOGUE_DGELU then the own bias gradient
  /// (default), 2 CUBLASLT_EPILOGUE_DGELU_BGRAD. GPT-2 small B=16 on an H100, one call:
  /// 43.4 / 42.7 / 45.3 ms per step (bench/results/2026-11-23-h100/call9).
  int dgelu_epilogue = 1;
  /// tgrt_matmul_wgrad's bias gradient (TGRT_BGRAD_EPILOGUE=1): true cuBLASLt's
  /// CUBLASLT_EPILOGUE_BGRADA in the weight-gradient GEMM, false (default) the GEMM then the
  /// own column sums (faster on the H200: docs/design-notes.md, "Single writes").
  bool bgrad_epilogue = false;
  /// The own bias gradient's row chunks (TGRT_BGRAD_CHUNKS, 1..256): the column sums' first
  /// stage splits the rows into that many chunks; 0 (default): Kernels.cu biasGradChunks,
  /// a function of the columns only.
  int bgrad_chunks = 0;
  /// layer_norm_bwd_fused_kernel's RELOAD for the mixed-precision residual stream
  /// (TGRT_LN_BWD_RELOAD=0 turns it off): x and the residual gradient reloaded at the store,
  /// two blocks per SM. The same bits either way.
  bool ln_bwd_reload = true;
  /// AdamW's arithmetic when p, m and v are all f32 (TGRT_ADAMW_MATH, read at context
  /// creation): true (f32, the default since 2026-12-02) in float like PyTorch's fused AdamW
  /// (its opmath is float), false (f64) in double like the CPU reference. On an H200 the
  /// mixed-precision update of 124M values took 0.932 against 1.023 ms alone and 0.940
  /// against 1.110 ms per GPT-2 small step (docs/results.md, 2026-12-02, seventeenth
  /// session); p, m, v within 1e-7 relative of the double update. Kernels.cu adamw_kernel.
  bool adamw_f32 = true;
  /// AdamW's largest grid in blocks (TGRT_ADAMW_BLOCKS, read at context creation; this value
  /// the default since 2026-12-03, was gridFor's 16384): each thread strides over the packs the
  /// grid does not cover at once. Why and what it measured: Kernels.cu adamw_kernel.
  int adamw_blocks = 65536;
  /// The 16-bit cross-entropy kernels' variant (TGRT_CE_FAST, read at context creation): 6
  /// or 7 fastExp2 in blocks of 512 / 256 threads, 0 expf (the path before 2026-11-30); -1
  /// (default) per vocabulary: 7 when four rows per SM fit in seven eighths of L2, else 6
  /// (Kernels.cu ceAutoVariant). Kernels.cu withCeFast; f32 logits always take expf.
  int ce_fast = -1;
  /// GEMM algorithm choice (TGRT_GEMM_AUTOTUNE): 1 (default) each cuBLASLt plan times the
  /// heuristic's algorithms (up to kGemmCandidates) at its first repeatable call, keeps the
  /// fastest and records it in the tuning cache (gemm_tune_path), and a plan whose shape is
  /// in the cache takes the recorded algorithm without timing: one choice per shape and
  /// device for every run that shares the cache, so runs round alike. 2 (opt-in): also the
  /// tile configurations addTileCandidates adds (Kernels.cu: the wave model's best tiles x
  /// custom options x cluster shapes), the finalists timed again in batches. 3 (opt-in):
  /// mode 2's candidates, the finalists timed sustained at the board's power limit
  /// (Kernels.cu ltTune), recorded under the key + "|power". 0: the heuristic's first
  /// algorithm.
  int gemm_autotune = 1;
  /// Back-to-back calls per timing of a candidate in the tuning (TGRT_GEMM_TUNE_CALLS, 1 to
  /// 1000; default 1): more calls time each candidate as a training step runs it, at the
  /// clock the GPU's power cap leaves under sustained GEMM load (docs/results.md 2026-11-29,
  /// evening: 1545-1800 MHz of 1980 on the H200), not at the boost clock of one call.
  int gemm_tune_calls = 1;
  /// The tuning cache file (TGRT_GEMM_TUNE_CACHE; default $XDG_CACHE_HOME/tgc/gemm-tune.txt,
  /// else $HOME/.cache/tgc/gemm-tune.txt); empty: tune every run, record nothing.
  std::string gemm_tune_path;
  bool gemm_tune_loaded = false;
  std::unordered_map<std::string, cublasLtMatmulAlgo_t> gemm_tune_cache;
  int gemm_timed = 0, gemm_cached = 0; ///< plans timed this run / taken from the cache
  /// TGRT_GEMM_STEP_TUNE=1 (opt-in; Kernels.cu stepTune*): each tuned plan's fastest
  /// candidates (timed alone, as above) are timed again where the step runs them, alternating
  /// within each step, over kStepTuneRounds x n steps, every call event-timed in
  /// place (the L2 contents and clocks of the real step, not of one GEMM repeated); the
  /// candidate with the lowest median call time becomes the plan's algorithm and is recorded
  /// under the plan's key + "|step". tgrt_run_graph runs the step call by call while a plan
  /// is still being timed (step_tune_active). Rounds advance at each synchronize().
  bool step_tune = false;
  bool step_tune_active = false;
  int step_tune_round = -1; ///< synchronize() calls since the context's first; -1 before it
  int step_tuned = 0, step_tune_changed = 0; ///< plans decided in the step / on another algorithm
  struct StepTiming {
    MatmulPlan* plan;
    int cand;
    cudaEvent_t e0, e1;
  };
  std::vector<StepTiming> step_pending; ///< recorded this round, read at synchronize()
  std::vector<cudaEvent_t> step_events; ///< free events for step_pending
  /// TGRT_OWN_GEMM: the own GEMM (Gemm.cu) for the bf16 bias / GELU epilogue GEMMs it covers:
  /// 0 never, 1 where timed faster than the tuned cuBLASLt algorithm (default; 0 in the CPU
  /// emulator), 2 always.
  int own_gemm = 1;
  int own_gemm_timed = 0, own_gemm_chosen = 0; ///< shapes timed against cuBLASLt / won
  bool sync_each = false; ///< TGRT_CUDA_SYNC=1: synchronise after every launch (exact loc)
  /// launchDependent's kernels as programmatic dependents of the kernel before them (Pdl.cuh):
  /// TGRT_PDL=0 turns it off; off before compute capability 9.0.
  bool pdl = true;
  /// bf16 / f16 attention at head dim 64 on wgmma (sm_90, AttentionBf16.cu); TGRT_ATTN_WGMMA=0:
  /// the mma.sync kernels.
  bool attn_wgmma = true;
  bool attn_wgmma_ok = false; ///< the device runs the sm_90a kernels (compute capability 9.0)
  /// bf16 / f16 attention implementation (enum AttentionImpl): TGRT_ATTN=own (default),
  /// cudnn or cudnn-det at context creation; setAttentionImpl.
  int attn_impl = 0;
  /// cuDNN attention's plans (TGRT_ATTN_TUNE, read at context creation): 1 (default) times
  /// the plans of cuDNN's heuristic list at a graph's first call outside a capture and keeps
  /// the fastest; 0 runs the heuristic's first (CudnnAttention.cu tunePlans).
  bool attn_tune = true;
  /// TGRT_ATTN_TUNE_LOG=1: tunePlans prints each plan's time, also times the plans that need
  /// more workspace than planned, and compares each plan's outputs with the heuristic's.
  bool attn_tune_log = false;
  /// tgrt_upload_async's pinned staging buffers (Context.cu uploadAsync), used in turn: each
  /// holds a copy of the host's bytes until the device has read them (`done`, recorded after
  /// its cudaMemcpyAsync); grown on demand, freed with the context.
  struct Staging {
    char* buf = nullptr;
    int64_t bytes = 0;
    cudaEvent_t done = nullptr;
  };
  static constexpr int kStagingSlots = 4;
  Staging staging[kStagingSlots];
  int staging_next = 0;
  /// cuDNN's state, created on first use (TGRT_HAVE_CUDNN builds only; CudnnAttention.cu).
  CudnnState* cudnn = nullptr;
  int64_t step = 1;
  float lr = 0.0f;
  float loss_scale = 1.0f; ///< tgrt_set_loss_scale (fill_loss_scaled, clip_scale)
  int32_t micro_batch = 0;
  char device_name[256] = {0};
  int sm_count = 0;
  int64_t l2_bytes = 0; ///< the device's L2 cache (cudaDeviceProp::l2CacheSize)
  AttentionTiles attn_tiles = {0, 0, 0, 0, 0, 0}; ///< 0: defaults (Attention.cu)
  std::vector<std::string> locs; ///< locations that device-side errors refer to
  std::unordered_map<MatmulKey, MatmulPlan, MatmulKeyHash> plans;
  /// tgrt_run_graph (Context.cu): the slots' instantiated graphs; state 0 not yet captured,
  /// 1 captured (exec valid), 2 refused (run call by call from then on).
  struct GraphSlot {
    cudaGraphExec_t exec = nullptr;
    int state = 0;
    size_t nodes = 0;
  };
  GraphSlot graph_slots[kGraphSlots];
  bool graphs_enabled = true; ///< TGRT_CUDA_GRAPH (default 1) at context creation
  /// While tgrt_run_graph captures: the first reason the captured work would not replay
  /// right (a launch argument that changes between steps), NULL while there is none.
  bool capturing = false;
  const char* capture_unsafe = nullptr;
  bool comm_attached = false; ///< tgrt_set_comm attached a communicator (collectives sync)
  bool loss_scaling = false;  ///< tgrt_set_loss_scale was called (the scale varies per step)
  Profile* prof = nullptr; ///< non-NULL with TGRT_PROFILE=1 (see CudaRuntime.h)
};

/// TGRT_GEMM_STEP_TUNE (Kernels.cu): reads the step's GEMM call times recorded since the last
/// call into their plans' candidates, advances the round, and decides the plans whose
/// candidates all have kStepTuneRounds steps (the lowest median call time; recorded in the
/// tuning cache under "KEY|step"); prints one line when the last plan is decided. Called by
/// synchronize() after the stream is idle; nothing without the switch.
void stepTuneHarvest(Context* ctx);

/// Prints "tgrt: <loc>: <message>" to stderr and exits with status 1.
[[noreturn]] void fail(const char* loc, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/// Fails with "<what>: <CUDA error string>" unless e == cudaSuccess.
void check(cudaError_t e, const char* loc, const char* what);
/// Fails with "<what>: <cuBLAS status string>" unless s == CUBLAS_STATUS_SUCCESS.
void checkBlas(cublasStatus_t s, const char* loc, const char* what);
/// Fails unless every size is >= 0 (message names the argument list `what`).
void checkNonNegative(const char* loc, const char* what, int64_t a, int64_t b = 0, int64_t c = 0,
                      int64_t d = 0);
/// The norms' backwards' low copy (tgrt_layer_norm_bwd_acc*, tgrt_rms_norm_bwd_acc): fails
/// ("<what>: low ...") when low (low_dt) overlaps dy (y_dt, n elements each) without being
/// dy itself, or is dy with another dtype. Nothing when low is NULL or n is 0.
void checkLowCopy(const char* loc, const char* what, const void* dy, int32_t y_dt,
                  const void* low, int32_t low_dt, int64_t n);
/// Fails unless ctx is non-NULL.
void checkCtx(const Context* ctx, const char* loc);
/// Fails unless the workspace region holds `bytes` bytes.
void checkWorkspace(const Context* ctx, const char* loc, const char* what, int64_t bytes);
/// Index of `loc` in ctx->locs (added on first use), for device-side error reports.
int32_t locIndex(Context* ctx, const char* loc);
/// Reads the device error word (synchronises) and fails if a kernel recorded an error.
void checkDeviceErrors(Context* ctx);
#ifdef TGRT_HAVE_CUDNN
/// Frees ctx->cudnn (CudnnAttention.cu); destroyContext calls it.
void destroyCudnn(Context* ctx);
#endif

/// Notes, while tgrt_run_graph captures ctx's stream, that the work being captured would not
/// replay right (`why`: e.g. a launch argument computed from per-step host state): the
/// capture is then discarded and the work runs call by call. A no-op when not capturing.
inline void captureUnsafe(Context* ctx, const char* why) {
  if (ctx->capturing && !ctx->capture_unsafe) ctx->capture_unsafe = why;
}

/// Launches kernel<<<grid, block, smem, ctx->stream>>>(args...) and checks the launch
/// (and, with TGRT_CUDA_SYNC=1, its execution). `name` is the kernel's name for messages.
template <typename... KArgs, typename... Args>
void launch(Context* ctx, const char* loc, const char* name, void (*kernel)(KArgs...), dim3 grid,
            dim3 block, size_t smem, Args... args) {
#ifdef TGRT_CUDA_EMULATE
  // By value: under stream capture the emulator keeps the closure to replay it.
  emu::launch(grid, block, smem, [=] { kernel(static_cast<KArgs>(args)...); });
#elif defined(__CUDACC__)
  kernel<<<grid, block, smem, ctx->stream>>>(static_cast<KArgs>(args)...);
#else // a host-compiled source of the runtime (CudnnAttention.cu) launches no kernel
  static_assert(sizeof...(KArgs) != sizeof...(KArgs), "launch() needs nvcc");
#endif
  check(cudaGetLastError(), loc, name);
  if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), loc, name);
}

/// launch() as a programmatic dependent launch (when ctx->pdl: the launch attribute
/// cudaLaunchAttributeProgrammaticStreamSerialization): the grid may be scheduled while the kernel
/// before it on the stream drains, which hides its launch behind that kernel's last blocks.
/// `kernel` must call pdlWait() (Pdl.cuh) before it touches global memory;
/// test/runtime/pdl-wait.test checks that every kernel of the files that launch this way does so
/// first. Same errors as launch().
template <typename... KArgs, typename... Args>
void launchDependent(Context* ctx, const char* loc, const char* name, void (*kernel)(KArgs...),
                     dim3 grid, dim3 block, size_t smem, Args... args) {
#if !defined(TGRT_CUDA_EMULATE) && defined(__CUDACC__)
  if (ctx->pdl) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = ctx->stream;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    check(cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...), loc, name);
    if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), loc, name);
    return;
  }
#endif
  launch(ctx, loc, name, kernel, grid, block, smem, args...);
}

#if !defined(TGRT_CUDA_EMULATE) && defined(__CUDACC__)
/// A launch configuration in clusters of `clusterX` consecutive blocks along x (the one
/// attribute lives in `attr`, which must outlive the configuration): for cudaLaunchKernelEx
/// and cudaOccupancyMaxActiveClusters.
inline cudaLaunchConfig_t clusterLaunchConfig(dim3 grid, dim3 block, size_t smem,
                                              cudaStream_t stream, unsigned clusterX,
                                              cudaLaunchAttribute& attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = clusterX;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}
#endif

/// launch() with thread block clusters of `clusterX` consecutive blocks along x (grid.x a
/// multiple of clusterX): cudaLaunchKernelEx with cudaLaunchAttributeClusterDimension.
template <typename... KArgs, typename... Args>
void launchCluster(Context* ctx, const char* loc, const char* name, void (*kernel)(KArgs...),
                   dim3 grid, dim3 block, size_t smem, unsigned clusterX, Args... args) {
#ifdef TGRT_CUDA_EMULATE
  emu::launch(grid, block, smem, [=] { kernel(static_cast<KArgs>(args)...); }, clusterX);
#elif defined(__CUDACC__)
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = clusterLaunchConfig(grid, block, smem, ctx->stream, clusterX, attr);
  check(cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...), loc, name);
#else
  static_assert(sizeof...(KArgs) != sizeof...(KArgs), "launchCluster() needs nvcc");
#endif
  check(cudaGetLastError(), loc, name);
  if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), loc, name);
}

/// Blocks for a grid-stride loop over n items, `per_block` items per block and pass, capped.
inline unsigned gridFor(int64_t n, int64_t per_block, int64_t cap = 16384) {
  int64_t b = (n + per_block - 1) / per_block;
  if (b < 1) b = 1;
  if (b > cap) b = cap;
  return (unsigned)b;
}

} // namespace tgrt_cuda

#endif // TGRT_CUDA_INTERNAL_H
