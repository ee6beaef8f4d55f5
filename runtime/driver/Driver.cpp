// Driver.cpp — the training executable: arguments, data loading, parameter init, the training
// loop with a host-side lr schedule, evaluation, JSONL logging and safetensors checkpoints.
//
// Reproducibility contract: for a fixed model, data, seed and schedule length, the sequence of
// sampled batches and therefore of losses is a function of (seed, step) only: with
// `--sampling random` through the state of one std::mt19937_64 (the data RNG); with
// `--sampling shuffle` directly (the windows of step s follow from s, the seed and the
// number of windows: EpochOrder.h). A checkpoint stores the parameters, the AdamW moments,
// the step, that RNG state, the sampling mode (shuffle) and (under dynamic loss scaling) the
// scale, its growth counter and the skip count, so `--resume` continues exactly as an
// uninterrupted run would.
//
// Parameters live on the device in their own element type (tgrt_param.dtype, state_dtype);
// every host copy (init, checkpoints) is float32 and converted on the host: widening is exact,
// narrowing rounds to nearest even. Checkpoints are float32 and record the precision policy.
#include "runtime/driver/Driver.h"

#include "runtime/driver/DataMeta.h"
#include "runtime/driver/EpochOrder.h"
#include "runtime/driver/FileUtil.h"
#include "runtime/driver/Hf.h"
#include "runtime/driver/Npy.h"
#include "runtime/driver/Rendezvous.h"
#include "runtime/driver/Safetensors.h"
#include "runtime/driver/TokenSplit.h"
#include "dialect/TgEnums.h"

#include <nlohmann/json.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>


namespace tgrt {

double learningRate(const tgrt_model& m, int64_t step, int64_t total_steps) {
  const double lr = m.lr, min_lr = m.min_lr;
  const int64_t warmup = std::max<int64_t>(0, m.warmup_steps);
  if (warmup > 0 && step <= warmup) return lr * (double)step / (double)warmup;
  if (m.decay == 0) return lr;
  const int64_t span = total_steps - warmup;
  double p = span <= 0 ? 1.0 : (double)(step - warmup) / (double)span;
  p = std::min(1.0, std::max(0.0, p));
  if (m.decay == 1) return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * p));
  return lr - (lr - min_lr) * p;
}

