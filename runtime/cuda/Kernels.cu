// Kernels.cu — the CUDA "kernels" half of runtime/tgrt.h, except attention (Attention.cu).
//
// fp32 throughout. One kernel per operation, the math in a comment above it, the launch in
// the host function below it. Reductions are deterministic: every sum has a fixed order that
// depends only on the sizes (block partials written to the workspace, then reduced in index
// order by one block), never on float atomics or on the device.
// GEMMs go to cuBLASLt (CUBLAS_COMPUTE_32F; TGRT_TF32=1 allows TF32 tensor cores).
#include "runtime/cuda/Internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#ifdef TGRT_CUDA_EMULATE
#include <numeric>
#include <vector>
#else
#include <cub/device/device_radix_sort.cuh>
#endif

namespace tgrt_cuda {
namespace {

constexpr int kBlock = 256; // threads per block of the simple kernels

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

// ------------------------------------------------------------ vector access helpers --
// Memory-bound kernels move float4 (16 bytes per thread and access) when every pointer is
// 16-byte aligned (and, for rows, every row length and leading dimension a multiple of 4);
// otherwise the same kernel runs its scalar loop. Results do not depend on the path.

inline bool aligned16(const void* p) { return ((uintptr_t)p & 15u) == 0; }
inline bool aligned16(const void* a, const void* b) { return aligned16(a) && aligned16(b); }
inline bool aligned16(const void* a, const void* b, const void* c) {
  return aligned16(a) && aligned16(b) && aligned16(c);
}
inline bool aligned16(const void* a, const void* b, const void* c, const void* d) {
  return aligned16(a, b) && aligned16(c, d);
}

__device__ __forceinline__ float4 ld4(const float* p, int64_t i4) {
  return reinterpret_cast<const float4*>(p)[i4];
}
__device__ __forceinline__ void st4(float* p, int64_t i4, float4 v) {
  reinterpret_cast<float4*>(p)[i4] = v;
}

/// Grid-stride elementwise loop over n items: op.vec(i4) for the float4 items [0, n/4) when
/// `vec`, then op(i) for the scalar rest (all of [0, n) when not `vec`). Each item is read and
/// written by one thread, so outputs may alias inputs.
template <typename Op>
__global__ void elementwise_kernel(Op op, int64_t n, bool vec) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t n4 = n >> 2;
    for (int64_t i = t; i < n4; i += stride) op.vec(i);
    done = n4 << 2;
  }
  for (int64_t i = done + t; i < n; i += stride) op(i);
}

/// Launches elementwise_kernel<Op> over n items (float4 when `vec`).
template <typename Op>
void launchElementwise(Context* ctx, const char* loc, const char* name, const Op& op, int64_t n,
                       bool vec) {
  launch(ctx, loc, name, elementwise_kernel<Op>, dim3(gridFor(vec ? (n + 3) / 4 : n, kBlock)),
         dim3(kBlock), 0, op, n, vec);
}

// ---------------------------------------------------------------------- embedding --

// out[i, :] = table[ids[i], :]. One block per token (grid-stride), threads over d.
// An id outside [0, vocab) is reported (first one wins) and its row is left unwritten.
__global__ void embedding_fwd_kernel(const float* __restrict__ table,
                                     const int32_t* __restrict__ ids, float* __restrict__ out,
                                     int64_t n, int64_t d, int64_t vocab, DeviceState* st,
                                     int32_t loc) {
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab) {
      if (threadIdx.x == 0) reportError(st, kEmbeddingIdOutOfRange, loc, id, i, vocab);
      continue;
    }
    const float* src = table + id * d;
    float* dst = out + i * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) dst[c] = src[c];
  }
}

// positions[i] = i: the payload that the radix sort carries along with the ids.
__global__ void iota_kernel(int32_t* __restrict__ p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (int32_t)i;
}

// Deterministic embedding backward over the tokens sorted (stably) by id:
//   dtable[v, :] = sum over the run of sorted positions p with key[p] = v of dout[pos[p], :],
// summed in increasing token order (the order the CPU reference adds them). One block per run
// head p (key[p] != key[p-1]); other blocks exit. Rows of dtable with no token stay zero
// (cleared before). Ids outside [0, vocab) are reported and skipped.
__global__ void embedding_bwd_runs_kernel(const int32_t* __restrict__ keys,
                                          const int32_t* __restrict__ pos,
                                          const float* __restrict__ dout,
                                          float* __restrict__ dtable, int64_t n, int64_t d,
                                          int64_t vocab, DeviceState* st, int32_t loc) {
  for (int64_t p = blockIdx.x; p < n; p += gridDim.x) {
    const int32_t id = keys[p];
    if (p > 0 && keys[p - 1] == id) continue; // not the head of a run
    if (id < 0 || id >= vocab) {
      if (threadIdx.x == 0) reportError(st, kEmbeddingIdOutOfRange, loc, id, pos[p], vocab);
      continue;
    }
    int64_t end = p + 1;
    while (end < n && keys[end] == id) ++end;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      float acc = 0.0f;
      for (int64_t r = p; r < end; ++r) acc += dout[(int64_t)pos[r] * d + c];
      dtable[(int64_t)id * d + c] = acc;
    }
  }
}

// ---------------------------------------------------------------------- positional --

// dwpe[s, c] = sum_b dout[b, s, c] (b in order, double accumulation) for s < t;
// dwpe[s, c] = 0 for t <= s < context. One thread per (s, c).
__global__ void positional_bwd_kernel(const float* __restrict__ dout, float* __restrict__ dwpe,
                                      int64_t batch, int64_t t, int64_t d, int64_t context) {
  const int64_t n = context * d;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t s = i / d;
    if (s >= t) {
      dwpe[i] = 0.0f;
      continue;
    }
    double acc = 0.0;
    for (int64_t b = 0; b < batch; ++b) acc += dout[b * t * d + i];
    dwpe[i] = (float)acc;
  }
}

// -------------------------------------------------------------------- elementwise --

