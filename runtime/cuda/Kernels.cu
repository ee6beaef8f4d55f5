// Kernels.cu — the CUDA "kernels" half of runtime/tgrt.h, except attention (Attention*.cu).
//
// Element types. Every kernel is a template on the storage type of its tensors (float, bf16_t,
// f16_t; Dtype.cuh) with float arithmetic: low-precision inputs are widened exactly, outputs
// rounded once (RNE). The host functions dispatch on the runtime dtype arguments. Memory-bound
// kernels move 16 bytes per access (4 f32 or 8 bf16 / f16 elements, a "pack") when the
// pointers are 16-byte aligned (and, for rows, the row lengths whole packs); otherwise the
// same kernel runs its scalar loop, with identical results. The f32 instantiations compute
// exactly what the fp32-only backend computed (same operations in the same order).
//
// One kernel per operation, the math in a comment above it, the launch in the host function
// below it. Reductions are deterministic: every sum has a fixed order that depends only on
// the sizes (block partials written to the workspace, then reduced in index order by one
// block), never on float atomics or on the device.
// GEMMs go to cuBLASLt: f32 with CUBLAS_COMPUTE_32F (TGRT_TF32=1 allows TF32 tensor cores),
// bf16 / f16 operands (CUDA_R_16BF / CUDA_R_16F for A, B, C, D, bias and GELU aux) with
// CUBLAS_COMPUTE_32F and float alpha / beta.
#include "runtime/cuda/Dtype.cuh"
#include "runtime/cuda/Gelu.cuh"
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/Pdl.cuh"
#include "runtime/AdamwIslands.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <type_traits>

#ifdef TGRT_CUDA_EMULATE
#include <numeric>
#include <vector>
#else
#include <cub/device/device_radix_sort.cuh>
#endif

namespace tgrt_cuda {
namespace {

constexpr int kBlock = 256; // threads per block of the simple kernels
constexpr int kOnesColumns = TGRT_ONES_COLUMNS; // tgrt_layer_norm_fwd_ones

// ------------------------------------------------------------------ small helpers --

__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warpSumD(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
/// `scratch` holds 33 doubles of shared memory. Fixed order: lanes, then warps.
__device__ double blockSumD(double v, double* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nWarps = blockDim.x >> 5;
  v = warpSumD(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double w = lane < nWarps ? scratch[lane] : 0.0;
    w = warpSumD(w);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const double total = scratch[32];
  __syncthreads(); // scratch may be reused right after
  return total;
}

/// Max over the block, as blockSumD. `scratch` holds 33 floats.
__device__ float blockMax(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nWarps = blockDim.x >> 5;
  v = warpMax(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < nWarps ? scratch[lane] : -INFINITY;
    w = warpMax(w);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const float total = scratch[32];
  __syncthreads();
  return total;
}

/// Records the first device-side error (see DeviceErrorCode).
__device__ void reportError(DeviceState* st, int32_t code, int32_t loc, long long a, long long b,
                            long long c) {
  if (atomicCAS(&st->error_code, 0, code) == 0) {
    st->error_loc = loc;
    st->error_a = a;
    st->error_b = b;
    st->error_c = c;
  }
}

/// Workspace bytes rounded up so that consecutive scratch arrays stay 256-byte aligned.
inline int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Bytes of one element of dt (fails on an unknown dtype).
inline int64_t elemBytes(const char* loc, const char* what, int32_t dt) {
  const int64_t s = tgrt_dtype_size(dt);
  if (s == 0) fail(loc, "%s: unknown dtype %d (expected 0 f32, 1 bf16 or 2 f16)", what, (int)dt);
  return s;
}

inline bool aligned16(const void* p) { return ((uintptr_t)p & 15u) == 0; }
inline bool aligned16(const void* a, const void* b) { return aligned16(a) && aligned16(b); }
inline bool aligned16(const void* a, const void* b, const void* c) {
  return aligned16(a) && aligned16(b) && aligned16(c);
}
inline bool aligned16(const void* a, const void* b, const void* c, const void* d) {
  return aligned16(a, b) && aligned16(c, d);
}

// ---------------------------------------------------------------- pack arithmetic --
// Fixed-order sums over a pack's W (4 or 8) values: pairs, then pairs of pairs (for W = 4 the
// expressions of the fp32-only backend, (x + y) + (z + w)).

template <int W>
__device__ __forceinline__ float packSum(const float (&f)[W]) {
  float s = (f[0] + f[1]) + (f[2] + f[3]);
  if (W == 8) s = s + ((f[4 % W] + f[5 % W]) + (f[6 % W] + f[7 % W]));
  return s;
}
/// sum (f - mu)^2 over the pack.
template <int W>
__device__ __forceinline__ float packSqDev(const float (&f)[W], float mu) {
  const float a = f[0] - mu, b = f[1] - mu, c = f[2] - mu, e = f[3] - mu;
  float s = (a * a + b * b) + (c * c + e * e);
  if (W == 8) {
    const float a2 = f[4 % W] - mu, b2 = f[5 % W] - mu, c2 = f[6 % W] - mu, e2 = f[7 % W] - mu;
    s = s + ((a2 * a2 + b2 * b2) + (c2 * c2 + e2 * e2));
  }
  return s;
}
/// sum f * g over the pack.
template <int W>
__device__ __forceinline__ float packDot(const float (&f)[W], const float (&g)[W]) {
  float s = (f[0] * g[0] + f[1] * g[1]) + (f[2] * g[2] + f[3] * g[3]);
  if (W == 8)
    s = s + ((f[4 % W] * g[4 % W] + f[5 % W] * g[5 % W]) + (f[6 % W] * g[6 % W] + f[7 % W] * g[7 % W]));
  return s;
}

// ------------------------------------------------------------ elementwise framework --

/// Grid-stride elementwise loop over n items: op.vec(i) for the packs [0, n/W) when `vec`
/// (W = Op::kW elements each), then op(i) for the scalar rest (all of [0, n) when not `vec`).
/// Each item is read and written by one thread, so outputs may alias inputs.
template <int W, typename Op>
__global__ void elementwise_kernel(Op op, int64_t n, bool vec) {
  pdlWait();
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nW = n / W;
    for (int64_t i = t; i < nW; i += stride) op.vec(i);
    done = nW * W;
  }
  for (int64_t i = done + t; i < n; i += stride) op(i);
}

/// Launches elementwise_kernel<Op> over n items (packs when `vec`).
template <typename Op>
void launchElementwise(Context* ctx, const char* loc, const char* name, const Op& op, int64_t n,
                       bool vec) {
  constexpr int W = Op::kW;
  launchDependent(ctx, loc, name, elementwise_kernel<W, Op>,
                  dim3(gridFor(vec ? (n + W - 1) / W : n, kBlock)), dim3(kBlock), 0, op, n, vec);
}

// out = a + b across types (TO: a and out; TB: b), float arithmetic, one rounding.
template <typename TO, typename TB>
struct AddMixedOp {
  static constexpr int kW = packWidth<TO, TB>();
  const TO* a;
  const TB* b;
  TO* out;
  __device__ void operator()(int64_t i) const { out[i] = fromF<TO>(toF(a[i]) + toF(b[i])); }
  __device__ void vec(int64_t i) const {
    float x[kW], y[kW];
    ldPack(a, i, x);
    ldPack(b, i, y);
#pragma unroll
    for (int j = 0; j < kW; ++j) x[j] = x[j] + y[j];
    stPack(out, i, x);
  }
};

// out[i] = a[i] + b[i]  (out may alias a or b: each element is read before it is written).
template <typename T>
using AddOp = AddMixedOp<T, T>;

// AddMixedOp plus low = the rounded sum converted to TL (the backward's residual gradient
// and its low-precision copy for the next GEMM, in one pass).
template <typename TO, typename TB, typename TL>
struct AddMixedLowOp {
  static constexpr int kW = packWidth<TO, TB, TL>();
  const TO* a;
  const TB* b;
  TO* out;
  TL* low;
  __device__ void operator()(int64_t i) const {
    const TO s = fromF<TO>(toF(a[i]) + toF(b[i]));
    out[i] = s;
    low[i] = fromF<TL>(toF(s));
  }
  __device__ void vec(int64_t i) const {
    float x[kW], y[kW];
    ldPack(a, i, x);
    ldPack(b, i, y);
#pragma unroll
    for (int j = 0; j < kW; ++j) x[j] = toF(fromF<TO>(x[j] + y[j]));
    stPack(out, i, x);
    stPack(low, i, x);
  }
};

// out[i] = value (already rounded to T; `pattern` is 16 bytes of it).
template <typename T>
struct FillOp {
  static constexpr int kW = (int)(16 / sizeof(T));
  T* out;
  T value;
  uint4 pattern;
  __device__ void operator()(int64_t i) const { out[i] = value; }
  __device__ void vec(int64_t i) const { store16(out + i * kW, pattern); }
};

// dst[i] = src[i] converted (widened exactly, then rounded once to TD).
template <typename TS, typename TD>
struct CastOp {
  static constexpr int kW = packWidth<TS, TD>();
  const TS* src;
  TD* dst;
  __device__ void operator()(int64_t i) const { dst[i] = fromF<TD>(toF(src[i])); }
  __device__ void vec(int64_t i) const {
    float x[kW];
    ldPack(src, i, x);
    stPack(dst, i, x);
  }
};

// C = beta C (the k == 0 GEMM; C not read when beta == 0).
template <typename T>
struct ScaleOp {
  static constexpr int kW = packWidth<T>();
  T* c;
  float beta;
  __device__ void operator()(int64_t i) const {
    c[i] = fromF<T>(beta == 0.0f ? 0.0f : beta * toF(c[i]));
  }
  __device__ void vec(int64_t i) const {
    float x[kW];
    if (beta == 0.0f) {
#pragma unroll
      for (int j = 0; j < kW; ++j) x[j] = 0.0f;
    } else {
      ldPack(c, i, x);
#pragma unroll
      for (int j = 0; j < kW; ++j) x[j] = beta * x[j];
    }
    stPack(c, i, x);
  }
};

// -------------------------------------------------------- scalar tensor accessors --
// The scalar kernels of the mixed-type operations (layer norm, column sums) read and write
// through accessors: Ld<T> / St<T> for a compile-time type, LdDyn / StDyn for a runtime one
// (a switch per element; used only for dtype combinations without a typed instantiation).

template <typename T>
struct Ld {
  const T* p;
  __device__ __forceinline__ float operator()(int64_t i) const { return toF(p[i]); }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};
template <typename T>
struct St {
  T* p;
  __device__ __forceinline__ void operator()(int64_t i, float v) const { p[i] = fromF<T>(v); }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};
/// St that adds the value rounded to T: p[i] = round(p[i] + round(v)) (a T result added into
/// a T gradient slot, bit-equal to a store then tgrt_accumulate).
template <typename T>
struct StAccR {
  T* p;
  __device__ __forceinline__ void operator()(int64_t i, float v) const {
    p[i] = fromF<T>(toF(p[i]) + toF(fromF<T>(v)));
  }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};
/// St that adds: p[i] = round(p[i] + v) (a sum added into a gradient slot).
template <typename T>
struct StAcc {
  T* p;
  __device__ __forceinline__ void operator()(int64_t i, float v) const {
    p[i] = fromF<T>(toF(p[i]) + v);
  }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};
// LdDyn, StDyn and StAccDyn (the runtime-typed accessors of the scalar kernels): Dtype.cuh.

// ---------------------------------------------------------------------- embedding --

// out[i, :] = table[ids[i], :], copied as U units (16-byte words when the row bytes and both
// pointers allow, else elements). One block per token (grid-stride), threads over the row.
// An id outside [0, vocab) is reported (first one wins) and its row is left unwritten.
template <typename U>
__global__ void embedding_fwd_kernel(const U* __restrict__ table, const int32_t* __restrict__ ids,
                                     U* __restrict__ out, int64_t n, int64_t units, int64_t vocab,
                                     DeviceState* st, int32_t loc) {
  pdlWait();
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab) {
      if (threadIdx.x == 0) reportError(st, kEmbeddingIdOutOfRange, loc, id, i, vocab);
      continue;
    }
    const U* src = table + id * units;
    U* dst = out + i * units;
    for (int64_t c = threadIdx.x; c < units; c += blockDim.x) dst[c] = src[c];
  }
}

// positions[i] = i: the payload that the radix sort carries along with the ids.
__global__ void iota_kernel(int32_t* __restrict__ p, int64_t n) {
  pdlWait();
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (int32_t)i;
}

// Deterministic embedding backward over the tokens sorted (stably) by id, in two kernels.
// The sorted positions are cut into chunks of C = embChunk(n) tokens (at most kEmbMaxChunks
// chunks); a "run" is a maximal range of equal sorted ids (its positions in token order).
// embedding_bwd_chunks_kernel, one block per chunk k: for each piece of a run inside the chunk
// it sums dout[pos[p], :] over the piece in float, in sorted (= token) order. A run that lies
// within the chunk is final: dtable[id, :] = the sum, rounded once. A piece of a run that goes
// on past the chunk's end is written to tail[k, :] (float32), the last piece of a run that
// began in an earlier chunk to head[k, :].
// embedding_bwd_join_kernel, one block per chunk k where such a crossing run starts:
// dtable[id, :] = round(tail[k] + tail[k+1] + ... + head[k_end]) (float, chunk order).
// So a run that does not cross a chunk boundary is summed exactly as the CPU reference does;
// a longer one (GPT-2 on real text: one id in 30% of the tokens) is spread over many blocks,
// summed chunk by chunk, and is not bit-equal to the token-order sum (within float rounding).
// Every order depends only on the ids, never on the device or the timing: the result is the
// same on every run. Rows of dtable with no token stay zero (cleared before; with ACC,
// tgrt_embedding_bwd_acc, each run's row is added into and no other row is touched). Ids
// outside [0, vocab) are reported and skipped. Units of W elements (packs of 16 bytes when d, dout and
// dtable allow; else single elements, W = 1); head and tail are float32 [chunks, d].
constexpr int64_t kEmbMinChunk = 32, kEmbMaxChunks = 512;
constexpr int kEmbBatch = 8; // rows whose loads are issued before their adds
/// Tokens per chunk for n tokens: 32, or more when n > 32 * 512 (at most 512 chunks, so the
/// partials take at most 4 KiB * d of workspace).
inline int64_t embChunk(int64_t n) {
  const int64_t c = (n + kEmbMaxChunks - 1) / kEmbMaxChunks;
  return c < kEmbMinChunk ? kEmbMinChunk : c;
}

template <int W, typename T>
__device__ __forceinline__ void ldUnit(const T* p, int64_t iv, float (&f)[W]) {
  if constexpr (W == 1) f[0] = toF(p[iv]);
  else ldPack(p, iv, f);
}
template <int W, typename T>
__device__ __forceinline__ void stUnit(T* p, int64_t iv, const float (&f)[W]) {
  if constexpr (W == 1) p[iv] = fromF<T>(f[0]);
  else stPack(p, iv, f);
}
/// A run's final sum into its row of dtable: stored (rounded to T), or with ACC
/// (tgrt_embedding_bwd_acc) rounded to T, added to the row and the sum rounded to T, as
/// tgrt_accumulate would add the scratch table's row.
template <bool ACC, int W, typename T>
__device__ __forceinline__ void putRow(T* p, int64_t iv, const float (&f)[W]) {
  if constexpr (ACC) {
    float o[W];
    ldUnit(p, iv, o);
#pragma unroll
    for (int j = 0; j < W; ++j) o[j] = o[j] + toF(fromF<T>(f[j]));
    stUnit(p, iv, o);
  } else {
    stUnit(p, iv, f);
  }
}

template <int W, typename T, bool ACC>
__global__ void embedding_bwd_chunks_kernel(const int32_t* __restrict__ keys,
                                            const int32_t* __restrict__ pos,
                                            const T* __restrict__ dout, T* __restrict__ dtable,
                                            float* __restrict__ head, float* __restrict__ tail,
                                            int64_t n, int64_t d, int64_t vocab, int64_t C,
                                            DeviceState* st, int32_t loc) {
  pdlWait();
  const int64_t k = blockIdx.x, p0 = k * C;
  const int64_t m = n - p0 < C ? n - p0 : C;
  const int32_t* kc = keys + p0; // the chunk's sorted ids and their token positions
  const int32_t* pc = pos + p0;
  // Whether the chunk's first run began before it, and whether its last run goes on after it.
  const bool headOpen = p0 > 0 && keys[p0 - 1] == kc[0];
  const bool tailOpen = p0 + m < n && keys[p0 + m] == kc[m - 1];
  const int64_t units = d / W;
  for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
    float acc[W];
#pragma unroll
    for (int j = 0; j < W; ++j) acc[j] = 0.0f;
    int64_t start = 0; // the current piece's first position in the chunk
    for (int64_t b = 0; b < m; b += kEmbBatch) {
      float v[kEmbBatch][W] = {}; // (zeros: only the rows < m are loaded and added)
      int32_t kb[kEmbBatch + 1] = {};
#pragma unroll
      for (int i = 0; i < kEmbBatch; ++i)
        if (b + i < m) ldUnit(dout + (int64_t)pc[b + i] * d, u, v[i]);
#pragma unroll
      for (int i = 0; i <= kEmbBatch; ++i)
        if (b + i < m) kb[i] = kc[b + i];
#pragma unroll
      for (int i = 0; i < kEmbBatch; ++i) {
        const int64_t p = b + i;
        if (p >= m) break;
#pragma unroll
        for (int j = 0; j < W; ++j) acc[j] += v[i][j];
        if (p + 1 < m && kb[i + 1] == kb[i]) continue; // the run goes on in the chunk
        const int32_t id = kb[i];
        if (id >= 0 && id < vocab) {
          if (p == m - 1 && tailOpen) stUnit(tail + k * d, u, acc);
          else if (start == 0 && headOpen) stUnit(head + k * d, u, acc);
          else putRow<ACC>(dtable + (int64_t)id * d, u, acc);
        } else if (u == 0) {
          reportError(st, kEmbeddingIdOutOfRange, loc, id, pc[p], vocab);
        }
#pragma unroll
        for (int j = 0; j < W; ++j) acc[j] = 0.0f;
        start = p + 1;
      }
    }
  }
}

template <int W, typename T, bool ACC>
__global__ void embedding_bwd_join_kernel(const int32_t* __restrict__ keys,
                                          const float* __restrict__ head,
                                          const float* __restrict__ tail, T* __restrict__ dtable,
                                          int64_t n, int64_t d, int64_t vocab, int64_t C) {
  pdlWait();
  __shared__ int32_t sFirst;
  const int64_t chunks = (n + C - 1) / C;
  const int64_t k = blockIdx.x;
  const int64_t p0 = k * C;
  const int64_t last = (p0 + C < n ? p0 + C : n) - 1;
  const int32_t id = keys[last];
  // Active when the chunk's last run goes on past it and starts in it.
  if (last + 1 >= n || keys[last + 1] != id) return;
  if (p0 > 0) {
    int64_t s = last;
    while (s > p0 && keys[s - 1] == id) --s;
    if (s == p0 && keys[p0 - 1] == id) return; // began in an earlier chunk
  }
  if (id < 0 || id >= vocab) return; // reported by the chunks kernel
  // kEnd = the first chunk j > k that the run does not go past (it holds the run's last
  // piece, in head[j]): chunk j's last position e has keys[e] != id or keys[e + 1] != id.
  // blockDim.x chunks are tested at a time; the smallest such j wins.
  int64_t kEnd = -1;
  for (int64_t j0 = k + 1; kEnd < 0 && j0 < chunks; j0 += blockDim.x) {
    if (threadIdx.x == 0) sFirst = 0x7fffffff;
    __syncthreads();
    const int64_t j = j0 + threadIdx.x;
    if (j < chunks) {
      const int64_t e = (j + 1) * C - 1 < n - 1 ? (j + 1) * C - 1 : n - 1;
      if (e >= n - 1 || keys[e] != id || keys[e + 1] != id) atomicMin(&sFirst, (int)threadIdx.x);
    }
    __syncthreads();
    const int f = sFirst;
    __syncthreads(); // sFirst is reset next
    if (f != 0x7fffffff) kEnd = j0 + f;
  }
  if (kEnd < 0) kEnd = chunks - 1; // unreachable: the last chunk ends every run
  const int64_t units = d / W;
  for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
    float acc[W];
    ldUnit(tail + k * d, u, acc);
    for (int64_t j = k + 1; j <= kEnd; j += kEmbBatch) {
      float v[kEmbBatch][W] = {};
#pragma unroll
      for (int i = 0; i < kEmbBatch; ++i)
        if (j + i <= kEnd) ldUnit((j + i == kEnd ? head : tail) + (j + i) * d, u, v[i]);
#pragma unroll
      for (int i = 0; i < kEmbBatch; ++i) {
        if (j + i > kEnd) break;
#pragma unroll
        for (int q = 0; q < W; ++q) acc[q] += v[i][q];
      }
    }
    putRow<ACC>(dtable + (int64_t)id * d, u, acc);
  }
}

// ---------------------------------------------------------------------- positional --

// dwpe[s, c] = sum_b dout[b, s, c] (b in order, double accumulation) for s < t;
// dwpe[s, c] = 0 for t <= s < context. One thread per (s, c).
template <typename T>
__global__ void positional_bwd_kernel(const T* __restrict__ dout, T* __restrict__ dwpe,
                                      int64_t batch, int64_t t, int64_t d, int64_t context) {
  pdlWait();
  const int64_t n = context * d;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t s = i / d;
    if (s >= t) {
      dwpe[i] = fromF<T>(0.0f);
      continue;
    }
    double acc = 0.0;
    for (int64_t b = 0; b < batch; ++b) acc += toF(dout[b * t * d + i]);
    dwpe[i] = fromF<T>((float)acc);
  }
}

// ------------------------------------------------------------------ data movement --

/// Shape and strides of a 4-d permutation (see tgrt_transpose4).
struct Permute4 {
  int64_t ydim[4];    ///< y's shape: ydim[j] = dims[perm[j]]
  int64_t xstride[4]; ///< stride in x of y's axis j: x_stride[perm[j]]
};

// y[j0, j1, j2, j3] = x[i0, i1, i2, i3] with i_perm[k] = j_k: one thread per y element (U the
// element's bits: float or uint16_t), its x offset = sum_k j_k * xstride_of_axis(perm[k]).
// Writes are coalesced. Index type I is uint32_t when every index fits (32-bit division is
// several times cheaper than 64-bit).
template <typename I, typename U>
__global__ void transpose4_kernel(const U* __restrict__ x, U* __restrict__ y, Permute4 p, I n) {
  pdlWait();
  const I yd1 = (I)p.ydim[1], yd2 = (I)p.ydim[2], yd3 = (I)p.ydim[3];
  const I s0 = (I)p.xstride[0], s1 = (I)p.xstride[1], s2 = (I)p.xstride[2],
          s3 = (I)p.xstride[3];
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    I rest = i;
    const I j3 = rest % yd3;
    rest /= yd3;
    const I j2 = rest % yd2;
    rest /= yd2;
    const I j1 = rest % yd1;
    const I j0 = rest / yd1;
    y[i] = x[j0 * s0 + j1 * s1 + j2 * s2 + j3 * s3];
  }
}

// The last axis stays last (perm[3] == 3, e.g. [b, t, h, d] <-> [b, h, t, d]): y is rows of
// d3 contiguous elements, each copied whole from one x row. Items are U units (16-byte words,
// or single elements) of q per row; the row's x offset (in items) is j0*s0 + j1*s1 + j2*s2.
// Reads and writes are both coalesced along the row.
template <typename I, typename U>
__global__ void transpose_rows_kernel(const U* __restrict__ x, U* __restrict__ y, I total, I q,
                                      I yd1, I yd2, I s0, I s1, I s2) {
  pdlWait();
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    const I row = i / q, col = i - row * q;
    const I j2 = row % yd2, r2 = row / yd2;
    const I j1 = r2 % yd1, j0 = r2 / yd1;
    y[i] = x[j0 * s0 + j1 * s1 + j2 * s2 + col];
  }
}

// dst[r, 0:cols] = src[r, 0:cols] with leading dimensions (in U items).
template <typename I, typename U>
__global__ void copy2d_kernel(const U* __restrict__ src, I sld, U* __restrict__ dst, I dld,
                              I total, I q) {
  pdlWait();
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    const I r = i / q, c = i - r * q;
    dst[r * dld + c] = src[r * sld + c];
  }
}

/// The data-movement kernels' element unit for an element size (4: float, 2: uint16_t).
template <typename F>
void withUnit(int64_t esize, F&& f) {
  if (esize == 4) f(float{});
  else f(uint16_t{});
}

// ---------------------------------------------------------------------- layer norm --

// Layer norm (Ba et al. 2016), one warp per row of x [rows, d]:
//   mean = sum_c x / d;  var = sum_c (x - mean)^2 / d  (two passes, biased);
//   rstd = 1 / sqrt(var + eps);  y = (x - mean) * rstd * gamma + beta.
// Scalar form through accessors (any dtypes of x, gamma/beta, y).
// ldy 0: y [rows, d]; else y's rows are ldy = d + kOnesColumns apart and their last
// kOnesColumns columns are written 1, 0, ..., 0 (tgrt_layer_norm_fwd_ones).
template <typename AX, typename AP, typename AY>
__global__ void layer_norm_fwd_kernel(AX x, AP gamma, AP beta, AY y, float* __restrict__ mean,
                                      float* __restrict__ rstd, int64_t rows, int64_t d,
                                      float eps, int64_t ldy = 0) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const int64_t o = r * d;
    float s = 0.0f;
    for (int64_t c = lane; c < d; c += 32) s += x(o + c);
    const float mu = warpSum(s) / (float)d;
    float v = 0.0f;
    for (int64_t c = lane; c < d; c += 32) {
      const float dx = x(o + c) - mu;
      v += dx * dx;
    }
    const float var = warpSum(v) / (float)d;
    const float rs = 1.0f / sqrtf(var + eps);
    const int64_t oy = ldy ? r * ldy : o;
    for (int64_t c = lane; c < d; c += 32) y(oy + c, (x(o + c) - mu) * rs * gamma(c) + beta(c));
    if (ldy)
      for (int c = lane; c < kOnesColumns; c += 32) y(oy + d + c, c == 0 ? 1.0f : 0.0f);
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// Layer norm input gradient, one warp per row (scalar form through accessors):
//   xhat = (x - mean) * rstd,  g = dy * gamma,
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)).
template <typename ADY, typename AX, typename AP, typename ADX>
__global__ void layer_norm_bwd_dx_kernel(ADY dy, AX x, AP gamma, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, ADX dx, int64_t rows,
                                         int64_t d) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const int64_t o = r * d;
    const float mu = mean[r], rs = rstd[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t c = lane; c < d; c += 32) {
      const float g = dy(o + c) * gamma(c);
      sg += g;
      sgx += g * (x(o + c) - mu) * rs;
    }
    const float meanG = warpSum(sg) / (float)d;
    const float meanGX = warpSum(sgx) / (float)d;
    for (int64_t c = lane; c < d; c += 32) {
      const float xhat = (x(o + c) - mu) * rs;
      dx(o + c, rs * (dy(o + c) * gamma(c) - meanG - xhat * meanGX));
    }
  }
}

// The same two kernels with the row held in registers: d a multiple of the pack width W,
// 16-byte aligned pointers and d <= 32 * W * NV; lane l holds the packs l, l + 32, ... (< d/W).
// One read of x (and dy) per row instead of three.
// With a residual branch (TB not void: tgrt_add_layer_norm_fwd) the row is first
// x + b (float add, rounded once to TX, as add_mixed), stored to `sum`, then normalised;
// the statistics see exactly the values the unfused add would have written.
template <int NV, int W, typename TX, typename TP, typename TY, typename TB = void>
__global__ void layer_norm_fwd_vec_kernel(const TX* __restrict__ x, const TP* __restrict__ gamma,
                                          const TP* __restrict__ beta, TY* __restrict__ y,
                                          float* __restrict__ mean, float* __restrict__ rstd,
                                          int64_t rows, int64_t d, float eps,
                                          const TB* __restrict__ b = nullptr,
                                          TX* __restrict__ sum = nullptr, int64_t ldy = 0) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t dW = d / W;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const TX* xr = x + r * d;
    float v[NV][W];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < dW) {
        ldPack(xr, c, v[k]);
        if constexpr (!std::is_void_v<TB>) {
          float bb[W];
          ldPack(b + r * d, c, bb);
#pragma unroll
          for (int j = 0; j < W; ++j) v[k][j] = toF(fromF<TX>(v[k][j] + bb[j]));
          stPack(sum + r * d, c, v[k]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < W; ++j) v[k][j] = 0.0f;
      }
      s += packSum(v[k]);
    }
    const float mu = warpSum(s) / (float)d;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k)
      if (lane + 32 * k < dW) q += packSqDev(v[k], mu);
    const float var = warpSum(q) / (float)d;
    const float rs = 1.0f / sqrtf(var + eps);
    TY* yr = y + r * (ldy ? ldy : d);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < dW) {
        float g[W], b[W], o[W];
        ldPack(gamma, c, g);
        ldPack(beta, c, b);
#pragma unroll
        for (int j = 0; j < W; ++j) o[j] = (v[k][j] - mu) * rs * g[j] + b[j];
        stPack(yr, c, o);
      }
    }
    if (ldy)
      for (int c = lane; c < kOnesColumns; c += 32) yr[d + c] = fromF<TY>(c == 0 ? 1.0f : 0.0f);
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// dx has x's type.
template <int NV, int W, typename TDY, typename TX, typename TP>
__global__ void layer_norm_bwd_dx_vec_kernel(const TDY* __restrict__ dy, const TX* __restrict__ x,
                                             const TP* __restrict__ gamma,
                                             const float* __restrict__ mean,
                                             const float* __restrict__ rstd, TX* __restrict__ dx,
                                             int64_t rows, int64_t d) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t dW = d / W;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float mu = mean[r], rs = rstd[r];
    float xh[NV][W], g[NV][W]; // xhat and dy * gamma
    float sg = 0.0f, sgx = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < dW) {
        float xv[W], dv[W], gm[W];
        ldPack(x + r * d, c, xv);
        ldPack(dy + r * d, c, dv);
        ldPack(gamma, c, gm);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          xh[k][j] = (xv[j] - mu) * rs;
          g[k][j] = dv[j] * gm[j];
        }
      } else {
#pragma unroll
        for (int j = 0; j < W; ++j) xh[k][j] = g[k][j] = 0.0f;
      }
      sg += packSum(g[k]);
      sgx += packDot(g[k], xh[k]);
    }
    const float meanG = warpSum(sg) / (float)d;
    const float meanGX = warpSum(sgx) / (float)d;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < dW) {
        float o[W];
#pragma unroll
        for (int j = 0; j < W; ++j) o[j] = rs * (g[k][j] - meanG - xh[k][j] * meanGX);
        stPack(dx + r * d, c, o);
      }
    }
  }
}

