// tgrt-cuda-check — compares every CUDA kernel of the runtime with the CPU reference backend.
//
// The program links the CPU backend (extern "C" tgrt_*) and the CUDA implementation
// (tgrt_cuda::*, runtime/cuda/CudaRuntime.h) side by side. For each kernel and element type
// (f32, bf16, f16; tgrt.h's enum tgrt_dtype) it draws random inputs (a fresh seed every run
// unless --seed; never zeros; for bf16 / f16 the values are representable, so both backends
// read the same numbers), runs both, and compares:
//   error = max |cuda - cpu| / max |cpu| over the widened outputs. PASS when
//   - f32 outputs: error <= 1e-5 (GEMMs with TF32 off);
//   - bf16 / f16 outputs where the backends may sum in another order or use other math
//     functions (GEMM, layer norm, softmax, GELU, reductions, AdamW): error <= 1e-2 (bf16) /
//     2e-3 (f16): one rounding of nearly equal floats differs by at most one unit in the last
//     place, 2^-7 (bf16) / 2^-10 (f16) of the largest value; matmul_bias_gelu (GELU of a
//     rounded pre-activation) twice that;
//   - bf16 / f16 outputs where the contract fixes every float operation (cast, copies,
//     embedding, add / accumulate / bias_add / positional, fill, dropout, causal_mask,
//     positional_bwd): bit for bit (error 0);
//   - embedding_bwd: within the dtype's tolerance (CUDA sums long runs of one id chunk by
//     chunk, CudaRuntime.h), and bit for bit equal over two runs (deterministic);
//   - cast: bit for bit for every pair of types, over all 65536 bf16 / f16 patterns and 2^20
//     random float patterns plus specials (NaN payloads, infinities, subnormals, ties,
//     overflow).
//   Outputs are poisoned with NaN before each CUDA run, so an unwritten element fails.
// Layer norm runs every typed combination the CUDA backend compiles (one dtype, or x and the
// parameters f32 with y bf16 / f16) and one mixed combination of its generic kernel. AdamW
// runs several (p, state) dtype pairs, the loss-scale unscaling of clip_scale, the NaN of an
// overflowed step and AdamW's skip of it.
// tensor_stats (the --find-nonfinite statistics: NaN / +inf / -inf counts, min, max) must equal
// the CPU's field for field, for f32, bf16, f16 and int32, contiguous and strided.
// Attention is checked three ways for t in {64, 256, 1024} (plus t = 100, not a tile
// multiple), hd in {32, 64, 128}, window in {0, 1, 64}: flash vs CPU (out, lse, dq, dk, dv)
// and flash vs a naive GPU composition (matmul, causal_mask, softmax, matmul and their
// backward). It prints a table, then "N passed, M failed", and exits non-zero on a failure.
// The bf16 and f16 attention (tensor cores) are checked against the CPU reference (fp32 on
// the widened inputs, outputs rounded) on the same shapes: PASS when out, dq, dk, dv are
// within 1e-2 (bf16) / 2e-3 (f16) and lse within 1e-3 (relative to the largest reference
// value).
// The TF32 attention (fp32 in/out, tensor cores; what TGRT_TF32=1 selects, called here
// directly) is checked against the fp32 CPU reference on the same shapes: PASS when out and
// (dq, dk, dv) are within 2e-3 and lse within 1e-4.
// Then it times flash attention fwd + bwd at t = 1024, hd = 64, bh = 16*12 for windows 0,
// 256 and 128: fp32, bf16, f16 and TF32; and the memory-bound kernels and GEMMs at GPT-2
// small's shapes in f32 and bf16 (benchKernels).
//
// The Llama family (RMSNorm, RoPE, SwiGLU, grouped-query attention; checkLlama): RMSNorm in
// the layer norm's dtype combinations (tolerances as the layer norm's, dgamma also bit for bit
// over two runs), RoPE with and without Llama 3 frequency scaling, theta 1e4 and 5e5, hd 64 and
// 128 (and scalar-path head dims), in place and out of place, sign +1 and -1, SwiGLU forward
// and backward (tolerance of the dtype: the CPU computes in double), and grouped-query
// attention with kv_heads 1, 2 and heads on the packed [B, t, H + 2 Hkv, hd] layout, causal,
// windowed and full, hd 64 and 128: exact fp32, TF32, bf16 and f16 (both kernel forms at hd
// 64) with the attention tolerances; kv_heads = heads must equal tgrt_attention_* bit for bit.
//
// cuDNN's fused attention (built with TGRT_HAVE_CUDNN; CudnnAttention.cu, TGRT_ATTN=cudnn;
// checkAttentionCudnns): bf16 and f16 on the packed layout, MHA, GQA and MQA, causal, not
// causal, t 100 and 77, hd 64 and 128, against the CPU with the bf16 / f16 attention
// tolerances (a refusal fails); windowed and padded rows too (cuDNN may refuse those: then
// printed, not failed); the entry points with AttentionImpl::Cudnn equal to the direct calls,
// the own forward into cuDNN's backward and the reverse, and the deterministic backward (bit
// for bit twice). Timings: cuDNN beside the own kernels at GPT-2 small, Llama 3.2 1B and
// hd 128 shapes (benchAttentionCudnn), with each graph's workspace.
//
// Usage: tgrt-cuda-check [--quick] [--no-bench | --bench-only | --bench-kernels] [--sweep]
//                        [--llama] [--cudnn] [--seed N] [--dump DIR]
//   --quick   small attention shapes only (t in {64, 100, 256}); used with the CPU emulator
//   --sweep   every compiled attention tile shape: checked, and timed unless --quick
//   --llama   only the Llama family's checks (with --quick: the emulator's small shapes)
//   --gemm    only the own Hopper GEMM's checks (checkOwnGemm; --quick: the small shapes)
//   --cudnn   only the cuDNN attention checks, then (unless --no-bench) their timings
//   --bench-only  only the timings (scripts/gpu-check.sh checks with TGRT_CUDA_SYNC=1, which
//             synchronises after every launch, and times in a separate run without it)
//   --bench-kernels  only the memory-bound kernel and GEMM timings (benchKernels)
//   --bench-gemm  only the own Hopper GEMM against cuBLASLt (benchOwnGemm)
//   --dump    write q, k, v, out, lse, dout, dq, dk, dv of a few attention cases as raw
//             float32 files plus DIR/manifest.txt, for bench/cuda/sdpa_check.py (PyTorch)
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/Power.h"
#include "runtime/tgrt.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using Vec = std::vector<float>;
using IVec = std::vector<int32_t>;
using Bytes = std::vector<uint8_t>;

constexpr double kTol = 1e-5;
constexpr double kTolBf16 = 1e-2; // bf16 outputs with summation-order freedom
constexpr double kTolF16 = 2e-3;  // f16 outputs with summation-order freedom

constexpr int32_t kDtypes[3] = {TGRT_F32, TGRT_BF16, TGRT_F16};

const char* dtName(int32_t dt) {
  return dt == TGRT_F32 ? "f32" : dt == TGRT_BF16 ? "bf16" : dt == TGRT_F16 ? "f16" : "?";
}
/// Tolerance of an output of type dt where the backends may round differently.
double tolFor(int32_t dt) { return dt == TGRT_F32 ? kTol : dt == TGRT_BF16 ? kTolBf16 : kTolF16; }
/// Tolerance of an output of type dt that the contract fixes bit for bit: 0 for bf16 / f16
/// (f32 keeps the fp32-only check's 1e-5).
double exactTol(int32_t dt) { return dt == TGRT_F32 ? kTol : 0.0; }
/// "name" for f32 (the fp32-only check's rows), "name [bf16]" otherwise.
std::string named(const char* name, int32_t dt) {
  return dt == TGRT_F32 ? std::string(name) : std::string(name) + " [" + dtName(dt) + "]";
}

// ------------------------------------------------------------------ utilities --

void die(const char* what, const char* detail) {
  std::fprintf(stderr, "tgrt: cuda-check: %s: %s\n", what, detail);
  std::exit(2);
}

/// A CUDA context for `model` created with the environment variable `var` unset (restored
/// after): for checks of the default behaviour that an opt-in switch read at creation changes
/// (TGRT_GEMM_STEP_TUNE=1 defers the tuning cache's line and the graph capture until its
/// GEMMs are decided). Dies when no context can be created.
tgrt_cuda::Context* contextWithout(const tgrt_model* model, const char* var) {
  const char* v = std::getenv(var);
  const std::string saved = v ? v : "";
  if (v) ::unsetenv(var);
  tgrt_cuda::Context* g = tgrt_cuda::createContext(model);
  if (v) ::setenv(var, saved.c_str(), 1);
  if (!g) die("context", "could not create a CUDA context");
  return g;
}

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, cudaGetErrorString(e));
}

/// A device buffer of n elements of T.
template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    ck(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(1, n) * sizeof(T)), "cudaMalloc");
  }
  Dev(const std::vector<T>& host) : Dev(host.size()) { put(host); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  // The runtime's kernels run on a non-blocking stream, which does not wait for the legacy
  // default stream that cudaMemcpy / cudaMemset use (and a pageable cudaMemcpy may return
  // before its DMA lands): finish every transfer before a kernel can read it.
  void put(const std::vector<T>& host) {
    ck(cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after H2D)");
  }
  std::vector<T> get() const {
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (a kernel failed)");
    std::vector<T> h(n);
    ck(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return h;
  }
  /// Fills with NaN bytes so that unwritten outputs show up.
  void poison() {
    ck(cudaMemset(p, 0xff, std::max<size_t>(1, n) * sizeof(T)), "cudaMemset");
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after memset)");
  }
};

// ----------------------------------------------------------- typed host tensors --

/// A host tensor of dtype dt: its bytes (f32, or bf16 / f16 bit patterns).
struct Raw {
  int32_t dt = TGRT_F32;
  Bytes b;
  size_t n() const { return b.size() / (size_t)tgrt_dtype_size(dt); }
  void* data() { return b.data(); }
  const void* data() const { return b.data(); }
};

/// f rounded to dt (RNE, tgrt.h's helpers).
Raw encode(const Vec& f, int32_t dt) {
  Raw r;
  r.dt = dt;
  r.b.resize(f.size() * (size_t)tgrt_dtype_size(dt));
  for (size_t i = 0; i < f.size(); ++i) {
    if (dt == TGRT_F32) {
      std::memcpy(r.b.data() + 4 * i, &f[i], 4);
    } else {
      const uint16_t h = dt == TGRT_BF16 ? tgrt_bf16_from_float(f[i]) : tgrt_f16_from_float(f[i]);
      std::memcpy(r.b.data() + 2 * i, &h, 2);
    }
  }
  return r;
}
/// The widened (exact) values of r.
Vec decode(const Raw& r) {
  Vec f(r.n());
  for (size_t i = 0; i < f.size(); ++i) {
    if (r.dt == TGRT_F32) {
      std::memcpy(&f[i], r.b.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, r.b.data() + 2 * i, 2);
      f[i] = r.dt == TGRT_BF16 ? tgrt_bf16_to_float(h) : tgrt_f16_to_float(h);
    }
  }
  return f;
}
/// n zero elements of dt.
Raw zerosOf(int32_t dt, size_t n) {
  Raw r;
  r.dt = dt;
  r.b.assign(n * (size_t)tgrt_dtype_size(dt), 0);
  return r;
}

/// A device tensor of dtype dt (bytes).
struct DevT : Dev<uint8_t> {
  int32_t dt;
  explicit DevT(const Raw& r) : Dev<uint8_t>(r.b), dt(r.dt) {}
  DevT(int32_t dt_, size_t count) : Dev<uint8_t>(count * (size_t)tgrt_dtype_size(dt_)), dt(dt_) {}
  /// Element i's address.
  void* at(size_t i) const { return p + i * (size_t)tgrt_dtype_size(dt); }
  Raw raw() const {
    Raw r;
    r.dt = dt;
    r.b = get();
    return r;
  }
  Vec f() const { return decode(raw()); }
};

/// Elements whose bytes differ.
size_t bitDiffs(const Raw& a, const Raw& b) {
  if (a.b.size() != b.b.size()) return std::max(a.n(), b.n()) + 1;
  const size_t es = (size_t)tgrt_dtype_size(a.dt);
  size_t d = 0;
  for (size_t i = 0; i < a.n(); ++i) d += std::memcmp(a.b.data() + i * es, b.b.data() + i * es, es) != 0;
  return d;
}

/// The largest difference between a and b (bf16 / f16) in units in the last place of b's
/// element (the spacing of the dtype at |b|); inf on a size mismatch or a NaN.
double ulpDiff(const Raw& a, const Raw& b) {
  if (a.b.size() != b.b.size() || a.dt != b.dt || a.dt == TGRT_F32)
    return std::numeric_limits<double>::infinity();
  const Vec fa = decode(a), fb = decode(b);
  const int mant = a.dt == TGRT_BF16 ? 7 : 10;
  double worst = 0.0;
  for (size_t i = 0; i < fa.size(); ++i) {
    if (std::isnan(fa[i]) || std::isnan(fb[i])) return std::numeric_limits<double>::infinity();
    int e = 0;
    std::frexp(std::max(std::fabs(fb[i]), 1e-30f), &e); // |b| in [2^(e-1), 2^e)
    const double ulp = std::ldexp(1.0, e - 1 - mant);
    worst = std::max(worst, std::fabs((double)fa[i] - (double)fb[i]) / ulp);
  }
  return worst;
}

/// x rounded to dt and widened back.
float roundTo(float x, int32_t dt) {
  if (dt == TGRT_BF16) return tgrt_bf16_to_float(tgrt_bf16_from_float(x));
  if (dt == TGRT_F16) return tgrt_f16_to_float(tgrt_f16_from_float(x));
  return x;
}

/// Random numbers from one seed (std::mt19937_64: the same sequence on every platform).
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)((gen() >> 11) * (1.0 / 9007199254740992.0));
  }
  float normal() {
    std::normal_distribution<float> d(0.0f, 1.0f);
    return d(gen);
  }
  int32_t below(int64_t n) { return (int32_t)(gen() % (uint64_t)n); }
  /// n values, uniform in [lo, hi), never exactly zero.
  Vec vec(size_t n, float lo = -1.0f, float hi = 1.0f) {
    Vec v(n);
    for (float& x : v) {
      do x = uniform(lo, hi);
      while (x == 0.0f);
    }
    return v;
  }
  Vec normals(size_t n, float scale = 1.0f) {
    Vec v(n);
    for (float& x : v) x = scale * normal();
    return v;
  }
  /// n values of dt, uniform in [lo, hi) before rounding, never zero after it.
  Raw tensor(int32_t dt, size_t n, float lo = -1.0f, float hi = 1.0f) {
    Vec v(n);
    for (float& x : v) {
      do x = roundTo(uniform(lo, hi), dt);
      while (x == 0.0f);
    }
    return encode(v, dt);
  }
};

/// max |got - ref| / max |ref| (max |got - ref| when ref is all zero); inf on NaN or a size
/// mismatch. Matching infinities (e.g. lse = -inf) count as equal.
double relErr(const Vec& got, const Vec& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double maxDiff = 0.0, maxRef = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isinf(ref[i]) && got[i] == ref[i]) continue;
    const double d = std::fabs((double)got[i] - (double)ref[i]);
    if (std::isnan(d) || std::isinf(d)) return std::numeric_limits<double>::infinity();
    maxDiff = std::max(maxDiff, d);
    if (std::isfinite(ref[i])) maxRef = std::max(maxRef, std::fabs((double)ref[i]));
  }
  return maxRef > 0.0 ? maxDiff / maxRef : maxDiff;
}
double relErr(const Raw& got, const Raw& ref) { return relErr(decode(got), decode(ref)); }

/// relErr of several outputs of one op taken together: max diff over all / max |ref| over
/// all. Used for (dq, dk, dv): at window 1 the exact dq and dk are 0 (P = 1 on the diagonal,
/// so dS = P (dP - D) = 0 up to rounding), and their own relative error would be noise/0.
double jointErr(std::initializer_list<std::pair<const Vec*, const Vec*>> pairs) {
  Vec got, ref;
  for (const auto& p : pairs) {
    got.insert(got.end(), p.first->begin(), p.first->end());
    ref.insert(ref.end(), p.second->begin(), p.second->end());
  }
  return relErr(got, ref);
}

struct Row {
  std::string kernel, shape;
  double err;
  bool pass;
};
std::vector<Row> g_rows;

void record(const std::string& kernel, const std::string& shape, double err, double tol = kTol) {
  const bool pass = err <= tol; // NaN fails
  g_rows.push_back({kernel, shape, err, pass});
  std::printf("%-34s %-42s %11.3e  %s\n", kernel.c_str(), shape.c_str(), err,
              pass ? "PASS" : "FAIL");
  std::fflush(stdout);
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[256];
  va_list args;
  va_start(args, f);
  std::vsnprintf(buf, sizeof buf, f, args);
  va_end(args);
  return buf;
}

struct Contexts {
  tgrt_model model;
  tgrt_ctx* cpu = nullptr;
  tgrt_cuda::Context* gpu = nullptr;
};

// ------------------------------------------------------------------------- checks --

