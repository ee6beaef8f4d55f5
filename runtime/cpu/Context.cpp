// Context.cpp — the "context (driver)" half of runtime/tgrt.h for the CPU backend.
//
// A context owns three host allocations (persistent, arena, workspace), each 64-byte aligned
// and zero-filled, plus the small amount of host state kernels consult (optimizer step,
// learning rate, micro-batch index, loss scale) or produce (loss sum/count, last gradient
// norm).
// Everything is synchronous, so tgrt_synchronize is a no-op.
#include "runtime/cpu/CpuContext.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tgrt_cpu {

void fail(const char* loc, const char* fmt, ...) {
  std::fprintf(stderr, "tgrt: %s: ", loc ? loc : "?");
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::exit(1);
}

void checkNonNegative(const char* loc, const char* what, int64_t a, int64_t b, int64_t c,
                      int64_t d) {
  if (a < 0 || b < 0 || c < 0 || d < 0)
    fail(loc, "negative size in %s (%lld, %lld, %lld, %lld)", what, (long long)a, (long long)b,
         (long long)c, (long long)d);
}

void checkCtx(const tgrt_ctx* ctx, const char* loc) {
  if (!ctx) fail(loc, "NULL context");
}

} // namespace tgrt_cpu

namespace {

constexpr int64_t kAlign = 64;
const char* const kRegionNames[4] = {"persistent", "arena", "workspace", "host"};

/// Returns a zero-filled, 64-byte aligned block of at least `bytes` bytes (at least 64, so a
/// region of size 0 still has a distinct non-NULL base), or NULL on failure.
char* allocateRegion(int64_t bytes) {
  if (bytes < 0 || bytes > INT64_MAX - kAlign) return nullptr;
  int64_t rounded = ((bytes + kAlign - 1) / kAlign) * kAlign;
  if (rounded == 0) rounded = kAlign;
  if ((uint64_t)rounded > (uint64_t)SIZE_MAX) return nullptr;
  void* p = std::aligned_alloc((size_t)kAlign, (size_t)rounded);
  if (!p) return nullptr;
  std::memset(p, 0, (size_t)rounded);
  return static_cast<char*>(p);
}

/// Checks ctx, region index and the byte range [offset, offset + bytes) against the region's
/// size; fails with a clear message otherwise. Returns the region base.
char* checkedRange(tgrt_ctx* ctx, const char* what, int32_t region, int64_t offset,
                   int64_t bytes) {
  tgrt_cpu::checkCtx(ctx, what);
  if (region < 0 || region > 3) tgrt_cpu::fail(what, "invalid region index %d", (int)region);
  const int64_t size = ctx->region_bytes[region];
  if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset)
    tgrt_cpu::fail(what, "range [%lld, %lld) outside the %s region of %lld bytes",
                   (long long)offset, (long long)offset + (long long)bytes,
                   kRegionNames[region], (long long)size);
  return ctx->regions[region];
}

} // namespace