/// Blocks of the fused layer-norm backward: a function of `rows` only (the partition of the
/// rows, and so every sum's order, never depends on the device).
constexpr int64_t kLnBwdMaxBlocks = 256;
/// Packs per lane up to which the fused backward sums a bias gradient itself (DB): its
/// shared-memory sums take 8 x 32 x NV x W floats (32 KB at 4 packs of 8, d 769-1024) beside
/// the 16 KB of the others: 48 KB, the static limit (6 packs would take 64 KB).
constexpr int kLnBwdBiasNV = 4;
inline int64_t lnBwdBlocks(int64_t rows) {
  const int64_t b = (rows + 7) / 8;
  return b < kLnBwdMaxBlocks ? b : kLnBwdMaxBlocks;
}

// Layer norm backward in one pass over dy and x, for the dtype combinations with a 2-byte
// type (all-f32 keeps layer_norm_bwd_dx_vec_kernel + column sums: the fp32-only backend's
// summation order, bit for bit):
// dx as layer_norm_bwd_dx_vec_kernel, and the column sums of dy (dbeta) and dy * xhat
// (dgamma) accumulated in registers by each lane for its packs over the rows of its warp
// (warp w of the grid takes rows w, w + warps, ... in order), then added over the block's 8
// warps in order into part0 / part1 [block, d] (float32; column_finish_kernel sums the
// blocks in order, in double). Grid: lnBwdBlocks(rows) blocks of 256 threads.
// ACC (the residual stream's gradient, tgrt_layer_norm_bwd_acc): dx is read and the sum
// dx + dx_ln stored (rounded to TX); with LOW the rounded sum also goes to low (TL).
// RELOAD (Context::ln_bwd_reload) trades registers for occupancy: false keeps xhat and (ACC,
// NV <= 4) the residual gradient's row in registers from the loads to the store: at NV 3
// (GPT-2's d 768) 165 registers, one block of 256 threads per SM; true reloads x and the
// residual gradient at the store (L1 / L2 hits) and asks for two blocks per SM (at most 128
// registers, no spill at NV 3). Both add the same values in the same order: the same bits.
// H200, 16384 x 768, bf16 dy, f32 x and residual gradient: 0.0846 -> 0.0767 ms; forcing two
// blocks per SM without the reloads spilled (312 bytes) and took 0.0778 ms (2026-11-29).
// DB (ACC only; tgrt_layer_norm_bwd_acc_bgrad): a third column sum, of the values stored
// (low's rounding when LOW, else the updated residual gradient), into part2: the bias
// gradient of the projection whose output the residual stream adds, summed in the same order
// as dbeta. Each lane's running sums live in shared memory, [warp][k][j / 4][lane] float4
// (lanes contiguous: conflict-free 16-byte accesses), not in NV x W more registers: at NV 3
// with RELOAD those spilled 36 bytes and the call took 0.0775 ms against 0.0750 (H200, GPT-2
// small's 16384 x 768, 2026-11-29; 0.0668 without the third sum).
// Bound by its loads' latency (16 warps per SM, one row each; the per-lane column sums are
// what limits the warps). L2 prefetches of the next row and a shared-memory ring of rows
// filled by bulk copies were measured slower (docs/results.md "The layer-norm backward's
// bytes in flight", 2026-11-30; the code in bench/results/2026-11-30-h200/lnpf). Each pass
// issues all of a row's loads before using any (below): inside GPT-2 small's step on the
// H200 0.0668-0.0673 against 0.0731-0.0738 ms per call (2026-12-02, seventeenth session).
// low may be dy itself (tgrt_layer_norm_bwd_acc's in-place copy, where tg-plan-memory puts
// it): a lane reads its packs of the row's dy in the first pass and writes the same packs of
// low in the second; dy and low are therefore not __restrict__ (no dy load may be moved
// after a store to low).
template <int NV, int W, typename TDY, typename TX, typename TP, bool ACC = false,
          bool LOW = false, typename TL = TX, bool RELOAD = false, bool DB = false>
__global__ void __launch_bounds__(256, RELOAD ? 2 : 1)
    layer_norm_bwd_fused_kernel(const TDY* dy, const TX* __restrict__ x,
                                const TP* __restrict__ gamma, const float* __restrict__ mean,
                                const float* __restrict__ rstd, TX* __restrict__ dx,
                                TL* low, float* __restrict__ part0,
                                float* __restrict__ part1, float* __restrict__ part2,
                                int64_t rows, int64_t d) {
  pdlWait();
  static_assert(!DB || ACC, "the bias-gradient sum is of the accumulating form's output");
  static_assert(!DB || W % 4 == 0, "float4 sums");
  __shared__ float s0[8][32 * W];
  __shared__ float s1[8][32 * W];
  __shared__ float4 sb[DB ? 8 : 1][DB ? NV : 1][DB ? W / 4 : 1][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t dW = d / W;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * 8;
  float db[NV][W], dg[NV][W];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
#pragma unroll
    for (int j = 0; j < W; ++j) db[k][j] = dg[k][j] = 0.0f;
    if constexpr (DB) {
#pragma unroll
      for (int q = 0; q < W / 4; ++q)
        sb[DB ? warp : 0][DB ? k : 0][DB ? q : 0][lane] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  for (int64_t r = blockIdx.x * 8 + warp; r < rows; r += warpsPerGrid) {
    const float mu = mean[r], rs = rstd[r];
    // ACC: the residual gradient's row is loaded with x and dy (one memory latency per row;
    // up to 4 packs per lane: with 6 the registers would spill, so it is loaded at the store).
    constexpr bool kPre = ACC && NV <= 4 && !RELOAD;
    constexpr bool kKeepXh = !RELOAD;
    // kHoist: every pack's loads are issued before any of them is used; a lane's packs past
    // the row (c >= dW: rows of fewer than 32 NV packs) read the row's first pack and count as
    // zeros. Loads guarded by c < dW with the pack's arithmetic inside the guard had put each
    // pack's loads in a branch of its own, so its memory latency came after the previous
    // pack's: 3 + 3 in a row at d 768 (the SASS of 2026-12-02). dy stays in its raw 16-byte
    // words (half the registers of floats), unpacked where used. Only the mixed-precision
    // step's forms (bf16 dy, the residual gradient and its low copy, RELOAD, up to 4 packs):
    // in the others (f16, no low copy, 6 packs) ptxas spilled 4-280 bytes more than with the
    // guarded loads, which they keep.
    constexpr bool kHoist = std::is_same<TDY, bf16_t>::value && ACC && LOW && RELOAD && NV <= 4;
    // With kHoist at up to 3 packs the residual gradient's packs are also loaded together, at
    // the top of the second pass (24 registers at NV 3; at NV 4 they would spill).
    constexpr bool kHoistPrev = kHoist && NV <= 3;
    constexpr int kDyWords = (int)(W * sizeof(TDY) / 16);
    static_assert(kDyWords * 16 == (int)(W * sizeof(TDY)), "a pack of dy is whole words");
    uint4 dyw[kHoist ? NV : 1][kDyWords];
    float xv[kHoist ? NV : 1][W];
    float dvk[kHoist ? 1 : NV][W]; // without kHoist: dy's floats, kept for the second pass
    float prev[kPre ? NV : 1][W] = {};
    if constexpr (kHoist) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int64_t c = lane + 32 * k, cl = c < dW ? c : 0;
        ldPack(x + r * d, cl, xv[k]);
#pragma unroll
        for (int u = 0; u < kDyWords; ++u)
          dyw[k][u] = load16(dy + r * d + cl * W + u * (16 / sizeof(TDY)));
      }
    }
    float xh[kKeepXh ? NV : 1][W];
    float sg = 0.0f, sgx = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      const bool in = c < dW;
      float g[W], xk[W];
      if (kHoist || in) {
        float xr[W], dv[W], gm[W];
        if constexpr (kHoist) {
#pragma unroll
          for (int j = 0; j < W; ++j) xr[j] = xv[kHoist ? k : 0][j];
#pragma unroll
          for (int u = 0; u < kDyWords; ++u)
            unpack16(dyw[kHoist ? k : 0][u], dv + u * (16 / sizeof(TDY)), TDY{});
        } else {
          ldPack(x + r * d, c, xr);
          ldPack(dy + r * d, c, dv);
          if constexpr (kPre) ldPack(dx + r * d, c, prev[k]);
        }
        ldPack(gamma, in ? c : 0, gm);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          xk[j] = in ? (xr[j] - mu) * rs : 0.0f;
          g[j] = in ? dv[j] * gm[j] : 0.0f;
          if (in) {
            db[k][j] += dv[j];
            dg[k][j] += dv[j] * xk[j];
          }
          if constexpr (!kHoist) dvk[kHoist ? 0 : k][j] = dv[j];
        }
      } else {
#pragma unroll
        for (int j = 0; j < W; ++j) {
          xk[j] = g[j] = 0.0f;
          if constexpr (!kHoist) dvk[kHoist ? 0 : k][j] = 0.0f;
        }
      }
      if constexpr (kKeepXh) {
#pragma unroll
        for (int j = 0; j < W; ++j) xh[kKeepXh ? k : 0][j] = xk[j];
      }
      sg += packSum(g);
      sgx += packDot(g, xk);
    }
    const float meanG = warpSum(sg) / (float)d;
    const float meanGX = warpSum(sgx) / (float)d;
    float pva[kHoistPrev ? NV : 1][W];
    if constexpr (kHoistPrev) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int64_t c = lane + 32 * k;
        ldPack(dx + r * d, c < dW ? c : 0, pva[kHoistPrev ? k : 0]);
      }
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < dW) {
        float gm[W], o[W], xk[W], dv[W];
        ldPack(gamma, c, gm);
        if constexpr (kHoist) {
#pragma unroll
          for (int u = 0; u < kDyWords; ++u)
            unpack16(dyw[kHoist ? k : 0][u], dv + u * (16 / sizeof(TDY)), TDY{});
        } else {
#pragma unroll
          for (int j = 0; j < W; ++j) dv[j] = dvk[kHoist ? 0 : k][j];
        }
        if constexpr (kKeepXh) {
#pragma unroll
          for (int j = 0; j < W; ++j) xk[j] = xh[kKeepXh ? k : 0][j];
        } else {
          ldPack(x + r * d, c, xk);
#pragma unroll
          for (int j = 0; j < W; ++j) xk[j] = (xk[j] - mu) * rs;
        }
#pragma unroll
        for (int j = 0; j < W; ++j) o[j] = rs * (dv[j] * gm[j] - meanG - xk[j] * meanGX);
        if constexpr (ACC) {
          float pv[W];
          if constexpr (kPre) {
#pragma unroll
            for (int j = 0; j < W; ++j) pv[j] = prev[k][j];
          } else if constexpr (kHoistPrev) {
#pragma unroll
            for (int j = 0; j < W; ++j) pv[j] = pva[kHoistPrev ? k : 0][j];
          } else {
            ldPack(dx + r * d, c, pv);
          }
          packAccRound<TX>(pv, o);
        }
        stPack(dx + r * d, c, o);
        // The low copy rounded once (one 16-byte word of TL): stored, and with DB its values
        // summed (what the stored copy holds).
        float ol[LOW ? W : 1];
        if constexpr (LOW) {
          static_assert(!LOW || W * sizeof(TL) == 16, "a pack of the low copy is one word");
          const uint4 lw = pack16(o, TL{});
          store16(low + r * d + c * W, lw);
          if constexpr (DB) unpack16(lw, ol, TL{});
        }
        if constexpr (DB) {
#pragma unroll
          for (int q = 0; q < W / 4; ++q) {
            float4& a = sb[DB ? warp : 0][DB ? k : 0][DB ? q : 0][lane];
            float4 v = a;
            const float* oq = (LOW ? ol : o) + 4 * q;
            v.x += oq[0];
            v.y += oq[1];
            v.z += oq[2];
            v.w += oq[3];
            a = v;
          }
        }
      }
    }
  }
  // The block's column sums: pack slot k of every lane, warps added in order.
#pragma unroll
  for (int k = 0; k < NV; ++k) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      s0[warp][lane * W + j] = db[k][j];
      s1[warp][lane * W + j] = dg[k][j];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < 32 * W; e += blockDim.x) {
      const int64_t col = (int64_t)32 * W * k + e; // = (lane' + 32 k) * W + j'
      if (col < d) {
        float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f;
        for (int w = 0; w < 8; ++w) {
          t0 += s0[w][e];
          t1 += s1[w][e];
          if constexpr (DB) // column (lane' + 32 k) W + j': lane' = e / W, j' = e % W
            t2 += reinterpret_cast<const float*>(
                &sb[DB ? w : 0][DB ? k : 0][DB ? (e % W) / 4 : 0][e / W])[e % 4];
        }
        part0[blockIdx.x * d + col] = t0;
        part1[blockIdx.x * d + col] = t1;
        if constexpr (DB) part2[blockIdx.x * d + col] = t2;
      }
    }
    __syncthreads();
  }
}

/// Packs per lane for the register kernels (0: use the scalar kernels), for pack width W.
inline int layerNormNV(int64_t d, int W, bool aligned) {
  if (!aligned || d % W != 0) return 0;
  const int64_t per = (d / W + 31) / 32;
  if (W == 4) {
    for (int nv : {1, 2, 4, 6, 8})
      if (per <= nv) return nv;
  } else {
    for (int nv : {1, 2, 3, 4, 6, 8})
      if (per <= nv) return nv;
  }
  return 0;
}

/// Rows per chunk of the column sums: a function of `rows` only, so results never depend on
/// the device. At most kMaxChunks chunks.
constexpr int64_t kMaxChunks = 256;
inline int64_t chunkRows(int64_t rows, int64_t maxChunks = kMaxChunks) {
  const int64_t c = (rows + maxChunks - 1) / maxChunks;
  return c < 32 ? 32 : c;
}

// Column partial sums over a chunk of rows, the first stage of dbias / dgamma / dbeta:
//   part0[chunk, c] = sum_{r in chunk} dy[r, c]
//   part1[chunk, c] = sum_{r in chunk} dy[r, c] * (x[r, c] - mean[r]) * rstd[r]   (if x)
// Block (32, 8): threadIdx.x picks the column (coalesced), threadIdx.y strides the rows; the
// 8 row-lanes are then added in order. grid = (ceil(d/32), chunks).
template <typename AD, typename AX>
__global__ void column_partials_kernel(AD dy, AX x, const float* __restrict__ mean,
                                       const float* __restrict__ rstd, float* __restrict__ part0,
                                       float* __restrict__ part1, int64_t rows, int64_t d,
                                       int64_t rowsPerChunk) {
  pdlWait();
  __shared__ float s0[8][33];
  __shared__ float s1[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rowsPerChunk;
  const int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  const bool hasX = x.valid();
  float a0 = 0.0f, a1 = 0.0f;
  if (c < d) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const float g = dy(r * d + c);
      a0 += g;
      if (hasX) a1 += g * (x(r * d + c) - mean[r]) * rstd[r];
    }
  }
  s0[threadIdx.y][threadIdx.x] = a0;
  s1[threadIdx.y][threadIdx.x] = a1;
  __syncthreads();
  if (threadIdx.y == 0 && c < d) {
    float t0 = 0.0f, t1 = 0.0f;
    for (int k = 0; k < 8; ++k) {
      t0 += s0[k][threadIdx.x];
      t1 += s1[k][threadIdx.x];
    }
    part0[chunk * d + c] = t0;
    if (hasX) part1[chunk * d + c] = t1;
  }
}

// The same partial sums with W consecutive columns per thread (one pack of dy and of x per
// row: 16-byte loads), for d a multiple of W and 16-byte aligned dy, x. Every column's sum
// has exactly the order of column_partials_kernel (rows r0 + y, r0 + y + 8, ..., then the 8
// row-lanes in order), so the results are bit-identical; only the loads are wider.
// grid = (ceil(d / (32 W)), chunks).
template <int W, typename TD, typename TX>
__global__ void column_partials_vec_kernel(const TD* __restrict__ dy, const TX* __restrict__ x,
                                           const float* __restrict__ mean,
                                           const float* __restrict__ rstd,
                                           float* __restrict__ part0, float* __restrict__ part1,
                                           int64_t rows, int64_t d, int64_t rowsPerChunk) {
  pdlWait();
  __shared__ float s0[8][32 * W + 1];
  __shared__ float s1[8][32 * W + 1];
  const int64_t cw = blockIdx.x * 32 + threadIdx.x; // pack index within a row
  const int64_t dW = d / W;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rowsPerChunk;
  const int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  const bool hasX = x != nullptr;
  float a0[W], a1[W];
#pragma unroll
  for (int j = 0; j < W; ++j) a0[j] = a1[j] = 0.0f;
  // Rows r0 + y, r0 + y + 8, ... in order; the loads of kB rows are issued before their adds.
  constexpr int kB = 4;
  if (cw < dW && hasX) {
    for (int64_t rb = r0 + threadIdx.y; rb < r1; rb += 8 * kB) {
      float g[kB][W] = {}, xv[kB][W] = {}, mu[kB] = {}, rs[kB] = {}; // rows past r1 unused
#pragma unroll
      for (int i = 0; i < kB; ++i) {
        const int64_t r = rb + 8 * i;
        if (r < r1) {
          ldPack(dy + r * d, cw, g[i]);
          ldPack(x + r * d, cw, xv[i]);
          mu[i] = mean[r];
          rs[i] = rstd[r];
        }
      }
#pragma unroll
      for (int i = 0; i < kB; ++i) {
        if (rb + 8 * i >= r1) break;
#pragma unroll
        for (int j = 0; j < W; ++j) {
          a0[j] += g[i][j];
          a1[j] += g[i][j] * (xv[i][j] - mu[i]) * rs[i];
        }
      }
    }
  } else if (cw < dW) {
    // dy alone (the bias gradients). Tried and dropped (s7 call3, H200): 16 rows of raw
    // 16-byte words in flight per thread instead of these 8 rows of floats, the same adds:
    // bf16 16384 x 3072 0.0380 against 0.0368 ms, the steps unchanged (docs/results.md).
    for (int64_t rb = r0 + threadIdx.y; rb < r1; rb += 8 * 2 * kB) {
      float g[2 * kB][W] = {};
#pragma unroll
      for (int i = 0; i < 2 * kB; ++i)
        if (rb + 8 * i < r1) ldPack(dy + (rb + 8 * i) * d, cw, g[i]);
#pragma unroll
      for (int i = 0; i < 2 * kB; ++i) {
        if (rb + 8 * i >= r1) break;
#pragma unroll
        for (int j = 0; j < W; ++j) a0[j] += g[i][j];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < W; ++j) {
    s0[threadIdx.y][threadIdx.x * W + j] = a0[j];
    s1[threadIdx.y][threadIdx.x * W + j] = a1[j];
  }
  __syncthreads();
  if (threadIdx.y == 0 && cw < dW) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float t0 = 0.0f, t1 = 0.0f;
      for (int k = 0; k < 8; ++k) {
        t0 += s0[k][threadIdx.x * W + j];
        t1 += s1[k][threadIdx.x * W + j];
      }
      part0[chunk * d + cw * W + j] = t0;
      if (hasX) part1[chunk * d + cw * W + j] = t1;
    }
  }
}

// Second stage: out0[c] = sum_chunk part0[chunk, c] (in chunk order, double), same for out1.
// Each sum is a chain of dependent adds, so the partials are first staged in shared memory:
// a block takes kFinCols columns; its 256 threads copy kFinRows chunks of them at a time
// (coalesced, every load in flight at once), then one lane per (column, output) adds that
// column's values in chunk order. Grid: ceil(d / kFinCols) blocks of 256 threads.
constexpr int kFinCols = 16, kFinRows = 256;
template <typename AO>
__global__ void __launch_bounds__(256)
    column_finish_kernel(const float* __restrict__ part0, const float* __restrict__ part1,
                         AO out0, AO out1, int64_t chunks, int64_t d) {
  pdlWait();
  __shared__ float sp[2][kFinRows][kFinCols + 1];
  const bool two = out1.valid();
  const int64_t c0 = (int64_t)blockIdx.x * kFinCols;
  const int tx = threadIdx.x % kFinCols, ty = threadIdx.x / kFinCols; // 16 x 16
  constexpr int kTy = 256 / kFinCols;
  // Lanes 0..15 of warp 0 sum part0's columns, lanes 16..31 part1's.
  const int lane = threadIdx.x & 31, which = lane / kFinCols;
  const int64_t myCol = c0 + (lane % kFinCols);
  double t = 0.0;
  for (int64_t k0 = 0; k0 < chunks; k0 += kFinRows) {
    const int rowsHere = (int)(chunks - k0 < kFinRows ? chunks - k0 : kFinRows);
    const int64_t c = c0 + tx;
    if (c < d) {
      for (int r = ty; r < rowsHere; r += kTy) {
        sp[0][r][tx] = part0[(k0 + r) * d + c];
        if (two) sp[1][r][tx] = part1[(k0 + r) * d + c];
      }
    }
    __syncthreads();
    if (threadIdx.x < 32 && myCol < d && (which == 0 || two)) {
#pragma unroll 16
      for (int r = 0; r < rowsHere; ++r) t += sp[which][r][lane % kFinCols];
    }
    __syncthreads();
  }
  if (threadIdx.x < 32 && myCol < d) {
    if (which == 0) out0(myCol, (float)t);
    else if (two) out1(myCol, (float)t);
  }
}

/// Row chunks of a bias gradient's column sums over d columns (Context::bgrad_chunks, else a
/// function of d only): about 192 first-stage blocks of 256 columns. H200, 16384 rows of
/// bf16, ms for d = 768 / 2304 / 3072: 256 chunks 0.0208 / 0.0432 / 0.0522, 64 chunks 0.0160
/// / 0.0356 / 0.0391, 16 chunks 0.0196 / 0.0341 / 0.0375 (2026-11-29, tgrt-cuda-check
/// --bench-kernels).
inline int64_t biasGradChunks(const Context* ctx, int64_t d) {
  if (ctx->bgrad_chunks > 0) return ctx->bgrad_chunks;
  const int64_t colBlocks = (d + 255) / 256;
  const int64_t c = 192 / (colBlocks > 0 ? colBlocks : 1);
  return c < 1 ? 1 : c > kMaxChunks ? kMaxChunks : c;
}

/// Typed accessors (Ld<T>) have a pointer type; the dynamic one has none.
template <typename A>
struct PtrOf {
  using type = void;
};
template <typename T>
struct PtrOf<Ld<T>> {
  using type = T;
};

/// dbias-style column sums of dy [rows, d] into out0 (and, with x, dgamma-style into out1)
/// through the workspace; AD / AX / AO are the accessors of dy, x and the outputs. Typed dy
/// and x with whole, aligned packs take the vectorised first stage. The first stage splits
/// the rows into at most maxChunks chunks of >= 32 rows (a function of rows and maxChunks
/// only, so the sums' order never depends on the device).
template <typename AD, typename AX, typename AO>
void columnSums(Context* ctx, const char* loc, AD dy, AX x, const float* mean, const float* rstd,
                AO out0, AO out1, int64_t outBytesPerElem, int64_t rows, int64_t d,
                int64_t maxChunks = kMaxChunks) {
  if (rows == 0) {
    check(cudaMemsetAsync(out0.p, 0, (size_t)(d * outBytesPerElem), ctx->stream), loc,
          "cudaMemsetAsync");
    if (out1.p)
      check(cudaMemsetAsync(out1.p, 0, (size_t)(d * outBytesPerElem), ctx->stream), loc,
            "cudaMemsetAsync");
    return;
  }
  const int64_t per = chunkRows(rows, maxChunks);
  const int64_t chunks = (rows + per - 1) / per;
  const int64_t partBytes = align256(chunks * d * (int64_t)sizeof(float));
  checkWorkspace(ctx, loc, "column sums", 2 * partBytes);
  float* part0 = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  float* part1 = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE] + partBytes);
  const int64_t colBlocks = (d + 31) / 32;
  if (colBlocks > 0x7fffffff || chunks > 65535) fail(loc, "column sums: shape too large");
  bool done = false;
  if constexpr (!std::is_void<typename PtrOf<AD>::type>::value &&
                !std::is_void<typename PtrOf<AX>::type>::value) {
    using TD = typename PtrOf<AD>::type;
    using TX = typename PtrOf<AX>::type;
    constexpr int W = packWidth<TD, TX>();
    if (d % W == 0 && aligned16(dy.p) && aligned16(x.p)) {
      const int64_t vecBlocks = (d / W + 31) / 32;
      launchDependent(ctx, loc, "column_partials_vec_kernel", column_partials_vec_kernel<W, TD, TX>,
                      dim3((unsigned)vecBlocks, (unsigned)chunks), dim3(32, 8), 0, dy.p, x.p, mean,
                      rstd, part0, x.p ? part1 : nullptr, rows, d, per);
      done = true;
    }
  }
  if (!done)
    launchDependent(ctx, loc, "column_partials_kernel", column_partials_kernel<AD, AX>,
                    dim3((unsigned)colBlocks, (unsigned)chunks), dim3(32, 8), 0, dy, x, mean, rstd,
                    part0, x.p ? part1 : nullptr, rows, d, per);
  launchDependent(ctx, loc, "column_finish_kernel", column_finish_kernel<AO>,
                  dim3(gridFor(d, kFinCols, 0x7fffffff)), dim3(256), 0, part0,
                  x.p ? part1 : nullptr, out0, out1, chunks, d);
}

// ------------------------------------------------------------------------- bias --

// out[r, c] = x[r, c] + bias[c]  (out may alias x). Also the positional forward:
//   out[b, s, c] = x[b, s, c] + wpe[s, c]  with rows r = b*t + s and bias row s = r % period.
// Grid: x over the columns (packs when `vec`: pointers 16-byte aligned, n a multiple of the
// pack width), y over the rows (grid-stride); no per-element division.
template <typename T>
__global__ void row_bias_kernel(const T* x, const T* __restrict__ bias, T* out, int64_t rows,
                                int64_t n, int64_t period, bool vec) {
  pdlWait();
  constexpr int W = packWidth<T>();
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (vec) {
    const int64_t nW = n / W;
    if (c >= nW) return;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
      float b[W], v[W];
      ldPack(bias + (r % period) * n, c, b);
      ldPack(x + r * n, c, v);
#pragma unroll
      for (int j = 0; j < W; ++j) v[j] = v[j] + b[j];
      stPack(out + r * n, c, v);
    }
  } else {
    if (c >= n) return;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
      out[r * n + c] = fromF<T>(toF(x[r * n + c]) + toF(bias[(r % period) * n + c]));
  }
}

/// out = x + bias row (r % period) over rows x n.
template <typename T>
void rowBias(Context* ctx, const char* loc, const T* x, const T* bias, T* out, int64_t rows,
             int64_t n, int64_t period) {
  constexpr int W = packWidth<T>();
  const bool vec = n % W == 0 && aligned16(x, bias, out);
  const int64_t cols = vec ? n / W : n;
  const int64_t bx = (cols + 127) / 128;
  if (bx > 0x7fffffff) fail(loc, "bias_add: row too long");
  const int64_t by = std::min<int64_t>(rows, std::max<int64_t>(1, 8192 / bx));
  launchDependent(ctx, loc, "row_bias_kernel", row_bias_kernel<T>,
                  dim3((unsigned)bx, (unsigned)std::min<int64_t>(by, 65535)), dim3(128), 0, x, bias,
                  out, rows, n, period, vec);
}

// --------------------------------------------------------------------------- GELU --

