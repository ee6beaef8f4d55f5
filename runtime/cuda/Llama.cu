// Llama.cu — the CUDA backend of the Llama family's row and elementwise kernels (tgrt.h, "The
// Llama family"): RMSNorm forward / backward, rotary position embeddings (RoPE) and SwiGLU
// forward / backward. Grouped-query attention lives with the other attention kernels
// (Attention.cu, AttentionTf32.cu, AttentionBf16.cu).
//
// Conventions as Kernels.cu: templates on the storage types (float, bf16_t, f16_t; Dtype.cuh),
// float arithmetic, every output rounded once (RNE); 16-byte accesses ("packs" of 4 f32 or 8
// bf16 / f16 elements) where pointers and row lengths allow, else a scalar path with the same
// arithmetic. Reductions have a fixed order that depends only on the sizes (never float
// atomics), so every run gives the same bits.
//
// RMSNorm keeps a row in registers: one warp per row (8 rows per 256-thread block) up to 128
// packs, one 256-thread block per row up to 256 * (32 / W) packs (d <= 8192 for every type);
// wider rows, misaligned tensors and dtype combinations other than "all one type" or "x and
// gamma f32, y bf16 / f16" run the scalar kernels (dtype switch per element). The backward's
// dgamma is a deterministic column sum: each block adds dy * xhat over its rows in registers
// (the warps of a block in order), writes one float32 partial row to the workspace, and a
// second kernel sums the partials in block order (4 * d * blocks bytes, blocks <= 512:
// CudaRuntime.h's workspace notes).
//
// RoPE: a block takes tokens (grid-stride); per token it computes cos and sin of the hd / 2
// angles once (sincosf, full precision; the inverse frequencies come from the host through
// tgrt_rope_inv_freq, bit-identical to the CPU backend's) into shared memory, then rotates the
// pairs of every q and k head of the token (a pack of W pairs from each half per thread) and
// copies the v heads (unless in place).
#include "runtime/cuda/Dtype.cuh"
#include "runtime/cuda/Internal.h"
#include "runtime/cuda/Pdl.cuh"
#include "runtime/cuda/Swiglu.cuh"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <type_traits>

namespace tgrt_cuda {
namespace {

constexpr int kBlock = 256; // threads per block

// ------------------------------------------------------------------ small helpers --

__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

inline bool aligned16(const void* p) { return ((uintptr_t)p & 15u) == 0; }
inline int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Bytes of one element of dt (fails on an unknown dtype).
inline int64_t elemBytes(const char* loc, const char* what, int32_t dt) {
  const int64_t s = tgrt_dtype_size(dt);
  if (s == 0) fail(loc, "%s: unknown dtype %d (expected 0 f32, 1 bf16 or 2 f16)", what, (int)dt);
  return s;
}

template <typename T>
const T* cp(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* mp(void* p) {
  return static_cast<T*>(p);
}

/// Fails when a pointer that the call reads or writes is NULL.
void checkPtrs(const char* loc, const char* what, std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (!p) fail(loc, "%s: NULL pointer argument", what);
}


/// Sum over a pack's W values in a fixed order (pairs, then pairs of pairs).
template <int W>
__device__ __forceinline__ float packSumSq(const float (&f)[W]) {
  float s = (f[0] * f[0] + f[1] * f[1]) + (f[2] * f[2] + f[3] * f[3]);
  if constexpr (W == 8) s = s + ((f[4] * f[4] + f[5] * f[5]) + (f[6] * f[6] + f[7] * f[7]));
  return s;
}
template <int W>
__device__ __forceinline__ float packDot(const float (&f)[W], const float (&g)[W]) {
  float s = (f[0] * g[0] + f[1] * g[1]) + (f[2] * g[2] + f[3] * g[3]);
  if constexpr (W == 8) s = s + ((f[4] * g[4] + f[5] * g[5]) + (f[6] * g[6] + f[7] * g[7]));
  return s;
}

/// Sum of v over the TPR threads that share a row: a warp (TPR 32: shuffles only) or the whole
/// block (TPR == blockDim.x: the warps' sums in order through `red`, 32 floats of shared
/// memory). Every thread of the group gets the sum; the block variant must be reached by every
/// thread of the block.
template <int TPR>
__device__ __forceinline__ float rowSum(float v, float* red) {
  v = warpSum(v);
  if constexpr (TPR == 32) {
    (void)red;
    return v;
  } else {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); // the previous row's readers of red are done
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < TPR / 32; ++w) s += red[w];
    return s;
  }
}

// ------------------------------------------------------------------------ RMSNorm --

// RMSNorm (Zhang & Sennrich 2019) over rows of x [rows, d]:
//   rstd = 1 / sqrt(sum_c x^2 / d + eps),  y = x * rstd * gamma.
// Row in registers: TPR threads per row (32: a warp, 8 rows per block at a time; 256: the
// block), thread tr holds the packs tr, tr + TPR, ... (< d / W), NV of them at most.
template <int TPR, int NV, int W, typename TX, typename TP, typename TY>
__global__ void __launch_bounds__(kBlock)
    rms_norm_fwd_vec_kernel(const TX* __restrict__ x, const TP* __restrict__ gamma,
                            TY* __restrict__ y, float* __restrict__ rstd, int64_t rows,
                            int64_t d, float eps) {
  pdlWait();
  static_assert(TPR == 32 || TPR == kBlock, "a warp or the block per row");
  __shared__ float red[32];
  constexpr int RPB = kBlock / TPR;
  const int tr = threadIdx.x % TPR;
  const int64_t dW = d / W;
  // Rows r0 + group, r0 + group + RPB * gridDim.x, ...: every thread of a row group takes
  // the same trips (the block variant's barriers are reached by all).
  for (int64_t r = (int64_t)blockIdx.x * RPB + threadIdx.x / TPR; r < rows;
       r += (int64_t)gridDim.x * RPB) {
    const TX* xr = x + r * d;
    float v[NV][W];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = tr + (int64_t)TPR * k;
      if (c < dW) {
        ldPack(xr, c, v[k]);
      } else {
#pragma unroll
        for (int j = 0; j < W; ++j) v[k][j] = 0.0f;
      }
      s += packSumSq(v[k]);
    }
    const float ms = rowSum<TPR>(s, red) / (float)d;
    const float rs = 1.0f / sqrtf(ms + eps);
    TY* yr = y + r * d;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = tr + (int64_t)TPR * k;
      if (c < dW) {
        float g[W], o[W];
        ldPack(gamma, c, g);
#pragma unroll
        for (int j = 0; j < W; ++j) o[j] = v[k][j] * rs * g[j];
        stPack(yr, c, o);
      }
    }
    if (tr == 0) rstd[r] = rs;
  }
}

