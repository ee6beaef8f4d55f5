// Device.h — what the CUDA sources include instead of <cuda_runtime.h> and <cublasLt.h>.
//
// With -DTGRT_CUDA_EMULATE the same sources build with a host C++ compiler against the CPU
// emulator in emu/CudaEmu.h (used by tgrt-cuda-emu-check, which runs without a GPU).
#ifndef TGRT_CUDA_DEVICE_H
#define TGRT_CUDA_DEVICE_H

#ifdef TGRT_CUDA_EMULATE
#include "runtime/cuda/emu/CudaEmu.h"
/// Declares `float* name` pointing at the block's dynamic shared memory (16-byte aligned).
#define TGRT_DYNAMIC_SMEM(name) float* name = static_cast<float*>(::emu::dynamicSmem())
#else
#include <cublasLt.h>
#include <cuda_runtime.h>
#define TGRT_DYNAMIC_SMEM(name)                                                                  \
  extern __shared__ float4 tgrt_dynamic_smem_[];                                                 \
  float* name = reinterpret_cast<float*>(tgrt_dynamic_smem_)
#endif

#endif // TGRT_CUDA_DEVICE_H