/// Power.h's reading (what tgrt_power_sample and the trainer's energy line use): under the
/// emulator none, with a reason; on a GPU whose NVML loads, the energy counter rises over
/// ~0.3 s of memsets at a mean power between 10 W and twice the limit, and the SM clock is
/// within (0, max]. A GPU whose NVML cannot be read (a container without the library) gets a
/// note, no row: the trainer then reports no energy, which is not a fault of the runtime.
void checkPowerSample() {
  tgrt_cuda::PowerSample a, b;
  std::string why;
#ifdef TGRT_CUDA_EMULATE
  const bool read = tgrt_cuda::powerSample(0, a, why);
  record("power sample (NVML)", "emulator: none, with a reason", !read && !why.empty() ? 0.0 : 1.0,
         0.0);
#else
  int device = 0;
  cudaGetDevice(&device);
  if (!tgrt_cuda::powerSample(device, a, why)) {
    std::printf("power sample (NVML): not read on this machine (%s); no row\n", why.c_str());
    return;
  }
  const size_t n = (size_t)64 << 20; // 256 MB of floats, memset until 0.3 s have passed
  DevT buf(TGRT_F32, n);
  const auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  for (int i = 0; secs < 0.3; ++i) {
    cudaMemsetAsync(buf.p, i & 0xff, n * sizeof(float));
    if (i % 16 == 15) {
      cudaDeviceSynchronize();
      secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  const bool again = tgrt_cuda::powerSample(device, b, why);
  const double watts = again ? (b.energyJ - a.energyJ) / secs : 0.0;
  const bool ok = again && watts > 10.0 && watts < 2.0 * b.limitW && b.limitW > 0 &&
                  b.smMhz > 0 && b.smMhz <= b.maxSmMhz && b.powerW > 0;
  record("power sample (NVML)",
         fmt("%.1f J in %.2f s = %.0f W, %.0f of %.0f MHz, limit %.0f W", again ? b.energyJ - a.energyJ : 0.0,
             secs, watts, b.smMhz, b.maxSmMhz, b.limitW),
         ok ? 0.0 : 1.0, 0.0);
#endif
}

void checkContext(Contexts& c, Rng& rng) {
  // Region round trip through upload / download.
  Vec v = rng.vec(1000);
  tgrt_cuda::upload(c.gpu, TGRT_ARENA, 256, v.data(), (int64_t)(v.size() * sizeof(float)));
  Vec back(v.size());
  tgrt_cuda::download(c.gpu, TGRT_ARENA, 256, back.data(), (int64_t)(back.size() * sizeof(float)));
  record("upload/download", "1000 floats @ arena+256", relErr(back, v));
  // Regions start zero-filled.
  Vec z(1000);
  tgrt_cuda::download(c.gpu, TGRT_PERSISTENT, 0, z.data(), (int64_t)(z.size() * sizeof(float)));
  record("ctx_create zero-fill", "persistent[0:1000]", relErr(z, Vec(1000, 0.0f)));
  // A plan that cannot fit: NULL and a message, no crash.
  tgrt_model huge = c.model;
  huge.arena_bytes = (int64_t)1 << 52;
  std::fprintf(stderr, "(expected message follows)\n");
  tgrt_cuda::Context* none = tgrt_cuda::createContext(&huge);
  record("ctx_create over free memory", "arena 2^52 bytes -> NULL", none ? 1.0 : 0.0);
  if (none) tgrt_cuda::destroyContext(none);
  checkPowerSample();
}

void checkEmbedding(Contexts& c, Rng& rng, int32_t dt) {
  // d 200: 16-byte rows for f32 and 2-byte types alike; d 75: element copies.
  for (int64_t d : {int64_t(200), int64_t(75)}) {
    const int64_t n = 1000, vocab = 777;
    Raw table = rng.tensor(dt, (size_t)(vocab * d));
    IVec ids(n);
    for (auto& id : ids) id = rng.below(vocab);
    Raw ref = zerosOf(dt, (size_t)(n * d));
    tgrt_embedding_fwd(c.cpu, "check", dt, table.data(), ids.data(), ref.data(), n, d, vocab);
    DevT dTable(table), dOut(dt, (size_t)(n * d));
    Dev<int32_t> dIds(ids);
    dOut.poison();
    tgrt_cuda::embeddingFwd(c.gpu, "check", dt, dTable.p, dIds.p, dOut.p, n, d, vocab);
    record(named("embedding_fwd", dt),
           fmt("n%lld d%lld vocab%lld", (long long)n, (long long)d, (long long)vocab),
           (double)bitDiffs(dOut.raw(), ref), 0.0);
  }

  // A table with split master values (tgrt_embedding_fwd_split: a tied embedding under
  // bf16-mixed): the GPU's rows bit for bit the CPU's, and those the f32 table's rows (the
  // join is exact but for the halfway values, which move one ulp: tgrt_split_value). d 200:
  // packs of 8; d 75: element by element.
  if (dt == TGRT_F32)
    for (int64_t d : {int64_t(200), int64_t(75)}) {
      const int64_t n = 1000, vocab = 777;
      Raw table = rng.tensor(TGRT_F32, (size_t)(vocab * d));
      Raw hi = zerosOf(TGRT_BF16, (size_t)(vocab * d)), lo = zerosOf(TGRT_BF16, (size_t)(vocab * d));
      const float* w = static_cast<const float*>(table.data());
      for (int64_t i = 0; i < vocab * d; ++i)
        tgrt_split_value(w[i], static_cast<uint16_t*>(hi.data()) + i,
                         static_cast<uint16_t*>(lo.data()) + i);
      IVec ids(n);
      for (auto& id : ids) id = rng.below(vocab);
      Raw ref = zerosOf(TGRT_F32, (size_t)(n * d)), whole = zerosOf(TGRT_F32, (size_t)(n * d));
      tgrt_embedding_fwd_split(c.cpu, "check", hi.data(), lo.data(), ids.data(), ref.data(), n, d,
                               vocab);
      tgrt_embedding_fwd(c.cpu, "check", TGRT_F32, table.data(), ids.data(), whole.data(), n, d,
                         vocab);
      DevT dHi(hi), dLo(lo), dOut(TGRT_F32, (size_t)(n * d));
      Dev<int32_t> dIds(ids);
      dOut.poison();
      tgrt_cuda::embeddingFwdSplit(c.gpu, "check", dHi.p, dLo.p, dIds.p, dOut.p, n, d, vocab);
      const std::string what =
          fmt("n%lld d%lld vocab%lld", (long long)n, (long long)d, (long long)vocab);
      record("embedding_fwd_split", what + " vs cpu", (double)bitDiffs(dOut.raw(), ref), 0.0);
      record("embedding_fwd_split", what + " cpu vs f32 rows", relErr(ref, whole), 1.2e-7);
    }

  // Backward with many repeats (vocab 50), with few (vocab 5000), and with runs of thousands
  // of one id (skewed: 40% id 7, 20% id 3, the rest uniform; shuffled, so the ids are out of
  // order) at d 136 (16-byte packs for every dtype) and d 130 (single elements). The CUDA
  // backend sums each id's tokens in token order within chunks of 32 sorted tokens, then the
  // chunks' sums in order: runs longer than a chunk are not bit-equal to the CPU's token-order
  // sum, so values are within the dtype's tolerance, and two runs must agree bit for bit.
  struct BwdCase {
    int64_t nt, d, vocab;
    bool skewed;
  };
  for (const BwdCase& bc : {BwdCase{3000, 130, 50, false}, BwdCase{3000, 130, 5000, false},
                            BwdCase{3000, 136, 300, true}, BwdCase{3001, 130, 300, true}}) {
    const int64_t nt = bc.nt, d2 = bc.d, v2 = bc.vocab;
    IVec ids2((size_t)nt);
    for (size_t i = 0; i < ids2.size(); ++i) {
      if (bc.skewed && i < ids2.size() * 4 / 10) ids2[i] = 7;
      else if (bc.skewed && i < ids2.size() * 6 / 10) ids2[i] = 3;
      else ids2[i] = rng.below(v2);
    }
    std::shuffle(ids2.begin(), ids2.end(), rng.gen);
    Raw dout = rng.tensor(dt, (size_t)(nt * d2));
    Raw ref2 = zerosOf(dt, (size_t)(v2 * d2));
    tgrt_embedding_bwd(c.cpu, "check", dt, ids2.data(), dout.data(), ref2.data(), nt, d2, v2);
    Dev<int32_t> gIds(ids2);
    DevT gDout(dout), gTable(dt, (size_t)(v2 * d2));
    gTable.poison();
    tgrt_cuda::embeddingBwd(c.gpu, "check", dt, gIds.p, gDout.p, gTable.p, nt, d2, v2);
    const Raw got = gTable.raw();
    const std::string shape = fmt("n%lld d%lld vocab%lld%s", (long long)nt, (long long)d2,
                                  (long long)v2, bc.skewed ? " (runs of 1000s)" : "");
    record(named("embedding_bwd", dt), shape, relErr(got, ref2), tolFor(dt));
    gTable.poison();
    tgrt_cuda::embeddingBwd(c.gpu, "check", dt, gIds.p, gDout.p, gTable.p, nt, d2, v2);
    record(named("embedding_bwd run twice: same bits", dt), shape,
           (double)bitDiffs(gTable.raw(), got), 0.0);
    // Added into a table (tgrt_embedding_bwd_acc, the lowering's wte gradient into its slot):
    // the CPU's within tolerance, and bit-equal to embedding_bwd + accumulate on the GPU.
    Raw start = rng.tensor(dt, (size_t)(v2 * d2));
    Raw refAcc = start;
    tgrt_embedding_bwd_acc(c.cpu, "check", dt, ids2.data(), dout.data(), refAcc.data(), nt, d2,
                           v2);
    DevT gAcc(start), gSum(start);
    tgrt_cuda::embeddingBwdAcc(c.gpu, "check", dt, gIds.p, gDout.p, gAcc.p, nt, d2, v2);
    record(named("embedding_bwd_acc", dt), shape, relErr(gAcc.raw(), refAcc), tolFor(dt));
    tgrt_cuda::accumulate(c.gpu, "check", dt, gSum.p, gTable.p, v2 * d2);
    record(named("embedding_bwd_acc = bwd + accumulate bits", dt), shape,
           (double)bitDiffs(gAcc.raw(), gSum.raw()), 0.0);
  }
}

void checkPositional(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t batch = 3, t = 100, d = 96, context = 128;
  Raw x = rng.tensor(dt, (size_t)(batch * t * d)), wpe = rng.tensor(dt, (size_t)(context * d));
  Raw ref = zerosOf(dt, x.n());
  tgrt_positional_fwd(c.cpu, "check", dt, x.data(), wpe.data(), ref.data(), batch, t, d);
  DevT gx(x), gw(wpe), go(dt, x.n());
  go.poison();
  tgrt_cuda::positionalFwd(c.gpu, "check", dt, gx.p, gw.p, go.p, batch, t, d);
  record(named("positional_fwd", dt), "b3 t100 d96", relErr(go.raw(), ref), exactTol(dt));
  Raw dref = zerosOf(dt, (size_t)(context * d));
  tgrt_positional_bwd(c.cpu, "check", dt, x.data(), dref.data(), batch, t, d, context);
  DevT gd(dt, (size_t)(context * d));
  gd.poison();
  tgrt_cuda::positionalBwd(c.gpu, "check", dt, gx.p, gd.p, batch, t, d, context);
  record(named("positional_bwd", dt), "b3 t100 d96 context128", relErr(gd.raw(), dref),
         exactTol(dt));
}

void checkElementwise(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t n = 100003;
  const double ex = exactTol(dt);
  Raw a = rng.tensor(dt, (size_t)n), b = rng.tensor(dt, (size_t)n);
  {
    Raw ref = zerosOf(dt, (size_t)n);
    tgrt_add(c.cpu, "check", dt, a.data(), b.data(), ref.data(), n);
    DevT ga(a), gb(b), go(dt, (size_t)n);
    go.poison();
    tgrt_cuda::add(c.gpu, "check", dt, ga.p, gb.p, go.p, n);
    record(named("add", dt), "n100003", relErr(go.raw(), ref), ex);
    tgrt_cuda::add(c.gpu, "check", dt, ga.p, gb.p, ga.p, n); // out aliases a
    record(named("add (out aliases a)", dt), "n100003", relErr(ga.raw(), ref), ex);
  }
  {
    Raw ref = a;
    tgrt_accumulate(c.cpu, "check", dt, ref.data(), b.data(), n);
    DevT ga(a), gb(b);
    tgrt_cuda::accumulate(c.gpu, "check", dt, ga.p, gb.p, n);
    record(named("accumulate", dt), "n100003", relErr(ga.raw(), ref), ex);
  }
  {
    Raw ref = zerosOf(dt, (size_t)n);
    tgrt_fill(c.cpu, "check", dt, ref.data(), n, 0.3f); // not representable: rounded to dt
    DevT go(dt, (size_t)n);
    go.poison();
    tgrt_cuda::fill(c.gpu, "check", dt, go.p, n, 0.3f);
    record(named("fill", dt), "n100003 value 0.3", (double)bitDiffs(go.raw(), ref), 0.0);
    tgrt_cuda::zero(c.gpu, "check", go.p, (int64_t)(n * tgrt_dtype_size(dt)));
    record(named("zero", dt), "n100003", relErr(go.f(), Vec((size_t)n, 0.0f)));
  }
  {
    // Packs without a tail (n a multiple of 8) and the scalar path (operands one element off).
    const int64_t n4 = 100000;
    Raw ref = zerosOf(dt, (size_t)n4);
    tgrt_add(c.cpu, "check", dt, a.data(), b.data(), ref.data(), n4);
    DevT ga(a), gb(b), go(dt, (size_t)n + 1);
    go.poison();
    tgrt_cuda::add(c.gpu, "check", dt, ga.p, gb.p, go.p, n4);
    Vec got = go.f();
    got.resize((size_t)n4);
    record(named("add", dt), "n100000 (packs, no tail)", relErr(got, decode(ref)), ex);
    Raw refU = zerosOf(dt, (size_t)(n - 1));
    const size_t es = (size_t)tgrt_dtype_size(dt);
    tgrt_add(c.cpu, "check", dt, a.b.data() + es, b.b.data() + es, refU.data(), n - 1);
    go.poison();
    tgrt_cuda::add(c.gpu, "check", dt, ga.at(1), gb.at(1), go.at(1), n - 1);
    got = go.f();
    got = Vec(got.begin() + 1, got.begin() + n);
    record(named("add (unaligned, scalar path)", dt), "n100002 at +1 element",
           relErr(got, decode(refU)), ex);
    Raw accRef = a;
    tgrt_accumulate(c.cpu, "check", dt, accRef.data(), b.data(), n4);
    DevT gacc(a);
    tgrt_cuda::accumulate(c.gpu, "check", dt, gacc.p, gb.p, n4);
    Vec accGot = gacc.f();
    record(named("accumulate", dt), "n100000 (packs, no tail)", relErr(accGot, decode(accRef)),
           ex);
  }
  {
    // The attention split of a fused qkv row: 16-byte rows.
    const int64_t rows = 64, cols = 768, sld = 2304, dld = 768;
    Raw src = rng.tensor(dt, (size_t)(rows * sld)), dst = rng.tensor(dt, (size_t)(rows * dld));
    Raw ref = dst;
    const size_t es = (size_t)tgrt_dtype_size(dt);
    tgrt_copy2d(c.cpu, "check", dt, src.b.data() + 768 * es, sld, ref.data(), dld, rows, cols);
    DevT gs(src), gd(dst);
    tgrt_cuda::copy2d(c.gpu, "check", dt, gs.at(768), sld, gd.p, dld, rows, cols);
    record(named("copy2d", dt), "64x768 ld2304+768 -> ld768 (16 B)",
           (double)bitDiffs(gd.raw(), ref), 0.0);
  }
  {
    const int64_t rows = 37, cols = 50, sld = 64, dld = 71;
    Raw src = rng.tensor(dt, (size_t)(rows * sld)), dst = rng.tensor(dt, (size_t)(rows * dld));
    Raw ref = dst;
    tgrt_copy2d(c.cpu, "check", dt, src.data(), sld, ref.data(), dld, rows, cols);
    DevT gs(src), gd(dst);
    tgrt_cuda::copy2d(c.gpu, "check", dt, gs.p, sld, gd.p, dld, rows, cols);
    record(named("copy2d", dt), "37x50 ld64 -> ld71", (double)bitDiffs(gd.raw(), ref), 0.0);
  }
  // d3 24: 16-byte rows when the last axis stays; d3 6: element rows.
  for (int64_t d3 : {int64_t(24), int64_t(6)}) {
    const int64_t d0 = 3, d1 = 17, d2 = 5;
    const int32_t perms[5][4] = {
        {0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 3, 2}, {2, 1, 0, 3}};
    Raw x = rng.tensor(dt, (size_t)(d0 * d1 * d2 * d3));
    DevT gx(x), gy(dt, x.n());
    for (const auto& p : perms) {
      Raw ref = zerosOf(dt, x.n());
      tgrt_transpose4(c.cpu, "check", dt, x.data(), ref.data(), d0, d1, d2, d3, p[0], p[1], p[2],
                      p[3]);
      gy.poison();
      tgrt_cuda::transpose4(c.gpu, "check", dt, gx.p, gy.p, d0, d1, d2, d3, p[0], p[1], p[2], p[3]);
      record(named("transpose4", dt),
             fmt("[3,17,5,%lld] perm %d%d%d%d", (long long)d3, p[0], p[1], p[2], p[3]),
             (double)bitDiffs(gy.raw(), ref), 0.0);
    }
  }
  {
    Raw ref = zerosOf(dt, (size_t)n);
    Raw xa = rng.tensor(dt, (size_t)n, -4.0f, 4.0f);
    tgrt_gelu_fwd(c.cpu, "check", dt, xa.data(), ref.data(), n);
    DevT gx(xa), gy(dt, (size_t)n);
    gy.poison();
    tgrt_cuda::geluFwd(c.gpu, "check", dt, gx.p, gy.p, n);
    record(named("gelu_fwd", dt), "n100003 x in [-4,4]", relErr(gy.raw(), ref), tolFor(dt));
    Raw dref = zerosOf(dt, (size_t)n);
    tgrt_gelu_bwd(c.cpu, "check", dt, xa.data(), b.data(), dref.data(), n);
    DevT gdy(b);
    tgrt_cuda::geluBwd(c.gpu, "check", dt, gx.p, gdy.p, gdy.p, n); // dx aliases dy
    record(named("gelu_bwd (dx aliases dy)", dt), "n100003", relErr(gdy.raw(), dref), tolFor(dt));
  }
}

/// tgrt_cast for every (src, dst) pair, bit for bit: all 65536 patterns of a 2-byte source,
/// 2^20 random float patterns plus specials for an f32 source; one run on packs (16-byte
/// aligned) and one on the scalar path (one element off).
void checkCast(Contexts& c, Rng& rng) {
  Vec specials = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.996f, 65520.0f, -65520.0f, 1e38f,
                  3.3895314e38f, 3.4028235e38f, -3.4028235e38f, 1e-45f, -1e-45f, 1.1754942e-38f,
                  5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 8.940697e-8f, 6.1035156e-5f,
                  6.1035152e-5f, 1.00390625f, 1.01171875f, 1.0009766f, 1.0029297f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  const uint32_t nanBits[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x7fbfffffu,
                              0x7fa00000u};
  for (uint32_t u : nanBits) {
    float f;
    std::memcpy(&f, &u, 4);
    specials.push_back(f);
  }
  for (int32_t src : kDtypes)
    for (int32_t dst : kDtypes) {
      Raw in;
      in.dt = src;
      if (src == TGRT_F32) {
        in.b.resize((specials.size() + (1u << 20)) * 4);
        for (size_t i = 0; i < in.n(); ++i) {
          uint32_t u = (uint32_t)rng.gen();
          if (i < specials.size()) std::memcpy(&u, &specials[i], 4);
          std::memcpy(in.b.data() + 4 * i, &u, 4);
        }
      } else {
        in.b.resize(65536 * 2 + 6); // a tail of 3 after the packs
        for (uint32_t i = 0; i < 65536 + 3; ++i) {
          const uint16_t h = (uint16_t)(i * 40503u); // every pattern, scrambled order
          std::memcpy(in.b.data() + 2 * i, &h, 2);
        }
      }
      const int64_t n = (int64_t)in.n();
      Raw ref = zerosOf(dst, (size_t)n);
      tgrt_cast(c.cpu, "check", src, in.data(), dst, ref.data(), n);
      DevT gin(in), gout(dst, (size_t)n + 1);
      gout.poison();
      tgrt_cuda::cast(c.gpu, "check", src, gin.p, dst, gout.p, n);
      Raw got = gout.raw();
      got.b.resize(ref.b.size());
      const std::string name = std::string("cast ") + dtName(src) + " -> " + dtName(dst);
      record(name, fmt("n%lld, bitwise", (long long)n), (double)bitDiffs(got, ref), 0.0);
      // The scalar path: both tensors one element off 16-byte alignment.
      Raw refU = zerosOf(dst, (size_t)n - 1);
      tgrt_cast(c.cpu, "check", src, in.b.data() + tgrt_dtype_size(src), dst, refU.data(), n - 1);
      gout.poison();
      tgrt_cuda::cast(c.gpu, "check", src, gin.at(1), dst, gout.at(1), n - 1);
      got = gout.raw();
      got.b = Bytes(got.b.begin() + tgrt_dtype_size(dst), got.b.begin() + tgrt_dtype_size(dst) * n);
      record(name + " (unaligned)", fmt("n%lld, bitwise", (long long)(n - 1)),
             (double)bitDiffs(got, refU), 0.0);
    }
}

void checkDropout(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t n = 200001;
  Raw x = rng.tensor(dt, (size_t)n);
  const uint64_t seed = ((uint64_t)rng.gen() << 1) | 1;
  for (float rate : {0.1f, 0.5f}) {
    tgrt_set_step(c.cpu, 7);
    tgrt_set_micro_batch(c.cpu, 3);
    tgrt_cuda::setStep(c.gpu, 7);
    tgrt_cuda::setMicroBatch(c.gpu, 3);
    Raw ref = zerosOf(dt, (size_t)n);
    tgrt_dropout(c.cpu, "check", dt, x.data(), ref.data(), n, rate, seed);
    DevT gx(x), gy(dt, (size_t)n);
    gy.poison();
    tgrt_cuda::dropout(c.gpu, "check", dt, gx.p, gy.p, n, rate, seed);
    const Vec got = gy.f(), r = decode(ref);
    record(named("dropout", dt), fmt("n200001 rate %.1f", rate), relErr(got, r), exactTol(dt));
    size_t maskDiff = 0;
    for (size_t i = 0; i < got.size(); ++i) maskDiff += (got[i] == 0.0f) != (r[i] == 0.0f);
    record(named("dropout mask bitwise == cpu", dt), fmt("rate %.1f, %zu differ", rate, maskDiff),
           (double)maskDiff, 0.0);
  }
  tgrt_set_step(c.cpu, 1);
  tgrt_set_micro_batch(c.cpu, 0);
  tgrt_cuda::setStep(c.gpu, 1);
  tgrt_cuda::setMicroBatch(c.gpu, 0);
}

/// Layer norm with x: x_dt, gamma / beta: p_dt, y (dy): y_dt.
void checkLayerNorm(Contexts& c, Rng& rng, int32_t x_dt, int32_t p_dt, int32_t y_dt,
                    std::initializer_list<int64_t> ds, int64_t rows = 333) {
  for (int64_t d : ds) {
    Raw x = rng.tensor(x_dt, (size_t)(rows * d), -2.0f, 3.0f), gamma = rng.tensor(p_dt, (size_t)d),
        beta = rng.tensor(p_dt, (size_t)d), dy = rng.tensor(y_dt, (size_t)(rows * d));
    Raw y = zerosOf(y_dt, (size_t)(rows * d));
    Vec mean((size_t)rows), rstd((size_t)rows);
    tgrt_layer_norm_fwd(c.cpu, "check", x_dt, x.data(), p_dt, gamma.data(), beta.data(), y_dt,
                        y.data(), mean.data(), rstd.data(), rows, d, 1e-5f);
    DevT gx(x), gg(gamma), gb(beta), gy(y_dt, y.n());
    Dev<float> gm((size_t)rows), gr((size_t)rows);
    gy.poison();
    gm.poison();
    gr.poison();
    tgrt_cuda::layerNormFwd(c.gpu, "check", x_dt, gx.p, p_dt, gg.p, gb.p, y_dt, gy.p, gm.p, gr.p,
                            rows, d, 1e-5f);
    const bool mixed = !(x_dt == p_dt && p_dt == y_dt);
    const std::string types =
        mixed ? fmt(" [x %s, p %s, y %s]", dtName(x_dt), dtName(p_dt), dtName(y_dt))
              : (x_dt == TGRT_F32 ? std::string() : std::string(" [") + dtName(x_dt) + "]");
    const std::string shape = fmt("rows%lld d%lld", (long long)rows, (long long)d);
    record("layer_norm_fwd y" + types, shape, relErr(gy.raw(), y), tolFor(y_dt));
    record("layer_norm_fwd mean,rstd" + types, shape,
           std::max(relErr(gm.get(), mean), relErr(gr.get(), rstd)));
    // The "bias rows" form (tgrt_layer_norm_fwd_ones): y [rows, d + TGRT_ONES_COLUMNS], its last columns 1, 0,
    // ...: against the CPU's, and its first d columns bit for bit the plain call's on each
    // side, its tail exactly 1, 0, ..., 0.
    {
      const int64_t ld = d + TGRT_ONES_COLUMNS;
      Raw yo = zerosOf(y_dt, (size_t)(rows * ld));
      Vec mo((size_t)rows), ro((size_t)rows);
      tgrt_layer_norm_fwd_ones(c.cpu, "check", x_dt, x.data(), p_dt, gamma.data(), beta.data(),
                               y_dt, yo.data(), mo.data(), ro.data(), rows, d, 1e-5f);
      DevT gyo(y_dt, yo.n());
      Dev<float> gmo((size_t)rows), gro((size_t)rows);
      gyo.poison();
      tgrt_cuda::layerNormFwdOnes(c.gpu, "check", x_dt, gx.p, p_dt, gg.p, gb.p, y_dt, gyo.p,
                                  gmo.p, gro.p, rows, d, 1e-5f);
      const Raw got = gyo.raw(), plain = gy.raw();
      const Vec gotF = decode(got), cpuF = decode(yo), cpuPlain = decode(y);
      size_t diffs = 0, cpuDiffs = 0;
      const size_t es = (size_t)tgrt_dtype_size(y_dt);
      for (int64_t r = 0; r < rows; ++r) {
        diffs += std::memcmp(got.b.data() + (size_t)(r * ld) * es,
                             plain.b.data() + (size_t)(r * d) * es, (size_t)d * es) != 0;
        for (int64_t col = 0; col < d; ++col)
          cpuDiffs += cpuF[(size_t)(r * ld + col)] != cpuPlain[(size_t)(r * d + col)];
        for (int64_t col = d; col < ld; ++col) {
          const float want = col == d ? 1.0f : 0.0f;
          diffs += gotF[(size_t)(r * ld + col)] != want;
          cpuDiffs += cpuF[(size_t)(r * ld + col)] != want;
        }
      }
      record("layer_norm_fwd_ones y" + types, shape, relErr(got, yo), tolFor(y_dt));
      record("layer_norm_fwd_ones == layer_norm_fwd + [1 0..]" + types,
             shape + fmt(", bitwise, %zu rows differ (cpu %zu)", diffs, cpuDiffs),
             (double)(diffs + cpuDiffs), 0.0);
    }
    // The residual add fused in front (tgrt_add_layer_norm_fwd), with a branch of x's type
    // and of y's: against the CPU (the two calls), and bit for bit against the GPU's two
    // calls (the register kernel must sum the statistics in the unfused kernel's order).
    for (int32_t b_dt : {x_dt, y_dt}) {
      Raw a = rng.tensor(x_dt, (size_t)(rows * d), -2.0f, 3.0f),
          br = rng.tensor(b_dt, (size_t)(rows * d), -1.0f, 1.0f);
      Raw sum = zerosOf(x_dt, a.n()), y2 = zerosOf(y_dt, a.n());
      Vec m2((size_t)rows), r2((size_t)rows);
      tgrt_add_layer_norm_fwd(c.cpu, "check", x_dt, a.data(), b_dt, br.data(), sum.data(), p_dt,
                              gamma.data(), beta.data(), y_dt, y2.data(), m2.data(), r2.data(),
                              rows, d, 1e-5f);
      DevT ga(a), gbr(br), gs(x_dt, a.n()), gy2(y_dt, a.n()), gs1(x_dt, a.n()), gy1(y_dt, a.n());
      Dev<float> gm2((size_t)rows), gr2((size_t)rows), gm1((size_t)rows), gr1((size_t)rows);
      gs.poison();
      gy2.poison();
      tgrt_cuda::addLayerNormFwd(c.gpu, "check", x_dt, ga.p, b_dt, gbr.p, gs.p, p_dt, gg.p, gb.p,
                                 y_dt, gy2.p, gm2.p, gr2.p, rows, d, 1e-5f);
      tgrt_cuda::addMixed(c.gpu, "check", x_dt, ga.p, b_dt, gbr.p, gs1.p, TGRT_F32, nullptr,
                          rows * d);
      tgrt_cuda::layerNormFwd(c.gpu, "check", x_dt, gs1.p, p_dt, gg.p, gb.p, y_dt, gy1.p, gm1.p,
                              gr1.p, rows, d, 1e-5f);
      const std::string bt = fmt(" [b %s]", dtName(b_dt));
      record("add_layer_norm_fwd sum,y" + types + bt, shape,
             std::max(relErr(gs.raw(), sum), relErr(gy2.raw(), y2)), tolFor(y_dt));
      record("add_layer_norm_fwd mean,rstd" + types + bt, shape,
             std::max(relErr(gm2.get(), m2), relErr(gr2.get(), r2)));
      const size_t diffs = bitDiffs(gs.raw(), gs1.raw()) + bitDiffs(gy2.raw(), gy1.raw()) +
                           bitDiffs(encode(gm2.get(), TGRT_F32), encode(gm1.get(), TGRT_F32)) +
                           bitDiffs(encode(gr2.get(), TGRT_F32), encode(gr1.get(), TGRT_F32));
      record("add_layer_norm_fwd == add_mixed+layer_norm_fwd" + types + bt,
             shape + ", bitwise", (double)diffs, 0.0);
      // Its bias-rows form (tgrt_add_layer_norm_fwd_ones, y [rows, d + TGRT_ONES_COLUMNS]):
      // against the CPU's, and bit for bit the fused call's sum, statistics and first d
      // columns of each row, its tail exactly 1, 0, ..., 0.
      {
        const int64_t ld = d + TGRT_ONES_COLUMNS;
        Raw so = zerosOf(x_dt, a.n()), yo = zerosOf(y_dt, (size_t)(rows * ld));
        Vec mo((size_t)rows), ro((size_t)rows);
        tgrt_add_layer_norm_fwd_ones(c.cpu, "check", x_dt, a.data(), b_dt, br.data(), so.data(),
                                     p_dt, gamma.data(), beta.data(), y_dt, yo.data(), mo.data(),
                                     ro.data(), rows, d, 1e-5f);
        DevT gso(x_dt, a.n()), gyo(y_dt, yo.n());
        Dev<float> gmo((size_t)rows), gro((size_t)rows);
        gso.poison();
        gyo.poison();
        tgrt_cuda::addLayerNormFwdOnes(c.gpu, "check", x_dt, ga.p, b_dt, gbr.p, gso.p, p_dt, gg.p,
                                       gb.p, y_dt, gyo.p, gmo.p, gro.p, rows, d, 1e-5f);
        const Raw got = gyo.raw(), fused = gy2.raw();
        const Vec gotF = decode(got), cpuF = decode(yo), cpuPlain = decode(y2);
        const size_t es = (size_t)tgrt_dtype_size(y_dt);
        size_t rowDiffs = 0, cpuDiffs = 0;
        for (int64_t r = 0; r < rows; ++r) {
          rowDiffs += std::memcmp(got.b.data() + (size_t)(r * ld) * es,
                                  fused.b.data() + (size_t)(r * d) * es, (size_t)d * es) != 0;
          for (int64_t col = 0; col < d; ++col)
            cpuDiffs += cpuF[(size_t)(r * ld + col)] != cpuPlain[(size_t)(r * d + col)];
          for (int64_t col = d; col < ld; ++col) {
            const float want = col == d ? 1.0f : 0.0f;
            rowDiffs += gotF[(size_t)(r * ld + col)] != want;
            cpuDiffs += cpuF[(size_t)(r * ld + col)] != want;
          }
        }
        const size_t sideDiffs =
            bitDiffs(gso.raw(), gs.raw()) +
            bitDiffs(encode(gmo.get(), TGRT_F32), encode(gm2.get(), TGRT_F32)) +
            bitDiffs(encode(gro.get(), TGRT_F32), encode(gr2.get(), TGRT_F32));
        record("add_layer_norm_fwd_ones sum,y" + types + bt, shape,
               std::max(relErr(gso.raw(), so), relErr(got, yo)), tolFor(y_dt));
        record("add_layer_norm_fwd_ones == add_layer_norm_fwd + [1 0..]" + types + bt,
               shape + fmt(", bitwise, %zu rows differ (cpu %zu), sum/stats %zu", rowDiffs,
                           cpuDiffs, sideDiffs),
               (double)(rowDiffs + cpuDiffs + sideDiffs), 0.0);
      }
      if (b_dt == y_dt) break; // x_dt == y_dt: one branch type
    }
    Raw dx = zerosOf(x_dt, (size_t)(rows * d)), dg = zerosOf(p_dt, (size_t)d),
        db = zerosOf(p_dt, (size_t)d);
    tgrt_layer_norm_bwd(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt, gamma.data(),
                        mean.data(), rstd.data(), dx.data(), dg.data(), db.data(), rows, d);
    DevT gdy(dy), gdx(x_dt, dx.n()), gdg(p_dt, (size_t)d), gdb(p_dt, (size_t)d);
    Dev<float> gmean(mean), grstd(rstd);
    gdx.poison();
    gdg.poison();
    gdb.poison();
    tgrt_cuda::layerNormBwd(c.gpu, "check", y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p, gmean.p, grstd.p,
                            gdx.p, gdg.p, gdb.p, rows, d);
    record("layer_norm_bwd dx" + types, shape, relErr(gdx.raw(), dx), tolFor(x_dt));
    record("layer_norm_bwd dgamma,dbeta" + types, shape,
           std::max(relErr(gdg.raw(), dg), relErr(gdb.raw(), db)), tolFor(p_dt));
    // The accumulating form: dres += dx, and its copy in dy's type (the residual gradient
    // and the next GEMM's input), against the CPU's layer_norm_bwd + add_mixed.
    for (bool withLow : {false, true}) {
      Raw dres = rng.tensor(x_dt, (size_t)(rows * d)), low = zerosOf(y_dt, (size_t)(rows * d));
      Raw resRef = dres;
      tgrt_layer_norm_bwd_acc(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt, gamma.data(),
                              mean.data(), rstd.data(), resRef.data(), y_dt,
                              withLow ? low.data() : nullptr, dg.data(), db.data(), rows, d);
      DevT gres(dres), glow(y_dt, low.n());
      glow.poison();
      gdg.poison();
      gdb.poison();
      tgrt_cuda::layerNormBwdAcc(c.gpu, "check", false, y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p, gmean.p,
                                 grstd.p, gres.p, y_dt, withLow ? glow.p : nullptr, gdg.p, gdb.p,
                                 rows, d);
      const std::string what = withLow ? "layer_norm_bwd_acc dres,low" : "layer_norm_bwd_acc dres";
      double err = relErr(gres.raw(), resRef);
      if (withLow) err = std::max(err, relErr(glow.raw(), low));
      // low = dres rounded to y_dt: it carries dres's x_dt rounding too (x bf16, y f16 failed
      // at f16's tolerance with seed 50858772127: one bf16 ulp of a dres element, 4.7e-3).
      record(what + types, shape, err,
             withLow ? std::max(tolFor(x_dt), tolFor(y_dt)) : tolFor(x_dt));
      record("layer_norm_bwd_acc dgamma,dbeta" + types, shape,
             std::max(relErr(gdg.raw(), dg), relErr(gdb.raw(), db)), tolFor(p_dt));
      // The slots form: dgamma, dbeta added into existing values (the gradient slots).
      Raw sg = rng.tensor(p_dt, (size_t)d), sb = rng.tensor(p_dt, (size_t)d);
      Raw sgRef = sg, sbRef = sb, res2 = dres;
      tgrt_layer_norm_bwd_acc_slots(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt,
                                    gamma.data(), mean.data(), rstd.data(), res2.data(), y_dt,
                                    withLow ? low.data() : nullptr, sgRef.data(), sbRef.data(),
                                    rows, d);
      DevT gres2(dres), gsg(sg), gsb(sb);
      tgrt_cuda::layerNormBwdAcc(c.gpu, "check", true, y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p,
                                 gmean.p, grstd.p, gres2.p, y_dt, withLow ? glow.p : nullptr,
                                 gsg.p, gsb.p, rows, d);
      record("layer_norm_bwd_acc_slots dres,dgamma,dbeta" + types, shape,
             std::max({relErr(gres2.raw(), res2), relErr(gsg.raw(), sgRef),
                       relErr(gsb.raw(), sbRef)}),
             std::max(tolFor(p_dt), tolFor(x_dt)));
      // The fused kernel without its reloads (TGRT_LN_BWD_RELOAD=0): the same bits.
      {
        DevT gres3(dres), glow3(y_dt, low.n()), gdg3(p_dt, (size_t)d), gdb3(p_dt, (size_t)d);
        glow3.poison();
        tgrt_cuda::setLnBwdReload(c.gpu, false);
        tgrt_cuda::layerNormBwdAcc(c.gpu, "check", false, y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p,
                                   gmean.p, grstd.p, gres3.p, y_dt, withLow ? glow3.p : nullptr,
                                   gdg3.p, gdb3.p, rows, d);
        tgrt_cuda::setLnBwdReload(c.gpu, true);
        size_t diffs = bitDiffs(gres3.raw(), gres.raw()) + bitDiffs(gdg3.raw(), gdg.raw()) +
                       bitDiffs(gdb3.raw(), gdb.raw());
        if (withLow) diffs += bitDiffs(glow3.raw(), glow.raw());
        record("layer_norm_bwd_acc without reloads == with" + types, shape + ", bitwise",
               (double)diffs, 0.0);
      }
      // The projection's bias gradient summed by the same call (tgrt_layer_norm_bwd_acc_bgrad,
      // in the kernel up to 3 packs per lane, after it above): dres, low, dgamma and dbeta
      // the bits of the call without it; dbias against the CPU's column sums of what was
      // stored (low, else the updated dres).
      {
        Raw res4 = dres, lowRef4 = zerosOf(y_dt, low.n()), dgRef4 = zerosOf(p_dt, (size_t)d),
            dbRef4 = zerosOf(p_dt, (size_t)d), biasRef = zerosOf(TGRT_F32, (size_t)d);
        tgrt_layer_norm_bwd_acc_bgrad(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt,
                                      gamma.data(), mean.data(), rstd.data(), res4.data(), y_dt,
                                      withLow ? lowRef4.data() : nullptr, dgRef4.data(),
                                      dbRef4.data(), TGRT_F32, biasRef.data(), rows, d);
        DevT gres4(dres), glow4(y_dt, low.n()), gdg4(p_dt, (size_t)d), gdb4(p_dt, (size_t)d),
            gbias(TGRT_F32, (size_t)d);
        glow4.poison();
        gbias.poison();
        tgrt_cuda::layerNormBwdAcc(c.gpu, "check", false, y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p,
                                   gmean.p, grstd.p, gres4.p, y_dt, withLow ? glow4.p : nullptr,
                                   gdg4.p, gdb4.p, rows, d, TGRT_F32, gbias.p);
        size_t diffs = bitDiffs(gres4.raw(), gres.raw()) + bitDiffs(gdg4.raw(), gdg.raw()) +
                       bitDiffs(gdb4.raw(), gdb.raw());
        if (withLow) diffs += bitDiffs(glow4.raw(), glow.raw());
        record("layer_norm_bwd_acc_bgrad == layer_norm_bwd_acc" + types, shape + ", bitwise",
               (double)diffs, 0.0);
        record("layer_norm_bwd_acc_bgrad dbias" + types, shape, relErr(gbias.raw(), biasRef),
               std::max(tolFor(x_dt), tolFor(y_dt)));
      }
    }
    // low in dy's own buffer (where tg-plan-memory puts it when dy dies at the norm), in
    // the three forms the lowering emits: against the CPU and bit for bit against the call
    // with separate buffers (the fused kernel, or the scalar path whose cast comes last).
    for (int form = 0; form < 3; ++form) { // 0: acc, 1: acc_slots, 2: acc_bgrad
      const char* fname = form == 0 ? "layer_norm_bwd_acc" : form == 1 ? "layer_norm_bwd_acc_slots"
                                                                        : "layer_norm_bwd_acc_bgrad";
      const size_t n = (size_t)(rows * d);
      Raw dres = rng.tensor(x_dt, n), low = zerosOf(y_dt, n);
      Raw sg = form == 1 ? rng.tensor(p_dt, (size_t)d) : zerosOf(p_dt, (size_t)d);
      Raw sb = form == 1 ? rng.tensor(p_dt, (size_t)d) : zerosOf(p_dt, (size_t)d);
      Raw resRef = dres, sgRef = sg, sbRef = sb, biasRef = zerosOf(TGRT_F32, (size_t)d);
      if (form == 0)
        tgrt_layer_norm_bwd_acc(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt,
                                gamma.data(), mean.data(), rstd.data(), resRef.data(), y_dt,
                                low.data(), sgRef.data(), sbRef.data(), rows, d);
      else if (form == 1)
        tgrt_layer_norm_bwd_acc_slots(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt,
                                      gamma.data(), mean.data(), rstd.data(), resRef.data(), y_dt,
                                      low.data(), sgRef.data(), sbRef.data(), rows, d);
      else
        tgrt_layer_norm_bwd_acc_bgrad(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt,
                                      gamma.data(), mean.data(), rstd.data(), resRef.data(), y_dt,
                                      low.data(), sgRef.data(), sbRef.data(), TGRT_F32,
                                      biasRef.data(), rows, d);
      auto run = [&](DevT& res, DevT& dyBuf, DevT& lowBuf, DevT& g1, DevT& g2, DevT& bias) {
        tgrt_cuda::layerNormBwdAcc(c.gpu, "check", form == 1, y_dt, dyBuf.p, x_dt, gx.p, p_dt,
                                   gg.p, gmean.p, grstd.p, res.p, y_dt, lowBuf.p, g1.p, g2.p,
                                   rows, d, TGRT_F32, form == 2 ? bias.p : nullptr);
      };
      DevT gres(dres), galias(dy), ga1(sg), ga2(sb), gab(TGRT_F32, (size_t)d);
      DevT gres2(dres), gdy2(dy), glow2(y_dt, n), gb1(sg), gb2(sb), gbb(TGRT_F32, (size_t)d);
      gab.poison();
      gbb.poison();
      glow2.poison();
      run(gres, galias, galias, ga1, ga2, gab);
      run(gres2, gdy2, glow2, gb1, gb2, gbb);
      double err = std::max({relErr(gres.raw(), resRef), relErr(galias.raw(), low),
                             relErr(ga1.raw(), sgRef), relErr(ga2.raw(), sbRef)});
      if (form == 2) err = std::max(err, relErr(gab.raw(), biasRef));
      record(std::string(fname) + " low = dy's buffer: dres,low,dgamma,dbeta" + types, shape, err,
             std::max({tolFor(x_dt), tolFor(y_dt), tolFor(p_dt)}));
      size_t diffs = bitDiffs(gres.raw(), gres2.raw()) + bitDiffs(galias.raw(), glow2.raw()) +
                     bitDiffs(ga1.raw(), gb1.raw()) + bitDiffs(ga2.raw(), gb2.raw());
      if (form == 2) diffs += bitDiffs(gab.raw(), gbb.raw());
      record(std::string(fname) + " low = dy's buffer == separate buffers" + types,
             shape + ", bitwise", (double)diffs, 0.0);
    }
  }
}

void checkLayerNorms(Contexts& c, Rng& rng) {
  // 768 and 100: rows in registers (packs of 4 floats); 1030: the scalar kernels.
  checkLayerNorm(c, rng, TGRT_F32, TGRT_F32, TGRT_F32, {768, 100, 1030});
  // Packs of 8 (a 2-byte type): 768 (3 per lane), 2000 (8 per lane); 100, 1030: scalar.
  for (int32_t low : {TGRT_BF16, TGRT_F16}) {
    checkLayerNorm(c, rng, low, low, low, {768, 2000, 100, 1030});
    // 1024, 1280: 4 and 6 packs per lane (the bias-summing backward's separate sums after
    // the fused kernel: head dim 128's and GPT-2 large's widths).
    checkLayerNorm(c, rng, TGRT_F32, TGRT_F32, low, {768, 1024, 1280, 136, 100});
  }
  // Many rows per warp in the fused backward (bf16 / f16 combinations: 256 blocks).
  checkLayerNorm(c, rng, TGRT_F32, TGRT_F32, TGRT_BF16, {768}, 4099);
  // A combination without typed kernels: the generic scalar ones.
  checkLayerNorm(c, rng, TGRT_BF16, TGRT_F32, TGRT_F16, {768, 100});
}

void checkMatmul(Contexts& c, Rng& rng, int32_t dt) {
  struct Case {
    int64_t batch, m, n, k;
    int ta, tb;
    int64_t sa, sb, sc; // -1: dense
    float alpha, beta;
  };
  const Case cases[] = {
      {1, 128, 96, 64, 0, 0, -1, -1, -1, 1.0f, 0.0f},  {1, 128, 96, 64, 1, 0, -1, -1, -1, 1.0f, 0.0f},
      {1, 128, 96, 64, 0, 1, -1, -1, -1, 1.0f, 0.0f},  {1, 128, 96, 64, 1, 1, -1, -1, -1, 1.0f, 0.0f},
      {1, 77, 33, 50, 0, 1, -1, -1, -1, 0.7f, 0.5f},   {4, 64, 48, 40, 0, 1, -1, 0, -1, 1.0f, 0.0f},
      {3, 33, 65, 17, 1, 0, -1, -1, -1, 0.25f, 1.0f},  {5, 31, 29, 23, 0, 0, 0, -1, -1, 1.0f, 0.0f},
      {2, 256, 768, 768, 0, 1, -1, 0, -1, 1.0f, 1.0f}, {6, 64, 64, 32, 0, 1, -1, -1, -1, 0.125f, 0.0f},
      {3, 16, 16, 0, 0, 0, -1, -1, -1, 1.0f, 0.5f},   {3, 19, 7, 11, 0, 0, -1, -1, 0, 1.0f, 0.0f},
  };
  for (const Case& cs : cases) {
    const int64_t aElems = cs.m * cs.k, bElems = cs.k * cs.n, cElems = cs.m * cs.n;
    const int64_t sa = cs.sa < 0 ? aElems : cs.sa, sb = cs.sb < 0 ? bElems : cs.sb,
                  sc = cs.sc < 0 ? cElems : cs.sc;
    const size_t aN = (size_t)(sa * (cs.batch - 1) + aElems),
                 bN = (size_t)(sb * (cs.batch - 1) + bElems),
                 cN = (size_t)(sc * (cs.batch - 1) + cElems);
    Raw a = rng.tensor(dt, std::max<size_t>(aN, 1)), b = rng.tensor(dt, std::max<size_t>(bN, 1)),
        cc = rng.tensor(dt, cN);
    Raw ref = cc;
    tgrt_matmul(c.cpu, "check", dt, a.data(), b.data(), ref.data(), cs.batch, cs.m, cs.n, cs.k,
                cs.ta, cs.tb, sa, sb, sc, cs.alpha, cs.beta);
    DevT ga(a), gb(b), gc(cc);
    if (cs.beta == 0.0f) gc.poison(); // beta = 0: C must not be read (NaN stays out)
    tgrt_cuda::matmul(c.gpu, "check", dt, ga.p, gb.p, gc.p, cs.batch, cs.m, cs.n, cs.k, cs.ta,
                      cs.tb, sa, sb, sc, cs.alpha, cs.beta);
    record(named("matmul", dt),
           fmt("b%lld %lldx%lldx%lld t%d%d s%lld,%lld,%lld a%.2g b%.2g", (long long)cs.batch,
               (long long)cs.m, (long long)cs.n, (long long)cs.k, cs.ta, cs.tb, (long long)sa,
               (long long)sb, (long long)sc, cs.alpha, cs.beta),
           relErr(gc.raw(), ref), tolFor(dt));
  }
}

/// GEMM tuning and its cache file: a fresh context times the candidates of a new shape and
/// records the choice; a second context with the same cache takes it without timing and gives
/// the same bits; a line of another shape in the file is skipped (with a note), not fatal.
void checkGemmTune(Contexts& c, Rng& rng) {
  // In a directory that does not exist yet: the first record makes it.
  const std::string dir = "/tmp/tgrt-cuda-check-gemm-tune-" + std::to_string((long long)getpid());
  const std::string path = dir + "/cache/gemm-tune.txt";
  const int64_t m = 256, n = 128, k = 64; // several candidates on a GPU
  Raw a = rng.tensor(TGRT_BF16, (size_t)(m * k)), b = rng.tensor(TGRT_BF16, (size_t)(k * n));
  Raw ref = zerosOf(TGRT_BF16, (size_t)(m * n));
  tgrt_matmul(c.cpu, "check", TGRT_BF16, a.data(), b.data(), ref.data(), 1, m, n, k, 0, 1, 0, 0,
              0, 1.0f, 0.0f);
  DevT ga(a), gb(b), gc(TGRT_BF16, (size_t)(m * n));
  auto run = [&](int expectTimed, int expectCached, const char* what, int mode = 2) {
    // Without TGRT_GEMM_STEP_TUNE, which writes the cache line when the step decides.
    tgrt_cuda::Context* g = contextWithout(&c.model, "TGRT_GEMM_STEP_TUNE");
    tgrt_cuda::setGemmAutotune(g, mode, path.c_str());
    gc.poison();
    tgrt_cuda::matmul(g, "check", TGRT_BF16, ga.p, gb.p, gc.p, 1, m, n, k, 0, 1, 0, 0, 0, 1.0f,
                      0.0f);
    int timed = -1, cached = -1;
    tgrt_cuda::gemmTuneCounts(g, &timed, &cached);
    const Raw out = gc.raw();
    record("gemm tuning: result", fmt("%s bf16 %lldx%lldx%lld", what, (long long)m, (long long)n,
                                       (long long)k),
           relErr(out, ref), tolFor(TGRT_BF16));
    record("gemm tuning: timed / cached", fmt("%s: %d / %d (want %d / %d)", what, timed, cached,
                                              expectTimed, expectCached),
           timed == expectTimed && cached == expectCached ? 0.0 : 1.0, 0.0);
    tgrt_cuda::destroyContext(g);
    return out;
  };
  const Raw first = run(1, 0, "new cache");
  std::ifstream f1(path);
  const std::string line((std::istreambuf_iterator<char>(f1)), std::istreambuf_iterator<char>());
  record("gemm tuning: cache file", fmt("%zu bytes, one line", line.size()),
         !line.empty() && std::count(line.begin(), line.end(), '\n') == 1 ? 0.0 : 1.0, 0.0);
  { // The key's candidate count ("|cN|"): the heuristic's and the tile configurations
    // (Kernels.cu addTileCandidates). Emulator: 2 offered + 2 tiles x 2 custom options x 2
    // cluster shapes (its AlgoCheck refuses 2x1) = 10; a GPU: more than the 8 cuBLASLt 13.1
    // offers at most.
    const size_t at = line.find("|c");
    const long count = at == std::string::npos ? -1 : std::strtol(line.c_str() + at + 2, nullptr, 10);
#ifdef TGRT_CUDA_EMULATE
    const bool ok = count == 10;
#else
    const bool ok = count > 8;
#endif
    record("gemm tuning: tile candidates", fmt("%ld timed", count), ok ? 0.0 : 1.0, 0.0);
  }
  const Raw second = run(0, 1, "from the cache");
  record("gemm tuning: cached == timed", "bits", (double)bitDiffs(second, first), 0.0);
  { // Candidates timed as 3 back-to-back calls (TGRT_GEMM_TUNE_CALLS, read by createContext)
    // have a key of their own ("|cNx3|"): the default run's line is not taken, a second line
    // is recorded, and the default run's key is unchanged by it.
    ::setenv("TGRT_GEMM_TUNE_CALLS", "3", 1);
    run(1, 0, "3 calls per timing"); // its result against the CPU's (another algorithm may win)
    ::unsetenv("TGRT_GEMM_TUNE_CALLS");
    std::ifstream f3(path);
    std::string l, firstLine, secondLine;
    int lines = 0;
    while (std::getline(f3, l)) (++lines == 1 ? firstLine : secondLine) = l;
    const bool ok = lines == 2 && firstLine + "\n" == line &&
                    secondLine.find("x3|") != std::string::npos &&
                    firstLine.find("x3|") == std::string::npos;
    record("gemm tuning: calls per timing in the key", fmt("%d lines", lines), ok ? 0.0 : 1.0, 0.0);
    run(0, 1, "default after x3"); // the default key still finds its own line
  }
  { // Mode 3 (finalists timed sustained at the power limit): a key of its own ("|power"),
    // its result against the CPU's, then the same bits from the cache without timing.
    const Raw timedPower = run(1, 0, "at the power limit", 3);
    std::ifstream f4(path);
    std::string l;
    int powerLines = 0;
    while (std::getline(f4, l)) powerLines += l.find("|power") != std::string::npos;
    record("gemm tuning: power-limit key", fmt("%d |power lines", powerLines),
           powerLines == 1 ? 0.0 : 1.0, 0.0);
    const Raw cachedPower = run(0, 1, "at the power limit, cached", 3);
    record("gemm tuning: power-limit cached == timed", "bits",
           (double)bitDiffs(cachedPower, timedPower), 0.0);
  }
  { // A line of another shape first: skipped with a note.
    std::ofstream f2(path, std::ios::trunc);
    f2 << "not a tuning line\n" << line;
  }
  std::fprintf(stderr, "(expected message follows)\n");
  const Raw third = run(0, 1, "after a bad line");
  record("gemm tuning: bad line skipped", "bits", (double)bitDiffs(third, first), 0.0);
  std::remove(path.c_str());
  std::remove((dir + "/cache").c_str());
  std::remove(dir.c_str());
}

/// tgrt_add_mixed against the CPU, bit for bit (one float add, the same roundings): the
/// forward residual (f32 stream + low branch) and the backward one (f32 sums + their low
/// copy), with packs (aligned) and on the scalar path (one element off).
void checkAddMixed(Contexts& c, Rng& rng) {
  struct Case { int32_t out, b, low; bool withLow; };
  const Case cases[] = {{TGRT_F32, TGRT_BF16, TGRT_F32, false}, {TGRT_F32, TGRT_F16, TGRT_F32, false},
                        {TGRT_F32, TGRT_F32, TGRT_BF16, true},  {TGRT_F32, TGRT_F32, TGRT_F16, true},
                        {TGRT_BF16, TGRT_BF16, TGRT_F32, true}};
  const int64_t n = 100003;
  for (const Case& cs : cases)
    for (int64_t off : {int64_t(0), int64_t(1)}) {
      Raw a = rng.tensor(cs.out, (size_t)n), b = rng.tensor(cs.b, (size_t)n);
      Raw ref = zerosOf(cs.out, (size_t)n), lowRef = zerosOf(cs.low, (size_t)n);
      const int64_t m = n - off;
      const size_t eo = (size_t)tgrt_dtype_size(cs.out), eb = (size_t)tgrt_dtype_size(cs.b),
                   el = (size_t)tgrt_dtype_size(cs.low);
      tgrt_add_mixed(c.cpu, "check", cs.out, a.b.data() + off * eo, cs.b, b.b.data() + off * eb,
                     ref.b.data() + off * eo, cs.low, cs.withLow ? lowRef.b.data() + off * el : nullptr,
                     m);
      DevT ga(a), gb(b), go(cs.out, (size_t)n), gl(cs.low, (size_t)n);
      go.poison();
      gl.poison();
      tgrt_cuda::addMixed(c.gpu, "check", cs.out, ga.at(off), cs.b, gb.at(off), go.at(off), cs.low,
                          cs.withLow ? gl.at(off) : nullptr, m);
      auto tail = [&](Raw r) { // elements [off, n)
        const size_t es = (size_t)tgrt_dtype_size(r.dt);
        r.b.erase(r.b.begin(), r.b.begin() + off * es);
        return r;
      };
      const std::string shape = fmt("n%lld out %s b %s%s%s", (long long)m, dtName(cs.out),
                                    dtName(cs.b), cs.withLow ? " low " : "",
                                    cs.withLow ? dtName(cs.low) : "") +
                                (off ? " (scalar path)" : "");
      record("add_mixed (out)", shape, (double)bitDiffs(tail(go.raw()), tail(ref)), 0.0);
      if (cs.withLow)
        record("add_mixed (low)", shape, (double)bitDiffs(tail(gl.raw()), tail(lowRef)), 0.0);
    }
}

/// tgrt_matmul_acc (weight gradient onto its slot, beta 1, C in its own type) against the
/// CPU: the float32 GEMM of the widened operands added to C, one rounding.
void checkMatmulAcc(Contexts& c, Rng& rng) {
  struct Case { int32_t ab, cdt; int64_t m, n, k; int32_t ta, tb; float alpha; };
  const Case cases[] = {{TGRT_BF16, TGRT_F32, 768, 768, 512, 1, 0, 1.0f},
                        {TGRT_F16, TGRT_F32, 96, 64, 200, 1, 0, 1.0f},
                        {TGRT_BF16, TGRT_F32, 37, 29, 23, 0, 1, 0.5f},
                        {TGRT_F32, TGRT_F32, 64, 48, 100, 1, 0, 1.0f},
                        {TGRT_BF16, TGRT_BF16, 64, 48, 100, 1, 0, 1.0f}};
  for (const Case& cs : cases) {
    Raw a = rng.tensor(cs.ab, (size_t)(cs.m * cs.k)), b = rng.tensor(cs.ab, (size_t)(cs.k * cs.n)),
        cc = rng.tensor(cs.cdt, (size_t)(cs.m * cs.n));
    Raw ref = cc;
    tgrt_matmul_acc(c.cpu, "check", cs.ab, a.data(), b.data(), cs.cdt, ref.data(), cs.m, cs.n,
                    cs.k, cs.ta, cs.tb, cs.alpha);
    DevT ga(a), gb(b), gc(cc);
    tgrt_cuda::matmulAcc(c.gpu, "check", cs.ab, ga.p, gb.p, cs.cdt, gc.p, cs.m, cs.n, cs.k, cs.ta,
                         cs.tb, cs.alpha);
    record("matmul_acc",
           fmt("%s->%s %lldx%lldx%lld t%d%d a%.2g", dtName(cs.ab), dtName(cs.cdt),
               (long long)cs.m, (long long)cs.n, (long long)cs.k, cs.ta, cs.tb, cs.alpha),
           relErr(gc.raw(), ref), tolFor(cs.cdt == TGRT_F32 ? TGRT_F32 : cs.cdt));
  }
}

/// tgrt_matmul_wgrad (a weight gradient written into its slot, C not read, with the bias
/// gradient from its B) against the CPU, on both bias-gradient paths (cuBLASLt's BGRADA
/// epilogue and the own column sums); C starts as NaN so a read of it shows.
void checkMatmulWgrad(Contexts& c, Rng& rng) {
  struct Case { int32_t ab, cdt; int64_t m, n, k; int32_t ta, tb; float alpha; bool bias; };
  const Case cases[] = {{TGRT_BF16, TGRT_F32, 768, 2304, 1024, 1, 0, 1.0f, true},
                        {TGRT_BF16, TGRT_F32, 3072, 768, 512, 1, 0, 1.0f, true},
                        {TGRT_F16, TGRT_F32, 96, 64, 200, 1, 0, 1.0f, true},
                        {TGRT_BF16, TGRT_F32, 37, 29, 23, 1, 0, 0.5f, true},
                        {TGRT_BF16, TGRT_F32, 64, 48, 100, 1, 1, 1.0f, false},
                        {TGRT_F32, TGRT_F32, 64, 48, 100, 1, 0, 1.0f, true},
                        {TGRT_BF16, TGRT_BF16, 64, 48, 100, 1, 0, 1.0f, true},
                        {TGRT_BF16, TGRT_F32, 16, 24, 0, 1, 0, 1.0f, true}};
  // 1: the BGRADA epilogue; 0: the own column sums (the default chunks); 2: the own column
  // sums in 3 row chunks (TGRT_BGRAD_CHUNKS=3).
  for (int mode : {1, 0, 2}) {
    const bool epilogue = mode == 1;
    tgrt_cuda::setBgradEpilogue(c.gpu, epilogue);
    tgrt_cuda::setBgradChunks(c.gpu, mode == 2 ? 3 : 0);
    for (const Case& cs : cases) {
      const size_t mn = (size_t)(cs.m * cs.n);
      Raw a = rng.tensor(cs.ab, (size_t)(cs.m * cs.k)), b = rng.tensor(cs.ab, (size_t)(cs.k * cs.n));
      Raw ref = zerosOf(cs.cdt, mn), dbRef = zerosOf(cs.cdt, (size_t)cs.n);
      tgrt_matmul_wgrad(c.cpu, "check", cs.ab, a.data(), b.data(), cs.cdt, ref.data(), cs.m,
                        cs.n, cs.k, cs.ta, cs.tb, cs.alpha, cs.bias ? dbRef.data() : nullptr);
      Raw nanC = zerosOf(cs.cdt, mn), nanDb = zerosOf(cs.cdt, (size_t)cs.n);
      std::fill(nanC.b.begin(), nanC.b.end(), 0xFF); // all-ones bytes: NaN in every dtype
      std::fill(nanDb.b.begin(), nanDb.b.end(), 0xFF);
      DevT ga(a), gb(b), gc(nanC), gdb(nanDb);
      tgrt_cuda::matmulWgrad(c.gpu, "check", cs.ab, ga.p, gb.p, cs.cdt, gc.p, cs.m, cs.n, cs.k,
                             cs.ta, cs.tb, cs.alpha, cs.bias ? gdb.p : nullptr);
      const std::string shape =
          fmt("%s->%s %lldx%lldx%lld t%d%d a%.2g%s", dtName(cs.ab), dtName(cs.cdt),
              (long long)cs.m, (long long)cs.n, (long long)cs.k, cs.ta, cs.tb, cs.alpha,
              epilogue ? "" : mode == 2 ? " (own bias gradient, 3 chunks)" : " (own bias gradient)");
      record("matmul_wgrad (c)", shape, relErr(gc.raw(), ref), tolFor(cs.cdt));
      if (cs.bias)
        record("matmul_wgrad (dbias)", shape, relErr(gdb.raw(), dbRef), tolFor(cs.cdt));
    }
  }
  tgrt_cuda::setBgradEpilogue(c.gpu, false); // the defaults
  tgrt_cuda::setBgradChunks(c.gpu, 0);
}

/// The bias-rows GEMMs (docs/design-notes.md "Bias rows"), which read a layer norm's output
/// with its rows d + TGRT_ONES_COLUMNS apart: tgrt_matmul_bias_lda and _gelu_lda (the forward,
/// the first k of each row) and tgrt_matmul_wgrad_lda (the weight gradient, A read
/// transposed: the first m = d + TGRT_BIAS_ROWS of each row), against the CPU's (rows
/// gathered, then the packed kernels). Outputs start as NaN so an element left unwritten shows.
void checkMatmulLda(Contexts& c, Rng& rng) {
  struct Case { int32_t dt; int64_t rows, d, n; };
  const Case cases[] = {{TGRT_BF16, 512, 768, 2304},
                        {TGRT_BF16, 300, 64, 192},
                        {TGRT_F16, 128, 128, 256},
                        {TGRT_F32, 100, 64, 48}};
  auto nanOf = [](int32_t dt, size_t n) {
    Raw r = zerosOf(dt, n);
    std::fill(r.b.begin(), r.b.end(), 0xFF); // all-ones bytes: NaN in every dtype
    return r;
  };
  for (const Case& cs : cases) {
    const int64_t lda = cs.d + TGRT_ONES_COLUMNS, m = cs.d + TGRT_BIAS_ROWS;
    const std::string shape = fmt("%s rows%lld d%lld n%lld lda%lld", dtName(cs.dt),
                                  (long long)cs.rows, (long long)cs.d, (long long)cs.n,
                                  (long long)lda);
    Raw y = rng.tensor(cs.dt, (size_t)(cs.rows * lda)),
        w = rng.tensor(cs.dt, (size_t)(cs.d * cs.n)), bias = rng.tensor(cs.dt, (size_t)cs.n),
        dh = rng.tensor(cs.dt, (size_t)(cs.rows * cs.n));
    DevT gy(y), gw(w), gbias(bias), gdh(dh);
    { // forward, bias epilogue
      Raw ref = zerosOf(cs.dt, (size_t)(cs.rows * cs.n));
      tgrt_matmul_bias_lda(c.cpu, "check", cs.dt, y.data(), w.data(), bias.data(), ref.data(),
                           cs.rows, cs.n, cs.d, lda, 0, 1.0f);
      DevT gc(nanOf(cs.dt, ref.n()));
      tgrt_cuda::matmulBiasLda(c.gpu, "check", cs.dt, gy.p, gw.p, gbias.p, gc.p, cs.rows, cs.n,
                               cs.d, lda, 0, 1.0f);
      record("matmul_bias_lda", shape, relErr(gc.raw(), ref), tolFor(cs.dt));
    }
    { // forward, GELU epilogue
      Raw pre = zerosOf(cs.dt, (size_t)(cs.rows * cs.n)), out = pre;
      tgrt_matmul_bias_gelu_lda(c.cpu, "check", cs.dt, y.data(), w.data(), bias.data(),
                                pre.data(), out.data(), cs.rows, cs.n, cs.d, lda, 0, 1.0f);
      DevT gpre(nanOf(cs.dt, pre.n())), gout(nanOf(cs.dt, out.n()));
      tgrt_cuda::matmulBiasGeluLda(c.gpu, "check", cs.dt, gy.p, gw.p, gbias.p, gpre.p, gout.p,
                                   cs.rows, cs.n, cs.d, lda, 0, 1.0f);
      record("matmul_bias_gelu_lda (pre)", shape, relErr(gpre.raw(), pre), tolFor(cs.dt));
      record("matmul_bias_gelu_lda (out)", shape, relErr(gout.raw(), out), tolFor(cs.dt));
    }
    // The weight gradient into f32 (the slots of mixed precision) and, 16-bit, into dt.
    std::vector<int32_t> cdts = {TGRT_F32};
    if (cs.dt != TGRT_F32) cdts.push_back(cs.dt);
    for (int32_t cdt : cdts) {
      Raw ref = zerosOf(cdt, (size_t)(m * cs.n));
      tgrt_matmul_wgrad_lda(c.cpu, "check", cs.dt, y.data(), dh.data(), cdt, ref.data(), m, cs.n,
                            cs.rows, lda, 0, 1.0f);
      DevT gc(nanOf(cdt, ref.n()));
      tgrt_cuda::matmulWgradLda(c.gpu, "check", cs.dt, gy.p, gdh.p, cdt, gc.p, m, cs.n, cs.rows,
                                lda, 0, 1.0f);
      record("matmul_wgrad_lda", shape + fmt(" m%lld ->%s", (long long)m, dtName(cdt)),
             relErr(gc.raw(), ref), tolFor(cdt));
      // The accumulating form (persistent gradient slots): C += A^T dh onto a C that holds
      // values, the same start on both sides.
      Raw start = rng.tensor(cdt, (size_t)(m * cs.n)), acc = start;
      tgrt_matmul_acc_lda(c.cpu, "check", cs.dt, y.data(), dh.data(), cdt, acc.data(), m, cs.n,
                          cs.rows, lda, 0, 1.0f);
      DevT gacc(start);
      tgrt_cuda::matmulAccLda(c.gpu, "check", cs.dt, gy.p, gdh.p, cdt, gacc.p, m, cs.n, cs.rows,
                              lda, 0, 1.0f);
      record("matmul_acc_lda", shape + fmt(" m%lld ->%s", (long long)m, dtName(cdt)),
             relErr(gacc.raw(), acc), tolFor(cdt));
    }
  }
}

/// The work tgrt_run_graph captures in checkRunGraph: two bias GEMMs of one plan (the bias
/// pointer is a descriptor attribute set before each call: a replay must keep each call's),
/// the fused GELU epilogue, the cross-entropy (its count / row-loss kernels, workspace) and a
/// memset; g_graph's buffers stay at their addresses for the whole check.
struct GraphBufs {
  void *x, *w, *b1, *b2, *y1, *y2, *pre, *h, *dlogits, *z;
  int32_t* targets;
  float *loss, *dloss;
  int64_t rows, d, vocab;
} g_graph;

void graphWork(tgrt_ctx* ctx) {
  auto* g = reinterpret_cast<tgrt_cuda::Context*>(ctx);
  const GraphBufs& b = g_graph;
  tgrt_cuda::matmulBias(g, "graph.a", TGRT_BF16, b.x, b.w, b.b1, b.y1, b.rows, b.vocab, b.d, 0,
                        1, 1.0f);
  tgrt_cuda::matmulBias(g, "graph.b", TGRT_BF16, b.x, b.w, b.b2, b.y2, b.rows, b.vocab, b.d, 0,
                        1, 1.0f);
  tgrt_cuda::matmulBiasGelu(g, "graph.c", TGRT_BF16, b.x, b.w, b.b1, b.pre, b.h, b.rows, b.vocab,
                            b.d, 0, 1, 1.0f);
  tgrt_cuda::crossEntropyFwdBwd(g, "graph.d", TGRT_BF16, b.y2, b.targets, b.loss, b.dloss,
                                b.dlogits, b.rows, b.vocab, -1);
  tgrt_cuda::zero(g, "graph.e", b.z, 4096);
}

void graphDropout(tgrt_ctx* ctx) {
  const GraphBufs& b = g_graph;
  tgrt_cuda::dropout(reinterpret_cast<tgrt_cuda::Context*>(ctx), "graph.dropout", TGRT_BF16,
                     b.y1, b.z, 1024, 0.25f, 12345);
}

/// tgrt_run_graph: the captured-then-launched work and its replay on new inputs give the bits
/// of the same work run call by call; work that would not replay right (dropout's per-step
/// key) runs call by call, correctly, and stays so.
void checkRunGraph(Contexts& c, Rng& rng) {
  // Its own context, without TGRT_GEMM_STEP_TUNE (which runs the step call by call until its
  // GEMMs are decided): the capture's default behaviour is what this checks.
  tgrt_cuda::Context* gpu = contextWithout(&c.model, "TGRT_GEMM_STEP_TUNE");
  const int64_t rows = 96, d = 64, vocab = 136;
  GraphBufs& b = g_graph;
  b.rows = rows;
  b.d = d;
  b.vocab = vocab;
  Raw x1 = rng.tensor(TGRT_BF16, (size_t)(rows * d)), x2 = rng.tensor(TGRT_BF16, (size_t)(rows * d));
  Raw w = rng.tensor(TGRT_BF16, (size_t)(vocab * d));
  Raw b1 = rng.tensor(TGRT_BF16, (size_t)vocab), b2 = rng.tensor(TGRT_BF16, (size_t)vocab);
  std::vector<int32_t> t1((size_t)rows), t2((size_t)rows);
  for (size_t i = 0; i < t1.size(); ++i) {
    t1[i] = rng.below(vocab);
    t2[i] = i % 7 == 0 ? -1 : rng.below(vocab);
  }
  DevT gx(x1), gw(w), gb1(b1), gb2(b2), gy1(TGRT_BF16, (size_t)(rows * vocab)),
      gy2(TGRT_BF16, (size_t)(rows * vocab)), gpre(TGRT_BF16, (size_t)(rows * vocab)),
      gh(TGRT_BF16, (size_t)(rows * vocab)), gdl(TGRT_BF16, (size_t)(rows * vocab)),
      gz(TGRT_BF16, 2048);
  Dev<int32_t> gt(t1);
  Dev<float> gloss(1), gdloss(std::vector<float>{0.5f});
  b.x = gx.p;
  b.w = gw.p;
  b.b1 = gb1.p;
  b.b2 = gb2.p;
  b.y1 = gy1.p;
  b.y2 = gy2.p;
  b.pre = gpre.p;
  b.h = gh.p;
  b.dlogits = gdl.p;
  b.z = gz.p;
  b.targets = gt.p;
  b.loss = gloss.p;
  b.dloss = gdloss.p;
  tgrt_ctx* ctx = reinterpret_cast<tgrt_ctx*>(gpu);
  const DevT* outs[] = {&gy1, &gy2, &gpre, &gh, &gdl, &gz};
  auto snapshot = [&] {
    std::vector<Raw> r;
    for (const DevT* o : outs) r.push_back(o->raw());
    Raw l;
    l.dt = TGRT_F32;
    l.b.resize(sizeof(float));
    const std::vector<float> lv = gloss.get();
    std::memcpy(l.b.data(), lv.data(), sizeof(float));
    r.push_back(l);
    return r;
  };
  auto poison = [&] {
    for (const DevT* o : outs) const_cast<DevT*>(o)->poison();
    gloss.poison();
  };
  auto diffs = [](const std::vector<Raw>& a, const std::vector<Raw>& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += bitDiffs(a[i], b[i]);
    return (double)n;
  };
  // Synchronising after every launch (TGRT_CUDA_SYNC=1, as the GPU scripts run this) refuses
  // a capture: off for this check.
  const bool syncEach = tgrt_cuda::setSyncEach(gpu, false);
  // Call by call on the first inputs (this also makes the plans a capture needs).
  poison();
  graphWork(ctx);
  const std::vector<Raw> eager1 = snapshot();
  // Captured and launched.
  poison();
  const int32_t ran1 = tgrt_cuda::runGraph(gpu, 0, graphWork);
  record("run_graph capture (ran as a graph)", "slot 0", ran1 == 1 ? 0.0 : 1.0, 0.0);
  record("run_graph capture == call by call", "bits of 7 outputs", diffs(snapshot(), eager1), 0.0);
  // New inputs at the same addresses: call by call, then the replay.
  gx.put(x2.b);
  gt.put(t2);
  poison();
  graphWork(ctx);
  const std::vector<Raw> eager2 = snapshot();
  poison();
  const int32_t ran2 = tgrt_cuda::runGraph(gpu, 0, graphWork);
  const std::vector<Raw> replay2 = snapshot();
  record("run_graph replay (ran as a graph)", "slot 0", ran2 == 1 ? 0.0 : 1.0, 0.0);
  record("run_graph replay == call by call", "new x, targets", diffs(replay2, eager2), 0.0);
  record("run_graph replay reads new inputs", "outputs differ from the first",
         diffs(replay2, eager1) > 0 ? 0.0 : 1.0, 0.0);
  // Dropout (its key changes every step): the capture is refused, the work runs call by call.
  tgrt_cuda::setStep(gpu, 3);
  graphDropout(ctx); // the ordinary first call
  gz.poison();
  graphDropout(ctx);
  const Raw dropEager = gz.raw();
  gz.poison();
  std::fprintf(stderr, "(expected message follows)\n");
  const int32_t ran4 = tgrt_cuda::runGraph(gpu, 1, graphDropout);
  record("run_graph refuses dropout", "slot 1 call by call", ran4 == 0 ? 0.0 : 1.0, 0.0);
  record("run_graph refused == call by call", "dropout bits", (double)bitDiffs(gz.raw(), dropEager),
         0.0);
  tgrt_cuda::setStep(gpu, 4);
  gz.poison();
  graphDropout(ctx);
  const Raw drop4 = gz.raw();
  gz.poison();
  const int32_t ran5 = tgrt_cuda::runGraph(gpu, 1, graphDropout);
  record("run_graph refused slot stays call by call", "step 4 mask",
         ran5 == 0 && bitDiffs(gz.raw(), drop4) == 0 && bitDiffs(drop4, dropEager) > 0 ? 0.0 : 1.0,
         0.0);
  tgrt_cuda::setStep(gpu, 1);
  tgrt_cuda::setSyncEach(gpu, syncEach);
  tgrt_cuda::destroyContext(gpu);
}

/// tgrt_matmul_bias_residual (a linear layer added into the f32 residual stream: one cuBLASLt
/// call with C = res, beta 1, the bias epilogue in D's type) against the CPU's float32
/// GEMM + bias + res, one rounding; out aliasing res (in place) and not.
void checkMatmulBiasResidual(Contexts& c, Rng& rng) {
  struct Case { int32_t ab, cdt; int64_t m, n, k; int32_t ta, tb; float alpha; bool inPlace; };
  const Case cases[] = {{TGRT_BF16, TGRT_F32, 512, 768, 768, 0, 0, 1.0f, false},
                        {TGRT_BF16, TGRT_F32, 256, 768, 3072, 0, 0, 1.0f, true},
                        {TGRT_F16, TGRT_F32, 96, 64, 200, 0, 0, 1.0f, false},
                        {TGRT_BF16, TGRT_F32, 37, 29, 23, 0, 1, 0.5f, false},
                        {TGRT_F32, TGRT_F32, 64, 48, 100, 0, 0, 1.0f, true}};
  for (const Case& cs : cases) {
    const size_t mn = (size_t)(cs.m * cs.n);
    Raw a = rng.tensor(cs.ab, (size_t)(cs.m * cs.k)), b = rng.tensor(cs.ab, (size_t)(cs.k * cs.n)),
        bias = rng.tensor(cs.cdt, (size_t)cs.n), res = rng.tensor(cs.cdt, mn),
        ref = zerosOf(cs.cdt, mn);
    tgrt_matmul_bias_residual(c.cpu, "check", cs.ab, a.data(), b.data(), cs.cdt, bias.data(),
                              res.data(), ref.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.alpha);
    DevT ga(a), gb(b), gbias(bias), gres(res), gout(cs.cdt, mn);
    gout.poison(); // written, never read
    void* out = cs.inPlace ? gres.p : gout.p;
    tgrt_cuda::matmulBiasResidual(c.gpu, "check", cs.ab, ga.p, gb.p, cs.cdt, gbias.p, gres.p, out,
                                  cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.alpha);
    record("matmul_bias_residual",
           fmt("%s->%s %lldx%lldx%lld t%d%d a%.2g%s", dtName(cs.ab), dtName(cs.cdt),
               (long long)cs.m, (long long)cs.n, (long long)cs.k, cs.ta, cs.tb, cs.alpha,
               cs.inPlace ? " in place" : ""),
           relErr(cs.inPlace ? gres.raw() : gout.raw(), ref),
           tolFor(cs.ab == TGRT_F32 ? TGRT_F32 : cs.cdt));
  }
}

/// tgrt_matmul_dgelu_bgrad against the CPU's unfused chain (GEMM -> GELU backward -> bias
/// gradient), both outputs. With the epilogue (GPT-2's 512 x 3072 x 768 with trans_b, the
/// down-projection's input gradient) GELU' and the sums see the unrounded GEMM result, the
/// CPU the rounded one: twice the dtype's tolerance, as the forward GELU epilogue. The odd
/// shape takes the unfused path.
void checkMatmulDgeluBgrad(Contexts& c, Rng& rng, int32_t dt) {
  struct Case { int64_t m, n, k; int32_t ta, tb; float alpha; };
  const Case cases[] = {{512, 3072, 768, 0, 1, 1.0f}, {40, 24, 36, 0, 0, 0.5f},
                        {37, 29, 23, 0, 1, 1.0f}};
  for (const Case& cs : cases) {
    const size_t mn = (size_t)(cs.m * cs.n);
    Raw a = rng.tensor(dt, (size_t)(cs.m * cs.k)), b = rng.tensor(dt, (size_t)(cs.k * cs.n)),
        pre = rng.tensor(dt, mn, -3.0f, 3.0f), dx = zerosOf(dt, mn), db = zerosOf(dt, (size_t)cs.n);
    tgrt_matmul_dgelu_bgrad(c.cpu, "check", dt, a.data(), b.data(), pre.data(), dx.data(),
                            db.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.alpha);
    DevT ga(a), gb(b), gp(pre), gdx(dt, mn), gdb(dt, (size_t)cs.n);
    for (int mode : {0, 1, 2}) { // own kernels, DGELU epilogue, DGELU_BGRAD epilogue
      gdx.poison();
      gdb.poison();
      tgrt_cuda::setDgeluEpilogue(c.gpu, mode);
      tgrt_cuda::matmulDgeluBgrad(c.gpu, "check", dt, ga.p, gb.p, gp.p, gdx.p, gdb.p, cs.m, cs.n,
                                  cs.k, cs.ta, cs.tb, cs.alpha);
      const std::string shape =
          fmt("%lldx%lldx%lld t%d%d a%.2g path %d", (long long)cs.m, (long long)cs.n,
              (long long)cs.k, cs.ta, cs.tb, cs.alpha, mode);
      record(named("matmul_dgelu_bgrad (dx)", dt), shape, relErr(gdx.raw(), dx), 2 * tolFor(dt));
      record(named("matmul_dgelu_bgrad (dbias)", dt), shape, relErr(gdb.raw(), db),
             2 * tolFor(dt));
    }
    tgrt_cuda::setDgeluEpilogue(c.gpu, 1); // the default
  }
}

/// The own Hopper GEMM (gemmBf16: TMA, mbarriers, wgmma) against the CPU's tgrt_matmul /
/// tgrt_matmul_bias / tgrt_matmul_bias_gelu, every schedule and epilogue with b [n, k]
/// (trans_b) and the persistent schedule with b [k, n] too: m, n, k off the tiles (TMA's zero
/// fill at every edge), k not a multiple of 64, more k tiles than pipeline stages. bf16 at
/// the dtype's tolerance (another summation order); GELU's out within one bf16 unit in the
/// last place of the tanh GELU (in double) of the GEMM's own pre. Skipped (a note, no rows) on a device without the sm_90a kernels.
void checkOwnGemm(Contexts& c, Rng& rng, bool quick) {
  if (!tgrt_cuda::ownGemmAvailable(c.gpu)) {
    std::printf("gemm_bf16: skipped (needs compute capability 9.0)\n");
    return;
  }
  const int32_t dt = TGRT_BF16;
  struct Case { int64_t m, n, k; float alpha; };
  // 300 x 520 x 200: 3 tile rows (the clusters' last pair has a block past m), 6 cluster
  // tiles for one cluster to walk, more k tiles than stages.
  std::vector<Case> cases = {{200, 264, 136, 1.0f}, {130, 128, 328, 0.5f}, {300, 520, 200, 1.0f}};
  if (!quick) {
    cases.push_back({1000, 3072, 768, 1.0f});
    cases.push_back({777, 2304, 1024, 1.0f});
  }
  using E = tgrt_cuda::GemmEpilogue;
  using S = tgrt_cuda::GemmSchedule;
  for (const Case& cs : cases)
    for (int32_t tb : {1, 0}) {
      const size_t mn = (size_t)(cs.m * cs.n);
      Raw a = rng.tensor(dt, (size_t)(cs.m * cs.k)), b = rng.tensor(dt, (size_t)(cs.n * cs.k)),
          bias = rng.tensor(dt, (size_t)cs.n), ref = zerosOf(dt, mn), refB = zerosOf(dt, mn),
          refPre = zerosOf(dt, mn), refOut = zerosOf(dt, mn);
      tgrt_matmul(c.cpu, "check", dt, a.data(), b.data(), ref.data(), 1, cs.m, cs.n, cs.k, 0, tb,
                  0, 0, 0, cs.alpha, 0.0f);
      tgrt_matmul_bias(c.cpu, "check", dt, a.data(), b.data(), bias.data(), refB.data(), cs.m,
                       cs.n, cs.k, 0, tb, cs.alpha);
      tgrt_matmul_bias_gelu(c.cpu, "check", dt, a.data(), b.data(), bias.data(), refPre.data(),
                            refOut.data(), cs.m, cs.n, cs.k, 0, tb, cs.alpha);
      DevT ga(a), gb(b), gbias(bias), gpre(dt, mn), gout(dt, mn);
      // SwiGLU's backward in the epilogue (E::SwigluBwd): x = [gate | up] [m, 2n]; the CPU's
      // tgrt_swiglu_bwd of the CPU product is the reference.
      Raw sx = rng.tensor(dt, 2 * mn), refDx = zerosOf(dt, 2 * mn);
      tgrt_swiglu_bwd(c.cpu, "check", dt, sx.data(), ref.data(), refDx.data(), cs.m, cs.n);
      DevT gsx(sx), gdx(dt, 2 * mn), gdxSep(dt, 2 * mn);
      // The persistent schedules also on 1 and 2 blocks: each walks many tiles (the ping-pong
      // order barriers' phases, the ring's wrap across tiles, the staging buffer's reuse).
      struct Run { S sched; int blocks; const char* name; };
      const Run runs[] = {{S::PingPong, 0, "pingpong"}, {S::PingPong, 1, "pingpong 1 block"},
                          {S::PingPong, 2, "pingpong 2 blocks"}, {S::Cooperative256, 0, "coop 256"},
                          {S::Cooperative128, 0, "coop 128"}, {S::Persistent256, 0, "persist 256"},
                          {S::Persistent256, 1, "persist 256 1 block"},
                          {S::PersistentEpilogue, 0, "persist epi wg"},
                          {S::PersistentEpilogue, 1, "persist epi wg 1 block"},
                          {S::ClusterEpilogue, 0, "cluster epi wg"},
                          {S::ClusterEpilogue, 2, "cluster epi wg 1 cluster"},
                          {S::Cluster256, 0, "cluster 256"},
                          {S::Cluster256, 2, "cluster 256 1 cluster"}};
      for (const Run& run : runs) {
        if (!tb && run.sched != S::Persistent256 && run.sched != S::PersistentEpilogue &&
            run.sched != S::ClusterEpilogue && run.sched != S::Cluster256)
          continue; // b [k, n]: the persistent 128 x 256 kernels only
        for (E epi : {E::None, E::Bias, E::BiasGelu}) {
          gpre.poison();
          gout.poison();
          tgrt_cuda::gemmBf16(c.gpu, "check", ga.p, gb.p, gbias.p, gpre.p, gout.p, cs.m, cs.n,
                              cs.k, tb, cs.alpha, epi, run.sched, run.blocks);
          const std::string shape = fmt("%lldx%lldx%lld t0%d a%.2g %s", (long long)cs.m,
                                        (long long)cs.n, (long long)cs.k, tb, cs.alpha, run.name);
          if (epi == E::None) {
            record("gemm_bf16", shape, relErr(gout.raw(), ref), tolFor(dt));
          } else if (epi == E::Bias) {
            record("gemm_bf16 +bias", shape, relErr(gout.raw(), refB), tolFor(dt));
          } else {
            record("gemm_bf16 +bias+gelu pre", shape, relErr(gpre.raw(), refPre), tolFor(dt));
            record("gemm_bf16 +bias+gelu out", shape, relErr(gout.raw(), refOut),
                   2 * tolFor(dt));
            // The epilogue's GELU (geluFast) against the tanh GELU of the same pre in double
            // (as x / (1 + e^(-2u)): 1 + tanh u cancels to 0 for very negative u), rounded to
            // bf16: within one bf16 unit in the last place.
            const Vec p = decode(gpre.raw());
            Vec exact(p.size());
            for (size_t i = 0; i < p.size(); ++i) {
              const double x = p[i], u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
              exact[i] = (float)(x / (1.0 + std::exp(-2.0 * u))); // = 0.5 x (1 + tanh u)
            }
            record("gemm_bf16 gelu(pre) in bf16 ulps", shape,
                   ulpDiff(gout.raw(), encode(exact, dt)), 1.0);
          }
        }
        if (run.sched == S::PersistentEpilogue || run.sched == S::ClusterEpilogue) {
          // dx from the epilogue against tgrt_swiglu_bwd of the same schedule's stored
          // product (bit for bit: the same rounded dy, the same arithmetic, Swiglu.cuh) and
          // against the CPU (another summation order: twice the dtype's tolerance).
          const std::string shape = fmt("%lldx%lldx%lld t0%d a%.2g %s", (long long)cs.m,
                                        (long long)cs.n, (long long)cs.k, tb, cs.alpha, run.name);
          gout.poison();
          gdxSep.poison();
          tgrt_cuda::gemmBf16(c.gpu, "check", ga.p, gb.p, nullptr, nullptr, gout.p, cs.m, cs.n,
                              cs.k, tb, cs.alpha, E::None, run.sched, run.blocks);
          tgrt_cuda::swigluBwd(c.gpu, "check", dt, gsx.p, gout.p, gdxSep.p, cs.m, cs.n);
          gdx.poison();
          tgrt_cuda::gemmBf16(c.gpu, "check", ga.p, gb.p, nullptr, gsx.p, gdx.p, cs.m, cs.n, cs.k,
                              tb, cs.alpha, E::SwigluBwd, run.sched, run.blocks);
          record("gemm_bf16 +swiglu_bwd = gemm, swiglu_bwd (elements differing)", shape,
                 (double)bitDiffs(gdx.raw(), gdxSep.raw()), 0.0);
          record("gemm_bf16 +swiglu_bwd", shape, relErr(gdx.raw(), refDx), 2 * tolFor(dt));
        }
      }
      // The runtime's entries through it (TGRT_OWN_GEMM=2: always where it applies).
      tgrt_cuda::setOwnGemm(c.gpu, 2);
      const std::string shape = fmt("%lldx%lldx%lld t0%d a%.2g via TGRT_OWN_GEMM=2",
                                    (long long)cs.m, (long long)cs.n, (long long)cs.k, tb, cs.alpha);
      gout.poison();
      tgrt_cuda::matmulBias(c.gpu, "check", dt, ga.p, gb.p, gbias.p, gout.p, cs.m, cs.n, cs.k, 0,
                            tb, cs.alpha);
      record("matmul_bias [own gemm]", shape, relErr(gout.raw(), refB), tolFor(dt));
      gpre.poison();
      gout.poison();
      tgrt_cuda::matmulBiasGelu(c.gpu, "check", dt, ga.p, gb.p, gbias.p, gpre.p, gout.p, cs.m,
                                cs.n, cs.k, 0, tb, cs.alpha);
      record("matmul_bias_gelu [own gemm] pre", shape, relErr(gpre.raw(), refPre), tolFor(dt));
      record("matmul_bias_gelu [own gemm] out", shape, relErr(gout.raw(), refOut), 2 * tolFor(dt));
#ifdef TGRT_CUDA_EMULATE
      tgrt_cuda::setOwnGemm(c.gpu, 0);
#else
      tgrt_cuda::setOwnGemm(c.gpu, 1);
#endif
    }
}

/// tgrt_matmul_bias (cuBLASLt bias epilogue) against the CPU: GEMM then row-broadcast bias.
void checkMatmulBias(Contexts& c, Rng& rng, int32_t dt) {
  struct Case { int64_t m, n, k; int32_t ta, tb; float alpha; };
  const Case cases[] = {{512, 2304, 768, 0, 0, 1.0f}, {37, 29, 23, 0, 1, 0.5f},
                        {64, 96, 48, 1, 0, 1.0f},     {16384 / 64, 3072, 768, 0, 0, 1.0f}};
  for (const Case& cs : cases) {
    Raw a = rng.tensor(dt, (size_t)(cs.m * cs.k)), b = rng.tensor(dt, (size_t)(cs.k * cs.n)),
        bias = rng.tensor(dt, (size_t)cs.n), ref = zerosOf(dt, (size_t)(cs.m * cs.n));
    tgrt_matmul_bias(c.cpu, "check", dt, a.data(), b.data(), bias.data(), ref.data(), cs.m, cs.n,
                     cs.k, cs.ta, cs.tb, cs.alpha);
    DevT ga(a), gb(b), gbias(bias), gc(dt, (size_t)(cs.m * cs.n));
    gc.poison(); // C is written, never read
    tgrt_cuda::matmulBias(c.gpu, "check", dt, ga.p, gb.p, gbias.p, gc.p, cs.m, cs.n, cs.k, cs.ta,
                          cs.tb, cs.alpha);
    record(named("matmul_bias (epilogue)", dt),
           fmt("%lldx%lldx%lld t%d%d a%.2g", (long long)cs.m, (long long)cs.n, (long long)cs.k,
               cs.ta, cs.tb, cs.alpha),
           relErr(gc.raw(), ref), tolFor(dt));
  }
}

/// tgrt_matmul_bias_gelu against the CPU (GEMM + bias, then tanh GELU), both outputs: the
/// exact path (bias epilogue + own GELU kernel, fp32 tolerance) and the fused
/// CUBLASLT_EPILOGUE_GELU_AUX_BIAS path, measured with an fp32 GEMM so that the error shown
/// is the epilogue's GELU alone; it is held to 1e-5 (measured: at most 1.8e-6 on an H100).
/// bf16 / f16 (epilogue on by default): both paths at twice the dtype's tolerance: out is
/// rounded from a GELU of pre, and pre itself may differ from the reference's by one unit in
/// the last place (another summation order), or the fused GELU works on the unrounded
/// pre-activation and the reference on the rounded one (so up to ~2 units apart).
void checkMatmulBiasGelu(Contexts& c, Rng& rng, int32_t dt) {
  struct Case { int64_t m, n, k; int32_t ta, tb; float alpha; };
  const Case cases[] = {{128, 3072, 768, 0, 0, 1.0f}, {40, 24, 36, 0, 1, 0.5f},
                        {37, 29, 23, 0, 0, 1.0f}}; // n = 29: no epilogue (aux ld % 8)
  for (const Case& cs : cases) {
    const size_t mn = (size_t)(cs.m * cs.n);
    Raw a = rng.tensor(dt, (size_t)(cs.m * cs.k)), b = rng.tensor(dt, (size_t)(cs.k * cs.n)),
        bias = rng.tensor(dt, (size_t)cs.n), pre = zerosOf(dt, mn), out = zerosOf(dt, mn);
    tgrt_matmul_bias_gelu(c.cpu, "check", dt, a.data(), b.data(), bias.data(), pre.data(),
                          out.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.alpha);
    DevT ga(a), gb(b), gbias(bias);
    for (bool fused : {false, true}) {
      DevT gpre(dt, mn), gout(dt, mn);
      gpre.poison(); // both written, never read
      gout.poison();
      tgrt_cuda::setGeluEpilogue(c.gpu, fused);
      tgrt_cuda::matmulBiasGelu(c.gpu, "check", dt, ga.p, gb.p, gbias.p, gpre.p, gout.p, cs.m,
                                cs.n, cs.k, cs.ta, cs.tb, cs.alpha);
      const std::string shape = fmt("%lldx%lldx%lld t%d%d a%.2g", (long long)cs.m,
                                    (long long)cs.n, (long long)cs.k, cs.ta, cs.tb, cs.alpha);
      const char* name = fused ? "matmul_bias_gelu [gelu epi]" : "matmul_bias_gelu [exact]";
      // f32 through the epilogue: 1e-5, about 5x the worst seen on an H100 (1.8e-6 over the
      // 2026-11-23 logs in bench/results/2026-11-23-h100/; was 2e-3).
      const double tol = dt != TGRT_F32 ? 2.0 * tolFor(dt) : fused ? 1e-5 : kTol;
      const std::string full = dt == TGRT_F32 ? std::string(name)
                                              : std::string(name) + "[" + dtName(dt) + "]";
      record(full + " pre", shape, relErr(gpre.raw(), pre), tol);
      record(full + " out", shape, relErr(gout.raw(), out), tol);
    }
    tgrt_cuda::setGeluEpilogue(c.gpu, false);
  }
}

/// A misaligned operand (offset by one element): cuBLASLt must be told the real alignment.
/// Run last: a library failure here exits the program.
void checkMatmulMisaligned(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t m = 40, n = 24, k = 36;
  const size_t es = (size_t)tgrt_dtype_size(dt);
  Raw a = rng.tensor(dt, (size_t)(m * k + 1)), b = rng.tensor(dt, (size_t)(k * n + 1));
  Raw ref = zerosOf(dt, (size_t)(m * n));
  tgrt_matmul(c.cpu, "check", dt, a.b.data() + es, b.b.data() + es, ref.data(), 1, m, n, k, 0, 0,
              0, 0, 0, 1.0f, 0.0f);
  DevT ga(a), gb(b), gc(dt, (size_t)(m * n + 1));
  gc.poison();
  tgrt_cuda::matmul(c.gpu, "check", dt, ga.at(1), gb.at(1), gc.at(1), 1, m, n, k, 0, 0, 0, 0, 0,
                    1.0f, 0.0f);
  Vec got = gc.f();
  got.erase(got.begin());
  record(named(dt == TGRT_F32 ? "matmul (4-byte aligned ptrs)" : "matmul (2-byte aligned ptrs)",
               dt),
         "40x24x36", relErr(got, decode(ref)), tolFor(dt));
}

void checkBiasN(Contexts& c, Rng& rng, int32_t dt, int64_t n, int64_t rows = 1000) {
  Raw x = rng.tensor(dt, (size_t)(rows * n)), bias = rng.tensor(dt, (size_t)n);
  Raw ref = zerosOf(dt, x.n());
  tgrt_bias_add(c.cpu, "check", dt, x.data(), bias.data(), ref.data(), rows, n);
  DevT gx(x), gb(bias);
  tgrt_cuda::biasAdd(c.gpu, "check", dt, gx.p, gb.p, gx.p, rows, n); // in place
  record(named("bias_add (out aliases x)", dt), fmt("rows%lld n%lld", (long long)rows, (long long)n),
         relErr(gx.raw(), ref), exactTol(dt));
  Raw dref = zerosOf(dt, (size_t)n);
  tgrt_bias_grad(c.cpu, "check", dt, x.data(), dref.data(), rows, n);
  DevT gdy(x), gdb(dt, (size_t)n);
  gdb.poison();
  tgrt_cuda::biasGrad(c.gpu, "check", dt, gdy.p, gdb.p, rows, n);
  record(named("bias_grad", dt), fmt("rows%lld n%lld", (long long)rows, (long long)n), relErr(gdb.raw(), dref),
         tolFor(dt));
  // The same dy one element off its 16-byte alignment takes the scalar first stage
  // (column_partials_kernel): the packed one's sums must be the same bits (Kernels.cu).
  {
    const size_t es = (size_t)tgrt_dtype_size(dt);
    DevT shifted(dt, x.n() + 1), sdb(dt, (size_t)n);
    ck(cudaMemcpy(shifted.p + es, x.data(), x.b.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after H2D)");
    sdb.poison();
    tgrt_cuda::biasGrad(c.gpu, "check", dt, shifted.p + es, sdb.p, rows, n);
    record(named("bias_grad packed = scalar (bits)", dt), fmt("rows%lld n%lld", (long long)rows, (long long)n),
           (double)bitDiffs(gdb.raw(), sdb.raw()), 0.0);
  }
  // Added into an f32 slot (tgrt_bias_grad_acc): the same sums, no rounding to dt first.
  // Its own generator, so the later checks see the same data as before this check existed.
  Rng own(0x5107 + (uint64_t)n);
  Raw slot = own.tensor(TGRT_F32, (size_t)n), aref = slot;
  tgrt_bias_grad_acc(c.cpu, "check", dt, x.data(), TGRT_F32, aref.data(), rows, n);
  DevT gslot(slot);
  tgrt_cuda::biasGradAcc(c.gpu, "check", dt, gdy.p, TGRT_F32, gslot.p, rows, n);
  record(named("bias_grad_acc (into f32)", dt), fmt("rows%lld n%lld", (long long)rows, (long long)n),
         relErr(gslot.raw(), aref), tolFor(TGRT_F32));
}

void checkBias(Contexts& c, Rng& rng, int32_t dt) {
  // 304: packs for every dtype; 300: packs of 4 only (f32); 301: scalar.
  for (int64_t n : {int64_t(304), int64_t(300), int64_t(301)}) checkBiasN(c, rng, dt, n);
  // Row chunks longer than one batch of the packed first stage (167 rows per chunk at 4096
  // columns: 21 rows per thread, a batch of 16 then 5); its own generator, so the later
  // checks see the same data as before this case existed.
  Rng own(0xb1a5);
  checkBiasN(c, own, dt, 4096, 2000);
}

void checkSoftmax(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t rows = 100, n = 1000;
  Vec xs = decode(rng.tensor(dt, (size_t)(rows * n), -5.0f, 5.0f));
  for (int64_t j = 0; j < n; ++j) xs[(size_t)(7 * n + j)] = -INFINITY; // an all-masked row
  for (int64_t j = n / 2; j < n; ++j) xs[(size_t)(9 * n + j)] = -INFINITY;
  Raw x = encode(xs, dt), y = zerosOf(dt, xs.size());
  tgrt_softmax_fwd(c.cpu, "check", dt, x.data(), y.data(), rows, n);
  DevT gx(x), gy(dt, xs.size());
  gy.poison();
  tgrt_cuda::softmaxFwd(c.gpu, "check", dt, gx.p, gy.p, rows, n);
  record(named("softmax_fwd (with -inf rows)", dt), "rows100 n1000", relErr(gy.raw(), y),
         tolFor(dt));
  Raw dy = rng.tensor(dt, xs.size()), dx = zerosOf(dt, xs.size());
  tgrt_softmax_bwd(c.cpu, "check", dt, y.data(), dy.data(), dx.data(), rows, n);
  DevT gyy(y), gdy(dy);
  tgrt_cuda::softmaxBwd(c.gpu, "check", dt, gyy.p, gdy.p, gdy.p, rows, n); // dx aliases dy
  record(named("softmax_bwd (dx aliases dy)", dt), "rows100 n1000", relErr(gdy.raw(), dx),
         tolFor(dt));

  for (int64_t window : {int64_t(0), int64_t(16)}) {
    const int64_t batch = 2, tq = 50, tk = 70;
    Raw s = rng.tensor(dt, (size_t)(batch * tq * tk)), ref = zerosOf(dt, s.n());
    tgrt_causal_mask(c.cpu, "check", dt, s.data(), ref.data(), batch, tq, tk, window, -1e9f);
    DevT gs(s), go(dt, s.n());
    go.poison();
    tgrt_cuda::causalMask(c.gpu, "check", dt, gs.p, go.p, batch, tq, tk, window, -1e9f);
    record(named("causal_mask", dt), fmt("b2 tq50 tk70 window%lld", (long long)window),
           (double)bitDiffs(go.raw(), ref), 0.0);
  }
}

/// Cross entropy over rows x vocab logits; the backward in place, or (shiftOut) into another
/// buffer at an offset of one element (logits and dlogits then at different offsets within
/// 16 bytes: the scalar loops).
void checkCrossEntropyV(Contexts& c, Rng& rng, int32_t dt, int64_t vocab, int64_t rows = 300,
                        bool shiftOut = false) {
  const int64_t ignore = -100;
  Raw logits = rng.tensor(dt, (size_t)(rows * vocab), -8.0f, 8.0f);
  IVec targets((size_t)rows);
  for (auto& t : targets) t = rng.below(vocab);
  for (int64_t r = 0; r < rows; r += 17) targets[(size_t)r] = (int32_t)ignore;
  float lossRef = 0.0f;
  tgrt_cross_entropy_fwd(c.cpu, "check", dt, logits.data(), targets.data(), &lossRef, rows, vocab,
                         ignore);
  DevT gl(logits);
  Dev<float> gloss(1);
  Dev<int32_t> gt(targets);
  gloss.poison();
  tgrt_cuda::crossEntropyFwd(c.gpu, "check", dt, gl.p, gt.p, gloss.p, rows, vocab, ignore);
  record(named("cross_entropy_fwd", dt),
         fmt("rows%lld vocab%lld (some ignored)", (long long)rows, (long long)vocab),
         relErr(gloss.get(), Vec{lossRef}));
  const float dloss = 0.75f;
  Raw dref = zerosOf(dt, logits.n());
  tgrt_cross_entropy_bwd(c.cpu, "check", dt, logits.data(), targets.data(), &dloss, dref.data(),
                         rows, vocab, ignore);
  Dev<float> gdl(Vec{dloss});
  if (shiftOut) {
    DevT gout(dt, logits.n() + 1);
    gout.poison();
    tgrt_cuda::crossEntropyBwd(c.gpu, "check", dt, gl.p, gt.p, gdl.p, gout.at(1), rows, vocab,
                               ignore);
    Raw got = gout.raw();
    got.b.erase(got.b.begin(), got.b.begin() + tgrt_dtype_size(dt));
    record(named("cross_entropy_bwd (out + 1 element)", dt),
           fmt("rows%lld vocab%lld", (long long)rows, (long long)vocab), relErr(got, dref),
           tolFor(dt));
    return;
  }
  tgrt_cuda::crossEntropyBwd(c.gpu, "check", dt, gl.p, gt.p, gdl.p, gl.p, rows, vocab, ignore);
  record(named("cross_entropy_bwd (in place)", dt),
         fmt("rows%lld vocab%lld", (long long)rows, (long long)vocab), relErr(gl.raw(), dref),
         tolFor(dt));
  // tgrt_cross_entropy_fwd_bwd in place (what tgc emits for a training step): one pass that
  // gives the forward's loss and the backward's gradient, bit for bit.
  {
    DevT gl2(logits);
    Dev<float> gloss2(1);
    gloss2.poison();
    tgrt_cuda::crossEntropyFwdBwd(c.gpu, "check", dt, gl2.p, gt.p, gloss2.p, gdl.p, gl2.p, rows,
                                  vocab, ignore);
    const float a = gloss2.get()[0], b = gloss.get()[0];
    record(named("cross_entropy_fwd_bwd loss = fwd's bits", dt),
           fmt("rows%lld vocab%lld", (long long)rows, (long long)vocab),
           std::memcmp(&a, &b, sizeof a) == 0 ? 0.0 : 1.0);
    record(named("cross_entropy_fwd_bwd grad = bwd's bits", dt),
           fmt("rows%lld vocab%lld", (long long)rows, (long long)vocab),
           gl2.raw().b == gl.raw().b ? 0.0 : 1.0);
  }
  // report_loss + take_loss
  tgrt_cuda::takeLoss(c.gpu, nullptr);
  tgrt_cuda::reportLoss(c.gpu, "check", gloss.p);
  tgrt_cuda::reportLoss(c.gpu, "check", gloss.p);
  int64_t count = 0;
  const double sum = tgrt_cuda::takeLoss(c.gpu, &count);
  record(named("report_loss + take_loss", dt), "2 reports",
         count == 2 ? std::fabs(sum - 2.0 * lossRef) / (2.0 * std::fabs(lossRef)) : 1.0);
}

/// tgrt_linear_cross_entropy (the output layer and the loss in chunks of rows) against the
/// CPU's: 300 rows in chunks of 128 (128, 128, 44), every 17th target ignored, dw (f32)
/// added onto a random start. The loss and dx as the GEMM + cross-entropy kernels (dtype
/// tolerance), dw summed over the chunks (f32 tolerance of the largest element).
void checkLinearCrossEntropy(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t rows = 300, d = 64, vocab = 1000, chunk = 128, ignore = -100;
  Raw x = rng.tensor(dt, (size_t)(rows * d), -1.0f, 1.0f),
      w = rng.tensor(dt, (size_t)(vocab * d), -1.0f, 1.0f);
  Raw dw0 = rng.tensor(TGRT_F32, (size_t)(vocab * d));
  IVec targets((size_t)rows);
  for (auto& t : targets) t = rng.below(vocab);
  for (int64_t r = 0; r < rows; r += 17) targets[(size_t)r] = (int32_t)ignore;
  const float dloss = 0.75f;
  const size_t scratchBytes = (size_t)((256 + 8 * rows + 255) / 256 * 256 +
                                       chunk * vocab * tgrt_dtype_size(dt));
  Raw dxRef = zerosOf(dt, (size_t)(rows * d)), dwRef = dw0;
  std::vector<uint8_t> scratch(scratchBytes);
  float lossRef = 0.0f;
  tgrt_linear_cross_entropy(c.cpu, "check", dt, x.data(), w.data(), targets.data(), &dloss,
                            &lossRef, dxRef.data(), TGRT_F32, dwRef.data(), scratch.data(), rows,
                            d, vocab, chunk, ignore);
  DevT gx(x), gw(w), gdw(dw0), gdx(dt, (size_t)(rows * d)), gs(TGRT_F32, scratchBytes / 4);
  Dev<int32_t> gt(targets);
  Dev<float> gdl(Vec{dloss}), gloss(1);
  gdx.poison();
  gs.poison();
  gloss.poison();
  tgrt_cuda::linearCrossEntropy(c.gpu, "check", dt, gx.p, gw.p, gt.p, gdl.p, gloss.p, gdx.p,
                                TGRT_F32, gdw.p, gs.p, rows, d, vocab, chunk, ignore);
  const std::string shape = fmt("rows%lld d%lld vocab%lld chunk%lld", (long long)rows,
                                (long long)d, (long long)vocab, (long long)chunk);
  record(named("linear_cross_entropy loss", dt), shape, relErr(gloss.get(), Vec{lossRef}),
         tolFor(dt));
  record(named("linear_cross_entropy dx", dt), shape, relErr(gdx.raw(), dxRef), 2 * tolFor(dt));
  record(named("linear_cross_entropy dw (+= f32)", dt), shape, relErr(gdw.raw(), dwRef),
         2 * tolFor(dt));
  // Stored (tgrt_linear_cross_entropy_store): dw from a NaN start (the first chunk's GEMM at
  // beta 0 must not read it), against the CPU's zero + sum.
  Raw dwRef2 = zerosOf(TGRT_F32, dw0.n()), dxRef2 = zerosOf(dt, (size_t)(rows * d));
  float lossRef2 = 0.0f;
  tgrt_linear_cross_entropy_store(c.cpu, "check", dt, x.data(), w.data(), targets.data(), &dloss,
                                  &lossRef2, dxRef2.data(), TGRT_F32, dwRef2.data(),
                                  scratch.data(), rows, d, vocab, chunk, ignore);
  DevT gdw2(TGRT_F32, dw0.n());
  gdw2.poison();
  tgrt_cuda::linearCrossEntropyStore(c.gpu, "check", dt, gx.p, gw.p, gt.p, gdl.p, gloss.p, gdx.p,
                                     TGRT_F32, gdw2.p, gs.p, rows, d, vocab, chunk, ignore);
  record(named("linear_cross_entropy_store dw (= f32)", dt), shape, relErr(gdw2.raw(), dwRef2),
         2 * tolFor(dt));
  // The loss only (dx, dw NULL: tgc's evaluation step): the CPU's loss-only call, which is
  // the full call's loss (RuntimeCpuTest).
  float lossRef3 = 0.0f;
  tgrt_linear_cross_entropy(c.cpu, "check", dt, x.data(), w.data(), targets.data(), &dloss,
                            &lossRef3, nullptr, TGRT_F32, nullptr, scratch.data(), rows, d, vocab,
                            chunk, ignore);
  gloss.poison();
  tgrt_cuda::linearCrossEntropy(c.gpu, "check", dt, gx.p, gw.p, gt.p, gdl.p, gloss.p, nullptr,
                                TGRT_F32, nullptr, gs.p, rows, d, vocab, chunk, ignore);
  record(named("linear_cross_entropy loss only", dt), shape, relErr(gloss.get(), Vec{lossRef3}),
         tolFor(dt));
}

void checkCrossEntropy(Contexts& c, Rng& rng, int32_t dt) {
  // 5000: whole packs; 5001: rows at every offset (leading and trailing elements around the
  // packs); an output at another offset than the logits: the scalar loops.
  for (int64_t vocab : {int64_t(5000), int64_t(5001)}) checkCrossEntropyV(c, rng, dt, vocab);
  checkCrossEntropyV(c, rng, dt, 5001, 40, true);
  // The vocabularies of the models: GPT-2's padded one and Llama 3's (rows of 100 and 250 KB
  // of bf16, many passes of the block's threads per row).
  checkCrossEntropyV(c, rng, dt, 50304, 24);
  checkCrossEntropyV(c, rng, dt, 128256, 12);
  if (dt == TGRT_F32) return;
  // The 16-bit kernels' two variants whatever the default picked for these vocabularies
  // (TGRT_CE_FAST=6 and 7; ceAutoVariant) and the expf path (0).
  for (int fast : {6, 7, 0}) {
    const int before = tgrt_cuda::setCeFast(c.gpu, fast);
    for (int64_t vocab : {int64_t(5001), int64_t(50304)})
      checkCrossEntropyV(c, rng, dt, vocab, 40);
    tgrt_cuda::setCeFast(c.gpu, before);
  }
}

/// Sets the loss scale on both backends.
void setLossScale(Contexts& c, float s) {
  tgrt_set_loss_scale(c.cpu, s);
  tgrt_cuda::setLossScale(c.gpu, s);
}

/// grad_norm_sq, clip_scale (loss scale S) and AdamW with p, g: p_dt and m, v: s_dt.
void checkOptimizer(Contexts& c, Rng& rng, int32_t p_dt, int32_t s_dt, float lossScale) {
  const int64_t n = 123457;
  const std::string types =
      p_dt == TGRT_F32 && s_dt == TGRT_F32 ? std::string()
                                           : fmt(" [p %s, m,v %s]", dtName(p_dt), dtName(s_dt));
  const std::string sc = lossScale == 1.0f ? std::string() : fmt(" S=%g", (double)lossScale);
  setLossScale(c, lossScale);
  // Gradients as a loss-scaled backward leaves them.
  Vec gv = rng.vec((size_t)n, -0.1f, 0.1f);
  for (float& x : gv) x *= lossScale;
  Raw g = encode(gv, p_dt);
  Vec acc = {0.5f * lossScale * lossScale, 0.0f};
  tgrt_grad_norm_sq(c.cpu, "check", p_dt, g.data(), n, acc.data());
  DevT gg(g);
  Dev<float> gacc(Vec{0.5f * lossScale * lossScale, 0.0f});
  tgrt_cuda::gradNormSq(c.gpu, "check", p_dt, gg.p, n, gacc.p);
  record(named("grad_norm_sq", p_dt), "n123457" + sc, relErr(gacc.get(), acc));
  const float maxNorm = 1.0f;
  tgrt_clip_scale(c.cpu, "check", acc.data(), maxNorm);
  tgrt_cuda::clipScale(c.gpu, "check", gacc.p, maxNorm);
  Vec gotAcc = gacc.get();
  record("clip_scale" + sc, "max_norm 1", relErr(gotAcc, acc));
  record("last_grad_norm" + sc, "after clip_scale",
         relErr(Vec{tgrt_cuda::lastGradNorm(c.gpu)}, Vec{tgrt_last_grad_norm(c.cpu)}));

  Raw p = rng.tensor(p_dt, (size_t)n), m = rng.tensor(s_dt, (size_t)n, -0.01f, 0.01f),
      v = rng.tensor(s_dt, (size_t)n, 1e-6f, 1e-4f);
  tgrt_set_step(c.cpu, 3);
  tgrt_set_lr(c.cpu, 3e-4f);
  tgrt_cuda::setStep(c.gpu, 3);
  tgrt_cuda::setLr(c.gpu, 3e-4f);
  DevT gp(p), gm(m), gvv(v);
  Raw pr = p, mr = m, vr = v;
  tgrt_adamw(c.cpu, "check", p_dt, pr.data(), g.data(), s_dt, mr.data(), vr.data(), n, 0.9f,
             0.95f, 1e-8f, 0.1f, acc.data());
  tgrt_cuda::adamw(c.gpu, "check", p_dt, gp.p, gg.p, s_dt, gm.p, gvv.p, n, 0.9f, 0.95f, 1e-8f,
                   0.1f, gacc.p);
  record("adamw p" + types, "n123457 step3" + sc, relErr(gp.raw(), pr), tolFor(p_dt));
  record("adamw m,v" + types, "n123457 step3" + sc,
         std::max(relErr(gm.raw(), mr), relErr(gvv.raw(), vr)), tolFor(s_dt));
  // With the working copy (tgrt_adamw_wc, mixed precision's f32 values): p, m, v bit-equal
  // to the plain kernel's, the copy bit-equal to the updated p rounded to bf16.
  if (p_dt == TGRT_F32 && s_dt == TGRT_F32) {
    DevT gp2(p), gm2(m), gv2(v), gw(TGRT_BF16, (size_t)n);
    gw.poison();
    tgrt_cuda::adamw(c.gpu, "check", p_dt, gp2.p, gg.p, s_dt, gm2.p, gv2.p, n, 0.9f, 0.95f, 1e-8f,
                     0.1f, gacc.p, TGRT_BF16, gw.p);
    const size_t diff =
        bitDiffs(gp2.raw(), gp.raw()) + bitDiffs(gm2.raw(), gm.raw()) + bitDiffs(gv2.raw(), gvv.raw());
    record("adamw_wc p,m,v = adamw's" + types, "n123457 step3" + sc, (double)diff, 0.0);
    const Raw want = encode(gp.f(), TGRT_BF16);
    record("adamw_wc copy = bf16(p)" + types, "n123457 step3" + sc,
           (double)bitDiffs(gw.raw(), want), 0.0);
    // The same call in double arithmetic (TGRT_ADAMW_MATH=f64, the CPU reference's; the
    // default is float, PyTorch's fused AdamW's opmath): against the CPU, the copy bf16 of
    // its own p.
    DevT gp5(p), gm5(m), gv5(v), gw5(TGRT_BF16, (size_t)n);
    gw5.poison();
    tgrt_cuda::setAdamwF32(c.gpu, false);
    tgrt_cuda::adamw(c.gpu, "check", p_dt, gp5.p, gg.p, s_dt, gm5.p, gv5.p, n, 0.9f, 0.95f, 1e-8f,
                     0.1f, gacc.p, TGRT_BF16, gw5.p);
    tgrt_cuda::setAdamwF32(c.gpu, true);
    // Exact: the CPU's arithmetic (0 on the H200 and the emulator; a float update differs by
    // about 1e-7, so this row fails when the double path is not the one taken).
    record("adamw_wc f64 math p,m,v" + types, "n123457 step3" + sc,
           std::max({relErr(gp5.raw(), pr), relErr(gm5.raw(), mr), relErr(gv5.raw(), vr)}),
           0.0);
    record("adamw_wc f64 math copy = bf16(p)" + types, "n123457 step3" + sc,
           (double)bitDiffs(gw5.raw(), encode(gp5.f(), TGRT_BF16)), 0.0);
    // Mixed precision's weight gradients in the compute type (tgrt_adamw_wc_g, the plan's
    // grad_dtype): bf16 / f16 g widened exactly, so p, m, v and the copy bit-equal to
    // tgrt_adamw_wc's on those gradients widened to f32 (on the GPU, float and double math),
    // and within f32's tolerance of the CPU's tgrt_adamw_wc_g.
    for (int32_t gdt : {TGRT_BF16, TGRT_F16}) {
      const Raw glow = encode(gg.f(), gdt);
      DevT gl(glow), gwide(encode(decode(glow), TGRT_F32));
      for (bool f32 : {true, false}) {
        DevT pa(p), ma(m), va(v), wa(gdt, (size_t)n), pb(p), mb(m), vb(v), wb(gdt, (size_t)n);
        wa.poison();
        wb.poison();
        tgrt_cuda::setAdamwF32(c.gpu, f32);
        tgrt_cuda::adamwG(c.gpu, "check", p_dt, pa.p, gdt, gl.p, s_dt, ma.p, va.p, n, 0.9f, 0.95f,
                          1e-8f, 0.1f, gacc.p, gdt, wa.p);
        tgrt_cuda::adamw(c.gpu, "check", p_dt, pb.p, gwide.p, s_dt, mb.p, vb.p, n, 0.9f, 0.95f,
                         1e-8f, 0.1f, gacc.p, gdt, wb.p);
        tgrt_cuda::setAdamwF32(c.gpu, true);
        const size_t d = bitDiffs(pa.raw(), pb.raw()) + bitDiffs(ma.raw(), mb.raw()) +
                         bitDiffs(va.raw(), vb.raw()) + bitDiffs(wa.raw(), wb.raw());
        record(fmt("adamw_wc_g %s g = adamw_wc on widened g%s", dtName(gdt),
                   f32 ? "" : " (f64 math)") + types,
               "n123457 step3" + sc, (double)d, 0.0);
      }
      Raw pc = p, mc = m, vc = v, wc = zerosOf(gdt, (size_t)n);
      tgrt_adamw_wc_g(c.cpu, "check", p_dt, pc.data(), gdt, glow.data(), s_dt, mc.data(),
                      vc.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, acc.data(), gdt, wc.data());
      DevT pa(p), ma(m), va(v), wa(gdt, (size_t)n);
      tgrt_cuda::adamwG(c.gpu, "check", p_dt, pa.p, gdt, gl.p, s_dt, ma.p, va.p, n, 0.9f, 0.95f,
                        1e-8f, 0.1f, gacc.p, gdt, wa.p);
      record(fmt("adamw_wc_g %s g p,m,v", dtName(gdt)) + types, "n123457 step3" + sc,
             std::max({relErr(pa.raw(), pc), relErr(ma.raw(), mc), relErr(va.raw(), vc)}),
             tolFor(p_dt));
      // The grid capped at 2 blocks (TGRT_ADAMW_BLOCKS=2): each thread strides over about 30
      // packs, as Llama 3.2 1B's threads stride over 7 at the default 65536; the same bits.
      DevT pk(p), mk(m), vk(v), wk(gdt, (size_t)n);
      wk.poison();
      const int blocks0 = tgrt_cuda::setAdamwBlocks(c.gpu, 2);
      tgrt_cuda::adamwG(c.gpu, "check", p_dt, pk.p, gdt, gl.p, s_dt, mk.p, vk.p, n, 0.9f, 0.95f,
                        1e-8f, 0.1f, gacc.p, gdt, wk.p);
      tgrt_cuda::setAdamwBlocks(c.gpu, blocks0);
      record(fmt("adamw_wc_g %s g, 2 blocks = default grid", dtName(gdt)) + types,
             "n123457 step3" + sc,
             (double)(bitDiffs(pk.raw(), pa.raw()) + bitDiffs(mk.raw(), ma.raw()) +
                      bitDiffs(vk.raw(), va.raw()) + bitDiffs(wk.raw(), wa.raw())),
             0.0);
    }
  }
  // Islands of no weight decay inside the run (tgrt_adamw_islands, tg-bias-rows' biases):
  // against the CPU, and bit for bit against the plain kernel called per stretch (decay 0.1
  // outside the islands, 0 on them). Islands at 64-element boundaries (slot boundaries).
  {
    const int64_t base = 1024, period = 40960, reps = 3, s0 = 0, l0 = 1536, s1 = 22016, l1 = 2048;
    DevT gp3(p), gm3(m), gv3(v), gp4(p), gm4(m), gv4(v);
    Raw pc = p, mc = m, vc = v;
    tgrt_adamw_islands(c.cpu, "check", p_dt, pc.data(), g.data(), s_dt, mc.data(), vc.data(), n,
                       0.9f, 0.95f, 1e-8f, 0.1f, acc.data(), TGRT_BF16, nullptr, base, period,
                       reps, s0, l0, s1, l1);
    tgrt_cuda::adamwIslands(c.gpu, "check", p_dt, gp3.p, gg.p, s_dt, gm3.p, gv3.p, n, 0.9f, 0.95f,
                            1e-8f, 0.1f, gacc.p, TGRT_BF16, nullptr, base, period, reps, s0, l0,
                            s1, l1);
    const size_t ps = (size_t)tgrt_dtype_size(p_dt), ss = (size_t)tgrt_dtype_size(s_dt);
    auto inIsland = [&](int64_t i) {
      if (i < base || i >= base + reps * period) return false;
      const int64_t r = (i - base) % period;
      return (r >= s0 && r < s0 + l0) || (r >= s1 && r < s1 + l1);
    };
    for (int64_t i = 0; i < n;) {
      int64_t j = i + 1;
      while (j < n && inIsland(j) == inIsland(i)) ++j;
      tgrt_cuda::adamw(c.gpu, "check", p_dt, gp4.p + i * ps, gg.p + i * ps, s_dt,
                       gm4.p + i * ss, gv4.p + i * ss,
                       j - i, 0.9f, 0.95f, 1e-8f, inIsland(i) ? 0.0f : 0.1f, gacc.p);
      i = j;
    }
    record("adamw_islands p" + types, "n123457 step3 3 x 2 islands" + sc, relErr(gp3.raw(), pc),
           tolFor(p_dt));
    record("adamw_islands m,v" + types, "n123457 step3 3 x 2 islands" + sc,
           std::max(relErr(gm3.raw(), mc), relErr(gv3.raw(), vc)), tolFor(s_dt));
    const size_t diff = bitDiffs(gp3.raw(), gp4.raw()) + bitDiffs(gm3.raw(), gm4.raw()) +
                        bitDiffs(gv3.raw(), gv4.raw());
    record("adamw_islands = adamw per stretch" + types, "n123457 step3, bitwise" + sc,
           (double)diff, 0.0);
  }
  tgrt_set_step(c.cpu, 1);
  tgrt_cuda::setStep(c.gpu, 1);
  setLossScale(c, 1.0f);
}

/// An overflowed step: an inf gradient makes clip_scale's factor NaN and the norm not finite,
/// and AdamW (reading the factor on the device) leaves p, m, v bit for bit unchanged.
void checkOverflowSkip(Contexts& c, Rng& rng, int32_t p_dt, int32_t s_dt) {
  const int64_t n = 4099;
  setLossScale(c, 65536.0f);
  Vec gv = rng.vec((size_t)n, -0.1f, 0.1f);
  gv[1234] = std::numeric_limits<float>::infinity();
  Raw g = encode(gv, p_dt);
  DevT gg(g);
  Dev<float> gacc(Vec{0.0f, 0.0f});
  tgrt_cuda::gradNormSq(c.gpu, "check", p_dt, gg.p, n, gacc.p);
  tgrt_cuda::clipScale(c.gpu, "check", gacc.p, 1.0f);
  const Vec acc = gacc.get();
  const float norm = tgrt_cuda::lastGradNorm(c.gpu);
  record(named("clip_scale (overflow)", p_dt), "inf gradient -> NaN factor",
         std::isnan(acc[1]) && !std::isfinite(norm) ? 0.0 : 1.0, 0.0);
  Raw p = rng.tensor(p_dt, (size_t)n), m = rng.tensor(s_dt, (size_t)n, -0.01f, 0.01f),
      v = rng.tensor(s_dt, (size_t)n, 1e-6f, 1e-4f);
  DevT gp(p), gm(m), gvv(v);
  tgrt_cuda::setStep(c.gpu, 3);
  tgrt_cuda::adamw(c.gpu, "check", p_dt, gp.p, gg.p, s_dt, gm.p, gvv.p, n, 0.9f, 0.95f, 1e-8f,
                   0.1f, gacc.p);
  const size_t changed = bitDiffs(gp.raw(), p) + bitDiffs(gm.raw(), m) + bitDiffs(gvv.raw(), v);
  record(fmt("adamw skips (p %s, m,v %s)", dtName(p_dt), dtName(s_dt)), "clip[1] NaN: unchanged",
         (double)changed, 0.0);
  tgrt_cuda::setStep(c.gpu, 1);
  setLossScale(c, 1.0f);
}

/// tgrt_fill_loss_scaled: value * S rounded to dt, bit for bit.
void checkFillLossScaled(Contexts& c, int32_t dt) {
  const int64_t n = 1001;
  setLossScale(c, 1024.0f);
  Raw ref = zerosOf(dt, (size_t)n);
  tgrt_fill_loss_scaled(c.cpu, "check", dt, ref.data(), n, 1.0f / 3.0f);
  DevT go(dt, (size_t)n);
  go.poison();
  tgrt_cuda::fillLossScaled(c.gpu, "check", dt, go.p, n, 1.0f / 3.0f);
  record(named("fill_loss_scaled", dt), "n1001 value 1/3 S=1024", (double)bitDiffs(go.raw(), ref),
         0.0);
  setLossScale(c, 1.0f);
}

/// Fields of two tgrt_stats that differ (count, nan, pos_inf, neg_inf, min, max; NaN == NaN).
int statsDiffs(const tgrt_stats& a, const tgrt_stats& b) {
  auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  return (a.count != b.count) + (a.nan != b.nan) + (a.pos_inf != b.pos_inf) +
         (a.neg_inf != b.neg_inf) + !same(a.min, b.min) + !same(a.max, b.max);
}

/// tensor_stats (the --find-nonfinite reduction) against the CPU reference, every element type
/// (f32, bf16, f16; int32 ids up to +-2^30, no specials): contiguous with NaN / +inf / -inf
/// planted (more elements than one grid pass), strided rows whose gaps hold NaN and inf that
/// must not be counted, all NaN (min and max NaN), all finite, and empty. PASS when every field
/// is equal (error = fields that differ).
void checkTensorStats(Contexts& c, Rng& rng) {
  const float inf = std::numeric_limits<float>::infinity(), qnan = std::nanf("");
  struct Case {
    const char* name;
    int64_t rows, cols, ld;
    int specials; ///< 0 none, 1 planted, 2 all NaN
  };
  const Case cases[] = {{"n100003 planted", 1, 100003, 100003, 1},
                        {"37x1000 ld1037 gaps poisoned", 37, 1000, 1037, 1},
                        {"n4099 all NaN", 1, 4099, 4099, 2},
                        {"n5000 finite", 1, 5000, 5000, 0},
                        {"empty 0x16", 0, 16, 16, 0}};
  for (int32_t dt : {(int32_t)TGRT_F32, (int32_t)TGRT_BF16, (int32_t)TGRT_F16,
                     (int32_t)TGRT_CHECK_I32}) {
    for (const Case& k : cases) {
      if (dt == TGRT_CHECK_I32 && k.specials == 2) continue; // ints have no NaN
      const size_t n = (size_t)std::max<int64_t>(1, k.rows > 0 ? (k.rows - 1) * k.ld + k.cols : 1);
      Bytes host;
      if (dt == TGRT_CHECK_I32) {
        IVec v(n);
        for (auto& x : v) x = (int32_t)(rng.gen() >> 33) - (1 << 30); // +-2^30: not float-exact
        host.resize(n * 4);
        std::memcpy(host.data(), v.data(), n * 4);
      } else {
        Vec v = rng.vec(n, -3.0f, 3.0f);
        if (k.specials == 2)
          for (auto& x : v) x = qnan;
        if (k.specials == 1) {
          for (size_t i = 7; i < n; i += 997) v[i] = qnan;
          for (size_t i = 11; i < n; i += 1499) v[i] = inf;
          for (size_t i = 13; i < n; i += 2003) v[i] = -inf;
          v[n - 1] = 65000.0f; // the largest value sits at the very end
        }
        if (k.ld > k.cols) // the gaps between rows: never counted
          for (int64_t r = 0; r + 1 < k.rows; ++r)
            for (int64_t j = k.cols; j < k.ld; ++j) v[(size_t)(r * k.ld + j)] = j % 2 ? qnan : inf;
        host = encode(v, dt).b;
      }
      tgrt_stats ref, got;
      tgrt_tensor_stats(c.cpu, "check", dt, host.data(), k.rows, k.cols, k.ld, &ref);
      Dev<uint8_t> dev(host);
      tgrt_cuda::tensorStats(c.gpu, "check", dt, dev.p, k.rows, k.cols, k.ld, &got);
      const char* dn = dt == TGRT_CHECK_I32 ? "i32" : dtName(dt);
      record(std::string("tensor_stats [") + dn + "]",
             dt == TGRT_CHECK_I32 ? fmt("%lldx%lld ld%lld", (long long)k.rows, (long long)k.cols,
                                        (long long)k.ld)
                                  : std::string(k.name),
             (double)statsDiffs(got, ref), 0.0);
    }
  }
}

void checkOptimizers(Contexts& c, Rng& rng) {
  checkOptimizer(c, rng, TGRT_F32, TGRT_F32, 1.0f);
  checkOptimizer(c, rng, TGRT_F32, TGRT_F32, 1024.0f);
  checkOptimizer(c, rng, TGRT_BF16, TGRT_BF16, 1.0f);
  checkOptimizer(c, rng, TGRT_F16, TGRT_F32, 4096.0f);
  checkOptimizer(c, rng, TGRT_F32, TGRT_BF16, 1.0f);
  checkOptimizer(c, rng, TGRT_F16, TGRT_F16, 1.0f);
  checkOverflowSkip(c, rng, TGRT_F32, TGRT_F32);
  checkOverflowSkip(c, rng, TGRT_F16, TGRT_F32);
  checkOverflowSkip(c, rng, TGRT_BF16, TGRT_BF16);
  for (int32_t dt : kDtypes) checkFillLossScaled(c, dt);
}

// ------------------------------------------------------------------- attention --
/// The batch, heads, t, hd and stride arguments of the attention entry points for bh
/// contiguous [t, hd] problems (batch 1, heads bh; in and out strides both contiguous).
#define ATTN_CONTIG(bh, t, hd)                                                                     \
  1, (bh), (t), (hd), (bh) * (t) * (hd), (t) * (hd), (hd), (bh) * (t) * (hd), (t) * (hd), (hd)
/// Naive attention on the GPU from the runtime's own kernels (the unfused path):
/// S = scale Q K^T; mask; P = softmax(S); out = P V. Backward: dP = dO V^T; dV = P^T dO;
/// dS = softmax_bwd(P, dP); dQ = scale dS K; dK = scale dS^T Q.
struct Naive {
  tgrt_cuda::Context* ctx;
  int64_t bh, t, hd;
  int causal;
  int64_t window;
  float scale;
  void fwd(const float* q, const float* k, const float* v, float* s, float* p, float* out) {
    const int64_t th = t * hd, tt = t * t;
    tgrt_cuda::matmul(ctx, "naive", TGRT_F32, q, k, s, bh, t, t, hd, 0, 1, th, th, tt, scale, 0.0f);
    if (causal) tgrt_cuda::causalMask(ctx, "naive", TGRT_F32, s, s, bh, t, t, window, -INFINITY);
    tgrt_cuda::softmaxFwd(ctx, "naive", TGRT_F32, s, p, bh * t, t);
    tgrt_cuda::matmul(ctx, "naive", TGRT_F32, p, v, out, bh, t, hd, t, 0, 0, tt, th, th, 1.0f, 0.0f);
  }
  void bwd(const float* q, const float* k, const float* v, const float* p, const float* dout,
           float* dp, float* dq, float* dk, float* dv) {
    const int64_t th = t * hd, tt = t * t;
    tgrt_cuda::matmul(ctx, "naive", TGRT_F32, dout, v, dp, bh, t, t, hd, 0, 1, th, th, tt, 1.0f, 0.0f);
    tgrt_cuda::matmul(ctx, "naive", TGRT_F32, p, dout, dv, bh, t, hd, t, 1, 0, tt, th, th, 1.0f, 0.0f);
    tgrt_cuda::softmaxBwd(ctx, "naive", TGRT_F32, p, dp, dp, bh * t, t);
    tgrt_cuda::matmul(ctx, "naive", TGRT_F32, dp, k, dq, bh, t, hd, t, 0, 0, tt, th, th, scale, 0.0f);
    tgrt_cuda::matmul(ctx, "naive", TGRT_F32, dp, q, dk, bh, t, hd, t, 1, 0, tt, th, th, scale, 0.0f);
  }
};

void writeRaw(const std::string& path, const Vec& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) die("cannot write", path.c_str());
  std::fwrite(v.data(), sizeof(float), v.size(), f);
  std::fclose(f);
}

/// One causal fp32 attention case: random inputs, the CPU reference forward and backward,
/// and the device copies of the inputs with poisoned (NaN) outputs for a kernel to fill.
struct AttentionCase {
  int64_t bh, t, hd, window;
  int causal = 1;
  float scale;
  size_t n;
  Vec q, k, v, dout, out, lse, dq, dk, dv; // inputs and the CPU reference
  Dev<float> gq, gk, gv, gdo, go, gl, gdq, gdk, gdv;

  AttentionCase(Contexts& c, Rng& rng, int64_t bh_, int64_t t_, int64_t hd_, int64_t window_)
      : bh(bh_), t(t_), hd(hd_), window(window_), scale(1.0f / std::sqrt((float)hd_)),
        n((size_t)(bh_ * t_ * hd_)), q(rng.normals(n)), k(rng.normals(n)), v(rng.normals(n)),
        dout(rng.normals(n)), out(n), lse((size_t)(bh * t)), dq(n), dk(n), dv(n), gq(q), gk(k),
        gv(v), gdo(dout), go(n), gl((size_t)(bh * t)), gdq(n), gdk(n), gdv(n) {
    tgrt_attention_fwd(c.cpu, "check", TGRT_F32, q.data(), k.data(), v.data(), out.data(),
                       lse.data(), ATTN_CONTIG(bh, t, hd), causal, window, scale);
    tgrt_attention_bwd(c.cpu, "check", TGRT_F32, q.data(), k.data(), v.data(), out.data(),
                       lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                       ATTN_CONTIG(bh, t, hd), causal, window, scale);
    for (Dev<float>* d : {&go, &gl, &gdq, &gdk, &gdv}) d->poison();
  }
  std::string shape() const {
    return fmt("bh%lld t%lld hd%lld window%lld", (long long)bh, (long long)t, (long long)hd,
               (long long)window);
  }
};

void checkAttention(Contexts& c, Rng& rng, int64_t t, int64_t hd, int64_t window, int64_t bh,
                    const std::string& dumpDir) {
  AttentionCase a(c, rng, bh, t, hd, window);
  const int causal = a.causal;
  const float scale = a.scale;
  const size_t n = a.n;
  tgrt_cuda::attentionFwd(c.gpu, "check", TGRT_F32, a.gq.p, a.gk.p, a.gv.p, a.go.p, a.gl.p,
                          ATTN_CONTIG(bh, t, hd), causal, window, scale);
  tgrt_cuda::attentionBwd(c.gpu, "check", TGRT_F32, a.gq.p, a.gk.p, a.gv.p, a.go.p, a.gl.p, a.gdo.p,
                          a.gdq.p, a.gdk.p, a.gdv.p, ATTN_CONTIG(bh, t, hd), causal, window, scale);
  const Vec fo = a.go.get(), fl = a.gl.get(), fdq = a.gdq.get(), fdk = a.gdk.get(),
            fdv = a.gdv.get();
  const std::string shape = a.shape();
  record("attention_fwd flash vs cpu", shape, std::max(relErr(fo, a.out), relErr(fl, a.lse)));
  record("attention_bwd flash vs cpu", shape,
         jointErr({{&fdq, &a.dq}, {&fdk, &a.dk}, {&fdv, &a.dv}}));

  Naive naive{c.gpu, bh, t, hd, causal, window, scale};
  Dev<float> s((size_t)(bh * t * t)), p((size_t)(bh * t * t)), no(n), ndq(n), ndk(n), ndv(n);
  naive.fwd(a.gq.p, a.gk.p, a.gv.p, s.p, p.p, no.p);
  naive.bwd(a.gq.p, a.gk.p, a.gv.p, p.p, a.gdo.p, s.p, ndq.p, ndk.p, ndv.p);
  record("attention_fwd flash vs naive gpu", shape, relErr(fo, no.get()));
  const Vec nq = ndq.get(), nk = ndk.get(), nv = ndv.get();
  record("attention_bwd flash vs naive gpu", shape,
         jointErr({{&fdq, &nq}, {&fdk, &nk}, {&fdv, &nv}}));

  if (!dumpDir.empty()) {
    const std::string name = fmt("attn_bh%lld_t%lld_hd%lld_w%lld", (long long)bh, (long long)t,
                                 (long long)hd, (long long)window);
    const char* parts[] = {"q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"};
    const Vec* data[] = {&a.q, &a.k, &a.v, &fo, &fl, &a.dout, &fdq, &fdk, &fdv};
    for (int i = 0; i < 9; ++i) writeRaw(dumpDir + "/" + name + "_" + parts[i] + ".bin", *data[i]);
    const std::string manifest = dumpDir + "/manifest.txt";
    FILE* f = std::fopen(manifest.c_str(), "a");
    if (!f) die("cannot write", manifest.c_str());
    std::fprintf(f, "%s %lld %lld %lld %d %lld %.9g\n", name.c_str(), (long long)bh, (long long)t,
                 (long long)hd, causal, (long long)window, (double)scale);
    std::fclose(f);
  }
}

constexpr double kTolBf16Attn = 1e-2; // out, dq, dk, dv (bf16 operands of every product)
constexpr double kTolF16Attn = 2e-3;  // the same with f16 operands (3 more mantissa bits)
constexpr double kTolLpLse = 1e-3;    // lse (fp32 softmax statistics)

/// bf16 / f16 flash attention (tensor cores) vs the CPU reference (fp32 on the widened inputs,
/// outputs rounded to dt). Each side runs its backward on its own forward's out and lse.
void checkAttentionLp(Contexts& c, Rng& rng, int32_t dt, int64_t t, int64_t hd, int64_t window,
                      int64_t bh) {
  const int causal = 1;
  const float scale = 1.0f / std::sqrt((float)hd);
  const size_t n = (size_t)(bh * t * hd);
  const Raw q = encode(rng.normals(n), dt), k = encode(rng.normals(n), dt),
            v = encode(rng.normals(n), dt), dout = encode(rng.normals(n), dt);
  Raw out = zerosOf(dt, n), dq = zerosOf(dt, n), dk = zerosOf(dt, n), dv = zerosOf(dt, n);
  Vec lse((size_t)(bh * t));
  tgrt_attention_fwd(c.cpu, "check", dt, q.data(), k.data(), v.data(), out.data(), lse.data(),
                     ATTN_CONTIG(bh, t, hd), causal, window, scale);
  tgrt_attention_bwd(c.cpu, "check", dt, q.data(), k.data(), v.data(), out.data(), lse.data(),
                     dout.data(), dq.data(), dk.data(), dv.data(), ATTN_CONTIG(bh, t, hd), causal,
                     window, scale);
  DevT gq(q), gk(k), gv(v), gdo(dout), go(dt, n), gdq(dt, n), gdk(dt, n), gdv(dt, n);
  Dev<float> gl((size_t)(bh * t));
  // Forward and backward on the GPU into poisoned outputs, with the context's current
  // kernel family (attentionForm).
  auto runGpu = [&] {
    go.poison();
    gl.poison();
    gdq.poison();
    gdk.poison();
    gdv.poison();
    tgrt_cuda::attentionFwd(c.gpu, "check", dt, gq.p, gk.p, gv.p, go.p, gl.p,
                            ATTN_CONTIG(bh, t, hd), causal, window, scale);
    tgrt_cuda::attentionBwd(c.gpu, "check", dt, gq.p, gk.p, gv.p, go.p, gl.p, gdo.p, gdq.p,
                            gdk.p, gdv.p, ATTN_CONTIG(bh, t, hd), causal, window, scale);
  };
  runGpu();
  const Vec fo = go.f(), fl = gl.get(), fdq = gdq.f(), fdk = gdk.f(), fdv = gdv.f();
  const Vec ro = decode(out), rdq = decode(dq), rdk = decode(dk), rdv = decode(dv);
  const std::string shape = fmt("bh%lld t%lld hd%lld window%lld", (long long)bh, (long long)t,
                                (long long)hd, (long long)window);
  const double tol = dt == TGRT_BF16 ? kTolBf16Attn : kTolF16Attn;
  record(fmt("attention_fwd_%s out vs cpu", dtName(dt)), shape, relErr(fo, ro), tol);
  record(fmt("attention_fwd_%s lse vs cpu", dtName(dt)), shape, relErr(fl, lse), kTolLpLse);
  record(fmt("attention_bwd_%s vs cpu", dtName(dt)), shape,
         jointErr({{&fdq, &rdq}, {&fdk, &rdk}, {&fdv, &rdv}}), tol);
  // The mma.sync kernels too where the default above is the wgmma ones (head dim 64 on
  // Hopper; elsewhere this runs the same kernels again).
  const tgrt_cuda::AttentionForm form0 = tgrt_cuda::attentionForm(c.gpu);
  tgrt_cuda::setAttentionForm(c.gpu, {false});
  runGpu();
  tgrt_cuda::setAttentionForm(c.gpu, form0);
  const Vec eo = go.f(), edq = gdq.f(), edk = gdk.f(), edv = gdv.f();
  record(fmt("attention_fwd_%s mma.sync out vs cpu", dtName(dt)), shape, relErr(eo, ro), tol);
  record(fmt("attention_bwd_%s mma.sync vs cpu", dtName(dt)), shape,
         jointErr({{&edq, &rdq}, {&edk, &rdk}, {&edv, &rdv}}), tol);
}

constexpr double kTolTf32 = 2e-3;    // out, dq, dk, dv (TF32 operands of every product)
constexpr double kTolTf32Lse = 1e-4; // lse (fp32 softmax statistics of TF32 scores)

/// TF32 flash attention (tensor cores; what attentionFwd / attentionBwd run with TGRT_TF32=1,
/// called here directly so the check does not depend on the environment) vs the fp32 CPU
/// reference. Each side runs its backward on its own forward's out and lse.
void checkAttentionTf32(Contexts& c, Rng& rng, int64_t t, int64_t hd, int64_t window,
                        int64_t bh) {
  AttentionCase a(c, rng, bh, t, hd, window);
  tgrt_cuda::attentionFwdTf32(c.gpu, "check", a.gq.p, a.gk.p, a.gv.p, a.go.p, a.gl.p,
                              ATTN_CONTIG(bh, t, hd), a.causal, window, a.scale);
  tgrt_cuda::attentionBwdTf32(c.gpu, "check", a.gq.p, a.gk.p, a.gv.p, a.go.p, a.gl.p, a.gdo.p,
                              a.gdq.p, a.gdk.p, a.gdv.p, ATTN_CONTIG(bh, t, hd), a.causal, window,
                              a.scale);
  const Vec fo = a.go.get(), fl = a.gl.get(), fdq = a.gdq.get(), fdk = a.gdk.get(),
            fdv = a.gdv.get();
  const std::string shape = a.shape();
  record("attention_fwd_tf32 out vs cpu", shape, relErr(fo, a.out), kTolTf32);
  record("attention_fwd_tf32 lse vs cpu", shape, relErr(fl, a.lse), kTolTf32Lse);
  record("attention_bwd_tf32 vs cpu", shape,
         jointErr({{&fdq, &a.dq}, {&fdk, &a.dk}, {&fdv, &a.dv}}), kTolTf32);
}

/// Flash attention on strided views (what the compiler emits): q, k, v views into one packed
/// projection output [B, t, 3, H, hd], out / dout [B, t, H, hd], dq, dk, dv written into one
/// packed gradient buffer; `pad` extra elements after each row (0: the exact packed layout).
/// dt f32 with tf32 runs attentionFwdTf32 / attentionBwdTf32 directly. Compared against the
/// CPU reference on the same layout; every output element must be written (the device
/// buffers start as NaN bytes) and the padding must keep its NaN bytes.
void checkAttentionPacked(Contexts& c, Rng& rng, int32_t dt, bool tf32, int64_t B, int64_t H,
                          int64_t t, int64_t hd, int causal, int64_t window, int64_t pad) {
  const float scale = 1.0f / std::sqrt((float)hd);
  const int64_t ist = 3 * H * hd + pad, ish = hd, isb = t * ist;
  const int64_t ost = H * hd + pad, osh = hd, osb = t * ost;
  const size_t nIn = (size_t)(B * isb), nOut = (size_t)(B * osb), nL = (size_t)(B * H * t);
  const size_t es = (size_t)tgrt_dtype_size(dt);
  const int64_t kOff = H * hd, vOff = 2 * H * hd;
  Raw qkv = encode(rng.normals(nIn), dt), dout = encode(rng.normals(nOut), dt);
  Raw out = zerosOf(dt, nOut), dqkv = zerosOf(dt, nIn);
  Vec lse(nL);
  auto hp = [&](Raw& r, int64_t off) { return static_cast<void*>(r.b.data() + (size_t)off * es); };
  tgrt_attention_fwd(c.cpu, "check", dt, hp(qkv, 0), hp(qkv, kOff), hp(qkv, vOff), out.data(),
                     lse.data(), B, H, t, hd, isb, ish, ist, osb, osh, ost, causal, window, scale);
  tgrt_attention_bwd(c.cpu, "check", dt, hp(qkv, 0), hp(qkv, kOff), hp(qkv, vOff), out.data(),
                     lse.data(), dout.data(), hp(dqkv, 0), hp(dqkv, kOff), hp(dqkv, vOff), B, H, t,
                     hd, isb, ish, ist, osb, osh, ost, causal, window, scale);
  DevT gqkv(qkv), gdo(dout), go(dt, nOut), gdqkv(dt, nIn);
  Dev<float> gl(nL);
  go.poison();
  gl.poison();
  gdqkv.poison();
  if (tf32) {
    const float* g = reinterpret_cast<const float*>(gqkv.p);
    float* gd = reinterpret_cast<float*>(gdqkv.p);
    tgrt_cuda::attentionFwdTf32(c.gpu, "check", g, g + kOff, g + vOff,
                                reinterpret_cast<float*>(go.p), gl.p, B, H, t, hd, isb, ish, ist,
                                osb, osh, ost, causal, window, scale);
    tgrt_cuda::attentionBwdTf32(c.gpu, "check", g, g + kOff, g + vOff,
                                reinterpret_cast<const float*>(go.p), gl.p,
                                reinterpret_cast<const float*>(gdo.p), gd, gd + kOff, gd + vOff, B,
                                H, t, hd, isb, ish, ist, osb, osh, ost, causal, window, scale);
  } else {
    tgrt_cuda::attentionFwd(c.gpu, "check", dt, gqkv.at(0), gqkv.at((size_t)kOff),
                            gqkv.at((size_t)vOff), go.p, gl.p, B, H, t, hd, isb, ish, ist, osb, osh,
                            ost, causal, window, scale);
    tgrt_cuda::attentionBwd(c.gpu, "check", dt, gqkv.at(0), gqkv.at((size_t)kOff),
                            gqkv.at((size_t)vOff), go.p, gl.p, gdo.p, gdqkv.at(0),
                            gdqkv.at((size_t)kOff), gdqkv.at((size_t)vOff), B, H, t, hd, isb, ish,
                            ist, osb, osh, ost, causal, window, scale);
  }
  const Raw fo = go.raw(), fdqkv = gdqkv.raw();
  const Vec fl = gl.get();
  // Gather the owned elements (contiguous [B, H, t, hd] order) of both sides.
  const Vec ro = decode(out), rd = decode(dqkv), fov = decode(fo), fdv = decode(fdqkv);
  std::vector<char> inOwned(nIn, 0), outOwned(nOut, 0);
  Vec go1, ro1, gq1, rq1, gk1, rk1, gv1, rv1;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < hd; ++j) {
          const size_t pi = (size_t)(b * isb + h * ish + i * ist + j);
          const size_t po = (size_t)(b * osb + h * osh + i * ost + j);
          go1.push_back(fov[po]);
          ro1.push_back(ro[po]);
          gq1.push_back(fdv[pi]);
          rq1.push_back(rd[pi]);
          gk1.push_back(fdv[pi + (size_t)kOff]);
          rk1.push_back(rd[pi + (size_t)kOff]);
          gv1.push_back(fdv[pi + (size_t)vOff]);
          rv1.push_back(rd[pi + (size_t)vOff]);
          outOwned[po] = inOwned[pi] = inOwned[pi + (size_t)kOff] = inOwned[pi + (size_t)vOff] = 1;
        }
  // The padding: every byte still 0xff (the poison).
  double touched = 0.0;
  for (size_t x = 0; x < nIn; ++x)
    if (!inOwned[x])
      for (size_t e = 0; e < es; ++e)
        touched += fdqkv.b[x * es + e] != 0xff;
  for (size_t x = 0; x < nOut; ++x)
    if (!outOwned[x])
      for (size_t e = 0; e < es; ++e)
        touched += fo.b[x * es + e] != 0xff;

  const std::string kind = tf32 ? std::string("tf32") : std::string(dtName(dt));
  const std::string shape =
      fmt("B%lld H%lld t%lld hd%lld %s w%lld pad%lld", (long long)B, (long long)H, (long long)t,
          (long long)hd, causal ? "causal" : "full", (long long)window, (long long)pad);
  double tol = kTol, tolLse = kTol;
  if (tf32)
    tol = kTolTf32, tolLse = kTolTf32Lse;
  else if (dt == TGRT_BF16)
    tol = kTolBf16Attn, tolLse = kTolLpLse;
  else if (dt == TGRT_F16)
    tol = kTolF16Attn, tolLse = kTolLpLse;
  record(fmt("attn_packed_%s fwd out vs cpu", kind.c_str()), shape, relErr(go1, ro1), tol);
  record(fmt("attn_packed_%s fwd lse vs cpu", kind.c_str()), shape, relErr(fl, lse), tolLse);
  record(fmt("attn_packed_%s bwd vs cpu", kind.c_str()), shape,
         jointErr({{&gq1, &rq1}, {&gk1, &rk1}, {&gv1, &rv1}}), tol);
  record(fmt("attn_packed_%s padding untouched", kind.c_str()), shape, touched, 0.0);
}

// ---------------------------------------------------------------- the Llama family --

/// RMSNorm with x: x_dt, gamma: p_dt, y (dy): y_dt, against the CPU (y, rstd; dx, dgamma; the
/// backward reads the CPU's rstd), and the backward run twice bit for bit (dgamma's column
/// sum has a fixed order).
void checkRmsNorm(Contexts& c, Rng& rng, int32_t x_dt, int32_t p_dt, int32_t y_dt,
                  std::initializer_list<int64_t> ds, int64_t rows = 333) {
  for (int64_t d : ds) {
    const size_t n = (size_t)(rows * d);
    Raw x = rng.tensor(x_dt, n, -2.0f, 3.0f), gamma = rng.tensor(p_dt, (size_t)d, -1.5f, 1.5f),
        dy = rng.tensor(y_dt, n);
    Raw y = zerosOf(y_dt, n);
    Vec rstd((size_t)rows);
    tgrt_rms_norm_fwd(c.cpu, "check", x_dt, x.data(), p_dt, gamma.data(), y_dt, y.data(),
                      rstd.data(), rows, d, 1e-5f);
    DevT gx(x), gg(gamma), gy(y_dt, n);
    Dev<float> gr((size_t)rows);
    gy.poison();
    gr.poison();
    tgrt_cuda::rmsNormFwd(c.gpu, "check", x_dt, gx.p, p_dt, gg.p, y_dt, gy.p, gr.p, rows, d,
                          1e-5f);
    const bool mixed = !(x_dt == p_dt && p_dt == y_dt);
    const std::string types =
        mixed ? fmt(" [x %s, p %s, y %s]", dtName(x_dt), dtName(p_dt), dtName(y_dt))
              : (x_dt == TGRT_F32 ? std::string() : std::string(" [") + dtName(x_dt) + "]");
    const std::string shape = fmt("rows%lld d%lld", (long long)rows, (long long)d);
    record("rms_norm_fwd y" + types, shape, relErr(gy.raw(), y), tolFor(y_dt));
    record("rms_norm_fwd rstd" + types, shape, relErr(gr.get(), rstd));

    Raw dx = zerosOf(x_dt, n), dg = zerosOf(p_dt, (size_t)d);
    tgrt_rms_norm_bwd(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt, gamma.data(),
                      rstd.data(), dx.data(), dg.data(), rows, d);
    DevT gdy(dy), gdx(x_dt, n), gdg(p_dt, (size_t)d);
    Dev<float> grs(rstd);
    auto runBwd = [&] {
      gdx.poison();
      gdg.poison();
      tgrt_cuda::rmsNormBwd(c.gpu, "check", y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p, grs.p, gdx.p,
                            gdg.p, rows, d);
    };
    runBwd();
    const Raw dx1 = gdx.raw(), dg1 = gdg.raw();
    record("rms_norm_bwd dx" + types, shape, relErr(dx1, dx), tolFor(x_dt));
    record("rms_norm_bwd dgamma" + types, shape, relErr(dg1, dg), tolFor(p_dt));
    runBwd();
    record("rms_norm_bwd twice" + types, shape + ", bitwise",
           (double)(bitDiffs(gdx.raw(), dx1) + bitDiffs(gdg.raw(), dg1)), 0.0);
    // The accumulating form (tgrt_rms_norm_bwd_acc): dres += dx and its copy in low's type,
    // against the CPU's rms_norm_bwd + add_mixed, and bit for bit against this backend's
    // rmsNormBwd + addMixed (the sequence the lowering fuses). low: none, dy's type (the
    // register kernel's), another type (the scalar kernel: its sums run in another order than
    // the register kernel's, so that one is checked against the CPU only).
    const int32_t other = y_dt == TGRT_BF16 ? TGRT_F16 : TGRT_BF16;
    for (int32_t ldt : {-1, y_dt, other}) {
      const bool withLow = ldt >= 0, bitwise = ldt != other;
      if (!withLow) ldt = TGRT_F32;
      Raw dres = rng.tensor(x_dt, n), low = zerosOf(ldt, n), dgA = zerosOf(p_dt, (size_t)d);
      Raw resRef = dres;
      tgrt_rms_norm_bwd_acc(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt, gamma.data(),
                            rstd.data(), resRef.data(), ldt, withLow ? low.data() : nullptr,
                            dgA.data(), rows, d);
      DevT gres(dres), glow(ldt, n), gdgA(p_dt, (size_t)d);
      glow.poison();
      gdgA.poison();
      tgrt_cuda::rmsNormBwdAcc(c.gpu, "check", y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p, grs.p, gres.p,
                               ldt, withLow ? glow.p : nullptr, gdgA.p, rows, d);
      const std::string what =
          withLow ? fmt("rms_norm_bwd_acc dres,low %s", dtName(ldt)) : "rms_norm_bwd_acc dres";
      double err = relErr(gres.raw(), resRef);
      if (withLow) err = std::max(err, relErr(glow.raw(), low));
      record(what + types, shape, err, withLow ? std::max(tolFor(x_dt), tolFor(ldt)) : tolFor(x_dt));
      record("rms_norm_bwd_acc dgamma" + types, shape, relErr(gdgA.raw(), dg), tolFor(p_dt));
      if (!bitwise) continue;
      DevT gres2(dres), glow2(ldt, n);
      glow2.poison();
      tgrt_cuda::addMixed(c.gpu, "check", x_dt, gres2.p, x_dt, gdx.p, gres2.p, ldt,
                          withLow ? glow2.p : nullptr, (int64_t)n);
      size_t diffs = bitDiffs(gres.raw(), gres2.raw()) + bitDiffs(gdgA.raw(), dg1);
      if (withLow) diffs += bitDiffs(glow.raw(), glow2.raw());
      record("rms_norm_bwd_acc == rms_norm_bwd+add_mixed" + types,
             shape + (withLow ? fmt(", low %s", dtName(ldt)) : std::string()) + ", bitwise",
             (double)diffs, 0.0);
    }
    // low in dy's own buffer (where the planner usually puts it): against the CPU and bit
    // for bit against the call with separate buffers (the register kernel and, for d not a
    // multiple of the pack width, the scalar one, whose dgamma partials read dy first).
    {
      Raw dres = rng.tensor(x_dt, n), low = zerosOf(y_dt, n), dgA = zerosOf(p_dt, (size_t)d);
      Raw resRef = dres;
      tgrt_rms_norm_bwd_acc(c.cpu, "check", y_dt, dy.data(), x_dt, x.data(), p_dt, gamma.data(),
                            rstd.data(), resRef.data(), y_dt, low.data(), dgA.data(), rows, d);
      DevT gres(dres), galias(dy), gdgA(p_dt, (size_t)d);
      gdgA.poison();
      tgrt_cuda::rmsNormBwdAcc(c.gpu, "check", y_dt, galias.p, x_dt, gx.p, p_dt, gg.p, grs.p,
                               gres.p, y_dt, galias.p, gdgA.p, rows, d);
      record("rms_norm_bwd_acc low = dy's buffer: dres,low" + types, shape,
             std::max(relErr(gres.raw(), resRef), relErr(galias.raw(), low)),
             std::max(tolFor(x_dt), tolFor(y_dt)));
      record("rms_norm_bwd_acc low = dy's buffer: dgamma" + types, shape,
             relErr(gdgA.raw(), dg), tolFor(p_dt));
      DevT gres2(dres), glow2(y_dt, n), gdg2(p_dt, (size_t)d);
      glow2.poison();
      gdg2.poison();
      tgrt_cuda::rmsNormBwdAcc(c.gpu, "check", y_dt, gdy.p, x_dt, gx.p, p_dt, gg.p, grs.p,
                               gres2.p, y_dt, glow2.p, gdg2.p, rows, d);
      record("rms_norm_bwd_acc low = dy's buffer == separate buffers" + types,
             shape + ", bitwise",
             (double)(bitDiffs(gres.raw(), gres2.raw()) + bitDiffs(galias.raw(), glow2.raw()) +
                      bitDiffs(gdgA.raw(), gdg2.raw())),
             0.0);
    }
  }
}

void checkRmsNorms(Contexts& c, Rng& rng) {
  // f32 (packs of 4): a warp per row up to d 1024 (768, 100), a block per row up to 8192
  // (4096), the scalar kernels beyond and for d % 4 != 0 (1030, 8200).
  checkRmsNorm(c, rng, TGRT_F32, TGRT_F32, TGRT_F32, {768, 100, 1030, 4096, 8200});
  // Packs of 8: a warp up to 1024 (768), a block up to 8192 (2000, 4096); 100, 1030 scalar.
  for (int32_t low : {TGRT_BF16, TGRT_F16}) {
    checkRmsNorm(c, rng, low, low, low, {768, 2000, 100, 1030, 4096});
    checkRmsNorm(c, rng, TGRT_F32, TGRT_F32, low, {768, 136, 100, 4096});
  }
  // Many rows per block (the dgamma partials: 512 blocks); SmolLM2's width 576 (a warp per
  // row, 4.5 packs of 4 per lane).
  checkRmsNorm(c, rng, TGRT_F32, TGRT_F32, TGRT_BF16, {768, 576}, 4099);
  checkRmsNorm(c, rng, TGRT_F32, TGRT_F32, TGRT_BF16, {4096}, 1037);
  // A combination without typed kernels: the scalar ones.
  checkRmsNorm(c, rng, TGRT_BF16, TGRT_F32, TGRT_F16, {768, 100});
}

/// RoPE on a packed projection [B, t, H + 2 Hkv, hd] against the CPU: out of place (y
/// poisoned: every element written, the v heads copied) or in place (y = x).
void checkRope(Contexts& c, Rng& rng, int32_t dt, int64_t B, int64_t t, int64_t H, int64_t Hkv,
               int64_t hd, float theta, const float* scaling, int32_t sign, bool inPlace) {
  const size_t n = (size_t)(B * t * (H + 2 * Hkv) * hd);
  const Raw x = rng.tensor(dt, n, -2.0f, 2.0f);
  Raw ref = inPlace ? x : zerosOf(dt, n);
  tgrt_rope(c.cpu, "check", dt, inPlace ? ref.data() : x.data(), ref.data(), B, t, H, Hkv, hd,
            theta, scaling, sign);
  DevT gx(x), gy(dt, inPlace ? 1 : n);
  if (!inPlace) gy.poison();
  tgrt_cuda::rope(c.gpu, "check", dt, gx.p, inPlace ? gx.p : gy.p, B, t, H, Hkv, hd, theta,
                  scaling, sign);
  const Raw got = inPlace ? gx.raw() : gy.raw();
  const std::string shape =
      fmt("B%lld t%lld H%lld/%lld hd%lld th%g%s s%+d%s", (long long)B, (long long)t,
          (long long)H, (long long)Hkv, (long long)hd, (double)theta,
          scaling ? fmt(" x%g", (double)scaling[0]).c_str() : "", (int)sign,
          inPlace ? " in place" : "");
  record(named("rope", dt), shape, relErr(got, ref), tolFor(dt));
  if (dt == TGRT_F32 && !inPlace && sign == 1) {
    // The backward (sign -1) rotates back: x again up to float rounding.
    tgrt_cuda::rope(c.gpu, "check", dt, gy.p, gy.p, B, t, H, Hkv, hd, theta, scaling, -1);
    record("rope +1 then -1 == x", shape, relErr(gy.raw(), x));
  }
}

void checkRopes(Contexts& c, Rng& rng, bool quick) {
  const float llama3[4] = {32.0f, 1.0f, 4.0f, 8192.0f}; // factor, low, high, original context
  const int64_t t = quick ? 300 : 2048;
  for (int32_t dt : kDtypes) {
    checkRope(c, rng, dt, 2, t, 4, 2, 64, 10000.0f, nullptr, 1, false);
    checkRope(c, rng, dt, 2, t, 4, 2, 128, 500000.0f, nullptr, 1, false);
    checkRope(c, rng, dt, 2, t, 4, 2, 128, 500000.0f, llama3, 1, false);
    checkRope(c, rng, dt, 2, t, 4, 2, 64, 10000.0f, llama3, 1, true);
    checkRope(c, rng, dt, 2, t, 4, 2, 128, 500000.0f, llama3, -1, true);
    checkRope(c, rng, dt, 1, t, 4, 1, 64, 10000.0f, nullptr, -1, false);
    checkRope(c, rng, dt, 1, t, 3, 3, 128, 10000.0f, llama3, -1, false);
    // Halves that are not whole packs (hd 36, 20): the scalar path; also in place.
    checkRope(c, rng, dt, 2, 50, 3, 1, 36, 10000.0f, nullptr, 1, false);
    checkRope(c, rng, dt, 2, 50, 3, 1, 20, 500000.0f, llama3, -1, true);
  }
}

/// SwiGLU forward and backward against the CPU: f a multiple of the pack width (vector path)
/// or not, and one element off alignment (scalar path).
void checkSwiglu(Contexts& c, Rng& rng, int32_t dt) {
  const int64_t rows = 333;
  for (int64_t f : {int64_t(768), int64_t(100), int64_t(1030), int64_t(13)}) {
    for (bool offset : {false, true}) {
      if (offset && f != 768) continue;
      const size_t o = offset ? 1 : 0;
      const size_t nx = (size_t)(rows * 2 * f), ny = (size_t)(rows * f);
      Raw x = rng.tensor(dt, nx + o, -6.0f, 6.0f), dy = rng.tensor(dt, ny + o);
      Raw y = zerosOf(dt, ny + o), dx = zerosOf(dt, nx + o);
      const size_t es = (size_t)tgrt_dtype_size(dt);
      tgrt_swiglu_fwd(c.cpu, "check", dt, x.b.data() + o * es, y.b.data() + o * es, rows, f);
      tgrt_swiglu_bwd(c.cpu, "check", dt, x.b.data() + o * es, dy.b.data() + o * es,
                      dx.b.data() + o * es, rows, f);
      DevT gx(x), gdy(dy), gy(dt, ny + o), gdx(dt, nx + o);
      gy.poison();
      gdx.poison();
      tgrt_cuda::swigluFwd(c.gpu, "check", dt, gx.at(o), gy.at(o), rows, f);
      tgrt_cuda::swigluBwd(c.gpu, "check", dt, gx.at(o), gdy.at(o), gdx.at(o), rows, f);
      Vec gotY = gy.f(), gotDx = gdx.f(), refY = decode(y), refDx = decode(dx);
      gotY.erase(gotY.begin(), gotY.begin() + (long)o);
      refY.erase(refY.begin(), refY.begin() + (long)o);
      gotDx.erase(gotDx.begin(), gotDx.begin() + (long)o);
      refDx.erase(refDx.begin(), refDx.begin() + (long)o);
      const std::string shape =
          fmt("rows%lld f%lld%s", (long long)rows, (long long)f, offset ? " at +1 element" : "");
      record(named("swiglu_fwd", dt), shape, relErr(gotY, refY), tolFor(dt));
      record(named("swiglu_bwd", dt), shape, relErr(gotDx, refDx), tolFor(dt));
    }
  }
}

/// Grouped-query attention (tgrt_attention_gqa_fwd / _bwd) on the packed projection layout
/// [B, t, H + 2 Hkv, hd] (q heads, then k heads, then v heads; `pad` extra elements after each
/// token's row): q, k, v are views into it with in strides = kv strides, out / dout
/// [B, t, H, hd] (+ pad), and dq, dk, dv written into one packed gradient buffer of the
/// projection's layout. Against the CPU reference (out, lse; dq, dk, dv together); every owned
/// element must be written (NaN-poisoned buffers) and the padding left alone. dt f32 with
/// tf32: the TF32 kernels (attentionGqaFwdTf32). bf16 / f16 at hd 64 also run the mma.sync
/// kernels (the default there is wgmma). With kv_heads == heads the result must equal the
/// plain attention entry points' bit for bit (one implementation); `again`: the backward twice,
/// bit for bit.
void checkAttentionGqa(Contexts& c, Rng& rng, int32_t dt, bool tf32, int64_t B, int64_t H,
                       int64_t Hkv, int64_t t, int64_t hd, int causal, int64_t window,
                       int64_t pad, bool again) {
  const float scale = 1.0f / std::sqrt((float)hd);
  const int64_t nh = H + 2 * Hkv;
  const int64_t ist = nh * hd + pad, ish = hd, isb = t * ist;
  const int64_t ost = H * hd + pad, osh = hd, osb = t * ost;
  const size_t nIn = (size_t)(B * isb), nOut = (size_t)(B * osb), nL = (size_t)(B * H * t);
  const size_t es = (size_t)tgrt_dtype_size(dt);
  const int64_t kOff = H * hd, vOff = (H + Hkv) * hd;
  Raw x = encode(rng.normals(nIn), dt), dout = encode(rng.normals(nOut), dt);
  Raw out = zerosOf(dt, nOut), dx = zerosOf(dt, nIn);
  Vec lse(nL);
  auto hp = [&](Raw& r, int64_t off) { return static_cast<void*>(r.b.data() + (size_t)off * es); };
  tgrt_attention_gqa_fwd(c.cpu, "check", dt, hp(x, 0), hp(x, kOff), hp(x, vOff), out.data(),
                         lse.data(), B, H, Hkv, t, hd, isb, ish, ist, isb, ish, ist, osb, osh,
                         ost, causal, window, scale);
  tgrt_attention_gqa_bwd(c.cpu, "check", dt, hp(x, 0), hp(x, kOff), hp(x, vOff), out.data(),
                         lse.data(), dout.data(), hp(dx, 0), hp(dx, kOff), hp(dx, vOff), B, H,
                         Hkv, t, hd, isb, ish, ist, isb, ish, ist, osb, osh, ost, causal, window,
                         scale);
  DevT gx(x), gdo(dout), go(dt, nOut), gdx(dt, nIn);
  Dev<float> gl(nL);
  // plain: the tgrt_attention_fwd / _bwd entry points (only with Hkv == H).
  auto runGpu = [&](bool plain) {
    go.poison();
    gl.poison();
    gdx.poison();
    if (tf32) {
      const float* g = reinterpret_cast<const float*>(gx.p);
      float* gd = reinterpret_cast<float*>(gdx.p);
      float* o = reinterpret_cast<float*>(go.p);
      const float* d = reinterpret_cast<const float*>(gdo.p);
      if (plain) {
        tgrt_cuda::attentionFwdTf32(c.gpu, "check", g, g + kOff, g + vOff, o, gl.p, B, H, t, hd,
                                    isb, ish, ist, osb, osh, ost, causal, window, scale);
        tgrt_cuda::attentionBwdTf32(c.gpu, "check", g, g + kOff, g + vOff, o, gl.p, d, gd,
                                    gd + kOff, gd + vOff, B, H, t, hd, isb, ish, ist, osb, osh,
                                    ost, causal, window, scale);
      } else {
        tgrt_cuda::attentionGqaFwdTf32(c.gpu, "check", g, g + kOff, g + vOff, o, gl.p, B, H, Hkv,
                                       t, hd, isb, ish, ist, isb, ish, ist, osb, osh, ost, causal,
                                       window, scale);
        tgrt_cuda::attentionGqaBwdTf32(c.gpu, "check", g, g + kOff, g + vOff, o, gl.p, d, gd,
                                       gd + kOff, gd + vOff, B, H, Hkv, t, hd, isb, ish, ist,
                                       isb, ish, ist, osb, osh, ost, causal, window, scale);
      }
    } else if (plain) {
      tgrt_cuda::attentionFwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                              gx.at((size_t)vOff), go.p, gl.p, B, H, t, hd, isb, ish, ist, osb,
                              osh, ost, causal, window, scale);
      tgrt_cuda::attentionBwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                              gx.at((size_t)vOff), go.p, gl.p, gdo.p, gdx.at(0),
                              gdx.at((size_t)kOff), gdx.at((size_t)vOff), B, H, t, hd, isb, ish,
                              ist, osb, osh, ost, causal, window, scale);
    } else {
      tgrt_cuda::attentionGqaFwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                                 gx.at((size_t)vOff), go.p, gl.p, B, H, Hkv, t, hd, isb, ish, ist,
                                 isb, ish, ist, osb, osh, ost, causal, window, scale);
      tgrt_cuda::attentionGqaBwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                                 gx.at((size_t)vOff), go.p, gl.p, gdo.p, gdx.at(0),
                                 gdx.at((size_t)kOff), gdx.at((size_t)vOff), B, H, Hkv, t, hd,
                                 isb, ish, ist, isb, ish, ist, osb, osh, ost, causal, window,
                                 scale);
    }
  };
  const std::string kind = tf32 ? std::string("tf32") : std::string(dtName(dt));
  const std::string shape =
      fmt("B%lld H%lld/%lld t%lld hd%lld %s w%lld pad%lld", (long long)B, (long long)H,
          (long long)Hkv, (long long)t, (long long)hd, causal ? "causal" : "full",
          (long long)window, (long long)pad);
  double tol = kTol, tolLse = kTol;
  if (tf32)
    tol = kTolTf32, tolLse = kTolTf32Lse;
  else if (dt == TGRT_BF16)
    tol = kTolBf16Attn, tolLse = kTolLpLse;
  else if (dt == TGRT_F16)
    tol = kTolF16Attn, tolLse = kTolLpLse;
  const Vec ro = decode(out), rd = decode(dx);
  // Compares the GPU's outputs (as they are now) with the CPU's; `form` names the kernels.
  auto compare = [&](const std::string& form) {
    const Raw fo = go.raw(), fdx = gdx.raw();
    const Vec fl = gl.get(), fov = decode(fo), fdv = decode(fdx);
    std::vector<char> inOwned(nIn, 0), outOwned(nOut, 0);
    Vec go1, ro1, gq1, rq1, gkv1, rkv1;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = 0; j < hd; ++j) {
            const size_t pi = (size_t)(b * isb + h * ish + i * ist + j);
            const size_t po = (size_t)(b * osb + h * osh + i * ost + j);
            go1.push_back(fov[po]);
            ro1.push_back(ro[po]);
            gq1.push_back(fdv[pi]);
            rq1.push_back(rd[pi]);
            outOwned[po] = inOwned[pi] = 1;
          }
        for (int64_t h = 0; h < 2 * Hkv; ++h) // the k heads, then the v heads
          for (int64_t j = 0; j < hd; ++j) {
            const size_t pi = (size_t)(b * isb + kOff + h * ish + i * ist + j);
            gkv1.push_back(fdv[pi]);
            rkv1.push_back(rd[pi]);
            inOwned[pi] = 1;
          }
      }
    double touched = 0.0;
    for (size_t e = 0; e < nIn; ++e)
      if (!inOwned[e])
        for (size_t u = 0; u < es; ++u) touched += fdx.b[e * es + u] != 0xff;
    for (size_t e = 0; e < nOut; ++e)
      if (!outOwned[e])
        for (size_t u = 0; u < es; ++u) touched += fo.b[e * es + u] != 0xff;
    const std::string name = "attn_gqa_" + kind + form;
    record(name + " fwd out vs cpu", shape, relErr(go1, ro1), tol);
    record(name + " fwd lse vs cpu", shape, relErr(fl, lse), tolLse);
    record(name + " bwd vs cpu", shape, jointErr({{&gq1, &rq1}, {&gkv1, &rkv1}}), tol);
    record(name + " padding untouched", shape, touched, 0.0);
  };
  runGpu(false);
  compare("");
  const Raw o1 = go.raw(), dx1 = gdx.raw();
  const Vec l1 = gl.get();
  if (again) {
    runGpu(false);
    record("attn_gqa_" + kind + " twice", shape + ", bitwise",
           (double)(bitDiffs(go.raw(), o1) + bitDiffs(gdx.raw(), dx1) +
                    bitDiffs(encode(gl.get(), TGRT_F32), encode(l1, TGRT_F32))),
           0.0);
  }
  if (Hkv == H) {
    runGpu(true);
    record("attn_gqa_" + kind + " == attention (kv = q heads)", shape + ", bitwise",
           (double)(bitDiffs(go.raw(), o1) + bitDiffs(gdx.raw(), dx1) +
                    bitDiffs(encode(gl.get(), TGRT_F32), encode(l1, TGRT_F32))),
           0.0);
  }
  if (!tf32 && dt != TGRT_F32 && hd == 64) {
    const tgrt_cuda::AttentionForm form0 = tgrt_cuda::attentionForm(c.gpu);
    if (form0.wgmma) {
      tgrt_cuda::setAttentionForm(c.gpu, {false});
      runGpu(false);
      tgrt_cuda::setAttentionForm(c.gpu, form0);
      compare(" mma.sync");
    }
  }
}

