/* tgrt.h — the C ABI between code emitted by tgc and a runtime backend.
 *
 * Emitted code (from tg-lower-to-emitc) calls one function per kernel family with
 * raw pointers into the three planned regions (persistent, arena, workspace). The same
 * signatures are implemented by runtime/cpu (reference, OpenBLAS) and runtime/cuda.
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
  int32_t dtype;          /* enum tgrt_dtype of the value and gradient   */
  int32_t state_dtype;    /* enum tgrt_dtype of the AdamW moments m, v   */
  /* ZeRO-1 (tgrt_model.zero = 1): the rank that holds m, v and updates the value (its
   * m_offset / v_offset are valid on that rank only); ignored when zero = 0. */
  int32_t owner;
  /* ZeRO-2 / ZeRO-3 (tgrt_model.zero >= 2): the chunk c = ceil(numel / ranks) every rank
   * holds (tgrt_shard_span): grad_offset, m_offset, v_offset name c-element shards, and
   * under ZeRO-3 offset (and the working copy) too; 0 when not sharded. */
  int64_t shard;
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
/* Sum of losses reported since the last call, and how many; resets both. */
double tgrt_take_loss(tgrt_ctx* ctx, int64_t* count);
/* Global gradient norm (before clipping, after unscaling) of the last optimizer step;
 * not finite when a gradient overflowed (that step was skipped, see tgrt_adamw). */
float tgrt_last_grad_norm(tgrt_ctx* ctx);
/* "cpu" or "cuda". */
const char* tgrt_backend_name(void);

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
/* In place on every rank: buf[i] = (sum over ranks r = 0..N-1, in that order, of rank r's
 * buf[i]) / N, in float32, rounded once to dt; the same bits on every rank (deterministic).
 * n elements of dt. A no-op without a communicator. Every rank must call it with the same
 * dt and n (else it fails naming both ranks' loc and n). Synchronous: returns once all
 * ranks' results are written. */
void tgrt_all_reduce_mean(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf, int64_t n);
/* tgrt_all_reduce_mean of one gradient bucket, started as soon as the backward has written
 * it, so that it overlaps the rest of the backward (PyTorch DDP's buckets): only on the last
 * micro-batch of the optimizer step (tgrt_set_micro_batch index == grad_accum - 1; before
 * that the slots are still accumulating and nothing happens). CPU: tgrt_all_reduce_mean,
 * synchronous. CUDA: ncclAllReduce (average) in place on the communicator's own stream,
 * after the work issued on the context's stream so far; the result is visible on the
 * context's stream after tgrt_all_reduce_wait. buf must not be written before that wait.
 * TGRT_ALLREDUCE_OVERLAP=0 runs them on the context's stream instead (to measure the overlap).
 * A no-op without a communicator. Errors: those of tgrt_all_reduce_mean. */
void tgrt_all_reduce_mean_start(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf,
                                int64_t n, int32_t grad_accum);
/* Makes the context's stream wait for every tgrt_all_reduce_mean_start since the last wait
 * (CUDA); nothing to do on the CPU (the starts were synchronous). */
void tgrt_all_reduce_wait(tgrt_ctx* ctx, const char* loc);
/* Host-side: v[i] = mean over the ranks of v[i] (double, summed in rank order), for the
 * driver's logged loss and counters. A no-op without a communicator. */
void tgrt_all_reduce_mean_host(tgrt_ctx* ctx, const char* loc, double* v, int64_t n);
/* The rank of ctx's communicator (tgrt_set_comm's rank; 0 without one). */
int32_t tgrt_comm_rank(tgrt_ctx* ctx);
/* In place: every rank's buf[0..n) (n elements of dt) becomes root's, bit for bit; root's
 * buffer is unchanged (ZeRO-1: each parameter range's owner sends its updated values). A
 * no-op without a communicator (root is then not checked). Every rank must call it with the
 * same dt, n and root (else it fails naming both ranks' loc, n, dt and root, like
 * tgrt_all_reduce_mean's mismatch error; checked on the CPU, NCCL does not check); root
 * outside [0, ranks) fails naming loc; n < 0 or an unknown dt fails. buf may be NULL when n
 * is 0. CPU: synchronous (returns once every rank's copy is done; root waits for them, so it
 * may overwrite buf right after), waits bounded by TGRT_COMM_TIMEOUT_S as in
 * tgrt_all_reduce_mean ("tgrt: <loc>: broadcast: rank r of N waited ..."). CUDA:
 * ncclBroadcast in place on the context's stream (stream-ordered: later calls on that stream
 * see root's values). */
void tgrt_broadcast(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf, int64_t n,
                    int32_t root);
