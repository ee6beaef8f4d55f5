// Context.cu — the "context (driver)" half of runtime/tgrt.h for CUDA.
//
// A context owns one device allocation per region (persistent, arena, workspace; sizes from
// the model, zero-filled), a small DeviceState allocation (loss sum and count, gradient norm,
// device-side error word), one non-blocking stream and a cuBLASLt handle. Before allocating
// it compares the plan with the free device memory and refuses (NULL) when it cannot fit.
// After allocating, and again when it is destroyed, it reports the device memory: the plan
// against cudaMemGetInfo (what the process took since the context existed) and against NVML
// (the whole process as nvidia-smi shows it, the CUDA context included; libnvidia-ml is
// opened at run time, nothing links it).
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/Power.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#ifndef TGRT_CUDA_EMULATE
#include <dlfcn.h>
#include <unistd.h>
#endif

namespace tgrt_cuda {

// ------------------------------------------------------------------- error helpers --

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

void check(cudaError_t e, const char* loc, const char* what) {
  if (e != cudaSuccess) fail(loc, "%s: %s", what, cudaGetErrorString(e));
}

void checkBlas(cublasStatus_t s, const char* loc, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(loc, "%s: %s", what, cublasLtGetStatusString(s));
}

void checkLowCopy(const char* loc, const char* what, const void* dy, int32_t y_dt,
                  const void* low, int32_t low_dt, int64_t n) {
  if (!low || n <= 0) return;
  if (low == dy) {
    if (low_dt != y_dt) fail(loc, "%s: low equals dy with another dtype", what);
    return;
  }
  const char* lb = static_cast<const char*>(low);
  const char* yb = static_cast<const char*>(dy);
  if (lb < yb + n * tgrt_dtype_size(y_dt) && yb < lb + n * tgrt_dtype_size(low_dt))
    fail(loc, "%s: low overlaps dy without being equal to it", what);
}

void checkNonNegative(const char* loc, const char* what, int64_t a, int64_t b, int64_t c,
                      int64_t d) {
  if (a < 0 || b < 0 || c < 0 || d < 0)
    fail(loc, "negative size in %s (%lld, %lld, %lld, %lld)", what, (long long)a, (long long)b,
         (long long)c, (long long)d);
}

void checkCtx(const Context* ctx, const char* loc) {
  if (!ctx) fail(loc, "NULL context");
}

void checkWorkspace(const Context* ctx, const char* loc, const char* what, int64_t bytes) {
  if (bytes > ctx->region_bytes[TGRT_WORKSPACE])
    fail(loc,
         "workspace too small: %s needs %lld bytes, the plan's workspace region has %lld "
         "(see runtime/cuda/CudaRuntime.h)",
         what, (long long)bytes, (long long)ctx->region_bytes[TGRT_WORKSPACE]);
}

int32_t locIndex(Context* ctx, const char* loc) {
  const char* name = loc ? loc : "?";
  for (size_t i = 0; i < ctx->locs.size(); ++i)
    if (ctx->locs[i] == name) return (int32_t)i;
  ctx->locs.emplace_back(name);
  return (int32_t)ctx->locs.size() - 1;
}

void checkDeviceErrors(Context* ctx) {
  DeviceState s;
  check(cudaMemcpyAsync(&s, ctx->state, sizeof s, cudaMemcpyDeviceToHost, ctx->stream),
        "synchronize", "reading the device error word");
  check(cudaStreamSynchronize(ctx->stream), "synchronize", "cudaStreamSynchronize");
  if (s.error_code == kNoError) return;
  const char* loc = (s.error_loc >= 0 && (size_t)s.error_loc < ctx->locs.size())
                        ? ctx->locs[(size_t)s.error_loc].c_str()
                        : "?";
  switch (s.error_code) {
  case kEmbeddingIdOutOfRange:
    fail(loc, "embedding id %lld at position %lld is outside [0, %lld)", s.error_a, s.error_b,
         s.error_c);
  case kTargetOutOfRange:
    fail(loc, "cross_entropy target %lld at row %lld is outside [0, %lld)", s.error_a,
         s.error_b, s.error_c);
  default: fail(loc, "device error code %d", (int)s.error_code);
  }
}


// ----------------------------------------------------------------------- profiler --
// TGRT_PROFILE=1 (see CudaRuntime.h). Events come from a free list; a step's call events are
// read back (cudaEventElapsedTime) after the stream synchronises, so reading never blocks
// and the event count stays at one step's worth.

bool g_profile = false;

struct Profile {
  struct Row {
    std::string key;
    int64_t calls = 0;
    double ms = 0.0;
  };
  struct Pending {
    int32_t row;
    cudaEvent_t a, b;
  };
  std::vector<Row> rows;
  std::unordered_map<std::string, int32_t> index; ///< raw "fn loc" -> row
  std::vector<cudaEvent_t> freeEvents;
  std::vector<Pending> pending; ///< calls of the open / unread steps
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> pendingSteps;
  cudaEvent_t stepStart = nullptr;
  bool recording = false; ///< inside a counted step
  int64_t stepsSeen = 0;  ///< set_step calls (the first one is warm-up)
  int64_t stepsTimed = 0;
  double stepMs = 0.0;
  std::string device;
  bool printed = false;
};

namespace {

std::vector<Profile*>& liveProfiles() {
  static std::vector<Profile*>* v = new std::vector<Profile*>(); // outlives atexit handlers
  return *v;
}

cudaEvent_t takeEvent(Profile* p) {
  if (!p->freeEvents.empty()) {
    cudaEvent_t e = p->freeEvents.back();
    p->freeEvents.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "profile", "cudaEventCreate");
  return e;
}

/// "layers.11.attn.qkv" -> "layers.*.attn.qkv": every all-digit '.'-separated part is "*".
std::string normaliseLoc(const char* loc) {
  std::string out;
  const char* s = loc ? loc : "?";
  while (*s) {
    const char* e = s;
    while (*e && *e != '.') ++e;
    bool digits = e > s;
    for (const char* q = s; q < e; ++q) digits = digits && *q >= '0' && *q <= '9';
    if (digits) out += '*';
    else out.append(s, e);
    if (*e == '.') {
      out += '.';
      ++e;
    }
    s = e;
  }
  return out;
}

/// Reads back every finished step's events (the stream has been synchronised).
void harvest(Profile* p) {
  for (const auto& c : p->pending) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, c.a, c.b) == cudaSuccess) {
      p->rows[(size_t)c.row].ms += ms;
      p->rows[(size_t)c.row].calls += 1;
    }
    p->freeEvents.push_back(c.a);
    p->freeEvents.push_back(c.b);
  }
  p->pending.clear();
  for (const auto& st : p->pendingSteps) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, st.first, st.second) == cudaSuccess) {
      p->stepMs += ms;
      p->stepsTimed += 1;
    }
    p->freeEvents.push_back(st.first);
    p->freeEvents.push_back(st.second);
  }
  p->pendingSteps.clear();
  cudaGetLastError(); // an unfinished pair (cudaErrorNotReady) is not a launch error
}

