// Hopper.cuh — the sm_90a primitives the own tensor-core kernels share (AttentionBf16.cu's
// wgmma attention, Gemm.cu's GEMM): warpgroup MMA ordering (wgmma.fence / commit_group /
// wait_group), wgmma matrix descriptors for 128-byte-swizzled tiles, the async-proxy fence,
// mbarriers, TMA tile loads (cp.async.bulk.tensor, multicast too) and thread block clusters.
// Each has a CPU emulator body (runtime/cuda/emu/CudaEmu.h: emu::wgmma, emu::mbar*,
// emu::tmaLoad2d, emu::clusterSync, emu::yieldThread), so
// tgrt-cuda-emu-check runs the kernels that use them on a machine without a GPU.
//
// Sources: PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma,
// the Matrix Descriptor Format, the 128-byte swizzle), "mbarrier", "cp.async.bulk.tensor"; the
// CUDA driver API's cuTensorMapEncodeTiled (the tensor map a TMA load reads).
#ifndef TGRT_CUDA_HOPPER_CUH
#define TGRT_CUDA_HOPPER_CUH

#include "runtime/cuda/Device.h"
#ifndef TGRT_CUDA_EMULATE
#include <cuda.h> // CUtensorMap
#endif

#include <cstdint>

namespace tgrt_cuda {
namespace hopper {

/// True where the sm_90a instructions below exist (the emulator counts as one).
#if defined(TGRT_CUDA_EMULATE) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TGRT_HOPPER_OPS 1
#else
#define TGRT_HOPPER_OPS 0
#endif

// ---------------------------------------------------------------- wgmma ordering --
// A batch of wgmma is wgFence, the instructions, wgCommit, then wgWait<N> before the
// accumulators are read (or their shared-memory operands overwritten).
__device__ __forceinline__ void wgFence() {
#if !defined(TGRT_CUDA_EMULATE) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgCommit() {
#if !defined(TGRT_CUDA_EMULATE) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
/// Waits until at most N of this warpgroup's committed wgmma groups are pending (groups
/// complete in commit order).
template <int N>
__device__ __forceinline__ void wgWait() {
#if !defined(TGRT_CUDA_EMULATE) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}
__device__ __forceinline__ void wgWait0() { wgWait<0>(); }
/// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (the
/// tensor cores' wgmma reads, TMA) once a barrier orders them.
__device__ __forceinline__ void fenceProxyAsync() {
#ifndef TGRT_CUDA_EMULATE
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// --------------------------------------------------------------- shared memory --
/// The byte address of p in the shared window (the emulator: bytes from its dynamic shared
/// memory base, which it treats as 1024-byte aligned).
__device__ __forceinline__ uint32_t smemAddr(const void* p) {
#ifdef TGRT_CUDA_EMULATE
  return (uint32_t)(static_cast<const char*>(p) - static_cast<const char*>(emu::dynamicSmem()));
#else
  return (uint32_t)__cvta_generic_to_shared(p);
#endif
}

/// p rounded up to the next multiple of 1024 bytes of the shared window (the 128-byte
/// swizzle is a function of the address bits 4-9, so swizzled tiles start there). Callers ask
/// for 1024 bytes more dynamic shared memory than they use.
__device__ __forceinline__ unsigned char* alignSmem1024(void* p) {
  const uint32_t a = smemAddr(p);
  return static_cast<unsigned char*>(p) + ((1024u - (a & 1023u)) & 1023u);
}

/// A wgmma matrix descriptor with 128-byte swizzle (PTX ISA "Matrix Descriptor Format"):
/// start address >> 4 (bits 0-13), leading byte offset >> 4 (16-29), stride byte offset >> 4
/// (32-45), base offset 0 (tiles start at multiples of 1024 bytes of the shared window),
/// layout type 1 (bits 62-63: SWIZZLE_128B).
__device__ __forceinline__ uint64_t wgDesc(const void* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = smemAddr(p);
  return (uint64_t)((a & 0x3ffffu) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
         ((uint64_t)(sbo >> 4) << 32) | (1ull << 62);
}

/// Traps unless the dynamic shared memory starts at a multiple of 1024 bytes of the shared
/// window (the swizzled tiles' pattern is a function of the address).
__device__ __forceinline__ void checkSwizzleBase(const void* smem) {
#ifndef TGRT_CUDA_EMULATE
  if (threadIdx.x == 0 && ((uint32_t)__cvta_generic_to_shared(smem) & 1023u) != 0u) __trap();
#else
  (void)smem;
#endif
}

/// stmatrix.sync.aligned.m8n8.x4.shared.b16 (PTX ISA "Warp-level matrix store"): the warp
/// stores four 8 x 8 b16 matrices; lanes 8 i .. 8 i + 7 give the 16-byte-aligned addresses of
/// the rows of matrix i, and r_i is this lane's fragment of matrix i (row lane / 4, columns
/// 2 (lane % 4) and + 1: an mma / wgmma accumulator pair packed). One instruction where
/// 4-byte stores take four.
__device__ __forceinline__ void stmatrixX4(void* rowAddr, uint32_t r0, uint32_t r1, uint32_t r2,
                                           uint32_t r3) {
#ifdef TGRT_CUDA_EMULATE
  const uint32_t r[4] = {r0, r1, r2, r3};
  emu::stmatrix(r, 4, rowAddr);
#elif TGRT_HOPPER_OPS
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                   smemAddr(rowAddr)),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#endif
}

// -------------------------------------------------------------------- mbarrier --
// An mbarrier is an 8-byte word of shared memory (PTX ISA "mbarrier"): phases that complete
// when `count` arrivals and every byte announced by expect_tx (and landed by TMA's
// complete_tx) are in. Waiters name the phase by its parity.

/// mbarrier.init: `count` arrivals per phase. One thread inits; a __syncthreads after
/// fenceBarrierInit publishes the barriers to the block.
__device__ __forceinline__ void mbarInit(uint64_t* bar, unsigned count) {
#ifdef TGRT_CUDA_EMULATE
  emu::mbarInit(bar, count);
#elif TGRT_HOPPER_OPS
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddr(bar)), "r"(count)
               : "memory");
#endif
}
/// Orders the mbarrier inits before the async proxy's (TMA's) use of them.
__device__ __forceinline__ void fenceBarrierInit() {
#if !defined(TGRT_CUDA_EMULATE) && TGRT_HOPPER_OPS
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
/// One arrival that also announces `bytes` more to land in this phase (expect_tx).
__device__ __forceinline__ void mbarArriveExpectTx(uint64_t* bar, unsigned bytes) {
#ifdef TGRT_CUDA_EMULATE
  emu::mbarArrive(bar, bytes);
#elif TGRT_HOPPER_OPS
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(bar)),
               "r"(bytes)
               : "memory");
#endif
}
/// One arrival.
__device__ __forceinline__ void mbarArrive(uint64_t* bar) {
#ifdef TGRT_CUDA_EMULATE
  emu::mbarArrive(bar, 0);
#elif TGRT_HOPPER_OPS
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smemAddr(bar)) : "memory");
#endif
}
/// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarWait(uint64_t* bar, unsigned parity) {
#ifdef TGRT_CUDA_EMULATE
  while (!emu::mbarDone(bar, parity)) emu::yieldThread();
