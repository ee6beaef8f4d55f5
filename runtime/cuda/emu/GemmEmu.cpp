// GemmEmu.cpp — builds runtime/cuda/Gemm.cu with the host compiler against the CPU emulator
// (TMA, mbarriers and wgmma emulated; see CudaEmu.h). Compiled with -DTGRT_CUDA_EMULATE.
#include "runtime/cuda/Gemm.cu"