// The same through runtime-typed accessors, one warp per row (any dtypes, any d, any
// alignment): sum of squares, then y.
__global__ void rms_norm_fwd_kernel(LdDyn x, LdDyn gamma, StDyn y, float* __restrict__ rstd,
                                    int64_t rows, int64_t d, float eps) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const int64_t o = r * d;
    float s = 0.0f;
    for (int64_t c = lane; c < d; c += 32) {
      const float xc = x(o + c);
      s += xc * xc;
    }
    const float ms = warpSum(s) / (float)d;
    const float rs = 1.0f / sqrtf(ms + eps);
    for (int64_t c = lane; c < d; c += 32) y(o + c, x(o + c) * rs * gamma(c));
    if (lane == 0) rstd[r] = rs;
  }
}

/// Blocks per SM that rms_norm_bwd_vec_kernel asks for (its __launch_bounds__), by the values
/// a thread holds per row (NV * W): 4 (at most 64 registers) up to 8 values, else 2 (128).
/// The grid is at most kRmsMaxParts = 512 blocks, so with 4 per SM (528 on a 132-SM H100 /
/// H200) every block is resident at once; with 2, Llama 3.2 1B's rows (d 2048, a block per
/// row, 8 values per thread) ran in two waves. Measured no faster: 0.0761 against 0.0770 ms
/// per call (268 MB, 3.5 TB/s), the step within its spread (H200, 2026-12-03,
/// bench/results/2026-12-03-h200/s21/call1), so that kernel is not bound by its blocks in
/// flight. The same blocks and rows either way: the same bits.
constexpr int rmsBwdBlocksPerSm(int valuesPerThread) { return valuesPerThread <= 8 ? 4 : 2; }

// RMSNorm backward, rows in registers (the layout of rms_norm_fwd_vec_kernel):
//   xhat = x * rstd,  g = dy * gamma,  dx = rstd * (g - xhat * sum_c(g * xhat) / d),
// and this block's share of dgamma = sum_r dy * xhat: each thread adds dy * xhat of its packs
// over its rows (in row order) in registers; at the end the block's row groups are added in
// order (TPR 32: warps 0..7 through shared memory) into part[blockIdx.x, :] (float32).
// At most 128 registers (2 blocks per SM; the f32 rows of 8 packs per thread asked for 140), or
// 64 (4 blocks per SM) at up to 8 values per thread (rmsBwdBlocksPerSm).
// ACC (tgrt_rms_norm_bwd_acc): dx is the residual stream's gradient, read and written:
// dx = round_TX(dx + round_TX(dx_norm)), the sum of tgrt_add_mixed (an add the compiler may
// not contract with dx_norm's last product: with f32 TX an FMA changed its bits, 2026-11-29,
// kernel check on the H200); with LOW the rounded sum
// also goes to low (TL), the next GEMM's input. The residual gradient's packs are loaded
// after the row's sum, all at once up to 3 packs, else each at its store (kept from the first
// loop they would take NV * W more registers than the 128 allow).
// low may be dy itself (tgrt_rms_norm_bwd_acc's in-place copy): a thread reads its packs of
// dy in the first loop and writes the same packs of low after the row's sum; dy and low are
// therefore not __restrict__ (no dy load may be moved or repeated after a store to low).
template <int TPR, int NV, int W, typename TDY, typename TX, typename TP, bool ACC = false,
          bool LOW = false, typename TL = TX>
