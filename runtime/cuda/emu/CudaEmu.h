// CudaEmu.h — a small CPU emulation of the CUDA subset runtime/cuda uses, so that the CUDA
// kernels (Kernels.cu, Attention.cu) and the check tool build with a plain C++ compiler and
// run on a machine without a GPU (this one, and CI).
//
// How it runs a kernel: the clusters of a grid run one after another (a cluster is one block
// unless the launch asks for more); the threads of a cluster's blocks are cooperative fibers
// (ucontext) on one OS thread. A fiber runs until it reaches __syncthreads() (waits for every
// live thread of its block) or a warp shuffle / __syncwarp (waits for every live thread of
// its warp of 32), then the next fiber runs. So a missing __syncthreads shows up as wrong
// results here too: every thread runs its whole phase before any other thread starts it.
// `__shared__` variables are function statics, which is right only because blocks of
// different clusters never overlap: kernels launched with clusters use dynamic shared memory
// only (each block of the cluster has its own). Named barriers (bar.sync id, count) wait for
// `count` threads of the block; the cluster barrier (barrier.cluster arrive + wait) for every
// live thread of the cluster; a spin wait (an mbarrier's try_wait, Hopper.cuh mbarWait) yields
// the fiber, and a round in which every live thread only spins or waits is reported as a
// deadlock. TMA tile loads (multicast to several blocks of the cluster too) and stores, the
// mbarrier transaction counts and arrivals on another block's mbarrier are emulated
// (tmaLoad2d, tmaLoad2dMulticast, tmaStore2d, mbar*), so Gemm.cu's warp-specialized and
// cluster kernels run here.
//
// Only what the backend uses is here; it is test infrastructure, not a CUDA implementation.
// Build with -DTGRT_CUDA_EMULATE (runtime/cuda/Device.h picks this header then).
#ifndef TGRT_CUDA_EMU_CUDAEMU_H
#define TGRT_CUDA_EMU_CUDAEMU_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

// ---------------------------------------------------------------- language keywords --
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static
#define __grid_constant__

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }

namespace emu {

/// Per-thread (fiber) state visible to kernel code.
struct Thread {
  uint3 idx;
  int linear; ///< threadIdx.x + threadIdx.y*blockDim.x + ...
};
extern Thread* g_thread;
extern uint3 g_blockIdx;
extern dim3 g_blockDim;
extern dim3 g_gridDim;

/// Runs body() once per thread of every block of `grid` (clusters of `clusterX` consecutive
/// blocks along x, in order; the blocks of a cluster run together), with `smemBytes` of
/// dynamic shared memory per block. cudaErrorInvalidValue (cudaGetLastError) when grid.x is
/// not a multiple of clusterX or clusterX is outside [1, 8].
void launch(dim3 grid, dim3 block, size_t smemBytes, const std::function<void()>& body,
            unsigned clusterX = 1);
/// Base of the dynamic shared memory of the running block (16-byte aligned).
void* dynamicSmem();
/// %cluster_ctarank: the running block's rank in its cluster (0 .. clusterSize() - 1).
unsigned clusterCtaRank();
/// %cluster_nctarank: blocks in the running cluster.
unsigned clusterSize();
/// barrier.cluster.arrive + barrier.cluster.wait: waits for every live thread of the cluster.
void clusterSync();
void syncthreads();
void syncwarp();
/// Exchange through the warp: every live thread of the warp posts `bytes` bytes, then reads
/// the value posted by lane `src` (src outside the warp reads the thread's own value).
void warpExchange(const void* mine, void* out, size_t bytes, int srcLane);
inline int laneId() { return g_thread->linear & 31; }
/// Gather through the warp: every live thread posts `bytes` (<= 16) bytes and receives all 32
/// lanes' posts in all[lane * bytes] (lanes past the block's end are left untouched).
void warpGather(const void* mine, void* all, size_t bytes);
/// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (AttentionBf16.cu): d = a b + c with
/// the PTX ISA fragment layouts (lane = 4 g + q: a {A[g][2q..], A[g+8][2q..], A[g][2q+8..],
/// A[g+8][2q+8..]}, b {B[2q..][g], B[2q+8..][g]}, c/d {C[g][2q], C[g][2q+1], C[g+8][2q],
/// C[g+8][2q+1]}). Sums in float, k in order (not the tensor core's order).
void mmaBf16m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                     const float (&c)[4]);
/// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: as mmaBf16m16n8k16 with f16 operands.
void mmaF16m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                    const float (&c)[4]);
/// cvt.rna.tf32.f32: x rounded to TF32 (10 mantissa bits, nearest, ties away from zero),
/// returned as a float with the low 13 mantissa bits zero; inf and NaN pass through.
float tf32Rna(float x);
/// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (AttentionTf32.cu): d = a b + c with the
/// PTX ISA fragment layouts (lane = 4 g + q: a {A[g][q], A[g+8][q], A[g][q+4], A[g+8][q+4]},
/// b {B[q][g], B[q+4][g]}, c/d {C[g][2q], C[g][2q+1], C[g+8][2q], C[g+8][2q+1]}); a and b are
/// fp32 bit patterns, each rounded to TF32 here (tf32Rna) as the tensor core reads only the
/// TF32 bits. Sums in float, k in order (not the tensor core's order).
void mmaTf32m16n8k8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                    const float (&c)[4]);
/// ldmatrix.sync.aligned.m8n8.x{n}{.trans}.shared.b16: lanes 8i..8i+7 give the row addresses
/// of matrix i (16 bytes each); r[i] gets matrix i's fragment (row lane/4, columns 2(lane%4)
/// and +1; transposed with trans).
void ldmatrix(uint32_t* r, int n, bool trans, const void* rowAddr);
/// stmatrix.sync.aligned.m8n8.x{n}.shared.b16 (no .trans): the inverse of ldmatrix: lanes
/// 8i..8i+7 give the row addresses of matrix i (16 bytes each); r[i] is this lane's fragment
/// of matrix i (row lane/4, columns 2(lane%4) and +1), written there.
void stmatrix(const uint32_t* r, int n, const void* rowAddr);
/// wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16} (AttentionBf16.cu): this
/// thread's accumulators d[N / 2] += A B for the 16 rows 16 w .. of its warp w (the warpgroup's
/// 4 warps are the 64 rows), done at once (the async wait that follows is a no-op here).
/// A comes from registers (`a`, the mma.sync m16n8k16 A fragment of the warp's rows) when `a`
/// is non-NULL, else from shared memory through `descA` (K-major). B comes through `descB`:
/// K-major (transB 0) or MN-major (transB 1). Descriptors as the PTX ISA's "Matrix
/// Descriptor": start address (bytes from the dynamic shared memory base, which is taken as
/// 1024-byte aligned) >> 4 in bits 0-13, leading byte offset >> 4 in bits 16-29, stride byte
/// offset >> 4 in 32-45, layout type in bits 62-63: 0 no swizzle (canonical K-major
/// ((8,m),(8,2)):((16B,SBO),(2B,LBO)), MN-major ((8,m),(8,2)):((2B,SBO),(16B,LBO)), MN index
/// first) or 1 128-byte swizzle (K-major ((8,m),(64)):((128B,SBO),(2B)), MN-major
/// ((64,m),(8,k)):((2B,LBO),(128B,SBO)), then byte address bits 4-6 ^= bits 7-9). Sums in
/// float, k in order.
void wgmma(float* d, int n, bool f16, const uint32_t* a, uint64_t descA, uint64_t descB,
           int transB);

/// Lets the other threads of the block run before this one goes on (the body of a spin
/// loop, e.g. a wait on an mbarrier). Dies with "deadlock" when every live thread of the
/// block spins or waits and none of them changed anything since the last round.
void yieldThread();

// mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"),
// the object an 8-byte word of shared memory: an expected arrival count, the arrivals
// pending in the current phase, a transaction count (bytes still to land) and the phase
// parity. The current phase completes when no arrival and no byte is pending: the parity
// flips and the arrivals pending are reset to the count. Kept beside shared memory, keyed by
// the word's offset (a block's barriers are reset with its shared memory).
/// mbarrier.init.shared.b64 [bar], count.
void mbarInit(void* bar, unsigned count);
/// mbarrier.arrive.expect_tx.shared.b64 _, [bar], bytes (bytes = 0: mbarrier.arrive).
void mbarArrive(void* bar, unsigned txBytes = 0);
/// mbarrier.arrive.shared::cluster on the barrier at bar's offset in the shared memory of the
/// cluster's block `rank` (mapa, then a remote arrival; rank may be the running block's).
void mbarArriveCluster(void* bar, unsigned rank);
/// The complete_tx of a bulk copy: `bytes` of the current phase's transactions landed.
void mbarCompleteTx(void* bar, unsigned bytes);
/// mbarrier.try_wait.parity.shared.b64: true when the phase of parity `parity` has completed
/// (the barrier's current phase has the other parity).
bool mbarDone(void* bar, unsigned parity);