extern "C" {

/// Creates a CPU context for `model`: allocates persistent_bytes, arena_bytes,
/// workspace_bytes and host_bytes (bytes; each 64-byte aligned, zero-filled). Step starts at 1, lr at
/// model->lr, the loss scale at 1. Returns NULL with a message on stderr when model is NULL,
/// a size is negative or an allocation fails. The model must outlive the context.
tgrt_ctx* tgrt_ctx_create(const tgrt_model* model) {
  if (!model) {
    std::fprintf(stderr, "tgrt: ctx_create: NULL model\n");
    return nullptr;
  }
  const int64_t sizes[4] = {model->persistent_bytes, model->arena_bytes, model->workspace_bytes,
                            model->host_bytes};
  tgrt_ctx* ctx = new (std::nothrow) tgrt_ctx();
  if (!ctx) {
    std::fprintf(stderr, "tgrt: ctx_create: out of host memory for the context\n");
    return nullptr;
  }
  ctx->model = model;
  ctx->lr = model->lr;
  tgrt_values_range(model, &ctx->values_lo, &ctx->values_hi);
  for (int r = 0; r < 4; ++r) {
    if (sizes[r] < 0) {
      std::fprintf(stderr, "tgrt: ctx_create: negative %s size %lld bytes\n", kRegionNames[r],
                   (long long)sizes[r]);
      tgrt_ctx_destroy(ctx);
      return nullptr;
    }
    ctx->regions[r] = allocateRegion(sizes[r]);
    ctx->region_bytes[r] = sizes[r];
    if (!ctx->regions[r]) {
      std::fprintf(stderr,
                   "tgrt: ctx_create: cannot allocate the %s region (%lld bytes = %.3f GiB) "
                   "in host memory\n",
                   kRegionNames[r], (long long)sizes[r], (double)sizes[r] / (1024.0 * 1024 * 1024));
      tgrt_ctx_destroy(ctx);
      return nullptr;
    }
  }
  return ctx;
}

/// Frees the regions and the context. NULL is a no-op.
void tgrt_ctx_destroy(tgrt_ctx* ctx) {
  if (!ctx) return;
  for (char* p : ctx->regions) std::free(p);
  delete ctx;
}

/// Base pointer of region (enum tgrt_region). Fails (exit 1) on a bad index or NULL ctx.
char* tgrt_region(tgrt_ctx* ctx, int32_t region) {
  tgrt_cpu::checkCtx(ctx, "region");
  if (region < 0 || region > 3) tgrt_cpu::fail("region", "invalid region index %d", (int)region);
  return ctx->regions[region];
}

/// Copies `bytes` bytes from host src into region at `offset` (bytes). Fails (exit 1) when the
/// range is outside the region.
void tgrt_upload(tgrt_ctx* ctx, int32_t region, int64_t offset, const void* src, int64_t bytes) {
  char* base = checkedRange(ctx, "upload", region, offset, bytes);
  if (bytes > 0) std::memcpy(base + offset, src, (size_t)bytes);
  if (region == TGRT_PERSISTENT && bytes > 0 && offset < ctx->values_hi &&
      offset + bytes > ctx->values_lo)
    ctx->weights_stale = true;
}

/// tgrt_upload_async: on the CPU every call runs when launched, so the copy is made at once.
void tgrt_upload_async(tgrt_ctx* ctx, int32_t region, int64_t offset, const void* src,
                       int64_t bytes) {
  tgrt_upload(ctx, region, offset, src, bytes);
}

/// 1 once after the host wrote parameter values (tgrt.h), then 0 until the next write.
int32_t tgrt_take_weights_stale(tgrt_ctx* ctx) {
  tgrt_cpu::checkCtx(ctx, "take_weights_stale");
  const bool stale = ctx->weights_stale;
  ctx->weights_stale = false;
  return stale ? 1 : 0;
}

/// Copies `bytes` bytes from region at `offset` (bytes) to host dst. Fails (exit 1) when the
/// range is outside the region.
void tgrt_download(tgrt_ctx* ctx, int32_t region, int64_t offset, void* dst, int64_t bytes) {
  char* base = checkedRange(ctx, "download", region, offset, bytes);
  if (bytes > 0) std::memcpy(dst, base + offset, (size_t)bytes);
}

/// No-op: every CPU kernel is synchronous.
void tgrt_synchronize(tgrt_ctx* ctx) { (void)ctx; }

/// Sets the optimizer step (1-based; used in AdamW bias correction and dropout masks).
void tgrt_set_step(tgrt_ctx* ctx, int64_t step) {
  tgrt_cpu::checkCtx(ctx, "set_step");
  ctx->step = step;
}

/// Runs fn(ctx): the CPU has no graphs (tgrt.h). Returns 0. Fails (exit 1) on a slot outside
/// [0, 4) or a NULL fn, as the CUDA backend does.
int32_t tgrt_run_graph(tgrt_ctx* ctx, int32_t slot, void (*fn)(tgrt_ctx*)) {
  tgrt_cpu::checkCtx(ctx, "run_graph");
  if (slot < 0 || slot >= 4) tgrt_cpu::fail("run_graph", "slot %d outside [0, 4)", (int)slot);
  if (!fn) tgrt_cpu::fail("run_graph", "NULL function");
  fn(ctx);
  return 0;
}

/// Sets the learning rate used by the next tgrt_adamw calls.
void tgrt_set_lr(tgrt_ctx* ctx, float lr) {
  tgrt_cpu::checkCtx(ctx, "set_lr");
  ctx->lr = lr;
}

/// Sets the loss scale S read by tgrt_fill_loss_scaled (seed = value * S) and tgrt_clip_scale
/// (unscales by 1/S). The context starts at S = 1; the driver owns the schedule (e.g. dynamic
/// loss scaling from model->loss_scale_init). Fails (exit 1) unless scale is finite and > 0.
void tgrt_set_loss_scale(tgrt_ctx* ctx, float scale) {
  tgrt_cpu::checkCtx(ctx, "set_loss_scale");
  if (!(std::isfinite(scale) && scale > 0.0f))
    tgrt_cpu::fail("set_loss_scale", "loss scale %g must be finite and > 0", (double)scale);
  ctx->loss_scale = scale;
}

/// Sets the micro-batch index within the optimizer step (dropout masks depend on it).
void tgrt_set_micro_batch(tgrt_ctx* ctx, int32_t index) {
  tgrt_cpu::checkCtx(ctx, "set_micro_batch");
  ctx->micro_batch = index;
}

/// Returns the sum of losses reported since the last call and stores their number in *count
/// (when count is non-NULL); resets both.
double tgrt_take_loss(tgrt_ctx* ctx, int64_t* count) {
  tgrt_cpu::checkCtx(ctx, "take_loss");
  const double sum = ctx->loss_sum;
  if (count) *count = ctx->loss_count;
  ctx->loss_sum = 0.0;
  ctx->loss_count = 0;
  return sum;
}

/// Global gradient L2 norm (before clipping, after unscaling by the loss scale) recorded by the
/// last tgrt_clip_scale; 0 before any; not finite when a gradient overflowed (skipped step).
float tgrt_last_grad_norm(tgrt_ctx* ctx) {
  tgrt_cpu::checkCtx(ctx, "last_grad_norm");
  return ctx->last_grad_norm;
}

/// "cpu".
const char* tgrt_backend_name(void) { return "cpu"; }

/// No power reading on the CPU backend: 0, the outputs unchanged (tgrt.h).
int32_t tgrt_power_sample(tgrt_ctx* ctx, double*, double*, double*, double*, double*) {
  tgrt_cpu::checkCtx(ctx, "power_sample");
  return 0;
}

} // extern "C"