/* ---- ZeRO-2 / ZeRO-3: tensors sharded evenly over the ranks (Rajbhandari et al. 2020,
 * stages P_os+g and P_os+g+p; PyTorch FSDP's flat sharding per tensor). A tensor of n
 * elements is cut into chunks of c = ceil(n / N) elements (tgrt_param.shard); rank r holds
 * elements [r*c, min(n, (r+1)*c)) of it as the first elements of its own shard buffer of c
 * elements; the rest of that buffer (the padding: only on the last ranks, when N does not
 * divide n) is never written by these calls and stays 0. tgrt_shard_span gives a rank's
 * valid count. Every rank must call each collective with the same dt, n and c (CPU: else it
 * fails naming both ranks' loc, n and c); c must be >= ceil(n / N) (else it fails naming loc).
 * Waits are bounded by TGRT_COMM_TIMEOUT_S as in tgrt_all_reduce_mean. The "_start" calls
 * are synchronous on the CPU; on CUDA they run on the communicator's own stream after the
 * work issued on the context's stream so far, and their results are visible on the context's
 * stream after tgrt_all_reduce_wait (which waits for every start of any kind since the last
 * wait); their buffers must not be written (nor, for outputs, read) before that wait.
 * TGRT_ALLREDUCE_OVERLAP=0 runs them on the context's stream. */
/* Elements rank `rank` holds of a tensor of n elements in chunks of c: its first element
 * index (*begin = rank * c) and count min(c, max(0, n - rank*c)). */
void tgrt_shard_span(int64_t n, int64_t c, int32_t rank, int64_t* begin, int64_t* count);
/* All-gather: full[r*c + i] = rank r's shard[i] for every rank r and i < its count, on every
 * rank (full: n elements of dt; shard: c elements). In place is allowed: shard ==
 * (char*)full + rank*c*size(dt), or shard == NULL meaning the same (ZeRO-2 gathers the
 * updated values that way; the emitted code does not know its rank). Without a
 * communicator: copies the count of rank 0 (all of n when c >= n) from shard to full.
 * CUDA: ncclAllGather when N*c == n, else one ncclBroadcast per rank's chunk (grouped). */
void tgrt_all_gather_start(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* shard,
                           void* full, int64_t n, int64_t c);
/* Reduce-scatter of a gradient into the shards, accumulating: for i < this rank's count,
 * shard[i] += mean over ranks r of rank r's full[rank*c + i], where the mean is (sum over r =
 * 0..N-1 in that order, in float32) / N rounded once to dt and the add is done in float32
 * and rounded once to dt (so a zero shard receives exactly tgrt_all_reduce_mean's value of
 * that element). full: n elements of dt (every rank's local gradient; on CUDA it is
 * overwritten in this rank's chunk by the mean, in place, before the add); shard: c elements.
 * Without a communicator: shard[i] += full[i] for i < min(n, c). CUDA: ncclReduceScatter
 * (average) in place when N*c == n, else one ncclReduce (average) per rank's chunk
 * (grouped), then the add as a kernel on the communicator's stream. */
void tgrt_reduce_scatter_mean_start(tgrt_ctx* ctx, const char* loc, int32_t dt, void* full,
                                    void* shard, int64_t n, int64_t c);
/* In place on every rank: buf[i] = sum over ranks r = 0..N-1 (in that order) of rank r's
 * buf[i], float32 (the squared gradient norm of ZeRO-2/3's sharded gradients). buf is in the
 * context's memory (device memory on CUDA: ncclAllReduce sum on the context's stream,
 * stream-ordered). A no-op without a communicator. Errors as tgrt_all_reduce_mean. */
void tgrt_all_reduce_sum_f32(tgrt_ctx* ctx, const char* loc, float* buf, int64_t n);
/* ZeRO-2's AdamW: the values p (and working copies w) are whole tensors of n elements on
 * every rank, the gradient g and moments m, v are this rank's shards of c elements: exactly
 * tgrt_adamw (resp. tgrt_adamw_wc) on p + begin, g, m, v, w + begin with count elements
 * (tgrt_shard_span of this rank; rank 0 without a communicator), same bits, errors and
 * aliasing rules. The updated values are then all-gathered in place
 * (tgrt_all_gather_start with shard = p + begin). */
void tgrt_adamw_chunk(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                      int32_t state_dt, void* m, void* v, int64_t n, int64_t c, float beta1,
                      float beta2, float eps, float weight_decay, const float* clip);
void tgrt_adamw_wc_chunk(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                         int32_t state_dt, void* m, void* v, int64_t n, int64_t c, float beta1,
                         float beta2, float eps, float weight_decay, const float* clip,
                         int32_t w_dt, void* w);

/* ------------------------------------------------------------------ kernels -- */

/* out[i,:] = table[ids[i],:] for i < n_tokens; table [vocab, d]. Errors: id out of range.
 * table, out: dt. */
void tgrt_embedding_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* table,
                        const int32_t* ids, void* out, int64_t n_tokens, int64_t d,
                        int64_t vocab);
/* dtable = 0; dtable[ids[i],:] += dout[i,:] (deterministic order, float32 sums, one
 * rounding per row). dout, dtable: dt. CPU: each id's tokens in token order. CUDA: in token
 * order within chunks of the tokens sorted by id, then the chunks' sums in order (the same
 * result on every run; not bit-equal to the CPU when an id's tokens span chunks). */
void tgrt_embedding_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const int32_t* ids,
                        const void* dout, void* dtable, int64_t n_tokens, int64_t d,
                        int64_t vocab);
/* out[b,t,:] = x[b,t,:] + wpe[t,:]; x [batch, t, d], wpe [context >= t, d]. All dt. */
void tgrt_positional_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                         const void* wpe, void* out, int64_t batch, int64_t t, int64_t d);
/* dwpe[t,:] = sum_b dout[b,t,:] for t < tlen, 0 for tlen <= t < context. All dt. */
void tgrt_positional_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* dout,
                         void* dwpe, int64_t batch, int64_t t, int64_t d, int64_t context);