void checkAttentionGqas(Contexts& c, Rng& rng, bool quick) {
  const int64_t t = quick ? 100 : 256;
  for (int variant = 0; variant < 4; ++variant) {
    const int32_t dt = variant == 2 ? TGRT_BF16 : variant == 3 ? TGRT_F16 : TGRT_F32;
    const bool tf32 = variant == 1;
    for (int64_t hd : {int64_t(64), int64_t(128)}) {
      // kv_heads 1 (multi-query), 2 (groups of 2), 4 (= heads): causal.
      for (int64_t hkv : {int64_t(1), int64_t(2), int64_t(4)})
        checkAttentionGqa(c, rng, dt, tf32, 1, 4, hkv, t, hd, 1, 0, 0, !quick);
      // Windowed, two sequences, padded rows.
      checkAttentionGqa(c, rng, dt, tf32, 2, 4, 2, t, hd, 1, 24, 8, !quick);
    }
    // Not causal, groups of 3, a short sequence.
    checkAttentionGqa(c, rng, dt, tf32, 1, 6, 2, 77, 64, 0, 0, 0, !quick);
    if (!quick) {
      checkAttentionGqa(c, rng, dt, tf32, 2, 8, 2, 1024, 128, 1, 0, 0, false);
      checkAttentionGqa(c, rng, dt, tf32, 1, 8, 1, 1024, 64, 1, 256, 0, false);
    }
  }
}

