//===- Lib.cpp - the tglib.h C ABI over an emitted model ---------------------===//
//
// Linked into `tgc compile --emit=lib` shared libraries. Uses only tgrt.h context
// functions and the emitted tg_* symbols, so it works with either backend. The host side
// is float32; values are converted to / from each parameter's dtype (tgrt::uploadFloats).
//
//===----------------------------------------------------------------------------===//
#include "runtime/tglib.h"
#include "runtime/driver/Driver.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {
const tgrt_param *findParam(const char *name) {
  const tgrt_model *m = tg_model_info();
  for (int32_t i = 0; i < m->n_params; ++i)
    if (std::strcmp(m->params[i].name, name) == 0)
      return &m->params[i];
  return nullptr;
}

void uploadBatch(tgrt_ctx *ctx, const int32_t *tokens, const int32_t *targets) {
  const tgrt_model *m = tg_model_info();
  int64_t bytes = (int64_t)m->batch_size * m->context * (int64_t)sizeof(int32_t);
  tgrt_upload(ctx, TGRT_PERSISTENT, m->tokens_offset, tokens, bytes);
  tgrt_upload(ctx, TGRT_PERSISTENT, m->targets_offset, targets, bytes);
}

/// Copies one slot of a parameter (value in p.dtype, or gradient in p.grad_dtype) to the
/// host as float32 (exact): 0, or -1 for an unknown name.
int32_t downloadSlot(tgrt_ctx *ctx, const char *name, int64_t tgrt_param::*slot, float *dst) {
  const tgrt_param *p = findParam(name);
  if (!p)
    return -1;
  // Gradients in the arena (tgrt_model.grads_in_arena) are there from the micro-step that
  // wrote them to the end of the next optimizer step.
  const bool grad = slot == &tgrt_param::grad_offset;
  const bool arena = grad && tg_model_info()->grads_in_arena;
  if (!grad) // the value: split ones joined from their copy and low halves
    tgrt::downloadValue(ctx, *p, dst, 0, p->numel);
  else
    tgrt::downloadFloats(ctx, p->*slot, p->grad_dtype, dst, p->numel,
                         arena ? TGRT_ARENA : TGRT_PERSISTENT);
  return 0;
}

float takeLoss(tgrt_ctx *ctx) {
  tgrt_synchronize(ctx);
  int64_t count = 0;
  double sum = tgrt_take_loss(ctx, &count);
  return count ? (float)(sum / (double)count) : 0.0f;
}
} // namespace

extern "C" {

tgrt_ctx *tglib_create(int64_t seed) {
  const tgrt_model *m = tg_model_info();
  std::string err;
  if (!tgrt::validateDtypes(*m, &err)) {
    std::fprintf(stderr, "tglib: %s\n", err.c_str());
    return nullptr;
  }
  tgrt_ctx *ctx = tgrt_ctx_create(m);
  if (!ctx)
    return nullptr;
  std::vector<float> buf;
  for (int32_t i = 0; i < m->n_params; ++i) {
    const tgrt_param &p = m->params[i];
    buf.resize(p.numel);
    tgrt::initParam(p, (uint64_t)seed, buf.data());
    tgrt::uploadValue(ctx, p, buf.data(), 0, p.numel);
  }
  tgrt_synchronize(ctx);
  return ctx;
}

void tglib_destroy(tgrt_ctx *ctx) { tgrt_ctx_destroy(ctx); }
const tgrt_model *tglib_model(void) { return tg_model_info(); }

int32_t tglib_param_index(const char *name) {
  const tgrt_param *p = findParam(name);
  return p ? (int32_t)(p - tg_model_info()->params) : -1;
}

int32_t tglib_set_param(tgrt_ctx *ctx, const char *name, const float *src) {
  const tgrt_param *p = findParam(name);
  if (!p)
    return -1;
  tgrt::uploadValue(ctx, *p, src, 0, p->numel); // rounded to p->dtype, or split
  tgrt_synchronize(ctx);
  return 0;
}

int32_t tglib_get_param(tgrt_ctx *ctx, const char *name, float *dst) {
  return downloadSlot(ctx, name, &tgrt_param::offset, dst);
}

int32_t tglib_get_grad(tgrt_ctx *ctx, const char *name, float *dst) {
  return downloadSlot(ctx, name, &tgrt_param::grad_offset, dst);
}

float tglib_micro_step(tgrt_ctx *ctx, const int32_t *tokens, const int32_t *targets) {
  uploadBatch(ctx, tokens, targets);
  tg_micro_step(ctx);
  return takeLoss(ctx);
}

void tglib_set_counters(tgrt_ctx *ctx, int64_t step, int32_t micro_batch) {
  tgrt_set_step(ctx, step);
  tgrt_set_micro_batch(ctx, micro_batch);
}

void tglib_set_loss_scale(tgrt_ctx *ctx, float scale) { tgrt_set_loss_scale(ctx, scale); }

void tglib_optimizer_step(tgrt_ctx *ctx, int64_t step, float lr) {
  tgrt_set_step(ctx, step);
  tgrt_set_lr(ctx, lr);
  tg_optimizer_step(ctx);
  tgrt_synchronize(ctx);
}

float tglib_eval_step(tgrt_ctx *ctx, const int32_t *tokens, const int32_t *targets) {
  uploadBatch(ctx, tokens, targets);
  tg_eval_step(ctx);
  return takeLoss(ctx);
}

float tglib_last_grad_norm(tgrt_ctx *ctx) { return tgrt_last_grad_norm(ctx); }
int32_t tglib_grads_in_arena(void) { return tg_model_info()->grads_in_arena ? 1 : 0; }

} // extern "C"