// out[i] = a[i] + b[i]  (out may alias a or b: each element is read before it is written).
struct AddOp {
  const float* a;
  const float* b;
  float* out;
  __device__ void operator()(int64_t i) const { out[i] = a[i] + b[i]; }
  __device__ void vec(int64_t i) const {
    const float4 x = ld4(a, i), y = ld4(b, i);
    st4(out, i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
  }
};

// dst[i] += src[i].
struct AccumulateOp {
  float* dst;
  const float* src;
  __device__ void operator()(int64_t i) const { dst[i] += src[i]; }
  __device__ void vec(int64_t i) const {
    const float4 x = ld4(dst, i), y = ld4(src, i);
    st4(dst, i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
  }
};

// out[i] = value.
struct FillOp {
  float* out;
  float value;
  __device__ void operator()(int64_t i) const { out[i] = value; }
  __device__ void vec(int64_t i) const { st4(out, i, make_float4(value, value, value, value)); }
};

/// Shape and strides of a 4-d permutation (see tgrt_transpose4).
struct Permute4 {
  int64_t ydim[4];    ///< y's shape: ydim[j] = dims[perm[j]]
  int64_t xstride[4]; ///< stride in x of y's axis j: x_stride[perm[j]]
};

// y[j0, j1, j2, j3] = x[i0, i1, i2, i3] with i_perm[k] = j_k: one thread per y element, its
// x offset = sum_k j_k * xstride_of_axis(perm[k]). Writes are coalesced. Index type I is
// uint32_t when every index fits (32-bit division is several times cheaper than 64-bit).
template <typename I>
__global__ void transpose4_kernel(const float* __restrict__ x, float* __restrict__ y, Permute4 p,
                                  I n) {
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
// d3 contiguous floats, each copied whole from one x row. Items are float4 (or float when
// not `vec`) of q per row; the row's x offset (in items) is j0*s0 + j1*s1 + j2*s2. Reads and
// writes are both coalesced along the row.
template <typename I, bool V>
__global__ void transpose_rows_kernel(const float* __restrict__ x, float* __restrict__ y, I total,
                                      I q, I yd1, I yd2, I s0, I s1, I s2) {
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    const I row = i / q, col = i - row * q;
    const I j2 = row % yd2, r2 = row / yd2;
    const I j1 = r2 % yd1, j0 = r2 / yd1;
    const I src = j0 * s0 + j1 * s1 + j2 * s2 + col;
    if (V) st4(y, (int64_t)i, ld4(x, (int64_t)src));
    else y[i] = x[src];
  }
}

// dst[r, 0:cols] = src[r, 0:cols] with leading dimensions (in items: float4 when V).
template <typename I, bool V>
__global__ void copy2d_kernel(const float* __restrict__ src, I sld, float* __restrict__ dst,
                              I dld, I total, I q) {
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    const I r = i / q, c = i - r * q;
    if (V) st4(dst, (int64_t)(r * dld + c), ld4(src, (int64_t)(r * sld + c)));
    else dst[r * dld + c] = src[r * sld + c];
  }
}

// ---------------------------------------------------------------------- layer norm --

// Layer norm (Ba et al. 2016), one warp per row of x [rows, d]:
//   mean = sum_c x / d;  var = sum_c (x - mean)^2 / d  (two passes, biased);
//   rstd = 1 / sqrt(var + eps);  y = (x - mean) * rstd * gamma + beta.
__global__ void layer_norm_fwd_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ y,
                                      float* __restrict__ mean, float* __restrict__ rstd,
                                      int64_t rows, int64_t d, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float* xr = x + r * d;
    float s = 0.0f;
    for (int64_t c = lane; c < d; c += 32) s += xr[c];
    const float mu = warpSum(s) / (float)d;
    float v = 0.0f;
    for (int64_t c = lane; c < d; c += 32) {
      const float dx = xr[c] - mu;
      v += dx * dx;
    }
    const float var = warpSum(v) / (float)d;
    const float rs = 1.0f / sqrtf(var + eps);
    float* yr = y + r * d;
    for (int64_t c = lane; c < d; c += 32) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// Layer norm input gradient, one warp per row:
//   xhat = (x - mean) * rstd,  g = dy * gamma,
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)).
__global__ void layer_norm_bwd_dx_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                         const float* __restrict__ gamma,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ rstd, float* __restrict__ dx,
                                         int64_t rows, int64_t d) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float* xr = x + r * d;
    const float* dyr = dy + r * d;
    const float mu = mean[r], rs = rstd[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t c = lane; c < d; c += 32) {
      const float g = dyr[c] * gamma[c];
      sg += g;
      sgx += g * (xr[c] - mu) * rs;
    }
    const float meanG = warpSum(sg) / (float)d;
    const float meanGX = warpSum(sgx) / (float)d;
    float* dxr = dx + r * d;
    for (int64_t c = lane; c < d; c += 32) {
      const float xhat = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - meanG - xhat * meanGX);
    }
  }
}

// The same two kernels with the row held in registers: d % 4 == 0, 16-byte aligned pointers
// and d <= 128 * NV; lane l holds the float4 items l, l + 32, ... (< d/4). One read of x (and
// dy) per row instead of three.
template <int NV>
__global__ void layer_norm_fwd_vec_kernel(const float* __restrict__ x,
                                          const float* __restrict__ gamma,
                                          const float* __restrict__ beta, float* __restrict__ y,
                                          float* __restrict__ mean, float* __restrict__ rstd,
                                          int64_t rows, int64_t d, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t d4 = d >> 2;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float* xr = x + r * d;
    float4 v[NV];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      v[k] = c < d4 ? ld4(xr, c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const float mu = warpSum(s) / (float)d;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      if (lane + 32 * k < d4) {
        const float a = v[k].x - mu, b = v[k].y - mu, c = v[k].z - mu, e = v[k].w - mu;
        q += (a * a + b * b) + (c * c + e * e);
      }
    }
    const float var = warpSum(q) / (float)d;
    const float rs = 1.0f / sqrtf(var + eps);
    float* yr = y + r * d;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < d4) {
        const float4 g = ld4(gamma, c), b = ld4(beta, c);
        st4(yr, c,
            make_float4((v[k].x - mu) * rs * g.x + b.x, (v[k].y - mu) * rs * g.y + b.y,
                        (v[k].z - mu) * rs * g.z + b.z, (v[k].w - mu) * rs * g.w + b.w));
      }
    }
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

template <int NV>
__global__ void layer_norm_bwd_dx_vec_kernel(const float* __restrict__ dy,
                                             const float* __restrict__ x,
                                             const float* __restrict__ gamma,
                                             const float* __restrict__ mean,
                                             const float* __restrict__ rstd,
                                             float* __restrict__ dx, int64_t rows, int64_t d) {
  const int lane = threadIdx.x & 31;
  const int64_t d4 = d >> 2;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float mu = mean[r], rs = rstd[r];
    float4 xh[NV], g[NV]; // xhat and dy * gamma
    float sg = 0.0f, sgx = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < d4) {
        const float4 xv = ld4(x + r * d, c), dv = ld4(dy + r * d, c), gm = ld4(gamma, c);
        xh[k] = make_float4((xv.x - mu) * rs, (xv.y - mu) * rs, (xv.z - mu) * rs,
                            (xv.w - mu) * rs);
        g[k] = make_float4(dv.x * gm.x, dv.y * gm.y, dv.z * gm.z, dv.w * gm.w);
      } else {
        xh[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        g[k] = xh[k];
      }
      sg += (g[k].x + g[k].y) + (g[k].z + g[k].w);
      sgx += (g[k].x * xh[k].x + g[k].y * xh[k].y) + (g[k].z * xh[k].z + g[k].w * xh[k].w);
    }
    const float meanG = warpSum(sg) / (float)d;
    const float meanGX = warpSum(sgx) / (float)d;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = lane + 32 * k;
      if (c < d4)
        st4(dx + r * d, c,
            make_float4(rs * (g[k].x - meanG - xh[k].x * meanGX),
                        rs * (g[k].y - meanG - xh[k].y * meanGX),
                        rs * (g[k].z - meanG - xh[k].z * meanGX),
                        rs * (g[k].w - meanG - xh[k].w * meanGX)));
    }
  }
}

/// Float4 items per lane for the register kernels (0: use the scalar kernels).
inline int layerNormNV(int64_t d, bool aligned) {
  if (!aligned || d % 4 != 0) return 0;
  const int64_t per = (d / 4 + 31) / 32;
  for (int nv : {1, 2, 4, 6, 8})
    if (per <= nv) return nv;
  return 0;
}

/// Rows per chunk of the column sums: a function of `rows` only, so results never depend on
/// the device. At most kMaxChunks chunks.
constexpr int64_t kMaxChunks = 256;
inline int64_t chunkRows(int64_t rows) {
  const int64_t c = (rows + kMaxChunks - 1) / kMaxChunks;
  return c < 32 ? 32 : c;
}

