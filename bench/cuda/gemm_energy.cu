// gemm_energy: under the board's power limit, which cuBLASLt configuration of a GEMM is the
// fastest? A training step of Llama 3.2 1B runs at the H200's 700 W limit (median SM clock
// ~1500 MHz against 1980 unlimited; docs/results.md 2026-12-03), so a GEMM's time in the step
// is set by the energy it spends per call, not by its speed at the boost clock where the
// runtime's tuner times candidates (a few back-to-back calls, too short for the limit to act).
// A configuration that moves fewer bytes through L2 and shared memory per FLOP (larger tiles,
// clusters that multicast) could spend less energy and so run faster under the limit even when
// it is slower alone.
//
// For each GEMM of a Llama 3.2 1B step (8192 tokens, d_model 2048, d_ff 8192, 32 / 8 heads of
// 64, vocabulary 128256 in 4 loss chunks of 2048 rows; bf16 operands of random values, tgc's
// mapping as in gemm_bench.h):
//   1. the heuristic's candidates (up to 16, as Kernels.cu ltTune) are timed alone as the
//      tuner does (one warm-up, median of 3 runs of 5 calls); the tuner's pick is the fastest;
//   2. configurations of the heuristic's first two algorithm ids (tiles of at least 128 x 128,
//      clusters 1x1 / 2x1 / 1x2 / 2x2, custom options 0-3, checked by cublasLtMatmulAlgoCheck)
//      are timed alone briefly; the 5 fastest join the heuristic's 5 fastest as finalists;
//   3. each finalist runs sustained, back to back, for `secs` seconds (the first 35% not
//      counted), in two rounds (the finalists' order, then reversed), after a 2 s heat-up at
//      the power limit: ms per call from events, joules per call from NVML's energy counter,
//      the mean SM clock and power sampled every 10 ms by a second thread.
// Prints per shape every finalist's alone ms, sustained ms (median of the two rounds), J per
// call, TFLOP/s, MHz and W; then a table: the tuner's pick against the best sustained, and the
// step time the difference would save (calls per step x ms).
//
// Build (CPU machine): nvcc -O2 -std=c++17 -arch=sm_90 bench/cuda/gemm_energy.cu -lcublasLt
//   -ldl -o runs/gemm_energy.   Run (GPU): runs/gemm_energy [secs per run, default 1.0]
//   [shape name substring]
#include "gemm_bench.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct TileDims {
  int id, rows, cols;
};
const TileDims kTiles[] = {
#include "../../runtime/cuda/LtTiles.inc"
};