template <typename T>
struct GeluFwdOp {
  static constexpr int kW = packWidth<T>();
  const T* x;
  T* y;
  __device__ void operator()(int64_t i) const { y[i] = fromF<T>(geluF(toF(x[i]))); }
  __device__ void vec(int64_t i) const {
    float v[kW];
    ldPack(x, i, v);
#pragma unroll
    for (int j = 0; j < kW; ++j) v[j] = geluF(v[j]);
    stPack(y, i, v);
  }
};

// dx = dy * GELU'(x) (Gelu.cuh); dx may alias dy.
template <typename T>
struct GeluBwdOp {
  static constexpr int kW = packWidth<T>();
  const T* x;
  const T* dy;
  T* dx;
  __device__ void operator()(int64_t i) const { dx[i] = fromF<T>(toF(dy[i]) * geluGrad(toF(x[i]))); }
  __device__ void vec(int64_t i) const {
    float v[kW], g[kW];
    ldPack(x, i, v);
    ldPack(dy, i, g);
#pragma unroll
    for (int j = 0; j < kW; ++j) g[j] = g[j] * geluGrad(v[j]);
    stPack(dx, i, g);
  }
};

// ------------------------------------------------------------------------ dropout --
// The mask must equal the CPU backend's bit for bit (runtime/cpu/Kernels.cpp): splitmix64's
// finaliser (Steele, Lea & Flood 2014) over a key from (seed, step, micro-batch) and the
// element counter.

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull; // splitmix64 increment, 2^64 / phi

__host__ __device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// key = mix(mix(mix(seed + G) ^ step*G) ^ micro_batch*0xD1B54A32D192ED03), as on the CPU.
inline uint64_t dropoutKey(uint64_t seed, int64_t step, int32_t microBatch) {
  uint64_t h = mix64(seed + kGolden);
  h = mix64(h ^ ((uint64_t)step * kGolden));
  h = mix64(h ^ ((uint64_t)(uint32_t)microBatch * 0xD1B54A32D192ED03ull));
  return h;
}

// Inverted dropout: u_i = (mix64(key + (i+1) G) >> 40) / 2^24 (24 random bits, exact in
// float); y_i = u_i >= rate ? x_i * scale : 0 with scale = 1/(1-rate). y may alias x.
template <typename T>
struct DropoutOp {
  static constexpr int kW = packWidth<T>();
  const T* x;
  T* y;
  float rate, scale;
  uint64_t key;
  __device__ __forceinline__ float apply(int64_t i, float xi) const {
    const uint64_t bits = mix64(key + ((uint64_t)i + 1) * kGolden);
    const float u = (float)(bits >> 40) * (1.0f / 16777216.0f);
    return u >= rate ? xi * scale : 0.0f;
  }
  __device__ void operator()(int64_t i) const { y[i] = fromF<T>(apply(i, toF(x[i]))); }
  __device__ void vec(int64_t i) const {
    float v[kW];
    ldPack(x, i, v);
#pragma unroll
    for (int j = 0; j < kW; ++j) v[j] = apply(i * kW + j, v[j]);
    stPack(y, i, v);
  }
};

// ------------------------------------------------------------- mask and softmax --

// y[b, i, j] = x[b, i, j] if j <= i' and (window <= 0 or i' - j < window), else masked_value,
// where i' = i + tk - tq (query i sits at key position i'). y may alias x.
template <typename T>
__global__ void causal_mask_kernel(const T* x, T* y, int64_t n, int64_t tq, int64_t tk,
                                   int64_t window, T masked) {
  pdlWait();
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < n;
       idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = idx % tk;
    const int64_t i = (idx / tk) % tq;
    const int64_t ip = i + tk - tq;
    const bool keep = j <= ip && (window <= 0 || ip - j < window);
    y[idx] = keep ? x[idx] : masked;
  }
}

// Row softmax, one warp per row of x [rows, n]:
//   M = max_c x_c;  S = sum_c exp(x_c - M);  y_c = exp(x_c - M) / S.
// A row with M = -inf (all masked) gives zeros. y may alias x.
template <typename T>
__global__ void softmax_fwd_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float m = -INFINITY;
    for (int64_t c = lane; c < n; c += 32) m = fmaxf(m, toF(xr[c]));
    m = warpMax(m);
    if (m == -INFINITY) {
      for (int64_t c = lane; c < n; c += 32) yr[c] = fromF<T>(0.0f);
      continue;
    }
    float s = 0.0f;
    for (int64_t c = lane; c < n; c += 32) s += expf(toF(xr[c]) - m);
    const float inv = 1.0f / warpSum(s);
    for (int64_t c = lane; c < n; c += 32) yr[c] = fromF<T>(expf(toF(xr[c]) - m) * inv);
  }
}

// Softmax backward, one warp per row: dx = y * (dy - sum_c(dy_c * y_c)). dx may alias dy
// (the dot product reads the whole row before any element is written).
template <typename T>
__global__ void softmax_bwd_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t n) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const T* yr = y + r * n;
    const T* dyr = dy + r * n;
    T* dxr = dx + r * n;
    float s = 0.0f;
    for (int64_t c = lane; c < n; c += 32) s += toF(dyr[c]) * toF(yr[c]);
    const float dot = warpSum(s);
    for (int64_t c = lane; c < n; c += 32) dxr[c] = fromF<T>(toF(yr[c]) * (toF(dyr[c]) - dot));
  }
}

/// 16-byte loads and stores with streaming cache hints (ld.global.cs / st.global.cs: the
/// lines are evicted first), for data touched once: load16 / store16's values; the emulator
/// has no caches.
__device__ __forceinline__ uint4 load16Cs(const void* p) {
#ifdef TGRT_CUDA_EMULATE
  return load16(p);
#else
  return __ldcs(reinterpret_cast<const uint4*>(p));
#endif
}
__device__ __forceinline__ void store16Cs(void* p, uint4 v) {
#ifdef TGRT_CUDA_EMULATE
  store16(p, v);
#else
  __stcs(reinterpret_cast<uint4*>(p), v);
#endif
}

/// ldPack / stPack with streaming cache hints (AdamW reads and writes every byte of its
/// tensors once per step, so keeping them in L2 only pushes out what the next step's first
/// kernels read). The same values as ldPack / stPack.
template <int W, typename T>
__device__ __forceinline__ void ldPackCs(const T* p, int64_t iv, float (&f)[W]) {
  constexpr int kWords = (int)(W * sizeof(T) / 16), kPer = (int)(16 / sizeof(T));
  const T* base = p + iv * W;
#pragma unroll
  for (int u = 0; u < kWords; ++u) unpack16(load16Cs(base + u * kPer), f + u * kPer, T{});
}
template <int W, typename T>
__device__ __forceinline__ void stPackCs(T* p, int64_t iv, const float (&f)[W]) {
  constexpr int kWords = (int)(W * sizeof(T) / 16), kPer = (int)(16 / sizeof(T));
  T* base = p + iv * W;
#pragma unroll
  for (int u = 0; u < kWords; ++u) store16Cs(base + u * kPer, pack16(f + u * kPer, T{}));
}

// --------------------------------------------------------------- cross entropy --

/// Online (max, sum of exp) update: (m, s) with s = sum exp(z - m) absorbs one z.
__device__ __forceinline__ void onlineAdd(float z, float& m, float& s) {
  if (z > m) {
    s = s * expf(m - z) + 1.0f; // m = -inf: s = 0 * 0 + 1
    m = z;
  } else {
    s += expf(z - m); // z = m = -inf gives NaN: guarded by the caller's -inf check
  }
}

/// Max of a pack (pairs, then pairs of pairs).
template <int W>
__device__ __forceinline__ float packMax(const float (&f)[W]) {
  float m = fmaxf(fmaxf(f[0], f[1]), fmaxf(f[2], f[3]));
  if (W == 8) m = fmaxf(m, fmaxf(fmaxf(f[4 % W], f[5 % W]), fmaxf(f[6 % W], f[7 % W])));
  return m;
}
/// sum exp(f - m) over a pack.
template <int W>
__device__ __forceinline__ float packExpSum(const float (&f)[W], float m) {
  float s = (expf(f[0] - m) + expf(f[1] - m)) + (expf(f[2] - m) + expf(f[3] - m));
  if (W == 8)
    s = s + ((expf(f[4 % W] - m) + expf(f[5 % W] - m)) + (expf(f[6 % W] - m) + expf(f[7 % W] - m)));
  return s;
}

/// The 16-bit logits' cross-entropy ("fast" path, TGRT_CE_FAST, the default): exp(z - m) as
/// 2^(z log2(e) - m log2(e)), one FFMA and one MUFU.EX2 (fastExp2) per element where expf takes
/// eight instructions; the kernels issue-bound on expf (two per element, about 27 instructions
/// per logit in all) become bound by memory. The argument's rounding (|m| log2(e) 2^-24) and
/// ex2.approx's error (about 2^-22) stay far below a bf16 or f16 unit in the last place of the
/// stored gradient. As the flash kernels' softmax (FlashAttention-2, Dao 2023, section 3.1).
constexpr float kLog2e = 1.4426950408889634f;
/// The fast path's variants (TGRT_CE_FAST; numbered as measured, docs/results.md "The
/// cross-entropy on the SFU"): each thread loads kCeUnroll packs (raw 16-byte words) before it
/// uses any, the second pass's loads and the gradient's stores stream (load16Cs, store16Cs: a
/// row's lines leave L2 first once read the second time, and the gradient's lines do not push
/// out rows still waiting for their second read); 6 runs blocks of 512 threads,
/// 2 per SM at 63 registers (about 26 MB of rows in flight on 132 SMs, so most second reads
/// hit L2), 7 blocks of 256, 4 per SM. Dropped after measuring (H200, 16384 x 50304 bf16 in
/// place, 1.11 ms for 6): the same without the streaming hints (1.14-1.15; 1.19-1.20 with 256
/// threads) and 2 packs per batch at 3 blocks of 512 (1.41, spilling at 40 registers). By
/// default each vocabulary takes ceAutoVariant's (6 at GPT-2's and the Llama examples', 7 at
/// 32000 on an H200).
constexpr int kCeUnroll = 4;
/// Threads per block of variant `fast` (0: the expf path).
__host__ __device__ constexpr int ceThreads(int fast) { return fast == 7 ? 256 : 512; }
/// Blocks per SM variant `fast` is compiled for (the expf path: 4 of 512, 32 registers).
__host__ __device__ constexpr int ceMinBlocks(int fast) { return fast == 6 ? 2 : 4; }

/// onlineAdd in the log2 domain (the fast path's leading / trailing elements).
__device__ __forceinline__ void onlineAdd2(float z, float& m, float& s) {
  if (z > m) {
    s = s * fastExp2((m - z) * kLog2e) + 1.0f;
    m = z;
  } else {
    s += fastExp2(fmaf(z, kLog2e, -m * kLog2e));
  }
}
/// sum 2^(f log2(e) - mL) over a pack (mL = m log2(e)).
template <int W>
__device__ __forceinline__ float packExp2Sum(const float (&f)[W], float mL) {
  float e[W];
#pragma unroll
  for (int j = 0; j < W; ++j) e[j] = fastExp2(fmaf(f[j], kLog2e, -mL));
  float t = (e[0] + e[1]) + (e[2] + e[3]);
  if (W == 8) t = t + ((e[4 % W] + e[5 % W]) + (e[6 % W] + e[7 % W]));
  return t;
}

/// A row of `vocab` elements of T at z cut at 16-byte boundaries: h leading elements, np whole
/// packs of W (16-byte aligned) from z + h, then tl trailing elements. So every row takes
/// 16-byte loads, whatever its length and offset (the logits' rows of GPT-2's vocabulary 50257
/// start at every 2-byte offset).
struct RowSplit {
  int h, tl;
  int64_t np;
};
template <typename T>
__device__ __forceinline__ RowSplit rowSplit(const T* z, int64_t vocab) {
  constexpr int W = packWidth<T>();
  RowSplit rs;
  int64_t h = (int64_t)(((16u - ((uintptr_t)z & 15u)) & 15u) / sizeof(T));
  if (h > vocab) h = vocab;
  rs.h = (int)h;
  rs.np = (vocab - h) / W;
  rs.tl = (int)(vocab - h - rs.np * W);
  return rs;
}

/// The fast path's load batch: packs c0, c0 + blockDim.x, ... (kU of them, those below np) of
/// zp as raw 16-byte words, all issued before any is used; STREAM: with the evict-first hint.
template <bool STREAM, typename T, int kU>
__device__ __forceinline__ void loadPacks(const T* zp, int c0, int np, uint4 (&raw)[kU]) {
  constexpr int W = packWidth<T>();
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int c = c0 + u * (int)blockDim.x;
    if (c < np) raw[u] = STREAM ? load16Cs(zp + c * W) : load16(zp + c * W);
  }
}
/// The row's leading and trailing elements around its packs (sp) into the online (m, s): in
/// the log2 domain on the fast path (onlineAdd2), else with expf (onlineAdd).
template <typename T, bool FAST>
__device__ __forceinline__ void addRowEdges(const T* z, const RowSplit& sp, float& m, float& s) {
  constexpr int W = packWidth<T>();
  const int c = threadIdx.x;
  const T* at[2] = {c < sp.h ? z + c : nullptr, c < sp.tl ? z + sp.h + sp.np * W + c : nullptr};
  for (const T* p : at) {
    if (!p) continue;
    const float zc = toF(*p);
    if (zc == -INFINITY) continue;
    if (FAST) onlineAdd2(zc, m, s);
    else onlineAdd(zc, m, s);
  }
}
/// The gradient of the row's leading and trailing elements around its packs (sp):
///   dz_e = scale (p_e - [e == t]),  p_e = exp(z_e - M) / S  (fast path: 2^(z_e log2(e) - mL)).
template <typename T, bool FAST>
__device__ __forceinline__ void writeRowEdges(const T* z, T* dz, const RowSplit& sp, int64_t t,
                                              float M, float mL, float invS, float scale) {
  constexpr int W = packWidth<T>();
  const int c = threadIdx.x;
  const int64_t at[2] = {c < sp.h ? (int64_t)c : -1, c < sp.tl ? sp.h + sp.np * W + c : -1};
  for (const int64_t e : at) {
    if (e < 0) continue;
    const float ze = toF(z[e]);
    const float p = (FAST ? fastExp2(fmaf(ze, kLog2e, -mL)) : expf(ze - M)) * invS;
    dz[e] = fromF<T>(scale * (p - (e == t ? 1.0f : 0.0f)));
  }
}

/// The block's (M, S) with S = sum_c exp(z_c - M) over a row, in one pass: each thread keeps
/// an online (max, sum) over its strided slice (with `vec`: the row's packs (rowSplit) and its
/// few leading / trailing elements; else single elements), then the block combines them.
/// `fscratch` / `dscratch`: 33 floats / 33 doubles. A row of -inf only gives M = -inf (S then
/// unused). z is read in its own type (bf16 / f16 logits are never copied to float32).
/// FAST > 0 (a TGRT_CE_FAST variant; 16-bit logits): the packs in the log2 domain with
/// fastExp2, kCeUnroll of them per load batch.
template <typename T, int FAST>
__device__ void rowMaxSumExp(const T* z, int64_t vocab, bool vec, float* fscratch,
                             double* dscratch, float& M, float& S) {
  constexpr int W = packWidth<T>();
  float m = -INFINITY, s = 0.0f;
  constexpr int kU = kCeUnroll;
  if (FAST > 0 && vec) {
    // kU packs loaded (as raw 16-byte words) before any is used; then per pack its max, a
    // rescale when it exceeds the running max (rare after a row's first packs), its sum.
    const RowSplit sp = rowSplit(z, vocab);
    const T* zp = z + sp.h;
    const int np = (int)sp.np; // vocab < 2^31 (the host's withCeFast)
    float mL = -INFINITY;      // m log2(e)
    for (int c0 = threadIdx.x; c0 < np; c0 += kU * (int)blockDim.x) {
      uint4 raw[kU];
      loadPacks<false>(zp, c0, np, raw);
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (c0 + u * (int)blockDim.x >= np) break;
        float q[W];
        unpack16(raw[u], q, T{});
        const float qm = packMax(q);
        if (qm == -INFINITY) continue;
        if (qm > m) {
          s *= fastExp2((m - qm) * kLog2e); // m = -inf: 0
          m = qm;
          mL = m * kLog2e;
        }
        s += packExp2Sum(q, mL);
      }
    }
    addRowEdges<T, true>(z, sp, m, s);
  } else if (vec) {
    const RowSplit sp = rowSplit(z, vocab);
    const T* zp = z + sp.h;
    for (int64_t c = threadIdx.x; c < sp.np; c += blockDim.x) {
      float q[W];
      ldPack(zp, c, q);
      // Update with the max of the pack first: one rescale at most per pack.
      const float qm = packMax(q);
      if (qm == -INFINITY) continue;
      if (qm > m) {
        s *= expf(m - qm);
        m = qm;
      }
      s += packExpSum(q, m);
    }
    addRowEdges<T, false>(z, sp, m, s);
  } else {
    for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
      const float zc = toF(z[c]);
      if (zc == -INFINITY) continue;
      onlineAdd(zc, m, s);
    }
  }
  M = blockMax(m, fscratch);
  const double part = m == -INFINITY ? 0.0 : (double)s * exp((double)(m - M));
  S = M == -INFINITY ? 0.0f : (float)blockSumD(part, dscratch);
}

// Cross-entropy forward, first stage, one block per row r of logits [rows, vocab]:
//   rowLoss[r] = logsumexp(z_r) - z_r[target_r] = M + log(S) - z_r[t]  (0 when ignored).
// Targets outside [0, vocab) (and != ignore_index) are reported.
template <typename T, int FAST>
__global__ void __launch_bounds__(ceThreads(FAST), ceMinBlocks(FAST))
    cross_entropy_rows_kernel(const T* __restrict__ logits, const int32_t* __restrict__ targets,
                              double* __restrict__ rowLoss, int64_t rows, int64_t vocab,
                              int64_t ignore, DeviceState* st, int32_t loc, bool vec) {
  pdlWait();
  __shared__ float fs[33];
  __shared__ double ds[33];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = targets[r];
    if (t == ignore || t < 0 || t >= vocab) {
      if (threadIdx.x == 0) {
        rowLoss[r] = 0.0;
        if (t != ignore) reportError(st, kTargetOutOfRange, loc, t, r, vocab);
      }
      continue;
    }
    const T* z = logits + r * vocab;
    float M, S;
    rowMaxSumExp<T, FAST>(z, vocab, vec, fs, ds, M, S);
    if (threadIdx.x == 0) rowLoss[r] = (double)M + log((double)S) - (double)toF(z[t]);
  }
}

// Number of rows whose target != ignore_index, into *valid (one block, fixed order).
__global__ void count_valid_kernel(const int32_t* __restrict__ targets, int64_t rows,
                                   int64_t ignore, double* __restrict__ valid) {
  pdlWait();
  __shared__ double ds[33];
  double c = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) c += targets[r] != ignore ? 1.0 : 0.0;
  c = blockSumD(c, ds);
  if (threadIdx.x == 0) *valid = c;
}

// Second stage, one block: loss[0] = sum_r rowLoss[r] / n_valid (0 if no row counts).
__global__ void cross_entropy_finish_kernel(const double* __restrict__ rowLoss,
                                            const int32_t* __restrict__ targets, int64_t rows,
                                            int64_t ignore, float* __restrict__ loss) {
  pdlWait();
  __shared__ double ds[33];
  double s = 0.0, c = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    s += rowLoss[r];
    c += targets[r] != ignore ? 1.0 : 0.0;
  }
  s = blockSumD(s, ds);
  c = blockSumD(c, ds);
  if (threadIdx.x == 0) loss[0] = c > 0.0 ? (float)(s / c) : 0.0f;
}

// Cross-entropy backward fused with its softmax, one block per row:
//   dz_c = dloss * (exp(z_c - M) / S - [c == target]) / n_valid;  ignored rows get 0.
// dlogits may alias logits: the row's M and S are complete (block barriers) before any
// element is overwritten, and each element is read and written by the same thread.
// (The second pass reads the row again; on an H100 keeping a bf16 row of 50304 in shared
// memory instead was slower: 2 blocks per SM hide less latency than the L2 hits it saves; so
// was holding it in registers, one block of 1024 threads per SM: 2.01 vs 1.72 ms at
// 16384 x 50304, 2026-11-23; and so was capping the grid at 2, 3 or 4 blocks per SM so that
// the rows in flight fit L2 for the second read: 1.79, 1.72, 1.70 against 1.68 ms, call24;
// and so was splitting each row over a thread-block cluster of up to 8 blocks of 256 threads
// that hold the row in registers and combine (max, sum) through distributed shared memory,
// read once and written once: on an H200 at 16384 x 50304 bf16 in place 1.54 against 1.34 ms,
// the forward alone 0.77 against 0.49, GPT-2 small's step 31.18 against 30.99 ms, 2026-11-29,
// docs/results.md; and so was a persistent grid of one block per SM with two row buffers in
// shared memory, the next row's copy (one TMA bulk copy, eight of them, or cp.async by every
// thread) in flight while the block reduces and writes the current one, read once: 1.69 ms
// with these expf at 512 threads, 1.35 / 1.34 / 1.55 ms with __expf at 1024 threads, against
// 1.35 ms here, the forward alone 0.59-0.71 against 0.49; and __expf here made this kernel
// slower, 1.47 against 1.35 ms. H200, 2026-11-29, "A cross-entropy read once" in
// docs/results.md. What bounded the kernel was the issue of instructions, not the SFU: expf
// is eight of them, two per logit, about 27 per logit in all; Nsight Compute had the issue
// slots 79% busy and DRAM at 71% (2026-11-30). The 16-bit fast path (FAST > 0, kLog2e) takes
// one FFMA and one MUFU.EX2 per exponential, loads kCeUnroll packs at a time and streams its
// second pass: 1.11 against 1.41 ms at 16384 x 50304 bf16 in place on the H200, issue slots
// 62%, "The cross-entropy on the SFU" in docs/results.md.)
// With rowLoss (tgrt_cross_entropy_fwd_bwd) it also writes the forward's first stage,
// rowLoss[r] = M + log(S) - z_r[t] (0 when ignored), from the same M and S: z_r[t] is read
// by every thread before rowMaxSumExp's barriers, so before any element is overwritten.
template <typename T, int FAST>
__global__ void __launch_bounds__(ceThreads(FAST), ceMinBlocks(FAST))
    cross_entropy_bwd_kernel(const T* logits, const int32_t* __restrict__ targets,
                             const float* __restrict__ dloss, const double* __restrict__ valid,
                             T* dlogits, int64_t rows, int64_t vocab, int64_t ignore,
                             DeviceState* st, int32_t loc, bool vec,
                             double* __restrict__ rowLoss) {
  pdlWait();
  constexpr int W = packWidth<T>();
  __shared__ float fs[33];
  __shared__ double ds[33];
  const double nValid = *valid;
  const float scale = nValid > 0.0 ? (float)((double)dloss[0] / nValid) : 0.0f;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = targets[r];
    const T* z = logits + r * vocab;
    T* dz = dlogits + r * vocab;
    if (t == ignore || t < 0 || t >= vocab) {
      if (t != ignore && threadIdx.x == 0) reportError(st, kTargetOutOfRange, loc, t, r, vocab);
      if (rowLoss && threadIdx.x == 0) rowLoss[r] = 0.0;
      for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) dz[c] = fromF<T>(0.0f);
      continue;
    }
    const float zt = rowLoss ? toF(z[t]) : 0.0f;
    float M, S;
    rowMaxSumExp<T, FAST>(z, vocab, vec, fs, ds, M, S);
    if (rowLoss && threadIdx.x == 0) rowLoss[r] = (double)M + log((double)S) - (double)zt;
    const float invS = 1.0f / S;
    constexpr int kU = kCeUnroll;
    if (FAST > 0 && vec) {
      // dz = 2^(z log2(e) - M log2(e)) (scale / S), the target's element scale (p - 1).
      const RowSplit sp = rowSplit(z, vocab);
      const T* zp = z + sp.h;
      T* dzp = dz + sp.h;
      const int np = (int)sp.np; // vocab < 2^31 (the host's withCeFast)
      const int tp = (int)(t - sp.h), tPack = tp >= 0 ? tp / W : -1;
      const float mL = M * kLog2e, c1 = scale * invS;
      for (int c0 = threadIdx.x; c0 < np; c0 += kU * (int)blockDim.x) {
        uint4 raw[kU];
        loadPacks<true>(zp, c0, np, raw);
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int c = c0 + u * (int)blockDim.x;
          if (c >= np) break;
          float q[W], o[W];
          unpack16(raw[u], q, T{});
#pragma unroll
          for (int j = 0; j < W; ++j) o[j] = fastExp2(fmaf(q[j], kLog2e, -mL)) * c1;
          if (c == tPack) {
            const int jt = tp - tPack * W;
#pragma unroll
            for (int j = 0; j < W; ++j)
              if (j == jt) o[j] = scale * (fastExp2(fmaf(q[j], kLog2e, -mL)) * invS - 1.0f);
          }
          stPackCs(dzp, c, o);
        }
      }
      writeRowEdges<T, true>(z, dz, sp, t, M, mL, invS, scale);
    } else if (vec) {
      // z and dz have the same offset within 16 bytes (the host checks): one split for both.
      const RowSplit sp = rowSplit(z, vocab);
      const T* zp = z + sp.h;
      T* dzp = dz + sp.h;
      const int64_t tp = t - sp.h; // the target's index from zp
      for (int64_t c = threadIdx.x; c < sp.np; c += blockDim.x) {
        float q[W], o[W];
        ldPack(zp, c, q);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          const float p = expf(q[j] - M) * invS;
          o[j] = c * W + j == tp ? scale * (p - 1.0f) : scale * p;
        }
        stPack(dzp, c, o);
      }
      writeRowEdges<T, false>(z, dz, sp, t, M, 0.0f, invS, scale);
    } else {
      for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
        const float p = expf(toF(z[c]) - M) * invS;
        dz[c] = fromF<T>(scale * (p - (c == t ? 1.0f : 0.0f)));
      }
    }
  }
}

// ----------------------------------------------------------------------- optimizer --