//===----------------------------------------------------------------------------===//
// Data parallel: the in-process communicator (N threads, one context each)
//===----------------------------------------------------------------------------===//

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

/// N ranks meet at barriers; between two barriers each rank reads what the others
/// published. A generation counter makes the barrier reusable. Every wait is bounded by
/// the timeout so that a rank that never arrives makes the others fail with a message.
struct tgrt_comm {
  int32_t ranks = 1;
  double timeout_s = 120.0;
  std::mutex mu;
  std::condition_variable cv;
  int32_t arrived = 0;
  uint64_t generation = 0;
  /// Published by each rank for the current collective.
  std::vector<void*> bufs;
  std::vector<int64_t> counts;
  std::vector<int32_t> dtypes;
  std::vector<int32_t> roots;       ///< tgrt_broadcast's root; -1 for the other collectives
  std::vector<int64_t> chunks;      ///< ZeRO-2/3's chunk c; -1 for the other collectives
  std::vector<const char*> whats;   ///< the collective's name (a string literal)
  std::vector<std::string> locs;
};

namespace {

/// Waits until all ranks of comm arrived (rank `rank` calling from `loc`, collective
/// `what`); fails naming the collective, rank and location after comm->timeout_s.
void barrier(tgrt_comm* comm, int32_t rank, const char* loc, const char* what) {
  std::unique_lock<std::mutex> lock(comm->mu);
  uint64_t gen = comm->generation;
  if (++comm->arrived == comm->ranks) {
    comm->arrived = 0;
    ++comm->generation;
    comm->cv.notify_all();
    return;
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(comm->timeout_s));
  while (comm->generation == gen) {
    if (comm->cv.wait_until(lock, deadline) == std::cv_status::timeout &&
        comm->generation == gen) {
      int32_t arrived = comm->arrived;
      lock.unlock();
      tgrt_cpu::fail(loc,
                     "%s: rank %d of %d waited %.3g s for the other ranks (%d of %d arrived); "
                     "a rank died, hangs or runs a different step (timeout: "
                     "TGRT_COMM_TIMEOUT_S)",
                     what, (int)rank, (int)comm->ranks, comm->timeout_s, (int)arrived,
                     (int)comm->ranks);
    }
  }
}

/// "<n> elements of dtype <dt>[ from root <root>][ in chunks of <c>]" (or "<n> values" for
/// the host reduction, dt -1): what rank r published, for the mismatch message.
std::string describeArgs(const tgrt_comm* comm, int32_t r) {
  char text[160];
  if (comm->dtypes[r] < 0)
    std::snprintf(text, sizeof text, "%lld values", (long long)comm->counts[r]);
  else if (comm->roots[r] >= 0)
    std::snprintf(text, sizeof text, "%lld elements of dtype %d from root %d",
                  (long long)comm->counts[r], (int)comm->dtypes[r], (int)comm->roots[r]);
  else if (comm->chunks[r] >= 0)
    std::snprintf(text, sizeof text, "%lld elements of dtype %d in chunks of %lld",
                  (long long)comm->counts[r], (int)comm->dtypes[r], (long long)comm->chunks[r]);
  else
    std::snprintf(text, sizeof text, "%lld elements of dtype %d", (long long)comm->counts[r],
                  (int)comm->dtypes[r]);
  return text;
}

/// The first half of every collective: rank `me` publishes its arguments (collective `what`,
/// buf, n elements of dt (-1: host doubles), root (-1: none), chunk c (-1: none), loc), waits
/// for every rank (barrier: bounded by the timeout), then checks that all ranks called the
/// same collective with the same n, dt, root and chunk, failing with both ranks' loc and
/// arguments otherwise. On return comm->bufs holds every rank's buffer; they stay valid until
/// the collective's closing barrier (the caller's), which also keeps a fast rank from
/// publishing its next collective's arguments while a slow one still reads these.
void rendezvous(tgrt_comm* comm, int32_t me, const char* loc, const char* what, void* buf,
                int64_t n, int32_t dt, int32_t root, int64_t chunk = -1) {
  comm->bufs[me] = buf;
  comm->counts[me] = n;
  comm->dtypes[me] = dt;
  comm->roots[me] = root;
  comm->chunks[me] = chunk;
  comm->whats[me] = what;
  comm->locs[me] = loc ? loc : "?";
  barrier(comm, me, loc, what);
  for (int32_t r = 0; r < comm->ranks; ++r) {
    if (std::strcmp(comm->whats[r], what) != 0)
      tgrt_cpu::fail(loc, "%s: rank %d calls %s at %s, rank %d calls %s at %s (the ranks run "
                          "different steps)",
                     what, (int)me, what, comm->locs[me].c_str(), (int)r, comm->whats[r],
                     comm->locs[r].c_str());
    if (comm->counts[r] != n || comm->dtypes[r] != dt || comm->roots[r] != root ||
        comm->chunks[r] != chunk)
      tgrt_cpu::fail(loc, "%s: rank %d passes %s at %s, rank %d passes %s at %s (the ranks run "
                          "different steps)",
                     what, (int)me, describeArgs(comm, me).c_str(), comm->locs[me].c_str(),
                     (int)r, describeArgs(comm, r).c_str(), comm->locs[r].c_str());
  }
}

/// Fails unless ctx's communicator is usable.
void checkComm(tgrt_ctx* ctx, const char* loc) {
  tgrt_cpu::checkCtx(ctx, loc);
  if (ctx->comm && (ctx->rank < 0 || ctx->rank >= ctx->ranks))
    tgrt_cpu::fail(loc, "rank %d outside [0, %d)", (int)ctx->rank, (int)ctx->ranks);
}

float loadElem(int32_t dt, const void* p, int64_t i) {
  if (dt == TGRT_F32) return static_cast<const float*>(p)[i];
  uint16_t h = static_cast<const uint16_t*>(p)[i];
  return dt == TGRT_BF16 ? tgrt_bf16_to_float(h) : tgrt_f16_to_float(h);
}

void storeElem(int32_t dt, void* p, int64_t i, float v) {
  if (dt == TGRT_F32)
    static_cast<float*>(p)[i] = v;
  else if (dt == TGRT_BF16)
    static_cast<uint16_t*>(p)[i] = tgrt_bf16_from_float(v);
  else
    static_cast<uint16_t*>(p)[i] = tgrt_f16_from_float(v);
}

} // namespace