/// Ends the open step: its end event goes on the stream (read back after the next sync).
void closeStep(Context* ctx) {
  Profile* p = ctx->prof;
  if (!p->recording) return;
  cudaEvent_t end = takeEvent(p);
  check(cudaEventRecord(end, ctx->stream), "profile", "cudaEventRecord");
  p->pendingSteps.emplace_back(p->stepStart, end);
  p->stepStart = nullptr;
  p->recording = false;
}

void printProfile(Profile* p) {
  if (p->printed) return;
  p->printed = true;
  std::vector<const Profile::Row*> order;
  double callMs = 0.0;
  for (const auto& r : p->rows)
    if (r.calls > 0) {
      order.push_back(&r);
      callMs += r.ms;
    }
  std::sort(order.begin(), order.end(),
            [](const Profile::Row* a, const Profile::Row* b) { return a->ms > b->ms; });
  const double steps = p->stepsTimed > 0 ? (double)p->stepsTimed : 1.0;
  const double stepMs = p->stepMs / steps;
  std::fprintf(stderr,
               "\ntgrt profile (TGRT_PROFILE=1) on %s: %lld steps after 1 warm-up step, "
               "step %.3f ms (events around the whole step), calls %.3f ms per step (%.1f%%; "
               "the rest is the GPU waiting for the host)\n",
               p->device.c_str(), (long long)p->stepsTimed, stepMs, callMs / steps,
               stepMs > 0 ? 100.0 * callMs / steps / stepMs : 0.0);
  std::fprintf(stderr, "%-58s %7s %11s %9s %9s %7s %7s\n", "call (loc, layer = *)", "calls",
               "total ms", "mean ms", "ms/step", "share", "cum");
  double cum = 0.0;
  for (const Profile::Row* r : order) {
    const double share = stepMs > 0 ? 100.0 * r->ms / (stepMs * steps) : 0.0;
    cum += share;
    std::fprintf(stderr, "%-58s %7lld %11.3f %9.4f %9.3f %6.2f%% %6.1f%%\n", r->key.c_str(),
                 (long long)r->calls, r->ms, r->ms / (double)r->calls, r->ms / steps, share, cum);
  }
  // Totals per function (all locs together).
  std::vector<std::pair<std::string, double>> perFn;
  for (const Profile::Row* r : order) {
    const std::string fn = r->key.substr(0, r->key.find(' '));
    bool found = false;
    for (auto& f : perFn)
      if (f.first == fn) {
        f.second += r->ms;
        found = true;
      }
    if (!found) perFn.emplace_back(fn, r->ms);
  }
  std::sort(perFn.begin(), perFn.end(),
            [](const std::pair<std::string, double>& a, const std::pair<std::string, double>& b) {
              return a.second > b.second;
            });
  std::fprintf(stderr, "per function:\n");
  for (const auto& f : perFn)
    std::fprintf(stderr, "  %-30s %9.3f ms/step %6.2f%%\n", f.first.c_str(), f.second / steps,
                 stepMs > 0 ? 100.0 * f.second / (stepMs * steps) : 0.0);
  std::fflush(stderr);
}

void printLiveProfilesAtExit() {
  for (Profile* p : liveProfiles()) printProfile(p); // host data only: no CUDA calls here
}

void profileSetStep(Context* ctx) {
  Profile* p = ctx->prof;
  closeStep(ctx);
  p->stepsSeen += 1;
  if (p->stepsSeen < 2) return; // warm-up
  p->stepStart = takeEvent(p);
  check(cudaEventRecord(p->stepStart, ctx->stream), "profile", "cudaEventRecord");
  p->recording = true;
}

void destroyProfile(Context* ctx) {
  Profile* p = ctx->prof;
  if (!p) return;
  closeStep(ctx);
  if (ctx->stream) cudaStreamSynchronize(ctx->stream);
  harvest(p);
  printProfile(p);
  for (cudaEvent_t e : p->freeEvents) cudaEventDestroy(e);
  auto& live = liveProfiles();
  for (size_t i = 0; i < live.size(); ++i)
    if (live[i] == p) {
      live.erase(live.begin() + (long)i);
      break;
    }
  delete p;
  ctx->prof = nullptr;
}

} // namespace

int64_t profileBegin(Context* ctx, const char* fn, const char* loc) {
  if (!ctx || !ctx->prof || !ctx->prof->recording) return -1;
  Profile* p = ctx->prof;
  std::string raw = fn;
  raw += ' ';
  raw += loc ? loc : "?";
  int32_t row;
  auto it = p->index.find(raw);
  if (it != p->index.end()) {
    row = it->second;
  } else {
    const std::string key = std::string(fn) + " " + normaliseLoc(loc);
    row = -1;
    for (size_t i = 0; i < p->rows.size(); ++i)
      if (p->rows[i].key == key) row = (int32_t)i;
    if (row < 0) {
      p->rows.push_back(Profile::Row{key, 0, 0.0});
      row = (int32_t)p->rows.size() - 1;
    }
    p->index.emplace(raw, row);
  }
  Profile::Pending c{row, takeEvent(p), takeEvent(p)};
  check(cudaEventRecord(c.a, ctx->stream), "profile", "cudaEventRecord");
  p->pending.push_back(c);
  return (int64_t)p->pending.size() - 1;
}

void profileEnd(Context* ctx, int64_t handle) {
  Profile* p = ctx->prof;
  if (!p || handle < 0 || (size_t)handle >= p->pending.size()) return;
  check(cudaEventRecord(p->pending[(size_t)handle].b, ctx->stream), "profile", "cudaEventRecord");
}

// ------------------------------------------------------------------------ context --

namespace {

const char* const kRegionNames[4] = {"persistent", "arena", "workspace", "host"};

/// Checks the region index and the byte range; returns the region base.
char* checkedRange(Context* ctx, const char* what, int32_t region, int64_t offset,
                   int64_t bytes) {
  checkCtx(ctx, what);
  if (region < 0 || region > 3) fail(what, "invalid region index %d", (int)region);
  const int64_t size = ctx->region_bytes[region];
  if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset)
    fail(what, "range [%lld, %lld) outside the %s region of %lld bytes", (long long)offset,
         (long long)offset + (long long)bytes, kRegionNames[region], (long long)size);
  return ctx->regions[region];
}