__global__ void __launch_bounds__(kBlock, rmsBwdBlocksPerSm(NV * W))
    rms_norm_bwd_vec_kernel(const TDY* dy, const TX* __restrict__ x,
                            const TP* __restrict__ gamma, const float* __restrict__ rstd,
                            TX* __restrict__ dx, float* __restrict__ part, int64_t rows,
                            int64_t d, TL* low = nullptr) {
  pdlWait();
  static_assert(ACC || !LOW, "the low copy is of the accumulated residual gradient");
  static_assert(TPR == 32 || TPR == kBlock, "a warp or the block per row");
  constexpr int RPB = kBlock / TPR;
  __shared__ float red[32];
  __shared__ float sp[RPB > 1 ? RPB : 1][RPB > 1 ? TPR * W : 1];
  const int tr = threadIdx.x % TPR, grp = threadIdx.x / TPR;
  const int64_t dW = d / W;
  float dg[NV][W];
#pragma unroll
  for (int k = 0; k < NV; ++k)
#pragma unroll
    for (int j = 0; j < W; ++j) dg[k][j] = 0.0f;
  for (int64_t r = (int64_t)blockIdx.x * RPB + grp; r < rows; r += (int64_t)gridDim.x * RPB) {
    const float rs = rstd[r];
    float xh[NV][W], dv[NV][W];
    float sgx = 0.0f;
    // Every pack's loads are issued before any of them is used (as layer_norm_bwd_fused_kernel,
    // Kernels.cu), up to 24 values per thread (kHoist; beyond, the registers spill): a
    // thread's packs past the row read the row's first pack and count as zeros. Loads guarded
    // by c < dW had put each pack's latency after the previous pack's.
    constexpr bool kHoist = NV * W <= 24;
    if constexpr (kHoist) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int64_t c = tr + (int64_t)TPR * k, cl = c < dW ? c : 0;
        ldPack(x + r * d, cl, xh[k]);
        ldPack(dy + r * d, cl, dv[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = tr + (int64_t)TPR * k;
      const bool in = c < dW;
      float g[W];
      if (kHoist || in) {
        float gm[W];
        if constexpr (!kHoist) {
          ldPack(x + r * d, c, xh[k]);
          ldPack(dy + r * d, c, dv[k]);
        }
        ldPack(gamma, in ? c : 0, gm);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          xh[k][j] = in ? xh[k][j] * rs : 0.0f;
          dv[k][j] = in ? dv[k][j] : 0.0f;
          g[j] = in ? dv[k][j] * gm[j] : 0.0f;
          if (in) dg[k][j] += dv[k][j] * xh[k][j];
        }
      } else {
#pragma unroll
        for (int j = 0; j < W; ++j) xh[k][j] = dv[k][j] = g[j] = 0.0f;
      }
      sgx += packDot(g, xh[k]);
    }
    const float meanGX = rowSum<TPR>(sgx, red) / (float)d;
    // ACC at up to 3 packs: the residual gradient's packs loaded together before the first
    // store (24 more registers at W 8; more would spill under the 128 of two blocks per SM).
    constexpr bool kHoistPrev = ACC && NV <= 3;
    float pva[kHoistPrev ? NV : 1][W];
    if constexpr (kHoistPrev) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int64_t c = tr + (int64_t)TPR * k;
        ldPack(dx + r * d, c < dW ? c : 0, pva[kHoistPrev ? k : 0]);
      }
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = tr + (int64_t)TPR * k;
      if (c < dW) {
        float gm[W], o[W];
        ldPack(gamma, c, gm);
#pragma unroll
        for (int j = 0; j < W; ++j) o[j] = rs * (dv[k][j] * gm[j] - xh[k][j] * meanGX);
        if constexpr (ACC) {
          float pv[W];
          if constexpr (kHoistPrev) {
#pragma unroll
            for (int j = 0; j < W; ++j) pv[j] = pva[kHoistPrev ? k : 0][j];
          } else {
            ldPack(dx + r * d, c, pv);
          }
          packAccRound<TX>(pv, o);
        }
        stPack(dx + r * d, c, o);
        if constexpr (LOW) stPack(low + r * d, c, o);
      }
    }
  }
  float* pr = part + (int64_t)blockIdx.x * d;
  if constexpr (RPB == 1) {
    // One row group: this thread's columns are its own.
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int64_t c = tr + (int64_t)TPR * k;
      if (c < dW) {
#pragma unroll
        for (int j = 0; j < W; ++j) pr[c * W + j] = dg[k][j];
      }
    }
  } else {
    // Pack slot k of every row group (warp), the groups added in order.
#pragma unroll
    for (int k = 0; k < NV; ++k) {
#pragma unroll
      for (int j = 0; j < W; ++j) sp[grp][tr * W + j] = dg[k][j];
      __syncthreads();
      for (int e = threadIdx.x; e < TPR * W; e += kBlock) {
        const int64_t col = (int64_t)TPR * W * k + e; // = (tr' + TPR k) * W + j'
        if (col < d) {
          float s = 0.0f;
#pragma unroll
          for (int w = 0; w < RPB; ++w) s += sp[w][e];
          pr[col] = s;
        }
      }
      __syncthreads();
    }
  }
}

// dx of the scalar RMSNorm backward (runtime-typed accessors), one warp per row. With
// `acc` (tgrt_rms_norm_bwd_acc: dx.p is the residual stream's gradient) the rounded dx is
// added into it, dx = round(dx + round(dx_norm)), and `low` (when low.p) gets the sum.
__global__ void rms_norm_bwd_dx_kernel(LdDyn dy, LdDyn x, LdDyn gamma,
                                       const float* __restrict__ rstd, StDyn dx, int64_t rows,
                                       int64_t d, bool acc, StDyn low) {
  pdlWait();
  const int lane = threadIdx.x & 31;
  const int64_t warpsPerGrid = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warpsPerGrid) {
    const int64_t o = r * d;
    const float rs = rstd[r];
    float sgx = 0.0f;
    for (int64_t c = lane; c < d; c += 32) sgx += dy(o + c) * gamma(c) * (x(o + c) * rs);
    const float meanGX = warpSum(sgx) / (float)d;
    for (int64_t c = lane; c < d; c += 32) {
      float v = rs * (dy(o + c) * gamma(c) - (x(o + c) * rs) * meanGX);
      if (acc)
        v = StAccDyn{dx.p, dx.dt}.add(o + c, v);
      else
        dx(o + c, v);
      if (low.p) low(o + c, v);
    }
  }
}

// dgamma partials of the scalar backward: part[chunk, c] = sum over the chunk's rows of
// dy[r, c] * x[r, c] * rstd[r]. Block (32, 8): threadIdx.x picks the column, threadIdx.y the
// rows r0 + y, r0 + y + 8, ...; the 8 row lanes are then added in order.
// grid = (ceil(d / 32), chunks).
__global__ void rms_norm_col_partials_kernel(LdDyn dy, LdDyn x, const float* __restrict__ rstd,
                                             float* __restrict__ part, int64_t rows, int64_t d,
                                             int64_t rowsPerChunk) {
  pdlWait();
  __shared__ float s[8][33];
  const int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rowsPerChunk;
  const int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  float a = 0.0f;
  if (c < d)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
      a += dy(r * d + c) * (x(r * d + c) * rstd[r]);
  s[threadIdx.y][threadIdx.x] = a;
  __syncthreads();
  if (threadIdx.y == 0 && c < d) {
    float t = 0.0f;
    for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
    part[chunk * d + c] = t;
  }
}

