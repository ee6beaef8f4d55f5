// bench_check.h: the error checks of the standalone CUDA benches in bench/cuda (gemm_sweep, gemm_configs,
// gemm_pairs): CK(cuda call) and BK(cuBLASLt call) print the file, line and error, then exit.
#ifndef TGC_BENCH_CUDA_BENCH_CHECK_H
#define TGC_BENCH_CUDA_BENCH_CHECK_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));      \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
#define BK(x)                                                                               \
  do {                                                                                      \
    cublasStatus_t s_ = (x);                                                                \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "%s:%d: cublas status %d\n", __FILE__, __LINE__, (int)s_);       \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

#endif // TGC_BENCH_CUDA_BENCH_CHECK_H
