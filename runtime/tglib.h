/* tglib.h — C ABI of a model compiled with `tgc compile --emit=lib` (a shared library).
 *
 * For tests and embedding: load the .so (dlopen / ctypes), create a context, set or read
 * parameters and gradients by name, run steps. Parameters, gradients: float32, row-major,
 * shapes as listed by tglib_param_shape. Tokens / targets: int32 [batch_size, context].
 * All functions run synchronously (a CUDA build synchronises before returning).
 */
#ifndef TGLIB_H
#define TGLIB_H
#include <stdint.h>
#include "runtime/tgrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates the planned regions; parameters are initialised (GPT-2 scheme) with `seed`.
 * Returns NULL (message on stderr) if the plan does not fit. */
tgrt_ctx* tglib_create(int64_t seed);
void tglib_destroy(tgrt_ctx* ctx);
/* The compiled plan (sizes, parameters, optimizer settings). */
const tgrt_model* tglib_model(void);
/* Parameter index by name, or -1. */
int32_t tglib_param_index(const char* name);
/* Copies numel floats between host memory and a parameter's value / gradient / AdamW
 * moments. Return 0, or -1 for an unknown name. */
int32_t tglib_set_param(tgrt_ctx* ctx, const char* name, const float* src);
int32_t tglib_get_param(tgrt_ctx* ctx, const char* name, float* dst);
int32_t tglib_get_grad(tgrt_ctx* ctx, const char* name, float* dst);
/* One micro-batch: forward + backward; gradients accumulate (+=). Returns the loss. */
float tglib_micro_step(tgrt_ctx* ctx, const int32_t* tokens, const int32_t* targets);
/* The optimizer step: clip, AdamW with step number `step` (1-based) and learning rate
 * `lr`, then gradients are zeroed. */
void tglib_optimizer_step(tgrt_ctx* ctx, int64_t step, float lr);
/* Forward only; returns the loss. */
float tglib_eval_step(tgrt_ctx* ctx, const int32_t* tokens, const int32_t* targets);
/* Global gradient norm measured by the last optimizer step. */
float tglib_last_grad_norm(tgrt_ctx* ctx);

#ifdef __cplusplus
}
#endif
#endif