/// Free device memory (cudaMemGetInfo) when each live context was created, before its plan
/// was allocated, and the context's device: the baseline of the end-of-run report in
/// destroyContext.
struct Baseline {
  size_t freeBytes = 0;
  int device = 0;
};
std::mutex g_baseline_mu;
std::unordered_map<const Context*, Baseline>& freeAtCreation() {
  static std::unordered_map<const Context*, Baseline> m;
  return m;
}

#ifndef TGRT_CUDA_EMULATE
// NVML's types and the functions used, declared here: nvml.h is not installed where the
// runtime is built, and NVML is opened at run time (dlopen) so that neither libtgrt_cuda.a
// nor the emitted programs need it to link or start. Layouts of NVML API version 12 (nvml.h
// of CUDA 12.x): nvmlProcessInfo_v2_t {pid, usedGpuMemory, gpuInstanceId,
// computeInstanceId}, which both nvmlDeviceGetComputeRunningProcesses_v3 and _v2 fill
// (r525's short-lived 32-byte nvmlProcessInfo_t of _v3 aside).
struct NvmlDevice;
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory; ///< bytes; ~0ULL = NVML_VALUE_NOT_AVAILABLE
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlErrorInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

/// libnvidia-ml.so.1 and its entry points, loaded once (`error` says why not).
struct Nvml {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*errorString)(int) = nullptr;
  int (*byPciBusId)(const char*, NvmlDevice**) = nullptr;
  int (*processes)(NvmlDevice*, unsigned int*, NvmlProcessInfo*) = nullptr;
  const char* processesName = "";
  // Power.h's readings; optional (null when the library lacks them: powerSample says so).
  int (*energy)(NvmlDevice*, unsigned long long*) = nullptr;        // mJ
  int (*clock)(NvmlDevice*, int, unsigned int*) = nullptr;          // MHz (type 1: SM)
  int (*maxClock)(NvmlDevice*, int, unsigned int*) = nullptr;       // MHz
  int (*powerLimit)(NvmlDevice*, unsigned int*) = nullptr;          // mW, enforced
  int (*powerUsage)(NvmlDevice*, unsigned int*) = nullptr;          // mW
  std::string error;
};
constexpr int kNvmlClockSm = 1; // nvmlClockType_t NVML_CLOCK_SM

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      n.error = std::string("libnvidia-ml.so.1 cannot be loaded: ") + (e ? e : "?");
      return;
    }
    auto sym = [&](const char* name) -> void* {
      void* f = dlsym(lib, name);
      if (!f && n.error.empty()) n.error = std::string("libnvidia-ml.so.1 lacks ") + name;
      return f;
    };
    n.init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    n.shutdown = reinterpret_cast<int (*)()>(sym("nvmlShutdown"));
    n.errorString = reinterpret_cast<const char* (*)(int)>(sym("nvmlErrorString"));
    n.byPciBusId = reinterpret_cast<int (*)(const char*, NvmlDevice**)>(
        sym("nvmlDeviceGetHandleByPciBusId_v2"));
    n.processesName = "nvmlDeviceGetComputeRunningProcesses_v3";
    void* procs = dlsym(lib, n.processesName);
    if (!procs) {
      n.processesName = "nvmlDeviceGetComputeRunningProcesses_v2";
      procs = sym(n.processesName);
    }
    n.processes =
        reinterpret_cast<int (*)(NvmlDevice*, unsigned int*, NvmlProcessInfo*)>(procs);
    n.energy = reinterpret_cast<int (*)(NvmlDevice*, unsigned long long*)>(
        dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    n.clock = reinterpret_cast<int (*)(NvmlDevice*, int, unsigned int*)>(
        dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.maxClock = reinterpret_cast<int (*)(NvmlDevice*, int, unsigned int*)>(
        dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.powerLimit = reinterpret_cast<int (*)(NvmlDevice*, unsigned int*)>(
        dlsym(lib, "nvmlDeviceGetEnforcedPowerLimit"));
    n.powerUsage = reinterpret_cast<int (*)(NvmlDevice*, unsigned int*)>(
        dlsym(lib, "nvmlDeviceGetPowerUsage"));
  });
  return n;
}

/// nvml() when the library loaded, else null with `why` saying why not.
const Nvml* loadedNvml(std::string& why) {
  const Nvml& n = nvml();
  if (!n.error.empty()) {
    why = n.error;
    return nullptr;
  }
  return &n;
}

/// Sets `why` to "WHAT: NVML's message (code)" and returns false.
bool nvmlFailed(const Nvml& n, const char* what, int r, std::string& why) {
  why = std::string(what) + ": " + (n.errorString(r) ? n.errorString(r) : "?") + " (" +
        std::to_string(r) + ")";
  return false;
}

/// NVML's handle of CUDA device `device`, matched by PCI bus id (written to busId), after
/// n.init(); false (dev null, `why` set) when CUDA or NVML cannot say.
bool nvmlHandleOf(const Nvml& n, int device, NvmlDevice*& dev, char (&busId)[64],
                  std::string& why) {
  dev = nullptr;
  const cudaError_t ce = cudaDeviceGetPCIBusId(busId, (int)sizeof busId, device);
  if (ce != cudaSuccess) {
    why = std::string("cudaDeviceGetPCIBusId: ") + cudaGetErrorString(ce);
    return false;
  }
  const int r = n.byPciBusId(busId, &dev);
  if (r == kNvmlSuccess) return true;
  dev = nullptr;
  return nvmlFailed(n, (std::string("nvmlDeviceGetHandleByPciBusId_v2(") + busId + ")").c_str(),
                    r, why);
}
#endif

/// The reason every NVML reading gives under the CPU emulator.
[[maybe_unused]] constexpr const char* kEmulatorHasNoNvml =
    "the CPU emulator (TGRT_CUDA_EMULATE) has no NVML device";

