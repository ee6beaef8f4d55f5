// ContextEmu.cpp — builds runtime/cuda/Context.cu with the host compiler against the CPU emulator
// (see CudaEmu.h). Compiled with -DTGRT_CUDA_EMULATE.
#include "runtime/cuda/Context.cu"
