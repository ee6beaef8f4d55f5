// AttentionEmu.cpp — builds runtime/cuda/Attention.cu with the host compiler against the CPU emulator
// (see CudaEmu.h). Compiled with -DTGRT_CUDA_EMULATE.
#include "runtime/cuda/Attention.cu"