/* out = a + b (n elements, all dt). out may alias a or b. */
void tgrt_add(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b,
              void* out, int64_t n);
/* Residual add across element types, with an optional low-precision copy of the sum:
 *   out = a + b   (float32 arithmetic, rounded once to out_dt),
 *   low = out     (the rounded sum converted to low_dt) when low != NULL.
 * a, out: out_dt (the residual stream); b: b_dt; low: low_dt (ignored when low is NULL).
 * n elements. out may alias a (or b when b_dt == out_dt); low must not alias a, b or out.
 * Bit-equal to tgrt_cast (b to out_dt) + tgrt_add + tgrt_cast (out to low_dt): the
 * lowering fuses those sequences (forward: fp32 stream + bf16 branch; backward: the
 * stream's gradient and its bf16 copy for the next GEMM) to save memory passes. */
void tgrt_add_mixed(tgrt_ctx* ctx, const char* loc, int32_t out_dt, const void* a, int32_t b_dt,
                    const void* b, void* out, int32_t low_dt, void* low, int64_t n);
/* dst += src (n elements, both dt). */
void tgrt_accumulate(tgrt_ctx* ctx, const char* loc, int32_t dt, void* dst, const void* src,
                     int64_t n);
/* out[i] = value (rounded to dt). */
void tgrt_fill(tgrt_ctx* ctx, const char* loc, int32_t dt, void* out, int64_t n, float value);
/* out[i] = value * the context's loss scale (tgrt_set_loss_scale), rounded to dt: the seed
 * of a loss-scaled backward. */
void tgrt_fill_loss_scaled(tgrt_ctx* ctx, const char* loc, int32_t dt, void* out, int64_t n,
                           float value);
/* dst[i] = src[i] converted from src_dt to dst_dt (widening is exact; narrowing rounds to
 * nearest even, overflow gives +-inf, NaN stays NaN). n elements. */
void tgrt_cast(tgrt_ctx* ctx, const char* loc, int32_t src_dt, const void* src, int32_t dst_dt,
               void* dst, int64_t n);
/* Sets `bytes` bytes at p to zero. */
void tgrt_zero(tgrt_ctx* ctx, const char* loc, void* p, int64_t bytes);
/* Copies a rows x cols block of dt elements: dst[r*dst_ld + c] = src[r*src_ld + c].
 * (split / concat / copy) */
void tgrt_copy2d(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* src, int64_t src_ld,
                 void* dst, int64_t dst_ld, int64_t rows, int64_t cols);
/* y = permute(x) (both dt): x has shape [d0,d1,d2,d3] (pad lower ranks with leading 1s), y
 * has shape [d_p0, d_p1, d_p2, d_p3] with y[i_p0,i_p1,i_p2,i_p3] = x[i0,i1,i2,i3]. */
void tgrt_transpose4(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                     int64_t d0, int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1,
                     int32_t p2, int32_t p3);

/* Layer normalisation (Ba et al. 2016) over the last dim d of x [rows, d]:
 *   mean = E[x], rstd = 1/sqrt(Var[x] + eps) (biased variance),
 *   y = (x - mean) * rstd * gamma + beta.  mean, rstd: float32 [rows].
 * x: x_dt; gamma, beta: p_dt; y: y_dt (mixed precision: x f32 residual stream, y bf16). */
void tgrt_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x,
                         int32_t p_dt, const void* gamma, const void* beta, int32_t y_dt,
                         void* y, float* mean, float* rstd, int64_t rows, int64_t d, float eps);
/* The residual add and the layer norm that reads its sum, in one pass over the rows:
 *   x = a + b   (tgrt_add_mixed: float32 arithmetic, rounded once to x_dt; a, x: x_dt,
 *                b: b_dt, [rows, d]), then tgrt_layer_norm_fwd(x) into y, mean, rstd.
 * Bit-equal to tgrt_add_mixed (low = NULL) + tgrt_layer_norm_fwd: the lowering fuses that
 * pair where the add is not already a GEMM epilogue (checkpointing=selective keeps the
 * projection's output, so the attention block's residual add runs on its own, in the
 * forward and in its recomputation). x, y, mean and rstd must not overlap a or b.
 * CUDA: one kernel (x written once, not written then read back) where the register
 * layer-norm kernel applies (16-byte aligned rows, d a multiple of the pack width, at most
 * 1024 f32 / 2048 2-byte values) and b has x's type or y's (mixed precision); otherwise the
 * two calls. Errors: those of the two calls. */
void tgrt_add_layer_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* a,
                             int32_t b_dt, const void* b, void* x, int32_t p_dt,
                             const void* gamma, const void* beta, int32_t y_dt, void* y,
                             float* mean, float* rstd, int64_t rows, int64_t d, float eps);
/* xhat = (x-mean)*rstd; dbeta = sum_rows dy; dgamma = sum_rows dy*xhat (both overwritten);
 * g = dy*gamma; dx = rstd * (g - mean_d(g) - xhat * mean_d(g*xhat)).
 * dy: y_dt; x, dx: x_dt; gamma, dgamma, dbeta: p_dt; mean, rstd: float32. */