#elif TGRT_HOPPER_OPS
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smemAddr(bar)), "r"(parity)
                 : "memory");
  } while (!done);
#endif
}

// -------------------------------------------------------------------- clusters --
// Thread block clusters (PTX ISA "Cluster of Cooperative Thread Arrays"): the blocks of a
// cluster run at once on one GPC and reach each other's shared memory and mbarriers.

/// %cluster_ctarank: this block's rank in its cluster (0 without a cluster launch).
__device__ __forceinline__ unsigned clusterCtaRank() {
#ifdef TGRT_CUDA_EMULATE
  return emu::clusterCtaRank();
#elif TGRT_HOPPER_OPS
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
/// barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every non-exited thread of
/// the cluster meets here; shared-memory writes and mbarrier inits before it are visible to
/// the whole cluster after it. Before a block's shared memory is read or written by another
/// block of the cluster, and before a block exits while another may still do so.
__device__ __forceinline__ void clusterSync() {
#ifdef TGRT_CUDA_EMULATE
  emu::clusterSync();
#elif TGRT_HOPPER_OPS
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
#endif
}
/// One arrival on the mbarrier at bar's offset in the shared memory of the cluster's block
/// `rank` (this block's own too): mapa, then the remote arrive (the default .release.cta
/// semantics, as CUTLASS's ClusterBarrier::arrive; a consumer's wgmma reads it releases are
/// complete by its wait_group).
__device__ __forceinline__ void mbarArriveCluster(uint64_t* bar, unsigned rank) {
#ifdef TGRT_CUDA_EMULATE
  emu::mbarArriveCluster(bar, rank);
#elif TGRT_HOPPER_OPS
  asm volatile("{\n.reg .b32 remote;\n"
               "mapa.shared::cluster.u32 remote, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(
                   smemAddr(bar)),
               "r"(rank)
               : "memory");
#endif
}

