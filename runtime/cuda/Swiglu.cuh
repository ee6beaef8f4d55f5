// Swiglu.cuh — SwiGLU's elementwise arithmetic (Shazeer 2020, "GLU Variants Improve
// Transformer", eq. 6: FFN_SwiGLU = (Swish(x W) * x V) W2, Swish_1 = silu), shared by the
// elementwise kernels (Llama.cu swiglu_fwd_kernel / swiglu_bwd_kernel) and the own GEMM's
// SwiGLU-backward epilogue (Gemm.cu), so both compute the same bits from the same inputs.
#ifndef TGRT_CUDA_SWIGLU_CUH
#define TGRT_CUDA_SWIGLU_CUH

#include "runtime/cuda/Device.h"

#include <cmath>

namespace tgrt_cuda {

/// sigmoid(g) = 1 / (1 + e^-g), f32, with the hardware exponential and reciprocal (__expf,
/// __fdividef: relative errors near 2^-21, far below a bf16 unit in the last place; g -> -inf
/// gives 0, g -> +inf 1). The precise expf and IEEE division took ~45 instructions per element
/// of the backward; with 3 epilogue warps per SM doing SwiGLU's backward inside the GEMM that
/// was compute-bound (2026-12-02, s20 calls 1-2: 0.77 ms where the GEMM alone takes 0.43).
__device__ __forceinline__ float sigmoidF(float g) {
#ifdef TGRT_CUDA_EMULATE
  return 1.0f / (1.0f + std::exp(-g));
#else
  return __fdividef(1.0f, 1.0f + __expf(-g));
#endif
}

/// The backward of y = silu(g) * up for one element, f32: with s = sigmoid(g),
///   dg = dy * up * s * (1 + g (1 - s)),  du = dy * (g * s).
__device__ __forceinline__ void swigluGrad(float g, float up, float dy, float& dg, float& du) {
  const float s = sigmoidF(g);
  dg = dy * up * s * (1.0f + g * (1.0f - s));
  du = dy * (g * s);
}

} // namespace tgrt_cuda

#endif // TGRT_CUDA_SWIGLU_CUH
