/* tgrt.h — the C ABI between code emitted by tgc and a runtime backend.
 *
 * Emitted code (from tg-lower-to-emitc) calls one function per kernel family with
 * raw pointers into the three planned regions (persistent, arena, workspace). The same
 * signatures are implemented by runtime/cpu (reference, OpenBLAS) and runtime/cuda.
 * The kernels (every tgrt_* call of emitted code but the context, region and check
 * functions) are listed, with their documentation, in runtime/tgrt_kernels.def, which this
 * header includes beside it to declare them ("kernels" below); this file keeps the types,
 * the context, the communicator, the host helpers and the non-finite checks.
 *
 * Conventions
 *  - Every tensor is dense and row-major. Floating-point tensors have a runtime element
 *    type (enum tgrt_dtype): f32, bf16 or f16; int32 for token ids. A kernel takes its
 *    floating tensors as `void*` and, right after `loc`, the element type `dt` that they
 *    share, unless its comment names another (e.g. layer_norm's statistics are always f32,
 *    tgrt_cast and tgrt_layer_norm_* take one dtype per tensor group). Unless stated, the
 *    arithmetic is float32: every low-precision input is widened exactly, every output is
 *    rounded once, to nearest even (the CPU reference rounds at exactly these points).
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
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- model info --
 * Emitted code defines `const tgrt_model* tg_model_info(void)` describing the plan. */

enum tgrt_region { TGRT_PERSISTENT = 0, TGRT_ARENA = 1, TGRT_WORKSPACE = 2, TGRT_HOST = 3 };

/* Element type of a floating-point tensor. Sizes: f32 4 bytes, bf16 and f16 2 bytes
 * (stored as uint16_t bit patterns: bf16 = the upper half of an IEEE float32, f16 = IEEE
 * binary16). */
enum tgrt_dtype { TGRT_F32 = 0, TGRT_BF16 = 1, TGRT_F16 = 2 };

/* Columns a layer norm's output carries after its d values when a linear layer's bias rides
 * in its GEMM (tgrt_layer_norm_fwd_ones, docs/design-notes.md "Bias rows"): the first is 1,
 * the rest 0, so y [rows, d + TGRT_ONES_COLUMNS] times the weight followed by the bias row and
 * zero rows is y W + b, and the weight gradient's GEMM over y's first d + TGRT_BIAS_ROWS
 * columns gives the bias gradient as its row d. 64 keeps bf16 / f16 rows of d a multiple of
 * 64 (GPT-2's 768, 1024, 1280) 128-byte aligned: cuBLASLt's qkv forward GEMM ran 7-10% and
 * its weight gradient up to 9% slower on rows d + 8 apart (bench/cuda/gemm_pitch.cu, H200,
 * docs/results.md "Bias rows at a 128-byte pitch"). */
#define TGRT_ONES_COLUMNS 64
/* Rows the weight gradient of a bias-rows layer writes after the weight's d rows: the bias
 * gradient, then 7 zero rows (the weight gradient's GEMM has M = d + TGRT_BIAS_ROWS; 8 keeps
 * the bias slot's 2-byte rows 16-byte aligned). */
#define TGRT_BIAS_ROWS 8