// dgamma[c] = the sum over k < nPart of part[k, c]. A block of 256 threads takes 16 columns:
// row lane ty < 16 of column c adds parts ty, ty + 16, ... in order (float), then the 16 lane
// sums are added in lane order (an order fixed by nPart alone: the same bits on every device
// and every run). It was one thread per column adding all nPart (<= 512) parts in sequence,
// d / 256 blocks waiting on one L2 load after another: the whole backward took 0.078 ms at
// SmolLM2's 16384 x 576 and 0.096 at Llama 3.2 1B's 8192 x 2048, about 0.054 ms over what
// its bytes take at either size (H200 profiles, 2026-11-29, docs/results.md).
constexpr int kDgCols = 16, kDgLanes = kBlock / kDgCols;
__global__ void __launch_bounds__(kBlock)
    rms_norm_dgamma_kernel(const float* __restrict__ part, StDyn dgamma, int64_t nPart,
                           int64_t d) {
  pdlWait();
  __shared__ float s[kDgLanes][kDgCols + 1];
  const int tx = threadIdx.x % kDgCols, ty = threadIdx.x / kDgCols;
  const int64_t c = (int64_t)blockIdx.x * kDgCols + tx;
  float a = 0.0f;
  if (c < d)
    for (int64_t k = ty; k < nPart; k += kDgLanes) a += part[k * d + c];
  s[ty][tx] = a;
  __syncthreads();
  if (ty == 0 && c < d) {
    float t = 0.0f;
#pragma unroll
    for (int l = 0; l < kDgLanes; ++l) t += s[l][tx];
    dgamma(c, t);
  }
}

/// Most partial rows of dgamma (blocks of the register backward, chunks of the scalar one).
constexpr int64_t kRmsMaxParts = 512;

/// Threads per row and packs per thread of the register kernels for d / W packs (P); false
/// when the row does not fit (at most 32 / W * ... floats per thread: NV * W <= 32).
/// A warp per row takes 3 packs per lane too: SmolLM2's d 576 (72 packs of 8) keeps 75% of
/// its lanes' packs busy instead of 56% at 4, with 8 floats per array fewer in registers; the
/// pack a lane holds (lane + 32 k) and so every sum's order are those of 4 packs.
bool rmsShape(int64_t P, int W, int& tpr, int& nv) {
  const int maxNv = 32 / W; // 8 (f32) or 4 (2-byte types)
  for (int n : {1, 2, 3, 4, 8}) {
    if (n > maxNv) break;
    if (P <= 32 * n) {
      tpr = 32;
      nv = n;
      return true;
    }
  }
  for (int n : {1, 2, 4, 8}) {
    if (n > maxNv) break;
    if (P <= kBlock * n) {
      tpr = kBlock;
      nv = n;
      return true;
    }
  }
  return false;
}

