// Gelu.cuh — GELU (tanh approximation) and its derivative, shared by the elementwise kernels
// (Kernels.cu) and the GEMM epilogue (Gemm.cu), so both compute the same bits.
#ifndef TGRT_CUDA_GELU_CUH
#define TGRT_CUDA_GELU_CUH

#include "runtime/cuda/Device.h"

#include <cmath>

namespace tgrt_cuda {

constexpr float kGeluC = 0.7978845608028654f; // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;

// GELU, tanh approximation (Hendrycks & Gimpel 2016):
//   y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
__device__ __forceinline__ float geluF(float xi) {
  const float u = kGeluC * (xi + kGeluA * xi * xi * xi);
  return 0.5f * xi * (1.0f + tanhf(u));
}
// dx = dy * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2)).
__device__ __forceinline__ float geluGrad(float xi) {
  const float th = tanhf(kGeluC * (xi + kGeluA * xi * xi * xi));
  return 0.5f * (1.0f + th) +
         0.5f * xi * (1.0f - th * th) * kGeluC * (1.0f + 3.0f * kGeluA * xi * xi);
}

} // namespace tgrt_cuda

#endif // TGRT_CUDA_GELU_CUH