/* Precision policy of the compiled step (tg-mixed-precision, docs/spec.md). */
enum tgrt_precision {
  TGRT_PRECISION_FP32 = 0,
  TGRT_PRECISION_BF16_MIXED = 1, /* bf16 compute, fp32 master weights + AdamW state     */
  TGRT_PRECISION_FP16_MIXED = 2, /* f16 compute, fp32 master weights, dynamic loss scale */
  TGRT_PRECISION_BF16 = 3,       /* everything bf16, also weights, grads, AdamW state    */
};

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
  int32_t dtype;          /* enum tgrt_dtype of the value (and gradient) */
  int32_t state_dtype;    /* enum tgrt_dtype of the AdamW moments m, v   */
  /* ZeRO-1 (tgrt_model.zero = 1): the rank that holds m, v and updates the value (its
   * m_offset / v_offset are valid on that rank only); ignored when zero = 0. */
  int32_t owner;
  /* ZeRO-2 / ZeRO-3 (tgrt_model.zero >= 2): the chunk c = ceil(numel / ranks) every rank
   * holds (tgrt_shard_span): grad_offset, m_offset, v_offset name c-element shards, and
   * under ZeRO-3 offset (and the working copy) too; 0 when not sharded. */
  int64_t shard;
  /* enum tgrt_dtype of the gradient slot: dtype, or under mixed precision the compute type
   * (bf16 / f16) when one weight-gradient GEMM writes the whole gradient of the step (tgc's
   * plan `grad_dtype`, training.gradient_dtype auto): the GEMM's rounded product, which is
   * what PyTorch's autocast hands the f32 parameter as its gradient. */
  int32_t grad_dtype;
  /* Mixed precision's working copy of the value (tg-plan-memory work_offset): bytes into
   * the persistent region of its [numel] bf16 / f16 copy (the model's work dtype), or -1
   * without one (0 in emitted code from before this field: read it only when split = 1). */
  int64_t work_offset;
  /* 1: the value is held split (tg-plan-memory split-master; docs/design-notes.md "AdamW
   * with split master values"): the slot at `offset` holds numel 2-byte low halves lo[i],
   * and value i is the f32 whose bit pattern is (copy[i] << 16) + (int16_t)lo[i], copy[i]
   * the bf16 working copy at work_offset (tgrt_split_join / tgrt_split_value). dtype is
   * still f32 (the value's type); tgrt_adamw_split updates it. 0: the slot holds the value
   * in dtype. */
  int32_t split;
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
  int32_t precision;            /* enum tgrt_precision                        */
  /* Dynamic loss scaling (fp16-mixed; PyTorch GradScaler's rule): the backward is seeded
   * with loss_scale; a step whose gradients are not finite is skipped and the scale
   * halved; after loss_scale_growth_interval clean steps in a row it doubles.
   * loss_scale_init = 0: no loss scaling (the scale is 1). */
  float loss_scale_init;
  int32_t loss_scale_growth_interval;
  /* Data-parallel ranks the step was compiled for (training.distributed.ranks; tg.ranks).
   * > 1: tg_optimizer_step starts with tgrt_all_reduce_mean on every gradient slot, and the
   * context needs a communicator (tgrt_set_comm). 0 (older emitted code) means 1. */
  int32_t ranks;
  /* ZeRO stage (training.distributed.zero; tg.zero): 0 every rank holds everything; 1 the
   * AdamW moments are sharded by parameter ranges (tgrt_param.owner): tg_optimizer_step
   * updates the owned parameters (tgrt_adamw_owned) and broadcasts them from their owners;
   * checkpoints gather the moments on save and keep the owned ones on load.
   * 2 (ZeRO-2): gradients and moments are sharded evenly (tgrt_param.shard), each
   * micro-step reduce-scatters the gradients into the shards, AdamW updates this rank's
   * chunk of each value and all-gathers it. 3 (ZeRO-3): the values too; the step
   * all-gathers each layer's parameters before use. Checkpoints gather on save and keep
   * this rank's chunks on load. */
  int32_t zero;
  /* CPU offload (training.optimizer.offload = cpu; ZeRO-Offload, Ren et al. 2021): bytes of
   * the host region TGRT_HOST, which holds the AdamW moments (m_offset / v_offset are into
   * it): host memory (pinned on CUDA), not device memory; on CUDA tgrt_adamw* whose m and v
   * lie in it stream them through the workspace in blocks into the device kernel and back.
   * 0: no host region (the moments are persistent). */
  int64_t host_bytes;
  /* 1: the gradient slots are in the arena (tgc's plan `gradients = "arena"`: one
   * micro-step per optimizer step, one rank): grad_offset is into TGRT_ARENA, each slot is
   * zeroed by tg_micro_step right before its first write and holds the gradient from there
   * to the end of the next tg_optimizer_step (tg_eval_step may overwrite it after that).
   * 0 (older emitted code too): persistent slots, zeroed by tg_optimizer_step. */
  int32_t grads_in_arena;
  /* 1: bf16 / f16 attention runs cuDNN's fused SDPA (tgc's plan `attention_impl = "cudnn"`,
   * training.attention.impl auto on CUDA, or cudnn), and workspace_bytes holds its backward's
   * workspace; the runtime falls back to its own kernels where libcudnn is missing or refuses
   * a shape (noted once). 0 (older emitted code too): the own kernels. The environment
   * variable TGRT_ATTN (own | cudnn | cudnn-det) overrides it. */
  int32_t attention_impl;
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
/* tgrt_upload without waiting for the device: `bytes` bytes of src are copied at once (the
 * caller may reuse src when it returns) and land in region at `offset` stream-ordered, after
 * every call already launched on the context and before every call launched after it, so the
 * host can stage the next batch while the device still runs the step that reads the current
 * one. The CPU backend copies at once (its calls run when launched). Errors as tgrt_upload. */
