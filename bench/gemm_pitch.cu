// gemm_pitch.cu — does the row pitch of a GEMM's activation operand change cuBLASLt's speed?
//
// tg-bias-rows (docs/design-notes.md "Bias rows") gives the layer norm's output y a row pitch
// of d + 8 (a ones column and 7 zeros); the forward GEMM reads y's first d columns with that
// pitch and the weight gradient reads all d + 8 of them. At d 768 the rows are 1552 bytes
// apart, not a multiple of 128; the qkv forward GEMM measured 5% slower in the step
// (docs/results.md "Bias rows"). This bench times, for each pitch given, the GEMMs the step runs
// with it, each at the fastest of cuBLASLt's heuristic candidates (as the runtime's tuning
// picks, runtime/cuda/Kernels.cu getPlan / ltRun): the forward with the bias epilogue (qkv),
// with GELU_AUX_BIAS (the MLP's up-projection), and the weight gradient with M = d + 8 into f32.
// Row-major C = A B is computed as column-major C^T = B^T A^T, as the runtime does.
//
// Build: nvcc -O2 -arch=sm_90a -o gemm_pitch bench/gemm_pitch.cu -lcublasLt
// Usage: gemm_pitch ROWS D N_QKV N_FC PITCH...   e.g. gemm_pitch 16384 768 2304 3072 768 776 832
// Prints one line per (GEMM, pitch): the best candidate's median time (ms) over 20 runs and
// TFLOP/s. Errors: a CUDA or cuBLASLt call that fails is named and the program exits 1.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define LT(x)                                                                          \
  do {                                                                                 \
    cublasStatus_t s_ = (x);                                                           \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_);  \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

static cublasLtHandle_t lt;
static void* ws;
static const size_t kWs = 64u << 20;

/// Median ms of 20 runs of the fastest candidate for row-major C[m, n] = op(A) B (+ epilogue):
/// A [k rows of pitch lda] (ta: A stored [k, m], read transposed), B [k, n] (ld n).
static double bestMs(int64_t m, int64_t n, int64_t k, int64_t lda, bool ta, cublasLtEpilogue_t epi,
                     cudaDataType_t ctype, const void* A, const void* B, void* C, const void* bias,
                     void* aux) {
  cublasLtMatmulDesc_t desc;
  LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t opA = CUBLAS_OP_N, opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
  LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
  LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    const int32_t bt = CUDA_R_16BF;
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
  }
  if (epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                      sizeof aux));
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &n, sizeof n));
  }
  // cuBLASLt A = our B ([n x k] col-major, ld n); its B = our A: [k x m] col-major with ld lda
  // (ta: [m x k] col-major, ld lda, transposed).
  cublasLtMatrixLayout_t la, lb, lc;
  LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, k, n));
  LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, ta ? m : k, ta ? k : m, lda));
  LT(cublasLtMatrixLayoutCreate(&lc, ctype, n, m, n));
  cublasLtMatmulPreference_t pref;
  LT(cublasLtMatmulPreferenceCreate(&pref));
  LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWs,
                                          sizeof kWs));
  cublasLtMatmulHeuristicResult_t res[32];
  int got = 0;
  LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 32, res, &got));
  const float alpha = 1.0f, beta = 0.0f;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double best = 1e30;
  for (int i = 0; i < got; ++i) {
    std::vector<float> t;
    bool ok = true;
    for (int r = 0; r < 23 && ok; ++r) {
      CK(cudaEventRecord(e0));
      ok = cublasLtMatmul(lt, desc, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &res[i].algo, ws,
                          kWs, 0) == CUBLAS_STATUS_SUCCESS;
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 3) t.push_back(ms);
    }
    if (!ok) continue;
    std::sort(t.begin(), t.end());
    best = std::min(best, (double)t[t.size() / 2]);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  return best;
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s ROWS D N_QKV N_FC PITCH...\n", argv[0]);
    return 1;
  }
  const int64_t rows = std::atoll(argv[1]), d = std::atoll(argv[2]), nq = std::atoll(argv[3]),
                nf = std::atoll(argv[4]);
  int64_t maxP = d + 8;
  for (int i = 5; i < argc; ++i) maxP = std::max<int64_t>(maxP, std::atoll(argv[i]));
  LT(cublasLtCreate(&lt));
  CK(cudaMalloc(&ws, kWs));
  const int64_t nmax = std::max(nq, nf);
  void *y, *w, *bias, *c, *aux, *dh, *dw;
  CK(cudaMalloc(&y, rows * maxP * 2));
  CK(cudaMalloc(&w, (d + 8) * nmax * 2));
  CK(cudaMalloc(&bias, nmax * 2));
  CK(cudaMalloc(&c, rows * nmax * 2));
  CK(cudaMalloc(&aux, rows * nmax * 2));
  CK(cudaMalloc(&dh, rows * nmax * 2));
  CK(cudaMalloc(&dw, (d + 8) * nmax * 4));
  // Small values (bf16 0x3c00 = 0.0078125): no inf / NaN whatever the products.
  CK(cudaMemset(y, 0x3c, rows * maxP * 2));
  CK(cudaMemset(w, 0x3c, (d + 8) * nmax * 2));
  CK(cudaMemset(bias, 0, nmax * 2));
  CK(cudaMemset(dh, 0x3c, rows * nmax * 2));
  std::printf("| GEMM | rows | d | n | pitch | pitch bytes %% 128 | best ms | TFLOP/s |\n|---|---|---|---|---|---|---|---|\n");
  for (int i = 5; i < argc; ++i) {
    const int64_t P = std::atoll(argv[i]);
    struct G {
      const char* name;
      int64_t m, n, k;
      bool ta;
      cublasLtEpilogue_t epi;
      cudaDataType_t ct;
    } gs[] = {
        {"qkv forward (bias)", rows, nq, d, false, CUBLASLT_EPILOGUE_BIAS, CUDA_R_16BF},
        {"fc forward (GELU_AUX_BIAS)", rows, nf, d, false, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
         CUDA_R_16BF},
        {"qkv weight gradient, M = d + 8 (f32)", d + 8, nq, rows, true, CUBLASLT_EPILOGUE_DEFAULT,
         CUDA_R_32F},
        {"fc weight gradient, M = d + 8 (f32)", d + 8, nf, rows, true, CUBLASLT_EPILOGUE_DEFAULT,
         CUDA_R_32F},
    };
    for (const G& g : gs) {
      if (g.ta && P < d + 8) continue; // the weight gradient reads d + 8 columns
      const double ms = g.ta ? bestMs(g.m, g.n, g.k, P, true, g.epi, g.ct, y, dh, dw, bias, aux)
                             : bestMs(g.m, g.n, g.k, P, false, g.epi, g.ct, y, w, c, bias, aux);
      std::printf("| %s | %lld | %lld | %lld | %lld | %lld | %.4f | %.0f |\n", g.name,
                  (long long)rows, (long long)d, (long long)g.n, (long long)P,
                  (long long)(P * 2 % 128), ms, 2.0 * g.m * g.n * g.k / ms / 1e9);
    }
  }
  return 0;
}