/// Blocks of the sum-of-squares first stage: a function of n only (deterministic).
inline int64_t normBlocks(int64_t n) {
  const int64_t b = (n + 4095) / 4096;
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

/// Sum of the squares of a pack's values in double, (x^2 + y^2) + (z^2 + w^2) per 4.
template <int W>
__device__ __forceinline__ double packSqD(const float (&f)[W]) {
  double s = ((double)f[0] * (double)f[0] + (double)f[1] * (double)f[1]) +
             ((double)f[2] * (double)f[2] + (double)f[3] * (double)f[3]);
  if (W == 8)
    s = s + (((double)f[4 % W] * (double)f[4 % W] + (double)f[5 % W] * (double)f[5 % W]) +
             ((double)f[6 % W] * (double)f[6 % W] + (double)f[7 % W] * (double)f[7 % W]));
  return s;
}

// Sum of squares, first stage: part[b] = sum over block b's grid-stride slice of g_i^2
// (double per thread, then the block's fixed-order sum).
// With `vec` (g 16-byte aligned) the slice is packs, then the scalar tail.
template <typename T>
__global__ void sumsq_partial_kernel(const T* __restrict__ g, int64_t n, double* __restrict__ part,
                                     bool vec) {
  pdlWait();
  constexpr int W = packWidth<T>();
  __shared__ double ds[33];
  double s = 0.0;
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nW = n / W;
    for (int64_t i = t; i < nW; i += stride) {
      float v[W];
      ldPack(g, i, v);
      s += packSqD(v);
    }
    done = nW * W;
  }
  for (int64_t i = done + t; i < n; i += stride) {
    const float gi = toF(g[i]);
    s += (double)gi * (double)gi;
  }
  s = blockSumD(s, ds);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// Second stage (one block): acc[0] = acc[0] + sum_b part[b].
__global__ void sumsq_finish_kernel(const double* __restrict__ part, int64_t parts,
                                    float* __restrict__ acc) {
  pdlWait();
  __shared__ double ds[33];
  double s = 0.0;
  for (int64_t b = threadIdx.x; b < parts; b += blockDim.x) s += part[b];
  s = blockSumD(s, ds);
  if (threadIdx.x == 0) acc[0] = (float)((double)acc[0] + s);
}

// With S the loss scale: norm = sqrt(acc[0]) / S;
// acc[1] = (1/S) * ((max_norm > 0 && norm > max_norm) ? max_norm/(norm+1e-6) : 1), or NaN when
// norm is not finite (an overflowed gradient: AdamW skips the step). The norm is kept in the
// context state for tgrt_last_grad_norm. One thread; double like the fp32-only backend (with
// S = 1 the same values).
__global__ void clip_scale_kernel(float* acc, float maxNorm, float lossScale, DeviceState* st) {
  pdlWait();
  const double norm = sqrt((double)acc[0]) / (double)lossScale;
  const float normF = (float)norm;
  if (!finiteF(normF)) {
    acc[1] = bitsFloat(0x7fc00000u); // quiet NaN
  } else {
    const float clip =
        (maxNorm > 0.0f && norm > (double)maxNorm) ? (float)(maxNorm / (norm + 1e-6)) : 1.0f;
    acc[1] = (float)((1.0 / (double)lossScale) * (double)clip);
  }
  st->grad_norm = normF;
}

/// Elements AdamW does not decay inside a run it decays (tgrt_adamw_islands: tg-bias-rows'
/// biases between their weights; runtime/AdamwIslands.h).
using AdamwIslands = tgrt_adamw_islands_t;

/// AdamW constants (double, like the CPU reference), see adamw_kernel.
struct AdamwParams {
  double b1, b2, eps, wd, lr, bc1, bc2;
};

/// The same constants in float (the update of low-precision tensors).
struct AdamwParamsF {
  float b1, b2, eps, wd, lr, bc1, bc2;
};

/// One element: g' = g c; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
/// p -= lr (m / bc1 / (sqrt(v / bc2) + eps) + wd p); m, v, p returned as floats (the caller
/// rounds them to their storage types). In double when p, m, v are all f32 (the arithmetic of
/// the fp32-only backend and of the CPU reference); in float when any of them is bf16 / f16
/// (tgrt.h's float32 arithmetic: it keeps the kernel memory-bound where double division and
/// square roots would dominate 2-byte traffic; the difference is far below the rounding of
/// the 2-byte results).
__device__ __forceinline__ void adamwOne(const AdamwParams& a, float& pf, float gf, float& mf,
                                         float& vf, double c) {
  const double gi = (double)gf * c;
  const double mi = a.b1 * mf + (1.0 - a.b1) * gi;
  const double vi = a.b2 * vf + (1.0 - a.b2) * gi * gi;
  mf = (float)mi;
  vf = (float)vi;
  const double pi = pf;
  pf = (float)(pi - a.lr * ((mi / a.bc1) / (sqrt(vi / a.bc2) + a.eps) + a.wd * pi));
}
__device__ __forceinline__ void adamwOne(const AdamwParamsF& a, float& pf, float gf, float& mf,
                                         float& vf, float c) {
  const float gi = gf * c;
  const float mi = a.b1 * mf + (1.0f - a.b1) * gi;
  const float vi = a.b2 * vf + (1.0f - a.b2) * gi * gi;
  mf = mi;
  vf = vi;
  pf = pf - a.lr * ((mi / a.bc1) / (sqrtf(vi / a.bc2) + a.eps) + a.wd * pf);
}

// AdamW (Loshchilov & Hutter 2019), in float (see adamwOne); in double like the CPU reference
// when every tensor is f32 and TGRT_ADAMW_MATH=f64 (Context::adamw_f32; float by default since
// 2026-12-02, as PyTorch's fused AdamW: 0.932 against 1.023 ms alone on the H200 below):
//   g' = g * clip[1];  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;
//   p -= lr * (m / bc1 / (sqrt(v / bc2) + eps) + wd * p),  bc = 1 - b^step.
// p, g: TP; m, v: TS. clip[1] is read here on the device: when it is not finite (a skipped,
// overflowed step) the kernel changes nothing. Packs of W when `vec` (all four pointers
// 16-byte aligned), then the scalar tail.
// The packs move with streaming cache hints (ldPackCs, stPackCs; the same values): on the
// H200 the mixed-precision update (f32 p, g, m, v and the bf16 working copy, 124M values,
// 30 bytes each) took 0.935 ms against 1.050 with plain loads and stores
// (3.99 against 3.55 TB/s; float arithmetic instead of double: 0.955, so the double math
// did not bound it alone; tgrt-cuda-check --bench-kernels, docs/results.md 2026-11-29,
// night). Inside a step, where the GPU runs at its power cap, it did: GPT-2 small's update
// took 1.110 ms per step in double and 0.940 in float (2026-12-02, seventeenth session).
// The grid is at most Context::adamw_blocks (TGRT_ADAMW_BLOCKS, 65536 by default; each thread
// strides over the packs it does not cover at once). gridFor's 16384 left Llama 3.2 1B's 122M
// packs in 15.5 waves of the 1056 resident blocks, the last half empty: with 65536 (or one pack
// per thread) its update took 7.06-7.07 against 7.27-7.28 ms per step and the tied head's
// 2.01 against 2.04 (profiles, H200, 2026-12-03, bench/results/2026-12-03-h200/s22/call1); the
// step itself moved by less than its spread (s22 call4), GPT-2 small's update not at all
// (0.634 against 0.640 ms, call3). Launching only the resident blocks was slower still, 7.58
// against 7.31 ms (s21).
// isl: elements updated with weight decay 0 (tgrt_adamw_islands); their packs never straddle
// an island's edge (slot boundaries are 256-byte aligned). g: TG (TP, or mixed precision's
// 2-byte weight gradients, tgrt_adamw_wc_g: widened exactly on load).
template <int W, typename TP, typename TS, typename P, typename TW = TP, typename TG = TP>
__global__ void adamw_kernel(TP* p, const TG* g, TS* m, TS* v, P a, const float* clip,
                             int64_t n, bool vec, TW* w = nullptr, AdamwIslands isl = {}) {
  pdlWait();
  using C = typename std::conditional<std::is_same<P, AdamwParams>::value, double, float>::type;
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nW = n / W;
    for (int64_t i = t; i < nW; i += stride) {
      float pv[W], gv[W], mv[W], vv[W];
      ldPackCs(p, i, pv);
      ldPackCs(m, i, mv);
      ldPackCs(v, i, vv);
      ldPackCs(g, i, gv);
      // clip[1] read with the pack (not before the first load): not finite = a skipped step.
      const float cf = clip ? clip[1] : 1.0f;
      if (!finiteF(cf)) return;
      const C c = (C)cf;
      P ai = a;
      if (isl.contains(i * W)) ai.wd = 0;
#pragma unroll
      for (int j = 0; j < W; ++j) adamwOne(ai, pv[j], gv[j], mv[j], vv[j], c);
      stPackCs(p, i, pv);
      stPackCs(m, i, mv);
      stPackCs(v, i, vv);
      if (w) { // the working copy: the stored p rounded to TW
#pragma unroll
        for (int j = 0; j < W; ++j) pv[j] = toF(fromF<TP>(pv[j]));
        stPackCs(w, i, pv);
      }
    }
    done = nW * W;
  }
  for (int64_t i = done + t; i < n; i += stride) {
    const float cf = clip ? clip[1] : 1.0f;
    if (!finiteF(cf)) return;
    const C c = (C)cf;
    float pf = toF(p[i]), mf = toF(m[i]), vf = toF(v[i]);
    P ai = a;
    if (isl.contains(i)) ai.wd = 0;
    adamwOne(ai, pf, toF(g[i]), mf, vf, c);
    p[i] = fromF<TP>(pf);
    m[i] = fromF<TS>(mf);
    v[i] = fromF<TS>(vf);
    if (w) w[i] = fromF<TW>(toF(p[i]));
  }
}

// ------------------------------------------------ AdamW with split master values --
// Split master values (tgrt_param.split, tgrt_adamw_split; tg-plan-memory split-master): an
// f32 value w is held as its bf16 working copy hi = bf16(w) (round to nearest even, the copy
// every path writes) and lo, the difference of their bit patterns w_bits - (hi << 16) as a
// 16-bit two's complement number. Rounding to nearest moves the bit pattern by at most
// 0x8000, so the difference lies in [-0x8000, 0x8000]; only +0x8000 (w exactly halfway
// between two bf16 values and rounded down to the even one) does not fit, and then w is
// moved one ulp towards hi (bits - 1: hi unchanged, lo 0x7fff). The same rule as the host's
// tgrt_split_value (tgrt.h), so the working copy stays PyTorch's autocast cast of the value,
// and the value is exact but for that halfway case (about 1 value in 131072 per update, by
// 2^-24 of itself).
__device__ __forceinline__ void splitOne(float w, uint16_t& hi, uint16_t& lo) {
  hi = bf16FromFloat(w);
  uint32_t d = floatBits(w) - ((uint32_t)hi << 16);
  if (d == 0x8000u) d = 0x7fffu;
  lo = (uint16_t)d;
}
__device__ __forceinline__ float joinOne(uint16_t hi, uint16_t lo) {
  return bitsFloat(((uint32_t)hi << 16) + (uint32_t)(int32_t)(int16_t)lo);
}

/// adamw_kernel's update (float math, gradients TG, moments TS) of a split run
/// (tgrt_adamw_split): the values read from and written back to (hi, lo). 26 bytes a
/// value (hi and lo read and written, 2 + 2 + 2 + 2; g read, 2; m and v read and written,
/// 16) where adamw_kernel with a working copy moves 28 (p 4 + 4, the copy 2, g 2, m and v
/// 16). Packs of 8 when `vec`. A non-finite clip[1] (a skipped step) changes nothing.
template <typename TS, typename TG>
__global__ void adamw_split_kernel(uint16_t* hi, uint16_t* lo, const TG* g, TS* m, TS* v,
                                   AdamwParamsF a, const float* clip, int64_t n, bool vec) {
  pdlWait();
  constexpr int W = 8;
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nW = n / W;
    for (int64_t i = t; i < nW; i += stride) {
      float pv[W], gv[W], mv[W], vv[W];
      uint16_t hs[W], ls[W];
      const uint4 h4 = load16Cs(hi + i * W), l4 = load16Cs(lo + i * W);
      std::memcpy(hs, &h4, 16);
      std::memcpy(ls, &l4, 16);
      ldPackCs(m, i, mv);
      ldPackCs(v, i, vv);
      ldPackCs(g, i, gv);
      const float cf = clip ? clip[1] : 1.0f;
      if (!finiteF(cf)) return;
#pragma unroll
      for (int j = 0; j < W; ++j) {
        pv[j] = joinOne(hs[j], ls[j]);
        adamwOne(a, pv[j], gv[j], mv[j], vv[j], cf);
        splitOne(pv[j], hs[j], ls[j]);
      }
      stPackCs(m, i, mv);
      stPackCs(v, i, vv);
      uint4 ho, lo4;
      std::memcpy(&ho, hs, 16);
      std::memcpy(&lo4, ls, 16);
      store16Cs(hi + i * W, ho);
      store16Cs(lo + i * W, lo4);
    }
    done = nW * W;
  }
  for (int64_t i = done + t; i < n; i += stride) {
    const float cf = clip ? clip[1] : 1.0f;
    if (!finiteF(cf)) return;
    float pf = joinOne(hi[i], lo[i]), mf = toF(m[i]), vf = toF(v[i]);
    adamwOne(a, pf, toF(g[i]), mf, vf, cf);
    m[i] = fromF<TS>(mf);
    v[i] = fromF<TS>(vf);
    splitOne(pf, hi[i], lo[i]);
  }
}

// tgrt_embedding_fwd_split: out[i, :] = the f32 values of split table rows (hi the bf16
// working copy, lo the low halves; joinOne), one block per token (grid-stride), 8 elements
// a thread step when `vec` (d % 8 == 0; hi, lo and out 16-byte aligned).
// An id outside [0, vocab) is reported (first one wins) and its row left unwritten.
__global__ void embedding_fwd_split_kernel(const uint16_t* __restrict__ hi,
                                           const uint16_t* __restrict__ lo,
                                           const int32_t* __restrict__ ids, float* __restrict__ out,
                                           int64_t n, int64_t d, int64_t vocab, bool vec,
                                           DeviceState* st, int32_t loc) {
  pdlWait();
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab) {
      if (threadIdx.x == 0) reportError(st, kEmbeddingIdOutOfRange, loc, id, i, vocab);
      continue;
    }
    const uint16_t* h = hi + id * d;
    const uint16_t* l = lo + id * d;
    float* o = out + i * d;
    if (vec) {
      for (int64_t c = threadIdx.x * 8; c < d; c += (int64_t)blockDim.x * 8) {
        const uint4 h4 = *reinterpret_cast<const uint4*>(h + c);
        const uint4 l4 = *reinterpret_cast<const uint4*>(l + c);
        uint16_t hs[8], ls[8];
        std::memcpy(hs, &h4, 16);
        std::memcpy(ls, &l4, 16);
        float r[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) r[j] = joinOne(hs[j], ls[j]);
        *reinterpret_cast<float4*>(o + c) = make_float4(r[0], r[1], r[2], r[3]);
        *reinterpret_cast<float4*>(o + c + 4) = make_float4(r[4], r[5], r[6], r[7]);
      }
    } else {
      for (int64_t c = threadIdx.x; c < d; c += blockDim.x) o[c] = joinOne(h[c], l[c]);
    }
  }
}

// loss_sum += loss[0]; loss_count += 1. One thread.
__global__ void report_loss_kernel(const float* loss, DeviceState* st) {
  pdlWait();
  st->loss_sum += (double)loss[0];
  st->loss_count += 1;
}

// -------------------------------------------------------------------------- GEMM --

/// cuBLASLt data type of a tgrt_dtype.
cudaDataType_t ltType(int32_t dt) {
  return dt == TGRT_BF16 ? CUDA_R_16BF : dt == TGRT_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/// Largest power of two <= 256 dividing the address and (for batches) the byte stride.
uint32_t alignmentOf(const void* p, int64_t strideElems, int64_t batch, int64_t esize) {
  uint64_t bits = (uint64_t)(uintptr_t)p | 256u;
  if (batch > 1 && strideElems != 0) bits |= (uint64_t)strideElems * (uint64_t)esize;
  return (uint32_t)(bits & (~bits + 1)); // lowest set bit
}

/// The tuning cache's line key of a plan: device, cuBLASLt version, TF32 mode, workspace
/// bytes, the number of candidates timed (a choice among fewer, e.g. by an earlier tgc that
/// timed 6, is not taken for one among more), the back-to-back calls per timing when not 1
/// (TGRT_GEMM_TUNE_CALLS: "xN" after the count; a default run's key is unchanged, so its
/// cache stays valid) and every MatmulKey field (one token, no spaces).
std::string tuneKey(Context* ctx, const MatmulKey& k, uint64_t ws, size_t candidates) {
  std::string dev = ctx->device_name;
  for (char& ch : dev)
    if (ch == ' ' || ch == '\t') ch = '_';
  char calls[24] = "";
  if (ctx->gemm_tune_calls != 1) std::snprintf(calls, sizeof calls, "x%d", ctx->gemm_tune_calls);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s|lt%zu|tf32=%d|ws=%llu|c%zu%s|%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%d,%u,%u,%u,%d,%u,%d,%d",
                dev.c_str(), (size_t)cublasLtGetVersion(), ctx->tf32 ? 1 : 0,
                (unsigned long long)ws, candidates, calls, (long long)k.batch, (long long)k.m, (long long)k.n,
                (long long)k.k, (long long)k.sa, (long long)k.sb, (long long)k.sc, (int)k.ta,
                (int)k.tb, (unsigned)k.align_a, (unsigned)k.align_b, (unsigned)k.align_c,
                (int)k.epilogue, (unsigned)k.align_bias, (int)k.dt, (int)k.cdt);
  std::string key = buf;
  if (k.lda) key += ",lda" + std::to_string((long long)k.lda); // older keys stay valid
  return key;
}

/// Reads the tuning cache file once per context: lines "KEY HEX*8" (the algorithm's 8
/// 64-bit words); a line of another shape is skipped with a note naming the file and line.
void loadTuneCache(Context* ctx) {
  if (ctx->gemm_tune_loaded) return;
  ctx->gemm_tune_loaded = true;
  FILE* f = std::fopen(ctx->gemm_tune_path.c_str(), "r");
  if (!f) return; // none yet
  char line[1024];
  int lineNo = 0, bad = 0;
  while (std::fgets(line, sizeof line, f)) {
    ++lineNo;
    char key[600];
    cublasLtMatmulAlgo_t a;
    static_assert(sizeof a == 8 * sizeof(unsigned long long), "cuBLASLt algorithm of 8 words");
    unsigned long long w[8];
    if (std::sscanf(line, "%599s %llx %llx %llx %llx %llx %llx %llx %llx", key, &w[0], &w[1],
                    &w[2], &w[3], &w[4], &w[5], &w[6], &w[7]) != 9) {
      if (bad++ == 0)
        std::fprintf(stderr, "tgrt: %s:%d: not a tuning cache line (skipped)\n", ctx->gemm_tune_path.c_str(), lineNo);
      continue;
    }
    std::memcpy(&a, w, sizeof a);
    ctx->gemm_tune_cache[key] = a; // a later line (a re-tune) wins
  }
  std::fclose(f);
}

/// Appends plan p's choice to the tuning cache file (its directory made if missing); a file
/// that cannot be written leaves the choice to this run, with one note.
void saveTuned(Context* ctx, const MatmulPlan& p) {
  if (p.tune_key.empty()) return;
  const std::string& path = ctx->gemm_tune_path;
  unsigned long long w[8];
  std::memcpy(w, &p.algo, sizeof w);
  char line[1024];
  const int len = std::snprintf(line, sizeof line,
                                "%s %llx %llx %llx %llx %llx %llx %llx %llx\n",
                                p.tune_key.c_str(), w[0], w[1], w[2], w[3], w[4], w[5], w[6],
                                w[7]);
  // One write of one line with O_APPEND: runs that share the cache append whole lines.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0 && errno == ENOENT) { // the first record: mkdir -p of its directories
    for (size_t i = 1; i < path.size(); ++i)
      if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  if (fd < 0 || write(fd, line, (size_t)len) != len) {
    static bool noted = false;
    if (!noted)
      std::fprintf(stderr, "tgrt: cannot record the GEMM tuning in %s: %s (the choices hold "
                           "for this run only; TGRT_GEMM_TUNE_CACHE names another file)\n",
                   path.c_str(), std::strerror(errno));
    noted = true;
  }
  if (fd >= 0) close(fd);
  ctx->gemm_tune_cache[p.tune_key] = p.algo;
}

/// cuBLASLt's tile ids with their rows (along cuBLASLt's m) and columns (along its n), sorted
/// by id (generated from cublasLt.h by scripts/gen-lt-tiles.py).
struct LtTile {
  uint32_t id;
  int rows, cols;
};
constexpr LtTile kLtTiles[] = {
#include "runtime/cuda/LtTiles.inc"
};

/// A uint32 list capability of algorithm a (CUBLASLT_ALGO_CAP_TILE_IDS); empty when none.
std::vector<uint32_t> ltCapList(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t c) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, c, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
      bytes < sizeof(uint32_t))
    return {};
  std::vector<uint32_t> v(bytes / sizeof(uint32_t));
  if (cublasLtMatmulAlgoCapGetAttribute(&a, c, v.data(), v.size() * sizeof(uint32_t), &bytes) !=
      CUBLAS_STATUS_SUCCESS)
    return {};
  return v;
}

/// TGRT_GEMM_AUTOTUNE=2 (opt-in): configurations of the heuristic's algorithms that the
/// heuristic does not offer, appended to p.candidates for the tuning to time. For each of the
/// first two algorithm ids among the candidates, its tiles (CUBLASLT_ALGO_CAP_TILE_IDS, at
/// least 64 x 64 and 8192 elements) are ranked by the wave model: the problem's useful
/// elements over the elements the tile grid computes in whole waves of the device's SMs,
///   eff = M N batch / (ceil(tiles / SMs) SMs r c),  tiles = ceil(M / r) ceil(N / c) batch,
/// (M, N: cuBLASLt's m = key.n and n = key.m; r x c the tile), ties to the larger tile; the
/// best kTileCandidates tiles each get custom options 0..3 (within the algorithm's maximum)
/// and cluster shapes 1x1, 2x1 and 1x2, split-K 1. A configuration is kept when
/// cublasLtMatmulAlgoCheck accepts it with a workspace within ws and its minimal alignments
/// are the key's. Measured on the H200 (bench/cuda/gemm_configs.cu, docs/results.md
/// 2026-11-29, night): the heuristic's best was 6-10% slower than such a configuration for
/// GPT-2 small's GELU-epilogue GEMM, its fc / qkv / MLP-projection weight gradients and its
/// qkv projection (e.g. the fc weight gradient 0.0971 against 0.0878 ms with a 96 x 192
/// tile: 128 tiles fill one wave of 132 SMs, the heuristic's 128 x 160 leaves 12 idle).
/// Not the default: timed in place, one GEMM repeated, the choices made GPT-2 small's step
/// 0.4% faster but the head-dim-128 shape's 0.6% slower and Llama 3.2 1B's no faster
/// (docs/results.md 2026-11-29, night).
void addTileCandidates(Context* ctx, MatmulPlan& p, const MatmulKey& key, uint64_t ws) {
  constexpr size_t kTileCandidates = 8;
  const int sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
  const double M = (double)key.n, N = (double)key.m, batch = (double)std::max<int64_t>(key.batch, 1);
  const uint32_t aligns[4] = {key.align_b, key.align_a, key.align_c, key.align_c};
  const size_t heuristic = p.candidates.size();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < heuristic && ids.size() < 2; ++i) {
    const cublasLtMatmulAlgo_t base = p.candidates[i];
    int32_t id = -1;
    size_t w = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&base, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w) !=
            CUBLAS_STATUS_SUCCESS ||
        std::find(ids.begin(), ids.end(), id) != ids.end())
      continue;
    ids.push_back(id);
    struct Scored {
      uint32_t tile;
      double eff;
      int area;
    };
    std::vector<Scored> scored;
    for (uint32_t tile : ltCapList(base, CUBLASLT_ALGO_CAP_TILE_IDS)) {
      const LtTile* t = std::lower_bound(
          std::begin(kLtTiles), std::end(kLtTiles), tile,
          [](const LtTile& x, uint32_t v) { return x.id < v; });
      if (t == std::end(kLtTiles) || t->id != tile || std::min(t->rows, t->cols) < 64 ||
          t->rows * t->cols < 8192)
        continue;
      const double tiles = std::ceil(M / t->rows) * std::ceil(N / t->cols) * batch;
      const double waves = std::ceil(tiles / sms);
      scored.push_back({tile, M * N * batch / (waves * sms * t->rows * t->cols),
                        t->rows * t->cols});
    }
    std::sort(scored.begin(), scored.end(), [](const Scored& x, const Scored& y) {
      return x.eff != y.eff ? x.eff > y.eff : x.area > y.area;
    });
    if (scored.size() > kTileCandidates) scored.resize(kTileCandidates);
    int32_t optMax = 0;
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &optMax,
                                      sizeof optMax, &w);
    for (const Scored& sc : scored)
      for (uint32_t opt = 0; opt <= (uint32_t)std::min(optMax, 3); ++opt)
        for (uint16_t cluster : {(uint16_t)CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                 (uint16_t)CUBLASLT_CLUSTER_SHAPE_2x1x1,
                                 (uint16_t)CUBLASLT_CLUSTER_SHAPE_1x2x1}) {
          cublasLtMatmulAlgo_t a = base;
          const uint32_t one = 1, none = CUBLASLT_REDUCTION_SCHEME_NONE, noSwizzle = 0;
          if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &sc.tile,
                                                   sizeof sc.tile) != CUBLAS_STATUS_SUCCESS ||
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &opt,
                                                   sizeof opt) != CUBLAS_STATUS_SUCCESS ||
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                   &cluster, sizeof cluster) !=
                  CUBLAS_STATUS_SUCCESS ||
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one,
                                                   sizeof one) != CUBLAS_STATUS_SUCCESS ||
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                   &none, sizeof none) != CUBLAS_STATUS_SUCCESS ||
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
                                                   &noSwizzle, sizeof noSwizzle) !=
                  CUBLAS_STATUS_SUCCESS)
            continue;
          bool known = false;
          for (const cublasLtMatmulAlgo_t& c : p.candidates)
            known = known || std::memcmp(&c, &a, sizeof a) == 0;
          if (known) continue;
          cublasLtMatmulHeuristicResult_t chk;
          if (cublasLtMatmulAlgoCheck(ctx->lt, p.desc, p.la, p.lb, p.lc, p.lc, &a, &chk) !=
                  CUBLAS_STATUS_SUCCESS ||
              chk.state != CUBLAS_STATUS_SUCCESS || chk.workspaceSize > ws)
            continue;
          bool aligned = true;
          const cublasLtMatmulAlgoCapAttributes_t alignCap[4] = {
              CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
              CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
          for (int i = 0; i < 4 && aligned; ++i) {
            uint32_t need = 0;
            aligned = cublasLtMatmulAlgoCapGetAttribute(&a, alignCap[i], &need, sizeof need, &w) ==
                          CUBLAS_STATUS_SUCCESS &&
                      need <= aligns[i];
          }
          if (aligned) p.candidates.push_back(a);
        }
  }
}

/// Creates (or finds) the cuBLASLt plan for key. Row-major C = op(A) op(B) is computed as the
/// column-major C^T = op(B)^T op(A)^T: cuBLASLt's A is our b, its B is our a, both with their
/// own transposes, and C^T [n x m] column-major is C [m x n] row-major. Every matrix, the bias
/// and the GELU aux have the key's dtype; f32 computes in CUBLAS_COMPUTE_32F (or
/// _FAST_TF32 with TGRT_TF32=1), bf16 / f16 in CUBLAS_COMPUTE_32F; alpha, beta are float.
MatmulPlan& getPlan(Context* ctx, const char* loc, const MatmulKey& key,
                    const void* bias = nullptr) {
  auto it = ctx->plans.find(key);
  if (it != ctx->plans.end()) return it->second;
  if (ctx->plans.size() >= 4096) { // a runaway number of shapes: start over
    for (auto& e : ctx->plans) {
      cublasLtMatrixLayoutDestroy(e.second.la);
      cublasLtMatrixLayoutDestroy(e.second.lb);
      cublasLtMatrixLayoutDestroy(e.second.lc);
      cublasLtMatmulDescDestroy(e.second.desc);
    }
    for (Context::StepTiming& t : ctx->step_pending) { // their plans go
      ctx->step_events.push_back(t.e0);
      ctx->step_events.push_back(t.e1);
    }
    ctx->step_pending.clear();
    ctx->plans.clear();
  }
  MatmulPlan& p = ctx->plans[key];
  const cudaDataType_t type = ltType(key.dt);
  const cublasComputeType_t compute = key.dt == TGRT_F32 && ctx->tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  checkBlas(cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F), loc, "cublasLtMatmulDescCreate");
  const int32_t opA = key.tb ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt A = our b
  const int32_t opB = key.ta ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt B = our a
  checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA),
            loc, "cublasLtMatmulDescSetAttribute");
  checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB),
            loc, "cublasLtMatmulDescSetAttribute");
  if (key.epilogue >= 1) {
    // Column-major D^T is [n x m]: the bias [n] runs along D^T's rows, as the epilogue wants
    // (DGELU_BGRAD: its gradient, the sum over D^T's columns, i.e. over our rows).
    const cublasLtEpilogue_t epi = key.epilogue == 1   ? CUBLASLT_EPILOGUE_BIAS
                                   : key.epilogue == 2 ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                   : key.epilogue == 3 ? CUBLASLT_EPILOGUE_DGELU_BGRAD
                                   : key.epilogue == 4 ? CUBLASLT_EPILOGUE_DGELU
                                                       : CUBLASLT_EPILOGUE_BGRADA;
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  }
  if (key.epilogue >= 1 && key.epilogue != 4) { // 4 (DGELU) has no bias
    // The bias has D's type (also cuBLASLt's default; stated for clarity): A's and B's for
    // the epilogues of one type, C's and D's for the residual form (tgrt_matmul_bias_residual).
    const int32_t biasType = (int32_t)(key.cdt >= 0 ? ltType(key.cdt) : type);
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                             &biasType, sizeof biasType),
              loc, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
    // The heuristic reads the pointer's alignment (it is set again before every call).
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias),
              loc, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  if (key.epilogue >= 2 && key.epilogue <= 4) { // the aux (pre-activation; out: 2, in: 3, 4) has D's shape, ld n
    const int64_t ld = key.n;
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld,
                                             sizeof ld),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
    const int32_t auxType = (int32_t)type; // D's type (the default)
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                                             &auxType, sizeof auxType),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_DATA_TYPE)");
  }
  // Stored shapes (column-major rows x cols, ld): b is [k x n] row-major = [n x k] col-major
  // (ld n), or [n x k] row-major = [k x n] col-major (ld k) when trans_b. Same for a.
  const int64_t m = key.m, n = key.n, k = key.k;
  checkBlas(cublasLtMatrixLayoutCreate(&p.la, type, key.tb ? k : n, key.tb ? n : k,
                                       key.tb ? k : n),
            loc, "cublasLtMatrixLayoutCreate");
  checkBlas(cublasLtMatrixLayoutCreate(&p.lb, type, key.ta ? m : k, key.ta ? k : m,
                                       key.lda ? key.lda : key.ta ? m : k),
            loc, "cublasLtMatrixLayoutCreate");
  const cudaDataType_t ctype = key.cdt >= 0 ? ltType(key.cdt) : type; // C and D
  checkBlas(cublasLtMatrixLayoutCreate(&p.lc, ctype, n, m, n), loc, "cublasLtMatrixLayoutCreate");
  if (key.batch > 1) {
    const int32_t count = (int32_t)key.batch;
    const int64_t strides[3] = {key.sb, key.sa, key.sc};
    cublasLtMatrixLayout_t layouts[3] = {p.la, p.lb, p.lc};
    for (int i = 0; i < 3; ++i) {
      checkBlas(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                 &count, sizeof count),
                loc, "cublasLtMatrixLayoutSetAttribute");
      checkBlas(cublasLtMatrixLayoutSetAttribute(
                    layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                    sizeof strides[i]),
                loc, "cublasLtMatrixLayoutSetAttribute");
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  checkBlas(cublasLtMatmulPreferenceCreate(&pref), loc, "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = (uint64_t)ctx->region_bytes[TGRT_WORKSPACE];
  const uint32_t aligns[4] = {key.align_b, key.align_a, key.align_c, key.align_c};
  checkBlas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof ws),
            loc, "cublasLtMatmulPreferenceSetAttribute");
  const cublasLtMatmulPreferenceAttributes_t alignAttr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    checkBlas(cublasLtMatmulPreferenceSetAttribute(pref, alignAttr[i], &aligns[i], sizeof aligns[i]),
              loc, "cublasLtMatmulPreferenceSetAttribute");
  // Every algorithm the heuristic offers (cuBLASLt 13.1 returns at most 8 for these shapes):
  // on the H200 its 7th or 8th was the fastest for 10 of GPT-2 small's 23 GEMM shapes, e.g.
  // the qkv projection 0.0758 ms against 0.0819 for the best of its first 6
  // (bench/cuda/gemm_sweep.cu, docs/results.md).
  constexpr int kGemmCandidates = 16;
  cublasLtMatmulHeuristicResult_t results[kGemmCandidates];
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
      ctx->lt, p.desc, p.la, p.lb, p.lc, p.lc, pref, ctx->gemm_autotune ? kGemmCandidates : 1,
      results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  p.ok = s == CUBLAS_STATUS_SUCCESS && found > 0 && results[0].state == CUBLAS_STATUS_SUCCESS;
  if (p.ok) p.algo = results[0].algo;
  for (int i = 0; p.ok && i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) p.candidates.push_back(results[i].algo);
  p.heuristic_count = p.candidates.size();
  if (p.ok && ctx->gemm_autotune >= 2) addTileCandidates(ctx, p, key, ws);
  p.tuned = p.candidates.size() <= 1;
  if (!p.tuned && !ctx->gemm_tune_path.empty()) {
    // A recorded choice counts only while the heuristic still offers it (same library,
    // device and inputs give the same candidates).
    loadTuneCache(ctx);
    p.tune_key = tuneKey(ctx, key, ws, p.candidates.size());
    if (ctx->step_tune) p.tune_key += "|step"; // a choice timed in the step, not alone
    else if (ctx->gemm_autotune >= 3) p.tune_key += "|power"; // timed at the power limit
    auto hit = ctx->gemm_tune_cache.find(p.tune_key);
    if (hit != ctx->gemm_tune_cache.end())
      for (const cublasLtMatmulAlgo_t& a : p.candidates)
        if (std::memcmp(&a, &hit->second, sizeof a) == 0) {
          p.algo = a;
          p.tuned = true;
          ++ctx->gemm_cached;
          break;
        }
  }
  return p;
}