/// The device memory of this whole process on CUDA device `device` as nvidia-smi shows it
/// (plan, CUDA context, library handles, workspaces: NVML's usedGpuMemory of getpid()'s
/// entry among the device's compute processes; the device is matched by PCI bus id).
/// Returns true and sets `bytes`, or false and sets `why` (no NVML, the process not listed:
/// in a container without the host's PID namespace NVML lists other pids or none, NVML
/// errors; the CPU emulator has no NVML). Never fails the run.
bool processDeviceMemory(int device, unsigned long long& bytes, std::string& why) {
#ifdef TGRT_CUDA_EMULATE
  (void)device;
  (void)bytes;
  why = kEmulatorHasNoNvml;
  return false;
#else
  const Nvml* loaded = loadedNvml(why);
  if (!loaded) return false;
  const Nvml& n = *loaded;
  auto nvmlError = [&](const char* what, int r) { return nvmlFailed(n, what, r, why); };
  int r = n.init();
  if (r != kNvmlSuccess) return nvmlError("nvmlInit_v2", r);
  bool found = false;
  NvmlDevice* dev = nullptr;
  char busId[64] = {0};
  std::vector<NvmlProcessInfo> procs(64);
  unsigned int count = (unsigned int)procs.size();
  if (nvmlHandleOf(n, device, dev, busId, why)) {
    for (int attempt = 0; attempt < 4; ++attempt) { // the list may grow between the calls
      count = (unsigned int)procs.size();
      r = n.processes(dev, &count, procs.data());
      if (r != kNvmlErrorInsufficientSize) break;
      procs.resize((size_t)count + 16);
    }
    if (r != kNvmlSuccess) {
      nvmlError(n.processesName, r);
    } else {
      const unsigned int self = (unsigned int)getpid();
      for (unsigned int i = 0; i < count && !found; ++i)
        if (procs[i].pid == self) {
          found = procs[i].usedGpuMemory != kNvmlValueNotAvailable;
          bytes = procs[i].usedGpuMemory;
          if (!found)
            why = "NVML lists this process (pid " + std::to_string(self) +
                  ") but without a memory figure (NVML_VALUE_NOT_AVAILABLE)";
        }
      if (!found && why.empty()) {
        std::string pids;
        for (unsigned int i = 0; i < count && i < 8; ++i)
          pids += (i ? ", " : "") + std::to_string(procs[i].pid);
        why = "this process (pid " + std::to_string(self) + ") is not among the " +
              std::to_string(count) + " compute process(es) NVML lists on " + busId +
              (count ? " (pids " + pids + (count > 8 ? ", ..." : "") + ")" : "") +
              ": a container without the host's PID namespace sees other pids or none";
      }
    }
  }
  n.shutdown();
  return found;
#endif
}

/// Prints the whole process's device memory (processDeviceMemory) against the plan's
/// `plan` bytes: "tgrt: cuda process memory[ at the end of the run] on DEV (NVML, as
/// nvidia-smi shows it): X bytes = plan P + D outside the plan (...)", or one line saying
/// why it is not available.
void printProcessMemory(const Context* ctx, int device, long long plan, bool atEnd) {
  unsigned long long bytes = 0;
  std::string why;
  const char* when = atEnd ? " at the end of the run" : "";
  if (processDeviceMemory(device, bytes, why))
    std::fprintf(stderr,
                 "tgrt: cuda process memory%s on %s (NVML, as nvidia-smi shows it): %llu "
                 "bytes = plan %lld + %lld outside the plan (CUDA context, library handles, "
                 "workspaces)\n",
                 when, ctx->device_name, bytes, plan, (long long)bytes - plan);
  else
    std::fprintf(stderr,
                 "tgrt: cuda process memory%s on %s: not available from NVML (%s); the "
                 "cudaMemGetInfo figures count from the context's creation, without the CUDA "
                 "context itself\n",
                 when, ctx->device_name, why.c_str());
}

/// Prints "tgrt: ctx_create: <what>: <error>" and returns false when e is an error.
bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "tgrt: ctx_create: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

/// The runtime's switch `name` (an environment variable) as one of `values` (the spellings
/// it takes, each with its setting); unset or empty: `dflt`. Any other value: `dflt`, with a
/// line on stderr naming the variable, its value and the values it takes (a mistyped switch
/// neither stops a training run nor passes unnoticed). Read once, at context creation.
int envChoice(const char* name, std::initializer_list<std::pair<const char*, int>> values,
              int dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  std::string takes;
  for (const auto& [spelling, setting] : values) {
    if (std::strcmp(v, spelling) == 0) return setting;
    takes += takes.empty() ? "" : ", ";
    takes += spelling;
  }
  std::fprintf(stderr, "tgrt: ctx_create: %s=%s is not one of %s; the default runs\n", name, v,
               takes.c_str());
  return dflt;
}

/// A 0 / 1 switch (envChoice): true for "1", false for "0".
bool envFlag(const char* name, bool dflt) {
  return envChoice(name, {{"0", 0}, {"1", 1}}, dflt ? 1 : 0) == 1;
}

/// The runtime's switch `name` as a decimal integer in [lo, hi]; unset or empty: `dflt`;
/// anything else (not a whole number, or outside the range): `dflt`, with a line on stderr.
int envInt(const char* name, int lo, int hi, int dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno == 0 && end && *end == 0 && x >= lo && x <= hi) return (int)x;
  std::fprintf(stderr, "tgrt: ctx_create: %s=%s is not a whole number in [%d, %d]; the default "
               "runs\n", name, v, lo, hi);
  return dflt;
}

} // namespace

/// Power.h.
bool powerSample(int device, PowerSample& s, std::string& why) {
#ifdef TGRT_CUDA_EMULATE
  (void)device;
  (void)s;
  why = kEmulatorHasNoNvml;
  return false;
#else
  const Nvml* loaded = loadedNvml(why);
  if (!loaded) return false;
  const Nvml& n = *loaded;
  if (!n.energy || !n.clock || !n.maxClock || !n.powerLimit || !n.powerUsage) {
    why = "libnvidia-ml.so.1 lacks the energy, clock or power entry points";
    return false;
  }
  // One NVML session and one handle per device for the process (never shut down: a
  // calibration reads thousands of samples).
  static std::mutex mu;
  static bool initialised = false;
  static std::unordered_map<int, NvmlDevice*> handles;
  std::lock_guard<std::mutex> lock(mu);
  auto fail = [&](const char* what, int r) { return nvmlFailed(n, what, r, why); };
  if (!initialised) {
    const int r = n.init();
    if (r != kNvmlSuccess) return fail("nvmlInit_v2", r);
    initialised = true;
  }
  NvmlDevice*& dev = handles[device];
  char busId[64] = {0};
  if (!dev && !nvmlHandleOf(n, device, dev, busId, why)) return false;
  unsigned long long mj = 0;
  unsigned int mhz = 0, maxMhz = 0, limit = 0, usage = 0;
  int r = n.energy(dev, &mj);
  if (r != kNvmlSuccess) return fail("nvmlDeviceGetTotalEnergyConsumption", r);
  if ((r = n.clock(dev, kNvmlClockSm, &mhz)) != kNvmlSuccess) return fail("nvmlDeviceGetClockInfo", r);
  if ((r = n.maxClock(dev, kNvmlClockSm, &maxMhz)) != kNvmlSuccess)
    return fail("nvmlDeviceGetMaxClockInfo", r);
  if ((r = n.powerLimit(dev, &limit)) != kNvmlSuccess)
    return fail("nvmlDeviceGetEnforcedPowerLimit", r);
  if ((r = n.powerUsage(dev, &usage)) != kNvmlSuccess) return fail("nvmlDeviceGetPowerUsage", r);
  s.energyJ = (double)mj / 1e3;
  s.smMhz = mhz;
  s.maxSmMhz = maxMhz;
  s.limitW = (double)limit / 1e3;
  s.powerW = (double)usage / 1e3;
  return true;
#endif
}