/// The typed combinations with register kernels: all one type, or x and gamma f32 with y (dy)
/// bf16 / f16 (mixed precision: the f32 residual stream normalised into a bf16 GEMM input).
/// Calls f(TX{}, TP{}, TY{}) and returns true for those.
template <typename F>
bool withRmsTypes(int32_t x_dt, int32_t p_dt, int32_t y_dt, F&& f) {
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

/// Calls f(std::integral_constant<int, TPR>, std::integral_constant<int, NV>) for the runtime
/// (tpr, nv) that rmsShape chose (with W, the compiled combinations: NV * W <= 32).
template <int W, typename F>
void withRmsShape(int tpr, int nv, F&& f) {
  using std::integral_constant;
  if (tpr == 32) {
    switch (nv) {
    case 1: f(integral_constant<int, 32>{}, integral_constant<int, 1>{}); return;
    case 2: f(integral_constant<int, 32>{}, integral_constant<int, 2>{}); return;
    case 3: f(integral_constant<int, 32>{}, integral_constant<int, 3>{}); return;
    case 4: f(integral_constant<int, 32>{}, integral_constant<int, 4>{}); return;
    default:
      if constexpr (W == 4) f(integral_constant<int, 32>{}, integral_constant<int, 8>{});
      return;
    }
  }
  switch (nv) {
  case 1: f(integral_constant<int, kBlock>{}, integral_constant<int, 1>{}); return;
  case 2: f(integral_constant<int, kBlock>{}, integral_constant<int, 2>{}); return;
  case 4: f(integral_constant<int, kBlock>{}, integral_constant<int, 4>{}); return;
  default:
    if constexpr (W == 4) f(integral_constant<int, kBlock>{}, integral_constant<int, 8>{});
    return;
  }
}

// --------------------------------------------------------------------------- RoPE --

/// The inverse frequencies of pairs i < hd / 2 (tgrt_rope_inv_freq, computed on the host),
/// passed to the kernel by value.
constexpr int kRopeMaxHalf = 256; // hd <= 512
struct RopeFreqs {
  float f[kRopeMaxHalf];
};

// Rotary position embedding on x [tokens, nRot + nCopy heads, hd] (tokens = batch * t, token
// tok at position tok % t): heads n < nRot rotate their pairs (i, i + hd/2),
//   y_i = x_i c - sign x_{i+hd/2} s,   y_{i+hd/2} = x_{i+hd/2} c + sign x_i s,
// with a = p * invFreq[i] (float product), c, s = cos a, sin a (sincosf, full precision), and
// the nCopy v heads are copied (not when y == x). Each element is read and written by one
// thread, so y may equal x.
// Packs (16-byte aligned halves of whole packs): one thread per (token, unit of W pairs,
// group of kRopeHeads heads), over the whole tensor (grid-stride): it computes its W pairs'
// sincosf once and rotates them in each head of its group (independent loads, all in
// flight). (A block per token with the token's c, s shared through shared memory left most
// threads idle: SmolLM2's 12 rotated heads of hd 64 are 48 units for 256 threads, 0.032 ms
// per call for 16384 x 960 bf16; a thread per (token, head, unit) took 0.025 there but
// 0.045 ms at Llama 3.2 1B's 40 rotated heads, 8192 x 3072, against 0.035, the sincosf
// recomputed for every head. H200, 2026-11-29, docs/results.md.)
constexpr int kRopeHeads = 4;
template <int W, typename T>
__global__ void __launch_bounds__(kBlock)
    rope_vec_kernel(const T* x, T* y, int64_t tokens, int64_t t, int nRot, int nCopy, int hd,
                    float sign, RopeFreqs fr) {
  pdlWait();
  const int half = hd / 2;
  const int units = half / W; // per head
  const int groups = (nRot + kRopeHeads - 1) / kRopeHeads;
  const int64_t items = (int64_t)groups * units; // per token
  const int64_t rowLen = (int64_t)(nRot + nCopy) * hd;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < tokens * items;
       g += stride) {
    const int64_t tok = g / items;
    const int it = (int)(g - tok * items);
    const int grp = it / units, u = it % units;
    const float p = (float)(tok % t);
    float cv[W], sv[W];
#pragma unroll
    for (int j = 0; j < W; ++j) sincosf(p * fr.f[u * W + j], &sv[j], &cv[j]);
    const int64_t row = tok * rowLen;
    // Every head's loads first, then the rotations and stores (y may be x, so the compiler may
    // not move a store above a later head's loads itself). Each element is read and written by
    // this thread only, so loading them all before any store is exact in place too. Measured
    // against head-by-head loads: 0.0284 against 0.0290 ms per call at Llama 3.2 1B, within
    // the spread (H200, 2026-12-03, s21 call1); 2, 5 or 8 heads per thread were no better.
    float a[kRopeHeads][W], b[kRopeHeads][W];
#pragma unroll
    for (int q = 0; q < kRopeHeads; ++q) {
      const int n = grp * kRopeHeads + q;
      const int64_t o = row + (int64_t)(n < nRot ? n : 0) * hd;
      ldPack(x + o, u, a[q]);
      ldPack(x + o + half, u, b[q]);
    }
#pragma unroll
    for (int q = 0; q < kRopeHeads; ++q) {
      const int n = grp * kRopeHeads + q;
      if (n >= nRot) break;
      const int64_t o = row + (int64_t)n * hd;
      float ya[W], yb[W];
#pragma unroll
      for (int j = 0; j < W; ++j) {
        ya[j] = a[q][j] * cv[j] - sign * (b[q][j] * sv[j]);
        yb[j] = b[q][j] * cv[j] + sign * (a[q][j] * sv[j]);
      }
      stPack(y + o, u, ya);
      stPack(y + o + half, u, yb);
    }
  }
  if (x != y) {
    // The v heads: whole 16-byte words (the halves are whole packs, so is a head).
    constexpr int kPer = (int)(16 / sizeof(T));
    const int64_t words = (int64_t)nCopy * hd / kPer;
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < tokens * words;
         g += stride) {
      const int64_t tok = g / words, w = g - tok * words;
      const int64_t o = tok * rowLen + (int64_t)nRot * hd + w * kPer;
      store16(y + o, load16(x + o));
    }
  }
}

// The same element by element (any alignment, any hd): a block takes tokens (grid-stride),
// thread i < hd/2 computes pair i's c, s into shared memory, then the block's threads take
// (head, pair) items.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    rope_kernel(const T* x, T* y, int64_t tokens, int64_t t, int nRot, int nCopy, int hd,
                float sign, RopeFreqs fr) {
  pdlWait();
  __shared__ float cs[kRopeMaxHalf], sn[kRopeMaxHalf];
  const int half = hd / 2;
  const int tid = threadIdx.x;
  const float inv = tid < half ? fr.f[tid] : 0.0f;
  const int64_t rowLen = (int64_t)(nRot + nCopy) * hd;
  const int items = nRot * half;
  for (int64_t tok = blockIdx.x; tok < tokens; tok += gridDim.x) {
    const float p = (float)(tok % t);
    if (tid < half) {
      float s, c;
      sincosf(p * inv, &s, &c);
      cs[tid] = c;
      sn[tid] = s;
    }
    __syncthreads();
    const int64_t row = tok * rowLen;
    for (int it = tid; it < items; it += blockDim.x) {
      const int n = it / half, i = it % half;
      const int64_t o = row + (int64_t)n * hd + i;
      const float a = toF(x[o]), b = toF(x[o + half]);
      const float c = cs[i], s = sn[i];
      y[o] = fromF<T>(a * c - sign * (b * s));
      y[o + half] = fromF<T>(b * c + sign * (a * s));
    }
    if (x != y) {
      const int64_t o = row + (int64_t)nRot * hd;
      for (int e = tid; e < nCopy * hd; e += blockDim.x) y[o + e] = x[o + e];
    }
    __syncthreads(); // cs, sn are rewritten for the next token
  }
}

// ------------------------------------------------------------------------- SwiGLU --

