// Swiglu.cuh — SwiGLU's elementwise arithmetic (Shazeer 2020, "GLU Variants Improve
// Transformer", eq. 6: FFN_SwiGLU = (Swish(x W) * x V) W2, Swish_1 = silu), shared by the
// elementwise kernels (Llama.cu swiglu_fwd_kernel / swiglu_bwd_kernel) and the own GEMM's
// SwiGLU-backward epilogue (Gemm.cu), so both compute the same bits from the same inputs.
#ifndef TGRT_CUDA_SWIGLU_CUH
#define TGRT_CUDA_SWIGLU_CUH

#include "runtime/cuda/Device.h"

#include <cmath>

namespace tgrt_cuda {

/// sigmoid(g) = 1 / (1 + e^-g), f32 (expf: the precise exponential).
__device__ __forceinline__ float sigmoidF(float g) { return 1.0f / (1.0f + expf(-g)); }

/// The backward of y = silu(g) * up for one element, f32: with s = sigmoid(g),
///   dg = dy * up * s * (1 + g (1 - s)),  du = dy * (g * s).
__device__ __forceinline__ void swigluGrad(float g, float up, float dy, float& dg, float& du) {
  const float s = sigmoidF(g);
  dg = dy * up * s * (1.0f + g * (1.0f - s));
  du = dy * (g * s);
}

} // namespace tgrt_cuda

#endif // TGRT_CUDA_SWIGLU_CUH