// Column partial sums over a chunk of rows, the first stage of dbias / dgamma / dbeta:
//   part0[chunk, c] = sum_{r in chunk} dy[r, c]
//   part1[chunk, c] = sum_{r in chunk} dy[r, c] * (x[r, c] - mean[r]) * rstd[r]   (if x)
// Block (32, 8): threadIdx.x picks the column (coalesced), threadIdx.y strides the rows; the
// 8 row-lanes are then added in order. grid = (ceil(d/32), chunks).
__global__ void column_partials_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                       const float* __restrict__ mean,
                                       const float* __restrict__ rstd, float* __restrict__ part0,
                                       float* __restrict__ part1, int64_t rows, int64_t d,
                                       int64_t rowsPerChunk) {
  __shared__ float s0[8][33];
  __shared__ float s1[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rowsPerChunk;
  const int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  float a0 = 0.0f, a1 = 0.0f;
  if (c < d) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const float g = dy[r * d + c];
      a0 += g;
      if (x) a1 += g * (x[r * d + c] - mean[r]) * rstd[r];
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
    if (x) part1[chunk * d + c] = t1;
  }
}

// Second stage: out0[c] = sum_chunk part0[chunk, c] (in chunk order, double), same for out1.
__global__ void column_finish_kernel(const float* __restrict__ part0,
                                     const float* __restrict__ part1, float* __restrict__ out0,
                                     float* __restrict__ out1, int64_t chunks, int64_t d) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < d;
       c += (int64_t)gridDim.x * blockDim.x) {
    double t0 = 0.0, t1 = 0.0;
    for (int64_t k = 0; k < chunks; ++k) {
      t0 += part0[k * d + c];
      if (out1) t1 += part1[k * d + c];
    }
    out0[c] = (float)t0;
    if (out1) out1[c] = (float)t1;
  }
}

/// dbias-style column sums of dy [rows, d] into out0 (and, with x, dgamma-style into out1)
/// through the workspace.
void columnSums(Context* ctx, const char* loc, const float* dy, const float* x, const float* mean,
                const float* rstd, float* out0, float* out1, int64_t rows, int64_t d) {
  if (rows == 0) {
    check(cudaMemsetAsync(out0, 0, (size_t)d * sizeof(float), ctx->stream), loc, "cudaMemsetAsync");
    if (out1)
      check(cudaMemsetAsync(out1, 0, (size_t)d * sizeof(float), ctx->stream), loc,
            "cudaMemsetAsync");
    return;
  }
  const int64_t per = chunkRows(rows);
  const int64_t chunks = (rows + per - 1) / per;
  const int64_t partBytes = align256(chunks * d * (int64_t)sizeof(float));
  checkWorkspace(ctx, loc, "column sums", 2 * partBytes);
  float* part0 = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  float* part1 = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE] + partBytes);
  const int64_t colBlocks = (d + 31) / 32;
  if (colBlocks > 0x7fffffff || chunks > 65535) fail(loc, "column sums: shape too large");
  launch(ctx, loc, "column_partials_kernel", column_partials_kernel,
         dim3((unsigned)colBlocks, (unsigned)chunks), dim3(32, 8), 0, dy, x, mean, rstd, part0,
         x ? part1 : nullptr, rows, d, per);
  launch(ctx, loc, "column_finish_kernel", column_finish_kernel, dim3(gridFor(d, kBlock)),
         dim3(kBlock), 0, part0, x ? part1 : nullptr, out0, out1, chunks, d);
}

// ------------------------------------------------------------------------- bias --

// out[r, c] = x[r, c] + bias[c]  (out may alias x). Also the positional forward:
//   out[b, s, c] = x[b, s, c] + wpe[s, c]  with rows r = b*t + s and bias row s = r % period.
// Grid: x over the columns (float4 when `vec`: n, pointers 16-byte aligned, n % 4 == 0),
// y over the rows (grid-stride); no per-element division.
__global__ void row_bias_kernel(const float* x, const float* __restrict__ bias, float* out,
                                int64_t rows, int64_t n, int64_t period, bool vec) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (vec) {
    const int64_t n4 = n >> 2;
    if (c >= n4) return;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
      const float4 b = ld4(bias + (r % period) * n, c);
      const float4 v = ld4(x + r * n, c);
      st4(out + r * n, c, make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w));
    }
  } else {
    if (c >= n) return;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
      out[r * n + c] = x[r * n + c] + bias[(r % period) * n + c];
  }
}

/// out = x + bias row (r % period) over rows x n.
void rowBias(Context* ctx, const char* loc, const float* x, const float* bias, float* out,
             int64_t rows, int64_t n, int64_t period) {
  const bool vec = n % 4 == 0 && aligned16(x, bias, out);
  const int64_t cols = vec ? n / 4 : n;
  const int64_t bx = (cols + 127) / 128;
  if (bx > 0x7fffffff) fail(loc, "bias_add: row too long");
  const int64_t by = std::min<int64_t>(rows, std::max<int64_t>(1, 8192 / bx));
  launch(ctx, loc, "row_bias_kernel", row_bias_kernel,
         dim3((unsigned)bx, (unsigned)std::min<int64_t>(by, 65535)), dim3(128), 0, x, bias, out,
         rows, n, period, vec);
}

// --------------------------------------------------------------------------- GELU --

constexpr float kGeluC = 0.7978845608028654f; // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;

// GELU, tanh approximation (Hendrycks & Gimpel 2016):
//   y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
__device__ __forceinline__ float geluF(float xi) {
  const float u = kGeluC * (xi + kGeluA * xi * xi * xi);
  return 0.5f * xi * (1.0f + tanhf(u));
}
struct GeluFwdOp {
  const float* x;
  float* y;
  __device__ void operator()(int64_t i) const { y[i] = geluF(x[i]); }
  __device__ void vec(int64_t i) const {
    const float4 v = ld4(x, i);
    st4(y, i, make_float4(geluF(v.x), geluF(v.y), geluF(v.z), geluF(v.w)));
  }
};

// dx = dy * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2)).
// dx may alias dy.
__device__ __forceinline__ float geluGrad(float xi) {
  const float th = tanhf(kGeluC * (xi + kGeluA * xi * xi * xi));
  return 0.5f * (1.0f + th) +
         0.5f * xi * (1.0f - th * th) * kGeluC * (1.0f + 3.0f * kGeluA * xi * xi);
}
struct GeluBwdOp {
  const float* x;
  const float* dy;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = dy[i] * geluGrad(x[i]); }
  __device__ void vec(int64_t i) const {
    const float4 v = ld4(x, i), g = ld4(dy, i);
    st4(dx, i, make_float4(g.x * geluGrad(v.x), g.y * geluGrad(v.y), g.z * geluGrad(v.z),
                           g.w * geluGrad(v.w)));
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
__global__ void dropout_kernel(const float* x, float* y, int64_t n, float rate, float scale,
                               uint64_t key) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t bits = mix64(key + ((uint64_t)i + 1) * kGolden);
    const float u = (float)(bits >> 40) * (1.0f / 16777216.0f);
    y[i] = u >= rate ? x[i] * scale : 0.0f;
  }
}

// ------------------------------------------------------------- mask and softmax --

