// Driver.h — the training executable's main, as a library so tests can run it on a fake model.
//
// The emitted model provides tg_model_info / tg_micro_step / tg_optimizer_step / tg_eval_step
// (runtime/tgrt.h); Main.cpp wraps them in a tgrt_driver_hooks and calls tgrt_driver_main.
// The driver only uses the context functions of tgrt.h (never kernels), so it links against
// either backend (runtime/cpu or runtime/cuda). Plain C++; never links MLIR.
#ifndef TGRT_DRIVER_DRIVER_H
#define TGRT_DRIVER_DRIVER_H

#include "runtime/tgrt.h"

#include <cstdint>
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

/// Optimizer steps in one epoch over `train_tokens` tokens:
/// floor(train_tokens / (batch_size * context * grad_accum)).
int64_t stepsPerEpoch(const tgrt_model& model, int64_t train_tokens);

} // namespace tgrt

#endif // TGRT_DRIVER_DRIVER_H