/// Everything above for the Llama family (tgrt-cuda-check --llama runs only these).
void checkLlama(Contexts& c, Rng& rng, bool quick) {
  checkRmsNorms(c, rng);
  checkRopes(c, rng, quick);
  for (int32_t dt : kDtypes) checkSwiglu(c, rng, dt);
  checkAttentionGqas(c, rng, quick);
}

#ifdef TGRT_HAVE_CUDNN
// ------------------------------------------------------------- cuDNN attention --

/// cuDNN's fused attention (tgrt_cuda::cudnnAttentionFwd / _Bwd, what TGRT_ATTN=cudnn selects)
/// on the packed projection layout of checkAttentionGqa ([B, t, H + 2 Hkv, hd], Hkv = H: the
/// plain [B, t, 3, H, hd] layout), against the CPU reference with the bf16 / f16 attention
/// tolerances: out, lse, (dq, dk, dv) together; every owned element written, the padding
/// untouched. `required`: cuDNN must take the shape (a refusal fails); otherwise a refusal is
/// only printed (the runtime runs the own kernels there). `extras`: also the dispatch
/// (attentionGqaFwd / attentionFwd with AttentionImpl::Cudnn must equal the direct call bit
/// for bit), the mixed pairs (the own forward's out / lse into cuDNN's backward and cuDNN's
/// into the own backward, both against the CPU), and the deterministic backward (vs the CPU,
/// and twice bit for bit; a refusal is printed). The default backward accumulates dq with
/// atomics: two runs may differ in the last bits (printed, not checked).
void checkAttentionCudnn(Contexts& c, Rng& rng, int32_t dt, int64_t B, int64_t H, int64_t Hkv,
                         int64_t t, int64_t hd, int causal, int64_t window, int64_t pad,
                         bool required, bool extras) {
  const float scale = 1.0f / std::sqrt((float)hd);
  const int64_t nh = H + 2 * Hkv;
  const int64_t ist = nh * hd + pad, ish = hd, isb = t * ist;
  const int64_t ost = H * hd + pad, osh = hd, osb = t * ost;
  const size_t nIn = (size_t)(B * isb), nOut = (size_t)(B * osb), nL = (size_t)(B * H * t);
  const size_t es = (size_t)tgrt_dtype_size(dt);
  const int64_t kOff = H * hd, vOff = (H + Hkv) * hd;
  Raw x = encode(rng.normals(nIn), dt), dout = encode(rng.normals(nOut), dt);
  Raw out = zerosOf(dt, nOut), dx = zerosOf(dt, nIn);
  Vec lse(nL);
  auto hp = [&](Raw& r, int64_t off) { return static_cast<void*>(r.b.data() + (size_t)off * es); };
  tgrt_attention_gqa_fwd(c.cpu, "check", dt, hp(x, 0), hp(x, kOff), hp(x, vOff), out.data(),
                         lse.data(), B, H, Hkv, t, hd, isb, ish, ist, isb, ish, ist, osb, osh,
                         ost, causal, window, scale);
  tgrt_attention_gqa_bwd(c.cpu, "check", dt, hp(x, 0), hp(x, kOff), hp(x, vOff), out.data(),
                         lse.data(), dout.data(), hp(dx, 0), hp(dx, kOff), hp(dx, vOff), B, H,
                         Hkv, t, hd, isb, ish, ist, isb, ish, ist, osb, osh, ost, causal, window,
                         scale);
  DevT gx(x), gdo(dout), go(dt, nOut), gdx(dt, nIn);
  Dev<float> gl(nL);
  const std::string kind = std::string("attn_cudnn_") + dtName(dt);
  const std::string shape =
      fmt("B%lld H%lld/%lld t%lld hd%lld %s w%lld pad%lld", (long long)B, (long long)H,
          (long long)Hkv, (long long)t, (long long)hd, causal ? "causal" : "full",
          (long long)window, (long long)pad);
  const double tol = dt == TGRT_BF16 ? kTolBf16Attn : kTolF16Attn, tolLse = kTolLpLse;
  auto refused = [&](const char* what) {
    if (required) {
      record(kind + " " + what + " refused", shape, std::numeric_limits<double>::infinity(), 0.0);
    } else {
      std::printf("%-34s %-42s %11s  (refused: the own kernels run it)\n",
                  (kind + " " + what).c_str(), shape.c_str(), "-");
      std::fflush(stdout);
    }
  };
  auto fwdCudnn = [&] {
    return tgrt_cuda::cudnnAttentionFwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                                        gx.at((size_t)vOff), go.p, gl.p, B, H, Hkv, t, hd, isb,
                                        ish, ist, isb, ish, ist, osb, osh, ost, causal, window,
                                        scale);
  };
  auto bwdCudnn = [&](bool det) {
    return tgrt_cuda::cudnnAttentionBwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                                        gx.at((size_t)vOff), go.p, gl.p, gdo.p, gdx.at(0),
                                        gdx.at((size_t)kOff), gdx.at((size_t)vOff), B, H, Hkv, t,
                                        hd, isb, ish, ist, isb, ish, ist, osb, osh, ost, causal,
                                        window, scale, det);
  };
  // The runtime's entry points (attentionGqa* for grouped heads, attention* for Hkv == H),
  // with the context's AttentionImpl.
  auto fwdEntry = [&] {
    if (Hkv == H)
      tgrt_cuda::attentionFwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                              gx.at((size_t)vOff), go.p, gl.p, B, H, t, hd, isb, ish, ist, osb,
                              osh, ost, causal, window, scale);
    else
      tgrt_cuda::attentionGqaFwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                                 gx.at((size_t)vOff), go.p, gl.p, B, H, Hkv, t, hd, isb, ish, ist,
                                 isb, ish, ist, osb, osh, ost, causal, window, scale);
  };
  auto bwdEntry = [&] {
    if (Hkv == H)
      tgrt_cuda::attentionBwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                              gx.at((size_t)vOff), go.p, gl.p, gdo.p, gdx.at(0),
                              gdx.at((size_t)kOff), gdx.at((size_t)vOff), B, H, t, hd, isb, ish,
                              ist, osb, osh, ost, causal, window, scale);
    else
      tgrt_cuda::attentionGqaBwd(c.gpu, "check", dt, gx.at(0), gx.at((size_t)kOff),
                                 gx.at((size_t)vOff), go.p, gl.p, gdo.p, gdx.at(0),
                                 gdx.at((size_t)kOff), gdx.at((size_t)vOff), B, H, Hkv, t, hd,
                                 isb, ish, ist, isb, ish, ist, osb, osh, ost, causal, window,
                                 scale);
  };
  const Vec ro = decode(out), rd = decode(dx);
  // Owned elements of the GPU's outputs (as they are now) and the CPU's; `fwd`, `bwd`: which
  // rows to record under `name`.
  auto compare = [&](const std::string& name, bool fwd, bool bwd) {
    const Raw fo = go.raw(), fdx = gdx.raw();
    const Vec fl = gl.get(), fov = decode(fo), fdv = decode(fdx);
    std::vector<char> inOwned(nIn, 0), outOwned(nOut, 0);
    Vec go1, ro1, gq1, rq1, gkv1, rkv1;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = 0; j < hd; ++j) {
            const size_t pi = (size_t)(b * isb + h * ish + i * ist + j);
            const size_t po = (size_t)(b * osb + h * osh + i * ost + j);
            go1.push_back(fov[po]);
            ro1.push_back(ro[po]);
            gq1.push_back(fdv[pi]);
            rq1.push_back(rd[pi]);
            outOwned[po] = inOwned[pi] = 1;
          }
        for (int64_t h = 0; h < 2 * Hkv; ++h) // the k heads, then the v heads
          for (int64_t j = 0; j < hd; ++j) {
            const size_t pi = (size_t)(b * isb + kOff + h * ish + i * ist + j);
            gkv1.push_back(fdv[pi]);
            rkv1.push_back(rd[pi]);
            inOwned[pi] = 1;
          }
      }
    double touched = 0.0;
    if (bwd)
      for (size_t e = 0; e < nIn; ++e)
        if (!inOwned[e])
          for (size_t u = 0; u < es; ++u) touched += fdx.b[e * es + u] != 0xff;
    if (fwd)
      for (size_t e = 0; e < nOut; ++e)
        if (!outOwned[e])
          for (size_t u = 0; u < es; ++u) touched += fo.b[e * es + u] != 0xff;
    if (fwd) {
      record(name + " fwd out vs cpu", shape, relErr(go1, ro1), tol);
      record(name + " fwd lse vs cpu", shape, relErr(fl, lse), tolLse);
    }
    if (bwd) record(name + " bwd vs cpu", shape, jointErr({{&gq1, &rq1}, {&gkv1, &rkv1}}), tol);
    if (fwd && bwd) record(name + " padding untouched", shape, touched, 0.0);
  };
  auto poisonAll = [&] {
    go.poison();
    gl.poison();
    gdx.poison();
  };

  poisonAll();
  if (!fwdCudnn()) {
    refused("fwd");
    return;
  }
  if (!bwdCudnn(false)) {
    refused("bwd");
    return;
  }
  compare(kind, true, true);
  if (!extras) return;
  const Raw o1 = go.raw(), dx1 = gdx.raw();
  const Vec l1 = gl.get();
  // The default backward again: atomics may change the last bits of dq (printed only).
  gdx.poison();
  if (bwdCudnn(false))
    std::printf("%-34s %-42s %11zu  (elements differing; not checked)\n",
                (kind + " bwd twice").c_str(), shape.c_str(), bitDiffs(gdx.raw(), dx1));
  // Dispatch: the entry points with AttentionImpl::Cudnn run the same graph.
  const tgrt_cuda::AttentionImpl impl0 = tgrt_cuda::attentionImpl(c.gpu);
  tgrt_cuda::setAttentionImpl(c.gpu, tgrt_cuda::AttentionImpl::Cudnn);
  poisonAll();
  fwdEntry();
  record(kind + " entry == direct (fwd)", shape + ", bitwise",
         (double)(bitDiffs(go.raw(), o1) +
                  bitDiffs(encode(gl.get(), TGRT_F32), encode(l1, TGRT_F32))),
         0.0);
  bwdEntry();
  compare(kind + " entry", false, true);
  // The own forward's out / lse into cuDNN's backward.
  tgrt_cuda::setAttentionImpl(c.gpu, tgrt_cuda::AttentionImpl::Own);
  poisonAll();
  fwdEntry();
  if (bwdCudnn(false))
    compare(kind + " own fwd>cudnn bwd", false, true);
  else
    refused("own fwd>cudnn bwd");
  // cuDNN's forward into the own backward.
  poisonAll();
  if (fwdCudnn()) {
    bwdEntry();
    compare(kind + " cudnn fwd>own bwd", false, true);
  }
  // The deterministic backward (on cuDNN's forward).
  poisonAll();
  if (fwdCudnn() && bwdCudnn(true)) {
    compare(kind + " det", false, true);
    const Raw d1 = gdx.raw();
    gdx.poison();
    if (bwdCudnn(true))
      record(kind + " det bwd twice", shape + ", bitwise", (double)bitDiffs(gdx.raw(), d1), 0.0);
  } else {
    std::printf("%-34s %-42s %11s  (deterministic backward refused)\n", (kind + " det").c_str(),
                shape.c_str(), "-");
  }
  tgrt_cuda::setAttentionImpl(c.gpu, impl0);
}