void tgrt_upload_async(tgrt_ctx* ctx, int32_t region, int64_t offset, const void* src,
                       int64_t bytes);
void tgrt_synchronize(tgrt_ctx* ctx);
/* 1 when parameter values may have changed outside the compiled steps since the last call
 * (the context was created, or tgrt_upload wrote into the persistent region's range of
 * parameter values: tg_model_info's params' value slots), else 0; clears the flag. Emitted
 * code with working copies (low-precision copies of the values, written by AdamW) refreshes
 * them at the start of tg_micro_step / tg_eval_step when it returns 1. A host that writes
 * values through tgrt_region's pointer instead must upload them to set the flag. */
int32_t tgrt_take_weights_stale(tgrt_ctx* ctx);
/* Optimizer step counter (1-based inside AdamW's bias correction) and learning rate. */
void tgrt_set_step(tgrt_ctx* ctx, int64_t step);
void tgrt_set_lr(tgrt_ctx* ctx, float lr);
/* Current loss scale (1 unless the model uses loss scaling); read by tgrt_fill_loss_scaled
 * and tgrt_clip_scale. The driver owns the scaling schedule. */
void tgrt_set_loss_scale(tgrt_ctx* ctx, float scale);
/* Index of the micro-batch within the optimizer step (dropout masks depend on it). */
void tgrt_set_micro_batch(tgrt_ctx* ctx, int32_t index);
/* Runs fn(ctx) (a compiled step, e.g. tg_micro_step) and returns 1 when it ran as a CUDA
 * graph, 0 when call by call. CUDA: the first call for `slot` (0..3) captures fn's work on
 * the context's stream into a graph (cudaStreamBeginCapture; the capture runs nothing), then
 * launches it; later calls launch the same graph. The graph keeps every launch argument of
 * the capture: the plan's fixed addresses make the step's work the same every time, and what
 * does change between steps is read on the device (the batch at its planned address, the
 * loss sum). So call it only after one ordinary call of fn (library plans, cuDNN graphs and
 * GEMM tuning are made at first calls, which a capture must not do), and only for a fn whose
 * work does not depend on host state that changes between calls. Work that would not replay
 * right refuses the capture (dropout's per-step key, a dynamic loss scale, collectives, the
 * optimizer's lr and step, optimizer offload, TGRT_PROFILE / TGRT_CUDA_SYNC,
 * tgrt_check_enabled, TGRT_CUDA_GRAPH=0): the slot then runs call by call for good, with a
 * one-line note on stderr. While parameter values are stale and the compiled steps keep
 * working copies (they call tgrt_take_weights_stale), a call runs call by call (the copies'
 * refresh is not in the graph). CPU: fn(ctx),
 * returns 0. Errors: slot outside [0, 4) or fn NULL; a capture or launch failure (message
 * naming it; TGRT_CUDA_GRAPH=0 avoids graphs altogether). */
