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
#include "bench_check.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>


namespace {

enum Epi { kNone, kBias, kGeluAuxBias, kDgelu, kBgradA, kDgeluBgrad };

struct Shape {
  const char* name;
  int64_t m, n, k;
  int ta, tb;
  bool cF32;    // C, D f32 (weight gradients, the residual stream)
  float beta;   // 1: accumulate into C (= D)
  Epi epi;
};

struct Timed {
  float ms;
  int index;  // heuristic position (-1: split-K variant)
  int splitk;
  int tile;
  int stages;
};

std::string cfg(const cublasLtMatmulAlgo_t& a) {
  int id = 0, tile = 0, sk = 0, red = 0, swz = 0, stages = 0;
  size_t w;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red,
                                       &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
                                       &w);
  char buf[128];
  std::snprintf(buf, sizeof buf, "id %d tile %d splitk %d red %d swz %d stages %d", id, tile, sk,
                red, swz, stages);
  return buf;
}

}  // namespace

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
  cublasLtHandle_t lt;
  BK(cublasLtCreate(&lt));
  size_t maxBytes = 0;
  for (const Shape& s : shapes)
    maxBytes = std::max({maxBytes, (size_t)(s.m * s.k * 2), (size_t)(s.k * s.n * 2),
                         (size_t)(s.m * s.n * 4)});
  void *A, *B, *C, *Aux, *Bias, *W;
  CK(cudaMalloc(&A, maxBytes));
  CK(cudaMalloc(&B, maxBytes));
  CK(cudaMalloc(&C, maxBytes));
  CK(cudaMalloc(&Aux, maxBytes));
  CK(cudaMalloc(&Bias, 1 << 20));
  CK(cudaMalloc(&W, ws));
  // Small values (bf16 0x3c00 ~ 0.0078): no overflow in any epilogue.
  CK(cudaMemset(A, 0x3c, maxBytes));
  CK(cudaMemset(B, 0x3c, maxBytes));
  CK(cudaMemset(C, 0, maxBytes));
  CK(cudaMemset(Aux, 0x3c, maxBytes));
  CK(cudaMemset(Bias, 0, 1 << 20));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::printf("%-38s %9s %9s %9s %9s %9s | %s\n", "shape", "heur#0", "best/6", "best/32",
              "splitK", "TFLOP/s", "fastest algorithm");
  for (const Shape& s : shapes) {
    cublasLtMatmulDesc_t desc;
    BK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const int32_t opA = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    if (s.epi != kNone) {
      const cublasLtEpilogue_t e = s.epi == kBias          ? CUBLASLT_EPILOGUE_BIAS
                                   : s.epi == kGeluAuxBias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                   : s.epi == kDgelu       ? CUBLASLT_EPILOGUE_DGELU
                                   : s.epi == kDgeluBgrad  ? CUBLASLT_EPILOGUE_DGELU_BGRAD
                                                           : CUBLASLT_EPILOGUE_BGRADA;
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    }
    if (s.epi == kBias || s.epi == kGeluAuxBias || s.epi == kBgradA || s.epi == kDgeluBgrad) {
      const int32_t bt = s.cF32 ? CUDA_R_32F : CUDA_R_16BF;
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &Bias,
                                        sizeof Bias));
    }
    if (s.epi == kGeluAuxBias || s.epi == kDgelu || s.epi == kDgeluBgrad) {
      const int64_t ld = s.n;
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
      const int32_t at = CUDA_R_16BF;
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &at,
                                        sizeof at));
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &Aux,
                                        sizeof Aux));
    }
    const int64_t m = s.m, n = s.n, k = s.k;
    cublasLtMatrixLayout_t la, lb, lc;
    BK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.tb ? k : n, s.tb ? n : k, s.tb ? k : n));
    BK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.ta ? m : k, s.ta ? k : m, s.ta ? m : k));
    BK(cublasLtMatrixLayoutCreate(&lc, s.cF32 ? CUDA_R_32F : CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    BK(cublasLtMatmulPreferenceCreate(&pref));
    BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws));
    cublasLtMatmulHeuristicResult_t res[32];
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 32, res, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found == 0) {
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
    std::vector<Timed> t;
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
        bestCfg = "heur#" + std::to_string(i) + " " + cfg(res[i].algo);
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
          bestCfg = "splitK of heur#" + std::to_string(i) + " " + cfg(a);
        }
      }
    const double flop = 2.0 * m * n * k;
    std::printf("%-38s %9.4f %9.4f %9.4f %9.4f %9.0f | %s (found %d)\n", s.name, first, best6,
                best32, bestSk > 1e8 ? -1.f : bestSk, flop / (best32 * 1e-3) / 1e12,
                bestCfg.c_str(), found);
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
  }
  return 0;
}