Context* createContext(const tgrt_model* model) {
  if (!model) {
    std::fprintf(stderr, "tgrt: ctx_create: NULL model\n");
    return nullptr;
  }
  const int64_t sizes[4] = {model->persistent_bytes, model->arena_bytes, model->workspace_bytes,
                            model->host_bytes};
  for (int r = 0; r < 4; ++r)
    if (sizes[r] < 0) {
      std::fprintf(stderr, "tgrt: ctx_create: negative %s size %lld bytes\n", kRegionNames[r],
                   (long long)sizes[r]);
      return nullptr;
    }
  Context* ctx = new (std::nothrow) Context();
  if (!ctx) {
    std::fprintf(stderr, "tgrt: ctx_create: out of host memory for the context\n");
    return nullptr;
  }
  ctx->model = model;
  ctx->lr = model->lr;
  tgrt_values_range(model, &ctx->values_lo, &ctx->values_hi);
  ctx->tf32 = envFlag("TGRT_TF32", false);
  // TGRT_GELU_EPILOGUE=1/0 forces the fused GELU epilogue on or off for every dtype; unset:
  // on for f32 only with TF32, on for bf16 / f16.
  const int geluEpilogue = envChoice("TGRT_GELU_EPILOGUE", {{"0", 0}, {"1", 1}}, -1);
  ctx->gelu_epilogue = geluEpilogue >= 0 ? geluEpilogue == 1 : ctx->tf32;
  ctx->gelu_epilogue_low = geluEpilogue >= 0 ? geluEpilogue == 1 : true;
#ifdef TGRT_CUDA_EMULATE
  const int ownGemmDefault = 0; // timing emulated kernels tells nothing; tests force it (2)
#else
  const int ownGemmDefault = 1;
#endif
  ctx->own_gemm = envChoice("TGRT_OWN_GEMM", {{"0", 0}, {"1", 1}, {"2", 2}}, ownGemmDefault);
  ctx->dgelu_epilogue = envChoice("TGRT_DGELU_EPILOGUE", {{"0", 0}, {"1", 1}, {"2", 2}}, 1);
  // 0: the heuristic's first; 1 (default): its candidates timed; 2: also the tile
  // configurations of addTileCandidates (Kernels.cu; opt-in: docs/results.md 2026-11-29,
  // night, measured it 0.4% faster at GPT-2 small, 0.6% slower at head dim 128).
  // 3: mode 2's candidates timed sustained at the power limit (Kernels.cu ltTune; opt-in).
  ctx->gemm_autotune = envChoice("TGRT_GEMM_AUTOTUNE", {{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}}, 1);
  ctx->gemm_tune_calls = envInt("TGRT_GEMM_TUNE_CALLS", 1, 1000, ctx->gemm_tune_calls);
  if (const char* cache = std::getenv("TGRT_GEMM_TUNE_CACHE")) {
    ctx->gemm_tune_path = cache;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    ctx->gemm_tune_path = std::string(xdg) + "/tgc/gemm-tune.txt";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    ctx->gemm_tune_path = std::string(home) + "/.cache/tgc/gemm-tune.txt";
  }
  ctx->bgrad_epilogue = envFlag("TGRT_BGRAD_EPILOGUE", false);
  ctx->bgrad_chunks = envInt("TGRT_BGRAD_CHUNKS", 1, 256, 0);
  ctx->ln_bwd_reload = envFlag("TGRT_LN_BWD_RELOAD", true);
  ctx->adamw_f32 = envChoice("TGRT_ADAMW_MATH", {{"f64", 0}, {"f32", 1}}, 1) == 1;
  ctx->adamw_blocks = envInt("TGRT_ADAMW_BLOCKS", 1, 2147483647, ctx->adamw_blocks);
  ctx->ce_fast = envChoice("TGRT_CE_FAST", {{"auto", -1}, {"0", 0}, {"6", 6}, {"7", 7}}, -1);
  ctx->graphs_enabled = envFlag("TGRT_CUDA_GRAPH", true);
  ctx->sync_each = envFlag("TGRT_CUDA_SYNC", false);
  ctx->pdl = envFlag("TGRT_PDL", true);
  ctx->attn_wgmma = envFlag("TGRT_ATTN_WGMMA", true);
  ctx->attn_tune = envFlag("TGRT_ATTN_TUNE", true);
  // Off without GEMM tuning, and with TGRT_PROFILE (below: its own events time every call).
  ctx->step_tune = envFlag("TGRT_GEMM_STEP_TUNE", false) && ctx->gemm_autotune > 0;
  ctx->attn_tune_log = envFlag("TGRT_ATTN_TUNE_LOG", false);
  // The bf16 / f16 attention's implementation: the compiler's choice (tgrt_model.
  // attention_impl: training.attention.impl, whose workspace the plan holds), unless
  // TGRT_ATTN=own | cudnn | cudnn-det says otherwise.
  if (model->attention_impl == 1) {
#ifdef TGRT_HAVE_CUDNN
    ctx->attn_impl = (int)AttentionImpl::Cudnn;
#else
    if (!std::getenv("TGRT_ATTN"))
      std::fprintf(stderr, "tgrt: ctx_create: the program asks for cuDNN attention "
                   "(training.attention.impl); this runtime was built without cuDNN; the own "
                   "attention kernels run\n");
#endif
  }
  // TGRT_ATTN as every switch (envChoice): a value it does not take is named and the
  // compiled choice runs (before 2026-11-30 such a value fell back to the own kernels).
  ctx->attn_impl = envChoice("TGRT_ATTN",
                             {{"own", (int)AttentionImpl::Own},
                              {"cudnn", (int)AttentionImpl::Cudnn},
                              {"cudnn-det", (int)AttentionImpl::CudnnDeterministic}},
                             ctx->attn_impl);
#ifndef TGRT_HAVE_CUDNN
  if (ctx->attn_impl != (int)AttentionImpl::Own) {
    std::fprintf(stderr, "tgrt: ctx_create: TGRT_ATTN=%s: this runtime was built without "
                 "cuDNN; the own attention kernels run\n", std::getenv("TGRT_ATTN"));
    ctx->attn_impl = (int)AttentionImpl::Own;
  }
#endif

  int device = 0;
  cudaDeviceProp prop;
  if (!ok(cudaGetDevice(&device), "cudaGetDevice") ||
      !ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties")) {
    delete ctx;
    return nullptr;
  }
  std::snprintf(ctx->device_name, sizeof ctx->device_name, "%s", prop.name);
  ctx->sm_count = prop.multiProcessorCount;
  ctx->l2_bytes = prop.l2CacheSize;
  // The wgmma kernels are compiled for sm_90a only (CMakeLists.txt): Hopper.
  ctx->attn_wgmma_ok = prop.major == 9 && prop.minor == 0;
  ctx->attn_wgmma = ctx->attn_wgmma && ctx->attn_wgmma_ok;
  ctx->pdl = ctx->pdl && prop.major >= 9; // griddepcontrol: sm_90 on

  size_t freeBytes = 0, totalBytes = 0;
  if (!ok(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo")) {
    delete ctx;
    return nullptr;
  }
  const int64_t need = sizes[0] + sizes[1] + sizes[2];
  if ((uint64_t)need + sizeof(DeviceState) > (uint64_t)freeBytes) {
    std::fprintf(stderr,
                 "tgrt: plan needs %lld bytes (persistent %lld + arena %lld + workspace %lld) "
                 "but only %llu bytes are free on %s (of %llu): compile with a smaller "
                 "micro-batch (tgc plan SPEC --max-batch --memory %llu) or with "
                 "training.checkpointing \"auto\" and --memory %llu, which picks the fastest "
                 "policy that fits\n",
                 (long long)need, (long long)sizes[0], (long long)sizes[1], (long long)sizes[2],
                 (unsigned long long)freeBytes, ctx->device_name, (unsigned long long)totalBytes,
                 (unsigned long long)totalBytes, (unsigned long long)totalBytes);
    delete ctx;
    return nullptr;
  }
  bool good = true;
  for (int r = 0; r < 3 && good; ++r) {
    // A zero-sized region still gets a distinct, non-NULL base.
    const size_t bytes = sizes[r] > 0 ? (size_t)sizes[r] : 256;
    void* p = nullptr;
    good = ok(cudaMalloc(&p, bytes), kRegionNames[r]) &&
           ok(cudaMemset(p, 0, bytes), "zero-filling a region");
    ctx->regions[r] = static_cast<char*>(p);
    ctx->region_bytes[r] = sizes[r];
  }
  if (good && sizes[TGRT_HOST] > 0) {
    // CPU offload: the AdamW moments in pinned host memory (not counted in `need`).
    void* p = nullptr;
    good = ok(cudaMallocHost(&p, (size_t)sizes[TGRT_HOST]), "host region (cudaMallocHost)");
    if (good) std::memset(p, 0, (size_t)sizes[TGRT_HOST]);
    ctx->regions[TGRT_HOST] = static_cast<char*>(p);
    ctx->region_bytes[TGRT_HOST] = sizes[TGRT_HOST];
  }
  if (good) {
    void* p = nullptr;
    good = ok(cudaMalloc(&p, sizeof(DeviceState)), "context state") &&
           ok(cudaMemset(p, 0, sizeof(DeviceState)), "zero-filling the context state");
    ctx->state = static_cast<DeviceState*>(p);
  }
  good = good && ok(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags");
  if (good) {
    const cublasStatus_t s = cublasLtCreate(&ctx->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "tgrt: ctx_create: cublasLtCreate: %s\n", cublasLtGetStatusString(s));
      good = false;
    }
  }
  good = good && ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (!good) {
    destroyContext(ctx);
    return nullptr;
  }
  if (envFlag("TGRT_PROFILE", false)) {
    ctx->step_tune = false;
    ctx->prof = new Profile();
    ctx->prof->device = ctx->device_name;
    static bool hooked = false;
    if (!hooked) {
      hooked = true;
      std::atexit(printLiveProfilesAtExit);
    }
    liveProfiles().push_back(ctx->prof);
    g_profile = true;
  }
  // Planned bytes versus what the device actually gave up (cudaMemGetInfo before/after;
  // the CUDA context itself already existed at the first reading).
  size_t freeAfter = 0;
  if (cudaMemGetInfo(&freeAfter, &totalBytes) == cudaSuccess)
    std::fprintf(stderr,
                 "tgrt: cuda memory on %s: plan %lld bytes (persistent %lld + arena %lld + "
                 "workspace %lld); device memory used %lld bytes; overhead %lld bytes "
                 "(context state, stream, cuBLASLt handle, allocation granularity)\n",
                 ctx->device_name, (long long)need, (long long)sizes[0], (long long)sizes[1],
                 (long long)sizes[2], (long long)(freeBytes - freeAfter),
                 (long long)(freeBytes - freeAfter) - (long long)need);
  // The whole process as nvidia-smi sees it (the CUDA context included), now that the plan
  // is allocated.
  printProcessMemory(ctx, device, need, /*atEnd=*/false);
  {
    std::lock_guard<std::mutex> lock(g_baseline_mu);
    freeAtCreation()[ctx] = Baseline{freeBytes, device};
  }
  return ctx;
}

void destroyContext(Context* ctx) {
  if (!ctx) return;
  destroyProfile(ctx);
  if (ctx->stream) cudaStreamSynchronize(ctx->stream);
  // At the end of the run, before anything is freed: the device memory the whole process took
  // since the context's creation (cudaMemGetInfo: free then minus free now), i.e. the plan
  // plus the context state, stream, library handles and whatever was allocated beside the
  // plan since (cuBLASLt / cuDNN workspaces, NCCL buffers). Other processes on the device
  // count too. (Not "cuda memory on ...: plan N bytes ... used": scripts parse the start-up
  // line by that pattern.)
  // Then the same through NVML: the whole process, the CUDA context included.
  Baseline baseline;
  bool created = false; // fully created (a half-built context has no baseline)
  {
    std::lock_guard<std::mutex> lock(g_baseline_mu);
    auto it = freeAtCreation().find(ctx);
    if (it != freeAtCreation().end()) {
      baseline = it->second;
      created = true;
      freeAtCreation().erase(it);
    }
  }
  const long long plan = (long long)(ctx->region_bytes[TGRT_PERSISTENT] +
                                     ctx->region_bytes[TGRT_ARENA] +
                                     ctx->region_bytes[TGRT_WORKSPACE]);
  size_t freeNow = 0, totalNow = 0;
  if (created && baseline.freeBytes > 0 && cudaMemGetInfo(&freeNow, &totalNow) == cudaSuccess) {
    const long long used = (long long)baseline.freeBytes - (long long)freeNow;
    std::fprintf(stderr,
                 "tgrt: cuda memory at the end of the run on %s: device memory in use %lld "
                 "bytes since the context's creation, beside the plan's %lld bytes: %lld "
                 "bytes more (context state, stream, library handles, workspaces allocated "
                 "beside the plan, allocation granularity)\n",
                 ctx->device_name, used, plan, used - plan);
  }
  if (created) printProcessMemory(ctx, baseline.device, plan, /*atEnd=*/true);
#ifdef TGRT_HAVE_CUDNN
  destroyCudnn(ctx);
#endif
  for (auto& g : ctx->graph_slots)
    if (g.exec) cudaGraphExecDestroy(g.exec);
  if (ctx->gemm_timed > 0 || ctx->gemm_cached > 0)
    std::fprintf(stderr,
                 "tgrt: cuBLASLt algorithms: %d GEMM shapes timed this run, %d taken from the "
                 "tuning cache %s (TGRT_GEMM_AUTOTUNE=0: the heuristic's first)\n",
                 ctx->gemm_timed, ctx->gemm_cached,
                 ctx->gemm_tune_path.empty() ? "(none)" : ctx->gemm_tune_path.c_str());
  if (ctx->own_gemm_timed > 0)
    std::fprintf(stderr,
                 "tgrt: own GEMM (TGRT_OWN_GEMM=1): faster than cuBLASLt at %d of %d epilogue GEMM "
                 "shapes timed this run\n",
                 ctx->own_gemm_chosen, ctx->own_gemm_timed);
  for (auto& entry : ctx->plans) {
    MatmulPlan& p = entry.second;
    if (p.la) cublasLtMatrixLayoutDestroy(p.la);
    if (p.lb) cublasLtMatrixLayoutDestroy(p.lb);
    if (p.lc) cublasLtMatrixLayoutDestroy(p.lc);
    if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  }
  if (ctx->lt) cublasLtDestroy(ctx->lt);
  if (ctx->stream) cudaStreamSynchronize(ctx->stream); // staged copies still in flight
  for (Context::StepTiming& t : ctx->step_pending) {
    cudaEventDestroy(t.e0);
    cudaEventDestroy(t.e1);
  }
  for (cudaEvent_t e : ctx->step_events) cudaEventDestroy(e);
  for (Context::Staging& s : ctx->staging) {
    if (s.buf) cudaFreeHost(s.buf);
    if (s.done) cudaEventDestroy(s.done);
  }
  if (ctx->stream) cudaStreamDestroy(ctx->stream);
  for (int r = 0; r < 3; ++r)
    if (ctx->regions[r]) cudaFree(ctx->regions[r]);
  if (ctx->regions[TGRT_HOST]) cudaFreeHost(ctx->regions[TGRT_HOST]);
  if (ctx->state) cudaFree(ctx->state);
  delete ctx;
}

char* region(Context* ctx, int32_t r) {
  checkCtx(ctx, "region");
  if (r < 0 || r > 3) fail("region", "invalid region index %d", (int)r);
  return ctx->regions[r];
}

namespace {
/// An upload into the persistent region's parameter values: the weights' low-precision
/// copies are stale until the next step recasts them (tgrt_take_weights_stale).
void noteUploaded(Context* ctx, int32_t r, int64_t offset, int64_t bytes) {
  if (r == TGRT_PERSISTENT && offset < ctx->values_hi && offset + bytes > ctx->values_lo)
    ctx->weights_stale = true;
}
} // namespace

void upload(Context* ctx, int32_t r, int64_t offset, const void* src, int64_t bytes) {
  char* base = checkedRange(ctx, "upload", r, offset, bytes);
  if (bytes == 0) return;
  if (r == TGRT_HOST) { // host memory: after the work that may still read it
    check(cudaStreamSynchronize(ctx->stream), "upload", "cudaStreamSynchronize");
    std::memcpy(base + offset, src, (size_t)bytes);
    return;
  }
  check(cudaMemcpyAsync(base + offset, src, (size_t)bytes, cudaMemcpyHostToDevice, ctx->stream),
        "upload", "cudaMemcpyAsync");
  check(cudaStreamSynchronize(ctx->stream), "upload", "cudaStreamSynchronize");
  noteUploaded(ctx, r, offset, bytes);
}

void uploadAsync(Context* ctx, int32_t r, int64_t offset, const void* src, int64_t bytes) {
  char* base = checkedRange(ctx, "upload_async", r, offset, bytes);
  if (ctx->capturing) // a graph would replay the staging buffer's later contents
    fail("upload_async", "called while tgrt_run_graph captures the step; stage the batch "
                         "before or after the graph's call");
  if (bytes == 0 || r == TGRT_HOST) { // host memory is written by the host: in stream order
    upload(ctx, r, offset, src, bytes);
    return;
  }
  Context::Staging& s = ctx->staging[ctx->staging_next];
  ctx->staging_next = (ctx->staging_next + 1) % Context::kStagingSlots;
  if (s.done) // the buffer's previous copy must have left it
    check(cudaEventSynchronize(s.done), "upload_async", "cudaEventSynchronize");
  else
    check(cudaEventCreate(&s.done), "upload_async", "cudaEventCreate");
  if (s.bytes < bytes) {
    if (s.buf) check(cudaFreeHost(s.buf), "upload_async", "cudaFreeHost");
    s.buf = nullptr;
    s.bytes = 0;
    void* p = nullptr;
    check(cudaMallocHost(&p, (size_t)bytes), "upload_async", "cudaMallocHost");
    s.buf = static_cast<char*>(p);
    s.bytes = bytes;
  }
  std::memcpy(s.buf, src, (size_t)bytes);
  check(cudaMemcpyAsync(base + offset, s.buf, (size_t)bytes, cudaMemcpyHostToDevice, ctx->stream),
        "upload_async", "cudaMemcpyAsync");
  check(cudaEventRecord(s.done, ctx->stream), "upload_async", "cudaEventRecord");
  noteUploaded(ctx, r, offset, bytes);
}

int32_t takeWeightsStale(Context* ctx) {
  checkCtx(ctx, "take_weights_stale");
  const bool stale = ctx->weights_stale;
  ctx->weights_stale = false;
  ctx->reads_stale = true;
  return stale ? 1 : 0;
}

void download(Context* ctx, int32_t r, int64_t offset, void* dst, int64_t bytes) {
  char* base = checkedRange(ctx, "download", r, offset, bytes);
  checkDeviceErrors(ctx);
  if (bytes == 0) return;
  if (r == TGRT_HOST) {
    check(cudaStreamSynchronize(ctx->stream), "download", "cudaStreamSynchronize");
    std::memcpy(dst, base + offset, (size_t)bytes);
    return;
  }
  check(cudaMemcpyAsync(dst, base + offset, (size_t)bytes, cudaMemcpyDeviceToHost, ctx->stream),
        "download", "cudaMemcpyAsync");
  check(cudaStreamSynchronize(ctx->stream), "download", "cudaStreamSynchronize");
}

void synchronize(Context* ctx) {
  checkCtx(ctx, "synchronize");
  if (ctx->prof) closeStep(ctx);
  check(cudaStreamSynchronize(ctx->stream), "synchronize", "cudaStreamSynchronize");
  if (ctx->prof) harvest(ctx->prof);
  stepTuneHarvest(ctx);
  checkDeviceErrors(ctx);
}

void setStep(Context* ctx, int64_t step) {
  checkCtx(ctx, "set_step");
  ctx->step = step;
  if (ctx->prof) profileSetStep(ctx);
}

void setLr(Context* ctx, float lr) {
  checkCtx(ctx, "set_lr");
  ctx->lr = lr;
}

void setLossScale(Context* ctx, float scale) {
  checkCtx(ctx, "set_loss_scale");
  if (!(scale > 0.0f) || !std::isfinite(scale))
    fail("set_loss_scale", "loss scale %g must be positive and finite", (double)scale);
  ctx->loss_scale = scale;
  ctx->loss_scaling = true;
}

void setMicroBatch(Context* ctx, int32_t index) {
  checkCtx(ctx, "set_micro_batch");
  ctx->micro_batch = index;
}

namespace {
/// Why slot's work cannot be captured now, or NULL (see runGraph).
const char* graphRefusal(Context* ctx) {
  if (!ctx->graphs_enabled) return "TGRT_CUDA_GRAPH=0";
  if (ctx->prof) return "TGRT_PROFILE=1 times every call";
  if (ctx->sync_each) return "TGRT_CUDA_SYNC=1 synchronises after every launch";
  if (ctx->comm_attached) return "a communicator is attached (its collectives synchronise)";
  if (ctx->region_bytes[TGRT_HOST] > 0) return "optimizer offload moves data through the host";
  if (ctx->loss_scaling) return "dynamic loss scaling changes the loss scale between steps";
  return nullptr;
}
} // namespace

void setGemmAutotune(Context* ctx, int mode, const char* cachePath) {
  checkCtx(ctx, "set_gemm_autotune");
  ctx->gemm_autotune = mode;
  ctx->gemm_tune_path = cachePath ? cachePath : "";
  ctx->gemm_tune_loaded = false;
  ctx->gemm_tune_cache.clear();
}

void gemmTuneCounts(Context* ctx, int* timed, int* cached) {
  checkCtx(ctx, "gemm_tune_counts");
  if (timed) *timed = ctx->gemm_timed;
  if (cached) *cached = ctx->gemm_cached;
}

bool setSyncEach(Context* ctx, bool on) {
  checkCtx(ctx, "set_sync_each");
  const bool was = ctx->sync_each;
  ctx->sync_each = on;
  return was;
}

int32_t runGraph(Context* ctx, int32_t slot, void (*fn)(tgrt_ctx*)) {
  checkCtx(ctx, "run_graph");
  if (slot < 0 || slot >= kGraphSlots)
    fail("run_graph", "slot %d outside [0, %d)", (int)slot, kGraphSlots);
  if (!fn) fail("run_graph", "NULL function");
  tgrt_ctx* c = reinterpret_cast<tgrt_ctx*>(ctx);
  Context::GraphSlot& g = ctx->graph_slots[slot];
  // Call by call: a refused slot; parameter values the host wrote while the compiled steps
  // keep working copies (the step's first part refreshes them, the captured work does not);
  // checking mode; GEMM candidates still timed in the step (TGRT_GEMM_STEP_TUNE: the slot is
  // captured once they are decided).
  if (g.state == 2 || (ctx->weights_stale && ctx->reads_stale) || tgrt_check_enabled(c) ||
      ctx->step_tune_active) {
    fn(c);
    return 0;
  }
  if (g.state == 0) {
    const char* why = graphRefusal(ctx);
    if (!why) {
      check(cudaGetLastError(), "run_graph", "an earlier launch");
      check(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal), "run_graph",
            "cudaStreamBeginCapture");
      ctx->capturing = true;
      ctx->capture_unsafe = nullptr;
      fn(c);
      ctx->capturing = false;
      cudaGraph_t graph = nullptr;
      const cudaError_t e = cudaStreamEndCapture(ctx->stream, &graph);
      why = ctx->capture_unsafe;
      if (e != cudaSuccess && !why) why = cudaGetErrorString(e);
      if (!why) {
        cudaGraphGetNodes(graph, nullptr, &g.nodes);
        if (cudaGraphInstantiate(&g.exec, graph, 0) != cudaSuccess) {
          g.exec = nullptr;
          why = "cudaGraphInstantiate failed";
        }
      }
      if (graph) cudaGraphDestroy(graph);
      (void)cudaGetLastError(); // a refused capture's error is not the next call's
    }
    if (why) {
      g.state = 2;
      std::fprintf(stderr, "tgrt: run_graph: slot %d runs call by call, not as a CUDA graph: %s\n",
                   (int)slot, why);
      fn(c); // capturing ran nothing
      return 0;
    }
    g.state = 1;
    std::fprintf(stderr,
                 "tgrt: run_graph: slot %d captured as a CUDA graph of %zu nodes; later calls "
                 "replay it (TGRT_CUDA_GRAPH=0: call by call)\n",
                 (int)slot, g.nodes);
  }
  check(cudaGraphLaunch(g.exec, ctx->stream), "run_graph", "cudaGraphLaunch");
  if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), "run_graph", "cudaGraphLaunch");
  return 1;
}