void tgrt_layer_norm_bwd(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                         int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                         const float* mean, const float* rstd, void* dx, void* dgamma,
                         void* dbeta, int64_t rows, int64_t d);

/* tgrt_layer_norm_bwd whose dx is added into the residual stream's gradient in the same
 * pass: dres = dres + dx (dx rounded to x_dt first, then the sum rounded to x_dt), and,
 * when low != NULL, low = dres converted to low_dt (the next GEMM's input). dres: x_dt,
 * [rows, d], read and written; low must not alias any other argument. dgamma, dbeta as
 * tgrt_layer_norm_bwd. Bit-equal to tgrt_layer_norm_bwd + tgrt_add_mixed (the lowering
 * fuses that sequence). CUDA: one kernel for the mixed-precision types (x f32, dy and low
 * bf16 / f16, d <= 1536); else the accumulating scalar kernel, column sums and a cast. */
void tgrt_layer_norm_bwd_acc(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                             int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                             const float* mean, const float* rstd, void* dres, int32_t low_dt,
                             void* low, void* dgamma, void* dbeta, int64_t rows, int64_t d);
/* tgrt_layer_norm_bwd_acc whose dgamma and dbeta are added into (the parameters' gradient
 * slots, p_dt): dgamma = dgamma + (its column sum rounded to p_dt), the sum rounded to p_dt;
 * dbeta likewise. Bit-equal to tgrt_layer_norm_bwd_acc into two scratch buffers followed by
 * two tgrt_accumulate calls (the lowering fuses that sequence: no scratch, two launches
 * fewer per layer norm). dgamma, dbeta must not alias any other argument. */
void tgrt_layer_norm_bwd_acc_slots(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                                   int32_t x_dt, const void* x, int32_t p_dt,
                                   const void* gamma, const float* mean, const float* rstd,
                                   void* dres, int32_t low_dt, void* low, void* dgamma,
                                   void* dbeta, int64_t rows, int64_t d);

/* Batched row-major GEMM (a, b, c: dt; float32 accumulation): for b < batch,
 *   C_b = alpha * op(A_b) * op(B_b) + beta * C_b,  C_b is m x n,
 *   op(A_b) is m x k (A_b stored k x m when trans_a), op(B_b) is k x n (n x k when trans_b),
 *   A_b = a + b*stride_a, etc. (strides in elements; 0 broadcasts a weight).
 * beta = 0 means C is not read (may hold garbage/NaN). */
void tgrt_matmul(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                 void* c, int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                 int32_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 float alpha, float beta);
/* Weight gradient straight into its (persistent) gradient slot:
 *   C += alpha * op(A) op(B)   (batch 1; a, b: ab_dt; c: c_dt, e.g. the float32 gradient
 * of a bf16 GEMM), float32 accumulation, one rounding of the sum C + product to c_dt.
 * Shapes as tgrt_matmul. C must not alias A or B. Replaces matmul + cast + accumulate (the
 * product is not rounded to ab_dt first: at least as accurate). CUDA: one cuBLASLt call
 * with beta = 1 and D's type c_dt. */
void tgrt_matmul_acc(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                     const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k,
                     int32_t trans_a, int32_t trans_b, float alpha);
/* Linear layer in one call: C = alpha * op(A) op(B) + bias, bias [n] added to every row
 * before the single rounding; C [m, n], op(A) [m, k], op(B) [k, n] as in tgrt_matmul
 * (batch 1); all dt. C must not alias A or B.
 * CUDA: one cuBLASLt call with the bias epilogue (CUBLASLT_EPILOGUE_BIAS). */
void tgrt_matmul_bias(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                      const void* bias, void* c, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b, float alpha);
/* A linear layer whose output is added straight into the residual stream, in one call:
 *   out = res + (alpha * op(A) op(B) + bias)
 * computed in float32 and rounded once to c_dt (the branch is not rounded to ab_dt first,
 * as it is when tgrt_matmul_bias, a widening tgrt_cast and tgrt_add_mixed run in turn: at
 * least as accurate). a, b: ab_dt; bias [n] or NULL (no bias: tg.matmul_residual, the
 * Llama family's projections), res, out [m, n]: c_dt (the stream's type, f32 under mixed
 * precision); shapes as tgrt_matmul (batch 1). out may alias res (exactly), not A, B or
 * bias. CUDA: one cuBLASLt call, C = res with beta 1, D = out, CUBLASLT_EPILOGUE_BIAS with
 * the bias in D's type (the default epilogue without one); without an algorithm for the
 * shape, tgrt_matmul_acc-style (copy res, beta 1) then the bias add. Errors: as tgrt_matmul;
 * NULL res or out. */
void tgrt_matmul_bias_residual(tgrt_ctx* ctx, const char* loc, int32_t ab_dt, const void* a,
                               const void* b, int32_t c_dt, const void* bias, const void* res,
                               void* out, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                               int32_t trans_b, float alpha);
