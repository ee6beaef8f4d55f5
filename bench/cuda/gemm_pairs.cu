// gemm_pairs: what would running a linear layer's two backward GEMMs at once buy? For each
// layer of a GPT-2 small step (16 x 1024 tokens, bf16, f32 weight gradients accumulated), the
// input gradient dX = dY W^T (bf16) and the weight gradient dW += X^T dY (f32) read the same
// dY and nothing the other writes. This times, inside CUDA graphs of 20 pairs (as tgc's step
// runs), (a) the two on one stream, and (b) the weight gradient on a second stream forked
// from and joined to the first by events around each pair, each stream with its own
// workspace, both orders of launch. Each GEMM runs the fastest of the cuBLASLt heuristic's
// first 16 algorithms timed alone (tgc's tuning). Prints per layer: the two alone, the pair
// in sequence, the pair on two streams, and the saving per step (12 layers).
//
// Build (CPU machine): nvcc -O2 -std=c++17 -arch=sm_90 bench/cuda/gemm_pairs.cu -lcublasLt
//   -o runs/gemm_pairs.   Run (GPU): runs/gemm_pairs
#include "bench_check.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>


namespace {

constexpr size_t kWs = 32u << 20; // workspace per stream, bytes

/// One row-major GEMM C[m, n] (+)= op(A)[m, k] op(B)[k, n] as tgc's runtime maps it onto
/// cuBLASLt (column-major: cuBLASLt's A is our B, its B our A), with its own buffers.
struct Gemm {
  int64_t m, n, k;
  int ta, tb;
  bool cF32;
  float beta;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  cublasLtMatmulAlgo_t algo{};

  void run(cublasLtHandle_t lt, void* ws, cudaStream_t st) const {
    const float alpha = 1.f;
    BK(cublasLtMatmul(lt, desc, &alpha, b, la, a, lb, &beta, c, lc, c, lc, &algo, ws, kWs, st));
  }
};

float elapsed(cudaEvent_t e0, cudaEvent_t e1) {
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  return ms;
}

void setup(cublasLtHandle_t lt, Gemm& g, void* ws, cudaStream_t st) {
  CK(cudaMalloc(&g.a, (size_t)(g.m * g.k * 2)));
  CK(cudaMalloc(&g.b, (size_t)(g.k * g.n * 2)));
  CK(cudaMalloc(&g.c, (size_t)(g.m * g.n * (g.cF32 ? 4 : 2))));
  // Small values (bf16 0x3c3c ~ 0.0115): no overflow.
  CK(cudaMemset(g.a, 0x3c, (size_t)(g.m * g.k * 2)));
  CK(cudaMemset(g.b, 0x3c, (size_t)(g.k * g.n * 2)));
  CK(cudaMemset(g.c, 0, (size_t)(g.m * g.n * (g.cF32 ? 4 : 2))));
  BK(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t opA = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  BK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
  BK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
  const int64_t m = g.m, n = g.n, k = g.k;
  BK(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16BF, g.tb ? k : n, g.tb ? n : k, g.tb ? k : n));
  BK(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_16BF, g.ta ? m : k, g.ta ? k : m, g.ta ? m : k));
  BK(cublasLtMatrixLayoutCreate(&g.lc, g.cF32 ? CUDA_R_32F : CUDA_R_16BF, n, m, n));
  cublasLtMatmulPreference_t pref;
  BK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t wsb = kWs;
  BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                          sizeof wsb));
  cublasLtMatmulHeuristicResult_t res[16];
  int found = 0;
  BK(cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.la, g.lb, g.lc, g.lc, pref, 16, res, &found));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // Mean ms of algorithm i (2 warm-ups, 20 timed calls).
  auto timeAlgo = [&](int i) {
    g.algo = res[i].algo;
    for (int w = 0; w < 2; ++w) g.run(lt, ws, st);
    CK(cudaEventRecord(e0, st));
    for (int r = 0; r < 20; ++r) g.run(lt, ws, st);
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    return elapsed(e0, e1) / 20;
  };
  int bestI = -1;
  float best = 1e9f;
  for (int i = 0; i < found; ++i) {
    if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const float ms = timeAlgo(i);
    if (ms < best) {
      best = ms;
      bestI = i;
    }
  }
  if (bestI < 0) {
    std::fprintf(stderr, "gemm_pairs: no usable algorithm for %lld x %lld x %lld\n",
                 (long long)g.m, (long long)g.n, (long long)g.k);
    std::exit(1);
  }
  g.algo = res[bestI].algo;
  cublasLtMatmulPreferenceDestroy(pref);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

