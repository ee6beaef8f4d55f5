//===- Calibrate.cpp - time the runtime's kernels for the cost model ---------===//
//
//   tgc-calibrate-cpu  --out FILE [--quick]    (links the CPU runtime, tgrt_cpu)
//   tgc-calibrate-cuda --out FILE [--quick]    (links the CUDA runtime, tgrt_cuda)
//   tgc-calibrate-cuda --out FILE --power-only TABLE   (TABLE with a new power section)
//   tgc-calibrate-<target> --out FILE [--quick] --only GROUP TABLE   (TABLE with GROUP's
//                                        kernels timed again, e.g. after a kernel change)
//
// Usually started by `tgc calibrate --out FILE --target cpu|cuda [--quick]`. Times the
// runtime's own kernels, through the extern "C" tgrt_* functions of runtime/tgrt.h that
// emitted code calls, over a grid of shapes and dtypes, and writes the calibration table of
// the cost model (passes/CostModel.h, docs/cost-model.md).
//
// Each case: its buffers are allocated in the arena of one context and filled with values
// of its dtypes (uniform in [-1, 1], ids in [0, vocab)), the call runs twice (warm-up),
// then `reps` repetitions each time K back-to-back calls (K chosen so a repetition lasts
// about `target` ms) and the median of the per-call times is the point. CUDA: each
// repetition is timed with two CUDA events on the context's stream; CPU: with
// std::chrono::steady_clock. A point's FLOPs and bytes are counted as the compiler's trace
// counts the same call (RuntimeCall: CostOpInterface FLOPs, bytes of the tensors the call
// reads and writes), so the cost model compares like with like.
//
// The dtypes: for each of f32, bf16 and f16 ("low") the calls the mixed-precision steps make
// (GEMMs, attention, activations in low; the residual stream, layer norm inputs, AdamW state
// and gradient slots in f32), so a point is keyed by the call's first dtype argument, as
// the trace keys it.
//
// CUDA, after the grid (not with --quick): the power section (calibratePower), how the
// GPU's power limit throttles its clock under sustained load, read through NVML.
//
//===----------------------------------------------------------------------------===//
#include "passes/CostModel.h"
#include "runtime/tgrt.h"

#ifdef TGC_CALIBRATE_CUDA
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Power.h"
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using mlir::tg::CalibrationPoint;
using mlir::tg::CalibrationTable;
using mlir::tg::PowerProbe;

namespace {

const int32_t F32 = TGRT_F32;

struct Options {
  std::string out;
  bool quick = false;
  std::string powerInto; ///< --power-only TABLE: only the power section, into a copy of TABLE
  /// --only GROUP TABLE: GROUP's kernels (on the grid --quick selects), into a copy of TABLE.
  std::string onlyGroup, onlyInto;
};


const char *dtName(int32_t dt) { return dt == TGRT_F32 ? "f32" : dt == TGRT_BF16 ? "bf16" : "f16"; }
int64_t esz(int32_t dt) { return tgrt_dtype_size(dt); }




/// One context whose arena the cases carve their buffers from.
struct Bench {
  tgrt_ctx *ctx = nullptr;
  tgrt_model model{};
  int64_t arenaBytes = 0, next = 0;
  std::mt19937 rng{20261128};
  bool quick = false;
  double targetMs = 10; ///< one repetition lasts about this long
  int reps = 5;
  CalibrationTable table;
  int cases = 0;

  bool init(int64_t arena, int64_t workspace) {
    model.name = "tgc-calibrate";
    model.spec_json = "{}";
    model.persistent_bytes = 1 << 20;
    model.arena_bytes = arena;
    model.workspace_bytes = workspace;
    model.batch_size = 1;
    model.context = 1;
    model.vocab_size = 1;
    model.grad_accum = 1;
    model.lr = 1e-4f;
    model.beta1 = 0.9f;
    model.beta2 = 0.95f;
    model.eps = 1e-8f;
    model.precision = TGRT_PRECISION_FP32;
    model.ranks = 1;
#ifdef TGC_CALIBRATE_CUDA
    // bf16 / f16 attention on cuDNN, as tgc compiles it for cuda by default
    // (training.attention.impl auto); the own kernels where cuDNN is missing.
    model.attention_impl = 1;
#endif
    ctx = tgrt_ctx_create(&model);
    arenaBytes = arena;
    if (!ctx)
      return false;
    tgrt_set_step(ctx, 1);
    tgrt_set_lr(ctx, 1e-4f);
    return true;
  }

  /// A buffer of `bytes` in the arena (256-byte aligned); nullptr when the arena is full.
  void *alloc(int64_t bytes, int64_t *offset = nullptr) {
    int64_t off = (next + 255) / 256 * 256;
    if (off + bytes > arenaBytes)
      return nullptr;
    next = off + bytes;
    if (offset)
      *offset = off;
    return tgrt_region(ctx, TGRT_ARENA) + off;
  }
  /// n values of dt, uniform in [-scale, scale].
  void *tensor(int32_t dt, int64_t n, float scale = 1.0f) {
    int64_t off = 0;
    void *p = alloc(n * esz(dt), &off);
    if (!p)
      return nullptr;
    // A fast generator (xorshift): the largest grids fill gigabytes.
    uint64_t st = rng() | 1;
    auto u = [&](std::mt19937 &) {
      st ^= st << 13;
      st ^= st >> 7;
      st ^= st << 17;
      return scale * ((float)(st >> 40) * (2.0f / 16777216.0f) - 1.0f);
    };
    const int64_t block = 1 << 20;
    std::vector<uint16_t> h16;
    std::vector<float> h32;
    for (int64_t i = 0; i < n; i += block) {
      int64_t m = std::min(block, n - i);
      if (dt == TGRT_F32) {
        h32.resize(m);
        for (float &x : h32)
          x = u(rng);
        tgrt_upload(ctx, TGRT_ARENA, off + i * 4, h32.data(), m * 4);
      } else {
        h16.resize(m);
        for (uint16_t &x : h16)
          x = dt == TGRT_BF16 ? tgrt_bf16_from_float(u(rng)) : tgrt_f16_from_float(u(rng));
        tgrt_upload(ctx, TGRT_ARENA, off + i * 2, h16.data(), m * 2);
      }
    }
    return p;
  }
  /// n floats of the given value.
  float *filled(int64_t n, float value) {
    int64_t off = 0;
    float *p = static_cast<float *>(alloc(n * 4, &off));
    if (!p)
      return nullptr;
    std::vector<float> h(n, value);
    tgrt_upload(ctx, TGRT_ARENA, off, h.data(), n * 4);
    return p;
  }
  /// n token ids in [0, vocab).
  int32_t *ids(int64_t n, int64_t vocab) {
    int64_t off = 0;
    int32_t *p = static_cast<int32_t *>(alloc(n * 4, &off));
    if (!p)
      return nullptr;
    std::uniform_int_distribution<int32_t> u(0, (int32_t)vocab - 1);
    std::vector<int32_t> h(n);
    for (int32_t &x : h)
      x = u(rng);
    tgrt_upload(ctx, TGRT_ARENA, off, h.data(), n * 4);
    return p;
  }
  /// A positive row statistic (rstd) or zero means: n floats in [0.5, 1.5].
  float *stats(int64_t n) {
    int64_t off = 0;
    float *p = static_cast<float *>(alloc(n * 4, &off));
    if (!p)
      return nullptr;
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    std::vector<float> h(n);
    for (float &x : h)
      x = u(rng);
    tgrt_upload(ctx, TGRT_ARENA, off, h.data(), n * 4);
    return p;
  }

