// gemm_bench.h: what the standalone cuBLASLt benches of bench/cuda (gemm_sweep, gemm_configs)
// share: a GEMM of the tgc CUDA runtime's mapping (runtime/cuda/Kernels.cu getPlan: row-major
// C [m x n] = op(a) op(b) as column-major C^T = op(b)^T op(a)^T, so cuBLASLt's A is our b and
// its B our a), its cuBLASLt descriptor and layouts, and an algorithm's configuration as text.
#ifndef TGC_BENCH_CUDA_GEMM_BENCH_H
#define TGC_BENCH_CUDA_GEMM_BENCH_H

#include "bench_check.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

enum Epi { kNone, kBias, kGeluAuxBias, kDgelu, kBgradA, kDgeluBgrad };

/// One GEMM: C [m x n] (bf16, or f32 with cF32) = op(a) [m x k] op(b) [k x n] (bf16) with
/// beta C added and epilogue epi (the bias and the GELU aux of C's type / bf16).
struct Shape {
  const char* name;
  int64_t m, n, k;
  int ta, tb;
  bool cF32;   // C, D f32 (weight gradients, the residual stream)
  float beta;  // 1: accumulate into C (= D)
  Epi epi;
  int64_t lda = 0; // a's rows that far apart (0: packed, k or, with ta, m)
};

/// The cuBLASLt descriptor and layouts of a Shape, with bias and aux pointers set as its
/// epilogue needs; destroyed with the object.
struct GemmSetup {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cudaDataType_t ctype = CUDA_R_16BF;

  GemmSetup(const Shape& s, void* bias, void* aux) {
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
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                        sizeof bias));
    }
    if (s.epi == kGeluAuxBias || s.epi == kDgelu || s.epi == kDgeluBgrad) {
      const int64_t ld = s.n;
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
      const int32_t at = CUDA_R_16BF;
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &at,
                                        sizeof at));
      BK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                        sizeof aux));
    }
    const int64_t m = s.m, n = s.n, k = s.k;
    ctype = s.cF32 ? CUDA_R_32F : CUDA_R_16BF;
    BK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.tb ? k : n, s.tb ? n : k, s.tb ? k : n));
    BK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.ta ? m : k, s.ta ? k : m,
                                  s.lda  ? s.lda
                                  : s.ta ? m
                                         : k));
    BK(cublasLtMatrixLayoutCreate(&lc, ctype, n, m, n));
  }
  ~GemmSetup() {
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
  }
  GemmSetup(const GemmSetup&) = delete;
  GemmSetup& operator=(const GemmSetup&) = delete;
};

/// What every shape of a bench uses: device buffers A, B, C and Aux of the largest operand
/// (A, B, Aux bf16 0x3c3c ~ 0.0115: no overflow in any epilogue; C zero), a 1 MiB zero bias,
/// a ws-byte workspace W, the cuBLASLt handle, a stream and two timing events.
struct GemmBuffers {
  void *A = nullptr, *B = nullptr, *C = nullptr, *Aux = nullptr, *Bias = nullptr, *W = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t st = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  GemmBuffers(const std::vector<Shape>& shapes, size_t ws) {
    BK(cublasLtCreate(&lt));
    CK(cudaStreamCreate(&st));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    size_t maxBytes = 0;
    for (const Shape& s : shapes)
      maxBytes = std::max({maxBytes, (size_t)(s.m * s.k * 2), (size_t)(s.k * s.n * 2),
                           (size_t)(s.m * s.n * 4), (size_t)((s.ta ? s.k : s.m) * s.lda * 2)});
    CK(cudaMalloc(&A, maxBytes));
    CK(cudaMalloc(&B, maxBytes));
    CK(cudaMalloc(&C, maxBytes));
    CK(cudaMalloc(&Aux, maxBytes));
    CK(cudaMalloc(&Bias, 1 << 20));
    CK(cudaMalloc(&W, ws));
    CK(cudaMemset(A, 0x3c, maxBytes));
    CK(cudaMemset(B, 0x3c, maxBytes));
    CK(cudaMemset(C, 0, maxBytes));
    CK(cudaMemset(Aux, 0x3c, maxBytes));
    CK(cudaMemset(Bias, 0, 1 << 20));
  }
};

/// The heuristic's algorithms for g within a ws-byte workspace (up to `requested`, at most
/// 32); 0 when it has none.
inline int heuristicAlgos(cublasLtHandle_t lt, const GemmSetup& g, size_t ws,
                          cublasLtMatmulHeuristicResult_t* res, int requested) {
  cublasLtMatmulPreference_t pref;
  BK(cublasLtMatmulPreferenceCreate(&pref));
  BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                          sizeof ws));
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.la, g.lb, g.lc, g.lc, pref, requested, res,
                                     &found) != CUBLAS_STATUS_SUCCESS)
    found = 0;
  cublasLtMatmulPreferenceDestroy(pref);
  return found;
}

/// A uint32 list capability of algorithm a (CUBLASLT_ALGO_CAP_TILE_IDS, ..._STAGES_IDS); empty
/// when it has none.
inline std::vector<uint32_t> capList(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t c) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, c, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
      bytes == 0)
    return {};
  std::vector<uint32_t> v(bytes / sizeof(uint32_t));
  if (cublasLtMatmulAlgoCapGetAttribute(&a, c, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS)
    return {};
  return v;
}

/// An algorithm's configuration: id, tile, stages, cluster shape, swizzling, split-K,
/// reduction scheme, custom option (cublasLt.h's enum values).
inline std::string algoConfig(const cublasLtMatmulAlgo_t& a) {
  int id = 0, tile = 0, sk = 0, red = 0, swz = 0, stages = 0;
  uint16_t cluster = 0;
  uint32_t custom = 0;
  size_t w;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red,
                                       &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
                                       &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                       sizeof cluster, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                       sizeof custom, &w);
  char buf[160];
  std::snprintf(buf, sizeof buf, "id %d tile %d stages %d cluster %d swz %d splitk %d red %d opt %u",
                id, tile, stages, (int)cluster, swz, sk, red, custom);
  return buf;
}

#endif // TGC_BENCH_CUDA_GEMM_BENCH_H
