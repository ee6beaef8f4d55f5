// CpuContext.h — private to the CPU backend: the context struct and error helpers shared by
// Context.cpp (driver-facing context functions) and Kernels.cpp (kernels).
#ifndef TGRT_CPU_CPUCONTEXT_H
#define TGRT_CPU_CPUCONTEXT_H

#include "runtime/tgrt.h"

#include <cstdint>

/// The CPU context: the model plan, the three zero-filled 64-byte-aligned regions, and the
/// host-side optimizer state the kernels read (step, lr, micro-batch, loss scale) or write
/// (loss sum, grad norm).
struct tgrt_ctx {
  const tgrt_model* model = nullptr;
  /// Indexed by enum tgrt_region; TGRT_HOST (offloaded AdamW moments, tgrt_model.host_bytes)
  /// is ordinary memory here like the others.
  char* regions[4] = {nullptr, nullptr, nullptr, nullptr};
  int64_t region_bytes[4] = {0, 0, 0, 0}; ///< requested sizes in bytes
  int64_t step = 1;          ///< optimizer step, 1-based in AdamW's bias correction
  float lr = 0.0f;           ///< learning rate used by tgrt_adamw
  int32_t micro_batch = 0;   ///< index within the optimizer step (dropout masks)
  double loss_sum = 0.0;     ///< sum of reported losses since the last take
  int64_t loss_count = 0;    ///< how many losses were reported since the last take
  float last_grad_norm = 0.0f; ///< unscaled norm recorded by tgrt_clip_scale
  float loss_scale = 1.0f;     ///< S: tgrt_fill_loss_scaled seeds value*S, clip unscales by S
  tgrt_comm* comm = nullptr;   ///< data parallel: the communicator (NULL: one rank)
  int32_t rank = 0;            ///< this context's rank in comm
  int32_t ranks = 1;           ///< comm's size
  /// Parameter values changed by the host (tgrt_take_weights_stale); [values_lo, values_hi)
  /// is the persistent byte range of the model's parameter values.
  bool weights_stale = true;
  int64_t values_lo = 0, values_hi = 0;
};

namespace tgrt_cpu {

/// Prints "tgrt: <loc>: <formatted message>" to stderr and exits with status 1.
/// `loc` may be NULL (printed as "?"). printf-style format.
[[noreturn]] void fail(const char* loc, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Fails (see fail) unless every size in the list is >= 0; `what` names the kernel argument
/// list for the message.
void checkNonNegative(const char* loc, const char* what, int64_t a, int64_t b = 0, int64_t c = 0,
                      int64_t d = 0);

/// Fails unless ctx is non-NULL (kernels that read or write context state need it).
void checkCtx(const tgrt_ctx* ctx, const char* loc);

} // namespace tgrt_cpu

#endif // TGRT_CPU_CPUCONTEXT_H