// y[b, i, j] = x[b, i, j] if j <= i' and (window <= 0 or i' - j < window), else masked_value,
// where i' = i + tk - tq (query i sits at key position i'). y may alias x.
__global__ void causal_mask_kernel(const float* x, float* y, int64_t n, int64_t tq, int64_t tk,
                                   int64_t window, float masked) {
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
__global__ void softmax_fwd_kernel(const float* x, float* y, int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float m = -INFINITY;
    for (int64_t c = lane; c < n; c += 32) m = fmaxf(m, xr[c]);
    m = warpMax(m);
    if (m == -INFINITY) {
      for (int64_t c = lane; c < n; c += 32) yr[c] = 0.0f;
      continue;
    }
    float s = 0.0f;
    for (int64_t c = lane; c < n; c += 32) s += expf(xr[c] - m);
    const float inv = 1.0f / warpSum(s);
    for (int64_t c = lane; c < n; c += 32) yr[c] = expf(xr[c] - m) * inv;
  }
}

// Softmax backward, one warp per row: dx = y * (dy - sum_c(dy_c * y_c)). dx may alias dy
// (the dot product reads the whole row before any element is written).
__global__ void softmax_bwd_kernel(const float* y, const float* dy, float* dx, int64_t rows,
                                   int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const float* yr = y + r * n;
    const float* dyr = dy + r * n;
    float* dxr = dx + r * n;
    float s = 0.0f;
    for (int64_t c = lane; c < n; c += 32) s += dyr[c] * yr[c];
    const float dot = warpSum(s);
    for (int64_t c = lane; c < n; c += 32) dxr[c] = yr[c] * (dyr[c] - dot);
  }
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

/// The block's (M, S) with S = sum_c exp(z_c - M) over a row, in one pass: each thread keeps
/// an online (max, sum) over its strided slice (float4 items when `vec`: vocab % 4 == 0 and z
/// 16-byte aligned), then the block combines them. `fscratch` / `dscratch`: 33 floats /
/// 33 doubles. A row of -inf only gives M = -inf (S then unused).
__device__ void rowMaxSumExp(const float* z, int64_t vocab, bool vec, float* fscratch,
                             double* dscratch, float& M, float& S) {
  float m = -INFINITY, s = 0.0f;
  if (vec) {
    const int64_t v4 = vocab >> 2;
    for (int64_t c = threadIdx.x; c < v4; c += blockDim.x) {
      const float4 q = ld4(z, c);
      // Update with the max of the four first: one rescale at most per item.
      const float qm = fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w));
      if (qm == -INFINITY) continue;
      if (qm > m) {
        s *= expf(m - qm);
        m = qm;
      }
      s += (expf(q.x - m) + expf(q.y - m)) + (expf(q.z - m) + expf(q.w - m));
    }
  } else {
    for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
      const float zc = z[c];
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
__global__ void cross_entropy_rows_kernel(const float* __restrict__ logits,
                                          const int32_t* __restrict__ targets,
                                          double* __restrict__ rowLoss, int64_t rows,
                                          int64_t vocab, int64_t ignore, DeviceState* st,
                                          int32_t loc, bool vec) {
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
    const float* z = logits + r * vocab;
    float M, S;
    rowMaxSumExp(z, vocab, vec, fs, ds, M, S);
    if (threadIdx.x == 0) rowLoss[r] = (double)M + log((double)S) - (double)z[t];
  }
}