double takeLoss(Context* ctx, int64_t* count) {
  checkCtx(ctx, "take_loss");
  checkDeviceErrors(ctx);
  DeviceState s;
  check(cudaMemcpyAsync(&s, ctx->state, sizeof s, cudaMemcpyDeviceToHost, ctx->stream),
        "take_loss", "cudaMemcpyAsync");
  check(cudaStreamSynchronize(ctx->stream), "take_loss", "cudaStreamSynchronize");
  // loss_sum and loss_count are the first two fields: reset just those.
  check(cudaMemsetAsync(ctx->state, 0, sizeof(double) + sizeof(long long), ctx->stream),
        "take_loss", "cudaMemsetAsync");
  if (count) *count = (int64_t)s.loss_count;
  return s.loss_sum;
}

float lastGradNorm(Context* ctx) {
  checkCtx(ctx, "last_grad_norm");
  DeviceState s;
  check(cudaMemcpyAsync(&s, ctx->state, sizeof s, cudaMemcpyDeviceToHost, ctx->stream),
        "last_grad_norm", "cudaMemcpyAsync");
  check(cudaStreamSynchronize(ctx->stream), "last_grad_norm", "cudaStreamSynchronize");
  return s.grad_norm;
}

void* stream(Context* ctx) {
  checkCtx(ctx, "stream");
  return static_cast<void*>(ctx->stream);
}

const char* deviceName(Context* ctx) {
  checkCtx(ctx, "device_name");
  return ctx->device_name;
}

} // namespace tgrt_cuda