int32_t tgrt_run_graph(tgrt_ctx* ctx, int32_t slot, void (*fn)(tgrt_ctx*));
/* Sum of losses reported since the last call, and how many; resets both. */
double tgrt_take_loss(tgrt_ctx* ctx, int64_t* count);
/* Global gradient norm (before clipping, after unscaling) of the last optimizer step;
 * not finite when a gradient overflowed (that step was skipped, see tgrt_adamw). */
float tgrt_last_grad_norm(tgrt_ctx* ctx);
/* "cpu" or "cuda". */
const char* tgrt_backend_name(void);
/* One reading of the context's device power (CUDA: NVML, opened at run time; nothing links
 * it): energy_j the board's energy counter since the driver loaded (J, mJ resolution),
 * sm_mhz the SM clock now and max_sm_mhz its maximum (MHz), power_w the draw as NVML
 * reports it (W, the driver's ~1 s average) and limit_w the enforced power limit (W). Returns
 * 1 and fills every non-NULL output, or 0 and leaves them unchanged where there is no
 * reading: the CPU backend, the CPU emulator (TGRT_CUDA_EMULATE), no libnvidia-ml.so.1, a
 * device NVML does not list, an NVML error. Never fails the run, but a call takes
 * milliseconds of host time (on an H200, read after every step, it put 4-21 ms between
 * steps), so call it rarely: the trainer reads it when its interval of steps opens and
 * closes and reports the energy per step (at the power limit a step's time follows its
 * energy, docs/cost-model.md "The power limit"). */
int32_t tgrt_power_sample(tgrt_ctx* ctx, double* energy_j, double* sm_mhz, double* max_sm_mhz,
                          double* power_w, double* limit_w);

/* ------------------------------------------------- data parallel (communicator) --
 * N ranks each run the same compiled step on their own context; tgrt_all_reduce_mean makes
 * every rank's gradient the mean over the ranks. A communicator connects the N contexts.
 * CPU: tgrt_comm_create_local(N) connects N threads of one process (each rank calls the
 * collectives from its own thread, in the same order). A rank that waits longer than the
 * timeout (TGRT_COMM_TIMEOUT_S, seconds, default 120) for the others fails with
 * "tgrt: <loc>: all_reduce_mean: rank r of N waited ... s" instead of hanging.
 * CUDA: one process per GPU joined over NCCL (runtime/cuda/Comm.cu): one process makes a
 * unique id (tgrt_comm_unique_id), every rank process gets it and calls
 * tgrt_comm_create_nccl; tgrt_all_reduce_mean is then an ncclAllReduce (average) on the
 * context's stream (stream-ordered rather than synchronous; NCCL's summation order, not
 * bit-identical to the CPU backend). tgrt_comm_create_local returns NULL there. */
struct tgrt_comm;
typedef struct tgrt_comm tgrt_comm;
/* An in-process communicator for `ranks` threads (1..64). NULL (message on stderr) on a bad
 * count. Destroy it after every context that uses it. */
tgrt_comm* tgrt_comm_create_local(int32_t ranks);
void tgrt_comm_destroy(tgrt_comm* comm);
/* CUDA: writes a fresh NCCL unique id as 256 hex digits and a NUL into hex[size >= 257];
 * 0 on success, -1 (message on stderr) on failure. The CPU backend returns -1. */
int32_t tgrt_comm_unique_id(char* hex, int64_t size);
/* CUDA: selects CUDA device `device` for the calling thread (contexts created by it later
 * use that device), then joins rank `rank` of `ranks` to the NCCL communicator of the unique
 * id id_hex (tgrt_comm_unique_id's text; every rank must pass the same). Blocks until every
 * rank has joined. NULL (message on stderr) on a bad argument, a device that is not visible
 * or an NCCL failure. The CPU backend returns NULL. */