tgrt_comm* tgrt_comm_create_local(int32_t ranks) {
  if (ranks < 1 || ranks > 64) {
    std::fprintf(stderr, "tgrt: comm_create_local: ranks %d outside [1, 64]\n", (int)ranks);
    return nullptr;
  }
  tgrt_comm* comm = new (std::nothrow) tgrt_comm();
  if (!comm) return nullptr;
  comm->ranks = ranks;
  if (const char* t = std::getenv("TGRT_COMM_TIMEOUT_S")) {
    char* end = nullptr;
    double v = std::strtod(t, &end);
    if (end == t || *end || !(v > 0)) {
      std::fprintf(stderr, "tgrt: comm_create_local: TGRT_COMM_TIMEOUT_S=%s is not a positive "
                           "number of seconds\n", t);
      delete comm;
      return nullptr;
    }
    comm->timeout_s = v;
  }
  comm->bufs.assign(ranks, nullptr);
  comm->counts.assign(ranks, 0);
  comm->dtypes.assign(ranks, 0);
  comm->roots.assign(ranks, -1);
  comm->chunks.assign(ranks, -1);
  comm->whats.assign(ranks, "");
  comm->locs.assign(ranks, "");
  return comm;
}

void tgrt_comm_destroy(tgrt_comm* comm) { delete comm; }