/* MLP up-projection in one call: pre = alpha * op(A) op(B) + bias (as tgrt_matmul_bias) and
 * out = GELU(pre) (tanh approximation, as tgrt_gelu_fwd, computed from the rounded pre);
 * pre, out [m, n]; all dt; pre is kept for the backward (tgrt_gelu_bwd reads it). pre and
 * out must not alias each other, A or B.
 * CUDA: with TGRT_TF32=1 (f32) or a low-precision dt, one cuBLASLt call with
 * CUBLASLT_EPILOGUE_GELU_AUX_BIAS (D = out, the aux output = pre); in exact fp32 mode, and
 * for shapes the epilogue does not take (n % 8 != 0), the bias epilogue then the own GELU
 * kernel (bit-equal to the unfused ops). */
void tgrt_matmul_bias_gelu(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a,
                           const void* b, const void* bias, void* pre, void* out, int64_t m,
                           int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha);
/* MLP backward through the GELU in one call (the gradient of the up-projection's output):
 *   g = alpha * op(A) op(B)          [m, n], float32 accumulation (A, B as tgrt_matmul),
 *   dx = g * GELU'(pre)              (tanh GELU, as tgrt_gelu_bwd; pre [m, n] the forward's
 *                                     pre-activation, read),
 *   dbias[j] = sum_r dx[r, j]        [n] (float32 sums; overwritten).
 * a, b, pre, dx, dbias: dt. dx must not alias A, B or pre.
 * CUDA (bf16 / f16, or f32 with TF32): cuBLASLt's CUBLASLT_EPILOGUE_DGELU (aux = pre) then
 * the bias-gradient kernel (TGRT_DGELU_EPILOGUE=1, default), CUBLASLT_EPILOGUE_DGELU_BGRAD
 * (=2), or the GEMM, tgrt_gelu_bwd and tgrt_bias_grad (=0; also exact fp32 and shapes the
 * epilogue does not take, n % 8 != 0). The epilogue applies GELU' before rounding dx:
 * within the dtype's rounding of the unfused chain, not bit-equal. CPU: the unfused chain.
 * dbias may be NULL: no bias gradient (the lowering then sums dx into the bias's gradient
 * slot with tgrt_bias_grad_acc). */
void tgrt_matmul_dgelu_bgrad(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* a,
                             const void* b, const void* pre, void* dx, void* dbias, int64_t m,
                             int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, float alpha);
/* out[r,:] = x[r,:] + bias[:]; x [rows, n]; all dt. out may alias x. */
void tgrt_bias_add(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* bias,
                   void* out, int64_t rows, int64_t n);
/* dbias[:] = sum_r dy[r,:] (overwritten; float32 sums); dy, dbias: dt. */
void tgrt_bias_grad(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* dy, void* dbias,
                    int64_t rows, int64_t n);
/* A bias's gradient added straight into its gradient slot:
 *   dbias[:] = dbias[:] + sum_r dy[r,:]   (float32 sums, the total rounded once to acc_dt),
 * dy [rows, n]: dy_dt; dbias [n]: acc_dt (e.g. the f32 gradient of a bf16 layer's bias).
 * Replaces tgrt_bias_grad + tgrt_cast + tgrt_accumulate (the column sum is not rounded to
 * dy_dt first: at least as accurate). dbias must not alias dy. */
void tgrt_bias_grad_acc(tgrt_ctx* ctx, const char* loc, int32_t dy_dt, const void* dy,
                        int32_t acc_dt, void* dbias, int64_t rows, int64_t n);
/* GELU, tanh approximation (Hendrycks & Gimpel 2016):
 *   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). x, y: dt. */
void tgrt_gelu_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                   int64_t n);
/* dx = dy * dGELU/dx(x). x, dy, dx: dt. dx may alias dy. */
void tgrt_gelu_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, const void* dy,
                   void* dx, int64_t n);
/* Inverted dropout: keep element i iff u(seed, step, i) >= rate, u uniform in [0,1) from a
 * counter-based hash of (seed, optimizer step from ctx, micro-batch index, i); y = keep ?
 * x/(1-rate) : 0. x, y: dt. The same call with dy in place of x is the backward (the mask
 * is regenerated). */
void tgrt_dropout(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                  int64_t n, float rate, uint64_t seed);
/* Causal (optionally sliding-window) mask on scores x [batch, tq, tk] (query i sits at key
 * position i + tk - tq): y[b,i,j] = x[b,i,j] if j <= i' and (window <= 0 or i' - j < window),
 * else masked_value. x, y: dt. y may alias x. */
void tgrt_causal_mask(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                      int64_t batch, int64_t tq, int64_t tk, int64_t window,
                      float masked_value);
/* Row softmax over the last dim: y = exp(x - max) / sum exp(x - max); x [rows, n]; x, y: dt.
 * A row of all -inf gives zeros. */
void tgrt_softmax_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                      int64_t rows, int64_t n);
/* dx = y * (dy - sum_n(dy * y)). y, dy, dx: dt. dx may alias dy. */
void tgrt_softmax_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* y, const void* dy,
                      void* dx, int64_t rows, int64_t n);
/* loss[0] (float32) = mean over rows r with targets[r] != ignore_index of
 *   logsumexp(logits[r,:]) - logits[r, targets[r]]; 0 if no row counts.
 * logits: dt, read directly (never copied to float32). */
void tgrt_cross_entropy_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits,
                            const int32_t* targets, float* loss, int64_t rows, int64_t vocab,
                            int64_t ignore_index);