// Number of rows whose target != ignore_index, into *valid (one block, fixed order).
__global__ void count_valid_kernel(const int32_t* __restrict__ targets, int64_t rows,
                                   int64_t ignore, double* __restrict__ valid) {
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
__global__ void cross_entropy_bwd_kernel(const float* logits, const int32_t* __restrict__ targets,
                                         const float* __restrict__ dloss,
                                         const double* __restrict__ valid, float* dlogits,
                                         int64_t rows, int64_t vocab, int64_t ignore,
                                         DeviceState* st, int32_t loc, bool vec) {
  __shared__ float fs[33];
  __shared__ double ds[33];
  const double nValid = *valid;
  const float scale = nValid > 0.0 ? (float)((double)dloss[0] / nValid) : 0.0f;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = targets[r];
    const float* z = logits + r * vocab;
    float* dz = dlogits + r * vocab;
    if (t == ignore || t < 0 || t >= vocab) {
      if (t != ignore && threadIdx.x == 0) reportError(st, kTargetOutOfRange, loc, t, r, vocab);
      for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) dz[c] = 0.0f;
      continue;
    }
    float M, S;
    rowMaxSumExp(z, vocab, vec, fs, ds, M, S);
    const float invS = 1.0f / S;
    if (vec) {
      const int64_t v4 = vocab >> 2;
      for (int64_t c = threadIdx.x; c < v4; c += blockDim.x) {
        const float4 q = ld4(z, c);
        float4 o = make_float4(scale * (expf(q.x - M) * invS), scale * (expf(q.y - M) * invS),
                               scale * (expf(q.z - M) * invS), scale * (expf(q.w - M) * invS));
        if (t >> 2 == c) {
          const float p = expf(z[t] - M) * invS, g = scale * (p - 1.0f);
          switch (t & 3) {
          case 0: o.x = g; break;
          case 1: o.y = g; break;
          case 2: o.z = g; break;
          default: o.w = g;
          }
        }
        st4(dz, c, o);
      }
    } else {
      for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
        const float p = expf(z[c] - M) * invS;
        dz[c] = scale * (p - (c == t ? 1.0f : 0.0f));
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

// Sum of squares, first stage: part[b] = sum over block b's grid-stride slice of g_i^2
// (double per thread, then the block's fixed-order sum).
// With `vec` (g 16-byte aligned) the slice is float4 items, then the scalar tail.
__global__ void sumsq_partial_kernel(const float* __restrict__ g, int64_t n,
                                     double* __restrict__ part, bool vec) {
  __shared__ double ds[33];
  double s = 0.0;
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t n4 = n >> 2;
    for (int64_t i = t; i < n4; i += stride) {
      const float4 v = ld4(g, i);
      s += ((double)v.x * (double)v.x + (double)v.y * (double)v.y) +
           ((double)v.z * (double)v.z + (double)v.w * (double)v.w);
    }
    done = n4 << 2;
  }
  for (int64_t i = done + t; i < n; i += stride) s += (double)g[i] * (double)g[i];
  s = blockSumD(s, ds);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// Second stage (one block): acc[0] = acc[0] + sum_b part[b].
__global__ void sumsq_finish_kernel(const double* __restrict__ part, int64_t parts,
                                    float* __restrict__ acc) {
  __shared__ double ds[33];
  double s = 0.0;
  for (int64_t b = threadIdx.x; b < parts; b += blockDim.x) s += part[b];
  s = blockSumD(s, ds);
  if (threadIdx.x == 0) acc[0] = (float)((double)acc[0] + s);
}

// norm = sqrt(acc[0]); acc[1] = (max_norm > 0 && norm > max_norm) ? max_norm/(norm+1e-6) : 1;
// the norm is kept in the context state for tgrt_last_grad_norm. One thread.
__global__ void clip_scale_kernel(float* acc, float maxNorm, DeviceState* st) {
  const double norm = sqrt((double)acc[0]);
  acc[1] = (maxNorm > 0.0f && norm > (double)maxNorm) ? (float)(maxNorm / (norm + 1e-6)) : 1.0f;
  st->grad_norm = (float)norm;
}

// AdamW (Loshchilov & Hutter 2019), in double like the CPU reference:
//   g' = g * clip[1];  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;
//   p -= lr * (m / bc1 / (sqrt(v / bc2) + eps) + wd * p),  bc = 1 - b^step.
struct AdamwOp {
  float* p;
  const float* g;
  float* m;
  float* v;
  double b1, b2, eps, wd, lr, bc1, bc2;
  const float* clip;
  __device__ __forceinline__ void one(float& pf, float gf, float& mf, float& vf, double c) const {
    const double gi = (double)gf * c;
    const double mi = b1 * mf + (1.0 - b1) * gi;
    const double vi = b2 * vf + (1.0 - b2) * gi * gi;
    mf = (float)mi;
    vf = (float)vi;
    const double pi = pf;
    pf = (float)(pi - lr * ((mi / bc1) / (sqrt(vi / bc2) + eps) + wd * pi));
  }
  __device__ double scale() const { return clip ? (double)clip[1] : 1.0; }
  __device__ void operator()(int64_t i) const { one(p[i], g[i], m[i], v[i], scale()); }
  __device__ void vec(int64_t i) const {
    const double c = scale();
    float4 pv = ld4(p, i), mv = ld4(m, i), vv = ld4(v, i);
    const float4 gv = ld4(g, i);
    one(pv.x, gv.x, mv.x, vv.x, c);
    one(pv.y, gv.y, mv.y, vv.y, c);
    one(pv.z, gv.z, mv.z, vv.z, c);
    one(pv.w, gv.w, mv.w, vv.w, c);
    st4(p, i, pv);
    st4(m, i, mv);
    st4(v, i, vv);
  }
};

// loss_sum += loss[0]; loss_count += 1. One thread.
__global__ void report_loss_kernel(const float* loss, DeviceState* st) {
  st->loss_sum += (double)loss[0];
  st->loss_count += 1;
}

// k == 0 GEMM: C = beta * C (C not read when beta == 0), C [m*n] contiguous.
__global__ void scale_kernel(float* c, int64_t n, float beta) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    c[i] = beta == 0.0f ? 0.0f : beta * c[i];
}

/// Largest power of two <= 256 dividing the address and (for batches) the byte stride.
uint32_t alignmentOf(const void* p, int64_t strideElems, int64_t batch) {
  uint64_t bits = (uint64_t)(uintptr_t)p | 256u;
  if (batch > 1 && strideElems != 0) bits |= (uint64_t)strideElems * sizeof(float);
  return (uint32_t)(bits & (~bits + 1)); // lowest set bit
}

/// Creates (or finds) the cuBLASLt plan for key. Row-major C = op(A) op(B) is computed as the
/// column-major C^T = op(B)^T op(A)^T: cuBLASLt's A is our b, its B is our a, both with their
/// own transposes, and C^T [n x m] column-major is C [m x n] row-major.
MatmulPlan& getPlan(Context* ctx, const char* loc, const MatmulKey& key,
                    const float* bias = nullptr) {
  auto it = ctx->plans.find(key);
  if (it != ctx->plans.end()) return it->second;
  if (ctx->plans.size() >= 4096) { // a runaway number of shapes: start over
    for (auto& e : ctx->plans) {
      cublasLtMatrixLayoutDestroy(e.second.la);
      cublasLtMatrixLayoutDestroy(e.second.lb);
      cublasLtMatrixLayoutDestroy(e.second.lc);
      cublasLtMatmulDescDestroy(e.second.desc);
    }
    ctx->plans.clear();
  }
  MatmulPlan& p = ctx->plans[key];
  const cublasComputeType_t compute = ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  checkBlas(cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F), loc, "cublasLtMatmulDescCreate");
  const int32_t opA = key.tb ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt A = our b
  const int32_t opB = key.ta ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt B = our a
  checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA),
            loc, "cublasLtMatmulDescSetAttribute");
  checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB),
            loc, "cublasLtMatmulDescSetAttribute");
  if (key.epilogue == 1 || key.epilogue == 2) {
    // Column-major D^T is [n x m]: the bias [n] runs along D^T's rows, as the epilogue wants.
    const cublasLtEpilogue_t epi =
        key.epilogue == 1 ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    // The heuristic reads the pointer's alignment (it is set again before every call).
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias),
              loc, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  if (key.epilogue == 2) { // the aux output (pre-activation) has D's shape, ld n (elements)
    const int64_t ld = key.n;
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld,
                                             sizeof ld),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
  }
  // Stored shapes (column-major rows x cols, ld): b is [k x n] row-major = [n x k] col-major
  // (ld n), or [n x k] row-major = [k x n] col-major (ld k) when trans_b. Same for a.
  const int64_t m = key.m, n = key.n, k = key.k;
  checkBlas(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_32F, key.tb ? k : n, key.tb ? n : k,
                                       key.tb ? k : n),
            loc, "cublasLtMatrixLayoutCreate");
  checkBlas(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_32F, key.ta ? m : k, key.ta ? k : m,
                                       key.ta ? m : k),
            loc, "cublasLtMatrixLayoutCreate");
  checkBlas(cublasLtMatrixLayoutCreate(&p.lc, CUDA_R_32F, n, m, n), loc,
            "cublasLtMatrixLayoutCreate");
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
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p.desc, p.la, p.lb, p.lc, p.lc,
                                                          pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  p.ok = s == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (p.ok) p.algo = result.algo;
  return p;
}

/// One cuBLASLt call for the (already validated) batched GEMM; false when cuBLASLt has no
/// algorithm for this shape.
bool ltMatmul(Context* ctx, const char* loc, const float* a, const float* b, float* c,
              int64_t batch, int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb, int64_t sa,
              int64_t sb, int64_t sc, float alpha, float beta) {
  MatmulKey key{batch, m, n, k, batch > 1 ? sa : 0, batch > 1 ? sb : 0, batch > 1 ? sc : 0,
                ta ? 1 : 0, tb ? 1 : 0, alignmentOf(a, sa, batch), alignmentOf(b, sb, batch),
                alignmentOf(c, sc, batch)};
  MatmulPlan& p = getPlan(ctx, loc, key);
  if (!p.ok) return false;
  checkBlas(cublasLtMatmul(ctx->lt, p.desc, &alpha, b, p.la, a, p.lb, &beta, c, p.lc, c, p.lc,
                           &p.algo, ctx->regions[TGRT_WORKSPACE],
                           (size_t)ctx->region_bytes[TGRT_WORKSPACE], ctx->stream),
            loc, "cublasLtMatmul");
  if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), loc, "cublasLtMatmul");
  return true;
}

/// One cuBLASLt call computing C = alpha op(A) op(B) + bias (bias [n] added to every row of
/// the row-major C) through an epilogue: without `aux`, CUBLASLT_EPILOGUE_BIAS; with `aux`,
/// CUBLASLT_EPILOGUE_GELU_AUX_BIAS, which writes the sum to aux and GELU of it to C. False
/// when cuBLASLt has no algorithm, or (GELU) when the aux layout is not one the epilogue
/// takes (ld n a multiple of 8, 16-byte aligned aux).
bool ltMatmulEpilogue(Context* ctx, const char* loc, const float* a, const float* b,
                      const float* bias, float* aux, float* c, int64_t m, int64_t n, int64_t k,
                      int32_t ta, int32_t tb, float alpha) {
  if (aux && (n % 8 != 0 || alignmentOf(aux, 0, 1) < 16)) return false;
  MatmulKey key{1, m, n, k, 0, 0, 0, ta ? 1 : 0, tb ? 1 : 0, alignmentOf(a, 0, 1),
                alignmentOf(b, 0, 1), alignmentOf(c, 0, 1)};
  key.epilogue = aux ? 2 : 1;
  key.align_bias = alignmentOf(bias, 0, 1);
  MatmulPlan& p = getPlan(ctx, loc, key, bias);
  if (!p.ok) return false;
  checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                           sizeof bias),
            loc, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (aux)
    checkBlas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                             &aux, sizeof aux),
              loc, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
  const float beta = 0.0f;
  checkBlas(cublasLtMatmul(ctx->lt, p.desc, &alpha, b, p.la, a, p.lb, &beta, c, p.lc, c, p.lc,
                           &p.algo, ctx->regions[TGRT_WORKSPACE],
                           (size_t)ctx->region_bytes[TGRT_WORKSPACE], ctx->stream),
            loc, aux ? "cublasLtMatmul(gelu_aux_bias epilogue)" : "cublasLtMatmul(bias epilogue)");
  if (ctx->sync_each) check(cudaStreamSynchronize(ctx->stream), loc, "cublasLtMatmul");
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

} // namespace