int32_t tgrt_comm_unique_id(char*, int64_t) {
  std::fprintf(stderr, "tgrt: comm_unique_id: NCCL communicators are for the cuda backend; the "
                       "cpu backend runs ranks as threads (tgrt_comm_create_local)\n");
  return -1;
}

tgrt_comm* tgrt_comm_create_nccl(int32_t, int32_t, int32_t, const char*) {
  std::fprintf(stderr, "tgrt: comm_create_nccl: NCCL communicators are for the cuda backend; "
                       "the cpu backend runs ranks as threads (tgrt_comm_create_local)\n");
  return nullptr;
}

void tgrt_set_comm(tgrt_ctx* ctx, tgrt_comm* comm, int32_t rank, int32_t ranks) {
  tgrt_cpu::checkCtx(ctx, "set_comm");
  if (!comm) {
    ctx->comm = nullptr;
    ctx->rank = 0;
    ctx->ranks = 1;
    return;
  }
  if (ranks != comm->ranks)
    tgrt_cpu::fail("set_comm", "ranks %d differs from the communicator's %d", (int)ranks,
                   (int)comm->ranks);
  if (rank < 0 || rank >= ranks)
    tgrt_cpu::fail("set_comm", "rank %d outside [0, %d)", (int)rank, (int)ranks);
  ctx->comm = comm;
  ctx->rank = rank;
  ctx->ranks = ranks;
}

void tgrt_all_reduce_mean(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf, int64_t n) {
  checkComm(ctx, loc);
  tgrt_cpu::checkNonNegative(loc, "all_reduce_mean(n)", n);
  if (tgrt_dtype_size(dt) == 0) tgrt_cpu::fail(loc, "all_reduce_mean: unknown dtype %d", (int)dt);
  tgrt_comm* comm = ctx->comm;
  if (!comm || comm->ranks == 1) return;
  const int32_t R = comm->ranks, me = ctx->rank;
  // Every rank checks that all ranks run the same collective.
  rendezvous(comm, me, loc, "all_reduce_mean", buf, n, dt, -1);
  // Rank `me` reduces its share [lo, hi) of the elements: the sum over ranks 0..R-1 in that
  // order, in float, divided by R, rounded once, written to every rank's buffer. The
  // shares are disjoint, so no rank reads an element another one writes.
  const int64_t lo = n * me / R, hi = n * (me + 1) / R;
  const float inv = (float)R;
  for (int64_t i = lo; i < hi; ++i) {
    float s = 0.0f;
    for (int32_t r = 0; r < R; ++r) s += loadElem(dt, comm->bufs[r], i);
    float mean = s / inv;
    for (int32_t r = 0; r < R; ++r) storeElem(dt, comm->bufs[r], i, mean);
  }
  barrier(comm, me, loc, "all_reduce_mean");
}

