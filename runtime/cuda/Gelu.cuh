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

/// geluF through the identity 0.5 (1 + tanh u) = sigmoid(2 u): GELU(x) = x / (1 + e^(-2u)),
/// with the hardware exponential and division (__expf, __fdividef: relative errors near
/// 2^-21), so about one bf16 unit in the last place of geluF at most and no cancellation for
/// negative x (tanh.approx.f32 in 1 + tanh u lost every digit there: 236 bf16 ulps on the
/// H200, 2026-11-30 call5). The own GEMM's bf16 epilogue uses it (Gemm.cu); the elementwise
/// kernels keep geluF. Limits: x -> -inf gives -0 (the denominator overflows to inf).
__device__ __forceinline__ float geluFast(float xi) {
  const float u = kGeluC * (xi + kGeluA * xi * xi * xi);
#ifdef TGRT_CUDA_EMULATE
  return xi / (1.0f + std::exp(-2.0f * u));
#else
  return __fdividef(xi, 1.0f + __expf(-2.0f * u));
#endif
}

} // namespace tgrt_cuda

#endif // TGRT_CUDA_GELU_CUH