// ------------------------------------------------------------------------- TMA --
#ifdef TGRT_CUDA_EMULATE
using TensorMap = emu::TensorMap;
#else
using TensorMap = CUtensorMap;
#endif

/// cp.async.bulk.tensor.2d (tile mode): the box of `map` at (inner c0, outer c1) into
/// shared memory at dst (1024-byte aligned with the 128-byte swizzle), out-of-range elements
/// as zeros; its bytes complete on `bar` (announce them first with mbarArriveExpectTx).
/// `map` must be a __grid_constant__ kernel parameter (or in global / constant memory).
__device__ __forceinline__ void tmaLoad2d(void* dst, const TensorMap* map, int c0, int c1,
                                          uint64_t* bar) {
#ifdef TGRT_CUDA_EMULATE
  emu::tmaLoad2d(dst, map, c0, c1, bar);
#elif TGRT_HOPPER_OPS
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(smemAddr(dst)),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smemAddr(bar))
               : "memory");
#endif
}

/// tmaLoad2d multicast (.multicast::cluster): the box lands at dst's offset in the shared
/// memory of every block of the cluster whose rank's bit is set in ctaMask, its bytes
/// completing on each one's mbarrier at bar's offset (each block announces them itself).
__device__ __forceinline__ void tmaLoad2dMulticast(void* dst, const TensorMap* map, int c0,
                                                   int c1, uint64_t* bar, uint16_t ctaMask) {
#ifdef TGRT_CUDA_EMULATE
  emu::tmaLoad2dMulticast(dst, map, c0, c1, bar, ctaMask);
#elif TGRT_HOPPER_OPS
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smemAddr(dst)),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smemAddr(bar)),
               "h"(ctaMask)
               : "memory");
#endif
}

/// cp.async.bulk.tensor.2d (tile mode) store: the box at src (shared memory, laid out as
/// tmaLoad2d writes it) into the tensor of `map` at (inner c0, outer c1); elements outside the
/// tensor are not written. Writers of src first fenceProxyAsync and meet at a barrier; the
/// store is asynchronous: bulkCommit, then bulkWaitRead before src is written again.
__device__ __forceinline__ void tmaStore2d(const TensorMap* map, const void* src, int c0, int c1) {
#ifdef TGRT_CUDA_EMULATE
  emu::tmaStore2d(map, src, c0, c1);
#elif TGRT_HOPPER_OPS
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(smemAddr(src))
               : "memory");
#endif
}
/// cp.async.bulk.commit_group: closes the group of this thread's bulk stores so far.
__device__ __forceinline__ void bulkCommit() {
#if !defined(TGRT_CUDA_EMULATE) && TGRT_HOPPER_OPS
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
/// cp.async.bulk.wait_group.read N: waits until at most N of this thread's committed bulk
/// groups still read their shared-memory source.
template <int N>
__device__ __forceinline__ void bulkWaitRead() {
#if !defined(TGRT_CUDA_EMULATE) && TGRT_HOPPER_OPS
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
#endif
}
/// cp.async.bulk.wait_group N: waits until at most N of this thread's committed bulk groups
/// are incomplete (their global writes done); before the kernel's results are read by others.
template <int N>
__device__ __forceinline__ void bulkWait() {
#if !defined(TGRT_CUDA_EMULATE) && TGRT_HOPPER_OPS
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
#endif
}
/// bar.sync id, count: the `count` threads (a multiple of 32) that name barrier `id` (1-15;
/// 0 is __syncthreads') wait for each other.
__device__ __forceinline__ void namedBarrierSync(int id, int count) {
#ifdef TGRT_CUDA_EMULATE
  emu::namedBarrier(id, count);
#else
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
#endif
}

} // namespace hopper
} // namespace tgrt_cuda

#endif // TGRT_CUDA_HOPPER_CUH