namespace {

/// FNV-1a, 64-bit: a stable hash of a parameter name for its RNG stream.
uint64_t fnv1a(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/// Uniform double in (0, 1) from 53 random bits (never 0, so log() is finite).
double uniform01(std::mt19937_64& rng) {
  return ((double)(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

} // namespace

void initParamBlocks(const tgrt_param& p, uint64_t seed, int64_t begin, int64_t end,
                     int64_t block, const std::function<void(int64_t, const float*, int64_t)>& put) {
  begin = std::max<int64_t>(0, begin);
  end = std::min<int64_t>(p.numel, end);
  if (begin >= end) return;
  block = std::max<int64_t>(2, block & ~int64_t(1)); // even: Box-Muller pairs stay whole
  std::vector<float> buf((size_t)std::min(block, end - begin + 2));
  if (p.init == TGRT_INIT_ZEROS || p.init == TGRT_INIT_ONES) {
    std::fill(buf.begin(), buf.end(), p.init == TGRT_INIT_ONES ? 1.0f : 0.0f);
    for (int64_t i = begin; i < end; i += (int64_t)buf.size())
      put(i, buf.data(), std::min<int64_t>((int64_t)buf.size(), end - i));
    return;
  }
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull ^ fnv1a(p.name));
  // The stream is sequential: elements before `begin` are drawn and dropped.
  int64_t filled = 0, first = -1;
  for (int64_t i = 0; i < end; i += 2) {
    // Box–Muller: two independent N(0,1) from two uniforms.
    const double r = std::sqrt(-2.0 * std::log(uniform01(rng)));
    const double th = 2.0 * M_PI * uniform01(rng);
    for (int64_t k = i; k < std::min(i + 2, end); ++k) {
      if (k < begin) continue;
      if (first < 0) first = k;
      buf[(size_t)filled++] =
          (float)(p.init_std * r * (k == i ? std::cos(th) : std::sin(th)));
      if (filled == (int64_t)buf.size() || k + 1 == end) {
        put(first, buf.data(), filled);
        filled = 0;
        first = -1;
      }
    }
  }
}

void initParam(const tgrt_param& p, uint64_t seed, float* out) {
  initParamBlocks(p, seed, 0, p.numel, p.numel + 2, [&](int64_t at, const float* v, int64_t n) {
    std::copy(v, v + n, out + at);
  });
}

int64_t stepsPerEpoch(const tgrt_model& m, int64_t train_tokens) {
  const int64_t per_step = (int64_t)m.batch_size * m.context * std::max(1, m.grad_accum);
  return per_step <= 0 ? 0 : train_tokens / per_step;
}

// The names are the string forms of the compiler's precision enum (dialect/TgEnums.td),
// whose values the lowering writes into tgrt_model.precision.
static_assert((int)mlir::tg::Precision::fp32 == TGRT_PRECISION_FP32 &&
                  (int)mlir::tg::Precision::bf16_mixed == TGRT_PRECISION_BF16_MIXED &&
                  (int)mlir::tg::Precision::fp16_mixed == TGRT_PRECISION_FP16_MIXED &&
                  (int)mlir::tg::Precision::bf16 == TGRT_PRECISION_BF16,
              "TGRT_PRECISION_* must be the values of mlir::tg::Precision");

const char* precisionName(int32_t precision) {
  std::optional<mlir::tg::Precision> p;
  if (precision >= 0)
    p = mlir::tg::symbolizePrecision((uint32_t)precision);
  return p ? mlir::tg::stringifyPrecision(*p).data() : nullptr; // literals: NUL-terminated
}

const char* dtypeName(int32_t dtype) {
  switch (dtype) {
  case TGRT_F32: return "fp32";
  case TGRT_BF16: return "bf16";
  case TGRT_F16: return "fp16";
  default: return nullptr;
  }
}

void floatToDtype(const float* src, int64_t n, int32_t dtype, void* dst) {
  if (dtype == TGRT_F32) {
    if (n > 0) std::memcpy(dst, src, (size_t)n * 4);
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  if (dtype == TGRT_BF16)
    for (int64_t i = 0; i < n; ++i) d[i] = tgrt_bf16_from_float(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) d[i] = tgrt_f16_from_float(src[i]);
}

void dtypeToFloat(const void* src, int32_t dtype, int64_t n, float* dst) {
  if (dtype == TGRT_F32) {
    if (n > 0) std::memcpy(dst, src, (size_t)n * 4);
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  if (dtype == TGRT_BF16)
    for (int64_t i = 0; i < n; ++i) dst[i] = tgrt_bf16_to_float(s[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = tgrt_f16_to_float(s[i]);
}

void uploadFloats(tgrt_ctx* ctx, int64_t offset, int32_t dtype, const float* src, int64_t n,
                  int32_t region) {
  if (dtype == TGRT_F32) {
    tgrt_upload(ctx, region, offset, src, n * 4);
    return;
  }
  std::vector<uint16_t> buf((size_t)n);
  floatToDtype(src, n, dtype, buf.data());
  tgrt_upload(ctx, region, offset, buf.data(), n * tgrt_dtype_size(dtype));
}

void downloadFloats(tgrt_ctx* ctx, int64_t offset, int32_t dtype, float* dst, int64_t n,
                    int32_t region) {
  if (dtype == TGRT_F32) {
    tgrt_download(ctx, region, offset, dst, n * 4);
    return;
  }
  std::vector<uint16_t> buf((size_t)n);
  tgrt_download(ctx, region, offset, buf.data(), n * tgrt_dtype_size(dtype));
  dtypeToFloat(buf.data(), dtype, n, dst);
}

void uploadValue(tgrt_ctx* ctx, const tgrt_param& p, const float* src, int64_t begin,
                 int64_t count, int64_t chunkBase) {
  if (count <= 0) return;
  if (!p.split) {
    uploadFloats(ctx, p.offset + (begin - chunkBase) * tgrt_dtype_size(p.dtype), p.dtype, src,
                 count);
    return;
  }
  std::vector<uint16_t> hi((size_t)count), lo((size_t)count);
  for (int64_t i = 0; i < count; ++i) tgrt_split_value(src[i], &hi[(size_t)i], &lo[(size_t)i]);
  tgrt_upload(ctx, TGRT_PERSISTENT, p.work_offset + 2 * begin, hi.data(), 2 * count);
  tgrt_upload(ctx, TGRT_PERSISTENT, p.offset + 2 * begin, lo.data(), 2 * count);
}

void downloadValue(tgrt_ctx* ctx, const tgrt_param& p, float* dst, int64_t begin,
                   int64_t count, int64_t chunkBase) {
  if (count <= 0) return;
  if (!p.split) {
    downloadFloats(ctx, p.offset + (begin - chunkBase) * tgrt_dtype_size(p.dtype), p.dtype, dst,
                   count);
    return;
  }
  std::vector<uint16_t> hi((size_t)count), lo((size_t)count);
  tgrt_download(ctx, TGRT_PERSISTENT, p.work_offset + 2 * begin, hi.data(), 2 * count);
  tgrt_download(ctx, TGRT_PERSISTENT, p.offset + 2 * begin, lo.data(), 2 * count);
  for (int64_t i = 0; i < count; ++i) dst[i] = tgrt_split_join(hi[(size_t)i], lo[(size_t)i]);
}

bool validateDtypes(const tgrt_model& m, std::string* err) {
  if (!precisionName(m.precision)) {
    if (err) *err = "the model has an unknown precision " + std::to_string(m.precision);
    return false;
  }
  for (int32_t i = 0; i < m.n_params; ++i) {
    const tgrt_param& p = m.params[i];
    const char* bad = !dtypeName(p.dtype) ? "dtype" : !dtypeName(p.state_dtype) ? "state_dtype"
                                                                                   : nullptr;
    if (bad) {
      if (err)
        *err = std::string("parameter '") + (p.name ? p.name : "?") + "' has an unknown " + bad +
               " " + std::to_string(bad[0] == 'd' ? p.dtype : p.state_dtype);
      return false;
    }
  }
  return true;
}

namespace {

const char* const kSlotPrefix[3] = {"", "optim.m.", "optim.v."};

/// Byte offset and dtype of slot k (0 value, 1 m, 2 v) of a parameter.
int64_t slotOffset(const tgrt_param& p, int k) {
  return k == 0 ? p.offset : k == 1 ? p.m_offset : p.v_offset;
}
int32_t slotDtype(const tgrt_param& p, int k) { return k == 0 ? p.dtype : p.state_dtype; }
/// Region of slot k: the moments are in the host region under CPU offload (host_bytes > 0).
int32_t slotRegion(const tgrt_model& m, int k) {
  return k > 0 && m.host_bytes > 0 ? TGRT_HOST : TGRT_PERSISTENT;
}

std::string shapeStr(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t k = 0; k < s.size(); ++k) o += (k ? ", " : "") + std::to_string(s[k]);
  return o + "]";
}

bool failWith(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

} // namespace

/// Whether parameter p's moments are held by another rank than ctx's (ZeRO-1).
static bool movedAway(tgrt_ctx* ctx, const tgrt_model& m, const tgrt_param& p) {
  return m.zero >= 1 && m.ranks > 1 && p.owner >= 0 && p.owner != tgrt_comm_rank(ctx);
}

/// ZeRO-2/3: whether slot k (0 value, 1 m, 2 v) of p holds only this rank's chunk of
/// p.shard elements (the moments under ZeRO-2 and 3, the value under ZeRO-3).
static bool chunked(const tgrt_model& m, const tgrt_param& p, int k) {
  return m.zero >= 2 && m.ranks > 1 && p.shard > 0 && (k > 0 || m.zero >= 3);
}

/// Elements of the gradient slot of p this rank holds (its chunk under ZeRO-2/3).
static int64_t gradElems(const tgrt_model& m, const tgrt_param& p) {
  return m.zero >= 2 && m.ranks > 1 && p.shard > 0 ? p.shard : p.numel;
}

struct Watchdog::State {
  double timeout_s;
  int32_t rank, ranks;
  std::string prog, what = "start";
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
};

Watchdog::Watchdog(double timeout_s, int32_t rank, int32_t ranks, std::string prog)
    : s_(new State{timeout_s, rank, ranks, std::move(prog)}) {
  if (timeout_s <= 0) return;
  s_->thread = std::thread([st = s_.get()] {
    std::unique_lock<std::mutex> lock(st->mu);
    while (!st->stop) {
      st->cv.wait_for(lock, std::chrono::milliseconds(200));
      const double idle =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - st->last).count();
      if (!st->stop && idle > st->timeout_s) {
        std::fflush(stdout);
        std::fprintf(stderr,
                     "%s: error: rank %d of %d made no progress for %.0f s since %s (a "
                     "collective is waiting for a rank that stopped or hung; "
                     "TGRT_COMM_TIMEOUT_S=%g); ending this rank\n",
                     st->prog.c_str(), (int)st->rank, (int)st->ranks, idle, st->what.c_str(),
                     st->timeout_s);
        std::fflush(stderr);
        std::_Exit(124);
      }
    }
  });
}

Watchdog::~Watchdog() {
  if (!s_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stop = true;
  }
  s_->cv.notify_all();
  s_->thread.join();
}

void Watchdog::beat(const std::string& what) {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->last = std::chrono::steady_clock::now();
  s_->what = what;
}

void uploadSlot(tgrt_ctx* ctx, const tgrt_model& m, const tgrt_param& p, int k, const float* host) {
  if (k == 0 && p.split) { // never chunked: tg-plan-memory splits only without ZeRO
    uploadValue(ctx, p, host, 0, p.numel);
    return;
  }
  if (!chunked(m, p, k)) {
    uploadFloats(ctx, slotOffset(p, k), slotDtype(p, k), host, p.numel, slotRegion(m, k));
    return;
  }
  int64_t begin = 0, count = 0;
  tgrt_shard_span(p.numel, p.shard, tgrt_comm_rank(ctx), &begin, &count);
  if (count > 0)
    uploadFloats(ctx, slotOffset(p, k), slotDtype(p, k), host + begin, count, slotRegion(m, k));
  // The chunk's padding (past count) stays zero: the region starts zeroed and no kernel
  // writes it (tgrt.h, ZeRO-2 / ZeRO-3).
}

void downloadSlot(tgrt_ctx* ctx, const tgrt_model& m, const tgrt_param& p, int k, float* host) {
  if (k == 0 && p.split) {
    downloadValue(ctx, p, host, 0, p.numel);
    return;
  }
  if (!chunked(m, p, k)) {
    downloadFloats(ctx, slotOffset(p, k), slotDtype(p, k), host, p.numel, slotRegion(m, k));
    return;
  }
  const int32_t dt = slotDtype(p, k);
  const int64_t bytes = p.numel * tgrt_dtype_size(dt);
  if (bytes > m.arena_bytes)
    throw std::runtime_error(std::string("checkpoint: ZeRO-") + std::to_string(m.zero) +
                             " gathers each sharded tensor through the arena (" +
                             std::to_string(m.arena_bytes) + " bytes), but '" + p.name + "' needs " +
                             std::to_string(bytes));
  char* src = tgrt_region(ctx, slotRegion(m, k)) + slotOffset(p, k);
  char* arena = tgrt_region(ctx, TGRT_ARENA);
  if (slotRegion(m, k) == TGRT_HOST) { // offloaded moments: stage the chunk on the device
    std::vector<char> chunk((size_t)(p.shard * tgrt_dtype_size(dt)));
    tgrt_download(ctx, TGRT_HOST, slotOffset(p, k), chunk.data(), (int64_t)chunk.size());
    if ((int64_t)chunk.size() + bytes > m.arena_bytes)
      throw std::runtime_error(std::string("checkpoint: the arena (") +
                               std::to_string(m.arena_bytes) + " bytes) cannot stage '" +
                               p.name + "' and its chunk");
    tgrt_upload(ctx, TGRT_ARENA, bytes, chunk.data(), (int64_t)chunk.size());
    src = arena + bytes;
  }
  tgrt_all_gather_start(ctx, "checkpoint.gather", dt, src, arena, p.numel, p.shard);
  tgrt_all_reduce_wait(ctx, "checkpoint.gather");
  if (dt == TGRT_F32) {
    tgrt_download(ctx, TGRT_ARENA, 0, host, bytes);
    return;
  }
  std::vector<uint16_t> buf((size_t)p.numel);
  tgrt_download(ctx, TGRT_ARENA, 0, buf.data(), bytes);
  dtypeToFloat(buf.data(), dt, p.numel, host);
}

std::map<int64_t, std::vector<float>> gatherShardedMoments(tgrt_ctx* ctx, const tgrt_model& m) {
  std::map<int64_t, std::vector<float>> out;
  if (m.zero < 1 || m.ranks <= 1) return out;
  const int32_t rank = tgrt_comm_rank(ctx);
  if (m.zero >= 2) { // every rank takes part in each all-gather; rank 0 keeps the tensors
    std::vector<float> scratch;
    tgrt_synchronize(ctx);
    for (int32_t i = 0; i < m.n_params; ++i)
      for (int k = 0; k < 3; ++k) {
        const tgrt_param& p = m.params[i];
        if (!chunked(m, p, k)) continue;
        std::vector<float>& v = rank == 0 ? out[3 * (int64_t)i + k] : scratch;
        v.resize((size_t)p.numel);
        downloadSlot(ctx, m, p, k, v.data());
      }
    tgrt_synchronize(ctx);
    return out;
  }
  char* base = tgrt_region(ctx, TGRT_PERSISTENT);
  std::vector<float> host;
  tgrt_synchronize(ctx);
  for (int32_t i = 0; i < m.n_params; ++i) {
    const tgrt_param& p = m.params[i];
    if (p.owner <= 0) continue; // rank 0's own (or replicated)
    if (tgrt_dtype_size(p.state_dtype) != tgrt_dtype_size(p.dtype))
      throw std::runtime_error(std::string("checkpoint: ZeRO-1 stages the moments of '") + p.name +
                        "' in its gradient slot, but its moment and value dtypes differ in width");
    for (int k = 1; k < 3; ++k) {
      if (rank == p.owner) {
        host.resize((size_t)p.numel);
        downloadFloats(ctx, slotOffset(p, k), p.state_dtype, host.data(), p.numel,
                       slotRegion(m, k));
        uploadFloats(ctx, p.grad_offset, p.state_dtype, host.data(), p.numel);
      }
      tgrt_broadcast(ctx, "checkpoint.gather_moments", p.state_dtype, base + p.grad_offset,
                     p.numel, p.owner);
      if (rank == 0) {
        std::vector<float>& v = out[3 * (int64_t)i + k];
        v.resize((size_t)p.numel);
        downloadFloats(ctx, p.grad_offset, p.state_dtype, v.data(), p.numel);
      }
    }
    tgrt_zero(ctx, "checkpoint.gather_moments", base + p.grad_offset,
              p.numel * tgrt_dtype_size(p.dtype));
  }
  tgrt_synchronize(ctx);
  return out;
}

bool saveParams(tgrt_ctx* ctx, const tgrt_model& m, const std::string& path,
                std::map<std::string, std::string> metadata, std::string* err,
                const std::map<int64_t, std::vector<float>>* gathered) {
  std::vector<std::vector<float>> host;
  std::vector<StTensorView> views;
  host.reserve((size_t)m.n_params * 3);
  tgrt_synchronize(ctx);
  for (int32_t i = 0; i < m.n_params; ++i) {
    const tgrt_param& p = m.params[i];
    std::vector<int64_t> shape(p.shape, p.shape + std::max(1, (int)p.rank));
    for (int k = 0; k < 3; ++k) {
      const std::vector<float>* staged = nullptr;
      if (gathered) {
        auto it = gathered->find(3 * (int64_t)i + k);
        if (it != gathered->end()) staged = &it->second;
      }
      if (staged) {
        views.push_back({std::string(kSlotPrefix[k]) + p.name, shape, staged->data()});
        continue;
      }
      if (chunked(m, p, k)) {
        if (err) *err = std::string("ZeRO-") + std::to_string(m.zero) + ": '" + kSlotPrefix[k] +
                        p.name + "' is sharded over the ranks (gather it first: "
                        "gatherShardedMoments)";
        return false;
      }
      if (k > 0 && movedAway(ctx, m, p)) {
        if (err) *err = std::string("ZeRO-1: the moments of '") + p.name + "' are on rank " +
                        std::to_string(p.owner) + " (gather them first: gatherShardedMoments)";
        return false;
      }
      host.emplace_back((size_t)p.numel);
      downloadSlot(ctx, m, p, k, host.back().data()); // not chunked (above)
      views.push_back({std::string(kSlotPrefix[k]) + p.name, shape, host.back().data()});
    }
  }
  const char* prec = precisionName(m.precision);
  metadata["precision"] = prec ? prec : std::to_string(m.precision);
  return writeSafetensors(path, views, metadata, err, /*checksums=*/true);
}

namespace {

/// The architecture fields (spec "model.*") whose values differ between the checkpoint's
/// spec text `saved` and this model's `ours`, as "model.F: V in the checkpoint, W in this
/// model" joined by "; ", with a hint to compile with the checkpoint's values; "" when they
/// agree or either is absent or unparsable (older checkpoints, test models: the tensors decide).
std::string specDifferences(const std::string& saved, const char* ours) {
  if (saved.empty() || !ours || !*ours) return "";
  nlohmann::ordered_json a, b;
  try {
    a = nlohmann::ordered_json::parse(saved);
    b = nlohmann::ordered_json::parse(ours);
  } catch (const nlohmann::json::exception&) {
    return "";
  }
  if (!a.is_object() || !b.is_object() || !a.contains("model") || !b.contains("model") ||
      !a["model"].is_object() || !b["model"].is_object())
    return "";
  const auto& am = a["model"];
  const auto& bm = b["model"];
  std::vector<std::string> diffs, sets;
  auto differ = [&](const std::string& key, const std::string& have, const std::string& want) {
    diffs.push_back("model." + key + ": " + have + " in the checkpoint, " + want +
                    " in this model");
    if (have != "(absent)") sets.push_back("--set model." + key + "=" + have);
  };
  for (auto it = bm.begin(); it != bm.end(); ++it)
    if (!am.contains(it.key())) differ(it.key(), "(absent)", it->dump());
    else if (am[it.key()] != *it) differ(it.key(), am[it.key()].dump(), it->dump());
  for (auto it = am.begin(); it != am.end(); ++it)
    if (!bm.contains(it.key())) differ(it.key(), it->dump(), "(absent)");
  if (diffs.empty()) return "";
  std::string out;
  for (const std::string& d : diffs) out += (out.empty() ? "" : "; ") + d;
  if (!sets.empty()) {
    out += " (to resume it, compile with";
    for (const std::string& s : sets) out += " " + s;
    out += ")";
  }
  return out;
}

} // namespace

bool checkCheckpoint(const tgrt_model& m, const SafetensorsReader& r, std::string* err) {
  const std::string head = "checkpoint " + r.path() + " was saved by another model: ";
  const auto& meta = r.metadata();
  const char* model_prec = precisionName(m.precision);
  const std::string want_prec = model_prec ? model_prec : std::to_string(m.precision);
  auto prec_it = meta.find("precision");
  const std::string have_prec = prec_it == meta.end() ? "fp32" : prec_it->second;
  if (have_prec != want_prec)
    return failWith(err, head + "precision " + have_prec +
                             (prec_it == meta.end() ? " (no precision metadata)" : "") +
                             ", this model " + want_prec + "; resume with a model compiled for " +
                             have_prec);
  // The architecture first: a different d_model is named as such, not as the shape of wte.
  auto spec_it = meta.find("spec");
  const std::string diff =
      specDifferences(spec_it == meta.end() ? "" : spec_it->second, m.spec_json);
  if (!diff.empty()) return failWith(err, head + diff);
  std::set<std::string> ours;
  for (int32_t i = 0; i < m.n_params; ++i) {
    const tgrt_param& p = m.params[i];
    const std::vector<int64_t> want(p.shape, p.shape + std::max(1, (int)p.rank));
    for (int k = 0; k < 3; ++k) {
      const std::string name = std::string(kSlotPrefix[k]) + p.name;
      ours.insert(name);
      const StTensorInfo* e = r.find(name);
      if (!e) {
        if (k == 0)
          return failWith(err, head + "it has no " + name + ", this model has one of shape " +
                                   shapeStr(want));
        continue; // moments are optional (checked by loadParams)
      }
      if (e->shape != want) {
        // An untied lm_head was [D, V] in checkpoints before 2026-12-02; it is [V, D] now.
        const bool oldHead = p.name == std::string("lm_head.weight") && want.size() == 2 &&
                             e->shape == std::vector<int64_t>{want[1], want[0]};
        return failWith(err, head + name + " has shape " + shapeStr(e->shape) + ", this model " +
                                 shapeStr(want) +
                                 (oldHead ? " (an untied lm_head is stored [vocab, d_model] "
                                            "since 2026-12-02; transpose it)"
                                          : ""));
      }
      if (e->dtype != "F32")
        return failWith(err, head + name + " has dtype " + e->dtype + ", this model F32");
    }
  }
  for (const auto& kv : r.tensors())
    if (!ours.count(kv.first))
      return failWith(err, head + "it has " + kv.first + " of shape " +
                               shapeStr(kv.second.shape) + ", this model has none");
  return true;
}

bool loadParams(tgrt_ctx* ctx, const tgrt_model& m, SafetensorsReader& r, bool* have_optim,
                std::string* err, std::string* nonfinite) {
  if (nonfinite) nonfinite->clear();
  const std::string& path = r.path();
  if (!checkCheckpoint(m, r, err)) return false; // before any upload
  bool have = false, missing = false;
  std::vector<float> host;
  for (int32_t i = 0; i < m.n_params; ++i) {
    const tgrt_param& p = m.params[i];
    host.resize((size_t)p.numel);
    for (int k = 0; k < 3; ++k) {
      const std::string name = std::string(kSlotPrefix[k]) + p.name;
      const StTensorInfo* e = r.find(name);
      if (!e) {
        missing = true;
        continue;
      }
      if (k > 0) have = true;
      if (k > 0 && movedAway(ctx, m, p)) continue; // ZeRO-1: its owner loads them
      // Checked against its checksum (checkpoints that record them) by readF32; a NaN or inf
      // (a run saved after it diverged, or bytes that were changed with their checksum) is
      // refused here rather than surfacing steps later.
      if (!r.readF32(name, host.data(), p.numel, err)) return false;
      const int64_t bad = firstNonFinite(host.data(), p.numel);
      if (bad >= 0 && !nonfinite)
        return failWith(err, path + ": " + nonFiniteText(name, e->shape, host.data(), bad) +
                                 ": a checkpoint must hold finite values (saved after the run "
                                 "diverged, or altered); use an earlier checkpoint "
                                 "(--find-nonfinite loads it anyway, to trace the values)");
      if (bad >= 0 && nonfinite->empty())
        *nonfinite = nonFiniteText(name, e->shape, host.data(), bad);
      uploadSlot(ctx, m, p, k, host.data()); // ZeRO-2/3: this rank's chunk

    }
  }
  if (have && missing)
    return failWith(err, path + ": some AdamW moments (optim.m.* / optim.v.*) are missing");
  if (have_optim) *have_optim = have;
  return true;
}

void LossScaler::update(bool finite) {
  if (!enabled_) return;
  if (!finite) {
    scale_ *= 0.5f;
    ++skipped_;
    counter_ = 0;
    return;
  }
  if (++counter_ == interval_) {
    const float grown = scale_ * 2.0f;
    if (std::isfinite(grown)) scale_ = grown;
    counter_ = 0;
  }
}

namespace {

/// A user-facing failure: the message is printed as "error: <what>" and main returns `code`.
struct DriverError : std::runtime_error {
  int code;
  DriverError(const std::string& what, int code = 1) : std::runtime_error(what), code(code) {}
};

const char* kUsage =
    "usage: %s --data DIR [options]\n"
    "Trains the compiled model on token arrays DIR/{train,val,test}.npy (from `tgc data prepare`).\n"
    "\n"
    "  --data DIR            directory with train.npy, val.npy [, test.npy] and meta.json,\n"
    "                        or a sharded dataset: meta.json's \"splits\" lists each split's\n"
    "                        .npy shards, read as their concatenation; the .npy files are\n"
    "                        memory-mapped, their token ids checked against vocab_size\n"
    "                        when a batch or an eval reads them (docs/data.md)\n"
    "  --steps N             total optimizer steps of the run (default 200)\n"
    "  --epochs E            train E epochs (E may be fractional): with --sampling shuffle\n"
    "                        (the default with --epochs) an epoch is floor(W / (batch *\n"
    "                        grad_accum * ranks)) steps over the W = floor((train_tokens -\n"
    "                        1) / context) windows; with --sampling random, steps = E *\n"
    "                        floor(train_tokens / (batch * context * grad_accum)) / ranks\n"
    "  --sampling MODE       how training windows are chosen: 'random' (windows at uniformly\n"
    "                        random offsets, with replacement; the default without\n"
    "                        --epochs) or 'shuffle' (each epoch a seeded permutation of the\n"
    "                        W non-overlapping windows [i*context, i*context+context],\n"
    "                        each visited once; the windows left over after the epoch's\n"
    "                        last whole step are dropped; the default with --epochs). On\n"
    "                        --resume the checkpoint's mode is kept unless given.\n"
    "                        TGRT_LOG_WINDOWS=FILE appends one JSON line per rank and\n"
    "                        micro-batch with the windows (shuffle) or offsets (random) read\n"
    "  --time-limit MIN      train for MIN minutes; the lr decay spans the step count that\n"
    "                        fits, estimated from the speed of steps 2-5 (evals not counted)\n"
    "  --eval-every N        evaluate on val every N steps (0 = only at the end; default 0)\n"
    "  --eval-batches K      batches per periodic eval (default 20); the final eval covers the\n"
    "                        whole val and test splits: every window of context + 1 tokens,\n"
    "                        the last micro-batch filled up with windows whose targets are\n"
    "                        the spec's ignore_index; the loss is the mean over the targets,\n"
    "                        so it does not depend on the micro-batch (the --log line has\n"
    "                        batches, windows and targets)\n"
    "  --log FILE.jsonl      one JSON line per optimizer step and per eval (appended on\n"
    "                        --resume); with loss scaling, steps carry loss_scale (the scale\n"
    "                        the step ran with) and skipped_steps (skips so far); host_gap_ms:\n"
    "                        the host's time from the previous step's end to this step's\n"
    "                        first launch, when the GPU has no work queued; batch_ms: the\n"
    "                        host's time sampling and uploading batches during the step. By\n"
    "                        default the next micro-batch is sampled and staged (copied in\n"
    "                        stream order, after the running step's reads) while the step\n"
    "                        runs; TGRT_PREFETCH=0 samples and uploads each when its step\n"
    "                        starts (the same batches, losses and checkpoints either way)\n"
    "  --save FILE           safetensors checkpoint at the end (and every --save-every steps);\n"
    "                        written to FILE.tmp, fsynced and renamed, so FILE is always a\n"
    "                        complete checkpoint even if the run is killed; if a save fails\n"
    "                        (e.g. disk full) training stops with an error (exit 1) and the\n"
    "                        previous FILE is unchanged. Checked before step 1: FILE must\n"
    "                        not be a directory and its directory must exist and be\n"
    "                        writable (else exit 2, naming the option and path; --log too)\n"
    "  --save-every N        also checkpoint every N steps (needs --save)\n"
    "  --resume FILE         continue from a checkpoint (params, AdamW moments, step, data RNG,\n"
    "                        loss scale) saved by the same model (shapes, precision, model.*\n"
    "                        fields; else refused naming the first difference); the --log\n"
    "                        file is cut back to the checkpoint's step before appending;\n"
    "                        without --steps/--epochs/--time-limit the saved total is kept\n"
    "  --init-from DIR       start from a Hugging Face model directory (config.json and\n"
    "                        model.safetensors or its shards, from save_pretrained or tgc\n"
    "                        export --hf): GPT-2 or Llama as this model's spec says; the\n"
    "                        config must describe this model (each differing field named),\n"
    "                        every tensor must map onto a parameter with its shape (F32,\n"
    "                        BF16 or F16, converted); AdamW moments start at zero, step 0.\n"
    "                        Not with --resume\n"
    "  --stop-after N        stop after step N although the schedule spans --steps (simulates\n"
    "                        an interrupted run)\n"
    "  --seed S              seed for init and data sampling (default: the spec's seed)\n"
    "  --gpus N              data-parallel ranks on the CUDA backend: one process per GPU\n"
    "                        (GPUs 0..N-1), joined over NCCL; must equal the compiled\n"
    "                        training.distributed.ranks, which is also the default. If a\n"
    "                        rank fails, the others are ended and its status is returned.\n"
    "                        Instead of --gpus, a launcher may start one process per rank:\n"
    "                        torchrun (RANK, WORLD_SIZE, LOCAL_RANK = the GPU) or mpirun\n"
    "                        (OMPI_COMM_WORLD_* or PMI_*), with MASTER_ADDR/MASTER_PORT\n"
    "                        where rank 0 hands the others the NCCL id (TCP; port override\n"
    "                        TGRT_RENDEZVOUS_PORT, timeout TGRT_RENDEZVOUS_TIMEOUT_S = 120).\n"
    "                        A rank that completes no step (or evaluation batch) for\n"
    "                        TGRT_COMM_TIMEOUT_S seconds (default 300) ends with status 124\n"
    "                        (another rank stopped or hung inside a collective)\n"
    "  --ranks N             data-parallel ranks, run as N threads of this process (CPU\n"
    "                        backend); must equal the compiled training.distributed.ranks\n"
    "                        (the default). Each step draws one global batch of N x batch\n"
    "                        sequences per micro-batch, rank r trains on rows [r*b, (r+1)*b),\n"
    "                        gradients are averaged; rank 0 logs, evaluates and saves\n"
    "  --find-nonfinite      when a step's loss or gradient norm (or an eval loss) is not\n"
    "                        finite, re-run that step (same batches, dropout masks, loss\n"
    "                        scale; gradients zeroed, parameters not yet updated) with a\n"
    "                        check after every op, print the first op whose output holds\n"
    "                        inf or NaN (its IR location, e.g. layers.3.attn.proj, and the\n"
    "                        range of each input), then stop (exit 1). Also\n"
    "                        TGRT_FIND_NONFINITE=1. Until a step fails it only reads the\n"
    "                        loss before the optimizer step (one more synchronisation)\n"
    "  --quiet               only the final val/test lines and errors\n"
    "  --info                print the memory plan and the model summary, then exit\n"
    "  --help                this text\n";

struct Options {
  std::string prog = "train"; ///< argv[0], for messages
  std::string data, log, save, resume;
  std::string sampling; ///< --sampling: "shuffle", "random" or "" (the default rule)
  std::string init_from; ///< --init-from DIR: a Hugging Face model directory
  int64_t steps = -1;
  double epochs = -1, time_limit_min = -1;
  int64_t eval_every = 0, eval_batches = 20, save_every = 0, stop_after = 0;
  bool has_seed = false;
  uint64_t seed = 0;
  bool quiet = false, info = false, help = false;
  bool find_nonfinite = false; ///< --find-nonfinite or TGRT_FIND_NONFINITE=1
  int64_t ranks = 0;           ///< --ranks (0: the compiled model.ranks)
  int64_t gpus = 0;            ///< --gpus (CUDA: ranks as processes; 0: model.ranks)
};

int64_t parseInt(const std::string& opt, const std::string& v, int64_t min) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || x < min)
    throw DriverError(opt + " expects an integer >= " + std::to_string(min) + ", got '" + v + "'",
                      2);
  return x;
}

double parseDouble(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x > 0) || !std::isfinite(x))
    throw DriverError(opt + " expects a positive number, got '" + v + "'", 2);
  return x;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  if (argc > 0 && argv[0]) o.prog = argv[0];
  int schedule_flags = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    bool has_inline = false;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_inline = true;
    }
    auto value = [&]() -> std::string {
      if (has_inline) return v;
      if (i + 1 >= argc) throw DriverError(a + " needs a value", 2);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--info") o.info = true;
    else if (a == "--quiet" || a == "-q") o.quiet = true;
    else if (a == "--data") o.data = value();
    else if (a == "--log") o.log = value();
    else if (a == "--save") o.save = value();
    else if (a == "--resume") o.resume = value();
    else if (a == "--init-from") o.init_from = value();
    else if (a == "--steps") o.steps = parseInt(a, value(), 1), ++schedule_flags;
    else if (a == "--epochs") o.epochs = parseDouble(a, value()), ++schedule_flags;
    else if (a == "--sampling") {
      o.sampling = value();
      if (o.sampling != "shuffle" && o.sampling != "random")
        throw DriverError("--sampling expects 'shuffle' or 'random', got '" + o.sampling + "'", 2);
    }
    else if (a == "--time-limit") o.time_limit_min = parseDouble(a, value()), ++schedule_flags;
    else if (a == "--eval-every") o.eval_every = parseInt(a, value(), 0);
    else if (a == "--eval-batches") o.eval_batches = parseInt(a, value(), 1);
    else if (a == "--save-every") o.save_every = parseInt(a, value(), 0);
    else if (a == "--stop-after") o.stop_after = parseInt(a, value(), 1);
    else if (a == "--seed") o.seed = (uint64_t)parseInt(a, value(), 0), o.has_seed = true;
    else if (a == "--find-nonfinite") o.find_nonfinite = true;
    else if (a == "--ranks") o.ranks = parseInt(a, value(), 1);
    else if (a == "--gpus") o.gpus = parseInt(a, value(), 1);
    else throw DriverError("unknown option '" + std::string(argv[i]) + "' (see --help)", 2);
  }
  if (const char* env = std::getenv("TGRT_FIND_NONFINITE"))
    if (*env && std::strcmp(env, "0") != 0) o.find_nonfinite = true;
  if (schedule_flags > 1)
    throw DriverError("--steps, --epochs and --time-limit are mutually exclusive", 2);
  if (o.save_every > 0 && o.save.empty()) throw DriverError("--save-every needs --save FILE", 2);
  if (!o.init_from.empty() && !o.resume.empty())
    throw DriverError("--init-from and --resume are mutually exclusive (a checkpoint already "
                      "holds the parameters)", 2);
  return o;
}

std::string humanBytes(int64_t b) {
  char buf[64];
  const double x = (double)b;
  if (x >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", x / (1024.0 * 1024 * 1024));
  else if (x >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", x / (1024.0 * 1024));
  else if (x >= 1024.0) std::snprintf(buf, sizeof buf, "%.2f KiB", x / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", (long long)b);
  return buf;
}

std::string humanDuration(double s) {
  char buf[64];
  if (!std::isfinite(s) || s < 0) return "?";
  const long long t = (long long)(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%llds", t);
  return buf;
}

/// "64 B fp32 + 32 B bf16": bytes[dt] per tgrt_dtype, zero entries left out ("0 B" if all are).
std::string bytesByDtype(const int64_t (&bytes)[3]) {
  std::string s;
  for (int32_t dt = 0; dt < 3; ++dt)
    if (bytes[dt] > 0) s += (s.empty() ? "" : " + ") + humanBytes(bytes[dt]) + " " + dtypeName(dt);
  return s.empty() ? "0 B" : s;
}

/// The model summary of --info. The dtypes must have passed validateDtypes.
void printInfo(const tgrt_model& m) {
  int64_t numel = 0, value_bytes[3] = {0, 0, 0}, state_bytes[3] = {0, 0, 0};
  for (int32_t i = 0; i < m.n_params; ++i) {
    const tgrt_param& p = m.params[i];
    numel += p.numel;
    value_bytes[p.dtype] += p.numel * tgrt_dtype_size(p.dtype);
    state_bytes[p.state_dtype] += 2 * p.numel * tgrt_dtype_size(p.state_dtype);
  }
  std::printf("model        %s (backend %s)\n", m.name ? m.name : "?", tgrt_backend_name());
  if (m.loss_scale_init > 0)
    std::printf("precision    %s, dynamic loss scaling from %.9g (x2 after %d clean steps, x0.5 "
                "and the step skipped on overflow)\n",
                precisionName(m.precision), (double)m.loss_scale_init,
                (int)m.loss_scale_growth_interval);
  else
    std::printf("precision    %s\n", precisionName(m.precision));
  std::printf("parameters   %lld in %d tensors (%s; gradients the same)\n", (long long)numel,
              (int)m.n_params, bytesByDtype(value_bytes).c_str());
  std::printf("adamw state  %s (moments m and v)\n", bytesByDtype(state_bytes).c_str());
  std::printf("persistent   %lld bytes (%s): params, grads, AdamW moments, inputs\n",
              (long long)m.persistent_bytes, humanBytes(m.persistent_bytes).c_str());
  std::printf("arena        %lld bytes (%s): planned transient tensors\n",
              (long long)m.arena_bytes, humanBytes(m.arena_bytes).c_str());
  std::printf("workspace    %lld bytes (%s): backend scratch\n", (long long)m.workspace_bytes,
              humanBytes(m.workspace_bytes).c_str());
  const int64_t total = m.persistent_bytes + m.arena_bytes + m.workspace_bytes;
  std::printf("total        %lld bytes (%s)\n", (long long)total, humanBytes(total).c_str());
  std::printf("batch        %d x %d tokens, grad_accum %d, vocab %d\n", (int)m.batch_size,
              (int)m.context, (int)m.grad_accum, (int)m.vocab_size);
  std::printf("optimizer    AdamW lr %g -> %g, warmup %d, decay %s, betas (%g, %g), eps %g, "
              "weight_decay %g, grad_clip %g\n",
              m.lr, m.min_lr, (int)m.warmup_steps,
              m.decay == 1 ? "cosine" : m.decay == 2 ? "linear" : "none", m.beta1, m.beta2, m.eps,
              m.weight_decay, m.grad_clip);
}

/// A token split: DIR/<name>.npy, or the shards meta.json lists for it, memory-mapped
/// read-only (TokenSplit.h). Its ids are checked against the model's vocab_size when a batch
/// or an evaluation reads them (read()), not at start-up. Each data-parallel rank (thread)
/// maps the files itself; the ranks' mappings share the page cache's pages.
struct Split {
  explicit Split(const char* n) : name(n) {}
  std::string name;
  /// For messages: the file (one file or shard), or "DIR/meta.json (splits.<name>: N shards)".
  std::string path;
  TokenSplit tokens;
  bool present = false;
  /// Copies tokens [start, start + n) into out as int32, or throws DriverError naming the
  /// file (shard), the bad id, its index in that file and byte offset.
  void read(int64_t start, int64_t n, int32_t* out) const;
};

/// Host staging for one micro-batch of inputs and targets, int32 [batch, context].
struct Batch {
  std::vector<int32_t> tokens, targets;
  std::vector<int32_t> window; ///< one window of context + 1 tokens, as read from the split
  /// TGRT_LOG_WINDOWS: the batch's line, written when the batch is trained (logWindows), not
  /// when it is sampled (a prefetched batch may never be trained); empty when off.
  std::string window_line;
};

/// The hint every non-finite stop gives without --find-nonfinite.
const char* const kFindHint =
    "rerun with --find-nonfinite (or TGRT_FIND_NONFINITE=1) to name the op that first "
    "produced an inf or NaN";

class Trainer {
public:
  /// Rank `rank` of `ranks` data-parallel ranks joined by `comm` (NULL for one rank).
  Trainer(const Options& o, const tgrt_driver_hooks& h, const tgrt_model& m, int32_t rank = 0,
          int32_t ranks = 1, tgrt_comm* comm = nullptr)
      : opt_(o), hooks_(h), m_(m), rank_(rank), ranks_(ranks), comm_(comm),
        save_every_all_(o.save_every), save_all_(!o.save.empty()) {
    if (rank_ > 0) { // only rank 0 prints, logs, evaluates and saves
      opt_.quiet = true;
      opt_.log.clear();
      opt_.save.clear();
      opt_.save_every = 0;
      // ZeRO-3: @eval_step all-gathers the parameters, so every rank evaluates with rank 0.
      if (!evalAll()) opt_.eval_every = 0;
    }
  }
  ~Trainer() {
    if (ctx_) tgrt_ctx_destroy(ctx_);
    if (log_) std::fclose(log_);
    if (window_log_) std::fclose(window_log_);
  }
  int run();

private:
  /// Whether every rank runs the evaluations (ZeRO-3: @eval_step is a collective).
  bool evalAll() const { return m_.zero >= 3 && ranks_ > 1; }
  void loadData();
  void initParams();
  void resume();
  void initFrom();
  void save(int64_t step);
  /// The micro-batch `micro` (0-based) of optimizer step `step` (1-based) into b: with
  /// --sampling random the next draws of data_rng_ (step and micro only name the log line);
  /// with shuffle the windows at positions ((step - 1) mod S) * G + micro * ranks * B + row
  /// of epoch (step - 1) / S's permutation (S steps of G windows an epoch), rows
  /// [rank * B, (rank + 1) * B) for this rank. Sets b->window_line (TGRT_LOG_WINDOWS's line,
  /// written by logWindows when the batch trains).
  void sampleBatch(Batch* b, int64_t step, int32_t micro);
  /// Writes b's TGRT_LOG_WINDOWS line (nothing when off or empty); throws on a failed write.
  void logWindows(const Batch& b);
  /// Chooses the sampling mode (after resume()) and sets windows_, step_windows_ and
  /// epoch_steps_ for shuffle; throws when shuffle has less than one step of windows.
  void setupSampling();
  /// b's tokens and targets into the token slot: tgrt_upload, or with `staged`
  /// tgrt_upload_async (stream-ordered after the calls already launched).
  void uploadBatch(const Batch& b, bool staged = false);
  /// The micro-batch (step, micro) into the token slot for the step's micro-step: the staged
  /// one when it is that batch, else sampled and uploaded now; logs its windows.
  void takeBatch(Batch* b, int64_t step, int32_t micro);
  /// The prefetch (TGRT_PREFETCH=1, the default): samples micro-batch (step, micro) and
  /// stages it in the token slot with tgrt_upload_async, stream-ordered after the calls
  /// already launched (which read the slot's current batch), so the host's sampling and the
  /// copies overlap the running step instead of leaving the GPU idle between steps. The data
  /// RNG's state before the draws is kept (rng_before_stage_): checkpoints and
  /// --find-nonfinite see the state of a run without the prefetch.
  void stageBatch(int64_t step, int32_t micro);
  /// What an evaluation covered: micro-batches run, windows of context + 1 tokens evaluated
  /// and left out, and the targets the loss averages over (not ignore_index).
  struct EvalCount {
    int64_t batches = 0, windows = 0, dropped = 0, targets = 0;
  };
  /// Mean loss per target over up to max_batches (0 = all) sequential micro-batches of the
  /// split's windows (window i: tokens [i T, i T + T]). When the model's ignore_index is known
  /// (its spec), the last micro-batch is filled up with windows whose targets are all
  /// ignore_index, so every window is evaluated; otherwise the windows after the last whole
  /// micro-batch are dropped (c->dropped). NaN when nothing is evaluated.
  double evaluate(const Split& s, int64_t max_batches, EvalCount* c);
  void logLine(const nlohmann::json& j);
  void say(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  /// Sets every parameter's gradient slot to zero (uploads; the driver runs no kernel).
  void zeroGradients();
  /// "loss is NaN at step S (training diverged; ...)", with the --find-nonfinite hint when
  /// the switch is off.
  std::string lossError(double loss, int64_t step) const {
    return "loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at step " +
           std::to_string(step) + " (training diverged; try a lower lr or a longer warmup" +
           (opt_.find_nonfinite ? std::string(")") : std::string("; ") + kFindHint + ")");
  }
  /// --find-nonfinite: re-runs optimizer step `step` with the runtime's non-finite checks on
  /// (tgrt_check_begin): its micro-batches sampled again from step_rng_ (the data RNG before
  /// the step; the step, lr, loss scale and micro-batch indices, hence the dropout masks, are
  /// those of the first run) into zeroed gradients, then, with `with_optimizer`, the optimizer
  /// step. Returns the report naming the first op whose output held inf or NaN, or a sentence
  /// saying no op did. Leaves data_rng_ as it was.
  std::string findNonFinite(int64_t step, bool with_optimizer);
  /// One progress line; loss_scale: the scale of this step (0 = no loss scaling), skipped:
  /// the step overflowed and changed nothing.
  void progress(int64_t step, int64_t total, double loss, double lr, float norm,
                double loss_scale, bool skipped, double tok_s, double ms, double eta_s,
                bool force_line);

  Options opt_;
  tgrt_driver_hooks hooks_;
  const tgrt_model& m_;
  int32_t rank_ = 0, ranks_ = 1; ///< data parallel: this rank, and how many
  tgrt_comm* comm_ = nullptr;    ///< joins the ranks' contexts (NULL: one rank)
  /// NCCL ranks (CUDA, ranks > 1): ends this rank when it makes no progress for
  /// TGRT_COMM_TIMEOUT_S seconds (default 300); NULL otherwise (the CPU collectives time out
  /// themselves).
  std::unique_ptr<Watchdog> watchdog_;
  void beat(const std::string& what) {
    if (watchdog_) watchdog_->beat(what);
  }
  /// The save schedule of rank 0, known to every rank: under ZeRO-1 saving is a collective
  /// (gatherShardedMoments) all ranks join; only rank 0 writes.
  int64_t save_every_all_ = 0;
  bool save_all_ = false;
  /// Mean over the ranks of v (every rank gets the same values); unchanged with one rank.
  void meanOverRanks(const char* what, double* v, int64_t n) {
    if (ranks_ > 1) tgrt_all_reduce_mean_host(ctx_, what, v, n);
  }
  tgrt_ctx* ctx_ = nullptr;
  Split train_{"train"}, val_{"val"}, test_{"test"}; // DIR/<name>.npy
  std::mt19937_64 data_rng_;
  std::mt19937_64 step_rng_; ///< --find-nonfinite: data_rng_ before the current step
  /// The prefetch (stageBatch): on unless TGRT_PREFETCH=0; the staged micro-batch (host copy)
  /// and which it is (staged_step_ 0: none staged); data_rng_ before its draws.
  bool prefetch_ = true;
  Batch staged_;
  int64_t staged_step_ = 0;
  int32_t staged_micro_ = 0;
  std::mt19937_64 rng_before_stage_;
  /// data_rng_ as a run without the prefetch has it between steps.
  const std::mt19937_64& dataRngUnstaged() const {
    return staged_step_ > 0 ? rng_before_stage_ : data_rng_;
  }
  /// --sampling shuffle (else random): W windows of context + 1 tokens in the train split,
  /// G = batch * grad_accum * ranks windows a step, S = floor(W / G) steps an epoch.
  bool shuffle_ = false;
  int64_t windows_ = 0, step_windows_ = 0, epoch_steps_ = 0;
  /// From the resumed checkpoint: its "sampling" ("" when absent: random) and, for
  /// shuffle, its W and G (0 when absent).
  std::string ckpt_sampling_;
  int64_t ckpt_windows_ = 0, ckpt_step_windows_ = 0;
  FILE* window_log_ = nullptr; ///< TGRT_LOG_WINDOWS (NULL: off)
  std::string epoch_note_;     ///< shuffle: " | epoch E/N", the progress line's end
  bool replaying_ = false;     ///< --find-nonfinite's replay: no window log lines
  uint64_t seed_ = 0;
  int64_t start_step_ = 0;  ///< last completed step (from --resume), 0 for a fresh run
  int64_t saved_total_ = 0; ///< total_steps stored in the resumed checkpoint
  int64_t total_steps_ = 0;
  LossScaler scaler_; ///< dynamic loss scale (disabled unless model.loss_scale_init > 0)
  FILE* log_ = nullptr;
  bool tty_ = false;
  bool line_open_ = false; ///< a \r progress line is on screen
  bool warned_eval_ = false; ///< a non-finite eval loss was reported (without --find-nonfinite)
  /// The spec's training.ignore_index (have_ignore_: the model carries a spec that has it):
  /// the target value of the windows that pad the last evaluation micro-batch.
  bool have_ignore_ = false;
  int64_t ignore_index_ = -1;
};

void Trainer::say(const char* fmt, ...) {
  if (opt_.quiet) return;
  if (line_open_) {
    std::fputc('\n', stdout);
    line_open_ = false;
  }
  va_list args;
  va_start(args, fmt);
  std::vprintf(fmt, args);
  va_end(args);
  std::fflush(stdout);
}

/// Before a resumed run appends to the JSONL log `path`: drops the records of steps after
/// `step` (written by a killed run after its last checkpoint) and a final line without its
/// newline (cut by a crash or a full disk), so the log reads as one uninterrupted run. A
/// missing file is left missing; lines that are not JSON objects with a "step" are kept.
void trimLog(const std::string& path, int64_t step) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::string kept;
  size_t pos = 0;
  for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    const std::string line = text.substr(pos, nl + 1 - pos);
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
        j["step"].get<int64_t>() > step)
      continue;
    kept += line;
  }
  if (kept.size() == text.size()) return;
  AtomicFile f(path);
  f.write(kept.data(), kept.size());
  if (!f.commit()) throw DriverError(path + ": cannot trim the log: " + f.error());
}

void Trainer::logLine(const nlohmann::json& j) {
  if (!log_) return;
  const std::string s = j.dump() + "\n";
  if (std::fwrite(s.data(), 1, s.size(), log_) != s.size() || std::fflush(log_) != 0)
    throw DriverError(opt_.log + ": write failed: " + std::strerror(errno));
}

/// Checks the output paths of the options (--save, --log) before any work: a checkpoint path
/// in a missing or read-only directory, or naming a directory, would otherwise only fail at
/// the first save, after every step of the run. Exit status 2, naming the option and path.
void checkOutputPaths(const Options& o) {
  const struct {
    const char* option;
    const std::string& path;
    bool append;
  } outputs[] = {{"--save", o.save, false}, {"--log", o.log, true}};
  for (const auto& out : outputs) {
    if (out.path.empty()) continue;
    std::string why;
    if (!checkOutputPath(out.path, out.append, &why))
      throw DriverError(std::string(out.option) + " " + out.path + ": cannot be written: " + why +
                            " (checked before training starts)",
                        2);
  }
}

void Split::read(int64_t start, int64_t n, int32_t* out) const {
  std::string err;
  if (!tokens.copyWindow(start, n, out, &err)) throw DriverError(err);
}

void Trainer::loadData() {
  if (opt_.data.empty())
    throw DriverError("--data DIR is required for training (see --help)", 2);
  // meta.json: optional, but when present its vocab_size must fit the model.
  const std::string meta_path = opt_.data + "/meta.json";
  std::ifstream meta_in(meta_path, std::ios::binary);
  DataIndex index; // sharded: meta.json has "splits" (TokenSplit.h, docs/data.md)
  if (meta_in) {
    const std::string text((std::istreambuf_iterator<char>(meta_in)),
                           std::istreambuf_iterator<char>());
    std::string err;
    if (!checkDataMeta(meta_path, text, m_.vocab_size, &err) ||
        !parseDataIndex(meta_path, text, &index, &err))
      throw DriverError(err);
  } else if (!opt_.quiet) {
    std::fprintf(stderr, "warning: %s not found; token ids are still checked against "
                         "vocab_size %d\n", meta_path.c_str(), (int)m_.vocab_size);
  }
  for (Split* s : {&train_, &val_, &test_}) {
    std::string err;
    if (index.sharded) {
      const auto it = index.splits.find(s->name);
      if (it == index.splits.end()) { // only test may be absent (parseDataIndex)
        say("note: %s lists no splits.%s; the final test evaluation is skipped\n",
            meta_path.c_str(), s->name.c_str());
        continue;
      }
      if (!s->tokens.openShards(opt_.data, meta_path, s->name, it->second, index.dtype,
                                m_.vocab_size, &err))
        throw DriverError(err);
    } else {
      const std::string file = opt_.data + "/" + s->name + ".npy";
      if (s == &test_ && access(file.c_str(), F_OK) != 0) {
        say("note: %s not found; the final test evaluation is skipped\n", file.c_str());
        continue;
      }
      if (!s->tokens.openFile(file, m_.vocab_size, &err)) throw DriverError(err);
    }
    s->path = s->tokens.describe();
    // Training reads windows in no order; the evaluations scan val and test.
    s->tokens.advise(s == &train_ ? TokenFile::Access::Random : TokenFile::Access::Sequential);
    s->present = true;
  }
  const int64_t need = (int64_t)m_.context + 1;
  if (train_.tokens.tokens() < need)
    throw DriverError(train_.path + ": " + std::to_string(train_.tokens.tokens()) +
                      " tokens, fewer than one training window of context + 1 = " +
                      std::to_string(need));
}

void Trainer::initParams() {
  // Streamed in blocks of 1 Mi values (4 MiB of f32 per thread on the host at a time), each
  // rounded to the parameter's dtype and uploaded into place; under ZeRO-3 only this rank's
  // chunk. Parameters are generated on up to 16 threads (each has its own generator, so the
  // values do not depend on the thread count); the uploads take turns.
  const int64_t kBlock = 1 << 20;
  std::mutex upload_mu;
  std::atomic<int32_t> next{0};
  std::atomic<bool> failed{false};
  std::string error;
  auto worker = [&] {
    for (int32_t i = next++; i < m_.n_params && !failed; i = next++) {
      const tgrt_param& p = m_.params[i];
      int64_t begin = 0, count = p.numel;
      if (chunked(m_, p, 0)) tgrt_shard_span(p.numel, p.shard, rank_, &begin, &count);
      try {
        initParamBlocks(p, seed_, begin, begin + count, kBlock,
                        [&](int64_t at, const float* v, int64_t n) {
                          std::lock_guard<std::mutex> lock(upload_mu);
                          uploadValue(ctx_, p, v, at, n, begin);
                        });
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(upload_mu);
        if (!failed.exchange(true)) error = e.what();
      }
    }
  };
  int64_t total = 0;
  for (int32_t i = 0; i < m_.n_params; ++i) total += m_.params[i].numel;
  const int threads = (int)std::max<int64_t>(
      1, std::min<int64_t>({16, (int64_t)std::thread::hardware_concurrency(), m_.n_params,
                            total / (1 << 22) + 1})); // small models: one thread
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failed) throw DriverError("initialising the parameters: " + error);
}

void Trainer::sampleBatch(Batch* b, int64_t step, int32_t micro) {
  const int64_t T = m_.context, B = m_.batch_size;
  const uint64_t starts = (uint64_t)train_.tokens.tokens() - (uint64_t)T; // >= 1
  b->tokens.resize((size_t)(B * T));
  b->targets.resize((size_t)(B * T));
  b->window.resize((size_t)(T + 1));
  std::vector<int64_t> taken; // TGRT_LOG_WINDOWS: this rank's windows (shuffle) or offsets
  auto fill = [&](int64_t r, int64_t offset) {
    const int32_t* w = b->window.data();
    train_.read(offset, T + 1, b->window.data());
    for (int64_t t = 0; t < T; ++t) {
      b->tokens[(size_t)(r * T + t)] = w[t];
      b->targets[(size_t)(r * T + t)] = w[t + 1];
    }
  };
  int64_t epoch = 0;
  if (shuffle_) {
    // Positions in epoch e's permutation of the W windows: step j of the epoch (0-based)
    // takes [j * G, (j + 1) * G), micro-batch k the ranks x B positions from j * G + k *
    // ranks * B, rank r the B of them from r * B: disjoint across ranks, steps and
    // micro-batches, so an epoch reads S * G distinct windows.
    epoch = (step - 1) / epoch_steps_;
    const WindowPermutation perm((uint64_t)windows_, seed_, (uint64_t)epoch);
    const int64_t first = ((step - 1) % epoch_steps_) * step_windows_ +
                          (int64_t)micro * ranks_ * B + (int64_t)rank_ * B;
    for (int64_t r = 0; r < B; ++r) {
      const int64_t w = (int64_t)perm((uint64_t)(first + r));
      if (window_log_) taken.push_back(w);
      fill(r, w * T);
    }
  } else {
    // Data parallel: every rank draws the same global batch of ranks x B windows from the
    // same RNG stream and keeps rows [rank * B, (rank + 1) * B), so N ranks of B sequences
    // see exactly the data of one rank of N * B.
    for (int64_t g = 0; g < (int64_t)ranks_ * B; ++g) {
      const uint64_t s = data_rng_() % starts;
      if (g / B != rank_) continue;
      if (window_log_) taken.push_back((int64_t)s);
      fill(g - (int64_t)rank_ * B, (int64_t)s);
    }
  }
  b->window_line.clear();
  if (window_log_ && !replaying_) {
    nlohmann::json rec = {{"step", step}, {"micro", micro}, {"rank", rank_}};
    if (shuffle_) {
      rec["epoch"] = epoch + 1;
      rec["windows"] = taken;
    } else {
      rec["offsets"] = taken;
    }
    b->window_line = rec.dump() + "\n";
  }
}

void Trainer::logWindows(const Batch& b) {
  if (!window_log_ || b.window_line.empty()) return;
  static std::mutex mu; // the ranks are threads: one line at a time
  std::lock_guard<std::mutex> lock(mu);
  if (std::fwrite(b.window_line.data(), 1, b.window_line.size(), window_log_) !=
          b.window_line.size() ||
      std::fflush(window_log_) != 0)
    throw DriverError(std::string("TGRT_LOG_WINDOWS: write failed: ") + std::strerror(errno));
}

void Trainer::takeBatch(Batch* b, int64_t step, int32_t micro) {
  if (staged_step_ == step && staged_micro_ == micro) {
    logWindows(staged_);
    staged_step_ = 0; // consumed: the slot holds it (stream-ordered)
    return;
  }
  staged_step_ = 0;
  sampleBatch(b, step, micro);
  logWindows(*b);
  uploadBatch(*b);
}

void Trainer::stageBatch(int64_t step, int32_t micro) {
  rng_before_stage_ = data_rng_;
  sampleBatch(&staged_, step, micro);
  uploadBatch(staged_, /*staged=*/true);
  staged_step_ = step;
  staged_micro_ = micro;
}

void Trainer::setupSampling() {
  std::string mode = opt_.sampling;
  if (mode.empty()) {
    if (!opt_.resume.empty()) mode = ckpt_sampling_.empty() ? "random" : ckpt_sampling_;
    else mode = opt_.epochs > 0 ? "shuffle" : "random";
  } else if (!opt_.resume.empty() &&
             mode != (ckpt_sampling_.empty() ? std::string("random") : ckpt_sampling_) &&
             rank_ == 0) {
    std::fprintf(stderr, "warning: --sampling %s, but %s was saved by a run with --sampling "
                         "%s; the batches from here on differ from that run's\n",
                 mode.c_str(), opt_.resume.c_str(),
                 ckpt_sampling_.empty() ? "random" : ckpt_sampling_.c_str());
  }
  shuffle_ = mode == "shuffle";
  if (!shuffle_) return;
  const int64_t T = m_.context;
  windows_ = (train_.tokens.tokens() - 1) / T;
  step_windows_ = (int64_t)m_.batch_size * std::max(1, m_.grad_accum) * ranks_;
  epoch_steps_ = windows_ / step_windows_;
  if (epoch_steps_ == 0)
    throw DriverError(train_.path + ": " + std::to_string(windows_) + " windows of context + 1 = " +
                      std::to_string(T + 1) + " tokens, fewer than one optimizer step of " +
                      std::to_string(step_windows_) + " windows (batch " +
                      std::to_string(m_.batch_size) + " x grad_accum " +
                      std::to_string(std::max(1, m_.grad_accum)) + " x ranks " +
                      std::to_string(ranks_) + "), so --sampling shuffle cannot be used "
                      "(--sampling random can)");
  if (!opt_.resume.empty() && ckpt_sampling_ == "shuffle" && rank_ == 0 &&
      (ckpt_windows_ != windows_ || ckpt_step_windows_ != step_windows_))
    std::fprintf(stderr, "warning: %s was saved by a run of %lld windows and %lld windows a "
                         "step, this run has %lld and %lld: the epochs' window order differs "
                         "from that run's\n",
                 opt_.resume.c_str(), (long long)ckpt_windows_, (long long)ckpt_step_windows_,
                 (long long)windows_, (long long)step_windows_);
}

void Trainer::uploadBatch(const Batch& b, bool staged) {
  const int64_t bytes = (int64_t)b.tokens.size() * 4;
  auto put = staged ? tgrt_upload_async : tgrt_upload;
  put(ctx_, TGRT_PERSISTENT, m_.tokens_offset, b.tokens.data(), bytes);
  put(ctx_, TGRT_PERSISTENT, m_.targets_offset, b.targets.data(), bytes);
}

double Trainer::evaluate(const Split& s, int64_t max_batches, EvalCount* c) {
  const int64_t T = m_.context, B = m_.batch_size;
  const int64_t n = s.tokens.tokens();
  const int64_t windows = n > 0 ? (n - 1) / T : 0;
  // Padding needs the target value the loss skips: the spec's training.ignore_index (-1, the
  // default, is no token id, so those targets are skipped as well).
  int64_t batches = have_ignore_ ? (windows + B - 1) / B : windows / B;
  if (max_batches > 0) batches = std::min(batches, max_batches);
  *c = EvalCount();
  c->batches = batches;
  c->windows = std::min(windows, batches * B);
  c->dropped = max_batches > 0 ? 0 : windows - c->windows;
  if (batches == 0) return std::numeric_limits<double>::quiet_NaN();
  Batch b;
  b.tokens.resize((size_t)(B * T));
  b.targets.resize((size_t)(B * T));
  b.window.resize((size_t)(T + 1));
  int64_t cnt = 0;
  tgrt_take_loss(ctx_, &cnt); // drop anything pending
  tgrt_set_micro_batch(ctx_, 0);
  // The mean over targets: each micro-batch's loss (its mean over its valid targets) weighted
  // by their number; when every micro-batch has the same number, the plain mean of the
  // batch losses (the same bits as before padding existed).
  double sum = 0, weighted = 0;
  int64_t first_valid = -1;
  bool equal = true;
  for (int64_t k = 0; k < batches; ++k) {
    int64_t valid = 0;
    for (int64_t r = 0; r < B; ++r) {
      const int64_t wi = k * B + r;
      if (wi >= windows) { // padding: a valid token id in, targets the loss skips
        for (int64_t t = 0; t < T; ++t) {
          b.tokens[(size_t)(r * T + t)] = 0;
          b.targets[(size_t)(r * T + t)] = (int32_t)ignore_index_;
        }
        continue;
      }
      const int32_t* w = b.window.data();
      s.read(wi * T, T + 1, b.window.data());
      for (int64_t t = 0; t < T; ++t) {
        b.tokens[(size_t)(r * T + t)] = w[t];
        b.targets[(size_t)(r * T + t)] = w[t + 1];
        valid += (int64_t)w[t + 1] != ignore_index_;
      }
    }
    if (first_valid < 0) first_valid = valid;
    equal = equal && valid == first_valid;
    c->targets += valid;
    uploadBatch(b);
    hooks_.eval_step(ctx_);
    const double l = tgrt_take_loss(ctx_, &cnt);
    beat(s.name + " evaluation batch " + std::to_string(k));
    const double bl = cnt > 0 ? l / (double)cnt : std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(bl) && cnt > 0) {
      const std::string what = s.name + " loss is " + (std::isnan(bl) ? "NaN" : "infinite") +
                               " on evaluation batch " + std::to_string(k) + " (windows " +
                               std::to_string(k * B) + ".." +
                               std::to_string(std::min(k * B + B, windows) - 1) +
                               " of " + s.path + ")";
      if (opt_.find_nonfinite) {
        // The batch is still uploaded: run it again with a check after every op.
        tgrt_check_begin(ctx_);
        hooks_.eval_step(ctx_);
        tgrt_synchronize(ctx_);
        const char* r = tgrt_check_report(ctx_);
        const std::string report =
            r ? "find-nonfinite: re-ran @eval_step on that batch with a check after every op; "
                "the first op that wrote inf or NaN:\n" + std::string(r)
              : "find-nonfinite: re-ran @eval_step on that batch with a check after every op: "
                "no op wrote inf or NaN this time (the failure did not reproduce)";
        tgrt_check_end(ctx_);
        tgrt_take_loss(ctx_, &cnt);
        say("\n");
        throw DriverError(what + "\n" + report);
      }
      if (!warned_eval_ && rank_ == 0) {
        warned_eval_ = true;
        std::fflush(stdout);
        std::fprintf(stderr, "warning: %s; rerun with --find-nonfinite to name the op that "
                             "first produced an inf or NaN\n", what.c_str());
      }
    }
    sum += bl;
    weighted += bl * (double)valid;
  }
  if (equal) return sum / (double)batches;
  return c->targets > 0 ? weighted / (double)c->targets : std::numeric_limits<double>::quiet_NaN();
}

void Trainer::zeroGradients() {
  if (m_.grads_in_arena) return; // zeroed by tg_micro_step where first written
  std::vector<char> zeros;
  for (int32_t i = 0; i < m_.n_params; ++i) {
    const tgrt_param& p = m_.params[i];
    const int64_t bytes = gradElems(m_, p) * tgrt_dtype_size(p.dtype);
    if ((int64_t)zeros.size() < bytes) zeros.assign((size_t)bytes, 0);
    tgrt_upload(ctx_, TGRT_PERSISTENT, p.grad_offset, zeros.data(), bytes);
  }
}

std::string Trainer::findNonFinite(int64_t step, bool with_optimizer) {
  const int32_t micro = std::max(1, m_.grad_accum);
  tgrt_synchronize(ctx_);
  zeroGradients();
  int64_t cnt = 0;
  tgrt_take_loss(ctx_, &cnt);
  const std::mt19937_64 rng_after = data_rng_;
  data_rng_ = step_rng_;
  replaying_ = true;
  std::string where, report;
  Batch batch;
  tgrt_check_begin(ctx_);
  for (int32_t k = 0; k < micro && report.empty(); ++k) {
    tgrt_set_micro_batch(ctx_, k);
    sampleBatch(&batch, step, k);
    uploadBatch(batch);
    hooks_.micro_step(ctx_);
    tgrt_synchronize(ctx_);
    if (const char* r = tgrt_check_report(ctx_)) {
      report = r;
      where = "@micro_step, micro-batch " + std::to_string(k) + " of " + std::to_string(micro);
    }
  }
  if (report.empty() && with_optimizer) {
    hooks_.optimizer_step(ctx_);
    tgrt_synchronize(ctx_);
    if (const char* r = tgrt_check_report(ctx_)) {
      report = r;
      where = "@optimizer_step";
    }
  }
  tgrt_check_end(ctx_);
  tgrt_take_loss(ctx_, &cnt);
  data_rng_ = rng_after;
  replaying_ = false;
  const std::string head = "find-nonfinite: re-ran step " + std::to_string(step) + " (" +
                           std::to_string(micro) + " micro-batch" + (micro > 1 ? "es" : "") +
                           (with_optimizer ? " and the optimizer step" : "") +
                           "; the same batches and dropout masks) with a check after every op";
  if (report.empty())
    return head + ": no op wrote inf or NaN this time (the failure did not reproduce)";
  return head + "; the first op that wrote inf or NaN (" + where + "):\n" + report;
}

std::string rngState(const std::mt19937_64& rng) {
  std::ostringstream os;
  os << rng;
  return os.str();
}

/// A float as text that parses back to the same float ("%.9g").
std::string floatText(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", (double)x);
  return buf;
}

void Trainer::save(int64_t step) {
  const std::map<int64_t, std::vector<float>> gathered = gatherShardedMoments(ctx_, m_);
  beat("the checkpoint's gather at step " + std::to_string(step));
  if (rank_ > 0) return; // only rank 0 writes
  std::map<std::string, std::string> meta;
  meta["format"] = "tgc-checkpoint-1";
  meta["step"] = std::to_string(step);
  meta["total_steps"] = std::to_string(total_steps_);
  meta["seed"] = std::to_string(seed_);
  meta["data_rng"] = rngState(dataRngUnstaged());
  if (shuffle_) { // (random: no key, as in checkpoints saved before --sampling existed)
    meta["sampling"] = "shuffle";
    meta["epoch_windows"] = std::to_string(windows_);
    meta["step_windows"] = std::to_string(step_windows_);
  }
  meta["model"] = m_.name ? m_.name : "";
  meta["spec"] = m_.spec_json ? m_.spec_json : "";
  meta["backend"] = tgrt_backend_name();
  if (scaler_.enabled()) {
    meta["loss_scale"] = floatText(scaler_.scale());
    meta["loss_scale_growth_counter"] = std::to_string(scaler_.growthCounter());
    meta["skipped_steps"] = std::to_string(scaler_.skippedSteps());
  }
  // A failed save (disk full, quota, I/O error) stops the run: training on without
  // checkpoints would risk losing everything after the last one. saveParams writes a temp file
  // and renames it, so the previous checkpoint is intact and the run can be --resume'd.
  const bool had_previous = std::ifstream(opt_.save).good();
  std::string err;
  if (!saveParams(ctx_, m_, opt_.save, std::move(meta), &err, &gathered)) {
    say("\n");
    throw DriverError("cannot save checkpoint " + opt_.save + " at step " + std::to_string(step) +
                      ": " + err +
                      (had_previous ? " (the previous checkpoint is unchanged)"
                                    : " (no checkpoint was written)"));
  }
  say("saved %s at step %lld\n", opt_.save.c_str(), (long long)step);
}

void Trainer::resume() {
  const std::string& path = opt_.resume;
  SafetensorsReader r;
  std::string err;
  if (!r.open(path, &err)) throw DriverError(err);
  const auto& meta = r.metadata();
  auto metaInt = [&](const char* key) -> int64_t {
    auto it = meta.find(key);
    if (it == meta.end())
      throw DriverError(path + ": __metadata__ has no '" + key +
                        "' (not a checkpoint written by this driver?)");
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || v < 0)
      throw DriverError(path + ": __metadata__." + key + " = '" + it->second +
                        "' is not a non-negative integer");
    return v;
  };
  start_step_ = metaInt("step");
  if (meta.count("total_steps")) saved_total_ = metaInt("total_steps");
  auto name_it = meta.find("model");
  if (name_it != meta.end() && m_.name && name_it->second != m_.name)
    std::fprintf(stderr, "warning: %s was saved from model '%s', resuming into '%s'\n",
                 path.c_str(), name_it->second.c_str(), m_.name);
  if (!r.hasChecksums())
    say("note: %s records no tensor checksums (saved before they were added): its tensors "
        "are loaded unverified, only checked for NaN and inf\n", path.c_str());
  // Precision check, values and moments (converted to the slots' dtypes).
  bool have_optim = false;
  std::string nonfinite;
  if (!loadParams(ctx_, m_, r, &have_optim, &err, opt_.find_nonfinite ? &nonfinite : nullptr))
    throw DriverError(err);
  if (!nonfinite.empty() && rank_ == 0)
    std::fprintf(stderr, "warning: %s: %s; loaded because --find-nonfinite is on\n",
                 path.c_str(), nonfinite.c_str());
  if (!have_optim && !opt_.quiet)
    std::fprintf(stderr, "warning: %s holds no optimizer state; AdamW moments start at zero\n",
                 path.c_str());
  if (auto it = meta.find("sampling"); it != meta.end()) {
    if (it->second != "shuffle" && it->second != "random")
      throw DriverError(path + ": __metadata__.sampling = '" + it->second +
                        "' is neither 'shuffle' nor 'random'");
    ckpt_sampling_ = it->second;
    if (ckpt_sampling_ == "shuffle") {
      ckpt_windows_ = metaInt("epoch_windows");
      ckpt_step_windows_ = metaInt("step_windows");
    }
  }
  auto rng_it = meta.find("data_rng");
  if (rng_it != meta.end()) {
    std::istringstream is(rng_it->second);
    is >> data_rng_;
    if (is.fail())
      throw DriverError(path + ": __metadata__.data_rng is not a valid std::mt19937_64 state");
  } else if (!opt_.quiet) {
    std::fprintf(stderr, "warning: %s has no data RNG state; sampling restarts from the seed\n",
                 path.c_str());
  }
  if (scaler_.enabled()) {
    auto scale_it = meta.find("loss_scale");
    if (scale_it != meta.end()) {
      char* end = nullptr;
      const float scale = std::strtof(scale_it->second.c_str(), &end);
      if (scale_it->second.empty() || *end != '\0' || !(scale > 0) || !std::isfinite(scale))
        throw DriverError(path + ": __metadata__.loss_scale = '" + scale_it->second +
                          "' is not a positive finite number");
      const int64_t counter = metaInt("loss_scale_growth_counter");
      const int64_t skipped = meta.count("skipped_steps") ? metaInt("skipped_steps") : 0;
      scaler_.restore(scale, (int32_t)std::min<int64_t>(counter, INT32_MAX), skipped);
    } else if (!opt_.quiet) {
      std::fprintf(stderr, "warning: %s has no loss scale state; the scale restarts at %.9g\n",
                   path.c_str(), (double)scaler_.scale());
    }
  }
  say("resumed %s at step %lld\n", path.c_str(), (long long)start_step_);
}

void Trainer::initFrom() {
  // Every rank reads the directory and uploads its part (under ZeRO-3 its chunk of each
  // value); the AdamW moments stay zero and the run starts at step 0.
  std::vector<std::string> notes;
  std::string err;
  if (!loadHfInit(ctx_, m_, opt_.init_from, &notes, &err)) throw DriverError(err);
  for (const std::string& n : notes) say("note: --init-from: %s\n", n.c_str());
  say("initialised the parameters from %s\n", opt_.init_from.c_str());
}

void Trainer::progress(int64_t step, int64_t total, double loss, double lr, float norm,
                       double loss_scale, bool skipped, double tok_s, double ms, double eta_s,
                       bool force_line) {
  if (opt_.quiet) return;
  char buf[320], of[32] = "", scale[64] = "";
  if (total > 0) std::snprintf(of, sizeof of, "/%lld", (long long)total);
  if (loss_scale > 0)
    std::snprintf(scale, sizeof scale, " | scale %.9g%s", loss_scale, skipped ? " (skipped)" : "");
  std::snprintf(buf, sizeof buf,
                "step %lld%s | loss %.4f | lr %.3e | norm %.3f%s | %.0f tok/s | %.1f ms | ETA %s%s",
                (long long)step, of, loss, lr, norm, scale, tok_s, ms,
                humanDuration(eta_s).c_str(), epoch_note_.c_str());
  if (tty_) {
    std::printf("\r%s\x1b[K", buf);
    line_open_ = true;
    if (force_line) {
      std::fputc('\n', stdout);
      line_open_ = false;
    }
  } else {
    const int64_t every = std::max<int64_t>(1, total / 10);
    if (force_line || total <= 0 || step % every == 0 || step == total ||
        step == start_step_ + 1)
      std::printf("%s\n", buf);
  }
  std::fflush(stdout);
}

int Trainer::run() {
  using clock = std::chrono::steady_clock;
  tty_ = isatty(fileno(stdout)) != 0;
  checkOutputPaths(opt_); // rank > 0: nothing to check (rank 0 logs and saves)
  if (m_.spec_json && *m_.spec_json) {
    const nlohmann::json spec = nlohmann::json::parse(m_.spec_json, nullptr, false);
    if (spec.is_object() && spec.contains("training") && spec["training"].is_object() &&
        spec["training"].contains("ignore_index") &&
        spec["training"]["ignore_index"].is_number_integer()) {
      have_ignore_ = true;
      ignore_index_ = spec["training"]["ignore_index"].get<int64_t>();
    }
  }
  seed_ = opt_.has_seed ? opt_.seed : (uint64_t)(uint32_t)m_.seed;
  data_rng_.seed(seed_ ^ 0xD1B54A32D192ED03ull);
  loadData();

  ctx_ = tgrt_ctx_create(&m_);
  if (!ctx_) throw DriverError("cannot create the runtime context (see the message above)");
  if (comm_) tgrt_set_comm(ctx_, comm_, rank_, ranks_);
  if (comm_ && ranks_ > 1 && std::strcmp(tgrt_backend_name(), "cuda") == 0) {
    double timeout = 300;
    if (const char* t = std::getenv("TGRT_COMM_TIMEOUT_S")) {
      char* end = nullptr;
      const double v = std::strtod(t, &end);
      if (!end || *end || !(v > 0))
        throw DriverError(std::string("TGRT_COMM_TIMEOUT_S=") + t +
                          " is not a positive number of seconds");
      timeout = v;
    }
    watchdog_.reset(new Watchdog(timeout, rank_, ranks_, opt_.prog));
  }
  beat("the context's creation");
  initParams();
  beat("the parameters' initialisation");
  scaler_ = LossScaler(m_.loss_scale_init, m_.loss_scale_growth_interval);
  if (!opt_.resume.empty()) resume();
  if (!opt_.init_from.empty()) initFrom();
  beat("the parameters' loading");
  setupSampling();
  if (const char* pf = std::getenv("TGRT_PREFETCH"); pf && *pf) {
    if (std::strcmp(pf, "0") != 0 && std::strcmp(pf, "1") != 0)
      throw DriverError(std::string("TGRT_PREFETCH=") + pf + " is not 0 (sample and upload each "
                        "batch when its step starts) or 1 (stage it while the step before "
                        "runs; the default)");
    prefetch_ = pf[0] == '1';
  }
  if (const char* wl = std::getenv("TGRT_LOG_WINDOWS"); wl && *wl) {
    window_log_ = std::fopen(wl, "a"); // every rank appends its lines (logWindows)
    if (!window_log_)
      throw DriverError(std::string("TGRT_LOG_WINDOWS=") + wl + ": cannot open for appending: " +
                        std::strerror(errno));
  }

  // Schedule length. An epoch: S steps of shuffled windows, or (random) the steps that
  // draw about as many tokens as the split holds.
  const int64_t per_epoch =
      shuffle_ ? epoch_steps_ : stepsPerEpoch(m_, train_.tokens.tokens()) / ranks_;
  const bool timed = opt_.time_limit_min > 0;
  if (opt_.steps > 0) total_steps_ = opt_.steps;
  else if (opt_.epochs > 0) {
    if (per_epoch == 0)
      throw DriverError(train_.path + ": " + std::to_string(train_.tokens.tokens()) +
                        " tokens is less than one optimizer step of batch * context * "
                        "grad_accum tokens, so --epochs cannot be used");
    total_steps_ = std::max<int64_t>(1, (int64_t)std::floor(opt_.epochs * (double)per_epoch));
  } else if (timed) total_steps_ = std::numeric_limits<int32_t>::max(); // provisional
  else if (saved_total_ > 0) total_steps_ = saved_total_;
  else total_steps_ = 200;
  auto lastStep = [&] {
    return opt_.stop_after > 0 ? std::min(total_steps_, opt_.stop_after) : total_steps_;
  };
  int64_t last_step = lastStep();

  if (!opt_.log.empty()) {
    if (!opt_.resume.empty()) trimLog(opt_.log, start_step_);
    log_ = std::fopen(opt_.log.c_str(), opt_.resume.empty() ? "w" : "a");
    if (!log_) throw DriverError(opt_.log + ": cannot open for writing: " + std::strerror(errno));
  }
  const int64_t tokens_per_step =
      (int64_t)m_.batch_size * m_.context * std::max(1, m_.grad_accum) * ranks_;
  say("training %s on %s (%s backend): %lld train tokens, %lld tokens/step, %s steps "
      "(%.3g epochs)\n",
      m_.name ? m_.name : "?", opt_.data.c_str(), tgrt_backend_name(),
      (long long)train_.tokens.tokens(), (long long)tokens_per_step,
      timed ? "time-limited" : std::to_string(total_steps_).c_str(),
      per_epoch > 0 && !timed ? (double)total_steps_ / (double)per_epoch : 0.0);
  if (shuffle_)
    say("sampling: shuffle: %lld windows of %d tokens, each epoch in a new order, %lld steps of "
        "%lld windows an epoch (its last %lld windows dropped)\n",
        (long long)windows_, (int)m_.context + 1, (long long)epoch_steps_,
        (long long)step_windows_, (long long)(windows_ - epoch_steps_ * step_windows_));
  if (ranks_ > 1)
    say("data parallel: %d ranks (threads), %d sequences per rank and micro-batch, gradients "
        "averaged before the optimizer step\n",
        (int)ranks_, (int)m_.batch_size);
  if (scaler_.enabled())
    say("dynamic loss scaling: scale %.9g, x2 after %d clean steps, x0.5 (step skipped) when "
        "the gradients overflow\n",
        (double)scaler_.scale(), (int)m_.loss_scale_growth_interval);

  const auto t_start = clock::now();
  const double limit_s = opt_.time_limit_min * 60.0;
  int64_t step = start_step_;
  Batch batch;
  double step_time_sum = 0;
  int64_t steps_timed = 0;
  double first_step_s = 0;
  int64_t cnt = 0;
  // Shuffle: the epoch of the step being run (0-based), when its first step in this process
  // started, how many of its steps this process ran; one entry per epoch (or part) run.
  struct EpochTime {
    int64_t epoch, steps;
    double seconds;
    bool whole; ///< every step of the epoch ran in this process
  };
  std::vector<EpochTime> epoch_times;
  int64_t cur_epoch = -1, epoch_steps_run = 0;
  clock::time_point epoch_t0;
  // Epochs of the schedule (0 while a time limit has not fixed it).
  auto epochsTotal = [&](bool known) -> int64_t {
    return known && epoch_steps_ > 0 ? (total_steps_ + epoch_steps_ - 1) / epoch_steps_ : 0;
  };
  tgrt_take_loss(ctx_, &cnt);
  // The previous step's end (its last synchronisation): from then until this step's first
  // launch the GPU has nothing queued but the batch's copies (host_gap_ms of the --log line).
  clock::time_point last_sync{};
  bool synced = false;
  // The device's energy over this process's steps from its third on (the first two pay for
  // the GEMM and attention tuning and the graph's capture): NVML's energy counter
  // (tgrt_power_sample) read when an interval of steps opens (after the second step, after
  // each evaluation or save) and when it closes (before an evaluation or save, after the
  // last step). Only there: one reading costs milliseconds of host time (a GPU idle for as
  // long), so never per step. Nothing on the CPU backend.
  struct {
    double joules = 0, seconds = 0, openJ = 0, limitW = 0, mhz = 0, maxMhz = 0;
    clock::time_point openT{};
    bool open = false, none = false; // none: no reading here (not asked again)
    int64_t steps = 0, openSteps = 0, first = 0;
  } energy;
  auto energyOpen = [&](int64_t nextStep) {
    double j = 0;
    if (energy.none) return;
    energy.open = tgrt_power_sample(ctx_, &j, nullptr, nullptr, nullptr, nullptr) != 0;
    energy.none = !energy.open;
    energy.openJ = j;
    energy.openT = clock::now();
    energy.openSteps = 0;
    if (energy.open && energy.steps == 0) energy.first = nextStep;
  };
  auto energyClose = [&]() {
    if (!energy.open) return;
    energy.open = false;
    double j = 0, mhz = 0, maxMhz = 0, limit = 0;
    const auto now = clock::now();
    if (energy.openSteps == 0 || !tgrt_power_sample(ctx_, &j, &mhz, &maxMhz, nullptr, &limit) ||
        j < energy.openJ)
      return;
    energy.joules += j - energy.openJ;
    energy.seconds += std::chrono::duration<double>(now - energy.openT).count();
    energy.steps += energy.openSteps;
    energy.mhz = mhz;
    energy.maxMhz = maxMhz;
    energy.limitW = limit;
  };
  while (step < last_step) {
    const int64_t s = step + 1;
    const auto t0 = clock::now();
    double host_gap_s = 0.0, batch_s = 0.0;
    if (shuffle_ && (s - 1) / epoch_steps_ != cur_epoch) {
      cur_epoch = (s - 1) / epoch_steps_;
      epoch_steps_run = 0;
      epoch_t0 = t0;
    }
    const double lr = learningRate(m_, s, total_steps_);
    // AdamW's step t counts the updates made: a step skipped by loss scaling made none
    // (as PyTorch's GradScaler, whose skipped optimizer.step() leaves Adam's count alone).
    tgrt_set_step(ctx_, s - scaler_.skippedSteps());
    tgrt_set_lr(ctx_, (float)lr);
    const float loss_scale = scaler_.scale(); // the scale this step runs with
    if (scaler_.enabled()) tgrt_set_loss_scale(ctx_, loss_scale);
    if (opt_.find_nonfinite) step_rng_ = dataRngUnstaged(); // the step's batches, again
    const int32_t micros = std::max(1, m_.grad_accum);
    for (int32_t k = 0; k < micros; ++k) {
      tgrt_set_micro_batch(ctx_, k);
      auto tb = clock::now();
      takeBatch(&batch, s, k);
      batch_s += std::chrono::duration<double>(clock::now() - tb).count();
      if (k == 0)
        host_gap_s = std::chrono::duration<double>(clock::now() - (synced ? last_sync : t0)).count();
      // From this process's second step on, the micro-step may run as a CUDA graph (captured
      // once, replayed; the runtime refuses work that would not replay right): its launches
      // then cost one graph launch. The first step makes the library plans a capture needs.
      if (steps_timed >= 1)
        tgrt_run_graph(ctx_, 0, hooks_.micro_step);
      else
        hooks_.micro_step(ctx_);
      // The next micro-batch (of this step, or the next step's first) staged while this one
      // runs: it lands in the token slot after this micro-step's reads. Up to the schedule's
      // end, not --stop-after's: an interrupted run has the next batch staged, as the
      // checkpoint test of the prefetch needs (test/e2e/prefetch.test).
      if (prefetch_ && (k + 1 < micros || s < total_steps_)) {
        tb = clock::now();
        if (k + 1 < micros) stageBatch(s, k + 1);
        else stageBatch(s + 1, 0);
        batch_s += std::chrono::duration<double>(clock::now() - tb).count();
      }
    }
    double sum = 0.0;
    if (opt_.find_nonfinite) {
      // The loss before the optimizer step (one more synchronisation): a non-finite one is
      // re-run on the parameters this step used, even if its gradients happen to be finite.
      sum = tgrt_take_loss(ctx_, &cnt);
      const double early = cnt > 0 ? sum / (double)cnt : std::numeric_limits<double>::quiet_NaN();
      if (!std::isfinite(early)) {
        logLine({{"step", s}, {"loss", early}, {"lr", lr}});
        say("\n");
        throw DriverError(lossError(early, s) + "\n" + findNonFinite(s, false));
      }
    }
    hooks_.optimizer_step(ctx_);
    if (!opt_.find_nonfinite) sum = tgrt_take_loss(ctx_, &cnt);
    const float norm = tgrt_last_grad_norm(ctx_);
    tgrt_synchronize(ctx_);
    last_sync = clock::now();
    synced = true;
    double loss = cnt > 0 ? sum / (double)cnt : std::numeric_limits<double>::quiet_NaN();
    meanOverRanks("driver.loss", &loss, 1); // the loss of the global batch
    beat("step " + std::to_string(s));
    const double secs = std::chrono::duration<double>(clock::now() - t0).count();
    step = s;
    step_time_sum += secs;
    if (++steps_timed == 1) first_step_s = secs;
    const double avg = step_time_sum / (double)steps_timed;
    const double tok_s = secs > 0 ? (double)tokens_per_step / secs : 0.0;
    // Loss scaling: a step whose gradients overflowed was skipped by AdamW.
    const bool skipped = scaler_.enabled() && !std::isfinite(norm);
    scaler_.update(std::isfinite(norm));
    nlohmann::json rec = {{"step", s},         {"loss", loss},         {"lr", lr},
                          {"grad_norm", norm}, {"tokens_per_s", tok_s}, {"ms", secs * 1e3},
                          {"host_gap_ms", host_gap_s * 1e3}, {"batch_ms", batch_s * 1e3}};
    if (energy.open) ++energy.openSteps;
    if (scaler_.enabled()) {
      rec["loss_scale"] = loss_scale;
      rec["skipped_steps"] = scaler_.skippedSteps();
    }
    if (shuffle_) rec["epoch"] = cur_epoch + 1;
    logLine(rec);
    if (!std::isfinite(loss)) { // (with --find-nonfinite, caught before the optimizer step)
      say("\n");
      throw DriverError(lossError(loss, s));
    }
    // Without loss scaling a non-finite gradient norm is an error, not a skipped step: AdamW
    // left the parameters alone (its factor is NaN), so going on would train nothing.
    if (!scaler_.enabled() && !std::isfinite(norm)) {
      say("\n");
      std::string msg = "the gradient norm is " +
                        std::string(std::isnan(norm) ? "NaN" : "infinite") + " at step " +
                        std::to_string(s) + " (loss " + floatText((float)loss) +
                        "): a gradient overflowed or is NaN; the parameters were not updated "
                        "(training diverged; try a lower lr, a longer warmup or bf16-mixed "
                        "instead of fp16";
      if (!opt_.find_nonfinite)
        throw DriverError(msg + "; " + kFindHint + ")");
      // AdamW skipped the step (its factor is NaN) and zeroed the gradients: the parameters
      // are those the step ran with.
      throw DriverError(msg + ")\n" + findNonFinite(s, true));
    }
    if (scaler_.enabled() && !(scaler_.scale() >= std::numeric_limits<float>::min())) {
      say("\n");
      throw DriverError("the loss scale fell to " + floatText(scaler_.scale()) + " at step " +
                        std::to_string(s) + " after " + std::to_string(scaler_.skippedSteps()) +
                        " skipped steps: the gradients are not finite even unscaled (training "
                        "diverged; try a lower lr or a longer warmup)");
    }
    if (timed && steps_timed == 5) {
      // Fix the schedule length from the speed of steps 2..5 of this process (step 1 pays for
      // warm-up: allocation, library init, caches): the steps left fill the remaining time.
      double times[2] = {(step_time_sum - first_step_s) / 4.0,
                         std::chrono::duration<double>(clock::now() - t_start).count()};
      meanOverRanks("driver.time_limit", times, 2); // one schedule for every rank
      const double warm_avg = times[0], elapsed = times[1];
      const double left = std::max(0.0, limit_s - elapsed);
      total_steps_ = s + (warm_avg > 0 ? (int64_t)(left / warm_avg) : 0);
      last_step = lastStep();
    }
    const int64_t shown_total = timed && steps_timed < 5 ? 0 : last_step;
    const double eta = (double)(last_step - s) * avg;
    const bool periodic_eval = opt_.eval_every > 0 && s % opt_.eval_every == 0 && s != last_step;
    if (shuffle_) {
      const int64_t of = epochsTotal(shown_total > 0);
      epoch_note_ = " | epoch " + std::to_string(cur_epoch + 1) +
                    (of > 0 ? "/" + std::to_string(of) : std::string());
    }
    progress(s, shown_total, loss, lr, norm, scaler_.enabled() ? loss_scale : 0.0, skipped,
             tok_s, secs * 1e3, eta, periodic_eval);
    if (periodic_eval) {
      energyClose();
      EvalCount ec;
      const double vl = evaluate(val_, opt_.eval_batches, &ec);
      if (staged_step_ > 0) uploadBatch(staged_); // the evaluation wrote the token slot
      const int64_t used = ec.batches;
      if (used > 0) {
        say("eval  step %lld | val loss %.4f | ppl %.2f (%lld batches)\n", (long long)s, vl,
            std::exp(vl), (long long)used);
        logLine({{"eval", "val"}, {"step", s}, {"loss", vl}, {"ppl", std::exp(vl)},
                 {"batches", used}});
      }
    }
    if (save_every_all_ > 0 && s % save_every_all_ == 0 && s != last_step) {
      energyClose();
      save(s);
    }
    // The next steps' interval opens after the second step and after an evaluation or save.
    if (steps_timed >= 2 && !energy.open && s != last_step) energyOpen(s + 1);
    if (shuffle_) {
      ++epoch_steps_run;
      if (s % epoch_steps_ == 0) { // the epoch's last step: its wall time (evals, saves too)
        const double es = std::chrono::duration<double>(clock::now() - epoch_t0).count();
        const bool whole = epoch_steps_run == epoch_steps_;
        epoch_times.push_back({cur_epoch, epoch_steps_run, es, whole});
        const int64_t of = epochsTotal(!(timed && steps_timed < 5));
        say("epoch %lld%s done at step %lld: %lld steps%s in %.3f s, %.0f tok/s\n",
            (long long)cur_epoch + 1, of > 0 ? ("/" + std::to_string(of)).c_str() : "",
            (long long)s, (long long)epoch_steps_run,
            whole ? "" : (" (of " + std::to_string(epoch_steps_) + "; resumed at step " +
                          std::to_string(start_step_) + ")").c_str(),
            es, es > 0 ? (double)(epoch_steps_run * tokens_per_step) / es : 0.0);
      }
    }
    if (timed) {
      const double elapsed = std::chrono::duration<double>(clock::now() - t_start).count();
      double stop = elapsed + avg > limit_s ? 1.0 : 0.0;
      meanOverRanks("driver.time_limit", &stop, 1); // all ranks stop at the same step
      if (stop > 0) break;
    }
  }
  if (line_open_) {
    std::fputc('\n', stdout);
    line_open_ = false;
  }
  energyClose();
  if (energy.steps > 0 && energy.seconds > 0) {
    const double perStep = energy.joules / (double)energy.steps,
                 watts = energy.joules / energy.seconds;
    say("energy: %.2f J per step over %lld steps (%lld-%lld; NVML's counter): mean %.0f W of "
        "the %.0f W limit, SM clock %.0f MHz of %.0f at the last step's end\n",
        perStep, (long long)energy.steps, (long long)energy.first, (long long)step, watts,
        energy.limitW, energy.mhz, energy.maxMhz);
    logLine({{"power", "steps"}, {"steps", energy.steps}, {"first_step", energy.first},
             {"last_step", step}, {"energy_j_per_step", perStep}, {"watts", watts},
             {"seconds", energy.seconds}, {"limit_w", energy.limitW}, {"sm_mhz_end", energy.mhz},
             {"sm_mhz_max", energy.maxMhz}});
  }
  if (timed) total_steps_ = step; // what the run actually did, for the checkpoint
  if (shuffle_ && epoch_steps_run > 0 && step % epoch_steps_ != 0) // a part of an epoch
    epoch_times.push_back({cur_epoch, epoch_steps_run,
                           std::chrono::duration<double>(clock::now() - epoch_t0).count(),
                           false});
  if (!epoch_times.empty()) {
    std::string list;
    for (const EpochTime& e : epoch_times) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%lld: %.3f s%s", list.empty() ? "" : ", ",
                    (long long)e.epoch + 1, e.seconds,
                    e.whole ? ""
                            : (" (" + std::to_string(e.steps) + " of " +
                               std::to_string(epoch_steps_) + " steps)").c_str());
      list += buf;
    }
    say("time per epoch: %s\n", list.c_str());
  }
  if (scaler_.enabled())
    say("loss scaling: %lld of %lld optimizer steps skipped (gradients not finite), scale now "
        "%.9g\n",
        (long long)scaler_.skippedSteps(), (long long)step, (double)scaler_.scale());
  if (save_all_) save(step);

  // Final evaluation over the whole val and test splits (rank 0 only; under ZeRO-3 every
  // rank runs it, rank 0 reports).
  if (rank_ > 0 && !evalAll()) return 0;
  for (Split* sp : {&val_, &test_}) {
    if (!sp->present) continue;
    EvalCount ec;
    const double l = evaluate(*sp, 0, &ec);
    if (rank_ > 0) continue; // ZeRO-3: took part in the gathers; rank 0 reports
    if (ec.batches == 0) {
      if (have_ignore_)
        std::printf("%s: %lld tokens is less than one window of context + 1 = %d tokens; "
                    "skipped\n",
                    sp->name.c_str(), (long long)sp->tokens.tokens(), (int)m_.context + 1);
      else
        std::printf("%s: %lld tokens is less than one eval batch of %d x %d tokens; skipped\n",
                    sp->name.c_str(), (long long)sp->tokens.tokens(), (int)m_.batch_size,
                    (int)m_.context);
      continue;
    }
    if (ec.dropped > 0)
      say("note: %s: the last %lld windows (< one batch of %d) are not evaluated (the model "
          "carries no spec, so no ignore_index to pad the last batch with)\n",
          sp->name.c_str(), (long long)ec.dropped, (int)m_.batch_size);
    std::printf("%s loss %.4f ppl %.3f\n", sp->name.c_str(), l, std::exp(l));
    std::fflush(stdout);
    logLine({{"eval", sp->name}, {"step", step}, {"loss", l}, {"ppl", std::exp(l)},
             {"batches", ec.batches}, {"windows", ec.windows}, {"targets", ec.targets},
             {"final", true}});
  }
  return 0;
}