void tgrt_all_reduce_mean_start(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf,
                                int64_t n, int32_t grad_accum) {
  checkComm(ctx, loc);
  if (ctx->micro_batch != grad_accum - 1) return; // the slots still accumulate
  tgrt_all_reduce_mean(ctx, loc, dt, buf, n);
}

void tgrt_all_reduce_wait(tgrt_ctx* ctx, const char* loc) { checkComm(ctx, loc); }

void tgrt_all_reduce_mean_host(tgrt_ctx* ctx, const char* loc, double* v, int64_t n) {
  checkComm(ctx, loc);
  tgrt_cpu::checkNonNegative(loc, "all_reduce_mean_host(n)", n);
  tgrt_comm* comm = ctx->comm;
  if (!comm || comm->ranks == 1) return;
  const int32_t R = comm->ranks, me = ctx->rank;
  rendezvous(comm, me, loc, "all_reduce_mean_host", v, n, -1, -1);
  std::vector<double> out((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int32_t r = 0; r < R; ++r) s += static_cast<const double*>(comm->bufs[r])[i];
    out[i] = s / R;
  }
  // Everyone read every input before anyone writes its own.
  barrier(comm, me, loc, "all_reduce_mean_host");
  for (int64_t i = 0; i < n; ++i) v[i] = out[i];
}

/// 0 without a communicator.
int32_t tgrt_comm_rank(tgrt_ctx* ctx) {
  tgrt_cpu::checkCtx(ctx, "comm_rank");
  return ctx->comm ? ctx->rank : 0;
}

/// Every rank publishes its buffer at the rendezvous (same n, dt and root checked there); the
/// non-root ranks copy root's bytes into theirs; the closing barrier keeps root (and its
/// buffer) from moving on before every copy is done. Root reads and writes nothing.
void tgrt_broadcast(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf, int64_t n,
                    int32_t root) {
  checkComm(ctx, loc);
  tgrt_cpu::checkNonNegative(loc, "broadcast(n)", n);
  const int64_t size = tgrt_dtype_size(dt);
  if (size == 0) tgrt_cpu::fail(loc, "broadcast: unknown dtype %d", (int)dt);
  tgrt_comm* comm = ctx->comm;
  if (!comm) return;
  if (root < 0 || root >= comm->ranks)
    tgrt_cpu::fail(loc, "broadcast: root %d outside [0, %d)", (int)root, (int)comm->ranks);
  if (comm->ranks == 1) return;
  const int32_t me = ctx->rank;
  rendezvous(comm, me, loc, "broadcast", buf, n, dt, root);
  if (me != root && n > 0 && comm->bufs[root] != buf)
    std::memcpy(buf, comm->bufs[root], (size_t)(n * size));
  barrier(comm, me, loc, "broadcast");
}

//===----------------------------------------------------------------------------===//
// ZeRO-2 / ZeRO-3: tensors sharded evenly over the ranks (tgrt.h)
//===----------------------------------------------------------------------------===//