tgrt_comm* tgrt_comm_create_nccl(int32_t rank, int32_t ranks, int32_t device,
                                 const char* id_hex);
/* Attaches ctx to comm as rank `rank` of `ranks` (must equal the communicator's size; the
 * context must not be used by another thread). comm = NULL detaches (the collectives are
 * then no-ops). Fails (exit 1) on a rank outside [0, ranks) or a size mismatch. */
void tgrt_set_comm(tgrt_ctx* ctx, tgrt_comm* comm, int32_t rank, int32_t ranks);
/* Host-side: v[i] = mean over the ranks of v[i] (double, summed in rank order), for the
 * driver's logged loss and counters. A no-op without a communicator. */
void tgrt_all_reduce_mean_host(tgrt_ctx* ctx, const char* loc, double* v, int64_t n);
/* The rank of ctx's communicator (tgrt_set_comm's rank; 0 without one). */
int32_t tgrt_comm_rank(tgrt_ctx* ctx);
/* ZeRO-2 / ZeRO-3 shard tensors evenly over the ranks, in chunks of c = ceil(n / N) elements
 * (tgrt_param.shard; the layout and the collectives: tgrt_kernels.def). Elements rank `rank`
 * holds of a tensor of n elements in chunks of c: its first element index
 * (*begin = rank * c) and count min(c, max(0, n - rank*c)). */
void tgrt_shard_span(int64_t n, int64_t c, int32_t rank, int64_t* begin, int64_t* count);

/* ------------------------------------------------------------------ kernels --
 * Declared from runtime/tgrt_kernels.def, where each one's documentation and access string
 * are: the compute kernels (embedding, elementwise, layer norm, GEMMs and their fused
 * epilogues, softmax, losses, attention, the Llama family's RMSNorm, RoPE, SwiGLU and
 * grouped-query attention), the optimizer step (gradient norm, clipping, AdamW and its ZeRO
 * variants), tgrt_report_loss and the data-parallel collectives. tgrt_rope_scaled is defined
 * inline below. */
#define TGRT_KERNEL(ret, name, access, params) ret name params;
#define TGRT_KERNEL_INLINE(ret, name, access, params) static inline ret name params;
#include "tgrt_kernels.def"
#undef TGRT_KERNEL_INLINE
#undef TGRT_KERNEL

/* Rotary position embedding's inverse frequency of pair i of a head of hd dims (Su et al.
 * 2021, RoFormer eq. 15; HF transformers' default and "llama3" rope types):
 *   f = 1 / theta^(2i / hd)
 * and, when factor > 0 (Llama 3.1's frequency scaling; wavelength w = 2 pi / f, low = ctx /
 * low_freq_factor, high = ctx / high_freq_factor with ctx = original_context):
 *   w > low: f / factor;  w < high: f;  otherwise (1 - s) f / factor + s f with
 *   s = (ctx / w - low_freq_factor) / (high_freq_factor - low_freq_factor).
 * Computed in double and rounded once to float, identically by both backends.
 * scaling: NULL or float[4] = {factor, low_freq_factor, high_freq_factor, original_context}
 * (factor <= 0: no scaling), in host memory (like loc) on every backend. */
#if defined(__CUDACC__)
#define TGRT_HOST_DEVICE __host__ __device__
#else
#define TGRT_HOST_DEVICE
#endif
static inline TGRT_HOST_DEVICE float tgrt_rope_inv_freq(int64_t i, int64_t hd, float theta,
                                                        const float* scaling) {
  double f = 1.0 / pow((double)theta, (double)(2 * i) / (double)hd);
  if (scaling && scaling[0] > 0.0f) {
    const double factor = scaling[0], lo_f = scaling[1], hi_f = scaling[2], ctx = scaling[3];
    const double two_pi = 6.283185307179586476925286766559;
    const double w = two_pi / f, low = ctx / lo_f, high = ctx / hi_f;
    if (w > low)
      f = f / factor;
    else if (!(w < high)) {
      const double s = (ctx / w - lo_f) / (hi_f - lo_f);
      f = (1.0 - s) * f / factor + s * f;
    }
  }
  return (float)f;
}
/* tgrt_rope_scaled (tgrt_kernels.def): tgrt_rope with its scaling array built from the four
 * scalars. */