/* dlogits[r,:] = dloss[0] * (softmax(logits[r,:]) - onehot(targets[r])) / n_valid, rows with
 * ignore_index get 0. logits, dlogits: dt; dloss: float32. dlogits MAY alias logits
 * (computed in place). */
void tgrt_cross_entropy_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits,
                            const int32_t* targets, const float* dloss, void* dlogits,
                            int64_t rows, int64_t vocab, int64_t ignore_index);
/* tgrt_cross_entropy_fwd then tgrt_cross_entropy_bwd of the same logits, in one call: loss[0]
 * as the forward, dlogits as the backward with dloss[0] (written before the call). The same
 * bits as the two calls; CUDA reads the logits once instead of twice (the row's max and sum
 * serve both). tgc emits it for a training step's loss when no op between the loss and its
 * gradient reads the loss. dlogits MAY alias logits. Errors: as the two calls. */
void tgrt_cross_entropy_fwd_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* logits,
                                const int32_t* targets, float* loss, const float* dloss,
                                void* dlogits, int64_t rows, int64_t vocab,
                                int64_t ignore_index);
/* The output layer, the loss and their gradients, chunk_rows rows at a time (tgc's
 * tg.linear_cross_entropy, made by tg-fuse-loss): n_valid = the rows whose target is not
 * ignore_index, over all rows; then for each chunk of rows [r0, r1):
 *   logits = x[r0:r1] w^T        (dt, in scratch: only [chunk_rows, vocab] exist at once),
 *   the row losses and dlogits   (in place, as tgrt_cross_entropy_fwd_bwd with that n_valid),
 *   dx[r0:r1] = dlogits w,   dw += dlogits^T x[r0:r1];
 * loss[0] = the mean row loss over the valid rows (0 when none). x, dx [rows, d] and w
 * [vocab, d]: dt; dw [vocab, d]: dw_dt (dt or f32), ADDED to (zero it for a fresh gradient;
 * CPU: the chunks summed in float, rounded once; CUDA: one beta-1 GEMM per chunk, rounded
 * to dw_dt each time, exact accumulation for f32); targets [rows] i32; dloss, loss: float32
 * [1]; scratch: working memory of at least 256 + 8 rows bytes rounded up to 256, then
 * chunk_rows x vocab elements of dt. The loss, dlogits and dx are those of tgrt_matmul +
 * tgrt_cross_entropy_fwd_bwd + tgrt_matmul row for row (CPU: the same bits). dx, dw and
 * scratch must not alias each other, x or w. Errors: as those calls; chunk_rows outside
 * [1, rows]; NULL pointers. */
void tgrt_linear_cross_entropy(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                               const void* w, const int32_t* targets, const float* dloss,
                               float* loss, void* dx, int32_t dw_dt, void* dw, void* scratch,
                               int64_t rows, int64_t d, int64_t vocab, int64_t chunk_rows,
                               int64_t ignore_index);
/* Fused attention (FlashAttention, Dao et al. 2022, with online softmax), batch x heads
 * independent problems of t rows of hd elements, in strided layouts: element (b, h, i, j) of
 * q, k, v (dt) is at index b * in_stride_b + h * in_stride_h + i * in_stride_t + j, and of out
 * at b * out_stride_b + h * out_stride_h + i * out_stride_t + j (strides in elements; each
 * row's hd elements are contiguous). The classic contiguous [batch, heads, t, hd] layout has
 * strides (heads*t*hd, t*hd, hd); q, k, v may be views into one packed projection output
 * [batch, t, 3, heads, hd] (q = qkv, k = qkv + heads*hd, v = qkv + 2*heads*hd; in strides
 * (t*3*heads*hd, hd, 3*heads*hd)) and out written as [batch, t, heads, hd] (out strides
 * (t*heads*hd, hd, heads*hd)). Only out's own strided elements are written (all of them).
 * lse [batch, heads, t] float32 contiguous = logsumexp of the scaled, masked scores row.
 * s = scale * q k^T; causal: key j visible to query i iff j <= i; window > 0
 * additionally requires i - j < window. out = softmax(s) v. Never materialises t x t on CUDA.
 * f32 on CUDA: by default exact fp32 arithmetic (CUDA cores). With TGRT_TF32=1 in the
 * environment at context creation (which also lets cuBLASLt GEMMs use TF32) this and
 * tgrt_attention_bwd run on the TF32 tensor cores: fp32 in / out, products with operands
 * rounded to TF32 (10 mantissa bits, cvt.rna) and fp32 accumulation, fp32 online softmax,
 * lse and D; the forward's scores use 3xTF32 (hi/lo split), so lse stays fp32-accurate.
 * Expected error ~5e-4 (out) and ~1.5e-3 (dq, dk, dv) relative to the largest value, against
 * ~1e-6 in fp32; same masking, tile skipping and determinism (no float atomics).
 * bf16 / f16: products take dt operands with float32 accumulation (the softmax, lse and
 * D = rowsum(dout * out) are float32; P is rounded to dt before P V); CUDA needs hd 32, 64 or
 * 128 (tensor cores, mma.sync m16n8k16), 16-byte aligned base pointers and row strides
 * (all strides multiples of 8 elements). f32 on CUDA (exact and TF32) needs 16-byte aligned
 * pointers and strides too (multiples of 4 elements). The CPU reference widens the inputs (gathered into contiguous
 * float32 temporaries), runs the float32 algorithm and rounds the outputs. */