  /// Milliseconds of `k` back-to-back calls.
  double timeBatch(const std::function<void()> &call, int k) {
#ifdef TGC_CALIBRATE_CUDA
    cudaStream_t s = static_cast<cudaStream_t>(
        tgrt_cuda::stream(reinterpret_cast<tgrt_cuda::Context *>(ctx)));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    for (int i = 0; i < k; ++i)
      call();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
#else
    tgrt_synchronize(ctx);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < k; ++i)
      call();
    tgrt_synchronize(ctx);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
        .count();
#endif
  }

  /// The median ms per call of `reps` repetitions of K back-to-back calls (K so that one
  /// lasts about targetMs), after two warm-up calls.
  double timePoint(const std::function<void()> &call) {
    call();
    call();
    tgrt_synchronize(ctx);
    double one = std::max(1e-4, timeBatch(call, 1));
    int k = (int)std::clamp(targetMs / one, 1.0, 5000.0);
    std::vector<double> t;
    for (int r = 0; r < reps; ++r)
      t.push_back(timeBatch(call, k) / k);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

  /// Times `call` (warm-up, then the median of `reps` repetitions of K calls) and adds the
  /// point to the table under kernel / dtype. Returns the median ms per call.
  double measure(const std::string &kernel, int32_t keyDt, double flops, double bytes,
                 const std::string &shape, const std::function<void()> &call,
                 const std::string &variant = "") {
    const double med = timePoint(call);
    CalibrationPoint p;
    p.flops = flops;
    p.bytes = bytes;
    p.ms = std::max(med, 1e-6);
    p.variant = variant;
    p.shape = shape;
    table.kernels[kernel][keyDt < 0 ? "any" : dtName(keyDt)].push_back(p);
    ++cases;
    std::fprintf(stderr, "  %-32s %-4s %-44s %10.4f ms %9.2f GFLOP/s %8.2f GB/s\n",
                 kernel.c_str(), keyDt < 0 ? "any" : dtName(keyDt), shape.c_str(), med,
                 flops / med / 1e6, bytes / med / 1e6);
    return med;
  }
};

std::string shp(std::initializer_list<std::pair<const char *, int64_t>> kv) {
  std::string s;
  for (auto &[k, v] : kv)
    s += (s.empty() ? "" : " ") + std::string(k) + " " + std::to_string(v);
  return s;
}

/// The grid. Sizes are (rows, width) pairs of the transformer's activations: rows = tokens
/// of a micro-batch, width = d_model (or d_ff); GEMMs (tokens, d_model) with the layer's
/// projections.
struct Grid {
  std::vector<std::pair<int64_t, int64_t>> rowsDims; ///< (rows, d) for row / element kernels
  std::vector<std::pair<int64_t, int64_t>> gemm;     ///< (tokens, d_model)
  /// (batch, heads, t, hd) for attention; hd 64 (and 128 on CUDA).
  std::vector<std::array<int64_t, 4>> attn;
  std::vector<std::array<int64_t, 3>> loss; ///< (tokens, d, vocab): embedding and loss
  std::vector<int32_t> lows;  ///< the "low" dtypes
};

Grid makeGrid(bool cuda, bool quick) {
  Grid g;
  if (cuda) {
    g.lows = {TGRT_F32, TGRT_BF16, TGRT_F16};
    if (quick) {
      g.rowsDims = {{2048, 768}, {16384, 768}};
      g.gemm = {{2048, 768}, {16384, 768}};
      g.attn = {{4, 12, 1024, 64}};
      g.loss = {{16384, 768, 50304}};
    } else {
      // d 576, 1024 and 1280 beside 768 and 2048: the norms' CUDA kernels take a different
      // path per width (packs per lane), and the cost model prices a norm call by the points
      // of its own width where the table has them (CostModel.cpp sameClassPoints).
      g.rowsDims = {{512, 768},    {2048, 768},  {8192, 768},   {16384, 768},
                    {16384, 3072}, {8192, 2048}, {16384, 2048}, {8192, 8192},
                    {16384, 576},  {16384, 1024}, {8192, 1280}};
      // Up to GPT-2 small at micro-batch 64 and Llama 3.2 1B at 16: the per-token GEMM time
      // still falls past 16384 tokens (docs/cost-model.md, "`tgc advise` against the H200").
      g.gemm = {{2048, 768}, {8192, 768}, {16384, 768}, {65536, 768}, {8192, 2048},
                {16384, 1024}, {32768, 2048}, {4096, 4096}};
      // With SmolLM2-135M's (9 heads of 64, 3 kv heads; kvDiv 3) and the head-dim-128
      // shape of docs/results.md (8 x 8 heads, T 2048).
      g.attn = {{4, 12, 1024, 64}, {16, 12, 1024, 64}, {4, 32, 2048, 64},
                {2, 16, 2048, 128}, {4, 12, 256, 64},   {8, 9, 2048, 64},
                {8, 8, 2048, 128}};
      // With the head-dim-128 shape's (16384 x 1024, V 32000): the cross-entropy's variant is
      // chosen per vocabulary (Kernels.cu ceAutoVariant), blocks of 256 there on an H200.
      g.loss = {{2048, 768, 50304}, {16384, 768, 50304}, {8192, 2048, 128256},
                {16384, 1024, 32000}};
    }
  } else if (quick) {
    g.lows = {TGRT_F32};
    g.rowsDims = {{512, 64}, {512, 256}, {2048, 256}};
    g.gemm = {{512, 64}, {1024, 128}};
    g.attn = {{8, 4, 64, 16}, {8, 4, 128, 32}};
    g.loss = {{512, 64, 2048}};
  } else {
    g.lows = {TGRT_F32, TGRT_BF16, TGRT_F16};
    g.rowsDims = {{512, 64}, {512, 256}, {2048, 256}, {4096, 512}, {8192, 768}};
    g.gemm = {{512, 64}, {512, 128}, {2048, 256}, {2048, 512}};
    g.attn = {{8, 4, 64, 16}, {8, 4, 256, 32}, {4, 8, 128, 32}};
    g.loss = {{512, 64, 2048}, {2048, 128, 2048}, {2048, 256, 8192}};
  }
  return g;
}

void calibrateGemms(Bench &b, const Grid &g) {
  for (int32_t lo : g.lows) {
    const int32_t wide = F32; // gradient slots and the residual stream
    for (auto [T, D] : g.gemm) {
      // N = half * D / 2: d, 3d (GPT-2's qkv), 4d (its MLP); from d 2048 also Llama's
      // grouped-query qkv (1.5d: 32 query and 8 kv heads) and fused gate + up (8d).
      for (int64_t half : {2, 3, 6, 8, 16}) {
        if ((half == 3 || half == 16) && D < 2048)
          continue;
        const int64_t mult = half % 2 == 0 ? half / 2 : 0; // 0: not a whole multiple
        const int64_t N = half * D / 2;
        b.next = 0;
        // Forward projections: x [T, D] w [D, N] (weights are [in, out]).
        void *x = b.tensor(lo, T * D), *w = b.tensor(lo, D * N), *bias = b.tensor(lo, N);
        void *y = b.tensor(lo, T * N), *pre = b.tensor(lo, T * N);
        void *res = b.tensor(wide, T * N);
        void *dy = b.tensor(lo, T * N), *dx = b.tensor(lo, T * D);
        void *dw = b.tensor(wide, D * N);
        if (!x || !w || !bias || !y || !pre || !res || !dy || !dx || !dw) {
          std::fprintf(stderr, "tgc-calibrate: arena too small for GEMM %lld x %lld\n",
                       (long long)T, (long long)N);
          continue;
        }
        const double mnk = 2.0 * T * N * D, mn = (double)T * N;
        const double e = (double)esz(lo);
        std::string s = shp({{"m", T}, {"n", N}, {"k", D}});
        b.measure("tgrt_matmul", lo, mnk, e * (T * D + D * N + T * N), s, [&] {
          tgrt_matmul(b.ctx, "cal", lo, x, w, y, 1, T, N, D, 0, 0, 0, 0, 0, 1.0f, 0.0f);
        }, "nn");
        if (mult == 3 || mult == 4) { // the bias epilogues: GPT-2's qkv (3) and MLP (4)
          b.measure("tgrt_matmul_bias", lo, mnk + mn, e * (T * D + D * N + N + T * N), s, [&] {
            tgrt_matmul_bias(b.ctx, "cal", lo, x, w, bias, y, T, N, D, 0, 0, 1.0f);
          }, "nn");
        }
        if (mult == 4) {
          b.measure("tgrt_matmul_bias_gelu", lo, mnk + 2 * mn,
                    e * (T * D + D * N + N + 2 * T * N), s, [&] {
                      tgrt_matmul_bias_gelu(b.ctx, "cal", lo, x, w, bias, pre, y, T, N, D, 0, 0,
                                            1.0f);
                    }, "nn");
          // The MLP's backward through the GELU: g = dy_out [T, D] w2^T with w2 [N, D]
          // stored [in=N, out=D]: dx_pre [T, N] = dy [T, D] x w2^T (nt). Without dbias, as
          // the lowering emits it (the fc bias's gradient comes with its weight gradient);
          // the cost model prices a call's bias sums apart (CostModel.cpp biasSumsOf).
          std::string s2 = shp({{"m", T}, {"n", N}, {"k", D}});
          b.measure("tgrt_matmul_dgelu_bgrad", lo, mnk + 2 * mn,
                    e * (T * D + D * N + 2 * T * N), s2, [&] {
                      tgrt_matmul_dgelu_bgrad(b.ctx, "cal", lo, x, w, pre, y, nullptr, T, N, D,
                                              0, 1, 1.0f);
                    }, "nt");
        }
        if (mult == 1 || mult == 4) {
          // The projection back into the f32 residual stream: [T, N] x [N, D] -> [T, D]
          // (mult 1: the attention output, 4: the MLP's down projection).
          std::string s3 = shp({{"m", T}, {"n", D}, {"k", N}});
          b.measure("tgrt_matmul_bias_residual", lo, 2.0 * T * D * N + 2.0 * T * D,
                    e * (T * N + N * D + D) + 8.0 * T * D, s3, [&] {
                      tgrt_matmul_bias_residual(b.ctx, "cal", lo, y, w, wide, bias, res, res, T,
                                                D, N, 0, 0, 1.0f);
                    }, "nn");
        }
        // Backward: dx [T, D] = dy [T, N] w^T (w [D, N]): nt.
        std::string s4 = shp({{"m", T}, {"n", D}, {"k", N}});
        b.measure("tgrt_matmul", lo, mnk, e * (T * N + D * N + T * D), s4, [&] {
          tgrt_matmul(b.ctx, "cal", lo, dy, w, dx, 1, T, D, N, 0, 1, 0, 0, 0, 1.0f, 0.0f);
        }, "nt");
        // Weight gradient: dw [D, N] += x^T [D, T] dy [T, N]: tn, into the f32 slot.
        std::string s5 = shp({{"m", D}, {"n", N}, {"k", T}});
        b.measure("tgrt_matmul_acc", lo, mnk, e * (T * D + T * N) + 8.0 * D * N, s5, [&] {
          tgrt_matmul_acc(b.ctx, "cal", lo, x, dy, wide, dw, D, N, T, 1, 0, 1.0f);
        }, "tn");
        b.measure("tgrt_matmul", lo, mnk, e * (T * D + T * N + D * N), s5, [&] {
          tgrt_matmul(b.ctx, "cal", lo, x, dy, w, 1, D, N, T, 1, 0, 0, 0, 0, 1.0f, 0.0f);
        }, "tn");
      }
    }
  }
}

/// Naive attention's batched GEMMs (scores q k^T, then P v, and their gradients).
void calibrateBatchedGemms(Bench &b, const Grid &g) {
  for (int32_t lo : g.lows)
    for (auto [B, H, T, hd] : g.attn) {
      if (T > 1024)
        continue;
      b.next = 0;
      const int64_t bh = B * H;
      void *q = b.tensor(lo, bh * T * hd), *k = b.tensor(lo, bh * T * hd),
           *s = b.tensor(lo, bh * T * T), *o = b.tensor(lo, bh * T * hd);
      if (!q || !k || !s || !o)
        continue;
      const double e = (double)esz(lo);
      std::string sh = shp({{"batch", bh}, {"m", T}, {"n", T}, {"k", hd}});
      b.measure("tgrt_matmul", lo, 2.0 * bh * T * T * hd, e * bh * (2 * T * hd + T * T), sh,
                [&] {
                  tgrt_matmul(b.ctx, "cal", lo, q, k, s, bh, T, T, hd, 0, 1, T * hd, T * hd,
                              T * T, 0.125f, 0.0f);
                }, "nt");
      sh = shp({{"batch", bh}, {"m", T}, {"n", hd}, {"k", T}});
      b.measure("tgrt_matmul", lo, 2.0 * bh * T * T * hd, e * bh * (2 * T * hd + T * T), sh,
                [&] {
                  tgrt_matmul(b.ctx, "cal", lo, s, k, o, bh, T, hd, T, 0, 0, T * T, T * hd,
                              T * hd, 1.0f, 0.0f);
                }, "nn");
      sh = shp({{"batch", bh}, {"m", T}, {"n", hd}, {"k", T}});
      b.measure("tgrt_matmul", lo, 2.0 * bh * T * T * hd, e * bh * (2 * T * hd + T * T), sh,
                [&] {
                  tgrt_matmul(b.ctx, "cal", lo, s, q, o, bh, T, hd, T, 1, 0, T * T, T * hd,
                              T * hd, 1.0f, 0.0f);
                }, "tn");
      // The mask and softmax of the same scores, and the head split / merge transposes.
      std::string rs = shp({{"rows", bh * T}, {"n", T}});
      b.measure("tgrt_causal_mask", lo, (double)bh * T * T, 2 * e * bh * T * T, rs, [&] {
        tgrt_causal_mask(b.ctx, "cal", lo, s, s, bh, T, T, 0, -INFINITY);
      });
      void *p = b.tensor(lo, bh * T * T, 0.01f);
      if (!p)
        continue;
      b.measure("tgrt_softmax_fwd", lo, (double)bh * T * T, 2 * e * bh * T * T, rs, [&] {
        tgrt_softmax_fwd(b.ctx, "cal", lo, p, s, bh * T, T);
      });
      b.measure("tgrt_softmax_bwd", lo, (double)bh * T * T, 3 * e * bh * T * T, rs, [&] {
        tgrt_softmax_bwd(b.ctx, "cal", lo, p, s, s, bh * T, T);
      });
      std::string ts = shp({{"B", B}, {"T", T}, {"H", H}, {"hd", hd}});
      b.measure("tgrt_transpose4", lo, (double)bh * T * hd, 2 * e * bh * T * hd, ts, [&] {
        tgrt_transpose4(b.ctx, "cal", lo, q, k, B, T, H, hd, 0, 2, 1, 3);
      });
    }
}

void calibrateAttention(Bench &b, const Grid &g, bool cuda) {
  for (int32_t lo : g.lows) {
    for (auto [B, H, T, hd] : g.attn) {
      for (int64_t kvDiv : {1, 3, 4}) {
        const int64_t Hkv = H / kvDiv;
        if (Hkv * kvDiv != H || (kvDiv > 1 && H < 8))
          continue;
        b.next = 0;
        const int64_t W = (H + 2 * Hkv) * hd, Q = H * hd; // packed row, output row
        void *qkv = b.tensor(lo, B * T * W), *out = b.tensor(lo, B * T * Q);
        void *dqkv = b.tensor(lo, B * T * W), *dout = b.tensor(lo, B * T * Q);
        float *lse = b.stats(B * H * T);
        if (!qkv || !out || !dqkv || !dout || !lse)
          continue;
        char *q = static_cast<char *>(qkv), *dq = static_cast<char *>(dqkv);
        const int64_t e = esz(lo);
        const double pairs = mlir::tg::attentionPairs(T, true, 0) * B * H;
        // The trace counts the output and lse (q, k, v are views of the packed projection).
        const double fb = (double)e * B * T * Q + 4.0 * B * H * T;
        const float scale = 1.0f / std::sqrt((float)hd);
        std::string sh = shp({{"B", B}, {"H", H}, {"Hkv", Hkv}, {"T", T}, {"hd", hd}});
        if (kvDiv == 1) {
          b.measure("tgrt_attention_fwd", lo, 4.0 * hd * pairs, fb, sh, [&] {
            tgrt_attention_fwd(b.ctx, "cal", lo, q, q + Q * e, q + 2 * Q * e, out, lse, B, H, T,
                               hd, T * W, hd, W, T * Q, hd, Q, 1, 0, scale);
          });
          b.measure("tgrt_attention_bwd", lo, 10.0 * hd * pairs, fb + (double)e * B * T * Q, sh,
                    [&] {
                      tgrt_attention_bwd(b.ctx, "cal", lo, q, q + Q * e, q + 2 * Q * e, out, lse,
                                         dout, dq, dq + Q * e, dq + 2 * Q * e, B, H, T, hd,
                                         T * W, hd, W, T * Q, hd, Q, 1, 0, scale);
                    });
        } else {
          const int64_t K = Hkv * hd;
          b.measure("tgrt_attention_gqa_fwd", lo, 4.0 * hd * pairs, fb, sh, [&] {
            tgrt_attention_gqa_fwd(b.ctx, "cal", lo, q, q + Q * e, q + (Q + K) * e, out, lse, B,
                                   H, Hkv, T, hd, T * W, hd, W, T * W, hd, W, T * Q, hd, Q, 1, 0,
                                   scale);
          });
          b.measure("tgrt_attention_gqa_bwd", lo, 10.0 * hd * pairs, fb + (double)e * B * T * Q,
                    sh, [&] {
                      tgrt_attention_gqa_bwd(b.ctx, "cal", lo, q, q + Q * e, q + (Q + K) * e, out,
                                             lse, dout, dq, dq + Q * e, dq + (Q + K) * e, B, H,
                                             Hkv, T, hd, T * W, hd, W, T * W, hd, W, T * Q, hd,
                                             Q, 1, 0, scale);
                    });
        }
        // RoPE on the packed projection (in place, as the Llama steps run it).
        double rb = 2.0 * e * B * T * W;
        b.measure("tgrt_rope_scaled", lo, 3.0 * B * T * (H + Hkv) * hd, rb, sh, [&] {
          tgrt_rope_scaled(b.ctx, "cal", lo, qkv, qkv, B, T, H, Hkv, hd, 10000.0f, 0.0f, 0.0f,
                           0.0f, 0.0f, 1);
        });
      }
    }
    (void)cuda;
  }
}

/// Row-wise and element-wise kernels at (rows, d).
void calibrateRows(Bench &b, const Grid &g) {
  for (int32_t lo : g.lows) {
    const int64_t e = esz(lo);
    for (auto [R, D] : g.rowsDims) {
      b.next = 0;
      const int64_t n = R * D;
      void *x32 = b.tensor(F32, n), *y32 = b.tensor(F32, n), *z32 = b.tensor(F32, n);
      void *xl = b.tensor(lo, n), *yl = b.tensor(lo, n), *zl = b.tensor(lo, n);
      void *gam = b.tensor(F32, D), *bet = b.tensor(F32, D);
      void *dg = b.tensor(F32, D), *db = b.tensor(F32, D), *dbi = b.tensor(F32, D);
      float *mean = b.stats(R), *rstd = b.stats(R);
      if (!x32 || !y32 || !z32 || !xl || !yl || !zl || !gam || !bet || !dg || !db || !dbi ||
          !mean || !rstd) {
        std::fprintf(stderr, "tgc-calibrate: arena too small for rows %lld x %lld\n",
                     (long long)R, (long long)D);
        continue;
      }
      void *low = lo == F32 ? nullptr : zl; // the low copy beside the f32 result
      const double nd = (double)n;
      std::string s = shp({{"rows", R}, {"d", D}});
      std::string sn = shp({{"n", n}});
      // Layer norm: x f32 (the residual stream), y in low.
      b.measure("tgrt_layer_norm_fwd", F32, 8 * nd, 4 * nd + e * nd + 8.0 * D + 8.0 * R, s, [&] {
        tgrt_layer_norm_fwd(b.ctx, "cal", F32, x32, F32, gam, bet, lo, yl, mean, rstd, R, D,
                            1e-5f);
      });
      b.measure("tgrt_add_layer_norm_fwd", F32, 9 * nd,
                4 * nd + e * nd + 4 * nd + e * nd + 8.0 * D + 8.0 * R, s, [&] {
                  tgrt_add_layer_norm_fwd(b.ctx, "cal", F32, x32, lo, zl, y32, F32, gam, bet, lo,
                                          yl, mean, rstd, R, D, 1e-5f);
                });
      b.measure("tgrt_layer_norm_bwd", lo, 12 * nd, e * nd + 8 * nd + 4.0 * D + 8.0 * R + 8.0 * D,
                s, [&] {
                  tgrt_layer_norm_bwd(b.ctx, "cal", lo, yl, F32, x32, F32, gam, mean, rstd, z32, dg,
                                      db, R, D);
                });
      b.measure("tgrt_layer_norm_bwd_acc_slots", lo, 13 * nd,
                e * nd + 4 * nd + 4.0 * D + 8.0 * R + 8 * nd + (low ? e * nd : 0) + 16.0 * D, s,
                [&] {
                  tgrt_layer_norm_bwd_acc_slots(b.ctx, "cal", lo, yl, F32, x32, F32, gam, mean,
                                                rstd, y32, lo, low, dg, db, R, D);
                });
      // The forms the lowering emits for GPT-2's blocks: dgamma / dbeta stored (their slots'
      // only writes), and with the projection's bias gradient summed by the same call.
      b.measure("tgrt_layer_norm_bwd_acc", lo, 13 * nd,
                e * nd + 4 * nd + 4.0 * D + 8.0 * R + 8 * nd + (low ? e * nd : 0) + 8.0 * D, s,
                [&] {
                  tgrt_layer_norm_bwd_acc(b.ctx, "cal", lo, yl, F32, x32, F32, gam, mean, rstd,
                                          y32, lo, low, dg, db, R, D);
                });
      b.measure("tgrt_layer_norm_bwd_acc_bgrad", lo, 14 * nd,
                e * nd + 4 * nd + 4.0 * D + 8.0 * R + 8 * nd + (low ? e * nd : 0) + 12.0 * D, s,
                [&] {
                  tgrt_layer_norm_bwd_acc_bgrad(b.ctx, "cal", lo, yl, F32, x32, F32, gam, mean,
                                                rstd, y32, lo, low, dg, db, F32, dbi, R, D);
                });
      b.measure("tgrt_rms_norm_fwd", F32, 5 * nd, 4 * nd + 4.0 * D + e * nd + 4.0 * R, s, [&] {
        tgrt_rms_norm_fwd(b.ctx, "cal", F32, x32, F32, gam, lo, yl, rstd, R, D, 1e-5f);
      });
      b.measure("tgrt_rms_norm_bwd", lo, 8 * nd, e * nd + 4 * nd + 4.0 * D + 4.0 * R + 4 * nd + 4.0 * D,
                s, [&] {
                  tgrt_rms_norm_bwd(b.ctx, "cal", lo, yl, F32, x32, F32, gam, rstd, z32, dg, R, D);
                });
      // The same backward adding into the f32 residual gradient (y32) and writing its low copy.
      b.measure("tgrt_rms_norm_bwd_acc", lo, 9 * nd,
                e * nd + 4 * nd + 4.0 * D + 4.0 * R + 8 * nd + (low ? e * nd : 0) + 4.0 * D, s,
                [&] {
                  tgrt_rms_norm_bwd_acc(b.ctx, "cal", lo, yl, F32, x32, F32, gam, rstd, y32, lo,
                                        low, dg, R, D);
                });
      // Bias gradient of a low-precision layer into its f32 slot.
      b.measure("tgrt_bias_grad_acc", lo, nd, e * nd + 8.0 * D, s, [&] {
        tgrt_bias_grad_acc(b.ctx, "cal", lo, yl, F32, dg, R, D);
      });
      b.measure("tgrt_bias_add", lo, nd, 2 * e * nd + e * D, s, [&] {
        tgrt_bias_add(b.ctx, "cal", lo, xl, zl, yl, R, D);
      });
      // Element-wise in low precision.
      b.measure("tgrt_gelu_fwd", lo, nd, 2 * e * nd, sn, [&] {
        tgrt_gelu_fwd(b.ctx, "cal", lo, xl, yl, n);
      });
      b.measure("tgrt_gelu_bwd", lo, nd, 3 * e * nd, sn, [&] {
        tgrt_gelu_bwd(b.ctx, "cal", lo, xl, zl, yl, n);
      });
      b.measure("tgrt_add", lo, nd, 3 * e * nd, sn, [&] {
        tgrt_add(b.ctx, "cal", lo, xl, zl, yl, n);
      });
      b.measure("tgrt_dropout", lo, nd, 2 * e * nd, sn, [&] {
        tgrt_dropout(b.ctx, "cal", lo, xl, yl, n, 0.1f, 1234);
      });
      b.measure("tgrt_copy2d", lo, nd, 2 * e * nd, s, [&] {
        tgrt_copy2d(b.ctx, "cal", lo, xl, D, yl, D, R, D);
      });
      // SwiGLU: x [R, 2f] with f = D / 2.
      const int64_t f = D / 2;
      std::string sf = shp({{"rows", R}, {"f", f}});
      b.measure("tgrt_swiglu_fwd", lo, 5.0 * R * f, e * (3.0 * R * f), sf, [&] {
        tgrt_swiglu_fwd(b.ctx, "cal", lo, xl, yl, R, f);
      });
      b.measure("tgrt_swiglu_bwd", lo, 8.0 * R * f, e * (5.0 * R * f), sf, [&] {
        tgrt_swiglu_bwd(b.ctx, "cal", lo, xl, zl, yl, R, f);
      });
      // The f32 stream and slots: add_mixed (f32 + low, with the low copy), accumulate,
      // casts both ways, the gradient norm, AdamW, zeroing.
      b.measure("tgrt_add_mixed", F32, nd, 8 * nd + e * nd + (low ? e * nd : 0), sn, [&] {
        tgrt_add_mixed(b.ctx, "cal", F32, x32, lo, yl, y32, lo, low, n);
      });
      if (lo == F32) {
        b.measure("tgrt_accumulate", F32, nd, 12 * nd, sn, [&] {
          tgrt_accumulate(b.ctx, "cal", F32, y32, x32, n);
        });
        b.measure("tgrt_zero", -1, 0, 4 * nd, sn, [&] { tgrt_zero(b.ctx, "cal", y32, 4 * n); });
        b.measure("tgrt_fill", F32, nd, 4 * nd, sn, [&] {
          tgrt_fill(b.ctx, "cal", F32, y32, n, 0.0f);
        });
        float *acc = b.filled(2, 0.0f);
        b.measure("tgrt_grad_norm_sq", F32, 2 * nd, 4 * nd + 8, sn, [&] {
          tgrt_grad_norm_sq(b.ctx, "cal", F32, x32, n, acc);
        });
        float *clip = b.filled(2, 1.0f), *v = b.stats(n);
        if (!clip || !v)
          continue;
        // AdamW over n parameters: p, m, v read and written, g read (all f32).
        b.measure("tgrt_adamw", F32, 12 * nd, 28 * nd + 8, sn, [&] {
          tgrt_adamw(b.ctx, "cal", F32, x32, y32, F32, z32, v, n, 0.9f, 0.95f, 1e-8f, 0.1f,
                     clip);
        });
      } else {
        b.measure("tgrt_cast", F32, nd, 4 * nd + e * nd, sn, [&] {
          tgrt_cast(b.ctx, "cal", F32, x32, lo, yl, n);
        });
        b.measure("tgrt_cast", lo, nd, 4 * nd + e * nd, sn, [&] {
          tgrt_cast(b.ctx, "cal", lo, xl, F32, y32, n);
        });
        float *clip = b.filled(2, 1.0f), *v = b.stats(n);
        if (!clip || !v)
          continue;
        // AdamW that also writes the low-precision working copy (mixed precision).
        b.measure("tgrt_adamw_wc", F32, 12 * nd, 28 * nd + 8 + e * nd, sn, [&] {
          tgrt_adamw_wc(b.ctx, "cal", F32, x32, y32, F32, z32, v, n, 0.9f, 0.95f, 1e-8f, 0.1f,
                        clip, lo, yl);
        });
      }
    }
  }
}

/// Embeddings and the loss at (tokens, d, vocab).
void calibrateEmbeddingAndLoss(Bench &b, const Grid &g) {
  for (int32_t lo : g.lows)
    for (auto [R, D, V] : g.loss) {
      const int64_t e = esz(lo);
      std::string s = shp({{"tokens", R}, {"d", D}, {"vocab", V}});
      // The embedding (and its positions) run on the f32 stream.
      if (lo == F32) {
        b.next = 0;
        int32_t *ids = b.ids(R, V);
        void *table = b.tensor(F32, V * D), *out = b.tensor(F32, R * D);
        void *out2 = b.tensor(F32, R * D), *dtable = b.tensor(F32, V * D);
        if (!ids || !table || !out || !out2 || !dtable)
          continue;
        b.measure("tgrt_embedding_fwd", F32, (double)R * D, 4.0 * R + 4.0 * V * D + 4.0 * R * D,
                  s, [&] { tgrt_embedding_fwd(b.ctx, "cal", F32, table, ids, out, R, D, V); });
        b.measure("tgrt_embedding_bwd", F32, (double)R * D, 4.0 * R + 4.0 * R * D + 4.0 * V * D,
                  s, [&] { tgrt_embedding_bwd(b.ctx, "cal", F32, ids, out, dtable, R, D, V); });
        const int64_t T = std::min<int64_t>(R, 1024), Bt = R / T;
        std::string sp = shp({{"batch", Bt}, {"t", T}, {"d", D}});
        b.measure("tgrt_positional_fwd", F32, (double)R * D, 8.0 * R * D + 4.0 * T * D, sp, [&] {
          tgrt_positional_fwd(b.ctx, "cal", F32, out, table, out2, Bt, T, D);
        });
        b.measure("tgrt_positional_bwd", F32, (double)T * D, 4.0 * R * D + 4.0 * T * D, sp, [&] {
          tgrt_positional_bwd(b.ctx, "cal", F32, out, dtable, Bt, T, D, T);
        });
      }
      // The fused output layer + loss, in chunks of at most 4096 rows.
      b.next = 0;
      int32_t *ids = b.ids(R, V);
      void *x = b.tensor(lo, R * D), *w = b.tensor(lo, V * D, 0.02f), *dx = b.tensor(lo, R * D);
      void *dw = b.tensor(F32, V * D);
      float *dloss = b.filled(1, 1.0f), *loss = b.filled(1, 0.0f);
      const int64_t chunk = std::min<int64_t>(R, 4096);
      void *scratch = b.alloc(256 + (8 * R + 255) / 256 * 256 + chunk * V * e + 256);
      if (!ids || !x || !w || !dx || !dw || !dloss || !loss || !scratch) {
        std::fprintf(stderr, "tgc-calibrate: arena too small for the loss at %s\n", s.c_str());
        continue;
      }
      b.measure("tgrt_linear_cross_entropy", lo, 6.0 * R * D * V,
                e * (2.0 * R * D + V * D) + 4.0 * R + 8 + 8.0 * V * D, s, [&] {
                  tgrt_linear_cross_entropy(b.ctx, "cal", lo, x, w, ids, dloss, loss, dx, F32, dw,
                                            scratch, R, D, V, chunk, -1);
                });
      // The form the steps run when the head's gradient slot is written once (the lowering's
      // planWeightGradWrites): the first chunk's dw GEMM writes dw instead of adding into it
      // (one vocab x d f32 read fewer); priced before 2026-12-02 by the points above.
      b.measure("tgrt_linear_cross_entropy_store", lo, 6.0 * R * D * V,
                e * (2.0 * R * D + V * D) + 4.0 * R + 8 + 4.0 * V * D, s, [&] {
                  tgrt_linear_cross_entropy_store(b.ctx, "cal", lo, x, w, ids, dloss, loss, dx,
                                                  F32, dw, scratch, R, D, V, chunk, -1);
                });
      b.next = 0;
      ids = b.ids(R, V);
      void *logits = b.tensor(lo, R * V);
      dloss = b.filled(1, 1.0f);
      loss = b.filled(1, 0.0f);
      if (!logits || !ids || !dloss || !loss)
        continue;
      std::string sl = shp({{"rows", R}, {"vocab", V}});
      b.measure("tgrt_cross_entropy_fwd_bwd", lo, (double)R * V, 2.0 * e * R * V + 4.0 * R + 8, sl,
                [&] {
                  tgrt_cross_entropy_fwd_bwd(b.ctx, "cal", lo, logits, ids, loss, dloss, logits, R,
                                             V, -1);
                });
      b.measure("tgrt_cross_entropy_fwd", lo, (double)R * V, e * R * V + 4.0 * R + 4, sl,
                [&] { tgrt_cross_entropy_fwd(b.ctx, "cal", lo, logits, ids, loss, R, V, -1); });
    }
}

/// The grid's groups of kernels, in the order the full calibration runs them; `--only GROUP`
/// runs one.
struct Group {
  const char *name;
  void (*run)(Bench &, const Grid &, bool cuda);
};
const Group kGroupList[] = {
    {"rows", [](Bench &b, const Grid &g, bool) { calibrateRows(b, g); }},
    {"gemms", [](Bench &b, const Grid &g, bool) { calibrateGemms(b, g); }},
    {"batched-gemms", [](Bench &b, const Grid &g, bool) { calibrateBatchedGemms(b, g); }},
    {"attention", [](Bench &b, const Grid &g, bool cuda) { calibrateAttention(b, g, cuda); }},
    {"loss", [](Bench &b, const Grid &g, bool) { calibrateEmbeddingAndLoss(b, g); }},
};
/// The group called `name`; nullptr when there is none.
const Group *findGroup(const std::string &name) {
  for (const Group &gr : kGroupList)
    if (name == gr.name)
      return &gr;
  return nullptr;
}
/// "rows, gemms, ...": the groups' names for messages.
std::string groupNames() {
  std::string s;
  for (const Group &gr : kGroupList)
    s += (s.empty() ? "" : ", ") + std::string(gr.name);
  return s;
}

/// The per-call overhead: the median time of a call that does (almost) nothing.
double calibrateOverhead(Bench &b) {
  b.next = 0;
  float *acc = b.filled(2, 1.0f);
  float *loss = b.filled(1, 1.0f);
  double zero = b.measure("tgrt_zero", -1, 0, 256, "bytes 256", [&] {
    tgrt_zero(b.ctx, "cal", acc, 4);
  });
  b.measure("tgrt_clip_scale", -1, 1, 8, "n 2", [&] { tgrt_clip_scale(b.ctx, "cal", acc, 1.0f); });
  b.measure("tgrt_report_loss", -1, 1, 4, "n 1", [&] { tgrt_report_loss(b.ctx, "cal", loss); });
  b.measure("tgrt_fill", F32, 1, 4, "n 1", [&] { tgrt_fill(b.ctx, "cal", F32, loss, 1, 1.0f); });
  int64_t cnt = 0;
  tgrt_take_loss(b.ctx, &cnt);
  return zero;
}

#ifdef TGC_CALIBRATE_CUDA
/// The power section (CostModel.h PowerProbe, docs/cost-model.md "The power limit"): the
/// board idle, one bandwidth-bound kernel and two GEMMs (GPT-2 small's MLP up-projection and
/// a Llama-sized one), each timed as the grid times a point and then queued back to back
/// for ~1.2 s with the energy counter and the clock read every ~20 ms of GPU work. ~8 s.
/// False (and a note) when NVML gives no readings: the caller then drops the section.
bool calibratePower(Bench &b, CalibrationTable &t) {
  int device = 0;
  cudaGetDevice(&device);
  tgrt_cuda::PowerSample s0;
  std::string why;
  if (!tgrt_cuda::powerSample(device, s0, why)) {
    std::fprintf(stderr, "tgc-calibrate: no power section: %s\n", why.c_str());
    return false;
  }
  t.power.limitW = s0.limitW;
  t.power.maxMhz = s0.maxSmMhz;
  auto sample = [&](tgrt_cuda::PowerSample &s) {
    if (!tgrt_cuda::powerSample(device, s, why)) {
      std::fprintf(stderr, "tgc-calibrate: no power section: %s\n", why.c_str());
      return false;
    }
    return true;
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  // Idle: 1 s to settle after the grid, then 0.6 s of nothing.
  {
    tgrt_synchronize(b.ctx);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    tgrt_cuda::PowerSample a, z, m;
    std::vector<double> mhz;
    if (!sample(a))
      return false;
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(600)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!sample(m))
        return false;
      mhz.push_back(m.smMhz);
    }
    if (!sample(z))
      return false;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    PowerProbe p;
    p.name = "idle";
    p.sustainedMhz = median(mhz);
    p.energyWatts = (z.energyJ - a.energyJ) / secs;
    p.watts = z.powerW;
    std::fprintf(stderr, "  power: idle %.1f W (NVML's own reading %.1f W), SM clock %.0f MHz\n",
                 p.energyWatts, z.powerW, p.sustainedMhz);
    t.power.probes.push_back(p);
  }
  auto probe = [&](const char *name, const char *kernel, int32_t dt, double flops, double bytes,
                   const std::string &shape, const std::function<void()> &call) {
    PowerProbe p;
    p.name = name;
    p.kernel = kernel;
    p.dtype = dtName(dt);
    p.shape = shape;
    p.flops = flops;
    p.bytes = bytes;
    p.burstMs = b.timePoint(call);
    tgrt_cuda::PowerSample m, z;
    if (!sample(m))
      return false;
    p.burstMhz = m.smMhz;
    // The calls are queued without waiting (the GPU never idles: the host stays ahead and
    // blocks when the launch queue is full), in batches of ~20 ms of GPU time with a
    // reading of the energy counter and the clock after each: 0.4 s to reach the limit's
    // steady state, then a 0.8 s window; the power is the counter's slope over the
    // window's readings (host time: while the queue is full it tracks the GPU's).
    const int k = (int)std::clamp(20.0 / p.burstMs, 1.0, 100000.0);
    cudaStream_t st = static_cast<cudaStream_t>(
        tgrt_cuda::stream(reinterpret_cast<tgrt_cuda::Context *>(b.ctx)));
    cudaEvent_t ea, eb;
    cudaEventCreate(&ea);
    cudaEventCreate(&eb);
    struct Events { // destroyed on every return below
      cudaEvent_t a, b;
      ~Events() {
        cudaEventDestroy(a);
        cudaEventDestroy(b);
      }
    } events{ea, eb};
    using clk = std::chrono::steady_clock;
    const auto t0 = clk::now();
    while (clk::now() - t0 < std::chrono::milliseconds(400))
      for (int i = 0; i < k; ++i)
        call();
    cudaEventRecord(ea, st);
    std::vector<double> mhz, when, joules;
    long long calls = 0;
    const auto t1 = clk::now();
    while (clk::now() - t1 < std::chrono::milliseconds(800)) {
      for (int i = 0; i < k; ++i)
        call();
      calls += k;
      if (!sample(m))
        return false;
      mhz.push_back(m.smMhz);
      when.push_back(std::chrono::duration<double>(clk::now() - t1).count());
      joules.push_back(m.energyJ);
    }
    cudaEventRecord(eb, st);
    cudaEventSynchronize(eb);
    float gpuMs = 0;
    cudaEventElapsedTime(&gpuMs, ea, eb);
    if (!sample(z))
      return false;
    // The slope over the readings after the first 0.1 s (least squares: the counter's
    // updates are coarser than the readings).
    double sx = 0, sy = 0, sxx = 0, sxy = 0, nr = 0;
    for (size_t i = 0; i < when.size(); ++i)
      if (when[i] >= 0.1) {
        sx += when[i], sy += joules[i], sxx += when[i] * when[i], sxy += when[i] * joules[i];
        nr += 1;
      }
    const double slope = nr >= 3 ? (nr * sxy - sx * sy) / (nr * sxx - sx * sx) : 0.0;
    const double ms = gpuMs, secs = when.empty() ? 1.0 : when.back();
    p.sustainedMs = ms / (double)calls;
    p.sustainedMhz = median(mhz);
    p.watts = z.powerW; // NVML's own average: what the limit holds (see PowerProbe)
    p.energyWatts = slope;
    std::fprintf(stderr,
                 "  power: %-6s %-12s %-4s %-24s burst %.4f ms at %.0f MHz, sustained %.4f ms at "
                 "%.0f MHz, %.1f W (NVML's own reading %.1f W; %zu readings; GPU time %.0f ms "
                 "for %.0f ms of queueing)\n",
                 name, kernel, p.dtype.c_str(), shape.c_str(), p.burstMs, p.burstMhz,
                 p.sustainedMs, p.sustainedMhz, slope, z.powerW, when.size(), ms, secs * 1e3);
    if (nr < 3 || slope <= 0) {
      std::fprintf(stderr, "tgc-calibrate: no power section: the energy counter did not move\n");
      return false;
    }
    t.power.probes.push_back(p);
    return true;
  };
  const int32_t bf = TGRT_BF16;
  { // memory: a bf16 add of 2^27 elements (768 MiB moved per call)
    const int64_t n = 1LL << 27;
    void *x = b.tensor(bf, n), *y = b.tensor(bf, n), *z = b.tensor(bf, n);
    if (!x || !y || !z)
      return false;
    if (!probe("memory", "tgrt_add", bf, 0.0, 6.0 * n, "n " + std::to_string(n),
               [&] { tgrt_add(b.ctx, "cal", bf, x, y, z, n); }))
      return false;
  }
  for (auto [m, n, k] : {std::array<int64_t, 3>{16384, 3072, 768},
                         std::array<int64_t, 3>{16384, 8192, 2048}}) {
    void *x = b.tensor(bf, m * k), *w = b.tensor(bf, k * n), *y = b.tensor(bf, m * n);
    if (!x || !w || !y)
      return false;
    const std::string shape = shp({{"m", m}, {"n", n}, {"k", k}}) + " nn";
    if (!probe("gemm", "tgrt_matmul", bf, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n), shape,
               [&] { tgrt_matmul(b.ctx, "cal", bf, x, w, y, 1, m, n, k, 0, 0, 0, 0, 0, 1.0f, 0.0f); }))
      return false;
  }
  return true;
}
#endif

