// gemm_sweep: how fast can cuBLASLt run each GEMM of a GPT-2 small step (16 x 1024 tokens,
// bf16, f32 weight gradients), and which algorithm does it take?
//
// For every shape the tgc CUDA runtime issues (same row-major -> column-major mapping as
// runtime/cuda/Kernels.cu getPlan: cuBLASLt's A is our b, its B our a), it asks the heuristic
// for up to 32 algorithms and times each (2 warm-ups, then 20 event-timed calls, mean), and
// times split-K variants (2, 3, 4, 6, 8; CUBLASLT_ALGO_CONFIG_SPLITK_NUM, checked with
// cublasLtMatmulAlgoCheck) of the heuristic's first 4. Prints per shape: the heuristic's
// first (what TGRT_GEMM_AUTOTUNE=0 runs), the best of its first 6 (the default tuning), the
// best of all 32, the best split-K variant, and their TFLOP/s (2 m n k / time).
//
// Build (CPU machine): nvcc -O2 -std=c++17 -arch=sm_90 bench/cuda/gemm_sweep.cu -lcublasLt
//   -o runs/gemm_sweep.   Run (GPU): runs/gemm_sweep [workspace_bytes, default 51118336]
#include "gemm_bench.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const size_t ws = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 51118336ull;
  const std::vector<Shape> shapes = {
      {"wgrad qkv (BGRADA)", 768, 2304, 16384, 1, 0, true, 0.f, kBgradA},
      {"wgrad qkv (plain)", 768, 2304, 16384, 1, 0, true, 0.f, kNone},
      {"wgrad attn.proj (BGRADA)", 768, 768, 16384, 1, 0, true, 0.f, kBgradA},
      {"wgrad attn.proj (plain)", 768, 768, 16384, 1, 0, true, 0.f, kNone},
      {"wgrad fc (BGRADA)", 768, 3072, 16384, 1, 0, true, 0.f, kBgradA},
      {"wgrad fc (plain)", 768, 3072, 16384, 1, 0, true, 0.f, kNone},
      {"wgrad mlp.proj (BGRADA)", 3072, 768, 16384, 1, 0, true, 0.f, kBgradA},
      {"wgrad mlp.proj (plain)", 3072, 768, 16384, 1, 0, true, 0.f, kNone},
      {"fwd qkv (bias)", 16384, 2304, 768, 0, 0, false, 0.f, kBias},
      {"fwd attn.proj (bias, residual f32)", 16384, 768, 768, 0, 0, true, 1.f, kBias},
      {"fwd fc (gelu_aux_bias)", 16384, 3072, 768, 0, 0, false, 0.f, kGeluAuxBias},
      {"fwd fc (bias only)", 16384, 3072, 768, 0, 0, false, 0.f, kBias},
      {"fwd mlp.proj (bias, residual f32)", 16384, 768, 3072, 0, 0, true, 1.f, kBias},
      {"bwd mlp.proj dX (dgelu)", 16384, 3072, 768, 0, 1, false, 0.f, kDgelu},
      {"bwd mlp.proj dX (dgelu_bgrad)", 16384, 3072, 768, 0, 1, false, 0.f, kDgeluBgrad},
      {"bwd mlp.proj dX (plain)", 16384, 3072, 768, 0, 1, false, 0.f, kNone},
      {"bwd fc dX", 16384, 768, 3072, 0, 1, false, 0.f, kNone},
      {"bwd attn.proj dX", 16384, 768, 768, 0, 1, false, 0.f, kNone},
      {"bwd qkv dX", 16384, 768, 2304, 0, 1, false, 0.f, kNone},
      {"loss logits (4096 rows)", 4096, 50304, 768, 0, 1, false, 0.f, kNone},
      {"loss dx (4096 rows)", 4096, 768, 50304, 0, 0, false, 0.f, kNone},
      {"loss dw += (4096 rows, f32)", 50304, 768, 4096, 1, 0, true, 1.f, kNone},
      {"loss dw = (4096 rows, f32, beta 0)", 50304, 768, 4096, 1, 0, true, 0.f, kNone},
      {"loss dw += (8192 rows, f32)", 50304, 768, 8192, 1, 0, true, 1.f, kNone},
  };
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("gemm_sweep on %s (%d SMs), cuBLASLt %zu, workspace %zu bytes\n", prop.name,
              prop.multiProcessorCount, (size_t)cublasLtGetVersion(), ws);
  const GemmBuffers buf(shapes, ws);
  void *A = buf.A, *B = buf.B, *C = buf.C, *W = buf.W;
  cublasLtHandle_t lt = buf.lt;
  cudaStream_t st = buf.st;
  cudaEvent_t e0 = buf.e0, e1 = buf.e1;
  std::printf("%-38s %9s %9s %9s %9s %9s | %s\n", "shape", "heur#0", "best/6", "best/32",
              "splitK", "TFLOP/s", "fastest algorithm");
  for (const Shape& s : shapes) {
    const GemmSetup g(s, buf.Bias, buf.Aux);
    cublasLtMatmulDesc_t desc = g.desc;
    cublasLtMatrixLayout_t la = g.la, lb = g.lb, lc = g.lc;
    const int64_t m = s.m, n = s.n, k = s.k;
    cublasLtMatmulHeuristicResult_t res[32];
    const int found = heuristicAlgos(lt, g, ws, res, 32);
    if (found == 0) {
      std::printf("%-38s no algorithm\n", s.name);
      continue;
    }
    const float alpha = 1.f, beta = s.beta;
    auto timeAlgo = [&](const cublasLtMatmulAlgo_t& a) -> float {
      for (int i = 0; i < 2; ++i)
        if (cublasLtMatmul(lt, desc, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &a, W, ws, st) !=
            CUBLAS_STATUS_SUCCESS)
          return -1.f;
      CK(cudaEventRecord(e0, st));
      for (int i = 0; i < 20; ++i)
        cublasLtMatmul(lt, desc, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &a, W, ws, st);
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (cudaGetLastError() != cudaSuccess) return -1.f;
      return ms / 20;
    };
    float first = -1, best6 = 1e9, best32 = 1e9, bestSk = 1e9;
    std::string bestCfg;
    for (int i = 0; i < found; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float ms = timeAlgo(res[i].algo);
      if (ms < 0) continue;
      if (i == 0) first = ms;
      if (i < 6) best6 = std::min(best6, ms);
      if (ms < best32) {
        best32 = ms;
        bestCfg = "heur#" + std::to_string(i) + " " + algoConfig(res[i].algo);
      }
    }
    for (int i = 0; i < std::min(found, 4); ++i)
      for (int sk : {2, 3, 4, 6, 8}) {
        cublasLtMatmulAlgo_t a = res[i].algo;
        if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk,
                                                 sizeof sk) != CUBLAS_STATUS_SUCCESS)
          continue;
        cublasLtMatmulHeuristicResult_t chk;
        if (cublasLtMatmulAlgoCheck(lt, desc, la, lb, lc, lc, &a, &chk) != CUBLAS_STATUS_SUCCESS ||
            chk.workspaceSize > ws)
          continue;
        const float ms = timeAlgo(a);
        if (ms < 0) continue;
        if (ms < bestSk) bestSk = ms;
        if (ms < best32) {
          best32 = ms;
          bestCfg = "splitK of heur#" + std::to_string(i) + " " + algoConfig(a);
        }
      }
    const double flop = 2.0 * m * n * k;
    std::printf("%-38s %9.4f %9.4f %9.4f %9.4f %9.0f | %s (found %d)\n", s.name, first, best6,
                best32, bestSk > 1e8 ? -1.f : bestSk, flop / (best32 * 1e-3) / 1e12,
                bestCfg.c_str(), found);
    std::fflush(stdout);
  }
  return 0;
}
