// Driver.h — the training executable's main, as a library so tests can run it on a fake model.
//
// The emitted model provides tg_model_info / tg_micro_step / tg_optimizer_step / tg_eval_step
// (runtime/tgrt.h); Main.cpp wraps them in a tgrt_driver_hooks and calls tgrt_driver_main.
// The driver only uses the context functions of tgrt.h and its non-finite check session
// (tgrt_check_begin / _report / _end, for --find-nonfinite), never kernels, so it links
// against either backend (runtime/cpu or runtime/cuda). Plain C++; never links MLIR.
#ifndef TGRT_DRIVER_DRIVER_H
#define TGRT_DRIVER_DRIVER_H

#include "runtime/tgrt.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>
#include <string>

/// The four entry points of a compiled model (see runtime/tgrt.h).
struct tgrt_driver_hooks {
  const tgrt_model* (*model_info)(void) = nullptr;
  void (*micro_step)(tgrt_ctx* ctx) = nullptr;     ///< forward + backward, grads +=, loss reported
  void (*optimizer_step)(tgrt_ctx* ctx) = nullptr; ///< clip, AdamW, zero grads
  void (*eval_step)(tgrt_ctx* ctx) = nullptr;      ///< forward only, loss reported
};

/// Runs the training executable with command-line arguments (argv[0] is the program name;
/// `--help` lists the options). Returns the process exit status: 0 on success, 1 on a runtime
/// error (bad data, bad checkpoint, divergence; message on stderr naming the file), 2 on a usage
/// error. Never calls exit() itself (a backend may, on a kernel failure).
int tgrt_driver_main(int argc, char** argv, const tgrt_driver_hooks& hooks);