/// Runs `ranks` Trainers as threads of this process, joined by an in-process communicator.
/// The first rank that fails prints its error and ends the process with its status (the
/// other ranks would otherwise wait in a collective until the communicator's timeout).
int runRanks(const Options& o, const tgrt_driver_hooks& hooks, const tgrt_model& m,
             int32_t ranks, const char* prog) {
  tgrt_comm* comm = tgrt_comm_create_local(ranks);
  if (!comm) throw DriverError("cannot create the data-parallel communicator (see above)");
  std::vector<std::thread> threads;
  int rc0 = 0;
  for (int32_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      int code = 0;
      std::string msg;
      try {
        Trainer t(o, hooks, m, r, ranks, comm);
        code = t.run();
      } catch (const DriverError& e) {
        code = e.code;
        msg = e.what();
      } catch (const std::exception& e) {
        code = 1;
        msg = e.what();
      }
      if (code != 0) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: error: %s%s\n", prog,
                     r > 0 ? ("rank " + std::to_string(r) + ": ").c_str() : "", msg.c_str());
        std::fflush(nullptr);
        std::_Exit(code);
      }
      if (r == 0) rc0 = code;
    });
  for (std::thread& t : threads) t.join();
  tgrt_comm_destroy(comm);
  return rc0;
}