#ifndef TGC_CALIBRATE_CUDA
std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown CPU";
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      name = line.substr(line.find(':') + 2);
      break;
    }
  return name + " (" + std::to_string(std::thread::hardware_concurrency()) + " CPUs)";
}
#endif

/// Datasheet peaks of known GPUs (dense): {f32, tf32, bf16, f16, bytes/s, link bytes/s}.
bool knownGpuPeaks(const std::string &name, CalibrationTable &t) {
  auto set = [&](double f32, double tf32, double bf16, double mem, double link) {
    t.peakFlops = {{"f32", f32}, {"tf32", tf32}, {"bf16", bf16}, {"f16", bf16}};
    t.memBytesPerS = mem;
    t.linkBytesPerS = link;
  };
  if (name.find("H200") != std::string::npos)
    set(66.9e12, 494.7e12, 989.4e12, 4.8e12, 450e9);
  else if (name.find("H100") != std::string::npos && name.find("PCIe") != std::string::npos)
    set(51.2e12, 378e12, 756e12, 2.0e12, 300e9);
  else if (name.find("H100") != std::string::npos)
    set(66.9e12, 494.7e12, 989.4e12, 3.35e12, 450e9);
  else if (name.find("A100") != std::string::npos)
    set(19.5e12, 156e12, 312e12, name.find("80GB") != std::string::npos ? 2.0e12 : 1.555e12,
        300e9);
  else
    return false;
  return true;
}

