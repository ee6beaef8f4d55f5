// Pdl.cuh — programmatic dependent launch (PDL) on the device side.
//
// Hopper lets a kernel be scheduled while the kernel before it on the stream drains, when
// it is launched with cudaLaunchAttributeProgrammaticStreamSerialization (Internal.h
// launchDependent, on unless TGRT_PDL=0): its blocks start as the previous grid's blocks
// exit, and `griddepcontrol.wait` holds each of them until that grid has completed and its
// memory is visible. So every kernel launched that way calls pdlWait() before it reads or
// writes global memory, as its first statement (CUDA C++ Programming Guide, "Programmatic
// Dependent Launch and Synchronization"; the PTX ISA, `griddepcontrol`). Launched without the
// attribute, or before sm_90, or under the emulator, pdlWait() returns at once.
//
// Why it holds across more than one edge: a kernel's blocks all pass pdlWait() before they
// exit, so the kernel completes only after the one before it completed; the next kernel's
// wait therefore covers every earlier kernel too.
#ifndef TGRT_CUDA_PDL_CUH
#define TGRT_CUDA_PDL_CUH

namespace tgrt_cuda {

/// Waits until the previous grid on the stream (when this one was launched as its
/// programmatic dependent) has completed and flushed its memory. The first statement of
/// every kernel launched through launchDependent.
__device__ __forceinline__ void pdlWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

} // namespace tgrt_cuda

#endif