void tgrt_attention_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                        const void* k, const void* v, void* out, float* lse, int64_t batch,
                        int64_t heads, int64_t t, int64_t hd, int64_t in_stride_b,
                        int64_t in_stride_h, int64_t in_stride_t, int64_t out_stride_b,
                        int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                        int64_t window, float scale);
/* Backward of tgrt_attention_fwd: with P = exp(s - lse), D_i = sum(dout_i * out_i),
 * dv = P^T dout, dS = P * (dout v^T - D), dq = scale dS k, dk = scale dS^T q (overwritten;
 * accumulated in float32, rounded once). q, k, v, out, dout, dq, dk, dv: dt; lse float32.
 * dq, dk, dv use the in strides (q, k, v's layout), dout the out strides (out's layout); so
 * dq, dk, dv may interleave in one packed gradient buffer [batch, t, 3, heads, hd]: only
 * their own strided elements are written (every one of them; the caller need not zero). */
void tgrt_attention_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                        const void* k, const void* v, const void* out, const float* lse,
                        const void* dout, void* dq, void* dk, void* dv, int64_t batch,
                        int64_t heads, int64_t t, int64_t hd, int64_t in_stride_b,
                        int64_t in_stride_h, int64_t in_stride_t, int64_t out_stride_b,
                        int64_t out_stride_h, int64_t out_stride_t, int32_t causal,
                        int64_t window, float scale);
/* ---- The Llama family (issue 21): RMSNorm, rotary position embeddings, SwiGLU, and
 * grouped-query attention. Same conventions as above: float32 arithmetic, every output
 * rounded once to its dtype. */

/* RMSNorm (Zhang & Sennrich 2019) over the last dim d of x [rows, d]:
 *   rstd = 1/sqrt(mean(x^2) + eps), y = x * rstd * gamma.  rstd: float32 [rows].
 * x: x_dt; gamma: p_dt; y: y_dt (mixed precision: x f32 residual stream, y bf16).
 * y must not alias x. */
void tgrt_rms_norm_fwd(tgrt_ctx* ctx, const char* loc, int32_t x_dt, const void* x,
                       int32_t p_dt, const void* gamma, int32_t y_dt, void* y, float* rstd,
                       int64_t rows, int64_t d, float eps);
/* Backward of tgrt_rms_norm_fwd. With xhat = x * rstd and g = dy * gamma (float32):
 *   dx = rstd * (g - xhat * mean(g * xhat)),  dgamma = sum over rows of dy * xhat.
 * dy: y_dt; x, dx: x_dt; gamma, dgamma: p_dt (dgamma overwritten: the column sum in float32,
 * rounded once); rstd: the forward's. dx must not alias dy or x. */
void tgrt_rms_norm_bwd(tgrt_ctx* ctx, const char* loc, int32_t y_dt, const void* dy,
                       int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                       const float* rstd, void* dx, void* dgamma, int64_t rows, int64_t d);

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
/* Rotary position embedding on the q and k heads of a packed projection
 * x [batch, t, heads + 2 kv_heads, hd] (q heads, then k heads, then v heads; hd even):
 * for every token position p in [0, t), every head n < heads + kv_heads and every pair
 * i < hd/2, with a = p * tgrt_rope_inv_freq(i, hd, theta, scaling) (float32 product) and
 * c = cos(a), s = sin(a) (float32), the pair (x1, x2) = (x[..., i], x[..., i + hd/2]) (the
 * "rotate_half" layout of GPT-NeoX and HF Llama) becomes
 *   y[..., i] = x1 c - sign * x2 s,   y[..., i + hd/2] = x2 c + sign * x1 s;
 * the v heads are copied. sign = +1 is the forward; sign = -1 rotates back, which is the
 * backward (dx from dy: the rotation is orthogonal). x, y: dt; y may equal x (in place),
 * never overlap it otherwise. */
void tgrt_rope(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
               int64_t batch, int64_t t, int64_t heads, int64_t kv_heads, int64_t hd,
               float theta, const float* scaling, int32_t sign);

/* tgrt_rope with the Llama 3 scaling as four scalars (factor <= 0: none): what emitted code
 * calls (it has no arrays to point at). */
static inline void tgrt_rope_scaled(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                                    void* y, int64_t batch, int64_t t, int64_t heads,
                                    int64_t kv_heads, int64_t hd, float theta, float factor,
                                    float low_freq_factor, float high_freq_factor,
                                    float original_context, int32_t sign) {
  const float scaling[4] = {factor, low_freq_factor, high_freq_factor, original_context};
  tgrt_rope(ctx, loc, dt, x, y, batch, t, heads, kv_heads, hd, theta,
            factor > 0.0f ? scaling : NULL, sign);
}
/* SwiGLU (Shazeer 2020): x [rows, 2f] holds the gate in columns [0, f) and the up
 * projection in [f, 2f); y [rows, f] = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
 * x, y: dt. y must not alias x. */
void tgrt_swiglu_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x, void* y,
                     int64_t rows, int64_t f);