/// Peaks measured from the table's own points: the fastest GEMM per dtype and the fastest
/// memory-bound kernel.
void measuredPeaks(CalibrationTable &t) {
  for (const char *dt : {"f32", "bf16", "f16"}) {
    double best = 0;
    for (const char *k : {"tgrt_matmul", "tgrt_matmul_bias", "tgrt_matmul_acc"})
      if (auto it = t.kernels.find(k); it != t.kernels.end())
        if (auto d = it->second.find(dt); d != it->second.end())
          for (const CalibrationPoint &p : d->second)
            best = std::max(best, p.flops / (p.ms * 1e-3));
    if (best > 0)
      t.peakFlops[dt] = best;
  }
  if (!t.peakFlops.count("f32"))
    t.peakFlops["f32"] = 1e9;
  double bw = 0;
  for (const char *k : {"tgrt_add", "tgrt_copy2d", "tgrt_accumulate", "tgrt_cast"})
    if (auto it = t.kernels.find(k); it != t.kernels.end())
      for (const auto &[dt, pts] : it->second)
        for (const CalibrationPoint &p : pts)
          bw = std::max(bw, p.bytes / (p.ms * 1e-3));
  t.memBytesPerS = bw > 0 ? bw : 1e9;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

/// Writes `t` to `out` (through a temporary file renamed over it), after checking that it
/// parses the way tgc reads it. False with a message on stderr.
bool writeTable(const CalibrationTable &t, const std::string &out) {
  std::string text = mlir::tg::calibrationTableJson(t);
  CalibrationTable back;
  std::string err;
  if (!mlir::tg::parseCalibrationTable(text, out, back, err)) {
    std::fprintf(stderr, "tgc-calibrate: internal: the table does not parse: %s\n", err.c_str());
    return false;
  }
  std::string tmp = out + ".tmp-tgc";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) {
      std::fprintf(stderr, "tgc-calibrate: %s: cannot write\n", out.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::fprintf(stderr, "tgc-calibrate: %s: cannot write\n", out.c_str());
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

int usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s --out FILE [--quick]\n"
               "       %s --out FILE --power-only TABLE   (cuda: TABLE with its power section "
               "measured again, ~8 s)\n"
               "       %s --out FILE [--quick] --only GROUP TABLE   (TABLE with GROUP's kernels "
               "measured again; GROUP: %s)\n",
               argv0, argv0, argv0, groupNames().c_str());
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      o.out = argv[++i];
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--power-only" && i + 1 < argc)
      o.powerInto = argv[++i];
    else if (a == "--only" && i + 2 < argc) {
      o.onlyGroup = argv[++i];
      o.onlyInto = argv[++i];
    }
    else
      return usage(argv[0]);
  }
  if (o.out.empty())
    return usage(argv[0]);
  const Group *only = nullptr;
  if (!o.onlyInto.empty() && !(only = findGroup(o.onlyGroup))) {
    std::fprintf(stderr, "tgc-calibrate: --only: unknown group '%s' (groups: %s)\n",
                 o.onlyGroup.c_str(), groupNames().c_str());
    return 2;
  }
#ifdef TGC_CALIBRATE_CUDA
  const bool cuda = true;
  const int64_t arena = 12LL << 30, workspace = 256LL << 20;
#else
  const bool cuda = false;
  const int64_t arena = (o.quick ? 256LL : 1536LL) << 20, workspace = 0;
#endif
  Bench b;
  b.quick = o.quick;
  b.targetMs = cuda ? (o.quick ? 1.0 : 3.0) : (o.quick ? 2.0 : 8.0);
  b.reps = 5;
  if (!b.init(arena, workspace)) {
    std::fprintf(stderr, "tgc-calibrate: cannot create a %s context with a %lld-byte arena\n",
                 tgrt_backend_name(), (long long)arena);
    return 1;
  }
  CalibrationTable &t = b.table;
  if (!o.powerInto.empty()) {
#ifdef TGC_CALIBRATE_CUDA
    std::string err;
    if (!mlir::tg::loadCalibrationTable(o.powerInto, t, err)) {
      std::fprintf(stderr, "tgc-calibrate: --power-only: %s\n", err.c_str());
      return 1;
    }
    t.power = {};
    const bool ok = calibratePower(b, t);
    tgrt_synchronize(b.ctx);
    tgrt_ctx_destroy(b.ctx);
    if (!ok)
      return 1;
    const std::string mark = "; power section measured ";
    if (const size_t at = t.note.find(mark); at != std::string::npos)
      t.note.erase(at); // the earlier section's date goes with it
    t.note += mark + today() + " (--power-only)";
    return writeTable(t, o.out) ? 0 : 1;
#else
    std::fprintf(stderr, "tgc-calibrate: --power-only needs the cuda target (NVML)\n");
    return 2;
#endif
  }
  t.target = cuda ? "cuda" : "cpu";
#ifdef TGC_CALIBRATE_CUDA
  t.device = tgrt_cuda::deviceName(reinterpret_cast<tgrt_cuda::Context *>(b.ctx));
  {
    // The memory training.checkpointing "auto" fits plans into (CostModel.h memoryBytes):
    // cudaMemGetInfo's total, which the CUDA context's own memory also comes out of.
    size_t freeB = 0, totalB = 0;
    if (cudaMemGetInfo(&freeB, &totalB) == cudaSuccess)
      t.memoryBytes = (int64_t)totalB;
  }
#else
  t.device = cpuName();
#endif
  if (!o.onlyInto.empty()) {
    // One group (on the grid --quick selects) into a fresh table; its kernels replace TABLE's.
    CalibrationTable into;
    std::string err;
    if (!mlir::tg::loadCalibrationTable(o.onlyInto, into, err)) {
      std::fprintf(stderr, "tgc-calibrate: --only: %s\n", err.c_str());
      tgrt_ctx_destroy(b.ctx);
      return 1;
    }
    if (into.target != t.target || into.device != t.device) {
      std::fprintf(stderr,
                   "tgc-calibrate: --only: %s was measured on '%s' (target %s), this is '%s' "
                   "(target %s): its other kernels would not match\n",
                   o.onlyInto.c_str(), into.device.c_str(), into.target.c_str(),
                   t.device.c_str(), t.target.c_str());
      tgrt_ctx_destroy(b.ctx);
      return 1;
    }
    only->run(b, makeGrid(cuda, o.quick), cuda);
    const std::string &grp = o.onlyGroup;
    tgrt_synchronize(b.ctx);
    tgrt_ctx_destroy(b.ctx);
    std::string names;
    for (const auto &[kernel, byDtype] : t.kernels) {
      into.kernels[kernel] = byDtype;
      names += (names.empty() ? "" : ", ") + kernel;
    }
    into.note += "; " + names + " measured again " + today() + " (--only " + grp + ")";
    std::fprintf(stderr, "tgc-calibrate: --only %s: %d points of %zu kernels into a copy of %s\n",
                 grp.c_str(), b.cases, t.kernels.size(), o.onlyInto.c_str());
    return writeTable(into, o.out) ? 0 : 1;
  }
  t.measured = today();
  const Grid g = makeGrid(cuda, o.quick);
  auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "tgc-calibrate: %s backend on %s, %s grid\n", tgrt_backend_name(),
               t.device.c_str(), o.quick ? "quick" : "full");
  double overhead = calibrateOverhead(b);
  for (const Group &gr : kGroupList)
    gr.run(b, g, cuda);