static inline void tgrt_rope_scaled(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                                    void* y, int64_t batch, int64_t t, int64_t heads,
                                    int64_t kv_heads, int64_t hd, float theta, float factor,
                                    float low_freq_factor, float high_freq_factor,
                                    float original_context, int32_t sign) {
  const float scaling[4] = {factor, low_freq_factor, high_freq_factor, original_context};
  tgrt_rope(ctx, loc, dt, x, y, batch, t, heads, kv_heads, hd, theta,
            factor > 0.0f ? scaling : NULL, sign);
}

/* Host conversions between float32 and bf16 / f16 bit patterns: to float is exact; from
 * float rounds to nearest, ties to even (NaN stays a quiet NaN, overflow gives +-inf,
 * f16 subnormals are kept). */
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
static inline float tgrt_f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  union {
    uint32_t u;
    float f;
  } x;
  if (exp == 0x1fu) {
    x.u = sign | 0x7f800000u | (man << 13); /* inf / NaN */
  } else if (exp != 0) {
    x.u = sign | ((exp + 112u) << 23) | (man << 13);
  } else { /* zero or subnormal: man * 2^-24 */
    x.f = (float)man * 5.9604644775390625e-8f;
    x.u |= sign;
  }
  return x.f;
}
static inline uint16_t tgrt_f16_from_float(float f) {
  union {
    uint32_t u;
    float f;
  } x;
  x.f = f;
  uint32_t sign = (x.u >> 16) & 0x8000u, a = x.u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (a >= 0x38800000u) {                                   /* normal f16 */
    uint32_t r = a - 0x38000000u;                           /* rebias exponent 127 -> 15 */
    r = r + 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  /* subnormal f16 (or zero): value / 2^-24 rounded to nearest even */
  union {
    uint32_t u;
    float f;
  } y;
  y.u = a;
  float q = y.f * 16777216.0f; /* exact scaling by 2^24 */
  float r = q + 12582912.0f - 12582912.0f; /* RNE to an integer (|q| < 2^10) */
  return (uint16_t)(sign | (uint16_t)r);
}
/* Split master values (tgrt_param.split): an f32 value w as its bf16 copy hi = the RNE
 * rounding of w (tgrt_bf16_from_float) and lo = the difference of the bit patterns,
 * bits(w) - (hi << 16), as a 16-bit two's complement number. Rounding to nearest moves the
 * pattern by at most 0x8000, so the difference is in [-0x8000, 0x8000]; the one value that
 * does not fit, +0x8000 (w exactly halfway, rounded down to the even copy), is stored as
 * 0x7fff: w moves one ulp towards hi, hi unchanged. tgrt_split_join(hi, lo) is the value
 * back (exact but for that case). NaN / inf values: hi is their bf16 (a quiet NaN keeps a
 * NaN), and the join gives a NaN / inf again. The same rule as the CUDA kernels' splitOne. */
static inline void tgrt_split_value(float w, uint16_t* hi, uint16_t* lo) {
  union {
    uint32_t u;
    float f;
  } x;
  x.f = w;
  *hi = tgrt_bf16_from_float(w);
  uint32_t d = x.u - ((uint32_t)*hi << 16);
  if (d == 0x8000u) d = 0x7fffu;
  *lo = (uint16_t)d;
}
static inline float tgrt_split_join(uint16_t hi, uint16_t lo) {
  union {
    uint32_t u;
    float f;
  } x;
  x.u = ((uint32_t)hi << 16) + (uint32_t)(int32_t)(int16_t)lo;
  return x.f;
}
/* Bytes of one element of a tgrt_dtype (0 for an unknown value). */
static inline int64_t tgrt_dtype_size(int32_t dt) {
  return dt == TGRT_F32 ? 4 : (dt == TGRT_BF16 || dt == TGRT_F16) ? 2 : 0;
}
/* The persistent byte range [*lo, *hi) of a model's parameter values (both 0 without
 * parameters): what tgrt_upload watches for tgrt_take_weights_stale. */
static inline void tgrt_values_range(const tgrt_model* m, int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  for (int32_t i = 0; m && i < m->n_params; ++i) {
    const tgrt_param* p = &m->params[i];
    const int64_t end = p->offset + p->numel * (p->split ? 2 : tgrt_dtype_size(p->dtype));
    if (i == 0 || p->offset < *lo) *lo = p->offset;
    if (end > *hi) *hi = end;
  }
}

/* --------------------------------------------------- non-finite checks (debug) --
 * The driver's --find-nonfinite (TGRT_FIND_NONFINITE=1) re-runs a step whose loss or
 * gradient norm is not finite with checks on, to name the first op whose output holds an
 * inf or a NaN. Emitted code reads the switch once per step function,
 *     bool dbg = tgrt_check_enabled(ctx);
 * and follows every kernel call that writes a floating-point tensor with
 *     if (dbg) { tgrt_check_op(ctx, &kCheckSites[i]); }
 * A call that writes over one of its own inputs (in place: tgrt_accumulate, tgrt_adamw,
 * tgrt_matmul_acc, an add into its operand, ...) is also preceded by
 *     if (dbg) { tgrt_check_inputs(ctx, &kCheckSites[i]); }
 * so that the report shows that input as it was before the call. With checks off this costs
 * one predictable branch per call (two for in-place calls) on a host-side bool; kCheckSites
 * is a static table in the emitted file, one entry per call. */

/* Role of a tensor in a check site. */
enum tgrt_check_role {
  TGRT_CHECK_IN = 0,             /* read by the call, unchanged by it                      */
  TGRT_CHECK_IN_OVERWRITTEN = 1, /* read, and (partly) overwritten by one of the outputs:
                                    its statistics are taken by tgrt_check_inputs         */
  TGRT_CHECK_OUT = 2,            /* written by the call: checked by tgrt_check_op           */
};
/* Element type code of an int32 tensor (token ids) in a check site and in
 * tgrt_tensor_stats; floating tensors use enum tgrt_dtype. */
enum { TGRT_CHECK_I32 = 3 };
/* tgrt_check_tensor.flags: -inf is a legitimate output value (a causal mask's masked
 * scores); only NaN and +inf count as non-finite. */
enum { TGRT_CHECK_NEG_INF_OK = 1 };

/* One tensor of a check site: rows x cols elements of `dtype` starting `offset` bytes into
 * `region`, consecutive rows `ld` elements apart (a contiguous tensor is 1 x numel). */
typedef struct tgrt_check_tensor {
  const char* name;  /* where the value comes from: "layers.1.mlp.fc.weight (parameter)",
                        "layers.1.ln2 (tg.layer_norm result 0)", "tokens (input)", ... */
  const char* shape; /* its IR shape as text, e.g. "[8, 64, 128]"                         */
  int32_t role;      /* enum tgrt_check_role                                              */
  int32_t dtype;     /* enum tgrt_dtype, or TGRT_CHECK_I32                                 */
  int32_t region;    /* enum tgrt_region                                                  */
  int32_t flags;     /* TGRT_CHECK_NEG_INF_OK or 0                                        */
  int64_t offset;    /* bytes                                                             */
  int64_t rows, cols, ld; /* elements                                                      */
} tgrt_check_tensor;

/* One runtime call of the emitted code and the tensors it reads and writes. */
typedef struct tgrt_check_site {
  const char* loc;    /* the op's IR location name, e.g. "layers.3.attn.proj"             */
  const char* op;     /* the tg op, e.g. "tg.matmul"                                      */
  const char* kernel; /* the runtime call, e.g. "tgrt_matmul_bias"                        */
  const char* phase;  /* "forward", "backward" (after the loss in @micro_step), "optimizer"
                         or "eval": backward ops carry their forward op's location         */
  int32_t n_tensors;
  const tgrt_check_tensor* tensors;
} tgrt_check_site;

/* Statistics of a tensor (tgrt_tensor_stats). */
typedef struct tgrt_stats {
  int64_t count;   /* elements examined (rows * cols)                                      */
  int64_t nan;     /* NaN elements                                                         */
  int64_t pos_inf; /* +inf elements                                                        */
  int64_t neg_inf; /* -inf elements                                                        */
  double min, max; /* smallest and largest element that is not NaN (so +-inf show here);
                      NaN when every element is NaN or count == 0. Exact: every f32, bf16,
                      f16 and int32 value is a double. */
} tgrt_stats;

/* Statistics of rows x cols elements of type dt (enum tgrt_dtype or TGRT_CHECK_I32) at x,
 * consecutive rows ld >= cols elements apart. Synchronous: *out (a host pointer) is filled
 * when the call returns. A reduction kernel on CUDA (its partials use the first 8 KiB of the
 * workspace region); every backend returns the same numbers. Errors: negative sizes,
 * ld < cols, an unknown dt, NULL out. */
void tgrt_tensor_stats(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, int64_t rows,
                       int64_t cols, int64_t ld, tgrt_stats* out);

/* Turns the checks on for ctx (emitted step functions started from now on check every
 * call) and forgets any earlier report. Several contexts may be checked at once. */
void tgrt_check_begin(tgrt_ctx* ctx);
/* 1 while checks are on for ctx and no op has failed one yet, else 0. Emitted code calls it
 * once at the start of each step function. Cheap when no context is being checked (one
 * atomic load). */
int32_t tgrt_check_enabled(tgrt_ctx* ctx);
/* Before a call with TGRT_CHECK_IN_OVERWRITTEN tensors: records their statistics, for the
 * report of the tgrt_check_op that follows. No-op unless checks are on for ctx. */
void tgrt_check_inputs(tgrt_ctx* ctx, const tgrt_check_site* site);
/* After a call: takes the statistics of every TGRT_CHECK_OUT tensor of the site. When one
 * holds a NaN or an infinity (-inf allowed with TGRT_CHECK_NEG_INF_OK) and no earlier op
 * did, stores the report (tgrt_check_report) and returns 1; every later check of this
 * session is then a no-op. Returns 0 otherwise, and when checks are off for ctx. */
int32_t tgrt_check_op(tgrt_ctx* ctx, const tgrt_check_site* site);
/* The report of the first op whose output was not finite since tgrt_check_begin, or NULL
 * when there was none. Several lines of text without a trailing newline:
 *   <loc> (<op>, <phase>; runtime call <kernel>) wrote non-finite values:
 *     output <name> <dtype> <shape>: min <min> max <max>, <n> of <count> not finite (<a> NaN,
 *            <b> +inf, <c> -inf)
 *     input  <name> <dtype> <shape>: min <min> max <max>, all finite | <n> of <count> not
 *            finite (...)[ (before the call; updated in place)]
 * one line per output, then one per input ("every element NaN" replaces min / max when there
 * is no other value). Valid until tgrt_check_end or the next tgrt_check_begin on ctx. */
const char* tgrt_check_report(tgrt_ctx* ctx);
/* Turns the checks off for ctx and frees the session. Call it before tgrt_ctx_destroy. */
void tgrt_check_end(tgrt_ctx* ctx);

#ifdef __cplusplus
}
#endif
#endif /* TGRT_H */