/// How this process was started as one rank of a data-parallel job (launcherEnv).
struct LaunchEnv {
  /// Which environment set the rank: "" (none: a plain run, or `./train --gpus N` itself),
  /// "--gpus" (a rank process of spawnRanks: TGRT_NCCL_ID), "torchrun" (RANK, WORLD_SIZE),
  /// "Open MPI" (OMPI_COMM_WORLD_*), "MPICH/PMI" (PMI_RANK, PMI_SIZE).
  std::string launcher;
  std::string rank_var, world_var; ///< the names of the variables read, for messages
  int64_t rank = 0, world = 1;
  int64_t local = 0;       ///< the GPU of this rank (its local rank on the host)
  std::string nccl_id;     ///< TGRT_NCCL_ID ("--gpus" only): the NCCL unique id, 256 hex digits
  std::string master_addr; ///< MASTER_ADDR ("" if unset)
  std::string master_port; ///< MASTER_PORT as given ("" if unset)
  int64_t port = 0;        ///< the rendezvous TCP port (checked by requireMaster)
  double timeout_s = kRendezvousTimeoutS; ///< TGRT_RENDEZVOUS_TIMEOUT_S, seconds
};

/// Seconds as short text ("120", "1.5").
std::string fmtNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// The value of an environment variable, or nullptr when it is unset or empty.
const char* envValue(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

/// Reads the rank environment. TGRT_NCCL_ID set: a rank process of `./train --gpus N`
/// (RANK required, WORLD_SIZE default `compiled`, LOCAL_RANK default RANK), as before. Else
/// the first launcher whose world-size variable is set: torchrun (WORLD_SIZE; RANK, LOCAL_RANK
/// default RANK), Open MPI (OMPI_COMM_WORLD_SIZE; OMPI_COMM_WORLD_RANK,
/// OMPI_COMM_WORLD_LOCAL_RANK default the rank), MPICH / PMI (PMI_SIZE; PMI_RANK,
/// MPI_LOCALRANKID default the rank). None set: launcher "" and world 1. The rank is required
/// when the world size is > 1 and must lie in [0, world). Integers are parsed like the
/// command-line options (an error names the variable and its value); MASTER_ADDR/MASTER_PORT
/// are only recorded here (requireMaster checks them).
LaunchEnv launcherEnv(int64_t compiled) {
  LaunchEnv L;
  auto intVar = [](const char* name, int64_t min) {
    return parseInt(std::string("environment ") + name, envValue(name), min);
  };
  const char *rank_var = nullptr, *world_var = nullptr, *local_var = nullptr;
  if (const char* id = std::getenv("TGRT_NCCL_ID")) {
    L.launcher = "--gpus";
    L.nccl_id = id;
    rank_var = "RANK", world_var = "WORLD_SIZE", local_var = "LOCAL_RANK";
  } else if (envValue("WORLD_SIZE")) {
    L.launcher = "torchrun";
    rank_var = "RANK", world_var = "WORLD_SIZE", local_var = "LOCAL_RANK";
  } else if (envValue("OMPI_COMM_WORLD_SIZE")) {
    L.launcher = "Open MPI";
    rank_var = "OMPI_COMM_WORLD_RANK", world_var = "OMPI_COMM_WORLD_SIZE";
    local_var = "OMPI_COMM_WORLD_LOCAL_RANK";
  } else if (envValue("PMI_SIZE")) {
    L.launcher = "MPICH/PMI";
    rank_var = "PMI_RANK", world_var = "PMI_SIZE", local_var = "MPI_LOCALRANKID";
  } else {
    return L;
  }
  L.rank_var = rank_var, L.world_var = world_var;
  L.world = envValue(world_var) ? intVar(world_var, 1) : compiled;
  if (envValue(rank_var)) L.rank = intVar(rank_var, 0);
  else if (L.world > 1 || L.launcher == "--gpus")
    throw DriverError(std::string("environment ") + world_var + "=" +
                          std::to_string(L.world) + " (" + L.launcher + "), but " + rank_var +
                          " is not set",
                      2);
  if (L.rank >= L.world)
    throw DriverError(std::string("environment ") + rank_var + "=" + std::to_string(L.rank) +
                          " is outside [0, " + std::to_string(L.world) + ")",
                      2);
  L.local = envValue(local_var) ? intVar(local_var, 0) : L.rank;
  if (const char* a = envValue("MASTER_ADDR")) L.master_addr = a;
  if (const char* p = envValue("MASTER_PORT")) L.master_port = p;
  if (const char* t = envValue("TGRT_RENDEZVOUS_TIMEOUT_S"))
    L.timeout_s = parseDouble("environment TGRT_RENDEZVOUS_TIMEOUT_S", t);
  return L;
}

/// Checks that a launched rank (world > 1, no TGRT_NCCL_ID) knows where rank 0 listens and
/// sets L.port: TGRT_RENDEZVOUS_PORT if set; else, under torchrun's agent store
/// (TORCHELASTIC_USE_AGENT_STORE=True: torchrun itself listens on MASTER_PORT),
/// MASTER_PORT + 1; else MASTER_PORT.
void requireMaster(LaunchEnv& L) {
  const std::string who = "rank " + std::to_string(L.rank) + " of " + std::to_string(L.world) +
                          " (" + L.launcher + " environment: " + L.rank_var + ", " +
                          L.world_var + ")";
  const bool mpi = L.launcher != "torchrun";
  const char* hint = mpi ? "; mpirun does not set them: export both to every rank (Open MPI: "
                           "mpirun -x MASTER_ADDR=<rank 0's host> -x MASTER_PORT=<free port>; "
                           "MPICH: -genv)"
                         : "";
  const std::pair<const char*, const std::string*> vars[] = {{"MASTER_ADDR", &L.master_addr},
                                                             {"MASTER_PORT", &L.master_port}};
  for (const auto& [var, value] : vars)
    if (value->empty())
      throw DriverError(who + ": environment " + var + " is not set; the ranks need "
                        "MASTER_ADDR and MASTER_PORT, where rank 0 hands the others the NCCL "
                        "id" + hint,
                        2);
  L.port = parseInt("environment MASTER_PORT", L.master_port, 1);
  if (const char* p = envValue("TGRT_RENDEZVOUS_PORT"))
    L.port = parseInt("environment TGRT_RENDEZVOUS_PORT", p, 1);
  else if (L.launcher == "torchrun" && envValue("TORCHELASTIC_USE_AGENT_STORE") &&
           std::string(envValue("TORCHELASTIC_USE_AGENT_STORE")) == "True")
    L.port += 1;
  if (L.port > 65535)
    throw DriverError(who + ": the rendezvous port " + std::to_string(L.port) +
                          " (MASTER_PORT / TGRT_RENDEZVOUS_PORT) is above 65535",
                      2);
}

/// One rank process joined to the NCCL communicator of unique id idHex (256 hex digits, the
/// same in every rank) as rank `rank` of `ranks` on GPU `device`; trains.
int runNcclRank(const Options& o, const tgrt_driver_hooks& hooks, const tgrt_model& m,
                int32_t rank, int32_t ranks, int32_t device, const std::string& idHex) {
  tgrt_comm* comm = tgrt_comm_create_nccl(rank, ranks, device, idHex.c_str());
  if (!comm)
    throw DriverError("rank " + std::to_string(rank) + ": cannot join the NCCL communicator "
                      "(see above)");
  int code = 0;
  {
    Trainer t(o, hooks, m, rank, ranks, comm);
    code = t.run();
  }
  tgrt_comm_destroy(comm);
  return code;
}

/// One rank of a job started by torchrun / mpirun (L from launcherEnv, after requireMaster):
/// rank 0 makes the NCCL unique id (NCCL's bootstrap root runs in its process) and hands it to
/// the other ranks through the TCP rendezvous at MASTER_ADDR:port; then every rank joins the
/// communicator on GPU L.local and trains (runNcclRank).
int runLaunchedRank(const Options& o, const tgrt_driver_hooks& hooks, const tgrt_model& m,
                    const LaunchEnv& L) {
  std::string id;
  if (L.rank == 0) {
    char hex[300];
    if (tgrt_comm_unique_id(hex, sizeof hex) != 0)
      throw DriverError("rank 0: cannot create the NCCL unique id (see above)");
    id = hex;
  }
  RendezvousOptions ro;
  ro.addr = L.master_addr;
  ro.port = (int)L.port;
  ro.rank = (int)L.rank;
  ro.world = (int)L.world;
  ro.timeout_s = L.timeout_s;
  try {
    id = rendezvousBroadcast(ro, id);
  } catch (const RendezvousError& e) {
    const std::string what = e.what();
    const bool in_use = what.find("cannot listen on port") != std::string::npos;
    throw DriverError(what + " [" + L.launcher + " launch; MASTER_ADDR=" + L.master_addr +
                      ", MASTER_PORT=" + L.master_port + ", TGRT_RENDEZVOUS_TIMEOUT_S=" +
                      fmtNumber(L.timeout_s) + "]" +
                      (in_use ? "; TGRT_RENDEZVOUS_PORT (the same for every rank) selects "
                                "another port"
                              : ""));
  }
  // A launcher that gives each rank only its own GPU (CUDA_VISIBLE_DEVICES naming one device,
  // e.g. Slurm's GPU binding) makes that GPU device 0 whatever LOCAL_RANK says. Otherwise
  // every GPU is visible to every rank, and NCCL's peer-to-peer setup then holds a CUDA
  // context on a peer GPU outside the plan (docs/distributed.md, "NCCL's memory").
  int32_t device = (int32_t)L.local;
  if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES"))
    if (*vis && !std::strchr(vis, ',')) device = 0;
  return runNcclRank(o, hooks, m, (int32_t)L.rank, (int32_t)L.world, device, id);
}

/// `./train --gpus N` on the CUDA backend: makes the NCCL unique id (its bootstrap root runs in
/// this process), starts N copies of this executable with the same arguments as ranks 0..N-1
/// (RANK, WORLD_SIZE, LOCAL_RANK = GPU, TGRT_NCCL_ID) and waits for them. The first rank that
/// fails ends the others (SIGTERM), so none waits forever in a collective; its status is
/// returned. Only rank 0 logs, evaluates and saves.
int spawnRanks(char** argv, int32_t ranks, const char* prog) {
  char id[300];
  if (tgrt_comm_unique_id(id, sizeof id) != 0)
    throw DriverError("cannot create the NCCL unique id (see above)");
  std::fflush(nullptr);
  std::vector<pid_t> pids((size_t)ranks, -1);
  auto endAll = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(p, sig);
  };
  for (int32_t r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      endAll(SIGTERM);
      throw DriverError(std::string("fork for rank ") + std::to_string(r) + ": " +
                        std::strerror(errno));
    }
    if (pid == 0) {
      const std::string rs = std::to_string(r), ws = std::to_string(ranks);
      setenv("RANK", rs.c_str(), 1);
      setenv("LOCAL_RANK", rs.c_str(), 1);
      setenv("WORLD_SIZE", ws.c_str(), 1);
      setenv("TGRT_NCCL_ID", id, 1);
      // Each rank sees only its own GPU (CUDA_VISIBLE_DEVICES = the r-th of the launcher's
      // visible devices; device 0 in the rank's numbering, TGRT_LOCAL_DEVICE). With every
      // GPU visible, NCCL's peer-to-peer setup made each rank process hold a CUDA context
      // (520 MiB on 2 x H200, 808 MiB under ZeRO-3, measured with nvidia-smi's per-process
      // figures) on its peer's GPU, outside every plan. NCCL connects GPUs it cannot see
      // through CUDA IPC as before (docs/distributed.md, "NCCL's memory").
      // TGRT_ISOLATE_GPUS=0 keeps every GPU visible to every rank.
      const char* iso = std::getenv("TGRT_ISOLATE_GPUS");
      if (!iso || std::string(iso) != "0") {
        std::string gpu = rs;
        if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES")) {
          std::vector<std::string> list;
          std::istringstream in(vis);
          for (std::string item; std::getline(in, item, ',');) {
            item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
            if (!item.empty()) list.push_back(item);
          }
          if ((size_t)r >= list.size()) {
            std::fprintf(stderr, "%s: error: rank %d: CUDA_VISIBLE_DEVICES='%s' names %d "
                                 "GPU(s), fewer than --gpus %d\n",
                         prog, (int)r, vis, (int)list.size(), (int)ranks);
            std::_Exit(2);
          }
          gpu = list[(size_t)r];
        }
        setenv("CUDA_VISIBLE_DEVICES", gpu.c_str(), 1);
        setenv("TGRT_LOCAL_DEVICE", "0", 1);
      }
      execv("/proc/self/exe", argv);
      std::fprintf(stderr, "%s: error: rank %d: exec /proc/self/exe: %s\n", prog, (int)r,
                   std::strerror(errno));
      std::_Exit(127);
    }
    pids[(size_t)r] = pid;
  }
  int rc = 0, live = ranks;
  // After a failure the others get SIGTERM, and SIGKILL 10 s later if they have not ended (a
  // stopped or hung process ignores SIGTERM).
  std::chrono::steady_clock::time_point ending{};
  bool killed = false;
  while (live > 0) {
    int st = 0;
    const pid_t pid = waitpid(-1, &st, rc != 0 ? WNOHANG : 0);
    if (pid == 0) { // WNOHANG: nobody ended yet
      if (!killed && std::chrono::steady_clock::now() - ending > std::chrono::seconds(10)) {
        std::fprintf(stderr, "%s: error: ranks still running 10 s after SIGTERM; SIGKILL\n",
                     prog);
        endAll(SIGKILL);
        killed = true;
      }
      usleep(100 * 1000);
      continue;
    }
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) continue;
    const int r = (int)(it - pids.begin());
    *it = -1;
    --live;
    const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (code != 0 && rc == 0) {
      rc = code;
      std::fprintf(stderr, "%s: error: rank %d of %d %s %d; ending the other ranks\n", prog, r,
                   (int)ranks, WIFEXITED(st) ? "exited with status" : "was killed by signal",
                   WIFEXITED(st) ? code : code - 128);
      endAll(SIGTERM);
      ending = std::chrono::steady_clock::now();
    }
  }
  return rc;
}

} // namespace
} // namespace tgrt

