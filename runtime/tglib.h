/* tglib.h — C ABI of a model compiled with `tgc compile --emit=lib` (a shared library).
 *
 * For tests and embedding: load the .so (dlopen / ctypes), create a context, set or read
 * parameters and gradients by name, run steps. On the host, parameters and gradients are
 * always float32, row-major, with the shapes of tgrt_model.params; on the device each
 * parameter keeps its own element type (tgrt_param.dtype: f32, bf16 or f16, see
 * tgrt_model.precision), and the copies convert: float32 -> bf16 / f16 rounds to nearest
 * even, the other way is exact. Tokens / targets: int32 [batch_size, context].
 * All functions run synchronously (a CUDA build synchronises before returning).
 */
#ifndef TGLIB_H
#define TGLIB_H
#include <stdint.h>
#include "runtime/tgrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates the planned regions; parameters are initialised (GPT-2 scheme) with `seed`,
 * generated in float32 and rounded to each parameter's dtype. Returns NULL (message on
 * stderr) if the plan does not fit or names an unknown dtype. */
tgrt_ctx* tglib_create(int64_t seed);
void tglib_destroy(tgrt_ctx* ctx);
/* The compiled plan (sizes, parameters, optimizer settings). */
const tgrt_model* tglib_model(void);
/* Parameter index by name, or -1. */
int32_t tglib_param_index(const char* name);
/* Copies numel float32 values between host memory and a parameter's value (set / get) or
 * gradient accumulator (get), converting to / from the parameter's dtype: set_param rounds
 * to nearest even (so get_param returns the rounded values), get widens exactly. The
 * gradient is returned as accumulated, i.e. multiplied by the current loss scale
 * (tglib_set_loss_scale; 1 by default). Return 0, or -1 for an unknown name. */
int32_t tglib_set_param(tgrt_ctx* ctx, const char* name, const float* src);
int32_t tglib_get_param(tgrt_ctx* ctx, const char* name, float* dst);
int32_t tglib_get_grad(tgrt_ctx* ctx, const char* name, float* dst);
/* One micro-batch: forward + backward; gradients accumulate (+=). Returns the loss. Its
 * dropout masks are keyed by the counters of tglib_set_counters (as the executable's). */
float tglib_micro_step(tgrt_ctx* ctx, const int32_t* tokens, const int32_t* targets);
/* Sets the optimizer step (>= 1) and micro-batch index (>= 0, < grad_accum) that the next
 * micro-steps' dropout masks are keyed by, as the training executable sets them before
 * micro-batch k of step s (tgrt_set_step(s), tgrt_set_micro_batch(k)). Defaults: step 1,
 * micro-batch 0; tglib_optimizer_step(step) also sets the step. */
void tglib_set_counters(tgrt_ctx* ctx, int64_t step, int32_t micro_batch);
/* Sets the loss scale (finite, > 0; the backend aborts otherwise) that the following
 * micro-steps seed the backward with and that the next optimizer step divides the
 * gradients by; forwards to tgrt_set_loss_scale. Meant for models with loss scaling
 * (tgrt_model.loss_scale_init > 0, fp16-mixed); the default is 1. Other models do not seed
 * their backward with it but their optimizer step still divides by it, so leave it at 1
 * there. The caller owns the schedule (the training executable's is PyTorch GradScaler's):
 * after each tglib_optimizer_step, a non-finite tglib_last_grad_norm means the step was
 * skipped: halve the scale; after loss_scale_growth_interval clean steps in a row, double
 * it. */
void tglib_set_loss_scale(tgrt_ctx* ctx, float scale);
/* The optimizer step: unscale and clip, AdamW with step number `step` (1-based) and
 * learning rate `lr`, then persistent gradients are zeroed (see tglib_grads_in_arena). If a
 * gradient is not finite, AdamW changes nothing (the step is skipped) and persistent
 * gradients are still zeroed. */
void tglib_optimizer_step(tgrt_ctx* ctx, int64_t step, float lr);
/* Forward only; returns the loss. */
float tglib_eval_step(tgrt_ctx* ctx, const int32_t* tokens, const int32_t* targets);
/* Global gradient norm of the last optimizer step (before clipping, divided by the loss
 * scale); not finite when the gradients overflowed and that step was skipped. */
float tglib_last_grad_norm(tgrt_ctx* ctx);
/* 1 when the gradient slots live in the arena (tgrt_model.grads_in_arena: tgc's
 * training.gradients auto with grad_accum 1 and one rank, or arena): tglib_get_grad reads
 * them from the micro-step that wrote them to the end of the next optimizer step, which
 * leaves them as they were (the next micro-step zeroes each before writing it) instead of
 * zeroing them. 0: persistent slots, zeroed by the optimizer step. */
int32_t tglib_grads_in_arena(void);

#ifdef __cplusplus
}
#endif
#endif