/// GEMM tuning (Context::gemm_autotune): times each candidate algorithm of p on this call's
/// operands (one warm-up, then the median of 3 event-timed runs of Context::gemm_tune_calls
/// back-to-back calls each); in mode 2 (tile
/// candidates), the fastest kTuneFinalists are timed again, alternating, in 3
/// rounds of kTuneBatch back-to-back calls each (the median round), so that one lucky
/// single-call time among ~100 candidates does not decide; the fastest becomes p.algo.
/// In mode 3 (TGRT_GEMM_AUTOTUNE=3, opt-in: "at the power limit") the candidates are those of
/// mode 2, ranked alone as above; then the kPowerHeuristic fastest of the heuristic's and the
/// kPowerTiles fastest tile configurations run sustained: kPowerHeatMs of the fastest alone
/// (the board reaches its power limit), then two rounds (the finalists in order, then
/// reversed) of kPowerWarmMs untimed and kPowerTimedMs event-timed back-to-back calls each;
/// the lowest mean wins, recorded under the key + "|power", and one line per plan on stderr
/// lists each finalist's alone and sustained ms. Why: a step of Llama 3.2 1B runs at the
/// H200's 700 W limit, where a GEMM's time follows the energy it spends per call; timed that
/// way (bench/cuda/gemm_energy.cu, docs/results.md 2026-12-03, twenty-fifth session) 9 of 13
/// of its GEMM shapes had a faster configuration than the one fastest in a few calls alone
/// (up to 5.6%). About 5 s per plan; the tuning cache keeps the choice.
/// Only for a call that gives the same result when repeated (D not read as C with beta != 0);
/// a candidate that fails to launch is skipped.
void ltTune(Context* ctx, MatmulPlan& p, float alpha, const void* a, const void* b, float beta,
            const void* c, void* d) {
  constexpr size_t kTuneFinalists = 4;
  constexpr int kTuneBatch = 5;
  // Mode 3: the finalists (heuristic's, tile configurations), the sustained run's phases (ms).
  constexpr size_t kPowerHeuristic = 5, kPowerTiles = 3;
  constexpr double kPowerHeatMs = 300.0, kPowerWarmMs = 100.0, kPowerTimedMs = 250.0;
  cudaEvent_t e0, e1;
  if (cudaEventCreate(&e0) != cudaSuccess) return;
  if (cudaEventCreate(&e1) != cudaSuccess) { cudaEventDestroy(e0); return; }
  auto once = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(ctx->lt, p.desc, &alpha, b, p.la, a, p.lb, &beta, c, p.lc, d, p.lc,
                          &algo, ctx->regions[TGRT_WORKSPACE],
                          (size_t)ctx->region_bytes[TGRT_WORKSPACE], ctx->stream) ==
           CUBLAS_STATUS_SUCCESS;
  };
  // ms per call of `calls` back-to-back calls of algo; < 0 when a call fails.
  auto timed = [&](const cublasLtMatmulAlgo_t& algo, int calls) {
    cudaEventRecord(e0, ctx->stream);
    bool ok = true;
    for (int i = 0; i < calls; ++i) ok = ok && once(algo);
    cudaEventRecord(e1, ctx->stream);
    cudaEventSynchronize(e1);
    float t = 0.0f;
    cudaEventElapsedTime(&t, e0, e1);
    return ok ? t / (float)calls : -1.0f;
  };
  struct Time {
    float ms;
    size_t index;
  };
  std::vector<Time> times;
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    if (!once(p.candidates[i])) continue;
    float ms[3];
    bool ok = true;
    for (float& t : ms) ok = (t = timed(p.candidates[i], ctx->gemm_tune_calls)) >= 0.0f && ok;
    if (!ok) continue;
    std::sort(ms, ms + 3);
    times.push_back({ms[1], i});
  }
  std::sort(times.begin(), times.end(),
            [](const Time& x, const Time& y) { return x.ms < y.ms; });
  if (ctx->gemm_autotune == 2 && times.size() > kTuneFinalists) {
    times.resize(kTuneFinalists);
    float rounds[kTuneFinalists][3];
    for (int r = 0; r < 3; ++r)
      for (size_t f = 0; f < times.size(); ++f) rounds[f][r] = timed(p.candidates[times[f].index], kTuneBatch);
    for (size_t f = 0; f < times.size(); ++f) {
      std::sort(rounds[f], rounds[f] + 3);
      times[f].ms = rounds[f][0] < 0.0f ? 1e30f : rounds[f][1];
    }
    std::sort(times.begin(), times.end(),
              [](const Time& x, const Time& y) { return x.ms < y.ms; });
  }
  if (ctx->gemm_autotune >= 3 && times.size() >= 2) {
    // At the power limit: each finalist runs sustained, as the step's GEMMs run (see the
    // docstring). The finalists: the fastest alone of the heuristic's and of the tile
    // configurations.
    std::vector<Time> finalists;
    size_t heuristic = 0, tiles = 0;
    for (const Time& t : times) {
      size_t& taken = t.index < p.heuristic_count ? heuristic : tiles;
      if (taken < (t.index < p.heuristic_count ? kPowerHeuristic : kPowerTiles)) {
        finalists.push_back(t);
        ++taken;
      }
    }
    // ms per call of `calls` back-to-back calls of candidate f after `warm` untimed ones.
    auto sustained = [&](const Time& f, double warmMs, double timedMs) {
      const double alone = std::max((double)f.ms, 1e-3);
      const int warm = (int)std::ceil(warmMs / alone), calls = std::max(4, (int)(timedMs / alone));
      bool ok = true;
      for (int i = 0; i < warm; ++i) ok = ok && once(p.candidates[f.index]);
      cudaEventRecord(e0, ctx->stream);
      for (int i = 0; i < calls; ++i) ok = ok && once(p.candidates[f.index]);
      cudaEventRecord(e1, ctx->stream);
      cudaEventSynchronize(e1);
      float t = 0.0f;
      cudaEventElapsedTime(&t, e0, e1);
      return ok ? t / (float)calls : 1e30f;
    };
    sustained(finalists[0], kPowerHeatMs, 1.0); // brings the board to its limit
    std::vector<float> total(finalists.size(), 0.0f);
    for (int round = 0; round < 2; ++round)
      for (size_t i = 0; i < finalists.size(); ++i) {
        const size_t f = round == 0 ? i : finalists.size() - 1 - i;
        total[f] += sustained(finalists[f], kPowerWarmMs, kPowerTimedMs);
      }
    std::string line = "tgrt: gemm tuning at the power limit: " + p.tune_key + ":";
    size_t best = 0;
    for (size_t f = 0; f < finalists.size(); ++f) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " %s%zu %.4f->%.4f", finalists[f].index < p.heuristic_count ? "h" : "t",
                    finalists[f].index, finalists[f].ms, total[f] / 2.0f);
      line += buf;
      if (total[f] < total[best]) best = f;
    }
    std::fprintf(stderr, "%s; chosen %zu\n", line.c_str(), finalists[best].index);
    times.assign(1, {total[best] / 2.0f, finalists[best].index});
  }
  if (!times.empty()) p.algo = p.candidates[times[0].index];
  if (ctx->step_tune && times.size() >= 2) { // the fastest alone, timed again in the step
    p.step_order.clear();
    for (size_t i = 0; i < times.size() && i < kStepTuneCandidates; ++i)
      p.step_order.push_back(times[i].index);
    p.step_ms.assign(p.step_order.size(), {});
    p.step_first_round = -1;
    p.step_done = false;
    ctx->step_tune_active = true;
  }
  cudaGetLastError(); // a failed candidate's launch error is not the next call's
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

/// Runs plan p: D = alpha op(A) op(B) + beta C (and p's epilogue) on the context's stream
/// with the workspace region (cuBLASLt's A is our b, its B our a: see getPlan); `what` names
/// the call in errors. Synchronises after it in TGRT_CUDA_SYNC mode.
/// Tunes plan p at its first call that may run more than once (see ltTune); not while a
/// stream captures (timing synchronises).
void ensureTuned(Context* ctx, MatmulPlan& p, float alpha, const void* a, const void* b,
                 float beta, const void* c, void* d) {
  if (!p.tuned && !ctx->capturing && (beta == 0.0f || c != d)) {
    ltTune(ctx, p, alpha, a, b, beta, c, d);
    p.tuned = true;
    ++ctx->gemm_timed;
    if (p.step_done) saveTuned(ctx, p); // else when the step's timing decides (stepTuneHarvest)
  }
}

/// A timing event of the step tuning (pooled; NULL when none can be created).
cudaEvent_t stepEvent(Context* ctx) {
  if (!ctx->step_events.empty()) {
    cudaEvent_t e = ctx->step_events.back();
    ctx->step_events.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  return cudaEventCreate(&e) == cudaSuccess ? e : nullptr;
}

void ltRun(Context* ctx, const char* loc, MatmulPlan& p, float alpha, const void* a,
           const void* b, float beta, const void* c, void* d, const char* what) {
  ensureTuned(ctx, p, alpha, a, b, beta, c, d);
  // The step tuning (Context::step_tune): this round's candidate, its call event-timed.
  const cublasLtMatmulAlgo_t* algo = &p.algo;
  Context::StepTiming timing{nullptr, 0, nullptr, nullptr};
  if (!p.step_done && ctx->step_tune_round >= 0 && !ctx->capturing) {
    if (p.step_first_round < 0) p.step_first_round = ctx->step_tune_round;
    // Within a round the calls alternate over the candidates (the same clock and power
    // state for all of them; round-robin across steps alone followed the clock's drift).
    const int cand = (ctx->step_tune_round - p.step_first_round + p.step_calls++) %
                     (int)p.step_order.size();
    algo = &p.candidates[p.step_order[(size_t)cand]];
    timing = {&p, cand, stepEvent(ctx), stepEvent(ctx)};
    if (timing.e0 && timing.e1) check(cudaEventRecord(timing.e0, ctx->stream), loc, "cudaEventRecord");
  }
  checkBlas(cublasLtMatmul(ctx->lt, p.desc, &alpha, b, p.la, a, p.lb, &beta, c, p.lc, d, p.lc,
                           algo, ctx->regions[TGRT_WORKSPACE],
                           (size_t)ctx->region_bytes[TGRT_WORKSPACE], ctx->stream),
            loc, what);
  if (timing.plan) {
    if (timing.e0 && timing.e1) {
      check(cudaEventRecord(timing.e1, ctx->stream), loc, "cudaEventRecord");
      ctx->step_pending.push_back(timing);
    } else { // no events: this call goes untimed
      if (timing.e0) ctx->step_events.push_back(timing.e0);
      if (timing.e1) ctx->step_events.push_back(timing.e1);
    }
  }
  if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), loc, "cublasLtMatmul");
}
} // namespace

void stepTuneHarvest(Context* ctx) {
  if (!ctx->step_tune) return;
  for (Context::StepTiming& t : ctx->step_pending) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, t.e0, t.e1) == cudaSuccess)
      t.plan->step_ms[(size_t)t.cand].push_back(ms);
    ctx->step_events.push_back(t.e0);
    ctx->step_events.push_back(t.e1);
  }
  ctx->step_pending.clear();
  (void)cudaGetLastError();
  ++ctx->step_tune_round;
  for (auto& entry : ctx->plans) entry.second.step_calls = 0;
  if (!ctx->step_tune_active) return;
  bool active = false;
  for (auto& entry : ctx->plans) {
    MatmulPlan& p = entry.second;
    if (p.step_done) continue;
    const int n = (int)p.step_order.size();
    if (p.step_first_round < 0 || ctx->step_tune_round - p.step_first_round < kStepTuneRounds * n) {
      active = true;
      continue;
    }
    // The lowest median call time; a candidate without a time (its calls failed to time)
    // is not chosen.
    size_t best = 0;
    float bestMs = 1e30f;
    for (size_t j = 0; j < p.step_ms.size(); ++j) {
      std::vector<float>& v = p.step_ms[j];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      const float med = v[v.size() / 2];
      if (med < bestMs) bestMs = med, best = j;
    }
    const cublasLtMatmulAlgo_t chosen = p.candidates[p.step_order[best]];
    if (std::memcmp(&chosen, &p.algo, sizeof chosen) != 0) ++ctx->step_tune_changed;
    p.algo = chosen;
    p.step_done = true;
    ++ctx->step_tuned;
    saveTuned(ctx, p);
  }
  ctx->step_tune_active = active;
  if (!active)
    std::fprintf(stderr, "tgrt: GEMM tuning in the step (TGRT_GEMM_STEP_TUNE=1): %d shape(s) "
                 "decided after %d steps (synchronisations), %d on another algorithm than the "
                 "fastest alone\n",
                 ctx->step_tuned, ctx->step_tune_round + 1, ctx->step_tune_changed);
}

void gemmStepTuneCounts(Context* ctx, int* decided, int* changed, int* active) {
  checkCtx(ctx, "gemm_step_tune_counts");
  if (decided) *decided = ctx->step_tuned;
  if (changed) *changed = ctx->step_tune_changed;
  if (active) *active = ctx->step_tune_active ? 1 : 0;
}

namespace {

/// One cuBLASLt call for the (already validated) batched GEMM; false when cuBLASLt has no
/// algorithm for this shape.
bool ltMatmul(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* c,
              int64_t batch, int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb, int64_t sa,
              int64_t sb, int64_t sc, float alpha, float beta) {
  const int64_t es = tgrt_dtype_size(dt);
  MatmulKey key{batch, m, n, k, batch > 1 ? sa : 0, batch > 1 ? sb : 0, batch > 1 ? sc : 0,
                ta ? 1 : 0, tb ? 1 : 0, alignmentOf(a, sa, batch, es), alignmentOf(b, sb, batch, es),
                alignmentOf(c, sc, batch, es)};
  key.dt = dt;
  MatmulPlan& p = getPlan(ctx, loc, key);
  if (!p.ok) return false;
  ltRun(ctx, loc, p, alpha, a, b, beta, c, c, "cublasLtMatmul");
  return true;
}

/// C (c_dt) = alpha op(A) op(B) + beta C (A, B: dt) in one cuBLASLt call (batch 1) and, with
/// dbias, dbias (c_dt) = the column sums of B (CUBLASLT_EPILOGUE_BGRADA: cuBLASLt's A is our
/// b, its rows our columns, the sum over the GEMM's k); false when cuBLASLt has no algorithm
/// for the shape, types and epilogue.
bool ltMatmulAcc(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                 int32_t cdt, void* c, int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb,
                 float alpha, float beta = 1.0f, void* dbias = nullptr, int64_t lda = 0) {
  const int64_t es = tgrt_dtype_size(dt), ces = tgrt_dtype_size(cdt);
  MatmulKey key{1, m, n, k, 0, 0, 0, ta ? 1 : 0, tb ? 1 : 0, alignmentOf(a, 0, 1, es),
                alignmentOf(b, 0, 1, es), alignmentOf(c, 0, 1, ces)};
  key.dt = dt;
  key.cdt = cdt;
  key.lda = lda == (ta ? m : k) ? 0 : lda; // A's row pitch (getPlan); 0: its rows packed
  if (dbias) {
    key.epilogue = 5;
    key.align_bias = alignmentOf(dbias, 0, 1, ces);
  }
  MatmulPlan& p = getPlan(ctx, loc, key, dbias);
  if (!p.ok) return false;
  if (dbias)
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias,
                                             sizeof dbias),
              loc, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  ltRun(ctx, loc, p, alpha, a, b, beta, c, c,
        dbias ? "cublasLtMatmul(bgrada epilogue)" : "cublasLtMatmul(accumulate)");
  return true;
}

/// One cuBLASLt call computing C = alpha op(A) op(B) + bias (bias [n] added to every row of
/// the row-major C) through an epilogue: without `aux`, CUBLASLT_EPILOGUE_BIAS; with `aux`,
/// CUBLASLT_EPILOGUE_GELU_AUX_BIAS, which writes the sum to aux and GELU of it to C. False
/// when cuBLASLt has no algorithm, or (GELU) when the aux layout is not one the epilogue
/// takes (ld n a multiple of 8, 16-byte aligned aux).
/// With dgelu: C = alpha op(A) op(B) * GELU'(aux) (aux read: the forward's pre-activation),
/// with `bias` written with the column sums of C (CUBLASLT_EPILOGUE_DGELU_BGRAD) or, bias
/// NULL, without (CUBLASLT_EPILOGUE_DGELU).
/// Whether plan p's call (the bias or GELU epilogue of ltMatmulEpilogue) runs on the own GEMM
/// (Gemm.cu): with TGRT_OWN_GEMM=1 cuBLASLt's tuned algorithm and the own kernel's two
/// persistent 128 x 256 schedules (Persistent256: 4 stages, the consumers store; and
/// PersistentEpilogue: 3 stages, epilogue warps) are timed once per plan (3 rounds of 5
/// calls, medians) at the first call outside a stream capture, the fastest kept (p.own,
/// p.own_sched); a capture before that runs cuBLASLt. TGRT_OWN_GEMM=2 takes Persistent256
/// for the bias epilogue and PersistentEpilogue for GELU (the faster of the two at these
/// shapes in bench/results/2026-11-30-h200/cluster, call8) without timing. Only bf16, a [m, k] (not transposed) times b [k, n] or b [n, k]^T, n and k
/// multiples of 8, 16-byte aligned operands (the bias 4-byte), on a device with the sm_90a
/// kernels.
bool ownGemmChoice(Context* ctx, const char* loc, MatmulPlan& p, int32_t dt, const void* a,
                   const void* b, const void* bias, void* aux, void* c, int64_t m, int64_t n,
                   int64_t k, int32_t ta, int32_t tb, float alpha) {
  if (p.own >= 0) return p.own == 1;
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  if (ctx->own_gemm == 0 || dt != TGRT_BF16 || ta || !bias ||
      reinterpret_cast<uintptr_t>(bias) % 4 != 0 || n % 8 != 0 ||
      k % 8 != 0 || !aligned(a) || !aligned(b) || !aligned(c) || (aux && !aligned(aux)) ||
      !ownGemmAvailable(ctx)) {
    p.own = 0;
    return false;
  }
  const GemmEpilogue epi = aux ? GemmEpilogue::BiasGelu : GemmEpilogue::Bias;
  if (ctx->own_gemm == 2) {
    p.own_sched = (int)(aux ? GemmSchedule::PersistentEpilogue : GemmSchedule::Persistent256);
    return (p.own = 1) == 1;
  }
  if (ctx->capturing) return false; // decided at the first call outside a capture
  ensureTuned(ctx, p, alpha, a, b, 0.0f, c, c);
  const float zero = 0.0f;
  auto lt = [&] {
    return cublasLtMatmul(ctx->lt, p.desc, &alpha, b, p.la, a, p.lb, &zero, c,
                          p.lc, c, p.lc, &p.algo, ctx->regions[TGRT_WORKSPACE],
                          (size_t)ctx->region_bytes[TGRT_WORKSPACE],
                          ctx->stream) == CUBLAS_STATUS_SUCCESS;
  };
  auto own = [&](GemmSchedule sched) {
    return [=] {
      gemmBf16(ctx, loc, a, b, bias, aux, c, m, n, k, tb, alpha, epi, sched);
      return true;
    };
  };
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), loc, "cudaEventCreate");
  check(cudaEventCreate(&e1), loc, "cudaEventCreate");
  auto timed = [&](auto&& fn) {
    float ms[3];
    for (float& t : ms) {
      bool ok = fn(); // warm
      cudaEventRecord(e0, ctx->stream);
      for (int i = 0; i < 5; ++i) ok = fn() && ok;
      cudaEventRecord(e1, ctx->stream);
      cudaEventSynchronize(e1);
      cudaEventElapsedTime(&t, e0, e1);
      if (!ok) t = 1e30f;
    }
    std::sort(ms, ms + 3);
    return ms[1];
  };
  // cuBLASLt's tuned algorithm is timed again here, though ensureTuned may just have timed it
  // (or taken it from the tuning cache, untimed): both sides of this choice are then measured
  // by the same rounds, on the same operands, moments apart (the GPU's clock under its power
  // limit moves between the two timings otherwise).
  const float tLt = timed(lt), tStore = timed(own(GemmSchedule::Persistent256)),
              tEpi = timed(own(GemmSchedule::PersistentEpilogue));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGetLastError();
  const float tOwn = std::min(tStore, tEpi);
  p.own_sched = (int)(tStore <= tEpi ? GemmSchedule::Persistent256 : GemmSchedule::PersistentEpilogue);
  p.own = tOwn < tLt ? 1 : 0;
  ++ctx->own_gemm_timed;
  ctx->own_gemm_chosen += p.own;
  return p.own == 1;
}

bool ltMatmulEpilogue(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                      const void* bias, void* aux, void* c, int64_t m, int64_t n, int64_t k,
                      int32_t ta, int32_t tb, float alpha, bool dgelu = false, int64_t lda = 0) {
  const int64_t es = tgrt_dtype_size(dt);
  if (aux && (n % 8 != 0 || alignmentOf(aux, 0, 1, es) < 16)) return false;
  MatmulKey key{1, m, n, k, 0, 0, 0, ta ? 1 : 0, tb ? 1 : 0, alignmentOf(a, 0, 1, es),
                alignmentOf(b, 0, 1, es), alignmentOf(c, 0, 1, es)};
  key.dt = dt;
  key.epilogue = dgelu ? (bias ? 3 : 4) : aux ? 2 : 1;
  key.align_bias = alignmentOf(bias, 0, 1, es);
  key.lda = lda == k ? 0 : lda;
  MatmulPlan& p = getPlan(ctx, loc, key, bias);
  if (!p.ok) return false;
  if (bias)
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias),
              loc, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (aux)
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                             &aux, sizeof aux),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
  if (!dgelu && key.lda == 0 &&
      ownGemmChoice(ctx, loc, p, dt, a, b, bias, aux, c, m, n, k, ta, tb, alpha)) {
    gemmBf16(ctx, loc, a, b, bias, aux, c, m, n, k, tb, alpha,
             aux ? GemmEpilogue::BiasGelu : GemmEpilogue::Bias, (GemmSchedule)p.own_sched);
    return true;
  }
  ltRun(ctx, loc, p, alpha, a, b, 0.0f, c, c,
        dgelu ? "cublasLtMatmul(dgelu epilogue)"
        : aux ? "cublasLtMatmul(gelu_aux_bias epilogue)"
              : "cublasLtMatmul(bias epilogue)");
  return true;
}

/// out (cdt) = res + (alpha op(A) op(B) + bias) in one cuBLASLt call: C = res with beta 1,
/// D = out, CUBLASLT_EPILOGUE_BIAS with the bias in D's type (the default epilogue when bias
/// is NULL); A, B in dt (batch 1). False
/// when cuBLASLt has no algorithm for the shape and types.
bool ltMatmulBiasResidual(Context* ctx, const char* loc, int32_t dt, const void* a,
                          const void* b, int32_t cdt, const void* bias, const void* res,
                          void* out, int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb,
                          float alpha) {
  const int64_t es = tgrt_dtype_size(dt), ces = tgrt_dtype_size(cdt);
  const uint32_t alignRes = alignmentOf(res, 0, 1, ces), alignOut = alignmentOf(out, 0, 1, ces);
  MatmulKey key{1, m, n, k, 0, 0, 0, ta ? 1 : 0, tb ? 1 : 0, alignmentOf(a, 0, 1, es),
                alignmentOf(b, 0, 1, es), alignRes < alignOut ? alignRes : alignOut};
  key.dt = dt;
  key.cdt = cdt;
  key.epilogue = bias ? 1 : 0; // no bias (the Llama family): the plain epilogue
  key.align_bias = bias ? alignmentOf(bias, 0, 1, ces) : 0;
  MatmulPlan& p = getPlan(ctx, loc, key, bias);
  if (!p.ok) return false;
  if (bias)
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias),
              loc, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  ltRun(ctx, loc, p, alpha, a, b, 1.0f, res, out,
        bias ? "cublasLtMatmul(bias epilogue, residual)" : "cublasLtMatmul(residual)");
  return true;
}

/// Hands a (sizes already checked) batched pointer list to the radix sort: keys = ids,
/// values = positions, both sorted stably by id. Emulation: std::stable_sort.
void sortIdsStable(Context* ctx, const char* loc, const int32_t* ids, int32_t* keysOut,
                   int32_t* posIn, int32_t* posOut, int64_t n, int endBit, void* temp,
                   size_t tempBytes) {
#ifdef TGRT_CUDA_EMULATE
  (void)ctx;
  (void)loc;
  (void)posIn;
  (void)endBit;
  (void)temp;
  (void)tempBytes;
  std::vector<int32_t> order((size_t)n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t x, int32_t y) { return ids[x] < ids[y]; });
  for (int64_t i = 0; i < n; ++i) {
    posOut[i] = order[(size_t)i];
    keysOut[i] = ids[order[(size_t)i]];
  }
#else
  check(cub::DeviceRadixSort::SortPairs(temp, tempBytes, ids, keysOut, posIn, posOut, (int)n, 0,
                                        endBit, ctx->stream),
        loc, "cub::DeviceRadixSort::SortPairs");
#endif
}

/// Scratch bytes the radix sort needs for n pairs.
size_t sortTempBytes(const char* loc, int64_t n, int endBit) {
#ifdef TGRT_CUDA_EMULATE
  (void)loc;
  (void)n;
  (void)endBit;
  return 256;
#else
  size_t bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const int32_t*)nullptr,
                                        (int32_t*)nullptr, (const int32_t*)nullptr,
                                        (int32_t*)nullptr, (int)n, 0, endBit),
        loc, "cub::DeviceRadixSort::SortPairs (size query)");
  return bytes;
#endif
}

/// Typed pointer casts for the host dispatch.
template <typename T>
const T* cp(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* mp(void* p) {
  return static_cast<T*>(p);
}

} // namespace

// ================================================================ host functions ==

void embeddingFwd(Context* ctx, const char* loc, int32_t dt, const void* table,
                  const int32_t* ids, void* out, int64_t n_tokens, int64_t d, int64_t vocab) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "embedding_fwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  const int64_t es = elemBytes(loc, "embedding_fwd", dt);
  if (n_tokens == 0 || d == 0) return;
  const int64_t rowBytes = d * es;
  const dim3 grid(gridFor(n_tokens, 1, 65535));
  const int32_t li = locIndex(ctx, loc);
  if (rowBytes % 16 == 0 && aligned16(table, out)) {
    const int64_t units = rowBytes / 16;
    launchDependent(ctx, loc, "embedding_fwd_kernel", embedding_fwd_kernel<uint4>, grid,
                    dim3(units >= 256 ? 256 : 128), 0, cp<uint4>(table), ids, mp<uint4>(out),
                    n_tokens, units, vocab, ctx->state, li);
    return;
  }
  withUnit(es, [&](auto u) {
    using U = decltype(u);
    launchDependent(ctx, loc, "embedding_fwd_kernel", embedding_fwd_kernel<U>, grid,
                    dim3(d >= 256 ? 256 : 128), 0, cp<U>(table), ids, mp<U>(out), n_tokens, d,
                    vocab, ctx->state, li);
  });
}