/// The emulator's tensor map (the 128-byte CUtensorMap of cuTensorMapEncodeTiled): a 2-D
/// row-major tensor of 2-byte elements, its box and swizzle.
struct alignas(64) TensorMap {
  const void* base;
  uint64_t dims[2];     ///< elements: inner (contiguous), outer
  uint64_t rowBytes;    ///< bytes between consecutive outer indices
  uint32_t box[2];      ///< box extent: inner, outer
  uint32_t elemBytes;   ///< 2
  uint32_t swizzle128;  ///< 1: CU_TENSOR_MAP_SWIZZLE_128B (box inner * elemBytes = 128)
  unsigned char pad[64];
};
/// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst],
/// [map, {c0, c1}], [bar]: copies the box at (inner c0, outer c1) into shared memory at dst
/// (box row r at dst + r * box inner bytes; with swizzle128 the 16-byte chunks of each row
/// permuted by shared-memory address bits 7-9, as the hardware does); elements outside the
/// tensor (either coordinate, negative too) land as zeros. Then completes the box's bytes on
/// bar (all of them, the zero fill included).
void tmaLoad2d(void* dst, const TensorMap* map, int c0, int c1, void* bar);
/// cp.async.bulk.tensor.2d...multicast::cluster [dst], [map, {c0, c1}], [bar], ctaMask: as
/// tmaLoad2d, into the shared memory of every block of the cluster whose rank's bit is set in
/// ctaMask, at dst's offset, each completing the bytes on its own mbarrier at bar's offset.
void tmaLoad2dMulticast(void* dst, const TensorMap* map, int c0, int c1, void* bar,
                        uint16_t ctaMask);
/// cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [map, {c0, c1}], [src]: the box at
/// src (laid out as tmaLoad2d writes it) into the tensor at (inner c0, outer c1); elements
/// outside the tensor are not written. Done at once (commit / wait_group are no-ops here).
void tmaStore2d(const TensorMap* map, const void* src, int c0, int c1);
/// bar.sync id, count: waits until `count` threads (a multiple of 32) of the block reached
/// named barrier `id` (0-15; 0 is also __syncthreads', which this emulator keeps apart).
void namedBarrier(int id, int count);

} // namespace emu

#define threadIdx (::emu::g_thread->idx)
#define blockIdx (::emu::g_blockIdx)
#define blockDim (::emu::g_blockDim)
#define gridDim (::emu::g_gridDim)
#define warpSize 32

inline void __syncthreads() { emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)mask;
  emu::syncwarp();
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  (void)mask;
  (void)width;
  T r;
  emu::warpExchange(&v, &r, sizeof(T), emu::laneId() ^ laneMask);
  return r;
}
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32) {
  (void)mask;
  (void)width;
  T r;
  emu::warpExchange(&v, &r, sizeof(T), srcLane & 31);
  return r;
}
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// Atomics: fibers never interleave inside a call, so plain read-modify-write is atomic.
inline int atomicCAS(int* p, int compare, int value) {
  const int old = *p;
  if (old == compare) *p = value;
  return old;
}
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
inline int atomicMin(int* p, int v) {
  const int old = *p;
  if (v < old) *p = v;
  return old;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
/// Round-to-nearest add that the device compiler never contracts into an FMA (the host
/// compiler here does not contract across this call either).
inline float __fadd_rn(float a, float b) { return a + b; }

// ---------------------------------------------------------------------- runtime API --
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorIllegalState = 401,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
typedef cudaDataType_t cudaDataType;
struct EmuStream;
typedef EmuStream* cudaStream_t;
struct EmuEvent;
typedef EmuEvent* cudaEvent_t;
#define cudaStreamNonBlocking 0x01

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlockOptin;
  int multiProcessorCount;
  int l2CacheSize;
  int major, minor;
};

const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t cudaMalloc(void** p, size_t bytes);
template <typename T>
inline cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
/// Pinned host memory: ordinary host memory here.
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
// Stream capture and graphs (tgrt_run_graph). While a stream captures, launches, async
// copies, memsets and cuBLASLt calls are recorded (their arguments copied as the call saw
// them: host scalars and descriptor attributes baked in, device pointers kept), not run; a
// graph launch runs the recorded work in order. A synchronisation of a capturing stream fails
// with cudaErrorStreamCaptureUnsupported and invalidates the capture, as on a GPU.
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
struct EmuGraph;
typedef EmuGraph* cudaGraph_t;
typedef EmuGraph* cudaGraphExec_t;
typedef void* cudaGraphNode_t;
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
namespace emu {
/// While a stream captures: appends op to its recorded work and returns true (the caller
/// then runs nothing now); otherwise false (CudaEmu.cpp).
bool recording(const std::function<void()>& op);
} // namespace emu