// ================================================================ host functions ==

void embeddingFwd(Context* ctx, const char* loc, const float* table, const int32_t* ids,
                  float* out, int64_t n_tokens, int64_t d, int64_t vocab) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "embedding_fwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  if (n_tokens == 0 || d == 0) return;
  launch(ctx, loc, "embedding_fwd_kernel", embedding_fwd_kernel, dim3(gridFor(n_tokens, 1, 65535)),
         dim3(d >= 256 ? 256 : 128), 0, table, ids, out, n_tokens, d, vocab, ctx->state,
         locIndex(ctx, loc));
}

void embeddingBwd(Context* ctx, const char* loc, const int32_t* ids, const float* dout,
                  float* dtable, int64_t n_tokens, int64_t d, int64_t vocab) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "embedding_bwd(n_tokens, d, vocab)", n_tokens, d, vocab);
  if (vocab * d > 0)
    check(cudaMemsetAsync(dtable, 0, (size_t)(vocab * d) * sizeof(float), ctx->stream), loc,
          "cudaMemsetAsync");
  if (n_tokens == 0 || d == 0) return;
  if (n_tokens > 0x7fffffff) fail(loc, "embedding_bwd: more than 2^31 tokens");
  int endBit = 1;
  while (endBit < 31 && (int64_t{1} << endBit) < vocab) ++endBit;
  const size_t tempBytes = sortTempBytes(loc, n_tokens, endBit);
  const int64_t arr = align256(n_tokens * (int64_t)sizeof(int32_t));
  checkWorkspace(ctx, loc, "embedding_bwd (sort by id)", 3 * arr + (int64_t)tempBytes);
  char* ws = ctx->regions[TGRT_WORKSPACE];
  int32_t* keysOut = reinterpret_cast<int32_t*>(ws);
  int32_t* posIn = reinterpret_cast<int32_t*>(ws + arr);
  int32_t* posOut = reinterpret_cast<int32_t*>(ws + 2 * arr);
  void* temp = ws + 3 * arr;
  launch(ctx, loc, "iota_kernel", iota_kernel, dim3(gridFor(n_tokens, kBlock)), dim3(kBlock), 0,
         posIn, n_tokens);
  sortIdsStable(ctx, loc, ids, keysOut, posIn, posOut, n_tokens, endBit, temp, tempBytes);
  launch(ctx, loc, "embedding_bwd_runs_kernel", embedding_bwd_runs_kernel,
         dim3(gridFor(n_tokens, 1, 65535)), dim3(d >= 256 ? 256 : 128), 0, keysOut, posOut, dout,
         dtable, n_tokens, d, vocab, ctx->state, locIndex(ctx, loc));
}

void positionalFwd(Context* ctx, const char* loc, const float* x, const float* wpe, float* out,
                   int64_t batch, int64_t t, int64_t d) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "positional_fwd(batch, t, d)", batch, t, d);
  const int64_t n = batch * t * d;
  if (n == 0) return;
  rowBias(ctx, loc, x, wpe, out, batch * t, d, t);
}

void positionalBwd(Context* ctx, const char* loc, const float* dout, float* dwpe, int64_t batch,
                   int64_t t, int64_t d, int64_t context) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "positional_bwd(batch, t, d, context)", batch, t, d, context);
  if (context < t)
    fail(loc, "positional_bwd: context %lld < t %lld", (long long)context, (long long)t);
  if (context * d == 0) return;
  launch(ctx, loc, "positional_bwd_kernel", positional_bwd_kernel,
         dim3(gridFor(context * d, kBlock)), dim3(kBlock), 0, dout, dwpe, batch, t, d, context);
}

void add(Context* ctx, const char* loc, const float* a, const float* b, float* out, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "add(n)", n);
  if (n == 0) return;
  launchElementwise(ctx, loc, "add_kernel", AddOp{a, b, out}, n, aligned16(a, b, out));
}

void accumulate(Context* ctx, const char* loc, float* dst, const float* src, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "accumulate(n)", n);
  if (n == 0) return;
  launchElementwise(ctx, loc, "accumulate_kernel", AccumulateOp{dst, src}, n,
                    aligned16(dst, src));
}

void fill(Context* ctx, const char* loc, float* out, int64_t n, float value) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "fill(n)", n);
  if (n == 0) return;
  launchElementwise(ctx, loc, "fill_kernel", FillOp{out, value}, n, aligned16(out));
}

void zero(Context* ctx, const char* loc, void* p, int64_t bytes) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "zero(bytes)", bytes);
  if (bytes == 0) return;
  check(cudaMemsetAsync(p, 0, (size_t)bytes, ctx->stream), loc, "cudaMemsetAsync");
}

void copy2d(Context* ctx, const char* loc, const float* src, int64_t src_ld, float* dst,
            int64_t dst_ld, int64_t rows, int64_t cols) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "copy2d(src_ld, dst_ld, rows, cols)", src_ld, dst_ld, rows, cols);
  if (rows == 0 || cols == 0) return;
  if (src_ld < cols || dst_ld < cols)
    fail(loc, "copy2d: leading dimensions (src %lld, dst %lld) smaller than cols %lld",
         (long long)src_ld, (long long)dst_ld, (long long)cols);
  const bool vec = cols % 4 == 0 && src_ld % 4 == 0 && dst_ld % 4 == 0 && aligned16(src, dst);
  const int64_t w = vec ? 4 : 1, q = cols / w, total = rows * q;
  // Largest index touched: (rows - 1) * max(ld) + cols (in floats).
  const bool small = (rows - 1) * std::max(src_ld, dst_ld) + cols < ((int64_t)1 << 31);
  const dim3 grid(gridFor(total, kBlock, 65535)), block(kBlock);
  const int64_t sld = src_ld / w, dld = dst_ld / w;
  if (small && vec)
    launch(ctx, loc, "copy2d_kernel", copy2d_kernel<uint32_t, true>, grid, block, 0, src, sld, dst,
           dld, total, q);
  else if (small)
    launch(ctx, loc, "copy2d_kernel", copy2d_kernel<uint32_t, false>, grid, block, 0, src, sld,
           dst, dld, total, q);
  else if (vec)
    launch(ctx, loc, "copy2d_kernel", copy2d_kernel<int64_t, true>, grid, block, 0, src, sld, dst,
           dld, total, q);
  else
    launch(ctx, loc, "copy2d_kernel", copy2d_kernel<int64_t, false>, grid, block, 0, src, sld,
           dst, dld, total, q);
}