void embeddingFwdSplit(Context* ctx, const char* loc, const void* hi, const void* lo,
                       const int32_t* ids, void* out, int64_t n_tokens, int64_t d,
                       int64_t vocab) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "embedding_fwd_split(n_tokens, d, vocab)", n_tokens, d, vocab);
  if (n_tokens == 0 || d == 0) return;
  // Rows start 16-byte aligned when d % 8 == 0 and the bases are.
  const bool vec = d % 8 == 0 && aligned16(hi, lo, out);
  launchDependent(ctx, loc, "embedding_fwd_split_kernel", embedding_fwd_split_kernel,
                  dim3(gridFor(n_tokens, 1, 65535)), dim3(d >= 2048 ? 256 : 128), 0,
                  cp<uint16_t>(hi), cp<uint16_t>(lo), ids, mp<float>(out), n_tokens, d, vocab,
                  vec, ctx->state, locIndex(ctx, loc));
}

/// embeddingBwd (ACC false: the table cleared, then each touched row stored) and
/// embeddingBwdAcc (ACC true: each touched row added into, nothing cleared).
template <bool ACC>
void embeddingBwdImpl(Context* ctx, const char* loc, int32_t dt, const int32_t* ids,
                      const void* dout, void* dtable, int64_t n_tokens, int64_t d,
                      int64_t vocab) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "embedding_bwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  const int64_t es = elemBytes(loc, "embedding_bwd", dt);
  if (!ACC && vocab * d > 0)
    check(cudaMemsetAsync(dtable, 0, (size_t)(vocab * d * es), ctx->stream), loc,
          "cudaMemsetAsync");
  if (n_tokens == 0 || d == 0) return;
  if (n_tokens > 0x7fffffff) fail(loc, "embedding_bwd: more than 2^31 tokens");
  int endBit = 1;
  while (endBit < 31 && (int64_t{1} << endBit) < vocab) ++endBit;
  const size_t tempBytes = sortTempBytes(loc, n_tokens, endBit);
  const int64_t arr = align256(n_tokens * (int64_t)sizeof(int32_t));
  const int64_t C = embChunk(n_tokens);
  const int64_t chunks = (n_tokens + C - 1) / C;
  const int64_t partBytes = align256(chunks * d * (int64_t)sizeof(float));
  const int64_t tempAligned = align256((int64_t)tempBytes);
  checkWorkspace(ctx, loc, "embedding_bwd (sort by id, chunk partials)",
                 3 * arr + tempAligned + 2 * partBytes);
  char* ws = ctx->regions[TGRT_WORKSPACE];
  int32_t* keysOut = reinterpret_cast<int32_t*>(ws);
  int32_t* posIn = reinterpret_cast<int32_t*>(ws + arr);
  int32_t* posOut = reinterpret_cast<int32_t*>(ws + 2 * arr);
  void* temp = ws + 3 * arr;
  float* head = reinterpret_cast<float*>(ws + 3 * arr + tempAligned);
  float* tail = reinterpret_cast<float*>(ws + 3 * arr + tempAligned + partBytes);
  launchDependent(ctx, loc, "iota_kernel", iota_kernel, dim3(gridFor(n_tokens, kBlock)),
                  dim3(kBlock), 0, posIn, n_tokens);
  sortIdsStable(ctx, loc, ids, keysOut, posIn, posOut, n_tokens, endBit, temp, tempBytes);
  const int32_t li = locIndex(ctx, loc);
  withDtype(loc, "embedding_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    constexpr int W = packWidth<T>();
    auto run = [&](auto wTag) {
      constexpr int U = decltype(wTag)::value;
      const int64_t units = d / U;
      const unsigned threads = (unsigned)std::min<int64_t>(256, (units + 31) / 32 * 32);
      launchDependent(ctx, loc, "embedding_bwd_chunks_kernel",
                      embedding_bwd_chunks_kernel<U, T, ACC>, dim3((unsigned)chunks), dim3(threads),
                      0, keysOut, posOut, cp<T>(dout), mp<T>(dtable), head, tail, n_tokens, d,
                      vocab, C, ctx->state, li);
      launchDependent(ctx, loc, "embedding_bwd_join_kernel", embedding_bwd_join_kernel<U, T, ACC>,
                      dim3((unsigned)chunks), dim3(threads), 0, (const int32_t*)keysOut,
                      (const float*)head, (const float*)tail, mp<T>(dtable), n_tokens, d, vocab, C);
    };
    if (d % W == 0 && aligned16(dout, dtable)) run(std::integral_constant<int, W>{});
    else run(std::integral_constant<int, 1>{});
  });
}

void embeddingBwd(Context* ctx, const char* loc, int32_t dt, const int32_t* ids,
                  const void* dout, void* dtable, int64_t n_tokens, int64_t d, int64_t vocab) {
  embeddingBwdImpl<false>(ctx, loc, dt, ids, dout, dtable, n_tokens, d, vocab);
}

void embeddingBwdAcc(Context* ctx, const char* loc, int32_t dt, const int32_t* ids,
                     const void* dout, void* dtable, int64_t n_tokens, int64_t d, int64_t vocab) {
  embeddingBwdImpl<true>(ctx, loc, dt, ids, dout, dtable, n_tokens, d, vocab);
}

void positionalFwd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* wpe,
                   void* out, int64_t batch, int64_t t, int64_t d) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "positional_fwd(batch, t, d)", batch, t, d);
  const int64_t n = batch * t * d;
  withDtype(loc, "positional_fwd", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n > 0) rowBias<T>(ctx, loc, cp<T>(x), cp<T>(wpe), mp<T>(out), batch * t, d, t);
  });
}

void positionalBwd(Context* ctx, const char* loc, int32_t dt, const void* dout, void* dwpe,
                   int64_t batch, int64_t t, int64_t d, int64_t context) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "positional_bwd(batch, t, d, context)", batch, t, d, context);
  if (context < t)
    fail(loc, "positional_bwd: context %lld < t %lld", (long long)context, (long long)t);
  withDtype(loc, "positional_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    if (context * d == 0) return;
    launchDependent(ctx, loc, "positional_bwd_kernel", positional_bwd_kernel<T>,
                    dim3(gridFor(context * d, kBlock)), dim3(kBlock), 0, cp<T>(dout), mp<T>(dwpe),
                    batch, t, d, context);
  });
}

void add(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* out,
         int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "add(n)", n);
  withDtype(loc, "add", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    launchElementwise(ctx, loc, "add_kernel", AddOp<T>{cp<T>(a), cp<T>(b), mp<T>(out)}, n,
                      aligned16(a, b, out));
  });
}

void addMixed(Context* ctx, const char* loc, int32_t out_dt, const void* a, int32_t b_dt,
              const void* b, void* out, int32_t low_dt, void* low, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "add_mixed(n)", n);
  elemBytes(loc, "add_mixed (a, out)", out_dt);
  elemBytes(loc, "add_mixed (b)", b_dt);
  if (low) elemBytes(loc, "add_mixed (low)", low_dt);
  if (n == 0) return;
  withDtype(loc, "add_mixed", out_dt, [&](auto to) {
    using TO = decltype(to);
    withDtype(loc, "add_mixed", b_dt, [&](auto tb) {
      using TB = decltype(tb);
      if (!low) {
        launchElementwise(ctx, loc, "add_mixed_kernel",
                          AddMixedOp<TO, TB>{cp<TO>(a), cp<TB>(b), mp<TO>(out)}, n,
                          aligned16(a, b, out));
        return;
      }
      withDtype(loc, "add_mixed", low_dt, [&](auto tl) {
        using TL = decltype(tl);
        launchElementwise(ctx, loc, "add_mixed_low_kernel",
                          AddMixedLowOp<TO, TB, TL>{cp<TO>(a), cp<TB>(b), mp<TO>(out), mp<TL>(low)},
                          n, aligned16(a, b, out, low));
      });
    });
  });
}

void accumulate(Context* ctx, const char* loc, int32_t dt, void* dst, const void* src,
                int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "accumulate(n)", n);
  withDtype(loc, "accumulate", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    // dst += src: the add kernel with out aliasing a (each element read before written).
    launchElementwise(ctx, loc, "accumulate_kernel", AddOp<T>{cp<T>(dst), cp<T>(src), mp<T>(dst)}, n,
                      aligned16(dst, src));
  });
}

void fill(Context* ctx, const char* loc, int32_t dt, void* out, int64_t n, float value) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "fill(n)", n);
  withDtype(loc, "fill", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    const T v = hostFromF<T>(value);
    uint4 pattern;
    unsigned char bytes[16];
    for (size_t i = 0; i < 16; i += sizeof(T)) std::memcpy(bytes + i, &v, sizeof(T));
    std::memcpy(&pattern, bytes, 16);
    launchElementwise(ctx, loc, "fill_kernel", FillOp<T>{mp<T>(out), v, pattern}, n,
                      aligned16(out));
  });
}

void fillLossScaled(Context* ctx, const char* loc, int32_t dt, void* out, int64_t n,
                    float value) {
  checkCtx(ctx, loc);
  fill(ctx, loc, dt, out, n, value * ctx->loss_scale);
}

void cast(Context* ctx, const char* loc, int32_t src_dt, const void* src, int32_t dst_dt,
          void* dst, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "cast(n)", n);
  const int64_t es = elemBytes(loc, "cast (source)", src_dt);
  elemBytes(loc, "cast (destination)", dst_dt);
  if (n == 0) return;
  if (src_dt == dst_dt) {
    if (dst != src)
      check(cudaMemcpyAsync(dst, src, (size_t)(n * es), cudaMemcpyDeviceToDevice, ctx->stream),
            loc, "cudaMemcpyAsync");
    return;
  }
  withDtype(loc, "cast", src_dt, [&](auto st) {
    using TS = decltype(st);
    withDtype(loc, "cast", dst_dt, [&](auto dtag) {
      using TD = decltype(dtag);
      launchElementwise(ctx, loc, "cast_kernel", CastOp<TS, TD>{cp<TS>(src), mp<TD>(dst)}, n,
                        aligned16(src, dst));
    });
  });
}

void zero(Context* ctx, const char* loc, void* p, int64_t bytes) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "zero(bytes)", bytes);
  if (bytes == 0) return;
  check(cudaMemsetAsync(p, 0, (size_t)bytes, ctx->stream), loc, "cudaMemsetAsync");
}

void copy2d(Context* ctx, const char* loc, int32_t dt, const void* src, int64_t src_ld, void* dst,
            int64_t dst_ld, int64_t rows, int64_t cols) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "copy2d(src_ld, dst_ld, rows, cols)", src_ld, dst_ld, rows, cols);
  const int64_t es = elemBytes(loc, "copy2d", dt);
  if (rows == 0 || cols == 0) return;
  if (src_ld < cols || dst_ld < cols)
    fail(loc, "copy2d: leading dimensions (src %lld, dst %lld) smaller than cols %lld",
         (long long)src_ld, (long long)dst_ld, (long long)cols);
  // 16-byte words when every row start and length is whole words.
  const int64_t per = 16 / es; // elements per word
  const bool vec = cols % per == 0 && src_ld % per == 0 && dst_ld % per == 0 &&
                   aligned16(src, dst);
  const int64_t w = vec ? per : 1, q = cols / w, total = rows * q;
  // Largest index touched: (rows - 1) * max(ld) + cols (in elements).
  const bool small = (rows - 1) * std::max(src_ld, dst_ld) + cols < ((int64_t)1 << 31);
  const dim3 grid(gridFor(total, kBlock, 65535)), block(kBlock);
  const int64_t sld = src_ld / w, dld = dst_ld / w;
  auto go = [&](auto u) {
    using U = decltype(u);
    if (small)
      launchDependent(ctx, loc, "copy2d_kernel", copy2d_kernel<uint32_t, U>, grid, block, 0,
                      cp<U>(src), sld, mp<U>(dst), dld, total, q);
    else
      launchDependent(ctx, loc, "copy2d_kernel", copy2d_kernel<int64_t, U>, grid, block, 0,
                      cp<U>(src), sld, mp<U>(dst), dld, total, q);
  };
  if (vec) go(uint4{});
  else withUnit(es, go);
}

void transpose4(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t d0,
                int64_t d1, int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2,
                int32_t p3) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "transpose4(d0, d1, d2, d3)", d0, d1, d2, d3);
  const int64_t es = elemBytes(loc, "transpose4", dt);
  const int64_t dims[4] = {d0, d1, d2, d3};
  const int32_t perm[4] = {p0, p1, p2, p3};
  bool seen[4] = {false, false, false, false};
  for (int32_t p : perm) {
    if (p < 0 || p > 3 || seen[p])
      fail(loc, "transpose4: (%d, %d, %d, %d) is not a permutation of (0, 1, 2, 3)", (int)p0,
           (int)p1, (int)p2, (int)p3);
    seen[p] = true;
  }
  const int64_t n = d0 * d1 * d2 * d3;
  if (n == 0) return;
  const int64_t xstride[4] = {d1 * d2 * d3, d2 * d3, d3, 1};
  Permute4 pm;
  for (int j = 0; j < 4; ++j) {
    pm.ydim[j] = dims[perm[j]];
    pm.xstride[j] = xstride[perm[j]];
  }
  // Largest x offset + 1 is n; 32-bit indices when n (and so every index) fits.
  const bool small = n < ((int64_t)1 << 31);
  if (perm[3] == 3) {
    const int64_t per = 16 / es;
    const bool vec = d3 % per == 0 && aligned16(x, y);
    const int64_t w = vec ? per : 1, q = d3 / w, total = n / w;
    const int64_t s0 = pm.xstride[0] / w, s1 = pm.xstride[1] / w, s2 = pm.xstride[2] / w;
    const dim3 grid(gridFor(total, kBlock, 65535)), block(kBlock);
    auto go = [&](auto u) {
      using U = decltype(u);
      if (small)
        launchDependent(ctx, loc, "transpose_rows_kernel", transpose_rows_kernel<uint32_t, U>, grid,
                        block, 0, cp<U>(x), mp<U>(y), total, q, pm.ydim[1], pm.ydim[2], s0, s1, s2);
      else
        launchDependent(ctx, loc, "transpose_rows_kernel", transpose_rows_kernel<int64_t, U>, grid,
                        block, 0, cp<U>(x), mp<U>(y), total, q, pm.ydim[1], pm.ydim[2], s0, s1, s2);
    };
    if (vec) go(uint4{});
    else withUnit(es, go);
    return;
  }
  withUnit(es, [&](auto u) {
    using U = decltype(u);
    if (small)
      launchDependent(ctx, loc, "transpose4_kernel", transpose4_kernel<uint32_t, U>,
                      dim3(gridFor(n, kBlock, 65535)), dim3(kBlock), 0, cp<U>(x), mp<U>(y), pm, n);
    else
      launchDependent(ctx, loc, "transpose4_kernel", transpose4_kernel<int64_t, U>,
                      dim3(gridFor(n, kBlock, 65535)), dim3(kBlock), 0, cp<U>(x), mp<U>(y), pm, n);
  });
}

namespace {

/// Whether tgrt_add_layer_norm_fwd has a register kernel for a branch of type TB: the
/// branch has the stream's type (one precision throughout) or the normalised output's
/// (mixed precision: f32 stream, bf16 / f16 branch), and its packs have the stream's width
/// (so the statistics are summed in the unfused kernel's order). Others are not compiled.
template <typename TX, typename TP, typename TY, typename TB>
constexpr bool fusedAddTypes() {
  if constexpr (std::is_void_v<TB>)
    return true;
  else
    return ((std::is_same_v<TB, TX> && std::is_same_v<TX, TY>) ||
            (std::is_same_v<TX, float> && std::is_same_v<TB, TY>)) &&
           packWidth<TX, TP, TY, TB>() == packWidth<TX, TP, TY>();
}

/// Layer norm forward with compile-time types: the register kernel when the shape allows,
/// else the scalar one. With a residual branch (TB not void, add_layer_norm_fwd: the row is
/// x + b, stored to `sumv`) only the register kernel: returns false, launching nothing,
/// when the types, shape or alignment do not allow it.
template <typename TX, typename TP, typename TY, typename TB = void>
bool layerNormFwdTyped(Context* ctx, const char* loc, const void* xv, const void* gv,
                       const void* bv, void* yv, float* mean, float* rstd, int64_t rows,
                       int64_t d, float eps, const void* bres = nullptr, void* sumv = nullptr,
                       int64_t ldy = 0) {
  constexpr bool kRes = !std::is_void_v<TB>;
  if constexpr (!fusedAddTypes<TX, TP, TY, TB>()) {
    return false;
  } else {
    constexpr int W = packWidth<TX, TP, TY>();
    const TX* x = cp<TX>(xv);
    const TP* gamma = cp<TP>(gv);
    const TP* beta = cp<TP>(bv);
    TY* y = mp<TY>(yv);
    const TB* b = static_cast<const TB*>(bres);
    TX* sum = static_cast<TX*>(sumv);
    if (kRes && !aligned16(b, sum)) return false;
    const char* name = kRes ? "add_layer_norm_fwd_vec_kernel" : "layer_norm_fwd_vec_kernel";
    const dim3 grid(gridFor(rows, 8)), block(kBlock);
    // A pitched y (ldy) keeps the register kernel while its rows stay 16-byte aligned.
    const bool yRows = ldy == 0 || (ldy * (int64_t)sizeof(TY)) % 16 == 0;
    switch (layerNormNV(d, W, aligned16(x, gamma, beta, y) && yRows)) {
#define TGRT_LN_FWD(NV)                                                                            \
  case NV:                                                                                         \
    launchDependent(ctx, loc, name, layer_norm_fwd_vec_kernel<NV, W, TX, TP, TY, TB>, grid, block, \
                    0, x, gamma, beta, y, mean, rstd, rows, d, eps, b, sum, ldy);                  \
    return true;
      TGRT_LN_FWD(1)
      TGRT_LN_FWD(2)
      TGRT_LN_FWD(4)
      TGRT_LN_FWD(6)
      TGRT_LN_FWD(8)
    case 3:
      if constexpr (W == 8) {
        launchDependent(ctx, loc, name, layer_norm_fwd_vec_kernel<3, W, TX, TP, TY, TB>, grid,
                        block, 0, x, gamma, beta, y, mean, rstd, rows, d, eps, b, sum, ldy);
        return true;
      }
      [[fallthrough]];
#undef TGRT_LN_FWD
    default:
      if constexpr (kRes) {
        return false;
      } else {
        launchDependent(ctx, loc, "layer_norm_fwd_kernel",
                        layer_norm_fwd_kernel<Ld<TX>, Ld<TP>, St<TY>>, grid, block, 0, Ld<TX>{x},
                        Ld<TP>{gamma}, Ld<TP>{beta}, St<TY>{y}, mean, rstd, rows, d, eps, ldy);
        return true;
      }
    }
  }
}

/// Layer norm dx with compile-time types (dx has x's type), as layerNormFwdTyped.
template <typename TDY, typename TX, typename TP>
void layerNormBwdDxTyped(Context* ctx, const char* loc, const void* dyv, const void* xv,
                         const void* gv, const float* mean, const float* rstd, void* dxv,
                         int64_t rows, int64_t d) {
  constexpr int W = packWidth<TDY, TX, TP>();
  const TDY* dy = cp<TDY>(dyv);
  const TX* x = cp<TX>(xv);
  const TP* gamma = cp<TP>(gv);
  TX* dx = mp<TX>(dxv);
  const dim3 grid(gridFor(rows, 8)), block(kBlock);
  switch (layerNormNV(d, W, aligned16(dy, x, gamma, dx))) {
#define TGRT_LN_BWD(NV)                                                                      \
  case NV:                                                                                   \
    launchDependent(ctx, loc, "layer_norm_bwd_dx_vec_kernel",                                \
                    layer_norm_bwd_dx_vec_kernel<NV, W, TDY, TX, TP>, grid, block, 0, dy, x, \
                    gamma, mean, rstd, dx, rows, d);                                         \
    return;
    TGRT_LN_BWD(1)
    TGRT_LN_BWD(2)
    TGRT_LN_BWD(4)
    TGRT_LN_BWD(6)
    TGRT_LN_BWD(8)
  case 3:
    if constexpr (W == 8) {
      launchDependent(ctx, loc, "layer_norm_bwd_dx_vec_kernel",
                      layer_norm_bwd_dx_vec_kernel<3, W, TDY, TX, TP>, grid, block, 0, dy, x, gamma,
                      mean, rstd, dx, rows, d);
      return;
    }
    [[fallthrough]];
#undef TGRT_LN_BWD
  default:
    launchDependent(ctx, loc, "layer_norm_bwd_dx_kernel",
                    layer_norm_bwd_dx_kernel<Ld<TDY>, Ld<TX>, Ld<TP>, St<TX>>, grid, block, 0,
                    Ld<TDY>{dy}, Ld<TX>{x}, Ld<TP>{gamma}, mean, rstd, St<TX>{dx}, rows, d);
  }
}

/// The fused backward (layer_norm_bwd_fused_kernel) for a low-precision typed combination;
/// false when the shape does not allow it (the caller then runs dx + column sums).
/// ACC / LOW as the kernel (the accumulating form; low has TDY's type). DB (ACC, not SLOTS):
/// also dbias (bias_dt) = the column sums of what is stored (tgrt_layer_norm_bwd_acc_bgrad),
/// in the kernel at up to kLnBwdBiasNV packs per lane (d <= 1024 at 2-byte dy; *biasDone
/// set); wider rows leave them to the caller's separate sums.
template <typename TDY, typename TX, typename TP, bool ACC = false, bool LOW = false,
          bool SLOTS = false, bool DB = false>
bool layerNormBwdFused(Context* ctx, const char* loc, const void* dyv, const void* xv,
                       const void* gv, const float* mean, const float* rstd, void* dxv,
                       void* dgv, void* dbv, int64_t rows, int64_t d, void* lowv = nullptr,
                       int32_t bias_dt = TGRT_F32, void* dbias = nullptr,
                       bool* biasDone = nullptr) {
  static_assert(!DB || (ACC && !SLOTS), "the bias gradient comes with the stored sums");
  constexpr int W = packWidth<TDY, TX, TP>();
  static_assert(W == 8, "the fused backward is for combinations with a 2-byte type");
  const TDY* dy = cp<TDY>(dyv);
  const TX* x = cp<TX>(xv);
  const TP* gamma = cp<TP>(gv);
  TX* dx = mp<TX>(dxv);
  TDY* low = mp<TDY>(lowv);
  const int nv = layerNormNV(d, W, aligned16(dy, x, gamma, dx) && (!LOW || aligned16(low)));
  if (nv == 0 || rows == 0) return false;
  const int64_t blocks = lnBwdBlocks(rows);
  const int64_t partBytes = align256(blocks * d * (int64_t)sizeof(float));
  checkWorkspace(ctx, loc, "layer_norm_bwd (column partials)", (DB ? 3 : 2) * partBytes);
  float* part0 = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  float* part1 = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE] + partBytes);
  float* part2 =
      DB ? reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE] + 2 * partBytes) : nullptr;
  const dim3 grid((unsigned)blocks), block(256);
  // The register / occupancy variant (layer_norm_bwd_fused_kernel's RELOAD) for the
  // mixed-precision residual stream (f32 x, the accumulating form) at up to 4 packs per lane.
  const bool reload = ACC && std::is_same<TX, float>::value && nv <= 4 && ctx->ln_bwd_reload;
  auto run = [&](auto reloadTag) {
    constexpr bool R = decltype(reloadTag)::value;
    switch (nv) {
#define TGRT_LN_FUSED(NV)                                                                     \
  case NV:                                                                                    \
    if constexpr (!R || NV <= 4) {                                                            \
      launchDependent(ctx, loc, "layer_norm_bwd_fused_kernel",                                \
                      layer_norm_bwd_fused_kernel<NV, W, TDY, TX, TP, ACC, LOW, TDY, R,       \
                                                  DB && NV <= kLnBwdBiasNV>,                  \
                      grid, block, 0, dy, x, gamma, mean, rstd, dx, low, part0, part1, part2, \
                      rows, d);                                                               \
      return true;                                                                            \
    }                                                                                         \
    return false;
      TGRT_LN_FUSED(1)
      TGRT_LN_FUSED(2)
      TGRT_LN_FUSED(3)
      TGRT_LN_FUSED(4)
      TGRT_LN_FUSED(6)
#undef TGRT_LN_FUSED
    default: return false; // 8 packs per lane (d > 1536) would spill: dx + column sums
    }
  };
  bool launched;
  if constexpr (ACC && std::is_same<TX, float>::value)
    launched = reload ? run(std::true_type{}) : run(std::false_type{});
  else
    launched = run(std::false_type{});
  if (!launched) return false;
  if constexpr (SLOTS)
    launchDependent(ctx, loc, "column_finish_kernel", column_finish_kernel<StAccR<TP>>,
                    dim3(gridFor(d, kFinCols, 0x7fffffff)), dim3(256), 0, (const float*)part0,
                    (const float*)part1, StAccR<TP>{mp<TP>(dbv)}, StAccR<TP>{mp<TP>(dgv)}, blocks,
                    d);
  else
    launchDependent(ctx, loc, "column_finish_kernel", column_finish_kernel<St<TP>>,
                    dim3(gridFor(d, kFinCols, 0x7fffffff)), dim3(256), 0, (const float*)part0,
                    (const float*)part1, St<TP>{mp<TP>(dbv)}, St<TP>{mp<TP>(dgv)}, blocks, d);
  if constexpr (DB) {
    if (nv <= kLnBwdBiasNV) {
      withDtype(loc, "layer_norm_bwd_acc_bgrad (dbias)", bias_dt, [&](auto tag) {
        using TB = decltype(tag);
        launchDependent(ctx, loc, "column_finish_kernel", column_finish_kernel<St<TB>>,
                        dim3(gridFor(d, kFinCols, 0x7fffffff)), dim3(256), 0, (const float*)part2,
                        (const float*)nullptr, St<TB>{mp<TB>(dbias)}, St<TB>{nullptr}, blocks, d);
      });
      *biasDone = true;
    }
  }
  return true;
}

/// The dtype combinations of layer norm with compiled typed kernels: all one type, or
/// x and the parameters f32 with y (dy) bf16 / f16 (the mixed-precision residual stream).
/// Calls f(TX{}, TP{}, TY{}) and returns true for those; false otherwise.
template <typename F>
bool withLayerNormTypes(int32_t x_dt, int32_t p_dt, int32_t y_dt, F&& f) {
  if (x_dt == p_dt && p_dt == y_dt) {
    switch (x_dt) {
    case TGRT_F32: f(float{}, float{}, float{}); return true;
    case TGRT_BF16: f(bf16_t{}, bf16_t{}, bf16_t{}); return true;
    case TGRT_F16: f(f16_t{}, f16_t{}, f16_t{}); return true;
    default: return false;
    }
  }
  if (x_dt == TGRT_F32 && p_dt == TGRT_F32) {
    if (y_dt == TGRT_BF16) {
      f(float{}, float{}, bf16_t{});
      return true;
    }
    if (y_dt == TGRT_F16) {
      f(float{}, float{}, f16_t{});
      return true;
    }
  }
  return false;
}

} // namespace

namespace {
/// layerNormFwd and layerNormFwdOnes: ldy 0 (y [rows, d]) or d + kOnesColumns.
void layerNormFwdImpl(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                      const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean,
                      float* rstd, int64_t rows, int64_t d, float eps, int64_t ldy) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "layer_norm_fwd(rows, d)", rows, d);
  elemBytes(loc, "layer_norm_fwd (x)", x_dt);
  elemBytes(loc, "layer_norm_fwd (gamma, beta)", p_dt);
  elemBytes(loc, "layer_norm_fwd (y)", y_dt);
  if (rows == 0) return;
  if (d == 0) fail(loc, "layer_norm_fwd: d must be > 0");
  const bool typed = withLayerNormTypes(x_dt, p_dt, y_dt, [&](auto tx, auto tp, auto ty) {
    layerNormFwdTyped<decltype(tx), decltype(tp), decltype(ty)>(
        ctx, loc, x, gamma, beta, y, mean, rstd, rows, d, eps, nullptr, nullptr, ldy);
  });
  if (!typed)
    launchDependent(ctx, loc, "layer_norm_fwd_kernel", layer_norm_fwd_kernel<LdDyn, LdDyn, StDyn>,
                    dim3(gridFor(rows, 8)), dim3(kBlock), 0, LdDyn{x, x_dt}, LdDyn{gamma, p_dt},
                    LdDyn{beta, p_dt}, StDyn{y, y_dt}, mean, rstd, rows, d, eps, ldy);
}
} // namespace

void layerNormFwd(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                  const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean,
                  float* rstd, int64_t rows, int64_t d, float eps) {
  layerNormFwdImpl(ctx, loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps, 0);
}

