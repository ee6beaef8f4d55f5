// gemm_configs: does cuBLASLt have a faster kernel than its heuristic offers for the GEMMs of
// a GPT-2 small step (16 x 1024 tokens, bf16, f32 weight gradients)? Above all the two with
// GELU epilogues, which run at ~530 TFLOP/s against ~800 for the same GEMM with a bias only
// (bench/cuda/gemm_sweep.cu, docs/results.md 2026-11-29).
//
// For each shape: the heuristic's candidates (up to 32) are timed; then every algorithm id
// cublasLtMatmulAlgoGetIds lists for the types is initialised and its configurations
// enumerated: every tile and stages id its capabilities list, cluster shapes auto / 1x1 /
// 2x1 / 1x2 / 4x1 / 1x4 / 2x2, every custom option, CTA swizzling 0 / 1 where supported, split-K 1. Each configuration that
// cublasLtMatmulAlgoCheck accepts (workspace within the budget) is timed briefly (1 warm-up,
// 4 timed calls, mean), within a time budget per shape; the 6 fastest and the heuristic's
// best are then timed again, alternating, 5 rounds x 20 calls (median of the rounds).
// Prints per shape: the heuristic's best, the enumeration's best and its configuration.
//
// Build (CPU machine): nvcc -O2 -std=c++17 -arch=sm_90 bench/cuda/gemm_configs.cu -lcublasLt
//   -o runs/gemm_configs.   Run (GPU): runs/gemm_configs [seconds per shape, default 20]
#include "gemm_bench.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 20.0;
  const size_t ws = 51118336ull;  // the GPT-2 small plan's workspace region
  const std::vector<Shape> shapes = {
      {"fwd fc (gelu_aux_bias)", 16384, 3072, 768, 0, 0, false, 0.f, kGeluAuxBias},
      {"bwd mlp.proj dX (dgelu)", 16384, 3072, 768, 0, 1, false, 0.f, kDgelu},
      {"fwd fc (bias only)", 16384, 3072, 768, 0, 0, false, 0.f, kBias},
      {"wgrad fc (plain)", 768, 3072, 16384, 1, 0, true, 0.f, kNone},
      {"wgrad qkv (plain)", 768, 2304, 16384, 1, 0, true, 0.f, kNone},
      {"fwd qkv (bias)", 16384, 2304, 768, 0, 0, false, 0.f, kBias},
      {"fwd mlp.proj (bias, residual f32)", 16384, 768, 3072, 0, 0, true, 1.f, kBias},
      {"fwd attn.proj (bias, residual f32)", 16384, 768, 768, 0, 0, true, 1.f, kBias},
      {"wgrad attn.proj (plain)", 768, 768, 16384, 1, 0, true, 0.f, kNone},
      {"loss logits (4096 rows)", 4096, 50304, 768, 0, 1, false, 0.f, kNone},
      {"wgrad mlp.proj (plain)", 3072, 768, 16384, 1, 0, true, 0.f, kNone},
      {"bwd fc dX", 16384, 768, 3072, 0, 1, false, 0.f, kNone},
      {"bwd qkv dX", 16384, 768, 2304, 0, 1, false, 0.f, kNone},
      {"bwd attn.proj dX", 16384, 768, 768, 0, 1, false, 0.f, kNone},
      {"bwd mlp.proj dX (plain)", 16384, 3072, 768, 0, 1, false, 0.f, kNone},
      {"loss dx (4096 rows)", 4096, 768, 50304, 0, 0, false, 0.f, kNone},
      {"loss dw = (4096 rows, f32, beta 0)", 50304, 768, 4096, 1, 0, true, 0.f, kNone},
  };
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("gemm_configs on %s (%d SMs), cuBLASLt %zu, workspace %zu bytes, %.0f s per shape\n",
              prop.name, prop.multiProcessorCount, (size_t)cublasLtGetVersion(), ws, budget);
  const GemmBuffers buf(shapes, ws);
  void *A = buf.A, *B = buf.B, *C = buf.C, *W = buf.W;
  cublasLtHandle_t lt = buf.lt;
  cudaStream_t st = buf.st;
  cudaEvent_t e0 = buf.e0, e1 = buf.e1;
  std::printf("%-36s %9s %9s %6s %7s %7s | %s\n", "shape", "heur ms", "enum ms", "ratio",
              "valid", "timed", "fastest enumerated configuration");
  for (const Shape& s : shapes) {
    const GemmSetup g(s, buf.Bias, buf.Aux);
    cublasLtMatmulDesc_t desc = g.desc;
    cublasLtMatrixLayout_t la = g.la, lb = g.lb, lc = g.lc;
    const cudaDataType_t ct = g.ctype;
    const float alpha = 1.f, beta = s.beta;
    auto run = [&](const cublasLtMatmulAlgo_t& a) {
      return cublasLtMatmul(lt, desc, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &a, W, ws, st) ==
             CUBLAS_STATUS_SUCCESS;
    };
    auto timeAlgo = [&](const cublasLtMatmulAlgo_t& a, int reps) -> float {
      if (!run(a)) return -1.f;
      CK(cudaEventRecord(e0, st));
      for (int i = 0; i < reps; ++i) run(a);
      CK(cudaEventRecord(e1, st));
      if (cudaEventSynchronize(e1) != cudaSuccess || cudaGetLastError() != cudaSuccess) {
        std::fprintf(stderr, "a launch failed: %s\n", algoConfig(a).c_str());
        std::exit(1);
      }
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      return ms / reps;
    };
    // The heuristic's candidates.
    cublasLtMatmulHeuristicResult_t res[32];
    const int found = heuristicAlgos(lt, g, ws, res, 32);
    if (found == 0) {
      std::printf("%-36s no algorithm\n", s.name);
      continue;
    }
    cublasLtMatmulAlgo_t heur{};
    float heurMs = 1e9f;
    for (int i = 0; i < found; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float ms = timeAlgo(res[i].algo, 10);
      if (ms > 0 && ms < heurMs) heurMs = ms, heur = res[i].algo;
    }
    // Every configuration of every algorithm id.
    int ids[256];
    int nIds = 0;
    BK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, ct,
                                ct, 256, ids, &nIds));
    // The heuristic's ids first (the budget may run out before the last id).
    std::vector<int> order;
    for (int i = 0; i < found; ++i) {
      int id = 0;
      size_t w;
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
      if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
    }
    for (int i = 0; i < nIds; ++i)
      if (std::find(order.begin(), order.end(), ids[i]) == order.end()) order.push_back(ids[i]);
    struct Cand {
      cublasLtMatmulAlgo_t algo;
      float ms;
    };
    std::vector<Cand> cands;
    int valid = 0, timed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const uint16_t clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
                                 CUBLASLT_CLUSTER_SHAPE_4x1x1, CUBLASLT_CLUSTER_SHAPE_1x4x1,
                                 CUBLASLT_CLUSTER_SHAPE_2x2x1};
    for (size_t ii = 0; ii < order.size() && elapsed() < budget; ++ii) {
      cublasLtMatmulAlgo_t base;
      if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, ct,
                                 ct, order[ii], &base) != CUBLAS_STATUS_SUCCESS)
        continue;
      std::vector<uint32_t> tiles = capList(base, CUBLASLT_ALGO_CAP_TILE_IDS);
      std::vector<uint32_t> stages = capList(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
      if (tiles.empty()) tiles.push_back(0);
      if (stages.empty()) stages.push_back(0);
      int32_t swzSupport = 0, optMax = 0;
      size_t w;
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swzSupport,
                                        sizeof swzSupport, &w);
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &optMax,
                                        sizeof optMax, &w);
      for (uint32_t opt = 0; opt <= (uint32_t)std::min(optMax, 15); ++opt)
      for (uint32_t tile : tiles)
        for (uint32_t stage : stages)
          for (uint16_t cluster : clusters)
            for (uint32_t swz = 0; swz <= (swzSupport ? 1u : 0u); ++swz) {
              if (elapsed() >= budget) break;
              cublasLtMatmulAlgo_t a = base;
              const int32_t one = 1;
              if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                       sizeof tile) != CUBLAS_STATUS_SUCCESS ||
                  cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage,
                                                       sizeof stage) != CUBLAS_STATUS_SUCCESS ||
                  cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                       &cluster,
                                                       sizeof cluster) != CUBLAS_STATUS_SUCCESS ||
                  cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz,
                                                       sizeof swz) != CUBLAS_STATUS_SUCCESS ||
                  cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one,
                                                       sizeof one) != CUBLAS_STATUS_SUCCESS ||
                  cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &opt,
                                                       sizeof opt) != CUBLAS_STATUS_SUCCESS)
                continue;
              cublasLtMatmulHeuristicResult_t chk;
              if (cublasLtMatmulAlgoCheck(lt, desc, la, lb, lc, lc, &a, &chk) !=
                      CUBLAS_STATUS_SUCCESS ||
                  chk.workspaceSize > ws)
                continue;
              ++valid;
              const float ms = timeAlgo(a, 4);
              if (ms > 0) cands.push_back({a, ms}), ++timed;
            }
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) { return x.ms < y.ms; });
    if (cands.size() > 6) cands.resize(6);
    // Alternating re-timing: the heuristic's best against the 6 fastest enumerated.
    std::vector<std::vector<float>> rounds(cands.size() + 1);
    for (int r = 0; r < 5; ++r) {
      rounds[0].push_back(timeAlgo(heur, 20));
      for (size_t c = 0; c < cands.size(); ++c) rounds[c + 1].push_back(timeAlgo(cands[c].algo, 20));
    }
    auto median = [](std::vector<float> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const float h = median(rounds[0]);
    float best = 1e9f;
    std::string bestCfg = "-";
    for (size_t c = 0; c < cands.size(); ++c) {
      const float ms = median(rounds[c + 1]);
      if (ms < best) best = ms, bestCfg = algoConfig(cands[c].algo);
    }
    std::printf("%-36s %9.4f %9.4f %6.3f %7d %7d | %s (heuristic: %s; %d ids, %.0f s)\n", s.name,
                h, best, best / h, valid, timed, bestCfg.c_str(), algoConfig(heur).c_str(), nIds,
                elapsed());
    for (size_t c = 0; c < cands.size(); ++c)
      std::printf("    %9.4f  %s\n", median(rounds[c + 1]), algoConfig(cands[c].algo).c_str());
    std::fflush(stdout);
  }
  return 0;
}