/// Mean ms of one repetition of `body` captured 20 times into a graph (median of 5 launches).
template <typename F>
float timeGraph(cudaStream_t st, F body) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int r = 0; r < 20; ++r) body();
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(ge, st));
  std::vector<float> t;
  for (int i = 0; i < 5; ++i) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    t.push_back(elapsed(e0, e1) / 20);
  }
  std::sort(t.begin(), t.end());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return t[2];
}

} // namespace

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("gemm_pairs on %s (%d SMs), cuBLASLt %zu, workspace %zu bytes per stream\n",
              prop.name, prop.multiProcessorCount, (size_t)cublasLtGetVersion(), kWs);
  cublasLtHandle_t lt;
  BK(cublasLtCreate(&lt));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  void *w1, *w2;
  CK(cudaMalloc(&w1, kWs));
  CK(cudaMalloc(&w2, kWs));
  struct Layer {
    const char* name;
    Gemm dx, dw;
  };
  // dX [16384, in] = dY [16384, out] W [out, in]... in tgc's row-major terms (m, n, k, ta, tb).
  std::vector<Layer> layers = {
      {"qkv (768 -> 2304)", {16384, 768, 2304, 0, 1, false, 0.f}, {768, 2304, 16384, 1, 0, true, 1.f}},
      {"attn.proj (768 -> 768)", {16384, 768, 768, 0, 1, false, 0.f}, {768, 768, 16384, 1, 0, true, 1.f}},
      {"fc (768 -> 3072)", {16384, 768, 3072, 0, 1, false, 0.f}, {768, 3072, 16384, 1, 0, true, 1.f}},
      {"mlp.proj (3072 -> 768)", {16384, 3072, 768, 0, 1, false, 0.f}, {3072, 768, 16384, 1, 0, true, 1.f}},
  };
  cudaEvent_t fork[20], join[20];
  for (int i = 0; i < 20; ++i) {
    CK(cudaEventCreateWithFlags(&fork[i], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming));
  }
  std::printf("%-24s %9s %9s %9s %9s %9s %9s\n", "layer", "dX", "dW", "dW;dX", "dW||dX",
              "dX||dW", "saved/step");
  double saved = 0;
  for (Layer& L : layers) {
    setup(lt, L.dx, w1, s1);
    setup(lt, L.dw, w2, s1);
    const float tdx = timeGraph(s1, [&] { L.dx.run(lt, w1, s1); });
    const float tdw = timeGraph(s1, [&] { L.dw.run(lt, w2, s1); });
    const float seq = timeGraph(s1, [&] {
      L.dw.run(lt, w2, s1);
      L.dx.run(lt, w1, s1);
    });
    int i = 0;
    auto pair = [&](bool dwFirst) {
      return timeGraph(s1, [&] {
        CK(cudaEventRecord(fork[i], s1));
        CK(cudaStreamWaitEvent(s2, fork[i], 0));
        if (dwFirst) {
          L.dw.run(lt, w2, s2);
          L.dx.run(lt, w1, s1);
        } else {
          L.dx.run(lt, w1, s1);
          L.dw.run(lt, w2, s2);
        }
        CK(cudaEventRecord(join[i], s2));
        CK(cudaStreamWaitEvent(s1, join[i], 0));
        i = (i + 1) % 20;
      });
    };
    const float par = pair(true);
    const float par2 = pair(false);
    const float gain = (seq - std::min(par, par2)) * 12;
    saved += gain;
    std::printf("%-24s %9.4f %9.4f %9.4f %9.4f %9.4f %9.3f\n", L.name, tdx, tdw, seq, par, par2,
                gain);
    std::fflush(stdout);
  }
  std::printf("total saved per GPT-2 small step (12 layers): %.3f ms\n", saved);
  return 0;
}