void transpose4(Context* ctx, const char* loc, const float* x, float* y, int64_t d0, int64_t d1,
                int64_t d2, int64_t d3, int32_t p0, int32_t p1, int32_t p2, int32_t p3) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "transpose4(d0, d1, d2, d3)", d0, d1, d2, d3);
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
    const bool vec = d3 % 4 == 0 && aligned16(x, y);
    const int64_t w = vec ? 4 : 1, q = d3 / w, total = n / w;
    const int64_t s0 = pm.xstride[0] / w, s1 = pm.xstride[1] / w, s2 = pm.xstride[2] / w;
    const dim3 grid(gridFor(total, kBlock, 65535)), block(kBlock);
    if (small && vec)
      launch(ctx, loc, "transpose_rows_kernel", transpose_rows_kernel<uint32_t, true>, grid, block,
             0, x, y, total, q, pm.ydim[1], pm.ydim[2], s0, s1, s2);
    else if (small)
      launch(ctx, loc, "transpose_rows_kernel", transpose_rows_kernel<uint32_t, false>, grid,
             block, 0, x, y, total, q, pm.ydim[1], pm.ydim[2], s0, s1, s2);
    else if (vec)
      launch(ctx, loc, "transpose_rows_kernel", transpose_rows_kernel<int64_t, true>, grid, block,
             0, x, y, total, q, pm.ydim[1], pm.ydim[2], s0, s1, s2);
    else
      launch(ctx, loc, "transpose_rows_kernel", transpose_rows_kernel<int64_t, false>, grid,
             block, 0, x, y, total, q, pm.ydim[1], pm.ydim[2], s0, s1, s2);
    return;
  }
  if (small)
    launch(ctx, loc, "transpose4_kernel", transpose4_kernel<uint32_t>,
           dim3(gridFor(n, kBlock, 65535)), dim3(kBlock), 0, x, y, pm, n);
  else
    launch(ctx, loc, "transpose4_kernel", transpose4_kernel<int64_t>,
           dim3(gridFor(n, kBlock, 65535)), dim3(kBlock), 0, x, y, pm, n);
}

void layerNormFwd(Context* ctx, const char* loc, const float* x, const float* gamma,
                  const float* beta, float* y, float* mean, float* rstd, int64_t rows, int64_t d,
                  float eps) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "layer_norm_fwd(rows, d)", rows, d);
  if (rows == 0) return;
  if (d == 0) fail(loc, "layer_norm_fwd: d must be > 0");
  const dim3 grid(gridFor(rows, 8)), block(kBlock);
  switch (layerNormNV(d, aligned16(x, gamma, beta, y))) {
#define TGRT_LN_FWD(NV)                                                                          \
  case NV:                                                                                       \
    launch(ctx, loc, "layer_norm_fwd_vec_kernel", layer_norm_fwd_vec_kernel<NV>, grid, block, 0, \
           x, gamma, beta, y, mean, rstd, rows, d, eps);                                         \
    return;
    TGRT_LN_FWD(1)
    TGRT_LN_FWD(2)
    TGRT_LN_FWD(4)
    TGRT_LN_FWD(6)
    TGRT_LN_FWD(8)
#undef TGRT_LN_FWD
  default:
    launch(ctx, loc, "layer_norm_fwd_kernel", layer_norm_fwd_kernel, grid, block, 0, x, gamma,
           beta, y, mean, rstd, rows, d, eps);
  }
}

void layerNormBwd(Context* ctx, const char* loc, const float* dy, const float* x,
                  const float* gamma, const float* mean, const float* rstd, float* dx,
                  float* dgamma, float* dbeta, int64_t rows, int64_t d) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "layer_norm_bwd(rows, d)", rows, d);
  if (d == 0) return;
  if (rows > 0) {
    const dim3 grid(gridFor(rows, 8)), block(kBlock);
    switch (layerNormNV(d, aligned16(dy, x, gamma, dx))) {
#define TGRT_LN_BWD(NV)                                                                          \
  case NV:                                                                                       \
    launch(ctx, loc, "layer_norm_bwd_dx_vec_kernel", layer_norm_bwd_dx_vec_kernel<NV>, grid,     \
           block, 0, dy, x, gamma, mean, rstd, dx, rows, d);                                     \
    break;
      TGRT_LN_BWD(1)
      TGRT_LN_BWD(2)
      TGRT_LN_BWD(4)
      TGRT_LN_BWD(6)
      TGRT_LN_BWD(8)
#undef TGRT_LN_BWD
    default:
      launch(ctx, loc, "layer_norm_bwd_dx_kernel", layer_norm_bwd_dx_kernel, grid, block, 0, dy,
             x, gamma, mean, rstd, dx, rows, d);
    }
  }
  columnSums(ctx, loc, dy, x, mean, rstd, dbeta, dgamma, rows, d);
}

void matmulBias(Context* ctx, const char* loc, const float* a, const float* b,
                const float* bias, float* c, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                int32_t trans_b, float alpha) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_bias(m, n, k)", m, n, k);
  if (m == 0 || n == 0) return;
  if (k > 0 &&
      ltMatmulEpilogue(ctx, loc, a, b, bias, nullptr, c, m, n, k, trans_a, trans_b, alpha))
    return;
  // No epilogue algorithm for this shape (or k == 0): the GEMM, then the bias kernel.
  matmul(ctx, loc, a, b, c, 1, m, n, k, trans_a, trans_b, 0, 0, 0, alpha, 0.0f);
  biasAdd(ctx, loc, c, bias, c, m, n);
}

void matmul(Context* ctx, const char* loc, const float* a, const float* b, float* c,
            int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
            int64_t stride_a, int64_t stride_b, int64_t stride_c, float alpha, float beta) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul(batch, m, n, k)", batch, m, n, k);
  checkNonNegative(loc, "matmul(stride_a, stride_b, stride_c)", stride_a, stride_b, stride_c);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) { // C = beta C (alpha times an empty product is 0)
    for (int64_t bi = 0; bi < batch; ++bi)
      if (beta != 1.0f)
        launch(ctx, loc, "scale_kernel", scale_kernel, dim3(gridFor(m * n, kBlock)), dim3(kBlock),
               0, c + bi * stride_c, m * n, beta);
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
  if (oneCall && ltMatmul(ctx, loc, a, b, c, batch, m, n, k, trans_a, trans_b, stride_a, stride_b,
                          stride_c, alpha, beta))
    return;
  for (int64_t bi = 0; bi < batch; ++bi)
    if (!ltMatmul(ctx, loc, a + bi * stride_a, b + bi * stride_b, c + bi * stride_c, 1, m, n, k,
                  trans_a, trans_b, 0, 0, 0, alpha, beta))
      fail(loc,
           "cuBLASLt has no algorithm for matmul m %lld n %lld k %lld trans_a %d trans_b %d",
           (long long)m, (long long)n, (long long)k, (int)trans_a, (int)trans_b);
}

void setGeluEpilogue(Context* ctx, bool on) { ctx->gelu_epilogue = on; }

void matmulBiasGelu(Context* ctx, const char* loc, const float* a, const float* b,
                    const float* bias, float* pre, float* out, int64_t m, int64_t n, int64_t k,
                    int32_t trans_a, int32_t trans_b, float alpha) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "matmul_bias_gelu(m, n, k)", m, n, k);
  if (m == 0 || n == 0) return;
  // cuBLASLt does not document the precision of its GELU: by default the fused epilogue only
  // in the fast (TF32) mode; the exact mode keeps the own fp32 kernel (gelu_epilogue).
  if (ctx->gelu_epilogue && k > 0 &&
      ltMatmulEpilogue(ctx, loc, a, b, bias, pre, out, m, n, k, trans_a, trans_b, alpha))
    return;
  matmulBias(ctx, loc, a, b, bias, pre, m, n, k, trans_a, trans_b, alpha);
  geluFwd(ctx, loc, pre, out, m * n);
}