/* Backward of tgrt_swiglu_fwd: with s = sigmoid(gate),
 *   dgate = dy * up * s * (1 + gate (1 - s)),  dup = dy * silu(gate);
 * dx [rows, 2f] = [dgate | dup]. x, dy, dx: dt. dx must not alias x or dy. */
void tgrt_swiglu_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* x,
                     const void* dy, void* dx, int64_t rows, int64_t f);

/* Grouped-query attention (Ainslie et al. 2023): tgrt_attention_fwd where k and v have
 * kv_heads heads (heads % kv_heads == 0) and query head h reads kv head h / (heads /
 * kv_heads); k and v are read in place through their own strides (kv_stride_b, _h, _t,
 * shared by k and v), never repeated in memory. kv_heads == heads with the kv strides equal
 * to the in strides is exactly tgrt_attention_fwd. Packed projection [batch, t, heads +
 * 2 kv_heads, hd]: q = x, k = x + heads*hd, v = x + (heads + kv_heads)*hd, in and kv strides
 * both (t*(heads+2kv_heads)*hd, hd, (heads+2kv_heads)*hd). Requirements and errors as
 * tgrt_attention_fwd. */
void tgrt_attention_gqa_fwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                            const void* k, const void* v, void* out, float* lse, int64_t batch,
                            int64_t heads, int64_t kv_heads, int64_t t, int64_t hd,
                            int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                            int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                            int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                            int32_t causal, int64_t window, float scale);
/* Backward of tgrt_attention_gqa_fwd: dq as tgrt_attention_bwd (in strides); dk, dv (kv
 * strides) are the sums over the heads / kv_heads query heads of each group (float32 sums,
 * rounded once; overwritten, the caller need not zero). */
void tgrt_attention_gqa_bwd(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* q,
                            const void* k, const void* v, const void* out, const float* lse,
                            const void* dout, void* dq, void* dk, void* dv, int64_t batch,
                            int64_t heads, int64_t kv_heads, int64_t t, int64_t hd,
                            int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                            int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                            int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t,
                            int32_t causal, int64_t window, float scale);

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
    const int64_t end = p->offset + p->numel * tgrt_dtype_size(p->dtype);
    if (i == 0 || p->offset < *lo) *lo = p->offset;
    if (end > *hi) *hi = end;
  }
}
/* acc[0] += sum(g[i]^2) (float32 accumulation); g: dt. */
void tgrt_grad_norm_sq(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* g, int64_t n,
                       float* acc);
/* From acc[0] = sum of squares of the (loss-scaled) gradients, with S the context's loss
 * scale: norm = sqrt(acc[0]) / S; acc[1] = the factor AdamW multiplies the gradients by =
 * (1/S) * ((max_norm > 0 && norm > max_norm) ? max_norm / (norm + 1e-6) : 1), or NaN when
 * norm is not finite (AdamW then skips the step). Records norm for tgrt_last_grad_norm.
 * acc: float32 [2]. */
void tgrt_clip_scale(tgrt_ctx* ctx, const char* loc, float* acc, float max_norm);
/* AdamW (Loshchilov & Hutter 2019), step t and lr from the context, g' = g * clip[1]:
 *   m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;
 *   p -= lr * (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + weight_decay * p).
 * p, g: p_dt; m, v: state_dt; arithmetic float32, each stored value rounded once. When
 * clip[1] is not finite (an overflowed, skipped step) nothing is changed. */
void tgrt_adamw(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                float eps, float weight_decay, const float* clip);
/* tgrt_adamw that also writes the parameters' low-precision working copy in the same pass:
 * w[i] = the updated p[i] rounded to w_dt (the copy the compute reads, tgc's mixed
 * precision; tg-plan-memory's work_offset). w: [n] of w_dt (bf16 or f16), must not alias p,
 * g, m or v. When the step is skipped (clip[1] not finite) w is unchanged, like p. The
 * other arguments and errors as tgrt_adamw. */
void tgrt_adamw_wc(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                   int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                   float eps, float weight_decay, const float* clip, int32_t w_dt, void* w);
/* ZeRO-1 (optimizer state sharded by parameter ranges; each range has one owner rank):
 * tgrt_adamw / tgrt_adamw_wc on the rank that owns the range, nothing elsewhere. When
 * tgrt_comm_rank(ctx) == owner, or the context has no communicator (then any owner: one rank
 * owns everything), exactly tgrt_adamw (resp. tgrt_adamw_wc) with the other arguments, same
 * bits, errors and aliasing rules; else returns without reading or writing p, g, m, v, w or
 * clip (m and v of a range a rank does not own are not its memory). With a communicator, an
 * owner outside [0, ranks) fails naming loc. The owner then sends the updated p (and w) to
 * the other ranks with tgrt_broadcast(root = owner). */
void tgrt_adamw_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                      int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                      float eps, float weight_decay, const float* clip, int32_t owner);
void tgrt_adamw_wc_owned(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                         int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                         float eps, float weight_decay, const float* clip, int32_t w_dt, void* w,
                         int32_t owner);
/* Adds loss[0] (float32) to the context's loss sum (read back with tgrt_take_loss). */
void tgrt_report_loss(tgrt_ctx* ctx, const char* loc, const float* loss);

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