#ifdef TGC_CALIBRATE_CUDA
  b.next = 0;
  if (!o.quick && !calibratePower(b, t))
    t.power = {}; // no section rather than a partial one
#endif
  tgrt_synchronize(b.ctx);
  tgrt_ctx_destroy(b.ctx);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.callOverheadMs = overhead;
  std::string peaks;
  if (cuda && knownGpuPeaks(t.device, t)) {
    peaks = "datasheet peaks of the GPU (dense)";
  } else {
    measuredPeaks(t);
    peaks = "peaks = the fastest GEMM per dtype and the fastest memory-bound kernel measured";
  }
  t.note = "tgc calibrate" + std::string(o.quick ? " --quick" : "") + ": " +
           std::to_string(b.cases) + " points in " + std::to_string((int)std::lround(secs)) +
           " s; median of " + std::to_string(b.reps) + " repetitions after 2 warm-up calls; " +
           peaks + "; call_overhead_ms = tgrt_zero of 4 bytes";
  if (!writeTable(t, o.out))
    return 1;
  std::fprintf(stderr,
               "tgc-calibrate: wrote %s: %d points, %zu kernels, %.1f s; call overhead %.4f ms; "
               "peak f32 %.3g FLOP/s, memory %.3g B/s (%s)\n",
               o.out.c_str(), b.cases, t.kernels.size(), secs, overhead,
               mlir::tg::peakFlopsOf(t, "f32"), t.memBytesPerS, peaks.c_str());
  return 0;
}