int tgrt_driver_main(int argc, char** argv, const tgrt_driver_hooks& hooks) {
  using namespace tgrt;
  const char* prog = argc > 0 && argv[0] ? argv[0] : "train";
  // Past a file size limit (ulimit -f) a write should fail with EFBIG, reported like a full
  // disk, instead of the default SIGXFSZ killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // Line-buffered stdout even into a file or pipe (where the C library's default is a block
  // buffer): each step, eval and final line is out as soon as it is printed, so a run that is
  // killed (a job's time limit, SIGKILL) leaves every line it printed in the file.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    Options o = parseArgs(argc, argv);
    if (o.help) {
      std::printf(kUsage, prog);
      return 0;
    }
    if (!hooks.model_info || !hooks.micro_step || !hooks.optimizer_step || !hooks.eval_step)
      throw DriverError("internal: incomplete model hooks");
    const tgrt_model* m = hooks.model_info();
    if (!m) throw DriverError("the model provides no tg_model_info");
    std::string err;
    if (!validateDtypes(*m, &err)) throw DriverError(err);
    if (!(m->loss_scale_init >= 0) || !std::isfinite(m->loss_scale_init))
      throw DriverError("the model's loss_scale_init " + std::to_string(m->loss_scale_init) +
                        " is not a finite number >= 0");
    if (o.info) {
      printInfo(*m);
      return 0;
    }
    if (m->batch_size <= 0 || m->context <= 0 || m->vocab_size <= 0)
      throw DriverError("the model plan has batch_size " + std::to_string(m->batch_size) +
                        ", context " + std::to_string(m->context) + ", vocab_size " +
                        std::to_string(m->vocab_size) + "; all must be positive");
    const bool cuda = std::strcmp(tgrt_backend_name(), "cuda") == 0;
    if (o.gpus > 0 && !cuda)
      throw DriverError("--gpus " + std::to_string(o.gpus) + ": this executable runs on the " +
                            tgrt_backend_name() + " backend; use --ranks N (threads) there",
                        2);
    if (o.ranks > 1 && cuda)
      throw DriverError("--ranks " + std::to_string(o.ranks) + ": the cuda backend runs one "
                        "process per GPU: use --gpus " + std::to_string(o.ranks),
                        2);
    const int64_t compiled = std::max<int32_t>(1, m->ranks);
    const int64_t ranks = o.gpus > 0 ? o.gpus : o.ranks > 0 ? o.ranks : compiled;
    if (ranks != compiled)
      throw DriverError(std::string(o.gpus > 0 ? "--gpus " : "--ranks ") +
                        std::to_string(ranks) + ": this executable was compiled "
                        "for " + std::to_string(compiled) + " rank" + (compiled == 1 ? "" : "s") +
                        " (training.distributed.ranks); recompile with --set "
                        "training.distributed.ranks=" + std::to_string(ranks),
                        2);
    // A launcher (torchrun, mpirun) started this process as one rank of several: it joins
    // the others through the rendezvous at MASTER_ADDR. WORLD_SIZE=1 runs as without one.
    if (!std::getenv("TGRT_NCCL_ID")) {
      LaunchEnv L = launcherEnv(compiled);
      if (L.world > 1) {
        const std::string env = "environment " + L.world_var + "=" + std::to_string(L.world) +
                                " (" + L.launcher + ")";
        if (o.gpus > 0 || o.ranks > 0)
          throw DriverError(std::string(o.gpus > 0 ? "--gpus " : "--ranks ") +
                                std::to_string(ranks) + " and the " + env + " both start "
                                "ranks; with a launcher, start the executable without them",
                            2);
        if (!cuda)
          throw DriverError(env + ": launchers start one process per GPU, but this "
                            "executable runs on the " + tgrt_backend_name() + " backend, "
                            "whose ranks are threads of one process (--ranks N)",
                            2);
        if (L.world != compiled)
          throw DriverError(env + ", but this executable was compiled for " +
                                std::to_string(compiled) + " rank" +
                                (compiled == 1 ? "" : "s") + " (training.distributed.ranks)",
                            2);
        if (o.find_nonfinite)
          throw DriverError("--find-nonfinite (or TGRT_FIND_NONFINITE) is not supported with "
                            "more than one rank yet",
                            2);
        requireMaster(L);
        return runLaunchedRank(o, hooks, *m, L);
      }
    }
    if (ranks == 1) {
      Trainer t(o, hooks, *m);
      return t.run();
    }
    if (o.find_nonfinite)
      throw DriverError("--find-nonfinite (or TGRT_FIND_NONFINITE) is not supported with "
                        "more than one rank yet",
                        2);
    if (cuda) {
      if (std::getenv("TGRT_NCCL_ID")) {
        const LaunchEnv L = launcherEnv(ranks);
        if (L.world != ranks)
          throw DriverError("environment WORLD_SIZE=" + std::to_string(L.world) + ", but this "
                            "executable was compiled for " + std::to_string(ranks) + " ranks",
                            2);
        // The GPU: LOCAL_RANK, or TGRT_LOCAL_DEVICE when `--gpus N` made this rank see only
        // its own GPU (spawnRanks).
        int32_t device = (int32_t)L.local;
        if (const char* d = std::getenv("TGRT_LOCAL_DEVICE"))
          device = (int32_t)std::atoi(d);
        return runNcclRank(o, hooks, *m, (int32_t)L.rank, (int32_t)L.world, device,
                           L.nccl_id);
      }
      return spawnRanks(argv, (int32_t)ranks, prog);
    }
    return runRanks(o, hooks, *m, (int32_t)ranks, prog);
  } catch (const DriverError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    return 1;
  }
}