/// NVML through dlopen (no nvml.h in the toolkit here): device 0's energy counter (mJ), SM
/// clock (MHz) and power (mW).
struct Nvml {
  void* dev = nullptr;
  int (*energy)(void*, unsigned long long*) = nullptr;
  int (*clock)(void*, int, unsigned int*) = nullptr;
  int (*power)(void*, unsigned int*) = nullptr;
  bool ok = false;
  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto byIndex = reinterpret_cast<int (*)(unsigned, void**)>(
        dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    energy = reinterpret_cast<int (*)(void*, unsigned long long*)>(
        dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    clock = reinterpret_cast<int (*)(void*, int, unsigned int*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    power = reinterpret_cast<int (*)(void*, unsigned int*)>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    ok = init && byIndex && energy && clock && power && init() == 0 && byIndex(0, &dev) == 0;
  }
  double joules() const {
    unsigned long long mj = 0;
    return ok && energy(dev, &mj) == 0 ? (double)mj / 1e3 : 0.0;
  }
  double mhz() const {
    unsigned int v = 0;
    return ok && clock(dev, 1 /*NVML_CLOCK_SM*/, &v) == 0 ? v : 0.0;
  }
  double watts() const {
    unsigned int v = 0;
    return ok && power(dev, &v) == 0 ? v / 1e3 : 0.0;
  }
};


/// Random bf16 values in [-scale, scale) (a hash of the index): operands whose bits toggle as
/// a real step's do (a constant fill draws far less power in the tensor cores).
__global__ void fillRandom(uint16_t* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    const float v = ((float)(h >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    p[i] = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
}

struct Finalist {
  cublasLtMatmulAlgo_t algo;
  std::string source; // "h3" (the heuristic's 4th) or "cfg"
  float aloneMs = 0;
  std::vector<float> ms, joules, mhz, watts;
};

float median(std::vector<float> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const double secs = argc > 1 ? std::atof(argv[1]) : 1.0;
  const char* only = argc > 2 ? argv[2] : nullptr;
  const size_t ws = 64ull << 20;
  struct Case {
    Shape s;
    int perStep; // calls of this GEMM per training step
  };
  // Llama 3.2 1B, batch 4 x 2048 (examples/llama3.2-1b.json), tgc's mapping.
  const std::vector<Case> cases = {
      {{"fwd mlp.fc (gate+up)", 8192, 16384, 2048, 0, 0, false, 0.f, kNone}, 16},
      {{"bwd mlp.fc dX", 8192, 2048, 16384, 0, 1, false, 0.f, kNone}, 16},
      {{"wgrad mlp.fc", 2048, 16384, 8192, 1, 0, false, 0.f, kNone}, 16},
      {{"loss logits (2048 rows)", 2048, 128256, 2048, 0, 1, false, 0.f, kNone}, 4},
      {{"loss dX (2048 rows)", 2048, 2048, 128256, 0, 0, false, 0.f, kNone}, 4},
      {{"loss dW (f32, accumulate)", 128256, 2048, 2048, 1, 0, true, 1.f, kNone}, 4},
      {{"fwd mlp.proj (residual f32)", 8192, 2048, 8192, 0, 0, true, 1.f, kNone}, 16},
      {{"bwd mlp.proj dX", 8192, 8192, 2048, 0, 1, false, 0.f, kNone}, 16},
      {{"wgrad mlp.proj", 8192, 2048, 8192, 1, 0, false, 0.f, kNone}, 16},
      {{"fwd qkv", 8192, 3072, 2048, 0, 0, false, 0.f, kNone}, 16},
      {{"bwd qkv dX", 8192, 2048, 3072, 0, 1, false, 0.f, kNone}, 16},
      {{"wgrad qkv", 2048, 3072, 8192, 1, 0, false, 0.f, kNone}, 16},
      {{"fwd attn.proj (residual f32)", 8192, 2048, 2048, 0, 0, true, 1.f, kNone}, 16},
  };
  std::vector<Shape> shapes;
  for (const Case& c : cases) shapes.push_back(c.s);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const Nvml nvml;
  std::printf("gemm_energy on %s (%d SMs), cuBLASLt %zu, %.2f s per sustained run, NVML %s\n",
              prop.name, prop.multiProcessorCount, (size_t)cublasLtGetVersion(), secs,
              nvml.ok ? "ok" : "MISSING (no joules, clocks or watts)");
  const GemmBuffers buf(shapes, ws);
  size_t maxBytes = 0;
  for (const Shape& s : shapes)
    maxBytes = std::max({maxBytes, (size_t)(s.m * s.k * 2), (size_t)(s.k * s.n * 2),
                         (size_t)(s.m * s.n * 4)});
  fillRandom<<<1024, 256>>>((uint16_t*)buf.A, maxBytes / 2, 1u, 1.0f);
  fillRandom<<<1024, 256>>>((uint16_t*)buf.B, maxBytes / 2, 2u, 0.05f);
  CK(cudaDeviceSynchronize());
  void *A = buf.A, *B = buf.B, *C = buf.C, *W = buf.W;
  cublasLtHandle_t lt = buf.lt;
  cudaStream_t st = buf.st;
  cudaEvent_t e0 = buf.e0, e1 = buf.e1;
  cudaEvent_t fence[2];
  CK(cudaEventCreateWithFlags(&fence[0], cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&fence[1], cudaEventDisableTiming));

  struct Summary {
    std::string name;
    int perStep;
    float tunerAlone, tunerSus, tunerJ, bestSus, bestJ;
    std::string tunerCfg, bestCfg;
  };
  std::vector<Summary> summary;
  for (const Case& cs : cases) {
    const Shape& s = cs.s;
    if (only && !std::strstr(s.name, only)) continue;
    const GemmSetup g(s, buf.Bias, buf.Aux);
    const float alpha = 1.f, beta = s.beta;
    const double gflop = 2.0 * s.m * s.n * s.k / 1e9;
    auto run = [&](const cublasLtMatmulAlgo_t& a) {
      return cublasLtMatmul(lt, g.desc, &alpha, B, g.la, A, g.lb, &beta, C, g.lc, C, g.lc, &a, W,
                            ws, st) == CUBLAS_STATUS_SUCCESS;
    };
    auto timeAlgo = [&](const cublasLtMatmulAlgo_t& a, int reps) -> float {
      if (!run(a)) {
        cudaGetLastError();
        return -1.f;
      }
      CK(cudaEventRecord(e0, st));
      bool ok = true;
      for (int i = 0; i < reps; ++i) ok = run(a) && ok;
      CK(cudaEventRecord(e1, st));
      if (cudaEventSynchronize(e1) != cudaSuccess || cudaGetLastError() != cudaSuccess || !ok)
        return -1.f;
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      return ms / reps;
    };
    auto tunerTime = [&](const cublasLtMatmulAlgo_t& a) -> float { // as Kernels.cu ltTune
      if (timeAlgo(a, 1) < 0) return -1.f;
      std::vector<float> t;
      for (int r = 0; r < 3; ++r) t.push_back(timeAlgo(a, 5));
      return median(t);
    };
    // 1. The heuristic's candidates, timed as the tuner does.
    cublasLtMatmulHeuristicResult_t res[16];
    const int found = heuristicAlgos(lt, g, ws, res, 16);
    std::vector<Finalist> heur;
    for (int i = 0; i < found; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float ms = tunerTime(res[i].algo);
      if (ms > 0) heur.push_back({res[i].algo, "h" + std::to_string(i), ms, {}, {}, {}, {}});
    }
    if (heur.empty()) {
      std::printf("%s: no algorithm\n", s.name);
      continue;
    }
    std::stable_sort(heur.begin(), heur.end(),
                     [](const Finalist& x, const Finalist& y) { return x.aloneMs < y.aloneMs; });
    // 2. Large-tile configurations of the heuristic's first two algorithm ids.
    std::vector<Finalist> cfgs;
    std::vector<int> ids;
    for (int i = 0; i < found && ids.size() < 2; ++i) {
      int id = 0;
      size_t w;
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) continue;
      ids.push_back(id);
      const cublasLtMatmulAlgo_t base = res[i].algo;
      int32_t optMax = 0;
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &optMax,
                                        sizeof optMax, &w);
      const uint16_t clusters[] = {CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                                   CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1};
      for (uint32_t tile : capList(base, CUBLASLT_ALGO_CAP_TILE_IDS)) {
        const TileDims* td = nullptr;
        for (const TileDims& t : kTiles)
          if ((uint32_t)t.id == tile) td = &t;
        if (!td || td->rows < 128 || td->cols < 128) continue;
        for (uint32_t opt = 0; opt <= (uint32_t)std::min(optMax, 3); ++opt)
          for (uint16_t cluster : clusters) {
            cublasLtMatmulAlgo_t a = base;
            const int32_t one = 1;
            if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                     sizeof tile) != CUBLAS_STATUS_SUCCESS ||
                cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                     &cluster, sizeof cluster) != CUBLAS_STATUS_SUCCESS ||
                cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one,
                                                     sizeof one) != CUBLAS_STATUS_SUCCESS ||
                cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &opt,
                                                     sizeof opt) != CUBLAS_STATUS_SUCCESS)
              continue;
            cublasLtMatmulHeuristicResult_t chk;
            if (cublasLtMatmulAlgoCheck(lt, g.desc, g.la, g.lb, g.lc, g.lc, &a, &chk) !=
                    CUBLAS_STATUS_SUCCESS ||
                chk.workspaceSize > ws)
              continue;
            const float ms = timeAlgo(a, 3);
            if (ms > 0) cfgs.push_back({a, "cfg", ms, {}, {}, {}, {}});
          }
      }
    }
    std::stable_sort(cfgs.begin(), cfgs.end(),
                     [](const Finalist& x, const Finalist& y) { return x.aloneMs < y.aloneMs; });
    const size_t nCfg = cfgs.size();
    std::vector<Finalist> fin(heur.begin(), heur.begin() + std::min<size_t>(5, heur.size()));
    for (size_t i = 0; i < cfgs.size() && i < 5; ++i) {
      cfgs[i].aloneMs = tunerTime(cfgs[i].algo); // on the tuner's footing
      fin.push_back(cfgs[i]);
    }
    // 3. Sustained runs at the power limit.
    auto sustained = [&](Finalist& f, double seconds) {
      const float alone = f.aloneMs > 0 ? f.aloneMs : 0.5f;
      const int batch = std::max(1, (int)(20.0 / alone)); // ~20 ms of calls per batch
      const double warm = 0.35 * seconds;
      auto t0 = std::chrono::steady_clock::now();
      auto since = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      };
      while (since() < warm) {
        for (int i = 0; i < batch; ++i) run(f.algo);
        CK(cudaStreamSynchronize(st));
      }
      std::atomic<bool> sampling{true};
      std::vector<float> mhz, watts;
      std::thread sampler([&] {
        while (sampling.load()) {
          mhz.push_back((float)nvml.mhz());
          watts.push_back((float)nvml.watts());
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      });
      const double j0 = nvml.joules();
      CK(cudaEventRecord(e0, st));
      long calls = 0;
      int batches = 0;
      t0 = std::chrono::steady_clock::now();
      while (since() < seconds - warm) {
        for (int i = 0; i < batch; ++i) run(f.algo);
        calls += batch;
        // One batch stays queued while the host waits for the one before (the GPU never
        // idles, and the energy window ends with the work).
        CK(cudaEventRecord(fence[batches % 2], st));
        if (batches > 0) CK(cudaEventSynchronize(fence[(batches - 1) % 2]));
        ++batches;
      }
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      const double j1 = nvml.joules();
      sampling = false;
      sampler.join();
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      f.ms.push_back(ms / (float)calls);
      f.joules.push_back((float)((j1 - j0) / (double)calls));
      f.mhz.push_back(median(mhz));
      f.watts.push_back(median(watts));
    };
    { // heat-up at the limit
      Finalist h = fin[0];
      sustained(h, 2.0);
    }
    for (int round = 0; round < 2; ++round)
      for (size_t i = 0; i < fin.size(); ++i) sustained(fin[round ? fin.size() - 1 - i : i], secs);
    std::printf("\n%s: m %lld n %lld k %lld (%.1f GFLOP), %d calls per step; %d heuristic "
                "candidates, %zu large-tile configurations timed\n",
                s.name, (long long)s.m, (long long)s.n, (long long)s.k, gflop, cs.perStep, found,
                nCfg);
    std::printf("  %-4s %9s %9s %9s %8s %8s %6s %6s  %s\n", "src", "alone ms", "sus ms",
                "(rounds)", "J/call", "TFLOP/s", "MHz", "W", "configuration");
    const Finalist* best = &fin[0];
    for (const Finalist& f : fin) {
      const float m = median(f.ms);
      if (m < median(best->ms)) best = &f;
      std::printf("  %-4s %9.4f %9.4f %4.3f/%4.3f %8.4f %8.1f %6.0f %6.0f  %s\n", f.source.c_str(),
                  f.aloneMs, m, f.ms[0], f.ms[1], median(f.joules), gflop / m, median(f.mhz),
                  median(f.watts), algoConfig(f.algo).c_str());
    }
    const Finalist& tuner = fin[0]; // the fastest alone among the heuristic's
    summary.push_back({s.name, cs.perStep, tuner.aloneMs, median(tuner.ms), median(tuner.joules),
                       median(best->ms), median(best->joules), tuner.source, best->source});
    std::fflush(stdout);
  }
  std::printf("\n| GEMM | calls/step | tuner's pick: sustained ms, J | best sustained: ms, J | "
              "ratio | step ms saved |\n|---|---|---|---|---|---|\n");
  double saved = 0;
  for (const Summary& x : summary) {
    const double d = (x.tunerSus - x.bestSus) * x.perStep;
    saved += d;
    std::printf("| %s | %d | %.4f (%s), %.4f | %.4f (%s), %.4f | %.3f | %.3f |\n", x.name.c_str(),
                x.perStep, x.tunerSus, x.tunerCfg.c_str(), x.tunerJ, x.bestSus, x.bestCfg.c_str(),
                x.bestJ, x.bestSus / x.tunerSus, d);
  }
  std::printf("| all | | | | | %.3f |\n", saved);
  return 0;
}
