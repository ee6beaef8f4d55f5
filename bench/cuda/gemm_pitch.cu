// gemm_pitch: does the row pitch of a GEMM's activation operand change cuBLASLt's speed?
//
// tg-bias-rows (docs/design-notes.md "Bias rows") gives the layer norm's output y extra
// columns (a 1, then zeros): the forward GEMM reads y's first d columns with y's pitch and the
// weight gradient its first d + 8. With a pitch of d + 8 the rows are 1552 bytes apart at d 768,
// not a multiple of 128. This bench times, for each pitch given, the GEMMs the step runs on y,
// each at the fastest of cuBLASLt's heuristic candidates (median of 20 calls after 3, as the
// runtime's tuning picks): the qkv forward with the bias epilogue, the MLP up-projection with
// GELU_AUX_BIAS, and both weight gradients with M = d + 8 into f32. The mapping and buffers are
// gemm_bench.h's (the runtime's: cuBLASLt's B is our a, with ld = the pitch).
//
// Build (CPU machine): nvcc -O2 -std=c++17 -arch=sm_90a bench/cuda/gemm_pitch.cu -lcublasLt
//   -o runs/bench/gemm_pitch.   Run (GPU): runs/bench/gemm_pitch ROWS D N_QKV N_FC PITCH...
//   e.g. gemm_pitch 16384 768 2304 3072 768 776 832 (bench/results/2026-12-01-h200/s12 call2).
// Prints a markdown table: one row per (GEMM, pitch) with the best median ms and TFLOP/s.
// Errors: a CUDA or cuBLASLt call that fails is named (bench_check.h) and the program exits 1.
#include "gemm_bench.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
const size_t kWs = 64u << 20;

/// The best median ms over the heuristic's candidates for s (-1: none ran).
double bestMs(const GemmBuffers& buf, const Shape& s) {
  const GemmSetup g(s, buf.Bias, buf.Aux);
  cublasLtMatmulHeuristicResult_t res[32];
  const int found = heuristicAlgos(buf.lt, g, kWs, res, 32);
  const float alpha = 1.0f, beta = s.beta;
  double best = -1;
  for (int i = 0; i < found; ++i) {
    std::vector<float> t;
    bool ok = true;
    for (int r = 0; r < 23 && ok; ++r) {
      CK(cudaEventRecord(buf.e0, buf.st));
      ok = cublasLtMatmul(buf.lt, g.desc, &alpha, buf.B, g.la, buf.A, g.lb, &beta, buf.C, g.lc,
                          buf.C, g.lc, &res[i].algo, buf.W, kWs, buf.st) == CUBLAS_STATUS_SUCCESS;
      CK(cudaEventRecord(buf.e1, buf.st));
      CK(cudaEventSynchronize(buf.e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, buf.e0, buf.e1));
      if (r >= 3) t.push_back(ms);
    }
    if (!ok) continue;
    std::sort(t.begin(), t.end());
    const double med = t[t.size() / 2];
    if (best < 0 || med < best) best = med;
  }
  return best;
}
} // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s ROWS D N_QKV N_FC PITCH...\n", argv[0]);
    return 1;
  }
  const int64_t rows = std::atoll(argv[1]), d = std::atoll(argv[2]), nq = std::atoll(argv[3]),
                nf = std::atoll(argv[4]);
  std::vector<Shape> shapes;
  for (int i = 5; i < argc; ++i) {
    const int64_t p = std::atoll(argv[i]);
    shapes.push_back({"qkv forward (bias)", rows, nq, d, 0, 0, false, 0.f, kBias, p});
    shapes.push_back(
        {"fc forward (GELU_AUX_BIAS)", rows, nf, d, 0, 0, false, 0.f, kGeluAuxBias, p});
    if (p >= d + 8) { // the weight gradients read d + 8 columns
      shapes.push_back(
          {"qkv weight gradient, M = d + 8 (f32)", d + 8, nq, rows, 1, 0, true, 0.f, kNone, p});
      shapes.push_back(
          {"fc weight gradient, M = d + 8 (f32)", d + 8, nf, rows, 1, 0, true, 0.f, kNone, p});
    }
  }
  const GemmBuffers buf(shapes, kWs);
  std::printf(
      "| GEMM | rows | d | n | pitch | pitch bytes %% 128 | best ms | TFLOP/s |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    const double ms = bestMs(buf, s);
    std::printf("| %s | %lld | %lld | %lld | %lld | %lld | %.4f | %.0f |\n", s.name,
                (long long)rows, (long long)d, (long long)s.n, (long long)s.lda,
                (long long)(s.lda * 2 % 128), ms, ms > 0 ? 2.0 * s.m * s.n * s.k / ms / 1e9 : 0.0);
  }
  return 0;
}
