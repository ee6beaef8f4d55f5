// Stats.cu — tgrt_tensor_stats on CUDA: the statistics the non-finite checks report
// (runtime/NonFinite.cpp, the driver's --find-nonfinite). Debug only: never on a step's path
// unless checks are on.
//
// For the rows x cols elements x[r * ld + c] (f32, bf16, f16 or int32):
//   nan = #{x != x}, pos_inf = #{x == +inf}, neg_inf = #{x == -inf},
//   min, max over the elements that are not NaN (NaN when there are none).
// Two kernels: each block reduces a grid-stride slice to a partial in the workspace, then one
// thread combines the partials in index order; the result is copied to the host. Counts and
// min / max do not depend on the order, so the numbers equal the CPU reference exactly.
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Dtype.cuh"
#include "runtime/cuda/Internal.h"

#include <cmath>

namespace tgrt_cuda {
namespace {

constexpr int kStatsThreads = 256;
constexpr int kStatsMaxBlocks = 128;

/// One block's statistics (also the final result). min / max in double: exact for every
/// element type, int32 included.
struct StatsPart {
  double mn, mx; ///< +inf / -inf while no non-NaN element was seen
  long long nan, pos_inf, neg_inf;
};

__device__ __forceinline__ double statValue(float x) { return (double)x; }
__device__ __forceinline__ double statValue(bf16_t x) { return (double)toF(x); }
__device__ __forceinline__ double statValue(f16_t x) { return (double)toF(x); }
__device__ __forceinline__ double statValue(int32_t x) { return (double)x; }

// part[blockIdx.x] = statistics of the elements i = blockIdx.x * blockDim.x + threadIdx.x +
// k * gridDim.x * blockDim.x < rows * cols, element i at x[(i / cols) * ld + i % cols].
// Per thread, then a shared-memory tree over the block.
template <typename T>
__global__ void tensor_stats_partial_kernel(const T* __restrict__ x, int64_t rows, int64_t cols,
                                            int64_t ld, StatsPart* __restrict__ part) {
  __shared__ double smn[kStatsThreads], smx[kStatsThreads];
  __shared__ long long snan[kStatsThreads], spos[kStatsThreads], sneg[kStatsThreads];
  const int64_t n = rows * cols;
  const bool dense = rows <= 1 || ld == cols;
  double mn = INFINITY, mx = -INFINITY;
  long long nan = 0, pos = 0, neg = 0;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = statValue(x[dense ? i : (i / cols) * ld + i % cols]);
    if (v != v) {
      ++nan;
      continue;
    }
    pos += v == INFINITY;
    neg += v == -INFINITY;
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  const int t = threadIdx.x;
  smn[t] = mn;
  smx[t] = mx;
  snan[t] = nan;
  spos[t] = pos;
  sneg[t] = neg;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if (t < h) {
      smn[t] = smn[t + h] < smn[t] ? smn[t + h] : smn[t];
      smx[t] = smx[t + h] > smx[t] ? smx[t + h] : smx[t];
      snan[t] += snan[t + h];
      spos[t] += spos[t + h];
      sneg[t] += sneg[t + h];
    }
    __syncthreads();
  }
  if (t == 0) part[blockIdx.x] = StatsPart{smn[0], smx[0], snan[0], spos[0], sneg[0]};
}

// part[parts] = the combination of part[0 .. parts-1] (one thread, index order).
__global__ void tensor_stats_finish_kernel(StatsPart* part, int parts) {
  StatsPart r{INFINITY, -INFINITY, 0, 0, 0};
  for (int b = 0; b < parts; ++b) {
    r.mn = part[b].mn < r.mn ? part[b].mn : r.mn;
    r.mx = part[b].mx > r.mx ? part[b].mx : r.mx;
    r.nan += part[b].nan;
    r.pos_inf += part[b].pos_inf;
    r.neg_inf += part[b].neg_inf;
  }
  part[parts] = r;
}

} // namespace

void tensorStats(Context* ctx, const char* loc, int32_t dt, const void* x, int64_t rows,
                 int64_t cols, int64_t ld, tgrt_stats* out) {
  checkCtx(ctx, loc);
  checkNonNegative(loc, "tensor_stats(rows, cols, ld)", rows, cols, ld);
  if (!out) fail(loc, "tensor_stats: NULL out");
  if (rows > 1 && ld < cols)
    fail(loc, "tensor_stats: row stride ld %lld < cols %lld", (long long)ld, (long long)cols);
  if (dt != TGRT_F32 && dt != TGRT_BF16 && dt != TGRT_F16 && dt != TGRT_CHECK_I32)
    fail(loc, "tensor_stats: unknown dtype %d (expected 0 f32, 1 bf16, 2 f16 or 3 i32)", (int)dt);
  const int64_t n = rows * cols;
  *out = tgrt_stats{n, 0, 0, 0, NAN, NAN};
  if (n == 0) return;
  if (!x) fail(loc, "tensor_stats: NULL x");
  const int blocks = (int)gridFor(n, kStatsThreads, kStatsMaxBlocks);
  checkWorkspace(ctx, loc, "tensor_stats (partials)", (blocks + 1) * (int64_t)sizeof(StatsPart));
  StatsPart* part = reinterpret_cast<StatsPart*>(ctx->regions[TGRT_WORKSPACE]);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    launch(ctx, loc, "tensor_stats_partial_kernel", tensor_stats_partial_kernel<T>, dim3(blocks),
           dim3(kStatsThreads), 0, static_cast<const T*>(x), rows, cols, ld, part);
  };
  if (dt == TGRT_CHECK_I32) run(int32_t{});
  else withDtype(loc, "tensor_stats", dt, run);
  launch(ctx, loc, "tensor_stats_finish_kernel", tensor_stats_finish_kernel, dim3(1), dim3(1), 0,
         part, blocks);
  StatsPart r;
  check(cudaMemcpyAsync(&r, part + blocks, sizeof r, cudaMemcpyDeviceToHost, ctx->stream), loc,
        "tensor_stats: cudaMemcpyAsync");
  check(cudaStreamSynchronize(ctx->stream), loc, "tensor_stats: cudaStreamSynchronize");
  out->nan = r.nan;
  out->pos_inf = r.pos_inf;
  out->neg_inf = r.neg_inf;
  if (r.nan < n) { // some element is not NaN
    out->min = r.mn;
    out->max = r.mx;
  }
}

} // namespace tgrt_cuda