namespace {

/// Fails (naming loc and the collective) unless the chunks of c elements of `ranks` ranks
/// cover a tensor of n elements: c >= ceil(n / ranks).
void checkChunk(const char* loc, const char* what, int64_t n, int64_t c, int32_t ranks) {
  const int64_t need = (n + ranks - 1) / ranks;
  if (c < need)
    tgrt_cpu::fail(loc, "%s: chunk of %lld elements < ceil(%lld / %d ranks) = %lld (the ranks' "
                        "shards do not cover the tensor)",
                   what, (long long)c, (long long)n, (int)ranks, (long long)need);
}

/// v rounded to dt and widened back (exact for f32).
float roundTo(int32_t dt, float v) {
  if (dt == TGRT_BF16) return tgrt_bf16_to_float(tgrt_bf16_from_float(v));
  if (dt == TGRT_F16) return tgrt_f16_to_float(tgrt_f16_from_float(v));
  return v;
}

/// The checks every ZeRO-2/3 collective starts with: ctx and its communicator, n and c >= 0,
/// a known dt (returns its size).
int64_t checkShardArgs(tgrt_ctx* ctx, const char* loc, const char* what, int32_t dt, int64_t n,
                       int64_t c) {
  checkComm(ctx, loc);
  if (n < 0 || c < 0)
    tgrt_cpu::fail(loc, "%s: negative size (n %lld, c %lld)", what, (long long)n, (long long)c);
  const int64_t size = tgrt_dtype_size(dt);
  if (size == 0) tgrt_cpu::fail(loc, "%s: unknown dtype %d", what, (int)dt);
  return size;
}

/// p + bytes, or NULL when p is NULL (the kernel then reports the NULL pointer).
void* offsetPtr(void* p, int64_t bytes) { return p ? static_cast<char*>(p) + bytes : nullptr; }

} // namespace

/// Every rank publishes its shard; each copies every rank's valid chunk into its own full
/// (its own chunk from its own shard, skipped in place). A rank's writes to its full never
/// touch its own chunk, which is all the others read of it when in place. The closing barrier
/// keeps every shard alive until all copies are done.
void tgrt_all_gather_start(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* shard,
                           void* full, int64_t n, int64_t c) {
  const int64_t size = checkShardArgs(ctx, loc, "all_gather", dt, n, c);
  tgrt_comm* comm = ctx->comm;
  if (comm) checkChunk(loc, "all_gather", n, c, comm->ranks);
  if (!shard) // in place: this rank's chunk of full (tgrt.h)
    shard = static_cast<const char*>(full) + (int64_t)tgrt_comm_rank(ctx) * c * size;
  if (!comm || comm->ranks == 1) { // rank 0's count: min(n, c)
    int64_t count = 0;
    tgrt_shard_span(n, c, 0, nullptr, &count);
    if (count > 0 && shard != full) std::memmove(full, shard, (size_t)(count * size));
    return;
  }
  const int32_t R = comm->ranks, me = ctx->rank;
  rendezvous(comm, me, loc, "all_gather", const_cast<void*>(shard), n, dt, -1, c);
  for (int32_t q = 0; q < R; ++q) {
    int64_t begin = 0, count = 0;
    tgrt_shard_span(n, c, q, &begin, &count);
    if (count == 0) continue;
    char* dst = static_cast<char*>(full) + begin * size;
    const void* src = q == me ? shard : comm->bufs[q];
    if (src != dst) std::memmove(dst, src, (size_t)(count * size));
  }
  barrier(comm, me, loc, "all_gather");
}

/// Every rank publishes its full gradient; rank `me` reads every rank's elements of its own
/// chunk (in rank order) and writes only its shard; nobody writes a full buffer. The closing
/// barrier keeps every full buffer alive until all ranks have read it.
void tgrt_reduce_scatter_mean_start(tgrt_ctx* ctx, const char* loc, int32_t dt, void* full,
                                    void* shard, int64_t n, int64_t c) {
  checkShardArgs(ctx, loc, "reduce_scatter_mean", dt, n, c);
  tgrt_comm* comm = ctx->comm;
  if (!comm) { // shard[i] += full[i] for i < min(n, c)
    const int64_t count = n < c ? n : c;
    for (int64_t i = 0; i < count; ++i)
      storeElem(dt, shard, i, loadElem(dt, shard, i) + loadElem(dt, full, i));
    return;
  }
  checkChunk(loc, "reduce_scatter_mean", n, c, comm->ranks);
  const int32_t R = comm->ranks, me = ctx->rank;
  if (R > 1) rendezvous(comm, me, loc, "reduce_scatter_mean", full, n, dt, -1, c);
  int64_t begin = 0, count = 0;
  tgrt_shard_span(n, c, me, &begin, &count);
  const float inv = (float)R;
  for (int64_t i = 0; i < count; ++i) {
    // tgrt_all_reduce_mean's arithmetic: float sum in rank order, / R, rounded once to dt.
    float s = 0.0f;
    for (int32_t r = 0; r < R; ++r)
      s += loadElem(dt, R > 1 ? comm->bufs[r] : full, begin + i);
    const float mean = roundTo(dt, s / inv);
    storeElem(dt, shard, i, loadElem(dt, shard, i) + mean);
  }
  if (R > 1) barrier(comm, me, loc, "reduce_scatter_mean");
}