void layerNormFwdOnes(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                      const void* gamma, const void* beta, int32_t y_dt, void* y, float* mean,
                      float* rstd, int64_t rows, int64_t d, float eps) {
  layerNormFwdImpl(ctx, loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps,
                   d + kOnesColumns);
}

namespace {
/// addLayerNormFwd and addLayerNormFwdOnes: ldy 0 (y [rows, d]) or d + kOnesColumns.
void addLayerNormFwdImpl(Context* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt,
                         const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta,
                         int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                         float eps, int64_t ldy) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "add_layer_norm_fwd(rows, d)", rows, d);
  elemBytes(loc, "add_layer_norm_fwd (b)", b_dt);
  bool fused = false;
  if (rows > 0 && d > 0)
    withLayerNormTypes(x_dt, p_dt, y_dt, [&](auto tx, auto tp, auto ty) {
      using TX = decltype(tx);
      withDtype(loc, "add_layer_norm_fwd (b)", b_dt, [&](auto tb) {
        fused = layerNormFwdTyped<TX, decltype(tp), decltype(ty), decltype(tb)>(
            ctx, loc, a, gamma, beta, y, mean, rstd, rows, d, eps, b, x, ldy);
      });
    });
  if (fused) return;
  // Any other shape or type: the two calls it stands for (bit-equal by definition).
  addMixed(ctx, loc, x_dt, a, b_dt, b, x, TGRT_F32, nullptr, rows * d);
  layerNormFwdImpl(ctx, loc, x_dt, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows, d, eps, ldy);
}
} // namespace

void addLayerNormFwd(Context* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt,
                     const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta,
                     int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                     float eps) {
  addLayerNormFwdImpl(ctx, loc, x_dt, a, b_dt, b, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows,
                      d, eps, 0);
}

void addLayerNormFwdOnes(Context* ctx, const char* loc, int32_t x_dt, const void* a, int32_t b_dt,
                         const void* b, void* x, int32_t p_dt, const void* gamma, const void* beta,
                         int32_t y_dt, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                         float eps) {
  addLayerNormFwdImpl(ctx, loc, x_dt, a, b_dt, b, x, p_dt, gamma, beta, y_dt, y, mean, rstd, rows,
                      d, eps, d + kOnesColumns);
}

/// The layer-norm backward for any dtype combination through runtime-typed accessors: dx by
/// the scalar kernel into `dx` (StDyn stores, StAccDyn adds into the residual gradient),
/// then the column sums (dbeta, dgamma; pes = their element size).
template <typename ADX, typename AP = StDyn>
void layerNormBwdGeneric(Context* ctx, const char* loc, int32_t y_dt, const void* dy,
                         int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                         const float* mean, const float* rstd, ADX dx, void* dgamma,
                         void* dbeta, int64_t pes, int64_t rows, int64_t d) {
  if (rows > 0)
    launchDependent(ctx, loc, "layer_norm_bwd_dx_kernel",
                    layer_norm_bwd_dx_kernel<LdDyn, LdDyn, LdDyn, ADX>, dim3(gridFor(rows, 8)),
                    dim3(kBlock), 0, LdDyn{dy, y_dt}, LdDyn{x, x_dt}, LdDyn{gamma, p_dt}, mean,
                    rstd, dx, rows, d);
  columnSums(ctx, loc, LdDyn{dy, y_dt}, LdDyn{x, x_dt}, mean, rstd, AP{dbeta, p_dt},
             AP{dgamma, p_dt}, pes, rows, d);
}

void layerNormBwd(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                  const void* x, int32_t p_dt, const void* gamma, const float* mean,
                  const float* rstd, void* dx, void* dgamma, void* dbeta, int64_t rows,
                  int64_t d) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "layer_norm_bwd(rows, d)", rows, d);
  elemBytes(loc, "layer_norm_bwd (dy)", y_dt);
  elemBytes(loc, "layer_norm_bwd (x, dx)", x_dt);
  const int64_t pes = elemBytes(loc, "layer_norm_bwd (gamma, dgamma, dbeta)", p_dt);
  if (d == 0) return;
  const bool typed = withLayerNormTypes(x_dt, p_dt, y_dt, [&](auto tx, auto tp, auto ty) {
    using TX = decltype(tx);
    using TP = decltype(tp);
    using TY = decltype(ty);
    if constexpr (packWidth<TY, TX, TP>() == 8) {
      if (layerNormBwdFused<TY, TX, TP>(ctx, loc, dy, x, gamma, mean, rstd, dx, dgamma, dbeta,
                                        rows, d))
        return;
    }
    if (rows > 0)
      layerNormBwdDxTyped<TY, TX, TP>(ctx, loc, dy, x, gamma, mean, rstd, dx, rows, d);
    columnSums(ctx, loc, Ld<TY>{cp<TY>(dy)}, Ld<TX>{cp<TX>(x)}, mean, rstd,
               St<TP>{mp<TP>(dbeta)}, St<TP>{mp<TP>(dgamma)}, pes, rows, d);
  });
  if (typed) return;
  layerNormBwdGeneric(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd, StDyn{dx, x_dt},
                      dgamma, dbeta, pes, rows, d);
}

namespace {
void biasGradSums(Context* ctx, const char* loc, int32_t dy_dt, const void* dy, int32_t out_dt,
                  void* dbias, int64_t rows, int64_t n, bool add); // (defined below)
} // namespace

void layerNormBwdAcc(Context* ctx, const char* loc, bool slots, int32_t y_dt, const void* dy,
                     int32_t x_dt, const void* x, int32_t p_dt, const void* gamma,
                     const float* mean, const float* rstd, void* dres, int32_t low_dt, void* low,
                     void* dgamma, void* dbeta, int64_t rows, int64_t d, int32_t db_dt,
                     void* dbias) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "layer_norm_bwd_acc(rows, d)", rows, d);
  elemBytes(loc, "layer_norm_bwd_acc (dy)", y_dt);
  elemBytes(loc, "layer_norm_bwd_acc (x, dres)", x_dt);
  const int64_t pes = elemBytes(loc, "layer_norm_bwd_acc (gamma, dgamma, dbeta)", p_dt);
  if (low) elemBytes(loc, "layer_norm_bwd_acc (low)", low_dt);
  checkLowCopy(loc, "layer_norm_bwd_acc", dy, y_dt, low, low_dt, rows * d);
  if (dbias) {
    elemBytes(loc, "layer_norm_bwd_acc_bgrad (dbias)", db_dt);
    if (slots) fail(loc, "layer_norm_bwd_acc: a bias gradient with the slots form");
  }
  if (d == 0) return;
  // One pass (the fused kernel) for the mixed-precision combinations with low in dy's type;
  // it sums the bias gradient too at up to kLnBwdBiasNV packs per lane (biasDone).
  bool done = false, biasDone = false;
  withLayerNormTypes(x_dt, p_dt, y_dt, [&](auto tx, auto tp, auto ty) {
    using TX = decltype(tx);
    using TP = decltype(tp);
    using TY = decltype(ty);
    if constexpr (packWidth<TY, TX, TP>() == 8) {
      auto fused = [&](auto slotsTag, auto biasTag) {
        constexpr bool S = decltype(slotsTag)::value;
        constexpr bool B = decltype(biasTag)::value;
        if (!low)
          return layerNormBwdFused<TY, TX, TP, true, false, S, B>(
              ctx, loc, dy, x, gamma, mean, rstd, dres, dgamma, dbeta, rows, d, nullptr, db_dt,
              dbias, &biasDone);
        if (low_dt == y_dt)
          return layerNormBwdFused<TY, TX, TP, true, true, S, B>(ctx, loc, dy, x, gamma, mean,
                                                                 rstd, dres, dgamma, dbeta, rows,
                                                                 d, low, db_dt, dbias, &biasDone);
        return false;
      };
      done = slots ? fused(std::true_type{}, std::false_type{})
                   : dbias ? fused(std::false_type{}, std::true_type{})
                           : fused(std::false_type{}, std::false_type{});
    }
  });
  // Otherwise: dx accumulated by the scalar kernel (dres = round(dres + dx)), the column
  // sums (stored, or added into the slots), then the low copy.
  if (!done) {
    if (slots)
      layerNormBwdGeneric<StAccDyn, StAccDyn>(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, mean,
                                              rstd, StAccDyn{dres, x_dt}, dgamma, dbeta, pes,
                                              rows, d);
    else
      layerNormBwdGeneric(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, mean, rstd,
                          StAccDyn{dres, x_dt}, dgamma, dbeta, pes, rows, d);
    if (low) cast(ctx, loc, x_dt, dres, low_dt, low, rows * d);
  }
  // The bias gradient's separate sums of what was stored, unless the fused kernel took them.
  if (dbias && !biasDone) biasGradSums(ctx, loc, low ? low_dt : x_dt, low ? low : dres, db_dt, dbias, rows, d,
                          false);
}

void matmul(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b, void* c,
            int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
            int64_t stride_a, int64_t stride_b, int64_t stride_c, float alpha, float beta) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul(batch, m, n, k)", batch, m, n, k);
  checkNonNegative(loc, "matmul(stride_a, stride_b, stride_c)", stride_a, stride_b, stride_c);
  const int64_t es = elemBytes(loc, "matmul", dt);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) { // C = beta C (alpha times an empty product is 0)
    if (beta != 1.0f)
      withDtype(loc, "matmul", dt, [&](auto tag) {
        using T = decltype(tag);
        for (int64_t bi = 0; bi < batch; ++bi) {
          T* cb = mp<T>(c) + bi * stride_c;
          launchElementwise(ctx, loc, "scale_kernel", ScaleOp<T>{cb, beta}, m * n, aligned16(cb));
        }
      });
    return;
  }
  // A weight shared by every batch entry (stride_b = 0) against contiguous rows of a: one
  // GEMM with batch*m rows does the same arithmetic with one launch.
  if (batch > 1 && stride_b == 0 && !trans_a && stride_a == m * k && stride_c == m * n) {
    m *= batch;
    batch = 1;
  }
  // Strided batches need distinct outputs and a batch count that fits cuBLASLt's int32.
  const bool oneCall = batch == 1 || (stride_c != 0 && batch <= 0x7fffffff);
  if (oneCall && ltMatmul(ctx, loc, dt, a, b, c, batch, m, n, k, trans_a, trans_b, stride_a,
                          stride_b, stride_c, alpha, beta))
    return;
  const char* ab = static_cast<const char*>(a);
  const char* bb = static_cast<const char*>(b);
  char* cb = static_cast<char*>(c);
  for (int64_t bi = 0; bi < batch; ++bi)
    if (!ltMatmul(ctx, loc, dt, ab + bi * stride_a * es, bb + bi * stride_b * es,
                  cb + bi * stride_c * es, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, beta))
      fail(loc,
           "cuBLASLt has no algorithm for matmul (dtype %d) m %lld n %lld k %lld trans_a %d "
           "trans_b %d",
           (int)dt, (long long)m, (long long)n, (long long)k, (int)trans_a, (int)trans_b);
}

void matmulAcc(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
               int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
               int32_t trans_b, float alpha, float beta) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_acc(m, n, k)", m, n, k);
  elemBytes(loc, "matmul_acc (a, b)", ab_dt);
  const int64_t ces = elemBytes(loc, "matmul_acc (c)", c_dt);
  if (m == 0 || n == 0) return;
  if (k == 0) { // C = beta C + 0: only beta 0 (C written) and beta 1 (C kept) are used
    if (beta == 0.0f)
      check(cudaMemsetAsync(c, 0, (size_t)(m * n * ces), ctx->stream), loc, "cudaMemsetAsync");
    else if (beta != 1.0f)
      fail(loc, "matmul_acc: k 0 with beta %g (only 0 or 1)", (double)beta);
    return;
  }
  if (c_dt == ab_dt) {
    matmul(ctx, loc, ab_dt, a, b, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, beta);
    return;
  }
  if (!ltMatmulAcc(ctx, loc, ab_dt, a, b, c_dt, c, m, n, k, trans_a, trans_b, alpha, beta))
    fail(loc,
         "cuBLASLt has no algorithm for matmul_acc (a, b dtype %d; c dtype %d) m %lld n %lld "
         "k %lld trans_a %d trans_b %d",
         (int)ab_dt, (int)c_dt, (long long)m, (long long)n, (long long)k, (int)trans_a,
         (int)trans_b);
}

namespace {
/// An A row pitch (tgrt_matmul_bias_lda): 0 (k) or at least k, a not transposed, its rows
/// 16-byte aligned at 2-byte types (cuBLASLt's and TMA's requirement) is left to the caller.
void checkLda(const char* loc, const char* what, int64_t lda, int64_t k, int32_t trans_a) {
  if (lda == 0) return;
  if (lda < k || trans_a)
    fail(loc, "%s: a's rows %lld apart need lda >= k (%lld) and a not transposed", what,
         (long long)lda, (long long)k);
}

/// dbias (out_dt) = (add: +=) the column sums of dy [rows, n] (dy_dt), in biasGradChunks
/// row chunks: the bias gradient of tgrt_matmul_wgrad (stored) and tgrt_bias_grad_acc (added).
void biasGradSums(Context* ctx, const char* loc, int32_t dy_dt, const void* dy, int32_t out_dt,
                  void* dbias, int64_t rows, int64_t n, bool add) {
  const int64_t oes = elemBytes(loc, "bias gradient (dbias)", out_dt);
  withDtype(loc, "bias gradient (dy)", dy_dt, [&](auto tag) {
    using T = decltype(tag);
    withDtype(loc, "bias gradient (dbias)", out_dt, [&](auto atag) {
      using A = decltype(atag);
      if (add)
        columnSums(ctx, loc, Ld<T>{cp<T>(dy)}, Ld<T>{nullptr}, nullptr, nullptr,
                   StAcc<A>{mp<A>(dbias)}, StAcc<A>{nullptr}, oes, rows, n, biasGradChunks(ctx, n));
      else
        columnSums(ctx, loc, Ld<T>{cp<T>(dy)}, Ld<T>{nullptr}, nullptr, nullptr,
                   St<A>{mp<A>(dbias)}, St<A>{nullptr}, oes, rows, n, biasGradChunks(ctx, n));
    });
  });
}
} // namespace

void setBgradEpilogue(Context* ctx, bool on) { ctx->bgrad_epilogue = on; }

void setBgradChunks(Context* ctx, int chunks) {
  ctx->bgrad_chunks = chunks >= 1 && chunks <= 256 ? chunks : 0;
}

void setLnBwdReload(Context* ctx, bool on) { ctx->ln_bwd_reload = on; }
bool setAdamwF32(Context* ctx, bool f32) {
  const bool before = ctx->adamw_f32;
  ctx->adamw_f32 = f32;
  return before;
}
int setAdamwBlocks(Context* ctx, int blocks) {
  if (blocks < 1) fail("setAdamwBlocks", "AdamW's grid of %d blocks is not >= 1", blocks);
  const int before = ctx->adamw_blocks;
  ctx->adamw_blocks = blocks;
  return before;
}
int setCeFast(Context* ctx, int variant) {
  if (variant != -1 && variant != 0 && variant != 6 && variant != 7)
    fail("setCeFast", "cross-entropy variant %d is not -1 (per vocabulary), 0, 6 or 7", variant);
  const int before = ctx->ce_fast;
  ctx->ce_fast = variant;
  return before;
}

void matmulWgrad(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
                 int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                 int32_t trans_b, float alpha, void* dbias) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_wgrad(m, n, k)", m, n, k);
  elemBytes(loc, "matmul_wgrad (a, b)", ab_dt);
  const int64_t ces = elemBytes(loc, "matmul_wgrad (c, dbias)", c_dt);
  if (dbias && trans_b)
    fail(loc, "matmul_wgrad: a bias gradient needs trans_b = 0 (B stored [k, n]), got 1");
  if (m > 0 && n > 0 && k > 0) {
    // alpha 1 only: whether the epilogue scales its sums by alpha is not documented.
    if (dbias && ctx->bgrad_epilogue && alpha == 1.0f &&
        ltMatmulAcc(ctx, loc, ab_dt, a, b, c_dt, c, m, n, k, trans_a, trans_b, alpha, 0.0f,
                    dbias))
      return;
    if (c_dt == ab_dt)
      matmul(ctx, loc, ab_dt, a, b, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
    else if (!ltMatmulAcc(ctx, loc, ab_dt, a, b, c_dt, c, m, n, k, trans_a, trans_b, alpha, 0.0f))
      fail(loc,
           "cuBLASLt has no algorithm for matmul_wgrad (a, b dtype %d; c dtype %d) m %lld n "
           "%lld k %lld trans_a %d trans_b %d",
           (int)ab_dt, (int)c_dt, (long long)m, (long long)n, (long long)k, (int)trans_a,
           (int)trans_b);
  } else if (m > 0 && n > 0) { // k = 0: C = 0
    check(cudaMemsetAsync(c, 0, (size_t)(m * n * ces), ctx->stream), loc, "cudaMemsetAsync");
  }
  if (!dbias || n == 0) return;
  biasGradSums(ctx, loc, ab_dt, b, c_dt, dbias, k, n, /*add=*/false); // stored: no zero first
}

namespace {
/// matmulWgradLda (beta 0: C written) and matmulAccLda (beta 1: C added to): one cuBLASLt
/// call over A [k, m] read transposed with its rows lda apart; `what` names the entry.
void matmulLda(Context* ctx, const char* loc, const char* what, int32_t ab_dt, const void* a,
               const void* b, int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
               int32_t trans_b, float alpha, float beta) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, what, m, n, k);
  elemBytes(loc, what, ab_dt);
  const int64_t ces = elemBytes(loc, what, c_dt);
  if (lda < m)
    fail(loc, "%s: a's rows %lld apart need lda >= m (%lld)", what, (long long)lda, (long long)m);
  if (m == 0 || n == 0) return;
  if (k == 0) { // C = beta C: written 0, or kept
    if (beta == 0.0f)
      check(cudaMemsetAsync(c, 0, (size_t)(m * n * ces), ctx->stream), loc, "cudaMemsetAsync");
    return;
  }
  if (!ltMatmulAcc(ctx, loc, ab_dt, a, b, c_dt, c, m, n, k, 1, trans_b, alpha, beta, nullptr, lda))
    fail(loc,
         "cuBLASLt has no algorithm for %s (a, b dtype %d; c dtype %d) m %lld n %lld k %lld "
         "lda %lld trans_b %d",
         what, (int)ab_dt, (int)c_dt, (long long)m, (long long)n, (long long)k, (long long)lda,
         (int)trans_b);
}
} // namespace

void matmulWgradLda(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
                    int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                    int32_t trans_b, float alpha) {
  matmulLda(ctx, loc, "matmul_wgrad_lda", ab_dt, a, b, c_dt, c, m, n, k, lda, trans_b, alpha, 0.0f);
}

void matmulAccLda(Context* ctx, const char* loc, int32_t ab_dt, const void* a, const void* b,
                  int32_t c_dt, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                  int32_t trans_b, float alpha) {
  matmulLda(ctx, loc, "matmul_acc_lda", ab_dt, a, b, c_dt, c, m, n, k, lda, trans_b, alpha, 1.0f);
}

void matmulBias(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                const void* bias, void* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                int32_t trans_b, float alpha, int64_t lda) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_bias(m, n, k)", m, n, k);
  elemBytes(loc, "matmul_bias", dt);
  checkLda(loc, "matmul_bias", lda, k, trans_a);
  if (m == 0 || n == 0) return;
  if (k > 0 && ltMatmulEpilogue(ctx, loc, dt, a, b, bias, nullptr, c, m, n, k, trans_a, trans_b,
                                alpha, false, lda))
    return;
  if (lda && lda != k)
    fail(loc, "matmul_bias: cuBLASLt has no bias-epilogue algorithm for a with rows %lld apart "
              "(m %lld, n %lld, k %lld)", (long long)lda, (long long)m, (long long)n, (long long)k);
  // No epilogue algorithm for this shape (or k == 0): the GEMM, then the bias kernel (for a
  // low-precision dt the GEMM's result is rounded before the bias is added).
  matmul(ctx, loc, dt, a, b, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
  biasAdd(ctx, loc, dt, c, bias, c, m, n);
}

void setOwnGemm(Context* ctx, int mode) {
  ctx->own_gemm = mode < 0 ? 0 : mode > 2 ? 2 : mode;
  for (auto& entry : ctx->plans) entry.second.own = -1; // decided again at their next call
}

void setGeluEpilogue(Context* ctx, bool on) {
  ctx->gelu_epilogue = on;
  ctx->gelu_epilogue_low = on;
}

void setDgeluEpilogue(Context* ctx, int mode) { ctx->dgelu_epilogue = mode; }

void matmulBiasGelu(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                    const void* bias, void* pre, void* out, int64_t m, int64_t n, int64_t k,
                    int32_t trans_a, int32_t trans_b, float alpha, int64_t lda) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_bias_gelu(m, n, k)", m, n, k);
  elemBytes(loc, "matmul_bias_gelu", dt);
  checkLda(loc, "matmul_bias_gelu", lda, k, trans_a);
  if (m == 0 || n == 0) return;
  // cuBLASLt does not document the precision of its GELU: for f32 the fused epilogue by
  // default only in the fast (TF32) mode, the exact mode keeps the own fp32 kernel; for bf16 /
  // f16 by default always (its error is far below the output's rounding). TGRT_GELU_EPILOGUE
  // overrides both (Context.cu).
  const bool epilogue = dt == TGRT_F32 ? ctx->gelu_epilogue : ctx->gelu_epilogue_low;
  if (epilogue && k > 0 &&
      ltMatmulEpilogue(ctx, loc, dt, a, b, bias, pre, out, m, n, k, trans_a, trans_b, alpha,
                       false, lda))
    return;
  matmulBias(ctx, loc, dt, a, b, bias, pre, m, n, k, trans_a, trans_b, alpha, lda);
  geluFwd(ctx, loc, dt, pre, out, m * n);
}

void matmulBiasLda(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                   const void* bias, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                   int32_t trans_b, float alpha) {
  matmulBias(ctx, loc, dt, a, b, bias, c, m, n, k, 0, trans_b, alpha, lda);
}

void matmulBiasGeluLda(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                       const void* bias, void* pre, void* out, int64_t m, int64_t n, int64_t k,
                       int64_t lda, int32_t trans_b, float alpha) {
  matmulBiasGelu(ctx, loc, dt, a, b, bias, pre, out, m, n, k, 0, trans_b, alpha, lda);
}

void matmulDgeluBgrad(Context* ctx, const char* loc, int32_t dt, const void* a, const void* b,
                      const void* pre, void* dx, void* dbias, int64_t m, int64_t n, int64_t k,
                      int32_t trans_a, int32_t trans_b, float alpha) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_dgelu_bgrad(m, n, k)", m, n, k);
  elemBytes(loc, "matmul_dgelu_bgrad", dt);
  if (n == 0) return;
  // cuBLASLt's DGELU epilogue + the own bias gradient by default (ctx->dgelu_epilogue: its
  // DGELU_BGRAD was measured slower than the three kernels on an H100, DGELU alone faster);
  // never in exact fp32 mode.
  const int mode = dt == TGRT_F32 && !ctx->gelu_epilogue ? 0 : ctx->dgelu_epilogue;
  // dbias NULL: no bias gradient (the caller sums dx itself, tgrt_bias_grad_acc).
  if (mode > 0 && k > 0 && m > 0 &&
      ltMatmulEpilogue(ctx, loc, dt, a, b, mode == 2 ? dbias : nullptr, const_cast<void*>(pre),
                       dx, m, n, k, trans_a, trans_b, alpha, /*dgelu=*/true)) {
    if (mode == 1 && dbias) biasGrad(ctx, loc, dt, dx, dbias, m, n);
    return;
  }
  matmul(ctx, loc, dt, a, b, dx, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
  geluBwd(ctx, loc, dt, pre, dx, dx, m * n);
  if (dbias) biasGrad(ctx, loc, dt, dx, dbias, m, n);
}

void matmulBiasResidual(Context* ctx, const char* loc, int32_t ab_dt, const void* a,
                        const void* b, int32_t c_dt, const void* bias, const void* res, void* out,
                        int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
                        float alpha) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_bias_residual(m, n, k)", m, n, k);
  elemBytes(loc, "matmul_bias_residual (a, b)", ab_dt);
  const int64_t ces = elemBytes(loc, "matmul_bias_residual (bias, res, out)", c_dt);
  if (m == 0 || n == 0) return;
  if (!res || !out) fail(loc, "matmul_bias_residual: NULL res or out");
  if (k > 0 && ltMatmulBiasResidual(ctx, loc, ab_dt, a, b, c_dt, bias, res, out, m, n, k,
                                    trans_a, trans_b, alpha))
    return;
  // No algorithm for the shape and types (or k == 0): out = res, out += the product (beta 1),
  // then the bias (two roundings to c_dt instead of one).
  if (out != res)
    check(cudaMemcpyAsync(out, res, (size_t)(m * n * ces), cudaMemcpyDeviceToDevice, ctx->stream),
          loc, "cudaMemcpyAsync");
  matmulAcc(ctx, loc, ab_dt, a, b, c_dt, out, m, n, k, trans_a, trans_b, alpha);
  if (bias) biasAdd(ctx, loc, c_dt, out, bias, out, m, n);
}

void biasAdd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* bias,
             void* out, int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "bias_add(rows, n)", rows, n);
  withDtype(loc, "bias_add", dt, [&](auto tag) {
    using T = decltype(tag);
    if (rows * n == 0) return;
    rowBias<T>(ctx, loc, cp<T>(x), cp<T>(bias), mp<T>(out), rows, n, 1);
  });
}

void biasGrad(Context* ctx, const char* loc, int32_t dt, const void* dy, void* dbias,
              int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "bias_grad(rows, n)", rows, n);
  const int64_t es = elemBytes(loc, "bias_grad", dt);
  withDtype(loc, "bias_grad", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    columnSums(ctx, loc, Ld<T>{cp<T>(dy)}, Ld<T>{nullptr}, nullptr, nullptr, St<T>{mp<T>(dbias)},
               St<T>{nullptr}, es, rows, n, biasGradChunks(ctx, n));
  });
}

void biasGradAcc(Context* ctx, const char* loc, int32_t dy_dt, const void* dy, int32_t acc_dt,
                 void* dbias, int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "bias_grad_acc(rows, n)", rows, n);
  elemBytes(loc, "bias_grad_acc (dy)", dy_dt);
  elemBytes(loc, "bias_grad_acc (dbias)", acc_dt);
  if (n == 0 || rows == 0) return; // dbias += 0
  biasGradSums(ctx, loc, dy_dt, dy, acc_dt, dbias, rows, n, /*add=*/true);
}

void geluFwd(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "gelu_fwd(n)", n);
  withDtype(loc, "gelu_fwd", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    launchElementwise(ctx, loc, "gelu_fwd_kernel", GeluFwdOp<T>{cp<T>(x), mp<T>(y)}, n,
                      aligned16(x, y));
  });
}

void geluBwd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* dy, void* dx,
             int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "gelu_bwd(n)", n);
  withDtype(loc, "gelu_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    launchElementwise(ctx, loc, "gelu_bwd_kernel", GeluBwdOp<T>{cp<T>(x), cp<T>(dy), mp<T>(dx)},
                      n, aligned16(x, dy, dx));
  });
}

void dropout(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t n,
             float rate, uint64_t seed) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "dropout(n)", n);
  const int64_t es = elemBytes(loc, "dropout", dt);
  if (!(rate >= 0.0f && rate <= 1.0f)) fail(loc, "dropout rate %g outside [0, 1]", (double)rate);
  if (n == 0) return;
  if (rate == 0.0f) {
    if (y != x)
      check(cudaMemcpyAsync(y, x, (size_t)(n * es), cudaMemcpyDeviceToDevice, ctx->stream), loc,
            "cudaMemcpyAsync");
    return;
  }
  captureUnsafe(ctx, "dropout's mask key changes every step and micro-batch");
  const uint64_t key = dropoutKey(seed, ctx->step, ctx->micro_batch);
  const float scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  withDtype(loc, "dropout", dt, [&](auto tag) {
    using T = decltype(tag);
    launchElementwise(ctx, loc, "dropout_kernel", DropoutOp<T>{cp<T>(x), mp<T>(y), rate, scale, key},
                      n, aligned16(x, y));
  });
}

void causalMask(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t batch,
                int64_t tq, int64_t tk, int64_t window, float masked_value) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "causal_mask(batch, tq, tk)", batch, tq, tk);
  const int64_t n = batch * tq * tk;
  withDtype(loc, "causal_mask", dt, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    launchDependent(ctx, loc, "causal_mask_kernel", causal_mask_kernel<T>, dim3(gridFor(n, kBlock)),
                    dim3(kBlock), 0, cp<T>(x), mp<T>(y), n, tq, tk, window,
                    hostFromF<T>(masked_value));
  });
}

void softmaxFwd(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t rows,
                int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "softmax_fwd(rows, n)", rows, n);
  withDtype(loc, "softmax_fwd", dt, [&](auto tag) {
    using T = decltype(tag);
    if (rows * n == 0) return;
    launchDependent(ctx, loc, "softmax_fwd_kernel", softmax_fwd_kernel<T>, dim3(gridFor(rows, 8)),
                    dim3(kBlock), 0, cp<T>(x), mp<T>(y), rows, n);
  });
}