// SwiGLU (Shazeer 2020) on x [rows, 2f] = [gate | up]: y [rows, f] = silu(gate) * up,
// silu(g) = g / (1 + exp(-g)) = g * sigmoid(g). Backward with s = sigmoid(gate):
//   dgate = dy * up * s * (1 + gate (1 - s)),  dup = dy * gate * s,  dx = [dgate | dup].
// Grid: x over the columns (packs when `vec`: 16-byte aligned tensors, f a multiple of the
// pack width), y over the rows (grid-stride); no per-element division.
// sigmoidF and swigluGrad: Swiglu.cuh (shared with the own GEMM's SwiGLU-backward epilogue).

template <int W, typename T>
__global__ void swiglu_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                  int64_t f, bool vec) {
  pdlWait();
  const int64_t units = vec ? f / W : f;
  const int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= units) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* xr = x + r * 2 * f;
    T* yr = y + r * f;
    if (vec) {
      float g[W], up[W], o[W];
      ldPack(xr, u, g);
      ldPack(xr + f, u, up);
#pragma unroll
      for (int j = 0; j < W; ++j) o[j] = g[j] * sigmoidF(g[j]) * up[j];
      stPack(yr, u, o);
    } else {
      const float g = toF(xr[u]), up = toF(xr[f + u]);
      yr[u] = fromF<T>(g * sigmoidF(g) * up);
    }
  }
}

template <int W, typename T>
__global__ void swiglu_bwd_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                  T* __restrict__ dx, int64_t rows, int64_t f, bool vec) {
  pdlWait();
  const int64_t units = vec ? f / W : f;
  const int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= units) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* xr = x + r * 2 * f;
    const T* dyr = dy + r * f;
    T* dxr = dx + r * 2 * f;
    if (vec) {
      float g[W], up[W], d[W], dg[W], du[W];
      ldPack(xr, u, g);
      ldPack(xr + f, u, up);
      ldPack(dyr, u, d);
#pragma unroll
      for (int j = 0; j < W; ++j) swigluGrad(g[j], up[j], d[j], dg[j], du[j]);
      stPack(dxr, u, dg);
      stPack(dxr + f, u, du);
    } else {
      float dg, du;
      swigluGrad(toF(xr[u]), toF(xr[f + u]), toF(dyr[u]), dg, du);
      dxr[u] = fromF<T>(dg);
      dxr[f + u] = fromF<T>(du);
    }
  }
}

/// Grid of the SwiGLU kernels: x over `units` columns (256 per block), y over the rows (at
/// most 65535, grid-stride), about 16384 blocks in all at most.
dim3 swigluGrid(int64_t units, int64_t rows) {
  const int64_t gx = (units + kBlock - 1) / kBlock;
  int64_t gy = 16384 / (gx > 0 ? gx : 1);
  if (gy < 1) gy = 1;
  if (gy > rows) gy = rows;
  if (gy > 65535) gy = 65535;
  return dim3((unsigned)gx, (unsigned)(gy > 0 ? gy : 1));
}

} // namespace

// ------------------------------------------------------------------ host functions --

void rmsNormFwd(Context* ctx, const char* loc, int32_t x_dt, const void* x, int32_t p_dt,
                const void* gamma, int32_t y_dt, void* y, float* rstd, int64_t rows, int64_t d,
                float eps) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "rms_norm_fwd(rows, d)", rows, d);
  elemBytes(loc, "rms_norm_fwd (x)", x_dt);
  elemBytes(loc, "rms_norm_fwd (gamma)", p_dt);
  elemBytes(loc, "rms_norm_fwd (y)", y_dt);
  if (rows == 0) return;
  if (d == 0) fail(loc, "rms_norm_fwd: d must be > 0");
  checkPtrs(loc, "rms_norm_fwd", {x, gamma, y, rstd});
  bool done = false;
  withRmsTypes(x_dt, p_dt, y_dt, [&](auto tx, auto tp, auto ty) {
    using TX = decltype(tx);
    using TP = decltype(tp);
    using TY = decltype(ty);
    constexpr int W = packWidth<TX, TP, TY>();
    int tpr = 0, nv = 0;
    if (d % W != 0 || !aligned16(x) || !aligned16(gamma) || !aligned16(y) ||
        !rmsShape(d / W, W, tpr, nv))
      return;
    withRmsShape<W>(tpr, nv, [&](auto tprC, auto nvC) {
      constexpr int TPR = decltype(tprC)::value, NV = decltype(nvC)::value;
      launchDependent(ctx, loc, "rms_norm_fwd_vec_kernel",
                      rms_norm_fwd_vec_kernel<TPR, NV, W, TX, TP, TY>,
                      dim3(gridFor(rows, kBlock / TPR)), dim3(kBlock), 0, cp<TX>(x), cp<TP>(gamma),
                      mp<TY>(y), rstd, rows, d, eps);
      done = true;
    });
  });
  if (!done)
    launchDependent(ctx, loc, "rms_norm_fwd_kernel", rms_norm_fwd_kernel, dim3(gridFor(rows, 8)),
                    dim3(kBlock), 0, LdDyn{x, x_dt}, LdDyn{gamma, p_dt}, StDyn{y, y_dt}, rstd, rows,
                    d, eps);
}