namespace tgrt {

/// Learning rate (same unit as model.lr) for 1-based optimizer step `step` of a run of
/// `total_steps` steps: linear warmup lr * step / warmup_steps for step <= warmup_steps, then
/// model.decay: 0 = constant lr; 1 = cosine from lr (at step warmup_steps) to min_lr (at
/// step total_steps); 2 = linear between the same endpoints. Steps past total_steps get min_lr.
double learningRate(const tgrt_model& model, int64_t step, int64_t total_steps);

/// Fills `out` (param.numel floats) with the initial value of `param` (GPT-2 scheme from the
/// spec: N(0, init_std), zeros or ones). Deterministic in (seed, param.name): each parameter
/// has its own std::mt19937_64 stream seeded from the seed and a hash of the name, turned into
/// normals by Box–Muller, so it does not depend on the parameter order or the library.
void initParam(const tgrt_param& param, uint64_t seed, float* out);

/// initParam's values of elements [begin, end) of `param` (clamped to [0, numel)), handed
/// to `put(first_index, values, count)` in blocks of at most `block` values (rounded down
/// to an even count, >= 2): the same values as initParam without holding the whole tensor.
/// The generator is sequential, so the elements before `begin` are drawn and dropped.
void initParamBlocks(const tgrt_param& param, uint64_t seed, int64_t begin, int64_t end,
                     int64_t block,
                     const std::function<void(int64_t, const float*, int64_t)>& put);

/// Optimizer steps in one epoch over `train_tokens` tokens:
/// floor(train_tokens / (batch_size * context * grad_accum)).
int64_t stepsPerEpoch(const tgrt_model& model, int64_t train_tokens);

// ------------------------------------------------------------------ element types --

/// Spec name of a precision policy (enum tgrt_precision): "fp32", "bf16-mixed", "fp16-mixed",
/// "bf16"; nullptr for an unknown value.
const char* precisionName(int32_t precision);

/// Short name of an element type (enum tgrt_dtype): "fp32", "bf16", "fp16"; nullptr for an
/// unknown value.
const char* dtypeName(int32_t dtype);

/// Converts n float32 values to element type `dtype` (f32: copied; bf16 / f16: rounded to
/// nearest even, see tgrt.h) into dst (n * tgrt_dtype_size(dtype) bytes). dtype must be known.
void floatToDtype(const float* src, int64_t n, int32_t dtype, void* dst);

/// Converts n elements of type `dtype` at src to float32 (exact for every tgrt_dtype).
void dtypeToFloat(const void* src, int32_t dtype, int64_t n, float* dst);

/// Uploads n float32 values to `region` (default: the persistent region) at byte `offset`,
/// stored as `dtype` (n * tgrt_dtype_size(dtype) bytes; rounded to nearest even when
/// narrower than f32).
void uploadFloats(tgrt_ctx* ctx, int64_t offset, int32_t dtype, const float* src, int64_t n,
                  int32_t region = TGRT_PERSISTENT);

/// Downloads n elements of type `dtype` from `region` (default: the persistent region) at
/// byte `offset` and widens them to float32 into dst (exact).
void downloadFloats(tgrt_ctx* ctx, int64_t offset, int32_t dtype, float* dst, int64_t n,
                    int32_t region = TGRT_PERSISTENT);

/// Uploads float32 values [begin, begin + count) of parameter p's value (the whole tensor's
/// element indices; under ZeRO-3 the caller passes this rank's chunk and its slot holds
/// them from its offset). A split value (tgrt_param.split) is split on the host
/// (tgrt_split_value) into its working copy at work_offset and its low halves at offset;
/// any other is uploadFloats at offset in p.dtype (`chunkBase`: the element the slot's
/// first element is, 0 unless ZeRO-3 chunks it).
void uploadValue(tgrt_ctx* ctx, const tgrt_param& p, const float* src, int64_t begin,
                 int64_t count, int64_t chunkBase = 0);

/// Downloads values [begin, begin + count) of parameter p as float32 (exact): a split value
/// joined from its working copy and low halves (tgrt_split_join), any other through
/// downloadFloats (`chunkBase` as uploadValue).
void downloadValue(tgrt_ctx* ctx, const tgrt_param& p, float* dst, int64_t begin,
                   int64_t count, int64_t chunkBase = 0);

/// A rank's progress watchdog for NCCL (which waits without bound for a rank that stopped
/// or hung in a collective): a thread that ends the process with status 124 and the message
/// "<prog>: error: rank R of N made no progress for T s since <what> (...)" when beat() has
/// not been called for timeout_s seconds; the launcher (`--gpus`, torchrun, mpirun) then ends
/// the other ranks. timeout_s <= 0: never fires. Destroying it stops the thread.
class Watchdog {
public:
  Watchdog(double timeout_s, int32_t rank, int32_t ranks, std::string prog);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Progress: `what` names it in the message ("step 12", "initialisation").
  void beat(const std::string& what);

private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Uploads the whole tensor `host` (p.numel floats) into slot k of p (0 value, 1 AdamW m,
/// 2 AdamW v): under ZeRO-2/3 (a slot holding a chunk, tgrt_param.shard) only this rank's
/// chunk (tgrt_shard_span), its padding left zero.
void uploadSlot(tgrt_ctx* ctx, const tgrt_model& model, const tgrt_param& p, int k,
                const float* host);

/// Downloads slot k of p as the whole tensor (p.numel floats) into host. A sharded slot
/// (ZeRO-2/3) is all-gathered through the arena (free between steps): a collective every rank
/// calls at the same point, in the same order. Throws std::runtime_error when the arena is
/// smaller than the tensor.
void downloadSlot(tgrt_ctx* ctx, const tgrt_model& model, const tgrt_param& p, int k,
                  float* host);

/// Checks that every parameter of `model` has a known dtype and state_dtype and that the
/// precision is a known tgrt_precision. Returns false with *err naming the parameter otherwise.
bool validateDtypes(const tgrt_model& model, std::string* err);

// ------------------------------------------------------------------------ checkpoints --

class SafetensorsReader;

/// Writes a float32 safetensors checkpoint of every parameter of `model` held in ctx: the value
/// as "<name>" (downloaded in param.dtype) and the AdamW moments as "optim.m.<name>",
/// "optim.v.<name>" (in param.state_dtype); bf16 / f16 widen exactly. `metadata` is stored as
/// given, plus "precision" = precisionName(model.precision). Synchronises ctx first. Returns
/// false and sets *err (naming the file) on failure; no partial file remains. `gathered`
/// (ZeRO-1, from gatherShardedMoments): moments this rank does not hold, keyed by
/// 3 * parameter index + slot (1 m, 2 v), used instead of ctx's memory.
bool saveParams(tgrt_ctx* ctx, const tgrt_model& model, const std::string& path,
                std::map<std::string, std::string> metadata, std::string* err,
                const std::map<int64_t, std::vector<float>>* gathered = nullptr);

/// ZeRO-2/3 (model.zero >= 2, ranks > 1): a collective every rank calls at the same point
/// between optimizer steps: every sharded slot (downloadSlot) gathered; rank 0 returns them
/// keyed as saveParams's `gathered` (key 3 * parameter index + slot, 0 value, 1 m, 2 v).
/// ZeRO-1 (model.zero == 1, ranks > 1): for each parameter owned by a rank other than 0, its owner
/// stages m and v in the parameter's gradient slot (free and zero between steps; the same
/// bytes when the moment and value dtypes have one width, else a DriverError) and
/// broadcasts them; rank 0 returns them as floats keyed as saveParams's `gathered` (other
/// ranks: empty). The gradient slots are zeroed again. Empty without sharding.
std::map<int64_t, std::vector<float>> gatherShardedMoments(tgrt_ctx* ctx,
                                                           const tgrt_model& model);

/// Checks that the checkpoint open in `reader` was saved by this model, in this order:
/// "precision" metadata (absent = "fp32"); then (when both the "spec" metadata and
/// model.spec_json parse) every spec field under "model" equal, so that a checkpoint of
/// another architecture is named by the fields that differ ("model.d_model: 64 in the
/// checkpoint, 96 in this model", every differing field, "; "-separated) rather than by a
/// tensor shape they change; then, in parameter order, each "<name>" present and each of
/// "<name>", "optim.m.<name>", "optim.v.<name>" present with the parameter's shape and dtype
/// F32; then no tensor the model lacks (what checkpoints without a "spec" are refused by).
/// Returns false with *err naming the first failing check: "checkpoint PATH was saved by
/// another model: ...". Reads no tensor data.
bool checkCheckpoint(const tgrt_model& model, const SafetensorsReader& reader, std::string* err);

/// Loads a checkpoint written by saveParams (or any float32 safetensors file with the same
/// tensor names) into ctx: each value is rounded (to nearest even) to param.dtype, each moment
/// to param.state_dtype, then uploaded. *have_optim receives whether the AdamW moments were in
/// the file (if none are, ctx's moments are left as they are). Under ZeRO-1 only the moments
/// of the parameters this rank owns are uploaded. Fails (false, *err naming the
/// file) before uploading anything when checkCheckpoint fails, or when only some moments are
/// present or a tensor cannot be read. Each tensor read is verified against its checksum
/// (files that record them: SafetensorsReader::hasChecksums) and must be finite: a NaN or
/// inf fails naming the tensor and the element (nonFiniteText), unless `nonfinite` is given
/// (--find-nonfinite: the values are loaded to be traced), which then receives the first
/// such tensor's description ("" when all are finite).
bool loadParams(tgrt_ctx* ctx, const tgrt_model& model, SafetensorsReader& reader,
                bool* have_optim, std::string* err, std::string* nonfinite = nullptr);

// ----------------------------------------------------------------------- loss scaling --

/// Dynamic loss scaling with PyTorch GradScaler's rule (growth factor 2, backoff 0.5): the
/// backward is seeded with scale(); after each optimizer step update(finite) is told whether
/// the gradients were finite. An overflowed step (skipped by AdamW) halves the scale, counts a
/// skip and resets the growth counter; a clean step increments the counter, and when it
/// reaches growth_interval the scale doubles (unless that would overflow float32) and the
/// counter restarts at 0. growth_interval <= 0 never grows. Disabled (init_scale <= 0): the
/// scale is 1 and update() does nothing.
class LossScaler {
public:
  LossScaler() = default;
  LossScaler(float init_scale, int32_t growth_interval)
      : enabled_(init_scale > 0), scale_(init_scale > 0 ? init_scale : 1.0f),
        interval_(growth_interval) {}

  bool enabled() const { return enabled_; }
  /// The current loss scale (1 when disabled).
  float scale() const { return scale_; }
  /// Clean steps in a row since the last growth or overflow.
  int32_t growthCounter() const { return counter_; }
  /// Optimizer steps skipped because their gradients were not finite.
  int64_t skippedSteps() const { return skipped_; }
  /// Applies the rule after one optimizer step; `finite`: its gradient norm was finite.
  void update(bool finite);
  /// Restores a saved state (scale > 0, counter >= 0, skipped >= 0; from a checkpoint).
  void restore(float scale, int32_t counter, int64_t skipped) {
    scale_ = scale;
    counter_ = counter;
    skipped_ = skipped;
  }

private:
  bool enabled_ = false;
  float scale_ = 1.0f;
  int32_t interval_ = 0;
  int32_t counter_ = 0;
  int64_t skipped_ = 0;
};

} // namespace tgrt

#endif // TGRT_DRIVER_DRIVER_H
