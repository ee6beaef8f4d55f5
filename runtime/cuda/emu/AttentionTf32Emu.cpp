// AttentionTf32Emu.cpp — builds runtime/cuda/AttentionTf32.cu with the host compiler against the
// CPU emulator (see CudaEmu.h; it emulates mma.sync m16n8k8 tf32 and cvt.rna.tf32.f32).
// Compiled with -DTGRT_CUDA_EMULATE.
#include "runtime/cuda/AttentionTf32.cu"
