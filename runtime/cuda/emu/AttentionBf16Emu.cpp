// AttentionBf16Emu.cpp — builds runtime/cuda/AttentionBf16.cu with the host compiler against the
// CPU emulator (see CudaEmu.h; it emulates mma.sync m16n8k16 bf16 and ldmatrix). Compiled with
// -DTGRT_CUDA_EMULATE.
#include "runtime/cuda/AttentionBf16.cu"