/// The cuDNN attention checks: MHA and GQA / MQA on the packed layout, causal, hd 64 and
/// 128, bf16 and f16 (required); not causal, t not a multiple of 64 (required); windowed and
/// padded rows (cuDNN may refuse those: printed).
void checkAttentionCudnns(Contexts& c, Rng& rng, bool quick) {
  if (!tgrt_cuda::cudnnAttentionAvailable(c.gpu)) {
    record("attn_cudnn available", "libcudnn.so.9 (dlopen)", 1.0, 0.0);
    return;
  }
  std::printf("(cuDNN %lld)\n", (long long)tgrt_cuda::cudnnVersion(c.gpu));
  const int64_t t = quick ? 128 : 256;
  for (int32_t dt : {TGRT_BF16, TGRT_F16}) {
    for (int64_t hd : {int64_t(64), int64_t(128)}) {
      checkAttentionCudnn(c, rng, dt, 2, 4, 4, t, hd, 1, 0, 0, true, true);  // MHA
      checkAttentionCudnn(c, rng, dt, 2, 8, 2, t, hd, 1, 0, 0, true, true);  // GQA 4:1
      checkAttentionCudnn(c, rng, dt, 1, 4, 1, t, hd, 1, 0, 0, true, false); // MQA
      checkAttentionCudnn(c, rng, dt, 1, 6, 2, 100, hd, 1, 0, 0, true, false);
      checkAttentionCudnn(c, rng, dt, 1, 6, 2, 77, hd, 0, 0, 0, true, false);
      checkAttentionCudnn(c, rng, dt, 2, 4, 2, t, hd, 1, 24, 0, false, true); // window
      checkAttentionCudnn(c, rng, dt, 2, 4, 2, t, hd, 1, 0, 8, false, false); // padded rows
    }
    if (!quick) {
      checkAttentionCudnn(c, rng, dt, 1, 32, 8, 1024, 64, 1, 0, 0, true, true); // Llama 3.2 1B
      checkAttentionCudnn(c, rng, dt, 1, 8, 8, 1024, 128, 1, 0, 0, true, false);
      checkAttentionCudnn(c, rng, dt, 1, 8, 2, 1024, 64, 1, 256, 0, false, false);
    }
  }
}
#endif // TGRT_HAVE_CUDNN