namespace {
/// rmsNormBwd and rmsNormBwdAcc: with `acc`, dx is the residual stream's gradient the norm's
/// input gradient is added into (and low, when not NULL, its low_dt copy).
void rmsNormBwdImpl(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                    const void* x, int32_t p_dt, const void* gamma, const float* rstd, void* dx,
                    int32_t low_dt, void* low, void* dgamma, int64_t rows, int64_t d,
                    bool acc) {
  const char* what = acc ? "rms_norm_bwd_acc" : "rms_norm_bwd";
  checkCtx(ctx, loc);
  checkNonNegative(loc, acc ? "rms_norm_bwd_acc(rows, d)" : "rms_norm_bwd(rows, d)", rows, d);
  elemBytes(loc, "rms_norm_bwd (dy)", y_dt);
  elemBytes(loc, "rms_norm_bwd (x, dx)", x_dt);
  const int64_t pes = elemBytes(loc, "rms_norm_bwd (gamma, dgamma)", p_dt);
  if (low) elemBytes(loc, "rms_norm_bwd_acc (low)", low_dt);
  checkLowCopy(loc, "rms_norm_bwd_acc", dy, y_dt, low, low_dt, rows * d);
  if (d == 0) return;
  checkPtrs(loc, what, {dgamma});
  if (rows == 0) { // dgamma = the empty sum
    check(cudaMemsetAsync(dgamma, 0, (size_t)(d * pes), ctx->stream), loc, "cudaMemsetAsync");
    return;
  }
  checkPtrs(loc, what, {dy, x, gamma, rstd, dx});
  float* part = reinterpret_cast<float*>(ctx->regions[TGRT_WORKSPACE]);
  int64_t nPart = 0;
  withRmsTypes(x_dt, p_dt, y_dt, [&](auto tx, auto tp, auto ty) {
    using TX = decltype(tx);
    using TP = decltype(tp);
    using TY = decltype(ty);
    constexpr int W = packWidth<TX, TP, TY>();
    int tpr = 0, nv = 0;
    // The register kernel's low copy has dy's type (mixed precision's bf16 / f16 GEMM input).
    if (d % W != 0 || !aligned16(dy) || !aligned16(x) || !aligned16(gamma) || !aligned16(dx) ||
        (low && (low_dt != y_dt || !aligned16(low))) || !rmsShape(d / W, W, tpr, nv))
      return;
    const int64_t rpb = kBlock / tpr;
    int64_t blocks = (rows + rpb - 1) / rpb;
    if (blocks > kRmsMaxParts) blocks = kRmsMaxParts;
    checkWorkspace(ctx, loc, "rms_norm_bwd (dgamma partials)",
                   align256(blocks * d * (int64_t)sizeof(float)));
    withRmsShape<W>(tpr, nv, [&](auto tprC, auto nvC) {
      constexpr int TPR = decltype(tprC)::value, NV = decltype(nvC)::value;
      const dim3 grid((unsigned)blocks), block(kBlock);
      if (!acc)
        launchDependent(ctx, loc, "rms_norm_bwd_vec_kernel",
                        rms_norm_bwd_vec_kernel<TPR, NV, W, TY, TX, TP>, grid, block, 0, cp<TY>(dy),
                        cp<TX>(x), cp<TP>(gamma), rstd, mp<TX>(dx), part, rows, d, (TX*)nullptr);
      else if (!low)
        launchDependent(ctx, loc, "rms_norm_bwd_vec_kernel",
                        rms_norm_bwd_vec_kernel<TPR, NV, W, TY, TX, TP, true>, grid, block, 0,
                        cp<TY>(dy), cp<TX>(x), cp<TP>(gamma), rstd, mp<TX>(dx), part, rows, d,
                        (TX*)nullptr);
      else
        launchDependent(ctx, loc, "rms_norm_bwd_vec_kernel",
                        rms_norm_bwd_vec_kernel<TPR, NV, W, TY, TX, TP, true, true, TY>, grid,
                        block, 0, cp<TY>(dy), cp<TX>(x), cp<TP>(gamma), rstd, mp<TX>(dx), part,
                        rows, d, mp<TY>(low));
      nPart = blocks;
    });
  });
  if (nPart == 0) { // the scalar kernels: dx, then the column partials of dgamma
    int64_t per = (rows + kRmsMaxParts - 1) / kRmsMaxParts;
    if (per < 32) per = 32;
    nPart = (rows + per - 1) / per;
    checkWorkspace(ctx, loc, "rms_norm_bwd (dgamma partials)",
                   align256(nPart * d * (int64_t)sizeof(float)));
    if ((d + 31) / 32 > 0x7fffffff) fail(loc, "rms_norm_bwd: d too large");
    // The partials first: they read dy, which the dx kernel may overwrite (low == dy).
    launchDependent(ctx, loc, "rms_norm_col_partials_kernel", rms_norm_col_partials_kernel,
                    dim3((unsigned)((d + 31) / 32), (unsigned)nPart), dim3(32, 8), 0,
                    LdDyn{dy, y_dt}, LdDyn{x, x_dt}, rstd, part, rows, d, per);
    launchDependent(ctx, loc, "rms_norm_bwd_dx_kernel", rms_norm_bwd_dx_kernel,
                    dim3(gridFor(rows, 8)), dim3(kBlock), 0, LdDyn{dy, y_dt}, LdDyn{x, x_dt},
                    LdDyn{gamma, p_dt}, rstd, StDyn{dx, x_dt}, rows, d, acc, StDyn{low, low_dt});
  }
  if ((d + kDgCols - 1) / kDgCols > 0x7fffffff) fail(loc, "rms_norm_bwd: d too large");
  launchDependent(ctx, loc, "rms_norm_dgamma_kernel", rms_norm_dgamma_kernel,
                  dim3((unsigned)((d + kDgCols - 1) / kDgCols)), dim3(kBlock), 0,
                  (const float*)part, StDyn{dgamma, p_dt}, nPart, d);
}
} // namespace

void rmsNormBwd(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                const void* x, int32_t p_dt, const void* gamma, const float* rstd, void* dx,
                void* dgamma, int64_t rows, int64_t d) {
  rmsNormBwdImpl(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, rstd, dx, TGRT_F32, nullptr, dgamma,
                 rows, d, false);
}

void rmsNormBwdAcc(Context* ctx, const char* loc, int32_t y_dt, const void* dy, int32_t x_dt,
                   const void* x, int32_t p_dt, const void* gamma, const float* rstd,
                   void* dres, int32_t low_dt, void* low, void* dgamma, int64_t rows,
                   int64_t d) {
  rmsNormBwdImpl(ctx, loc, y_dt, dy, x_dt, x, p_dt, gamma, rstd, dres, low_dt, low, dgamma, rows,
                 d, true);
}