void biasAdd(Context* ctx, const char* loc, const float* x, const float* bias, float* out,
             int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "bias_add(rows, n)", rows, n);
  if (rows * n == 0) return;
  rowBias(ctx, loc, x, bias, out, rows, n, 1);
}

void biasGrad(Context* ctx, const char* loc, const float* dy, float* dbias, int64_t rows,
              int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "bias_grad(rows, n)", rows, n);
  if (n == 0) return;
  columnSums(ctx, loc, dy, nullptr, nullptr, nullptr, dbias, nullptr, rows, n);
}

void geluFwd(Context* ctx, const char* loc, const float* x, float* y, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "gelu_fwd(n)", n);
  if (n == 0) return;
  launchElementwise(ctx, loc, "gelu_fwd_kernel", GeluFwdOp{x, y}, n, aligned16(x, y));
}

void geluBwd(Context* ctx, const char* loc, const float* x, const float* dy, float* dx,
             int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "gelu_bwd(n)", n);
  if (n == 0) return;
  launchElementwise(ctx, loc, "gelu_bwd_kernel", GeluBwdOp{x, dy, dx}, n, aligned16(x, dy, dx));
}

void dropout(Context* ctx, const char* loc, const float* x, float* y, int64_t n, float rate,
             uint64_t seed) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "dropout(n)", n);
  if (!(rate >= 0.0f && rate <= 1.0f)) fail(loc, "dropout rate %g outside [0, 1]", (double)rate);
  if (n == 0) return;
  if (rate == 0.0f) {
    if (y != x)
      check(cudaMemcpyAsync(y, x, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice,
                            ctx->stream),
            loc, "cudaMemcpyAsync");
    return;
  }
  const uint64_t key = dropoutKey(seed, ctx->step, ctx->micro_batch);
  const float scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  launch(ctx, loc, "dropout_kernel", dropout_kernel, dim3(gridFor(n, kBlock)), dim3(kBlock), 0, x,
         y, n, rate, scale, key);
}

void causalMask(Context* ctx, const char* loc, const float* x, float* y, int64_t batch,
                int64_t tq, int64_t tk, int64_t window, float masked_value) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "causal_mask(batch, tq, tk)", batch, tq, tk);
  const int64_t n = batch * tq * tk;
  if (n == 0) return;
  launch(ctx, loc, "causal_mask_kernel", causal_mask_kernel, dim3(gridFor(n, kBlock)),
         dim3(kBlock), 0, x, y, n, tq, tk, window, masked_value);
}

void softmaxFwd(Context* ctx, const char* loc, const float* x, float* y, int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "softmax_fwd(rows, n)", rows, n);
  if (rows * n == 0) return;
  launch(ctx, loc, "softmax_fwd_kernel", softmax_fwd_kernel, dim3(gridFor(rows, 8)), dim3(kBlock),
         0, x, y, rows, n);
}

void softmaxBwd(Context* ctx, const char* loc, const float* y, const float* dy, float* dx,
                int64_t rows, int64_t n) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "softmax_bwd(rows, n)", rows, n);
  if (rows * n == 0) return;
  launch(ctx, loc, "softmax_bwd_kernel", softmax_bwd_kernel, dim3(gridFor(rows, 8)), dim3(kBlock),
         0, y, dy, dx, rows, n);
}

void crossEntropyFwd(Context* ctx, const char* loc, const float* logits, const int32_t* targets,
                     float* loss, int64_t rows, int64_t vocab, int64_t ignore_index) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "cross_entropy_fwd(rows, vocab)", rows, vocab);
  if (rows == 0) {
    check(cudaMemsetAsync(loss, 0, sizeof(float), ctx->stream), loc, "cudaMemsetAsync");
    return;
  }
  checkWorkspace(ctx, loc, "cross_entropy (row losses)", rows * (int64_t)sizeof(double));
  double* rowLoss = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  launch(ctx, loc, "cross_entropy_rows_kernel", cross_entropy_rows_kernel,
         dim3(gridFor(rows, 1, 65535)), dim3(512), 0, logits, targets, rowLoss, rows, vocab,
         ignore_index, ctx->state, locIndex(ctx, loc), vocab % 4 == 0 && aligned16(logits));
  launch(ctx, loc, "cross_entropy_finish_kernel", cross_entropy_finish_kernel, dim3(1),
         dim3(1024), 0, rowLoss, targets, rows, ignore_index, loss);
}

void crossEntropyBwd(Context* ctx, const char* loc, const float* logits, const int32_t* targets,
                     const float* dloss, float* dlogits, int64_t rows, int64_t vocab,
                     int64_t ignore_index) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "cross_entropy_bwd(rows, vocab)", rows, vocab);
  if (rows == 0 || vocab == 0) return;
  checkWorkspace(ctx, loc, "cross_entropy (valid count)", (int64_t)sizeof(double));
  double* valid = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  launch(ctx, loc, "count_valid_kernel", count_valid_kernel, dim3(1), dim3(1024), 0, targets, rows,
         ignore_index, valid);
  launch(ctx, loc, "cross_entropy_bwd_kernel", cross_entropy_bwd_kernel,
         dim3(gridFor(rows, 1, 65535)), dim3(512), 0, logits, targets, dloss, valid, dlogits, rows,
         vocab, ignore_index, ctx->state, locIndex(ctx, loc),
         vocab % 4 == 0 && aligned16(logits, dlogits));
}

void gradNormSq(Context* ctx, const char* loc, const float* g, int64_t n, float* acc) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "grad_norm_sq(n)", n);
  if (n == 0) return;
  const int64_t blocks = normBlocks(n);
  checkWorkspace(ctx, loc, "grad_norm_sq (partials)", blocks * (int64_t)sizeof(double));
  double* part = reinterpret_cast<double*>(ctx->regions[TGRT_WORKSPACE]);
  launch(ctx, loc, "sumsq_partial_kernel", sumsq_partial_kernel, dim3((unsigned)blocks),
         dim3(kBlock), 0, g, n, part, aligned16(g));
  launch(ctx, loc, "sumsq_finish_kernel", sumsq_finish_kernel, dim3(1), dim3(1024), 0, part,
         blocks, acc);
}

void clipScale(Context* ctx, const char* loc, float* acc, float max_norm) {
  checkCtx(ctx, loc);
  launch(ctx, loc, "clip_scale_kernel", clip_scale_kernel, dim3(1), dim3(1), 0, acc, max_norm,
         ctx->state);
}

void adamw(Context* ctx, const char* loc, float* p, const float* g, float* m, float* v, int64_t n,
           float beta1, float beta2, float eps, float weight_decay, const float* clip) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "adamw(n)", n);
  if (ctx->step < 1)
    fail(loc, "adamw: optimizer step %lld must be >= 1 (set with tgrt_set_step)",
         (long long)ctx->step);
  if (n == 0) return;
  const double b1 = beta1, b2 = beta2;
  const double bc1 = 1.0 - std::pow(b1, (double)ctx->step);
  const double bc2 = 1.0 - std::pow(b2, (double)ctx->step);
  const AdamwOp op{p, g, m, v, b1, b2, (double)eps, (double)weight_decay, (double)ctx->lr, bc1,
                   bc2, clip};
  launchElementwise(ctx, loc, "adamw_kernel", op, n, aligned16(p, g, m, v));
}

void reportLoss(Context* ctx, const char* loc, const float* loss) {
  checkCtx(ctx, loc);
  launch(ctx, loc, "report_loss_kernel", report_loss_kernel, dim3(1), dim3(1), 0, loss,
         ctx->state);
}

} // namespace tgrt_cuda