/// Causal (query, key) pairs attention computes per head: sum over queries of the keys it
/// sees (all earlier keys and itself, or the last `window` of them).
double visiblePairs(int64_t t, int64_t window) {
  double pairs = 0.0;
  for (int64_t i = 0; i < t; ++i) pairs += (double)(window > 0 ? std::min(i + 1, window) : i + 1);
  return pairs;
}

template <typename Fn>
float timeMs(tgrt_cuda::Context* ctx, int reps, Fn fn);

/// --sweep: every compiled tile shape of the three attention kernels, per head dim: checked
/// against the CPU (t 100 and 256, windows 0 and 64) and, unless --quick, timed at t = 1024,
/// bh = 192, causal, window 0 (the other two kernels at their defaults).
void sweepAttention(Contexts& c, Rng& rng, bool timing) {
  struct Shape {
    int64_t t, window;
  };
  const Shape shapes[] = {{100, 0}, {256, 64}, {256, 0}};
  const int64_t bh = 2;
  const int shapesFwd[][2] = {{64, 64}, {128, 64}, {64, 32}, {128, 32}};
  const int shapesKv[][2] = {{64, 64}, {32, 64}, {32, 32}};
  const int shapesDq[][2] = {{64, 64}, {64, 32}, {32, 64}};
  std::printf("\nattention tile sweep (timing: bh 192, t 1024, causal, window 0; ms, median of 10)\n");
  for (int64_t hd : {int64_t(32), int64_t(64), int64_t(128)}) {
    const float scale = 1.0f / std::sqrt((float)hd);
    struct Ref {
      int64_t t = 0, window = 0;
      Vec out, lse, dq, dk, dv;                          // CPU results
      std::unique_ptr<Dev<float>> q, k, v, dout, o, l;   // inputs on the device
      std::unique_ptr<Dev<float>> gdq, gdk, gdv;         // CUDA gradients
    };
    std::vector<Ref> refs;
    for (const Shape& sh : shapes) {
      const size_t n = (size_t)(bh * sh.t * hd);
      Vec q = rng.normals(n), k = rng.normals(n), v = rng.normals(n), dout = rng.normals(n);
      Ref r;
      r.t = sh.t;
      r.window = sh.window;
      r.out = r.dq = r.dk = r.dv = Vec(n);
      r.lse = Vec((size_t)(bh * sh.t));
      tgrt_attention_fwd(c.cpu, "sweep", TGRT_F32, q.data(), k.data(), v.data(), r.out.data(),
                         r.lse.data(), ATTN_CONTIG(bh, sh.t, hd), 1, sh.window, scale);
      tgrt_attention_bwd(c.cpu, "sweep", TGRT_F32, q.data(), k.data(), v.data(), r.out.data(),
                         r.lse.data(), dout.data(), r.dq.data(), r.dk.data(), r.dv.data(),
                         ATTN_CONTIG(bh, sh.t, hd), 1, sh.window, scale);
      r.q = std::make_unique<Dev<float>>(q);
      r.k = std::make_unique<Dev<float>>(k);
      r.v = std::make_unique<Dev<float>>(v);
      r.dout = std::make_unique<Dev<float>>(dout);
      r.o = std::make_unique<Dev<float>>(r.out); // the backward runs on the reference forward
      r.l = std::make_unique<Dev<float>>(r.lse);
      r.gdq = std::make_unique<Dev<float>>(n);
      r.gdk = std::make_unique<Dev<float>>(n);
      r.gdv = std::make_unique<Dev<float>>(n);
      refs.push_back(std::move(r));
    }
    const int64_t tb = 1024, bhb = 192;
    const size_t nb = timing ? (size_t)(bhb * tb * hd) : 1;
    Dev<float> q(rng.normals(nb)), k(rng.normals(nb)), v(rng.normals(nb)), dout(rng.normals(nb));
    Dev<float> out(nb), lse(timing ? (size_t)(bhb * tb) : 1), dq(nb), dk(nb), dv(nb);
    if (timing)
      tgrt_cuda::attentionFwd(c.gpu, "sweep", TGRT_F32, q.p, k.p, v.p, out.p, lse.p,
                              ATTN_CONTIG(bhb, tb, hd), 1, 0, scale);

    for (int kind = 0; kind < 3; ++kind) {
      const int(*list)[2] = kind == 0 ? shapesFwd : kind == 1 ? shapesKv : shapesDq;
      const int count = kind == 0 ? 4 : 3;
      for (int i = 0; i < count; ++i) {
        tgrt_cuda::AttentionTiles tiles = {0, 0, 0, 0, 0, 0};
        int* slot = kind == 0 ? &tiles.fwd_br : kind == 1 ? &tiles.kv_br : &tiles.dq_br;
        slot[0] = list[i][0];
        slot[1] = list[i][1];
        const char* kname = kind == 0 ? "fwd" : kind == 1 ? "bwd dk,dv" : "bwd dq";
        const std::string label = fmt("sweep %s %dx%d", kname, list[i][0], list[i][1]);
        const std::string shape = fmt("hd%lld (t 100/256, window 0/64)", (long long)hd);
        if (!tgrt_cuda::attentionTilesSupported(hd, tiles)) {
          std::printf("%-34s %-42s %11s  (does not fit shared memory)\n", label.c_str(),
                      shape.c_str(), "-");
          continue;
        }
        tgrt_cuda::setAttentionTiles(c.gpu, tiles);
        double err = 0.0;
        for (Ref& r : refs) {
          if (kind == 0) {
            Dev<float> o(r.out.size()), l(r.lse.size());
            o.poison();
            l.poison();
            tgrt_cuda::attentionFwd(c.gpu, "sweep", TGRT_F32, r.q->p, r.k->p, r.v->p, o.p, l.p,
                                    ATTN_CONTIG(bh, r.t, hd), 1, r.window, scale);
            err = std::max({err, relErr(o.get(), r.out), relErr(l.get(), r.lse)});
          } else {
            r.gdq->poison();
            r.gdk->poison();
            r.gdv->poison();
            tgrt_cuda::attentionBwd(c.gpu, "sweep", TGRT_F32, r.q->p, r.k->p, r.v->p, r.o->p,
                                    r.l->p, r.dout->p, r.gdq->p, r.gdk->p, r.gdv->p,
                                    ATTN_CONTIG(bh, r.t, hd), 1, r.window, scale);
            const Vec a = r.gdq->get(), b = r.gdk->get(), cc = r.gdv->get();
            err = std::max(err, kind == 1 ? jointErr({{&b, &r.dk}, {&cc, &r.dv}})
                                          : relErr(a, r.dq));
          }
        }
        record(label, shape, err);
        if (timing) {
          const float ms = timeMs(c.gpu, 10, [&] {
            if (kind == 0)
              tgrt_cuda::attentionFwd(c.gpu, "sweep", TGRT_F32, q.p, k.p, v.p, out.p, lse.p,
                                      ATTN_CONTIG(bhb, tb, hd), 1, 0, scale);
            else
              tgrt_cuda::attentionBwd(c.gpu, "sweep", TGRT_F32, q.p, k.p, v.p, out.p, lse.p, dout.p,
                                      dq.p, dk.p, dv.p, ATTN_CONTIG(bhb, tb, hd), 1, 0, scale);
          });
          std::printf("    time %s %dx%d hd%lld: %.3f ms%s\n", kname, list[i][0], list[i][1],
                      (long long)hd, ms, kind ? " (whole backward)" : "");
        }
      }
    }
  }
  tgrt_cuda::setAttentionTiles(c.gpu, {0, 0, 0, 0, 0, 0});
}

