// LlamaEmu.cpp — builds runtime/cuda/Llama.cu with the host compiler against the CPU emulator
// (see CudaEmu.h). Compiled with -DTGRT_CUDA_EMULATE.
#include "runtime/cuda/Llama.cu"