void rope(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t batch,
          int64_t t, int64_t heads, int64_t kv_heads, int64_t hd, float theta,
          const float* scaling, int32_t sign) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "rope(batch, t, heads, kv_heads)", batch, t, heads, kv_heads);
  checkNonNegative(loc, "rope(hd)", hd);
  const int64_t es = elemBytes(loc, "rope", dt);
  if (hd % 2 != 0) fail(loc, "rope: head dim %lld is odd", (long long)hd);
  if (sign != 1 && sign != -1) fail(loc, "rope: sign %d is not +1 or -1", (int)sign);
  if (!(theta > 0.0f)) fail(loc, "rope: theta %g is not > 0", (double)theta);
  // scaling: host memory (4 floats of the model's configuration, like loc), read here.
  if (scaling && scaling[0] > 0.0f &&
      !(scaling[1] > 0.0f && scaling[2] > scaling[1] && scaling[3] > 0.0f))
    fail(loc,
         "rope: scaling {factor %g, low_freq_factor %g, high_freq_factor %g, "
         "original_context %g} needs 0 < low_freq_factor < high_freq_factor and "
         "original_context > 0",
         (double)scaling[0], (double)scaling[1], (double)scaling[2], (double)scaling[3]);
  const int64_t nh = heads + 2 * kv_heads, half = hd / 2;
  if (batch * t * nh * hd == 0) return;
  checkPtrs(loc, "rope", {x, y});
  if (half > kRopeMaxHalf)
    fail(loc, "rope: head dim %lld is not supported on CUDA (at most %d)", (long long)hd,
         2 * kRopeMaxHalf);
  if (heads + kv_heads > 0x7fffffff / hd || nh > 0x7fffffff / hd)
    fail(loc, "rope: heads * hd too large");
  if (x != y) {
    const char* xb = static_cast<const char*>(x);
    const char* yb = static_cast<const char*>(y);
    const int64_t bytes = batch * t * nh * hd * es;
    if (xb < yb + bytes && yb < xb + bytes)
      fail(loc, "rope: y overlaps x without being equal to it");
  }
  RopeFreqs fr;
  for (int64_t i = 0; i < half; ++i) fr.f[i] = tgrt_rope_inv_freq(i, hd, theta, scaling);
  for (int64_t i = half; i < kRopeMaxHalf; ++i) fr.f[i] = 0.0f;
  const int64_t tokens = batch * t;
  withDtype(loc, "rope", dt, [&](auto tag) {
    using T = decltype(tag);
    constexpr int W = packWidth<T>();
    const bool vec = half % W == 0 && aligned16(x) && aligned16(y);
    if (vec) {
      const int64_t units =
          tokens * ((heads + kv_heads + kRopeHeads - 1) / kRopeHeads) * (half / W);
      launchDependent(ctx, loc, "rope_vec_kernel", rope_vec_kernel<W, T>,
                      dim3(gridFor(units, kBlock)), dim3(kBlock), 0, cp<T>(x), mp<T>(y), tokens, t,
                      (int)(heads + kv_heads), (int)kv_heads, (int)hd, (float)sign, fr);
    } else {
      launchDependent(ctx, loc, "rope_kernel", rope_kernel<T>, dim3(gridFor(tokens, 1, 8192)),
                      dim3(kBlock), 0, cp<T>(x), mp<T>(y), tokens, t, (int)(heads + kv_heads),
                      (int)kv_heads, (int)hd, (float)sign, fr);
    }
  });
}

void swigluFwd(Context* ctx, const char* loc, int32_t dt, const void* x, void* y, int64_t rows,
               int64_t f) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "swiglu_fwd(rows, f)", rows, f);
  elemBytes(loc, "swiglu_fwd", dt);
  if (rows * f == 0) return;
  checkPtrs(loc, "swiglu_fwd", {x, y});
  withDtype(loc, "swiglu_fwd", dt, [&](auto tag) {
    using T = decltype(tag);
    constexpr int W = packWidth<T>();
    const bool vec = f % W == 0 && aligned16(x) && aligned16(y);
    const int64_t units = vec ? f / W : f;
    if ((units + kBlock - 1) / kBlock > 0x7fffffff) fail(loc, "swiglu_fwd: f too large");
    launchDependent(ctx, loc, "swiglu_fwd_kernel", swiglu_fwd_kernel<W, T>, swigluGrid(units, rows),
                    dim3(kBlock), 0, cp<T>(x), mp<T>(y), rows, f, vec);
  });
}

void swigluBwd(Context* ctx, const char* loc, int32_t dt, const void* x, const void* dy,
               void* dx, int64_t rows, int64_t f) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "swiglu_bwd(rows, f)", rows, f);
  elemBytes(loc, "swiglu_bwd", dt);
  if (rows * f == 0) return;
  checkPtrs(loc, "swiglu_bwd", {x, dy, dx});
  withDtype(loc, "swiglu_bwd", dt, [&](auto tag) {
    using T = decltype(tag);
    constexpr int W = packWidth<T>();
    const bool vec = f % W == 0 && aligned16(x) && aligned16(dy) && aligned16(dx);
    const int64_t units = vec ? f / W : f;
    if ((units + kBlock - 1) / kBlock > 0x7fffffff) fail(loc, "swiglu_bwd: f too large");
    launchDependent(ctx, loc, "swiglu_bwd_kernel", swiglu_bwd_kernel<W, T>, swigluGrid(units, rows),
                    dim3(kBlock), 0, cp<T>(x), cp<T>(dy), mp<T>(dx), rows, f, vec);
  });
}

} // namespace tgrt_cuda