/// tgrt_all_reduce_mean's scheme (disjoint shares written to every rank's buffer) with the
/// float sum in rank order instead of the mean.
void tgrt_all_reduce_sum_f32(tgrt_ctx* ctx, const char* loc, float* buf, int64_t n) {
  checkComm(ctx, loc);
  tgrt_cpu::checkNonNegative(loc, "all_reduce_sum_f32(n)", n);
  tgrt_comm* comm = ctx->comm;
  if (!comm || comm->ranks == 1) return;
  const int32_t R = comm->ranks, me = ctx->rank;
  rendezvous(comm, me, loc, "all_reduce_sum_f32", buf, n, TGRT_F32, -1);
  const int64_t lo = n * me / R, hi = n * (me + 1) / R;
  for (int64_t i = lo; i < hi; ++i) {
    float s = 0.0f;
    for (int32_t r = 0; r < R; ++r) s += static_cast<const float*>(comm->bufs[r])[i];
    for (int32_t r = 0; r < R; ++r) static_cast<float*>(comm->bufs[r])[i] = s;
  }
  barrier(comm, me, loc, "all_reduce_sum_f32");
}

namespace {
/// tgrt_adamw_chunk's span: this rank's (rank 0 without a communicator) [*begin, *begin +
/// *count) of n elements in chunks of c; false when it holds nothing. Fails on a NULL ctx,
/// negative n or c, or (with a communicator) c < ceil(n / ranks).
bool chunkSpan(tgrt_ctx* ctx, const char* loc, const char* what, int64_t n, int64_t c,
               int64_t* begin, int64_t* count) {
  checkComm(ctx, loc);
  if (n < 0 || c < 0)
    tgrt_cpu::fail(loc, "%s: negative size (n %lld, c %lld)", what, (long long)n, (long long)c);
  int32_t rank = 0;
  if (ctx->comm) {
    checkChunk(loc, what, n, c, ctx->ranks);
    rank = ctx->rank;
  }
  tgrt_shard_span(n, c, rank, begin, count);
  return *count > 0;
}
} // namespace

/// tgrt_adamw on this rank's chunk of p (tgrt.h); nothing when the rank holds no elements.
void tgrt_adamw_chunk(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                      int32_t state_dt, void* m, void* v, int64_t n, int64_t c, float beta1,
                      float beta2, float eps, float weight_decay, const float* clip) {
  int64_t begin = 0, count = 0;
  if (!chunkSpan(ctx, loc, "adamw_chunk", n, c, &begin, &count)) return;
  tgrt_adamw(ctx, loc, p_dt, offsetPtr(p, begin * tgrt_dtype_size(p_dt)), g, state_dt, m, v,
             count, beta1, beta2, eps, weight_decay, clip);
}

/// tgrt_adamw_wc on this rank's chunk of p and w (tgrt.h); nothing when it holds none.
void tgrt_adamw_wc_chunk(tgrt_ctx* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                         int32_t state_dt, void* m, void* v, int64_t n, int64_t c, float beta1,
                         float beta2, float eps, float weight_decay, const float* clip,
                         int32_t w_dt, void* w) {
  int64_t begin = 0, count = 0;
  if (!chunkSpan(ctx, loc, "adamw_wc_chunk", n, c, &begin, &count)) return;
  tgrt_adamw_wc(ctx, loc, p_dt, offsetPtr(p, begin * tgrt_dtype_size(p_dt)), g, state_dt, m, v,
                count, beta1, beta2, eps, weight_decay, clip, w_dt,
                offsetPtr(w, begin * tgrt_dtype_size(w_dt)));
}