template <typename F>
inline cudaError_t cudaFuncSetAttribute(F* func, cudaFuncAttribute attr, int value) {
  (void)func;
  (void)attr;
  (void)value;
  return cudaSuccess;
}

// ---------------------------------------------------------------------------- cuBLASLt --
// Column-major semantics as documented for cublasLtMatmul: D = alpha op(A) op(B) + beta C,
// strided batches, C not read when beta == 0. The "algorithm" is a plain triple loop (double
// sums). Matrices are CUDA_R_32F, CUDA_R_16BF or CUDA_R_16F (each layout's own type, widened
// exactly; D rounded once, RNE); the bias and the GELU aux have their own types (default D's).
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22,
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,
};
// GELU_AUX_BIAS: D = GELU(alpha op(A) op(B) + bias) with the pre-activation written to the
// aux matrix (column-major, ld EPILOGUE_AUX_LD). GELU is the tanh approximation.
enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 32 | 128 | 4,
  // D = (alpha op(A) op(B)) * GELU'(aux) (aux read, D's shape); the bias pointer receives
  // the sums of D over its columns (one per row).
  CUBLASLT_EPILOGUE_DGELU_BGRAD = 64 | 128 | 16,
  CUBLASLT_EPILOGUE_DGELU = 64 | 128, // the same without the bias gradient
  CUBLASLT_EPILOGUE_BGRADA = 256,     // the bias gradient of A: sums over k, one per row of D
};
enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
};
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};
struct EmuLtHandle;
struct EmuLtDesc;
struct EmuLtLayout;
struct EmuLtPref;
typedef EmuLtHandle* cublasLtHandle_t;
typedef EmuLtDesc* cublasLtMatmulDesc_t;
typedef EmuLtLayout* cublasLtMatrixLayout_t;
typedef EmuLtPref* cublasLtMatmulPreference_t;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
// The configuration the tuning's tile candidates set (Kernels.cu tileCandidates): the
// emulator's algorithms have one algorithm id (66), tiles 128x128 (20) and 96x192 (151),
// custom options 0..1 and any cluster shape; an algorithm's configuration is kept in
// data[5] (tile), data[6] (custom option << 16 | cluster shape), data[7] (split-K).
// AlgoCheck refuses the 2x1 cluster shape, so the refused path runs here too.
enum cublasLtMatmulAlgoConfigAttributes_t {
  CUBLASLT_ALGO_CONFIG_ID = 0,
  CUBLASLT_ALGO_CONFIG_TILE_ID = 1,
  CUBLASLT_ALGO_CONFIG_SPLITK_NUM = 2,
  CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME = 3,
  CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING = 4,
  CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION = 5,
  CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID = 8,
};
enum cublasLtMatmulAlgoCapAttributes_t {
  CUBLASLT_ALGO_CAP_TILE_IDS = 6,
  CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX = 7,
  CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES = 16,
  CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES = 17,
  CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES = 18,
  CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES = 19,
};
enum cublasLtClusterShape_t {
  CUBLASLT_CLUSTER_SHAPE_1x1x1 = 2,
  CUBLASLT_CLUSTER_SHAPE_2x1x1 = 3,
  CUBLASLT_CLUSTER_SHAPE_1x2x1 = 5,
};
enum cublasLtReductionScheme_t { CUBLASLT_REDUCTION_SCHEME_NONE = 0 };
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

const char* cublasLtGetStatusString(cublasStatus_t s);
/// The emulator's "library version" (0): tuning cache keys carry it.
inline size_t cublasLtGetVersion() { return 0; }
cublasStatus_t cublasLtCreate(cublasLtHandle_t* h);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                        cudaDataType_t scale);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t bytes);
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned);
cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    const void* buf, size_t bytes);
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void* buf, size_t bytes, size_t* written);
cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                 cublasLtMatmulAlgoCapAttributes_t attr,
                                                 void* buf, size_t bytes, size_t* written);
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                       cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t* algo,
                                       cublasLtMatmulHeuristicResult_t* result);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t adesc, const void* B,
                              cublasLtMatrixLayout_t bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t cdesc, void* D, cublasLtMatrixLayout_t ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceBytes, cudaStream_t stream);

#endif // TGRT_CUDA_EMU_CUDAEMU_H