/// Median over `reps` timed runs (after 2 warm-ups) of fn, in ms, with device events; timeMs
/// and timeColdMs. `between(i)` is queued before timed call i, outside its events.
template <typename Between, typename Fn>
float timeMsBetween(tgrt_cuda::Context* ctx, int reps, Between between, Fn fn) {
  cudaStream_t s = static_cast<cudaStream_t>(tgrt_cuda::stream(ctx));
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "cudaEventCreate");
  ck(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) fn();
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    between(i);
    ck(cudaEventRecord(a, s), "cudaEventRecord");
    fn();
    ck(cudaEventRecord(b, s), "cudaEventRecord");
    ck(cudaEventSynchronize(b), "cudaEventSynchronize");
    float x = 0.0f;
    ck(cudaEventElapsedTime(&x, a, b), "cudaEventElapsedTime");
    ms.push_back(x);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// Median ms of fn (timeMsBetween with nothing between the calls).
template <typename Fn>
float timeMs(tgrt_cuda::Context* ctx, int reps, Fn fn) {
  return timeMsBetween(ctx, reps, [](int) {}, fn);
}

/// timeMs with the L2 cache flushed before each call: `bytes` of `flush` (larger than the L2)
/// set on the stream between the calls, outside the events, so each call finds its operands
/// in device memory as a call inside a training step does, not left by its previous run.
template <typename Fn>
float timeColdMs(tgrt_cuda::Context* ctx, int reps, void* flush, size_t bytes, Fn fn) {
  cudaStream_t s = static_cast<cudaStream_t>(tgrt_cuda::stream(ctx));
  return timeMsBetween(ctx, reps, [&](int i) {
    ck(cudaMemsetAsync(flush, i & 0xff, bytes, s), "cudaMemsetAsync (L2 flush)");
  }, fn);
}