void softmaxBwd(Context* ctx, const char* loc, int32_t dt, const void* y, const void* dy,
                void* dx, int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "softmax_bwd(rows, n)", rows, n);
  withDtype(loc, "softmax_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    if (rows * n == 0) return;
    launchDependent(ctx, loc, "softmax_bwd_kernel", softmax_bwd_kernel<T>, dim3(gridFor(rows, 8)),
                    dim3(kBlock), 0, cp<T>(y), cp<T>(dy), mp<T>(dx), rows, n);
  });
}

/// CudaRuntime.h. Measured on the H200 (132 SMs, 50 MiB of L2), 3 alternating repetitions of
/// 20 steps: at V 32000 bf16 (34 MB in flight with 7) the head-dim-128 step took 29.31
/// (29.28-29.35) ms with 7 against 29.70 (29.63-29.77) with 6 (bench/results/2026-11-30-h200/
/// side, call3); at V 50304 (53 MB) GPT-2 small's 30.69 against 30.71, no difference (lnpf
/// call1), and Nsight Compute had 7's L2 hit rate at 37% against 62% (ce-ex2 call2): its
/// second reads miss there. The fwd_bwd kernel alone across vocabularies (16384 rows, bf16,
/// ms 6 / 7; s7 call1): 16384 0.459 / 0.350, 32000 0.743 / 0.619, 36864 0.869 / 0.744, 40960
/// (0.83 of L2 in flight with 7) 0.931 / 0.839, 45056 (0.91) 0.991 / 0.976, 49152 (0.99)
/// 1.061 / 1.061, 65536 (1.32) 1.341 / 1.473: 7/8 of L2 keeps every vocabulary where 7 was
/// clearly faster and, with the 50 MiB an H100 reports, no example's default changes (GPT-2,
/// SmolLM2, Llama 3 stay on 6). An H200 host reporting 60 MiB (s8 call4) puts GPT-2 and
/// SmolLM2 on 7, where the two timed within 2% on both hosts.
/// Since 2026-12-01 half of L2: the bf16 stores rounded by cvt (Dtype.cuh pack16) took 6 to
/// 0.85x its time and 7 to 0.97x, and the sweep on an H200 reporting 60 MiB (s10 calls 1 and
/// 5, ms 6 / 7) became 16384 0.382 / 0.313, 24576 0.541 / 0.446, 32000 (0.54 of L2 in flight
/// with 7) 0.629 / 0.637, 36864 0.741 / 0.754, 40960 0.800 / 0.811, 45056 0.855 / 0.918,
/// 49152 0.909 / 1.008, 65536 1.224 / 1.450; in the steps (s10 call5, 3 repetitions) GPT-2
/// small took 29.22 (29.14-29.25) ms with 6 against 29.29 (29.26-29.39) with 7, head dim 128
/// 29.59 (29.59-29.77) against 29.77 (29.68-29.96). 7 keeps the vocabularies up to 24824 (50
/// MiB) / 29789 (60 MiB), where it is 18% faster.
int ceVariantFor(int64_t vocab, int64_t elemBytes, int64_t smCount, int64_t l2Bytes) {
  // One row per block: variant 7's blocks per SM are its rows per SM.
  const int64_t inFlight = ceMinBlocks(7) * vocab * elemBytes * smCount;
  return l2Bytes > 0 && vocab > 0 && elemBytes > 0 && smCount > 0 && 2 * inFlight <= l2Bytes
             ? 7
             : 6;
}

int ceAutoVariant(const Context* ctx, int64_t vocab, int64_t elemBytes) {
  return ceVariantFor(vocab, elemBytes, ctx->sm_count, ctx->l2_bytes);
}

namespace {

/// fn(std::integral_constant<int, FAST>) with the context's variant (Context::ce_fast,
/// TGRT_CE_FAST: 0 = expf, the path before 2026-11-30; 6 or 7 = fastExp2 in that variant,
/// ceThreads; -1, the default, ceAutoVariant's for this vocabulary); f32 logits and rows of
/// 2^31 elements or more (the fast loops count in 32 bits) always take expf.
template <typename T, typename Fn>
void withCeFast(const Context* ctx, int64_t vocab, Fn&& fn) {
  if constexpr (std::is_same<T, float>::value) {
    fn(std::integral_constant<int, 0>{});
  } else {
    const int chosen = ctx->ce_fast >= 0 ? ctx->ce_fast : ceAutoVariant(ctx, vocab, sizeof(T));
    const int f = vocab < ((int64_t)1 << 31) ? chosen : 0;
    if (f == 6) fn(std::integral_constant<int, 6>{});
    else if (f == 7) fn(std::integral_constant<int, 7>{});
    else fn(std::integral_constant<int, 0>{});
  }
}
/// cross_entropy_bwd_kernel over `rows` rows (one block each) in the context's variant; rowLoss
/// null for the backward alone.
template <typename T>
void launchCrossEntropyBwd(Context* ctx, const char* loc, const void* logits,
                           const int32_t* targets, const float* dloss, const double* valid,
                           void* dlogits, int64_t rows, int64_t vocab, int64_t ignore, bool vec,
                           double* rowLoss) {
  withCeFast<T>(ctx, vocab, [&](auto fast) {
    constexpr int F = decltype(fast)::value;
    launchDependent(ctx, loc, "cross_entropy_bwd_kernel", cross_entropy_bwd_kernel<T, F>,
                    dim3(gridFor(rows, 1, 65535)), dim3(ceThreads(F)), 0, cp<T>(logits), targets,
                    dloss, valid, mp<T>(dlogits), rows, vocab, ignore, ctx->state,
                    locIndex(ctx, loc), vec, rowLoss);
  });
}
} // namespace

void crossEntropyFwd(Context* ctx, const char* loc, int32_t dt, const void* logits,
                     const int32_t* targets, float* loss, int64_t rows, int64_t vocab,
                     int64_t ignore_index) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "cross_entropy_fwd(rows, vocab)", rows, vocab);
  elemBytes(loc, "cross_entropy_fwd", dt);
  if (rows == 0) {
    check(cudaMemsetAsync(loss, 0, sizeof(float), ctx->stream), loc, "cudaMemsetAsync");
    return;
  }
  checkWorkspace(ctx, loc, "cross_entropy (row losses)", rows * (int64_t)sizeof(double));
  double* rowLoss = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  withDtype(loc, "cross_entropy_fwd", dt, [&](auto tag) {
    using T = decltype(tag);
    withCeFast<T>(ctx, vocab, [&](auto fast) {
      constexpr int F = decltype(fast)::value;
      launchDependent(ctx, loc, "cross_entropy_rows_kernel", cross_entropy_rows_kernel<T, F>,
                      dim3(gridFor(rows, 1, 65535)), dim3(ceThreads(F)), 0, cp<T>(logits), targets,
                      rowLoss, rows, vocab, ignore_index, ctx->state, locIndex(ctx, loc), true);
    });
  });
  launchDependent(ctx, loc, "cross_entropy_finish_kernel", cross_entropy_finish_kernel, dim3(1),
                  dim3(1024), 0, rowLoss, targets, rows, ignore_index, loss);
}

void crossEntropyBwd(Context* ctx, const char* loc, int32_t dt, const void* logits,
                     const int32_t* targets, const float* dloss, void* dlogits, int64_t rows,
                     int64_t vocab, int64_t ignore_index) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "cross_entropy_bwd(rows, vocab)", rows, vocab);
  elemBytes(loc, "cross_entropy_bwd", dt);
  if (rows == 0 || vocab == 0) return;
  checkWorkspace(ctx, loc, "cross_entropy (valid count)", (int64_t)sizeof(double));
  double* valid = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  launchDependent(ctx, loc, "count_valid_kernel", count_valid_kernel, dim3(1), dim3(1024), 0,
                  targets, rows, ignore_index, valid);
  withDtype(loc, "cross_entropy_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    // 16-byte loads need logits and dlogits at the same offset within 16 bytes (rowSplit).
    const bool vec = ((uintptr_t)logits & 15u) == ((uintptr_t)dlogits & 15u);
    launchCrossEntropyBwd<T>(ctx, loc, logits, targets, dloss, valid, dlogits, rows, vocab,
                             ignore_index, vec, nullptr);
  });
}

void crossEntropyFwdBwd(Context* ctx, const char* loc, int32_t dt, const void* logits,
                        const int32_t* targets, float* loss, const float* dloss, void* dlogits,
                        int64_t rows, int64_t vocab, int64_t ignore_index) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "cross_entropy_fwd_bwd(rows, vocab)", rows, vocab);
  elemBytes(loc, "cross_entropy_fwd_bwd", dt);
  // One pass needs the 16-byte split shared by logits and dlogits (always so in place, the
  // case tgc emits); otherwise the two calls (the same bits either way).
  const bool vec = ((uintptr_t)logits & 15u) == ((uintptr_t)dlogits & 15u);
  if (rows == 0 || vocab == 0 || !vec) {
    crossEntropyFwd(ctx, loc, dt, logits, targets, loss, rows, vocab, ignore_index);
    crossEntropyBwd(ctx, loc, dt, logits, targets, dloss, dlogits, rows, vocab, ignore_index);
    return;
  }
  checkWorkspace(ctx, loc, "cross_entropy_fwd_bwd (valid count, row losses)",
                 256 + rows * (int64_t)sizeof(double));
  double* valid = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  double* rowLoss = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE] + 256);
  launchDependent(ctx, loc, "count_valid_kernel", count_valid_kernel, dim3(1), dim3(1024), 0,
                  targets, rows, ignore_index, valid);
  withDtype(loc, "cross_entropy_fwd_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    launchCrossEntropyBwd<T>(ctx, loc, logits, targets, dloss, valid, dlogits, rows, vocab,
                             ignore_index, true, rowLoss);
  });
  launchDependent(ctx, loc, "cross_entropy_finish_kernel", cross_entropy_finish_kernel, dim3(1),
                  dim3(1024), 0, (const double*)rowLoss, targets, rows, ignore_index, loss);
}

namespace {
/// linearCrossEntropy and linearCrossEntropyStore: `store` runs the first chunk's dw GEMM
/// with beta 0 (dw written; with no rows, dw zeroed).
void linearCrossEntropyImpl(Context* ctx, const char* loc, int32_t dt, const void* x,
                            const void* w, const int32_t* targets, const float* dloss,
                            float* loss, void* dx, int32_t dw_dt, void* dw, void* scratch,
                            int64_t rows, int64_t d, int64_t vocab, int64_t chunk_rows,
                            int64_t ignore_index, bool store) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "linear_cross_entropy(rows, d, vocab)", rows, d, vocab);
  const int64_t es = elemBytes(loc, "linear_cross_entropy", dt);
  elemBytes(loc, "linear_cross_entropy (dw)", dw_dt);
  if (rows == 0) {
    check(cudaMemsetAsync(loss, 0, sizeof(float), ctx->stream), loc, "cudaMemsetAsync");
    if (store && dw && vocab * d > 0)
      check(cudaMemsetAsync(dw, 0, (size_t)(vocab * d * tgrt_dtype_size(dw_dt)), ctx->stream),
            loc, "cudaMemsetAsync");
    return;
  }
  if (chunk_rows < 1 || chunk_rows > rows)
    fail(loc, "linear_cross_entropy: chunk_rows %lld outside [1, %lld]", (long long)chunk_rows,
         (long long)rows);
  // dx and dw both NULL: the loss only (an evaluation step's), no backward GEMMs.
  const bool lossOnly = !dx && !dw && !store;
  if (!x || !w || !targets || !dloss || !loss || !scratch || (!lossOnly && (!dx || !dw)))
    fail(loc, "linear_cross_entropy: NULL pointer");
  // Scratch: the valid count (double) at 0, the row losses (double) at 256, the chunk's
  // logits at the next 256-byte boundary. The workspace stays the GEMMs'.
  double* valid = static_cast<double*>(scratch);
  double* rowLoss = reinterpret_cast<double*>(static_cast<char*>(scratch) + 256);
  void* logits = static_cast<char*>(scratch) + (256 + 8 * rows + 255) / 256 * 256;
  launchDependent(ctx, loc, "count_valid_kernel", count_valid_kernel, dim3(1), dim3(1024), 0,
                  targets, rows, ignore_index, valid);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = chunk_rows < rows - r0 ? chunk_rows : rows - r0;
    const char* xc = static_cast<const char*>(x) + r0 * d * es;
    matmul(ctx, loc, dt, xc, w, logits, 1, n, vocab, d, 0, 1, 0, 0, 0, 1.0f, 0.0f);
    withDtype(loc, "linear_cross_entropy", dt, [&](auto tag) {
      using T = decltype(tag);
      launchCrossEntropyBwd<T>(ctx, loc, logits, targets + r0, dloss, valid, logits, n, vocab,
                               ignore_index, true, rowLoss + r0);
    });
    if (lossOnly)
      continue;
    matmul(ctx, loc, dt, logits, w, static_cast<char*>(dx) + r0 * d * es, 1, n, d, vocab, 0, 0, 0,
           0, 0, 1.0f, 0.0f);
    // The first chunk with beta 0 when storing: dw needs no zero before the call, and a
    // GEMM that does not read its output is timed by the tuning (ltRun), so the later
    // chunks' beta-1 calls (the same plan) run the tuned algorithm too.
    matmulAcc(ctx, loc, dt, logits, xc, dw_dt, dw, vocab, d, n, 1, 0, 1.0f,
              store && r0 == 0 ? 0.0f : 1.0f);
  }
  launchDependent(ctx, loc, "cross_entropy_finish_kernel", cross_entropy_finish_kernel, dim3(1),
                  dim3(1024), 0, (const double*)rowLoss, targets, rows, ignore_index, loss);
}
} // namespace

void linearCrossEntropy(Context* ctx, const char* loc, int32_t dt, const void* x, const void* w,
                        const int32_t* targets, const float* dloss, float* loss, void* dx,
                        int32_t dw_dt, void* dw, void* scratch, int64_t rows, int64_t d,
                        int64_t vocab, int64_t chunk_rows, int64_t ignore_index) {
  linearCrossEntropyImpl(ctx, loc, dt, x, w, targets, dloss, loss, dx, dw_dt, dw, scratch, rows,
                         d, vocab, chunk_rows, ignore_index, false);
}

void linearCrossEntropyStore(Context* ctx, const char* loc, int32_t dt, const void* x,
                             const void* w, const int32_t* targets, const float* dloss,
                             float* loss, void* dx, int32_t dw_dt, void* dw, void* scratch,
                             int64_t rows, int64_t d, int64_t vocab, int64_t chunk_rows,
                             int64_t ignore_index) {
  linearCrossEntropyImpl(ctx, loc, dt, x, w, targets, dloss, loss, dx, dw_dt, dw, scratch, rows,
                         d, vocab, chunk_rows, ignore_index, true);
}

void gradNormSq(Context* ctx, const char* loc, int32_t dt, const void* g, int64_t n, float* acc) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "grad_norm_sq(n)", n);
  elemBytes(loc, "grad_norm_sq", dt);
  if (n == 0) return;
  const int64_t blocks = normBlocks(n);
  checkWorkspace(ctx, loc, "grad_norm_sq (partials)", blocks * (int64_t)sizeof(double));
  double* part = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  withDtype(loc, "grad_norm_sq", dt, [&](auto tag) {
    using T = decltype(tag);
    launchDependent(ctx, loc, "sumsq_partial_kernel", sumsq_partial_kernel<T>,
                    dim3((unsigned)blocks), dim3(kBlock), 0, cp<T>(g), n, part, aligned16(g));
  });
  launchDependent(ctx, loc, "sumsq_finish_kernel", sumsq_finish_kernel, dim3(1), dim3(1024), 0,
                  part, blocks, acc);
}

void clipScale(Context* ctx, const char* loc, float* acc, float max_norm) {
  checkCtx(ctx, loc);
  launchDependent(ctx, loc, "clip_scale_kernel", clip_scale_kernel, dim3(1), dim3(1), 0, acc,
                  max_norm, ctx->loss_scale, ctx->state);
}

void adamwImpl(Context* ctx, const char* loc, int32_t p_dt, void* p, int32_t g_dt, const void* g,
               int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps,
               float weight_decay, const float* clip, int32_t w_dt, void* w,
               const AdamwIslands& isl);

void adamwSplit(Context* ctx, const char* loc, void* hi, void* lo, int32_t g_dt, const void* g,
                int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                float eps, float weight_decay, const float* clip) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "adamw_split(n)", n);
  elemBytes(loc, "adamw_split (m, v)", state_dt);
  if (g_dt != TGRT_BF16 && g_dt != TGRT_F32)
    fail(loc, "adamw_split: the gradients' dtype %d is neither bf16 (1) nor f32 (0)", (int)g_dt);
  if (ctx->step < 1)
    fail(loc, "adamw: optimizer step %lld must be >= 1 (set with tgrt_set_step)",
         (long long)ctx->step);
  if (n == 0) return;
  if (!hi || !lo || !g || !m || !v)
    fail(loc, "adamw_split: a NULL pointer (hi %p, lo %p, g %p, m %p, v %p)", hi, lo, g, m, v);
  char* host = ctx->regions[TGRT_HOST];
  if (host && static_cast<char*>(m) >= host &&
      static_cast<char*>(m) < host + ctx->region_bytes[TGRT_HOST])
    fail(loc, "adamw_split: offloaded moments are not supported (tg-plan-memory splits only "
              "values whose moments are on the device)");
  captureUnsafe(ctx, "AdamW's learning rate and bias correction change every step");
  const double bc1 = 1.0 - std::pow((double)beta1, (double)ctx->step);
  const double bc2 = 1.0 - std::pow((double)beta2, (double)ctx->step);
  const AdamwParamsF apf{beta1, beta2, eps, weight_decay, ctx->lr, (float)bc1, (float)bc2};
  auto launch = [&](auto gtag) {
    using TG = decltype(gtag);
    withDtype(loc, "adamw_split", state_dt, [&](auto stag) {
      using TS = decltype(stag);
      // Packs of 8: 16 bytes of hi, lo and a 2-byte g; 32 of an f32 g or f32 moments.
      const bool vec = aligned16(g, m, v) && aligned16(hi) && aligned16(lo);
      launchDependent(ctx, loc, "adamw_split_kernel", adamw_split_kernel<TS, TG>,
                      dim3(gridFor(vec ? (n + 7) / 8 : n, kBlock, ctx->adamw_blocks)),
                      dim3(kBlock), 0, static_cast<uint16_t*>(hi), static_cast<uint16_t*>(lo),
                      cp<TG>(g), mp<TS>(m), mp<TS>(v), apf, clip, n, vec);
    });
  };
  if (g_dt == TGRT_BF16) launch(bf16_t{});
  else launch(float{});
}

void adamw(Context* ctx, const char* loc, int32_t p_dt, void* p, const void* g, int32_t state_dt,
           void* m, void* v, int64_t n, float beta1, float beta2, float eps, float weight_decay,
           const float* clip, int32_t w_dt, void* w) {
  adamwImpl(ctx, loc, p_dt, p, p_dt, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip,
            w_dt, w, AdamwIslands{});
}

void adamwG(Context* ctx, const char* loc, int32_t p_dt, void* p, int32_t g_dt, const void* g,
            int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps,
            float weight_decay, const float* clip, int32_t w_dt, void* w) {
  adamwImpl(ctx, loc, p_dt, p, g_dt, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip,
            w_dt, w, AdamwIslands{});
}

void adamwIslands(Context* ctx, const char* loc, int32_t p_dt, void* p, const void* g,
                  int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2,
                  float eps, float weight_decay, const float* clip, int32_t w_dt, void* w,
                  int64_t base, int64_t period, int64_t reps, int64_t s0, int64_t l0, int64_t s1,
                  int64_t l1) {
  const AdamwIslands isl{base, period, reps, s0, l0, s1, l1};
  if (!isl.fits(n)) {
    char why[256];
    isl.describe(why, sizeof why, n);
    fail(loc, "%s", why);
  }
  adamwImpl(ctx, loc, p_dt, p, p_dt, g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip,
            w_dt, w, isl);
}

void adamwImpl(Context* ctx, const char* loc, int32_t p_dt, void* p, int32_t g_dt, const void* g,
               int32_t state_dt, void* m, void* v, int64_t n, float beta1, float beta2, float eps,
               float weight_decay, const float* clip, int32_t w_dt, void* w,
               const AdamwIslands& isl) {
  checkCtx(ctx, loc);
  if (w && w_dt != TGRT_BF16 && w_dt != TGRT_F16)
    fail(loc, "adamw_wc: the working copy's dtype %d is not bf16 (1) or f16 (2)", (int)w_dt);
  checkNonNegative(loc, "adamw(n)", n);
  elemBytes(loc, "adamw (p, g)", p_dt);
  elemBytes(loc, "adamw (m, v)", state_dt);
  // The gradients in their own type (tgrt_adamw_wc_g): the working copy's with one.
  const bool lowG = g_dt != p_dt;
  if (lowG && (w ? g_dt != w_dt : g_dt != TGRT_BF16 && g_dt != TGRT_F16))
    fail(loc, "adamw_wc_g: the gradients' dtype %d is neither the values' (%d) nor the "
              "working copy's 2-byte type",
         (int)g_dt, (int)p_dt);
  if (ctx->step < 1)
    fail(loc, "adamw: optimizer step %lld must be >= 1 (set with tgrt_set_step)",
         (long long)ctx->step);
  if (n == 0) return;
  // CPU offload (tgrt_model.host_bytes): m and v live in the pinned host region. They are
  // streamed through the workspace (free between the calls that use it as scratch) in blocks:
  // copied in, updated by the same kernel as on the device, copied back; all on the context's
  // stream, so the update is the device update bit for bit.
  char* host = ctx->regions[TGRT_HOST];
  if (host && static_cast<char*>(m) >= host &&
      static_cast<char*>(m) < host + ctx->region_bytes[TGRT_HOST]) {
    const int64_t ss = elemBytes(loc, "adamw (m, v)", state_dt);
    const int64_t ps = elemBytes(loc, "adamw (p, g)", p_dt);
    const int64_t gs = elemBytes(loc, "adamw (g)", g_dt);
    const int64_t ws = w ? elemBytes(loc, "adamw (working copy)", w_dt) : 0;
    if (isl.period != 0)
      fail(loc, "adamw_islands: offloaded moments are not supported (the lowering splits "
                "the run instead)");
    const int64_t block = ctx->region_bytes[TGRT_WORKSPACE] / (2 * ss) / 64 * 64;
    if (block <= 0)
      fail(loc, "adamw: offloaded moments are streamed through the workspace, but it holds "
                "%lld bytes (fewer than 2 x 64 moments)",
           (long long)ctx->region_bytes[TGRT_WORKSPACE]);
    char* dm = ctx->regions[TGRT_WORKSPACE];
    char* dv = dm + block * ss;
    auto copy = [&](void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind) {
      check(cudaMemcpyAsync(dst, src, (size_t)bytes, kind, ctx->stream), loc,
            "adamw (offload): cudaMemcpyAsync");
    };
    for (int64_t i = 0; i < n; i += block) {
      const int64_t k = std::min(block, n - i);
      char* hm = static_cast<char*>(m) + i * ss;
      char* hv = static_cast<char*>(v) + i * ss;
      copy(dm, hm, k * ss, cudaMemcpyHostToDevice);
      copy(dv, hv, k * ss, cudaMemcpyHostToDevice);
      adamwG(ctx, loc, p_dt, static_cast<char*>(p) + i * ps, g_dt,
             static_cast<const char*>(g) + i * gs, state_dt, dm, dv, k, beta1, beta2, eps,
             weight_decay, clip, w_dt, w ? static_cast<char*>(w) + i * ws : nullptr);
      copy(hm, dm, k * ss, cudaMemcpyDeviceToHost);
      copy(hv, dv, k * ss, cudaMemcpyDeviceToHost);
    }
    return;
  }
  const double b1 = beta1, b2 = beta2;
  captureUnsafe(ctx, "AdamW's learning rate and bias correction change every step");
  const double bc1 = 1.0 - std::pow(b1, (double)ctx->step);
  const double bc2 = 1.0 - std::pow(b2, (double)ctx->step);
  const AdamwParams ap{b1, b2, (double)eps, (double)weight_decay, (double)ctx->lr, bc1, bc2};
  const AdamwParamsF apf{beta1, beta2, eps, weight_decay, ctx->lr, (float)bc1, (float)bc2};
  if (lowG) {
    // Mixed precision's weight gradients in the compute type (tgrt_adamw_wc_g): f32 values,
    // g (and the working copy, when there is one) 2-byte; float arithmetic, or double like the
    // CPU reference with f32 moments and TGRT_ADAMW_MATH=f64, as below.
    if (p_dt != TGRT_F32)
      fail(loc, "adamw_wc_g: 2-byte gradients need f32 values, got dtype %d", (int)p_dt);
    auto launch = [&](auto gtag) {
      using TG = decltype(gtag);
      withDtype(loc, "adamw", state_dt, [&](auto stag) {
        using TS = decltype(stag);
        constexpr int W = packWidth<float, TS, TG>();
        const bool vec = aligned16(p, g, m, v) && (!w || aligned16(w));
        const dim3 grid(gridFor(vec ? (n + W - 1) / W : n, kBlock, ctx->adamw_blocks));
        TG* wp = w ? mp<TG>(w) : nullptr;
        if (std::is_same<TS, float>::value && !ctx->adamw_f32)
          launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, float, TS, AdamwParams, TG, TG>,
                          grid, dim3(kBlock), 0, mp<float>(p), cp<TG>(g), mp<TS>(m), mp<TS>(v), ap,
                          clip, n, vec, wp, isl);
        else
          launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, float, TS, AdamwParamsF, TG, TG>,
                          grid, dim3(kBlock), 0, mp<float>(p), cp<TG>(g), mp<TS>(m), mp<TS>(v), apf,
                          clip, n, vec, wp, isl);
      });
    };
    if (g_dt == TGRT_BF16) launch(bf16_t{});
    else launch(f16_t{});
    return;
  }
  withDtype(loc, "adamw", p_dt, [&](auto ptag) {
    using TP = decltype(ptag);
    withDtype(loc, "adamw", state_dt, [&](auto stag) {
      using TS = decltype(stag);
      if (!w) {
        constexpr int W = packWidth<TP, TS>();
        const bool vec = aligned16(p, g, m, v);
        const dim3 grid(gridFor(vec ? (n + W - 1) / W : n, kBlock, ctx->adamw_blocks));
        if constexpr (std::is_same<TP, float>::value && std::is_same<TS, float>::value) {
          if (ctx->adamw_f32)
            launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, TP, TS, AdamwParamsF>, grid,
                            dim3(kBlock), 0, mp<TP>(p), cp<TP>(g), mp<TS>(m), mp<TS>(v), apf, clip,
                            n, vec, (TP*)nullptr, isl);
          else
            launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, TP, TS, AdamwParams>,
                            grid, dim3(kBlock), 0, mp<TP>(p), cp<TP>(g), mp<TS>(m), mp<TS>(v), ap,
                            clip, n, vec, (TP*)nullptr, isl);
        } else
          launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, TP, TS, AdamwParamsF>, grid,
                          dim3(kBlock), 0, mp<TP>(p), cp<TP>(g), mp<TS>(m), mp<TS>(v), apf, clip, n,
                          vec, (TP*)nullptr, isl);
        return;
      }
      // With the working copy (2-byte TW): packs wide enough for whole 16-byte words of all.
      withDtype(loc, "adamw (working copy)", w_dt, [&](auto wtag) {
        using TW = decltype(wtag);
        constexpr int W = packWidth<TP, TS, TW>();
        const bool vec = aligned16(p, g, m, v) && aligned16(w);
        const dim3 grid(gridFor(vec ? (n + W - 1) / W : n, kBlock, ctx->adamw_blocks));
        if constexpr (std::is_same<TP, float>::value && std::is_same<TS, float>::value) {
          if (ctx->adamw_f32)
            launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, TP, TS, AdamwParamsF, TW>,
                            grid, dim3(kBlock), 0, mp<TP>(p), cp<TP>(g), mp<TS>(m), mp<TS>(v), apf,
                            clip, n, vec, mp<TW>(w), isl);
          else
            launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, TP, TS, AdamwParams, TW>,
                            grid, dim3(kBlock), 0, mp<TP>(p), cp<TP>(g), mp<TS>(m), mp<TS>(v), ap,
                            clip, n, vec, mp<TW>(w), isl);
        } else
          launchDependent(ctx, loc, "adamw_kernel", adamw_kernel<W, TP, TS, AdamwParamsF, TW>, grid,
                          dim3(kBlock), 0, mp<TP>(p), cp<TP>(g), mp<TS>(m), mp<TS>(v), apf, clip, n,
                          vec, mp<TW>(w), isl);
      });
    });
  });
}

void reportLoss(Context* ctx, const char* loc, const float* loss) {
  checkCtx(ctx, loc);
  launchDependent(ctx, loc, "report_loss_kernel", report_loss_kernel, dim3(1), dim3(1), 0, loss,
                  ctx->state);
}

} // namespace tgrt_cuda