/// The GPU's ms per call of fn when `reps` calls are queued back to back (events around all
/// of them, after 2 warm-up calls), as in a training step's stream or graph: unlike timeMs,
/// the host's work per call (argument setup, driver calls before the launch) overlaps the
/// previous call's kernel instead of being timed, unless the host is the slower of the two.
/// hostMs (optional): the host's wall-clock ms per call of the queuing loop.
template <typename Fn>
float timeQueuedMs(tgrt_cuda::Context* ctx, int reps, Fn fn, double* hostMs = nullptr) {
  cudaStream_t s = static_cast<cudaStream_t>(tgrt_cuda::stream(ctx));
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "cudaEventCreate");
  ck(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) fn();
  ck(cudaEventRecord(a, s), "cudaEventRecord");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) fn();
  const auto t1 = std::chrono::steady_clock::now();
  ck(cudaEventRecord(b, s), "cudaEventRecord");
  ck(cudaEventSynchronize(b), "cudaEventSynchronize");
  float x = 0.0f;
  ck(cudaEventElapsedTime(&x, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (hostMs) *hostMs = std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
  return x / (float)reps;
}

/// fp32 fwd + bwd ms per window of the last benchAttention (for the bf16 rows' ratio).
float g_fp32TotalMs[3] = {0.0f, 0.0f, 0.0f};

void benchAttention(Contexts& c, Rng& rng, int64_t t, int64_t hd, int64_t bh, int reps) {
  const size_t n = (size_t)(bh * t * hd);
  const float scale = 1.0f / std::sqrt((float)hd);
  Dev<float> q(rng.normals(n)), k(rng.normals(n)), v(rng.normals(n)), dout(rng.normals(n));
  Dev<float> out(n), lse((size_t)(bh * t)), dq(n), dk(n), dv(n);
  std::printf("\nflash attention timing: bh %lld, t %lld, hd %lld, causal, fp32 (median of %d)\n",
              (long long)bh, (long long)t, (long long)hd, reps);
  std::printf("%-8s %10s %10s %10s %14s %12s\n", "window", "fwd ms", "bwd ms", "total ms",
              "visible pairs", "fwd TFLOP/s");
  double fullTotal = 0.0;
  for (int64_t window : {int64_t(0), int64_t(256), int64_t(128)}) {
    const float f = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionFwd(c.gpu, "bench", TGRT_F32, q.p, k.p, v.p, out.p, lse.p,
                              ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    const float b = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionBwd(c.gpu, "bench", TGRT_F32, q.p, k.p, v.p, out.p, lse.p, dout.p, dq.p,
                              dk.p, dv.p, ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    const double pairs = visiblePairs(t, window);
    const double flops = 4.0 * hd * pairs * (double)bh; // QK^T and PV
    if (window == 0) fullTotal = f + b;
    g_fp32TotalMs[window == 0 ? 0 : window == 256 ? 1 : 2] = f + b;
    std::printf("%-8lld %10.3f %10.3f %10.3f %14.0f %12.2f   (total %.2fx of window 0)\n",
                (long long)window, f, b, f + b, pairs, flops / (f * 1e-3) / 1e12,
                (f + b) / fullTotal);
  }
  // The unfused path for scale: S and P materialised (bh * t * t floats each).
  Naive naive{c.gpu, bh, t, hd, 1, 0, scale};
  Dev<float> s((size_t)(bh * t * t)), p((size_t)(bh * t * t));
  const float f = timeMs(c.gpu, reps, [&] { naive.fwd(q.p, k.p, v.p, s.p, p.p, out.p); });
  const float b = timeMs(c.gpu, reps, [&] {
    naive.bwd(q.p, k.p, v.p, p.p, dout.p, s.p, dq.p, dk.p, dv.p);
  });
  std::printf("%-8s %10.3f %10.3f %10.3f   (naive: matmul+mask+softmax+matmul, window 0)\n",
              "naive", f, b, f + b);
}

/// bf16 / f16 flash attention timings beside the fp32 rows of benchAttention (same shapes).
void benchAttentionLp(Contexts& c, Rng& rng, int32_t dt, int64_t t, int64_t hd, int64_t bh,
                      int reps) {
  const size_t n = (size_t)(bh * t * hd);
  const float scale = 1.0f / std::sqrt((float)hd);
  DevT q(encode(rng.normals(n), dt)), k(encode(rng.normals(n), dt)), v(encode(rng.normals(n), dt)),
      dout(encode(rng.normals(n), dt));
  DevT out(dt, n), dq(dt, n), dk(dt, n), dv(dt, n);
  Dev<float> lse((size_t)(bh * t));
  std::printf("\nflash attention timing: bh %lld, t %lld, hd %lld, causal, %s tensor cores "
              "(median of %d)\n",
              (long long)bh, (long long)t, (long long)hd, dtName(dt), reps);
  std::printf("%-8s %10s %10s %10s %14s %12s %12s\n", "window", "fwd ms", "bwd ms", "total ms",
              "visible pairs", "fwd TFLOP/s", "bwd TFLOP/s");
  int idx = 0;
  for (int64_t window : {int64_t(0), int64_t(256), int64_t(128)}) {
    const float f = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionFwd(c.gpu, "bench", dt, q.p, k.p, v.p, out.p, lse.p,
                              ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    const float b = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionBwd(c.gpu, "bench", dt, q.p, k.p, v.p, out.p, lse.p, dout.p, dq.p, dk.p,
                              dv.p, ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    const double pairs = visiblePairs(t, window);
    const double flops = 4.0 * hd * pairs * (double)bh; // fwd: QK^T and PV
    const double fp32 = g_fp32TotalMs[idx++];
    std::printf("%-8lld %10.3f %10.3f %10.3f %14.0f %12.2f %12.2f   (fp32/%s total %.2fx)\n",
                (long long)window, f, b, f + b, pairs, flops / (f * 1e-3) / 1e12,
                2.5 * flops / (b * 1e-3) / 1e12, dtName(dt), fp32 > 0.0 ? fp32 / (f + b) : 0.0);
  }
  // The compiler's layout: q, k, v views into a packed [B, t, 3, H, hd] projection output,
  // out / dout [B, t, H, hd], dq, dk, dv into one packed [B, t, 3, H, hd] gradient (window 0).
  const int64_t H = bh % 12 == 0 ? 12 : bh, B = bh / H;
  const int64_t ist = 3 * H * hd, isb = t * ist, ost = H * hd, osb = t * ost;
  DevT qkv(encode(rng.normals(3 * n), dt)), dqkv(dt, 3 * n);
  // The context's kernels, then the mma.sync ones (where the default is wgmma: head dim 64 on
  // Hopper), each forward and backward timed on the packed layout.
  const tgrt_cuda::AttentionForm form0 = tgrt_cuda::attentionForm(c.gpu);
  for (bool mma : {false, true}) {
    if (mma) tgrt_cuda::setAttentionForm(c.gpu, {false});
    const float f = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionFwd(c.gpu, "bench", dt, qkv.at(0), qkv.at((size_t)(H * hd)),
                              qkv.at((size_t)(2 * H * hd)), out.p, lse.p, B, H, t, hd, isb, hd,
                              ist, osb, hd, ost, 1, 0, scale);
    });
    const float b = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionBwd(c.gpu, "bench", dt, qkv.at(0), qkv.at((size_t)(H * hd)),
                              qkv.at((size_t)(2 * H * hd)), out.p, lse.p, dout.p, dqkv.at(0),
                              dqkv.at((size_t)(H * hd)), dqkv.at((size_t)(2 * H * hd)), B, H, t,
                              hd, isb, hd, ist, osb, hd, ost, 1, 0, scale);
    });
    if (mma)
      std::printf("%-8s %10.3f %10.3f %10.3f   (packed, mma.sync kernels)\n", "packed", f, b,
                  f + b);
    else
      std::printf("%-8s %10.3f %10.3f %10.3f   (packed qkv layout, B %lld x H %lld, window 0)\n",
                  "packed", f, b, f + b, (long long)B, (long long)H);
  }
  tgrt_cuda::setAttentionForm(c.gpu, form0);
}

/// TF32 flash attention timings (TGRT_TF32=1's kernels) beside the fp32 rows of benchAttention.
void benchAttentionTf32(Contexts& c, Rng& rng, int64_t t, int64_t hd, int64_t bh, int reps) {
  const size_t n = (size_t)(bh * t * hd);
  const float scale = 1.0f / std::sqrt((float)hd);
  Dev<float> q(rng.normals(n)), k(rng.normals(n)), v(rng.normals(n)), dout(rng.normals(n));
  Dev<float> out(n), lse((size_t)(bh * t)), dq(n), dk(n), dv(n);
  std::printf("\nflash attention timing: bh %lld, t %lld, hd %lld, causal, fp32 in/out, TF32 "
              "tensor cores (TGRT_TF32=1; median of %d)\n",
              (long long)bh, (long long)t, (long long)hd, reps);
  std::printf("(fwd: S = Q K^T in 3xTF32, the default; fwd 1x: single TF32 scores, "
              "tgrt_cuda::setAttentionTf32Split(ctx, false))\n");
  std::printf("%-8s %10s %10s %10s %14s %12s %12s %10s\n", "window", "fwd ms", "bwd ms",
              "total ms", "visible pairs", "fwd TFLOP/s", "bwd TFLOP/s", "fwd 1x ms");
  int idx = 0;
  for (int64_t window : {int64_t(0), int64_t(256), int64_t(128)}) {
    tgrt_cuda::setAttentionTf32Split(c.gpu, false);
    const float f1 = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionFwdTf32(c.gpu, "bench", q.p, k.p, v.p, out.p, lse.p,
                                  ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    tgrt_cuda::setAttentionTf32Split(c.gpu, true);
    const float f = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionFwdTf32(c.gpu, "bench", q.p, k.p, v.p, out.p, lse.p,
                                  ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    const float b = timeMs(c.gpu, reps, [&] {
      tgrt_cuda::attentionBwdTf32(c.gpu, "bench", q.p, k.p, v.p, out.p, lse.p, dout.p, dq.p, dk.p,
                                  dv.p, ATTN_CONTIG(bh, t, hd), 1, window, scale);
    });
    const double pairs = visiblePairs(t, window);
    const double flops = 4.0 * hd * pairs * (double)bh; // fwd: QK^T and PV
    const double fp32 = g_fp32TotalMs[idx++];
    std::printf("%-8lld %10.3f %10.3f %10.3f %14.0f %12.2f %12.2f %10.3f   (fp32/tf32 total "
                "%.2fx)\n",
                (long long)window, f, b, f + b, pairs, flops / (f * 1e-3) / 1e12,
                2.5 * flops / (b * 1e-3) / 1e12, f1, fp32 > 0.0 ? fp32 / (f + b) : 0.0);
  }
}

#ifdef TGRT_HAVE_CUDNN
/// cuDNN's fused attention beside the own kernels on the compiler's packed layout (q, k, v
/// views into [B, t, H + 2 Hkv, hd], out / dout [B, t, H, hd], dq, dk, dv into one packed
/// gradient), causal, bf16: GPT-2 small (16 x 12 heads, t 1024, hd 64), Llama 3.2 1B
/// (4 x 32 query / 8 kv heads, t 2048, hd 64) and hd 128 (8 x 8 heads, t 2048). ms (median),
/// TFLOP/s (forward 4 hd pairs per head, backward 2.5 times that) and the workspace cuDNN's
/// graphs ask for. "own" is the context's default kernels (wgmma at hd 64 on Hopper),
/// "cudnn" TGRT_ATTN=cudnn, "cudnn-det" the deterministic backward (TGRT_ATTN=cudnn-det),
/// "cudnn-bhsd" cuDNN on q, k, v, dq, dk, dv each contiguous [B, heads, t, hd] instead of the
/// packed views, "cudnn-cold" the packed graphs with the L2 flushed before each call
/// (timeColdMs). "Llama as MHA" is Llama's shape with 32 kv heads: what sharing kv heads costs
/// (H200, 2026-12-03: backward 0.610 grouped against 0.574 ms unshared; the layout within 2%;
/// docs/results.md).
void benchAttentionCudnn(Contexts& c, Rng& rng, int reps) {
  struct Case {
    const char* name;
    int64_t B, H, Hkv, t, hd;
  };
  const Case cases[] = {{"GPT-2 small", 16, 12, 12, 1024, 64},
                        {"Llama 3.2 1B", 4, 32, 8, 2048, 64},
                        // the same heads without sharing: what grouped queries cost cuDNN
                        {"Llama as MHA", 4, 32, 32, 2048, 64},
                        {"hd 128", 8, 8, 8, 2048, 128},
                        {"GQA hd 128", 8, 32, 8, 2048, 128}}; // issue 21's attention target
  const int32_t dt = TGRT_BF16;
  std::printf("\nattention: own kernels vs cuDNN fused SDPA, packed layout, causal, %s (median of "
              "%d; bwd TFLOP/s = 2.5 x fwd flops / time; workspace region %lld bytes)\n",
              dtName(dt), reps, (long long)c.model.workspace_bytes);
  if (!tgrt_cuda::cudnnAttentionAvailable(c.gpu)) {
    std::printf("cuDNN unavailable (libcudnn.so.9 did not load): no cuDNN rows\n");
    return;
  }
  std::printf("cuDNN %lld\n", (long long)tgrt_cuda::cudnnVersion(c.gpu));
  std::printf("%-14s %-30s %-10s %9s %9s %9s %9s %9s %14s\n", "shape", "B x H/Hkv, t, hd", "impl",
              "fwd ms", "bwd ms", "total ms", "fwd TF/s", "bwd TF/s", "workspace");
  const tgrt_cuda::AttentionImpl impl0 = tgrt_cuda::attentionImpl(c.gpu);
  for (const Case& k : cases) {
    const int64_t nh = k.H + 2 * k.Hkv, hd = k.hd, t = k.t, B = k.B, H = k.H, Hkv = k.Hkv;
    const int64_t ist = nh * hd, isb = t * ist, ost = H * hd, osb = t * ost;
    const size_t nIn = (size_t)(B * isb), nOut = (size_t)(B * osb);
    const float scale = 1.0f / std::sqrt((float)hd);
    DevT x(encode(rng.normals(nIn), dt)), dout(encode(rng.normals(nOut), dt));
    DevT out(dt, nOut), dx(dt, nIn);
    Dev<float> lse((size_t)(B * H * t));
    const int64_t kOff = H * hd, vOff = (H + Hkv) * hd;
    const double flops = 4.0 * hd * visiblePairs(t, 0) * (double)(B * H);
    const std::string dims = fmt("%lld x %lld/%lld, t %lld, hd %lld", (long long)B, (long long)H,
                                 (long long)Hkv, (long long)t, (long long)hd);
    auto fwdEntry = [&] {
      tgrt_cuda::attentionGqaFwd(c.gpu, "bench", dt, x.at(0), x.at((size_t)kOff),
                                 x.at((size_t)vOff), out.p, lse.p, B, H, Hkv, t, hd, isb, hd, ist,
                                 isb, hd, ist, osb, hd, ost, 1, 0, scale);
    };
    auto bwdEntry = [&] {
      tgrt_cuda::attentionGqaBwd(c.gpu, "bench", dt, x.at(0), x.at((size_t)kOff),
                                 x.at((size_t)vOff), out.p, lse.p, dout.p, dx.at(0),
                                 dx.at((size_t)kOff), dx.at((size_t)vOff), B, H, Hkv, t, hd, isb,
                                 hd, ist, isb, hd, ist, osb, hd, ost, 1, 0, scale);
    };
    auto row = [&](const char* impl, float f, float b, const std::string& ws) {
      std::printf("%-14s %-30s %-10s %9.3f %9.3f %9.3f %9.1f %9.1f %14s\n", k.name, dims.c_str(),
                  impl, f, b, f + b, f > 0 ? flops / (f * 1e-3) / 1e12 : 0.0,
                  b > 0 ? 2.5 * flops / (b * 1e-3) / 1e12 : 0.0, ws.c_str());
      std::fflush(stdout);
    };
    auto wsOf = [&](bool backward, bool det) {
      return tgrt_cuda::cudnnAttentionWorkspace(c.gpu, "bench", backward, dt, B, H, Hkv, t, hd,
                                                isb, hd, ist, isb, hd, ist, osb, hd, ost, 1, 0,
                                                scale, det);
    };
    tgrt_cuda::setAttentionImpl(c.gpu, tgrt_cuda::AttentionImpl::Own);
    const float fo = timeMs(c.gpu, reps, fwdEntry), bo = timeMs(c.gpu, reps, bwdEntry);
    row("own", fo, bo, "-");
    const int64_t wf = wsOf(false, false), wb = wsOf(true, false), wd = wsOf(true, true);
    if (wf < 0 || wb < 0) {
      std::printf("%-14s %-30s %-10s cuDNN refuses this shape (fwd workspace %lld, bwd %lld)\n",
                  k.name, dims.c_str(), "cudnn", (long long)wf, (long long)wb);
    } else {
      // The entry points with AttentionImpl::Cudnn (what TGRT_ATTN=cudnn runs); the graphs
      // are built by wsOf above, so no timed call builds one.
      tgrt_cuda::setAttentionImpl(c.gpu, tgrt_cuda::AttentionImpl::Cudnn);
      const float fc = timeMs(c.gpu, reps, fwdEntry), bc = timeMs(c.gpu, reps, bwdEntry);
      row("cudnn", fc, bc, fmt("%lld/%lld", (long long)wf, (long long)wb));
      if (wd >= 0) {
        tgrt_cuda::setAttentionImpl(c.gpu, tgrt_cuda::AttentionImpl::CudnnDeterministic);
        const float bd = timeMs(c.gpu, reps, bwdEntry);
        row("cudnn-det", fc, bd, fmt("-/%lld", (long long)wd));
      } else {
        std::printf("%-14s %-30s %-10s the deterministic backward is refused\n", k.name,
                    dims.c_str(), "cudnn-det");
      }
      std::printf("%-14s %-30s %-10s own / cudnn: fwd %.2fx, bwd %.2fx, total %.2fx\n", k.name,
                  dims.c_str(), "ratio", fo / fc, bo / bc, (fo + bo) / (fc + bc));
      // q, k, v, dq, dk, dv each contiguous [B, heads, t, hd] (out and dout packed as
      // above): what the packed layout's strides cost cuDNN.
      const size_t nQ = (size_t)(B * H * t * hd), nK = (size_t)(B * Hkv * t * hd);
      DevT q2(encode(rng.normals(nQ), dt)), k2(encode(rng.normals(nK), dt)),
          v2(encode(rng.normals(nK), dt)), dq2(dt, nQ), dk2(dt, nK), dv2(dt, nK);
      const int64_t qb = H * t * hd, kb = Hkv * t * hd, hs = t * hd;
      tgrt_cuda::setAttentionImpl(c.gpu, tgrt_cuda::AttentionImpl::Cudnn);
      const float fs = timeMs(c.gpu, reps, [&] {
        tgrt_cuda::attentionGqaFwd(c.gpu, "bench", dt, q2.p, k2.p, v2.p, out.p, lse.p, B, H,
                                   Hkv, t, hd, qb, hs, hd, kb, hs, hd, osb, hd, ost, 1, 0, scale);
      });
      const float bs = timeMs(c.gpu, reps, [&] {
        tgrt_cuda::attentionGqaBwd(c.gpu, "bench", dt, q2.p, k2.p, v2.p, out.p, lse.p, dout.p,
                                   dq2.p, dk2.p, dv2.p, B, H, Hkv, t, hd, qb, hs, hd, kb, hs, hd,
                                   osb, hd, ost, 1, 0, scale);
      });
      row("cudnn-bhsd", fs, bs, "-");
      // The packed graphs again with the L2 flushed before each call (timeColdMs).
      Dev<uint8_t> flush((size_t)512 << 20);
      const float fk = timeColdMs(c.gpu, reps, flush.p, (size_t)512 << 20, fwdEntry);
      const float bk = timeColdMs(c.gpu, reps, flush.p, (size_t)512 << 20, bwdEntry);
      row("cudnn-cold", fk, bk, "-");
    }
  }
  tgrt_cuda::setAttentionImpl(c.gpu, impl0);
}
#endif // TGRT_HAVE_CUDNN

/// Memory-bound kernels and GEMMs at GPT-2 small's shapes (16 x 1024 tokens, d 768, MLP 3072,
/// vocabulary 50304, 124M parameters), f32 and bf16 (the bf16-mixed training path): ms and the
/// bandwidth of the bytes each call must move (or TFLOP/s). Inputs are zeros (the timings of
/// these kernels do not depend on values; the GEMMs' may, slightly).
void benchKernels(Contexts& c, int reps) {
  const int64_t T = 16384, d = 768, H = 3072, V = 50304, P = 124475904;
  const int32_t F = TGRT_F32, B = TGRT_BF16;
  tgrt_cuda::Context* g = c.gpu;
  auto zeros = [](size_t bytes) {
    auto p = std::make_unique<Dev<uint8_t>>(bytes);
    ck(cudaMemset(p->p, 0, bytes), "cudaMemset");
    return p;
  };
  // Buffers sized for the largest use (f32), shared by the f32 and bf16 rows.
  auto x = zeros(T * d * 4), y = zeros(T * d * 4), o = zeros(T * d * 4), dx = zeros(T * d * 4);
  auto gam = zeros(d * 4), bet = zeros(d * 4), dg = zeros(H * 4), db = zeros(H * 4);
  Dev<float> mean(Vec((size_t)T, 0.0f)), rstd(Vec((size_t)T, 1.0f));
  auto h1 = zeros(T * H * 4), h2 = zeros(T * H * 4), w = zeros(H * d * 4), bias = zeros(H * 4);
  auto p = zeros(P * 4), pg = zeros(P * 4), pm = zeros(P * 4), pv = zeros(P * 4);
  auto acc = zeros(8), logits = zeros((size_t)T * V * 4), loss = zeros(4);
  Dev<float> dloss(Vec{1.0f}), clip(Vec{1.0f, 1.0f});
  Dev<int32_t> targets(IVec((size_t)T, 5)), ids(IVec((size_t)T, 3));
  ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::printf("\nkernel timing at GPT-2 small shapes (16 x 1024 tokens, d 768, MLP 3072, vocab "
              "50304, 124M params; median of %d; GB/s of the bytes the call must move)\n",
              reps);
  // TGRT_KERNEL_BENCH_ONLY: only the rows whose "name dtype" contains it (for Nsight Compute).
  const char* only = std::getenv("TGRT_KERNEL_BENCH_ONLY");
  auto skip = [&](const char* what, int32_t dt) {
    return only && (std::string(what) + " " + dtName(dt)).find(only) == std::string::npos;
  };
  auto row = [&](const char* what, int32_t dt, double bytesPerElemF32, double bytesPerElemLp,
                 double elems, const std::function<void()>& fn) {
    if (skip(what, dt)) return;
    const float ms = timeMs(g, reps, fn);
    const double bytes = (dt == F ? bytesPerElemF32 : bytesPerElemLp) * elems;
    std::printf("%-52s %-5s %9.4f ms %8.0f GB/s\n", what, dtName(dt), ms, bytes / ms / 1e6);
  };
  auto flops = [&](const char* what, int32_t dt, double f, const std::function<void()>& fn) {
    if (skip(what, dt)) return;
    const float ms = timeMs(g, reps, fn);
    std::printf("%-52s %-5s %9.4f ms %8.1f TFLOP/s\n", what, dtName(dt), ms, f / ms / 1e9);
  };
  // Token ids for the embedding backward over GPT-2's table (vocab 50257): uniform, and
  // skewed like real text (30% one id, the rest Zipf(1) over 8192 ids, shuffled).
  const int64_t Vt = 50257;
  IVec uni((size_t)T), skew((size_t)T);
  {
    std::mt19937_64 gen(7);
    for (auto& id : uni) id = (int32_t)(gen() % (uint64_t)Vt);
    std::vector<double> cdf(8192);
    double acc = 0.0;
    for (size_t k = 0; k < cdf.size(); ++k) cdf[k] = acc += 1.0 / (double)(k + 1);
    for (size_t i = 0; i < skew.size(); ++i) {
      if (i < skew.size() * 3 / 10) {
        skew[i] = 198;
        continue;
      }
      const double u = (double)(gen() >> 11) * (1.0 / 9007199254740992.0) * acc;
      skew[i] = 256 + (int32_t)(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    }
    std::shuffle(skew.begin(), skew.end(), gen);
  }
  Dev<int32_t> idsUni(uni), idsSkew(skew);
  for (int32_t dt : {F, B}) {
    const double es = (double)tgrt_dtype_size(dt);
    // Cross entropy over T rows of `vocab` logits (50257: rows at every offset; 50304: whole
    // packs, GPT-2's padded vocabulary): the forward, the backward in place, the two in one.
    // 16-bit logits also with TGRT_CE_FAST=7 (blocks of 256, suffix " v7") and 0 (expf
    // instead of the SFU's ex2, suffix "expf").
    auto ceRows = [&](int64_t vocab) {
      for (int fast : dt == F ? std::vector<int>{6} : std::vector<int>{6, 7, 0}) {
        const int before = tgrt_cuda::setCeFast(g, fast);
        const std::string v = std::to_string(vocab), n = "cross_entropy_",
                          sfx = fast == 0 ? " expf" : fast == 7 ? " v7" : "";
        row((n + "fwd 16384 x " + v + sfx).c_str(), dt, 4, 2, (double)T * vocab, [&] {
          tgrt_cuda::crossEntropyFwd(g, "bench", dt, logits->p, targets.p, (float*)loss->p, T,
                                     vocab, -100);
        });
        row((n + "bwd 16384 x " + v + " (in place)" + sfx).c_str(), dt, 8, 4, (double)T * vocab,
            [&] {
              tgrt_cuda::crossEntropyBwd(g, "bench", dt, logits->p, targets.p, dloss.p,
                                         logits->p, T, vocab, -100);
            });
        row((n + "fwd_bwd 16384 x " + v + " (in place)" + sfx).c_str(), dt, 8, 4,
            (double)T * vocab, [&] {
              tgrt_cuda::crossEntropyFwdBwd(g, "bench", dt, logits->p, targets.p,
                                            (float*)loss->p, dloss.p, logits->p, T, vocab, -100);
            });
        tgrt_cuda::setCeFast(g, before);
      }
    };
    // dout read, the whole table written (zeroed, then the used rows).
    for (bool skewed : {false, true})
      row(skewed ? "embedding_bwd 16384 x 768, vocab 50257 (skewed ids)"
                 : "embedding_bwd 16384 x 768, vocab 50257 (uniform ids)",
          dt, 4, 2, (double)((T + Vt) * d), [&] {
            tgrt_cuda::embeddingBwd(g, "bench", dt, skewed ? idsSkew.p : idsUni.p, x->p,
                                    logits->p, T, d, Vt);
          });
    row("layer_norm_bwd_acc 16384 x 768 (dy low dt; x dres f32)", dt, 20, 16, (double)(T * d),
        [&] {
          tgrt_cuda::layerNormBwdAcc(g, "bench", false, dt, y->p, F, x->p, F, gam->p, mean.p, rstd.p,
                                     dx->p, dt, o->p, dg->p, db->p, T, d);
        });
    // The step's form (tgrt_layer_norm_bwd_acc_bgrad: dy and the low copy bf16, x and the
    // residual gradient f32, the projection's bias summed too) at GPT-2 small's d 768 and the
    // head-dim-128 shape's d 1024: 16 bytes per element.
    if (dt == B)
      for (int64_t n : {int64_t(768), int64_t(1024)})
        row(n == 768 ? "layer_norm_bwd_acc_bgrad 16384 x 768 (step's form)"
                     : "layer_norm_bwd_acc_bgrad 16384 x 1024 (step's form)",
            dt, 16, 16, (double)(T * n), [&] {
              tgrt_cuda::layerNormBwdAcc(g, "bench", false, B, y->p, F, h1->p, F, bias->p, mean.p,
                                         rstd.p, h2->p, B, o->p, dg->p, db->p, T, n, F, w->p);
            });
    for (int64_t n : {int64_t(768), int64_t(2304)})
      row(n == 768 ? "bias_grad 16384 x 768" : "bias_grad 16384 x 2304", dt, 4, 2,
          (double)(T * n), [&] { tgrt_cuda::biasGrad(g, "bench", dt, h1->p, db->p, T, n); });
    ceRows(Vt);
    row("embedding_fwd 16384 x 768", dt, 8, 4, (double)(T * d),
        [&] { tgrt_cuda::embeddingFwd(g, "bench", dt, x->p, ids.p, o->p, T, d, 1024); });
    row("add 16384 x 768", dt, 12, 6, (double)(T * d),
        [&] { tgrt_cuda::add(g, "bench", dt, x->p, y->p, o->p, T * d); });
    row("layer_norm_fwd 16384 x 768 (x f32 -> y dt)", dt, 8, 6, (double)(T * d), [&] {
      tgrt_cuda::layerNormFwd(g, "bench", F, x->p, F, gam->p, bet->p, dt, o->p, mean.p, rstd.p, T,
                              d, 1e-5f);
    });
    row("layer_norm_bwd 16384 x 768 (dy dt, x dx f32)", dt, 12, 10, (double)(T * d), [&] {
      tgrt_cuda::layerNormBwd(g, "bench", dt, y->p, F, x->p, F, gam->p, mean.p, rstd.p, dx->p,
                              dg->p, db->p, T, d);
    });
    row("gelu_fwd 16384 x 3072", dt, 8, 4, (double)(T * H),
        [&] { tgrt_cuda::geluFwd(g, "bench", dt, h1->p, h2->p, T * H); });
    row("gelu_bwd 16384 x 3072", dt, 12, 6, (double)(T * H),
        [&] { tgrt_cuda::geluBwd(g, "bench", dt, h1->p, h2->p, h2->p, T * H); });
    row("bias_grad 16384 x 3072", dt, 4, 2, (double)(T * H),
        [&] { tgrt_cuda::biasGrad(g, "bench", dt, h1->p, db->p, T, H); });
    // The head-dim-128 shape's MLP (d_ff 4096; h1 holds T x 4 d of f32, so 4096 bf16 fit).
    if (dt == B)
      row("bias_grad 16384 x 4096", dt, 4, 2, (double)(T * 4096),
          [&] { tgrt_cuda::biasGrad(g, "bench", dt, h1->p, db->p, T, 4096); });
    ceRows(V);
    // The 16-bit cross-entropy's two variants across vocabularies (the default's rule,
    // tgrt_cuda::ceVariantFor: 7 while 4 rows per SM fit in 7/8 of L2; on an H100 / H200
    // reporting 50 MiB of L2 up to V 43442, 60 MiB up to 52130): fwd_bwd in place, the form a training step runs. Rows "... sweep ...";
    // TGRT_KERNEL_BENCH_ONLY=sweep runs only them.
    if (dt == B)
      for (int64_t vocab : {int64_t(16384), int64_t(24576), int64_t(32000), int64_t(36864),
                            int64_t(40960), int64_t(45056), int64_t(49152), int64_t(65536)})
        for (int fast : {6, 7}) {
          const int before = tgrt_cuda::setCeFast(g, fast);
          const std::string name = "cross_entropy_fwd_bwd sweep 16384 x " +
                                   std::to_string(vocab) + " v" + std::to_string(fast) +
                                   (tgrt_cuda::ceAutoVariant(g, vocab, 2) == fast
                                        ? " (default)"
                                        : "");
          row(name.c_str(), dt, 8, 4, (double)T * vocab, [&] {
            tgrt_cuda::crossEntropyFwdBwd(g, "bench", dt, logits->p, targets.p, (float*)loss->p,
                                          dloss.p, logits->p, T, vocab, -100);
          });
          tgrt_cuda::setCeFast(g, before);
        }
    row("cast f32 -> dt 124M (weights)", dt, 8, 6, (double)P,
        [&] { tgrt_cuda::cast(g, "bench", F, p->p, dt, pg->p, P); });
    row("grad_norm_sq 124M", dt, 4, 2, (double)P,
        [&] { tgrt_cuda::gradNormSq(g, "bench", dt, pg->p, P, (float*)acc->p); });
    row("adamw 124M (p, g, m, v all dt)", dt, 28, 14, (double)P, [&] {
      tgrt_cuda::adamw(g, "bench", dt, p->p, pg->p, dt, pm->p, pv->p, P, 0.9f, 0.95f, 1e-8f, 0.1f,
                       clip.p);
    });
    if (dt == F) { // mixed precision's AdamW: f32 p, g, m, v and the bf16 working copy
      ck(cudaMemset(pm->p, 0x3c, P * 4), "cudaMemset"); // nonzero moments, gradients and
      ck(cudaMemset(pv->p, 0x3c, P * 4), "cudaMemset"); // values (0x3c3c3c3c ~ 0.0115): the
      ck(cudaMemset(pg->p, 0x3c, P * 4), "cudaMemset"); // divisions' common path
      ck(cudaMemset(p->p, 0x3c, P * 4), "cudaMemset");
      row("adamw_wc 124M (f32 p, g, m, v; bf16 copy; nonzero)", dt, 30, 30, (double)P, [&] {
        tgrt_cuda::adamw(g, "bench", F, p->p, pg->p, F, pm->p, pv->p, P, 0.9f, 0.95f, 1e-8f, 0.1f,
                         clip.p, B, logits->p); // (the copy: 249 MB, in the logits' buffer)
      });
      row("adamw_wc 124M f64 math (TGRT_ADAMW_MATH=f64)", dt, 30, 30, (double)P, [&] {
        tgrt_cuda::setAdamwF32(g, false);
        tgrt_cuda::adamw(g, "bench", F, p->p, pg->p, F, pm->p, pv->p, P, 0.9f, 0.95f, 1e-8f, 0.1f,
                         clip.p, B, logits->p);
        tgrt_cuda::setAdamwF32(g, true);
      });
    }
    flops("matmul 16384 x 3072 x 768 (MLP up)", dt, 2.0 * T * H * d, [&] {
      tgrt_cuda::matmul(g, "bench", dt, x->p, w->p, h1->p, 1, T, H, d, 0, 0, 0, 0, 0, 1.0f, 0.0f);
    });
    flops("matmul_bias 16384 x 3072 x 768", dt, 2.0 * T * H * d, [&] {
      tgrt_cuda::matmulBias(g, "bench", dt, x->p, w->p, bias->p, h1->p, T, H, d, 0, 0, 1.0f);
    });
    for (bool epi : {true, false}) {
      tgrt_cuda::setGeluEpilogue(g, epi);
      flops(epi ? "matmul_bias_gelu 16384 x 3072 x 768 (GELU epilogue)"
                : "matmul_bias_gelu 16384 x 3072 x 768 (own GELU)",
            dt, 2.0 * T * H * d, [&] {
              tgrt_cuda::matmulBiasGelu(g, "bench", dt, x->p, w->p, bias->p, h1->p, h2->p, T, H,
                                        d, 0, 0, 1.0f);
            });
    }
    tgrt_cuda::setGeluEpilogue(g, dt != F); // the context's default without TGRT_TF32
    (void)es;
  }
}

/// --bench-gemm, second table: SwiGLU's backward fused into the GEMM that makes its dy (the
/// MLP's down projection's input gradient, dy [m, n] = dz [m, k] W [n, k]^T, f = n) against
/// the separate calls: cuBLASLt's tuned GEMM (or the own epilogue-warpgroup GEMM) storing dy,
/// then tgrt_swiglu_bwd reading it with x [m, 2n]; bf16, b [n, k] (the layout of the
/// compiled step's dgrad). Timed as benchOwnGemm (queued calls, 5 alternating rounds, the
/// median round and the rounds' spread). Shapes: Llama 3.2 1B and SmolLM2-135M at their
/// examples' micro-batches.
void benchSwigluEpilogue(Contexts& c, int reps) {
  tgrt_cuda::Context* g = c.gpu;
  if (!tgrt_cuda::ownGemmAvailable(g)) return;
  tgrt_cuda::setOwnGemm(g, 0);
  using E = tgrt_cuda::GemmEpilogue;
  using S = tgrt_cuda::GemmSchedule;
  struct Shape { const char* what; int64_t m, n, k; };
  const Shape shapes[] = {{"Llama 3.2 1B", 8192, 8192, 2048}, {"SmolLM2-135M", 16384, 1536, 576}};
  const char* cols[] = {"cuBLASLt + swiglu_bwd", "own epi wg + swiglu_bwd", "own epi wg fused",
                        "own cluster fused"};
  constexpr int kCols = 4, kRounds = 5;
  std::printf("\nSwiGLU backward in the dgrad GEMM's epilogue, bf16, b [n, k]; ms (TFLOP/s of "
              "the GEMM) spread, as above\n%-14s %-17s", "shape", "m x n x k");
  for (const char* col : cols) std::printf(" %-25s", col);
  std::printf(" %12s\n", "fused diffs");
  const int32_t dt = TGRT_BF16;
  for (const Shape& sh : shapes) {
    const size_t mn = (size_t)(sh.m * sh.n);
    Rng rng(12);
    DevT a(rng.tensor(dt, (size_t)(sh.m * sh.k))), b(rng.tensor(dt, (size_t)(sh.n * sh.k))),
        x(rng.tensor(dt, 2 * mn)), dy(dt, mn), dx(dt, 2 * mn), dx2(dt, 2 * mn);
    auto run = [&](int v) {
      if (v == 0) {
        tgrt_cuda::matmul(g, "bench", dt, a.p, b.p, dy.p, 1, sh.m, sh.n, sh.k, 0, 1, 0, 0, 0, 1.0f,
                          0.0f);
        tgrt_cuda::swigluBwd(g, "bench", dt, x.p, dy.p, dx.p, sh.m, sh.n);
      } else if (v == 1) {
        tgrt_cuda::gemmBf16(g, "bench", a.p, b.p, nullptr, nullptr, dy.p, sh.m, sh.n, sh.k, 1,
                            1.0f, E::None, S::PersistentEpilogue);
        tgrt_cuda::swigluBwd(g, "bench", dt, x.p, dy.p, dx.p, sh.m, sh.n);
      } else {
        tgrt_cuda::gemmBf16(g, "bench", a.p, b.p, nullptr, x.p, dx2.p, sh.m, sh.n, sh.k, 1, 1.0f,
                            E::SwigluBwd, v == 2 ? S::PersistentEpilogue : S::ClusterEpilogue);
      }
    };
    run(1); // the separate own calls, then the fused: the same bits
    run(2);
    const size_t diffs = bitDiffs(dx.raw(), dx2.raw());
    run(0);
    std::vector<float> t[kCols];
    for (int round = 0; round < kRounds; ++round)
      for (int v = 0; v < kCols; ++v) t[v].push_back(timeQueuedMs(g, reps, [&] { run(v); }));
    const double flop = 2.0 * (double)sh.m * (double)sh.n * (double)sh.k;
    std::printf("%-14s %-17s", sh.what,
                fmt("%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k).c_str());
    for (int v = 0; v < kCols; ++v) {
      std::sort(t[v].begin(), t[v].end());
      const double med = t[v][kRounds / 2];
      char cell[48];
      std::snprintf(cell, sizeof cell, "%.4f (%.0f) %.1f%%", med, flop / med / 1e9,
                    100.0 * (t[v].back() - t[v].front()) / med);
      std::printf(" %-25s", cell);
    }
    std::printf(" %12zu\n", diffs);
  }
  tgrt_cuda::setOwnGemm(g, 1);
}

/// --bench-gemm: the own Hopper GEMM (gemmBf16: the persistent 128 x 256 schedules, with and
/// without the epilogue warpgroup and 2-block clusters, b [n, k] and [k, n]) against the
/// runtime's cuBLASLt path (tuned algorithms, TGRT_OWN_GEMM off; matmul, matmulBias,
/// matmulBiasGelu) at the forward GEMMs of GPT-2 small, of the head-dim-128 example and the MLP
/// GEMMs of Llama 3.2 1B (4 x 2048 tokens: the SwiGLU projections and the dgrad into d_ff), bf16.
/// Each of 5 rounds times every variant (`reps` calls queued back to back, timeQueuedMs: the
/// GPU's time per call, host work overlapped as in a training step), in turn; a cell gives
/// the median round's ms, its TFLOP/s and the rounds' spread ((max - min) / median); the
/// last column the own GEMM's host ms per call (the tensor maps and the launch: what a step
/// run call by call, TGRT_CUDA_GRAPH=0, would wait for when it exceeds the kernel's time).
/// The own outputs' largest relative difference from cuBLASLt's is printed beside them.
/// TGRT_GEMM_BENCH_ONLY=TEXT: only the shapes whose name holds TEXT (for profilers).
/// TGRT_GEMM_BENCH_REPS=N: N calls per timing instead of `reps`. TGRT_GEMM_BENCH_POWER=1: a
/// second line per shape with each column's energy per call (NVML's energy counter over the
/// median round's calls, J) and the SM clock at that round's end (MHz): at the board's power
/// limit a kernel that spends more energy per call runs at a lower clock.
void benchOwnGemm(Contexts& c, int reps) {
  tgrt_cuda::Context* g = c.gpu;
  if (!tgrt_cuda::ownGemmAvailable(g)) {
    std::printf("gemm bench: skipped (needs compute capability 9.0)\n");
    return;
  }
  if (const char* env = std::getenv("TGRT_GEMM_BENCH_REPS"))
    if (std::atoi(env) > 0) reps = std::atoi(env);
  const char* powerEnv = std::getenv("TGRT_GEMM_BENCH_POWER");
  const bool power = powerEnv && std::strcmp(powerEnv, "1") == 0;
  tgrt_cuda::setOwnGemm(g, 0); // the cuBLASLt columns are cuBLASLt's
  using E = tgrt_cuda::GemmEpilogue;
  using S = tgrt_cuda::GemmSchedule;
  struct Shape { const char* what; int64_t m, n, k; E epi; };
  const Shape shapes[] = {
      {"GPT-2 qkv", 16384, 2304, 768, E::Bias},      {"GPT-2 attn proj", 16384, 768, 768, E::Bias},
      {"GPT-2 MLP up +GELU", 16384, 3072, 768, E::BiasGelu},
      {"GPT-2 MLP down", 16384, 768, 3072, E::Bias},  {"GPT-2 lm_head chunk", 8192, 50304, 768, E::None},
      {"hd128 qkv", 16384, 3072, 1024, E::Bias},     {"hd128 MLP up +GELU", 16384, 4096, 1024, E::BiasGelu},
      {"hd128 MLP down", 16384, 1024, 4096, E::Bias}, {"hd128 lm_head chunk", 8192, 32000, 1024, E::None},
      {"Llama 1B MLP fc", 8192, 16384, 2048, E::None},
      {"Llama 1B dh (down dgrad)", 8192, 8192, 2048, E::None},
      {"Llama 1B MLP down", 8192, 2048, 8192, E::None},
      {"square 8192", 8192, 8192, 8192, E::None}};
  // Columns: cuBLASLt and the own schedules with b [n, k] (t01), then cuBLASLt and the
  // persistent schedule with b [k, n] (t00, the layout of tgc's compiled forward GEMMs).
  struct Col { const char* name; bool own; S sched; int32_t tb; };
  const Col cols[] = {{"cuBLASLt t01", false, S::PingPong, 1},
                      {"persist t01", true, S::Persistent256, 1},
                      {"epi wg t01", true, S::PersistentEpilogue, 1},
                      {"cluster 256 t01", true, S::Cluster256, 1},
                      {"cuBLASLt t00", false, S::PingPong, 0},
                      {"persist t00", true, S::Persistent256, 0},
                      {"epi wg t00", true, S::PersistentEpilogue, 0},
                      {"cluster 256 t00", true, S::Cluster256, 0}};
  constexpr int kCols = (int)(sizeof cols / sizeof cols[0]);
  constexpr int kRounds = 5;
  std::printf("\nown GEMM (gemm_bf16) against cuBLASLt, bf16; ms (TFLOP/s) spread: GPU time per "
              "call of %d calls queued back to back, median of %d alternating rounds, (max - "
              "min) / median of the rounds; max diff: the own outputs against cuBLASLt's, same "
              "layout; own host ms: host time per own call (max over its columns)\n",
              reps, kRounds);
  std::printf("%-20s %-17s", "shape", "m x n x k");
  for (const Col& col : cols) std::printf(" %-21s", col.name);
  std::printf(" %9s %12s\n", "max diff", "own host ms");
  const int32_t dt = TGRT_BF16;
  const char* only = std::getenv("TGRT_GEMM_BENCH_ONLY"); // a shape name's substring
  for (const Shape& sh : shapes) {
    if (only && *only && !std::strstr(sh.what, only)) continue;
    const size_t mn = (size_t)(sh.m * sh.n);
    Rng rng(11);
    DevT a(rng.tensor(dt, (size_t)(sh.m * sh.k))), b(rng.tensor(dt, (size_t)(sh.n * sh.k))),
        bias(rng.tensor(dt, (size_t)sh.n)), pre(dt, mn), out(dt, mn), pre2(dt, mn), out2(dt, mn);
    auto run = [&](const Col& col) {
      if (col.own) {
        tgrt_cuda::gemmBf16(g, "bench", a.p, b.p, bias.p, pre2.p, out2.p, sh.m, sh.n, sh.k, col.tb,
                            1.0f, sh.epi, col.sched);
      } else if (sh.epi == E::None) {
        tgrt_cuda::matmul(g, "bench", dt, a.p, b.p, out.p, 1, sh.m, sh.n, sh.k, 0, col.tb, 0, 0, 0,
                          1.0f, 0.0f);
      } else if (sh.epi == E::Bias) {
        tgrt_cuda::matmulBias(g, "bench", dt, a.p, b.p, bias.p, out.p, sh.m, sh.n, sh.k, 0, col.tb,
                              1.0f);
      } else {
        tgrt_cuda::matmulBiasGelu(g, "bench", dt, a.p, b.p, bias.p, pre.p, out.p, sh.m, sh.n, sh.k,
                                  0, col.tb, 1.0f);
      }
    };
    // Agreement first (also warms every path: the tuning runs here).
    double diff = 0.0;
    for (int v = 0; v < kCols; ++v) {
      run(cols[v]);
      if (cols[v].own) diff = std::max(diff, relErr(out2.f(), out.f()));
    }
    std::vector<float> t[kCols];
    // Per column and round: (ms, J per call, MHz at the end) when TGRT_GEMM_BENCH_POWER=1.
    std::vector<std::array<double, 3>> pw[kCols];
    std::string why;
    double ownHostMs = 0.0;
    for (int round = 0; round < kRounds; ++round)
      for (int v = 0; v < kCols; ++v) {
        tgrt_cuda::PowerSample p0, p1;
        const bool sampled = power && tgrt_cuda::powerSample(0, p0, why);
        double hostMs = 0.0;
        t[v].push_back(timeQueuedMs(g, reps, [&] { run(cols[v]); }, &hostMs));
        if (cols[v].own) ownHostMs = std::max(ownHostMs, hostMs);
        if (sampled && tgrt_cuda::powerSample(0, p1, why))
          pw[v].push_back({t[v].back(), (p1.energyJ - p0.energyJ) / reps, p1.smMhz});
      }
    const double flop = 2.0 * (double)sh.m * (double)sh.n * (double)sh.k;
    std::printf("%-20s %-17s", sh.what,
                fmt("%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k).c_str());
    for (int v = 0; v < kCols; ++v) {
      std::sort(t[v].begin(), t[v].end());
      const double med = t[v][kRounds / 2];
      char cell[48];
      std::snprintf(cell, sizeof cell, "%.4f (%.0f) %.1f%%", med, flop / med / 1e9,
                    100.0 * (t[v].back() - t[v].front()) / med);
      std::printf(" %-21s", cell);
    }
    std::printf(" %9.2e %12.4f\n", diff, ownHostMs);
    if (power) {
      std::printf("%-20s %-17s", "  J/call, SM MHz", "");
      for (int v = 0; v < kCols; ++v) {
        std::sort(pw[v].begin(), pw[v].end());
        char cell[48] = "-";
        if (!pw[v].empty()) {
          const auto& m = pw[v][pw[v].size() / 2];
          std::snprintf(cell, sizeof cell, "%.4f J %4.0f MHz", m[1], m[2]);
        }
        std::printf(" %-21s", cell);
      }
      std::printf("%s\n", pw[0].empty() ? (" (no NVML: " + why + ")").c_str() : "");
    }
    std::fflush(stdout);
  }
  tgrt_cuda::setOwnGemm(g, 1);
}

/// The end of a check run: the failed rows again (a "failures:" list, when any), then
/// "<label>N passed, M failed" (label "sweep: ", "gemm: ", ...; "" for the whole check).
/// Returns the count of failed rows.
int reportRows(const char* label) {
  int failed = 0;
  for (const Row& r : g_rows) failed += !r.pass;
  if (failed) {
    std::printf("\nfailures:\n");
    for (const Row& r : g_rows)
      if (!r.pass)
        std::printf("%-34s %-42s %11.3e  FAIL\n", r.kernel.c_str(), r.shape.c_str(), r.err);
  }
  std::printf("\n%s%d passed, %d failed\n", label, (int)g_rows.size() - failed, failed);
  std::fflush(stdout);
  return failed;
}

/// Destroys both contexts of the run (the end-of-run memory lines come from here).
void destroyContexts(Contexts& c) {
  tgrt_cuda::destroyContext(c.gpu);
  tgrt_ctx_destroy(c.cpu);
}

} // namespace

/// Split master values (tgrt_param.split, tgrt_adamw_split; Kernels.cu splitOne, tgrt.h
/// tgrt_split_value): a run of f32 values held as its bf16 working copy (hi) and 16-bit low
/// halves (lo), split on the host as the driver's uploadValue splits them.
/// (1) The split rule: tgrt_split_join gives every value back but those exactly halfway
///     between two bf16 values and rounded down (two planted), which move one ulp towards
///     hi; hi is the value's RNE bf16. A skipped step (clip[1] not finite) changes nothing.
/// (2) Two updates with bf16 gradients against tgrt_adamw_wc_g (an f32 value and its copy):
///     joined values within 4 ulps (of the larger of the start value and the result; only
///     where a value came halfway: 1 ulp, grown by the update's rounding), m, v and the
///     copies bit for bit but at those values.
/// (3) The CPU reference's tgrt_adamw_split (double arithmetic) against the GPU's, with bf16
///     and f32 gradients: joined values, m and v within f32's tolerance.
/// (4) f32 gradients on the GPU: as tgrt_adamw_wc_g with f32 gradients, (2)'s rule.
void checkAdamwSplit(Contexts& c, Raw p, const Raw& m, const Raw& v, const Raw& glow,
                     const float* clip, const Raw& clipHost, int64_t n) {
  auto bitsOf = [](const Raw& r, size_t i) {
    uint32_t u;
    std::memcpy(&u, r.b.data() + 4 * i, 4);
    return u;
  };
  auto setBits = [](Raw& r, size_t i, uint32_t u) { std::memcpy(r.b.data() + 4 * i, &u, 4); };
  // Two planted halfway values: 1 + 2^-8 (between the even 0x3f80 and 0x3f81: rounded down,
  // so it moves) and -(1 + 3 x 2^-8) (between 0xbf81 and the even 0xbf82: rounded up, exact).
  setBits(p, 5, 0x3f808000u);
  setBits(p, 6, 0xbf818000u);
  auto splitHost = [&](const Raw& vals, Raw& hi, Raw& lo) {
    hi = zerosOf(TGRT_BF16, vals.n());
    lo = zerosOf(TGRT_BF16, vals.n());
    const Vec f = decode(vals);
    for (size_t i = 0; i < f.size(); ++i) {
      uint16_t h, l;
      tgrt_split_value(f[i], &h, &l);
      std::memcpy(hi.b.data() + 2 * i, &h, 2);
      std::memcpy(lo.b.data() + 2 * i, &l, 2);
    }
  };
  auto joinHost = [&](const Raw& hi, const Raw& lo) {
    Raw r = zerosOf(TGRT_F32, hi.n());
    for (size_t i = 0; i < hi.n(); ++i) {
      uint16_t h, l;
      std::memcpy(&h, hi.b.data() + 2 * i, 2);
      std::memcpy(&l, lo.b.data() + 2 * i, 2);
      const float f = tgrt_split_join(h, l);
      std::memcpy(r.b.data() + 4 * i, &f, 4);
    }
    return r;
  };
  // The largest |a - b| in f32 ulps of the larger of |start| and |b| (a halfway value moved
  // by one ulp of its size keeps that absolute difference when the update shrinks it, so
  // the ulps of the result alone would grow); `count` the elements that differ at all.
  auto ulps = [&](const Raw& a, const Raw& b, const Raw& start, size_t* count) {
    const Vec fa = decode(a), fb = decode(b), f0 = decode(start);
    double worst = 0;
    *count = 0;
    for (size_t i = 0; i < fa.size(); ++i) {
      if (bitsOf(a, i) == bitsOf(b, i)) continue;
      ++*count;
      int e = 0;
      std::frexp(std::max(std::fabs(f0[i]), std::fabs(fb[i])), &e);
      worst = std::max(worst, std::fabs((double)fa[i] - (double)fb[i]) / std::ldexp(1.0, e - 24));
    }
    return worst;
  };
  Raw hi0, lo0;
  splitHost(p, hi0, lo0);
  // (1)
  {
    Raw moved = p;
    size_t halfway = 0;
    for (size_t i = 0; i < p.n(); ++i) {
      float f;
      const uint32_t u = bitsOf(p, i);
      std::memcpy(&f, &u, 4);
      if (u - ((uint32_t)tgrt_bf16_from_float(f) << 16) == 0x8000u) {
        setBits(moved, i, u - 1);
        ++halfway;
      }
    }
    record("adamw split: join(split(p)) = p but halfway", fmt("n%lld, %zu halfway", (long long)n, halfway),
           (double)(bitDiffs(joinHost(hi0, lo0), moved) + (halfway == 0)), 0.0);
    record("adamw split: hi = bf16(p)", fmt("n%lld", (long long)n),
           (double)bitDiffs(hi0, encode(decode(p), TGRT_BF16)), 0.0);
    const Raw badClip = encode(Vec{0.0f, std::numeric_limits<float>::quiet_NaN()}, TGRT_F32);
    DevT bad(badClip), h(hi0), l(lo0), gl(glow), mm(m), vv(v);
    tgrt_cuda::adamwSplit(c.gpu, "check", h.p, l.p, TGRT_BF16, gl.p, TGRT_F32, mm.p, vv.p, n, 0.9f,
                          0.95f, 1e-8f, 0.1f, reinterpret_cast<const float*>(bad.p));
    record("adamw split: skipped step changes nothing", fmt("n%lld", (long long)n),
           (double)(bitDiffs(h.raw(), hi0) + bitDiffs(l.raw(), lo0) + bitDiffs(mm.raw(), m) +
                    bitDiffs(vv.raw(), v)),
           0.0);
  }
  // (2) and (4)
  for (int32_t gdt : {TGRT_BF16, TGRT_F32}) {
    const Raw g = gdt == TGRT_BF16 ? glow : encode(decode(glow), TGRT_F32);
    DevT gl(g), h(hi0), l(lo0), ms(m), vs(v), pa(p), ma(m), va(v), wa(TGRT_BF16, (size_t)n);
    wa.poison();
    for (int k = 0; k < 2; ++k) {
      tgrt_cuda::adamwG(c.gpu, "check", TGRT_F32, pa.p, gdt, gl.p, TGRT_F32, ma.p, va.p, n, 0.9f,
                        0.95f, 1e-8f, 0.1f, clip, TGRT_BF16, wa.p);
      tgrt_cuda::adamwSplit(c.gpu, "check", h.p, l.p, gdt, gl.p, TGRT_F32, ms.p, vs.p, n, 0.9f,
                            0.95f, 1e-8f, 0.1f, clip);
    }
    size_t moved = 0;
    const Raw got = joinHost(h.raw(), l.raw()), ref = pa.raw(), gw = h.raw(), rw = wa.raw();
    const double worst = ulps(got, ref, p, &moved);
    size_t copyDiffs = 0;
    for (size_t i = 0; i < (size_t)n; ++i)
      if (bitsOf(got, i) == bitsOf(ref, i) && std::memcmp(gw.b.data() + 2 * i, rw.b.data() + 2 * i, 2))
        ++copyDiffs;
    const std::string gs = gdt == TGRT_BF16 ? "" : ", f32 g";
    record("adamw split: 2 updates = adamw_wc_g (ulps)" + gs,
           fmt("n%lld, %zu values differ", (long long)n, moved), worst, 4.0);
    record("adamw split: 2 updates m,v,copies = adamw_wc_g" + gs, fmt("n%lld", (long long)n),
           (double)(bitDiffs(ms.raw(), ma.raw()) + bitDiffs(vs.raw(), va.raw()) + copyDiffs +
                    (moved > 64)),
           0.0);
    // (3) The CPU reference, one update.
    Raw hc = hi0, lc = lo0, mc = m, vc = v;
    tgrt_adamw_split(c.cpu, "check", hc.data(), lc.data(), gdt, g.data(), TGRT_F32, mc.data(),
                     vc.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f,
                     reinterpret_cast<const float*>(clipHost.data()));
    DevT h1(hi0), l1(lo0), m1(m), v1(v);
    tgrt_cuda::adamwSplit(c.gpu, "check", h1.p, l1.p, gdt, gl.p, TGRT_F32, m1.p, v1.p, n, 0.9f,
                          0.95f, 1e-8f, 0.1f, clip);
    record("adamw split: CPU reference p,m,v" + gs, fmt("n%lld", (long long)n),
           std::max({relErr(joinHost(h1.raw(), l1.raw()), joinHost(hc, lc)),
                     relErr(m1.raw(), mc), relErr(v1.raw(), vc)}),
           tolFor(TGRT_F32));
  }
}

/// checkAdamwSplit on data of its own (n 123457, step 3, lr 3e-4, clip scale 0.5).
void checkAdamwSplitAlone(Contexts& c, Rng& rng) {
  const int64_t n = 123457;
  const Raw p = rng.tensor(TGRT_F32, (size_t)n), m = rng.tensor(TGRT_F32, (size_t)n, -0.01f, 0.01f),
            v = rng.tensor(TGRT_F32, (size_t)n, 1e-6f, 1e-4f);
  const Raw glow = encode(decode(rng.tensor(TGRT_F32, (size_t)n, -0.05f, 0.05f)), TGRT_BF16);
  const Raw clipHost = encode(Vec{2.0f, 0.5f}, TGRT_F32);
  DevT clip(clipHost);
  tgrt_cuda::setStep(c.gpu, 3);
  tgrt_cuda::setLr(c.gpu, 3e-4f);
  tgrt_set_step(c.cpu, 3);
  tgrt_set_lr(c.cpu, 3e-4f);
  checkAdamwSplit(c, p, m, v, glow, reinterpret_cast<const float*>(clip.p), clipHost, n);
}

int main(int argc, char** argv) {
  bool quick = false, bench = true, checks = true, sweep = false, kernelsOnly = false,
       gemmOnly = false, llamaOnly = false, cudnnOnly = false, gemmChecks = false;
  std::string dumpDir;
  uint64_t seed = std::random_device{}() ^ ((uint64_t)std::chrono::steady_clock::now()
                                                .time_since_epoch()
                                                .count()
                                            << 1);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-bench") bench = false;
    else if (a == "--bench-only") checks = false;
    else if (a == "--bench-kernels") checks = false, kernelsOnly = true;
    else if (a == "--bench-gemm") checks = false, gemmOnly = true;
    else if (a == "--sweep") sweep = true;
    else if (a == "--llama") llamaOnly = true;
    else if (a == "--gemm") gemmChecks = true;
    else if (a == "--cudnn") cudnnOnly = true;
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--dump" && i + 1 < argc) dumpDir = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--no-bench | --bench-only | --bench-kernels | "
                   "--bench-gemm] [--sweep] "
                   "[--llama] [--cudnn] [--gemm] [--seed N] [--dump DIR]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!dumpDir.empty()) {
    const std::string manifest = dumpDir + "/manifest.txt";
    FILE* f = std::fopen(manifest.c_str(), "w"); // truncate
    if (!f) die("cannot write (does the directory exist?)", manifest.c_str());
    std::fclose(f);
  }

  Contexts c;
  std::memset(&c.model, 0, sizeof c.model);
  c.model.name = "cuda-check";
  c.model.persistent_bytes = 1 << 20;
  c.model.arena_bytes = 1 << 20;
  c.model.workspace_bytes = 64ll << 20;
  c.model.lr = 1e-3f;
  c.cpu = tgrt_ctx_create(&c.model);
  c.gpu = tgrt_cuda::createContext(&c.model);
  if (!c.cpu || !c.gpu) die("context", "could not create the CPU or the CUDA context");
  // Kernels are checked with tuned GEMM algorithms on a GPU (no cache file: nothing of the
  // user's is written), with the heuristic's first in the emulator (there every algorithm is
  // the same loop, and timing each would only cost time); checkGemmTune covers the cache.
#ifdef TGRT_CUDA_EMULATE
  tgrt_cuda::setGemmAutotune(c.gpu, 0, nullptr);
#else
  tgrt_cuda::setGemmAutotune(c.gpu, 1, nullptr);
#endif
  std::printf("tgrt-cuda-check: device %s, seed %llu%s\n", tgrt_cuda::deviceName(c.gpu),
              (unsigned long long)seed, quick ? ", quick" : "");
  Rng rng(seed);
  if (sweep) {
    sweepAttention(c, rng, !quick);
    const int failed = reportRows("sweep: ");
    destroyContexts(c);
    return failed ? 1 : 0;
  }
  if (!checks) {
    if (gemmOnly || kernelsOnly) {
      if (gemmOnly) {
        benchOwnGemm(c, 20);
        benchSwigluEpilogue(c, 20);
      }
      else benchKernels(c, 20);
      destroyContexts(c);
      return 0;
    }
    benchAttention(c, rng, 1024, 64, 16 * 12, 20);
    benchAttentionLp(c, rng, TGRT_BF16, 1024, 64, 16 * 12, 20);
    benchAttentionLp(c, rng, TGRT_F16, 1024, 64, 16 * 12, 20);
    benchAttentionTf32(c, rng, 1024, 64, 16 * 12, 20);
#ifdef TGRT_HAVE_CUDNN
    benchAttentionCudnn(c, rng, 20);
#endif
    benchKernels(c, 20);
    destroyContexts(c);
    return 0;
  }
  std::printf("%-34s %-42s %11s  %s\n", "kernel", "shape", "max rel err", "result");

  if (cudnnOnly) { // the cuDNN attention checks (the data of a full run with this seed), timings
#ifdef TGRT_HAVE_CUDNN
    Rng own(seed ^ 0x6375646e6eull);
    checkAttentionCudnns(c, own, quick);
#else
    std::printf("this tgrt-cuda-check was built without cuDNN (TGRT_HAVE_CUDNN)\n");
#endif
    const int failed = reportRows("cudnn: ");
#ifdef TGRT_HAVE_CUDNN
    if (bench) benchAttentionCudnn(c, own, 20);
#endif
    destroyContexts(c);
    return failed ? 1 : 0;
  }
  if (gemmChecks) { // the same data as the own GEMM's checks of a full run with this seed
    Rng own(seed ^ 0x3c6ef372fe94f82bull);
    checkOwnGemm(c, own, quick);
    const int failed = reportRows("gemm: ");
    destroyContexts(c);
    return failed ? 1 : 0;
  }
  if (llamaOnly) { // the same data as the Llama checks of a full run with this seed
    Rng own(seed ^ 0x4c6c616d61ull);
    checkLlama(c, own, quick);
    Rng split(seed ^ 0x73706c6974ull);
    checkAdamwSplitAlone(c, split);
    const int failed = reportRows("llama: ");
    destroyContexts(c);
    return failed ? 1 : 0;
  }
  checkContext(c, rng);
  for (int32_t dt : kDtypes) {
    checkEmbedding(c, rng, dt);
    checkPositional(c, rng, dt);
    checkElementwise(c, rng, dt);
    checkDropout(c, rng, dt);
  }
  checkCast(c, rng);
  {
    Rng own(seed ^ 0x9e3779b97f4a7c15ull); // its own stream: the other checks' data unchanged
    checkMatmulBiasResidual(c, own);
    for (int32_t dt : kDtypes) checkLinearCrossEntropy(c, own, dt);
  }
  checkAddMixed(c, rng);
  checkMatmulAcc(c, rng);
  checkMatmulWgrad(c, rng);
  {
    Rng own(seed ^ 0x452821e638d01377ull); // its own stream: the other checks' data unchanged
    checkMatmulLda(c, own);
  }
  {
    Rng own(seed ^ 0x13198a2e03707344ull); // its own stream: the other checks' data unchanged
    checkGemmTune(c, own);
  }
  {
    Rng own(seed ^ 0x243f6a8885a308d3ull); // its own stream: the other checks' data unchanged
    checkRunGraph(c, own);
  }
  {
    Rng own(seed ^ 0x73706c6974ull); // its own stream: the other checks' data unchanged
    checkAdamwSplitAlone(c, own);
  }
  checkLayerNorms(c, rng);
  for (int32_t dt : kDtypes) {
    checkMatmul(c, rng, dt);
    checkMatmulBias(c, rng, dt);
    checkMatmulBiasGelu(c, rng, dt);
    checkMatmulDgeluBgrad(c, rng, dt);
    checkBias(c, rng, dt);
    checkSoftmax(c, rng, dt);
    checkCrossEntropy(c, rng, dt);
  }
  checkOptimizers(c, rng);
  checkTensorStats(c, rng);
  {
    Rng own(seed ^ 0x3c6ef372fe94f82bull); // its own stream: the other checks' data unchanged
    checkOwnGemm(c, own, quick);
  }

  std::vector<int64_t> ts = quick ? std::vector<int64_t>{64, 100, 256}
                                  : std::vector<int64_t>{64, 100, 256, 1024};
  for (int64_t t : ts)
    for (int64_t hd : {int64_t(32), int64_t(64), int64_t(128)})
      for (int64_t window : {int64_t(0), int64_t(1), int64_t(64)}) {
        const int64_t bh = t >= 1024 ? 2 : 3;
        // Dump a few cases for the PyTorch comparison (full and windowed).
        const bool dump = !dumpDir.empty() && hd == 64 && (t == 256 || t == 1024);
        checkAttention(c, rng, t, hd, window, bh, dump ? dumpDir : std::string());
      }
  for (int32_t dt : {TGRT_BF16, TGRT_F16})
    for (int64_t t : ts)
      for (int64_t hd : {int64_t(32), int64_t(64), int64_t(128)})
        for (int64_t window : {int64_t(0), int64_t(1), int64_t(64)})
          checkAttentionLp(c, rng, dt, t, hd, window, t >= 1024 ? 2 : 3);
  for (int64_t t : ts)
    for (int64_t hd : {int64_t(32), int64_t(64), int64_t(128)})
      for (int64_t window : {int64_t(0), int64_t(1), int64_t(64)})
        checkAttentionTf32(c, rng, t, hd, window, t >= 1024 ? 2 : 3);
  // Strided (packed qkv) layouts: f32, TF32, bf16, f16; causal, windowed and full; exact
  // packing and padded rows.
  for (int variant = 0; variant < 4; ++variant) {
    const int32_t dt = variant == 2 ? TGRT_BF16 : variant == 3 ? TGRT_F16 : TGRT_F32;
    const bool tf32 = variant == 1;
    checkAttentionPacked(c, rng, dt, tf32, 2, 2, 100, 64, 1, 0, 0);
    checkAttentionPacked(c, rng, dt, tf32, 2, 2, 100, 64, 1, 24, 8);
    checkAttentionPacked(c, rng, dt, tf32, 1, 3, 77, 32, 0, 0, 8);
    if (!quick)
      checkAttentionPacked(c, rng, dt, tf32, 2, 2, 256, 128, 1, 64, 0);
  }
  checkMatmulMisaligned(c, rng, TGRT_F32);
  checkMatmulMisaligned(c, rng, TGRT_BF16);
  {
    Rng own(seed ^ 0x4c6c616d61ull); // its own stream: the other checks' data unchanged
    checkLlama(c, own, quick);
  }
#ifdef TGRT_HAVE_CUDNN
  {
    Rng own(seed ^ 0x6375646e6eull); // its own stream: the other checks' data unchanged
    checkAttentionCudnns(c, own, quick);
  }
#endif

  const int failed = reportRows("");

  if (bench && !quick) {
    benchAttention(c, rng, 1024, 64, 16 * 12, 10);
    benchAttentionLp(c, rng, TGRT_BF16, 1024, 64, 16 * 12, 10);
    benchAttentionLp(c, rng, TGRT_F16, 1024, 64, 16 * 12, 10);
    benchAttentionTf32(c, rng, 1024, 64, 16 * 12, 10);
#ifdef TGRT_HAVE_CUDNN
    benchAttentionCudnn(c, rng, 10);
#endif
    benchKernels(c, 10);
  }
  destroyContexts(c);
  return failed ? 1 : 0;
}
