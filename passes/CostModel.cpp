//===- CostModel.cpp - predicted time of a compiled training step -----------===//
//
// See CostModel.h for the model and docs/cost-model.md for the calibration table format.
// Plain C++ (nlohmann/json, with exceptions): built as tgc_costmodel, which the passes
// library and the calibration executables link.
//
//===----------------------------------------------------------------------------===//
#include "passes/CostModel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace mlir::tg {

namespace {

const char *kFormat = "tgc-calibration/1";

struct BadTable {
  std::string path, what; // JSON path ("$.peak.memory_bytes_per_s") and the problem
};

std::string typeName(const nlohmann::json &j) {
  return j.is_null() ? "null" : j.type_name();
}

double positive(const nlohmann::json &j, const std::string &where, bool allowZero = false) {
  if (!j.is_number())
    throw BadTable{where, std::string("expected a number") + (allowZero ? " >= 0" : " > 0") +
                              ", got " + typeName(j)};
  double v = j.get<double>();
  if (!std::isfinite(v) || v < 0 || (!allowZero && v == 0)) {
    std::ostringstream os;
    os << "expected a number" << (allowZero ? " >= 0" : " > 0") << ", got " << j.dump();
    throw BadTable{where, os.str()};
  }
  return v;
}

std::string text(const nlohmann::json &j, const std::string &where) {
  if (!j.is_string())
    throw BadTable{where, "expected a string, got " + typeName(j)};
  return j.get<std::string>();
}

const nlohmann::json &member(const nlohmann::json &obj, const std::string &key,
                             const std::string &where) {
  auto it = obj.find(key);
  if (it == obj.end())
    throw BadTable{where, "missing \"" + key + "\""};
  return *it;
}

bool isGemm(const std::string &kernel) { return kernel.rfind("tgrt_matmul", 0) == 0; }

/// Interpolates log(e) over log(r) through the points' (log r_i, log e_i).
double interpolate(std::vector<std::pair<double, double>> &curve, double logR) {
  std::sort(curve.begin(), curve.end());
  // Points of equal size: their mean log efficiency.
  std::vector<std::pair<double, double>> merged;
  for (size_t i = 0; i < curve.size();) {
    size_t j = i;
    double sum = 0;
    while (j < curve.size() && curve[j].first == curve[i].first)
      sum += curve[j++].second;
    merged.push_back({curve[i].first, sum / (double)(j - i)});
    i = j;
  }
  if (logR <= merged.front().first)
    return merged.front().second;
  if (logR >= merged.back().first)
    return merged.back().second;
  for (size_t i = 1; i < merged.size(); ++i)
    if (logR <= merged[i].first) {
      const auto &[x0, y0] = merged[i - 1];
      const auto &[x1, y1] = merged[i];
      return y0 + (y1 - y0) * (logR - x0) / (x1 - x0);
    }
  return merged.back().second;
}

} // namespace

std::string dtypeKey(const std::string &d) {
  if (d == "TGRT_F32")
    return "f32";
  if (d == "TGRT_BF16")
    return "bf16";
  if (d == "TGRT_F16")
    return "f16";
  if (d.empty())
    return "any";
  std::string s = d.rfind("TGRT_", 0) == 0 ? d.substr(5) : d;
  for (char &c : s)
    c = (char)std::tolower((unsigned char)c);
  return s;
}

std::string gemmVariant(const RuntimeCall &call) {
  if (!isGemm(call.kernel))
    return "";
  // tgrt_matmul: batch, m, n, k, trans_a, trans_b, strides; the others: m, n, k, trans_a,
  // trans_b (runtime/tgrt.h).
  size_t ta = call.kernel == "tgrt_matmul" ? 4 : 3;
  if (call.ints.size() < ta + 2)
    return "";
  std::string v;
  v += call.ints[ta] ? 't' : 'n';
  v += call.ints[ta + 1] ? 't' : 'n';
  return v;
}

bool isCollective(const std::string &k) {
  for (const char *p : {"tgrt_all_reduce", "tgrt_all_gather", "tgrt_reduce_scatter",
                        "tgrt_broadcast"})
    if (k.rfind(p, 0) == 0)
      return true;
  return false;
}

bool usesFlops(const std::string &k) {
  return isGemm(k) || k.rfind("tgrt_attention_", 0) == 0 ||
         k.rfind("tgrt_linear_cross_entropy", 0) == 0;
}

double attentionPairs(int64_t t, bool causal, int64_t w) {
  if (!causal)
    return (double)t * (double)t;
  if (w <= 0 || w >= t)
    return (double)t * (double)(t + 1) / 2.0;
  // Queries i < w see i + 1 keys, the others w.
  return (double)w * (double)(w + 1) / 2.0 + (double)(t - w) * (double)w;
}

/// The "key value" integers of a calibration point's shape ("rows 16384 d 768" -> rows, d).
static std::map<std::string, int64_t> shapeFields(const std::string &shape) {
  std::map<std::string, int64_t> f;
  std::istringstream in(shape);
  std::string key, value;
  while (in >> key >> value) {
    char *end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (end && *end == '\0')
      f[key] = v;
  }
  return f;
}

/// Whether a calibration point measured the same code path as `call` for the kernels whose
/// path depends on a shape parameter more than on bytes: a norm's row width d (runtime/cuda
/// Kernels.cu and Llama.cu: packs per lane in registers up to d 1536 at 2-byte types, then
/// an unfused dx kernel and column sums, 7.6x the time per byte at d 2048 against 768 on the
/// H200), attention's and RoPE's head dim and (grouped-query) query heads per kv head.
/// nullopt: no class for this kernel (every point of its dtype prices it).
static std::optional<bool> samePath(const RuntimeCall &call, const CalibrationPoint &p) {
  const std::string &k = call.kernel;
  const std::vector<int64_t> &v = call.ints;
  auto starts = [&](const char *prefix) { return k.rfind(prefix, 0) == 0; };
  if (starts("tgrt_layer_norm_") || starts("tgrt_add_layer_norm_") || starts("tgrt_rms_norm_")) {
    if (v.size() < 2) // rows, d
      return std::nullopt;
    auto d = p.fields.find("d");
    return d != p.fields.end() && d->second == v[1];
  }
  const bool gqa = starts("tgrt_attention_gqa_");
  const bool rope = starts("tgrt_rope");
  if (gqa || starts("tgrt_attention_fwd") || starts("tgrt_attention_bwd") || rope) {
    // attention: batch, heads, [kv_heads,] t, hd, ...; rope: batch, t, heads, kv_heads, hd.
    const size_t h = rope ? 2 : 1, hkv = rope ? 3 : 2, hd = rope ? 4 : gqa ? 4 : 3;
    if (v.size() <= hd)
      return std::nullopt;
    auto field = [&](const char *key) {
      auto it = p.fields.find(key);
      return it == p.fields.end() ? int64_t(-1) : it->second;
    };
    if (field("hd") != v[hd])
      return false;
    const int64_t heads = field("H"), kvHeads = field("Hkv");
    if ((gqa || rope) && heads > 0 && kvHeads > 0 && v[hkv] > 0)
      return heads / kvHeads == v[h] / v[hkv];
    return true;
  }
  return std::nullopt;
}

double effectiveFlops(const RuntimeCall &call) {
  const std::string &k = call.kernel;
  const std::vector<int64_t> &v = call.ints;
  auto at = [&](size_t i) { return i < v.size() ? (double)v[i] : 0.0; };
  if (k == "tgrt_matmul") // batch, m, n, k, ...
    return 2.0 * at(0) * at(1) * at(2) * at(3);
  if (isGemm(k)) // m, n, k, ...
    return 2.0 * at(0) * at(1) * at(2);
  if (k.rfind("tgrt_linear_cross_entropy", 0) == 0) // rows, d, vocab, chunk_rows, ignore_index
    return 6.0 * at(0) * at(1) * at(2);
  const bool gqa = k.rfind("tgrt_attention_gqa_", 0) == 0;
  if (k.rfind("tgrt_attention_", 0) == 0) {
    // batch, heads, [kv_heads,] t, hd, 6 or 9 strides, causal, window.
    const size_t t = gqa ? 3 : 2, c = gqa ? 14 : 10;
    if (v.size() < c + 2)
      return (double)call.flops;
    const double per = k.size() >= 4 && k.compare(k.size() - 4, 4, "_bwd") == 0 ? 10.0 : 4.0;
    return per * at(0) * at(1) * at(t + 1) * attentionPairs(v[t], v[c] != 0, v[c + 1]);
  }
  return 0.0;
}

double peakFlopsOf(const CalibrationTable &t, const std::string &dtype) {
  auto it = t.peakFlops.find(dtype);
  if (it == t.peakFlops.end())
    it = t.peakFlops.find("f32");
  return it == t.peakFlops.end() ? 0.0 : it->second;
}

double rooflineMs(const CalibrationTable &t, double flops, double bytes,
                  const std::string &dtype) {
  double p = peakFlopsOf(t, dtype);
  double f = p > 0 ? flops / p : 0.0;
  double b = t.memBytesPerS > 0 ? bytes / t.memBytesPerS : 0.0;
  return std::max(f, b) * 1e3;
}

static double predictOneCallMs(const CalibrationTable &t, const RuntimeCall &call,
                               bool *calibrated);

int kernelParamIndex(const std::string &kernel, const std::string &param) {
  // Each kernel's parameter list as written in the kernel list: "(tgrt_ctx* ctx, ...)".
  static const std::map<std::string, std::string> kParams = {
#define TGRT_KERNEL(ret, name, access, params) {#name, #params},
#include "runtime/tgrt_kernels.def"
#undef TGRT_KERNEL
  };
  auto it = kParams.find(kernel);
  if (it == kParams.end())
    return -1;
  const std::string &list = it->second;
  const size_t open = list.find('('), close = list.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return -1;
  int index = 0;
  size_t start = open + 1;
  while (start <= close) {
    size_t end = list.find(',', start);
    if (end == std::string::npos || end > close)
      end = close;
    std::string p = list.substr(start, end - start);
    while (!p.empty() && std::isspace((unsigned char)p.back()))
      p.pop_back();
    const size_t cut = p.find_last_of(" *&");
    const std::string name = cut == std::string::npos ? p : p.substr(cut + 1);
    if (index >= 2 && name == param) // after (ctx, loc)
      return index - 2;
    ++index;
    start = end + 1;
  }
  return -1;
}

/// The bias gradient a GEMM call writes beside its product, as a tgrt_bias_grad_acc call
/// (the column sums of a [rows, n] operand): tgrt_matmul_wgrad's of B = dy [k, n], in c_dt
/// (2 or 4 bytes), and tgrt_matmul_dgelu_bgrad's of its output dx [m, n], in its dtype.
/// The CUDA runtime runs them as its own column sums after the GEMM (the default since
/// 2026-11-29, results.md): 0.03-0.06 ms per call at 16384 rows, which the GEMMs' points do
/// not hold (`tgc calibrate` measures both GEMMs without a bias). nullopt without a bias:
/// the trace records the call's dbias argument passed NULL (RuntimeCall::nullArgs).
static std::optional<RuntimeCall> biasSumsOf(const RuntimeCall &call) {
  const bool wgrad = call.kernel == "tgrt_matmul_wgrad";
  if ((!wgrad && call.kernel != "tgrt_matmul_dgelu_bgrad") || call.ints.size() < 3)
    return std::nullopt;
  const int64_t m = call.ints[0], n = call.ints[1], k = call.ints[2];
  const std::string dt = dtypeKey(call.dtype);
  const int64_t e = dt == "bf16" || dt == "f16" ? 2 : 4;
  // The dbias argument passed NULL: no bias gradient in this call.
  static const int kWgradDbias = kernelParamIndex("tgrt_matmul_wgrad", "dbias");
  static const int kDgeluDbias = kernelParamIndex("tgrt_matmul_dgelu_bgrad", "dbias");
  const int dbiasArg = wgrad ? kWgradDbias : kDgeluDbias;
  assert(dbiasArg >= 0 && "tgrt_kernels.def names the bias gradient dbias");
  const bool noBias =
      std::find(call.nullArgs.begin(), call.nullArgs.end(), dbiasArg) != call.nullArgs.end();
  if (noBias || n <= 0 || (wgrad ? k : m) <= 0)
    return std::nullopt;
  RuntimeCall sums;
  sums.function = call.function;
  sums.kernel = "tgrt_bias_grad_acc";
  sums.dtype = call.dtype;
  sums.ints = {wgrad ? k : m, n};
  sums.bytesRead = e * (wgrad ? k : m) * n + 4 * n; // the operand, the f32 slot it adds into
  sums.bytesWritten = 4 * n;
  return sums;
}

double predictCallMs(const CalibrationTable &t, const RuntimeCall &call, bool *calibrated) {
  double ms = predictOneCallMs(t, call, calibrated);
  if (auto sums = biasSumsOf(call)) {
    bool cal = true;
    ms += predictOneCallMs(t, *sums, &cal) - t.callOverheadMs; // one call of the step
    if (calibrated && !cal)
      *calibrated = false;
  }
  return ms;
}

static double predictOneCallMs(const CalibrationTable &t, const RuntimeCall &call,
                               bool *calibrated) {
  // tgrt_adamw_split's first dtype argument is its gradients' (bf16); its values are f32,
  // and it is priced as the f32 tgrt_adamw_wc points are (below). tgrt_embedding_fwd_split
  // has no dtype argument: its rows are f32, priced as tgrt_embedding_fwd's f32 points.
  const std::string dt =
      call.kernel == "tgrt_adamw_split" || call.kernel == "tgrt_embedding_fwd_split"
          ? "f32"
          : dtypeKey(call.dtype);
  double bytes = (double)(call.bytesRead + call.bytesWritten);
  if (call.kernel == "tgrt_zero" && !call.ints.empty()) // (p, bytes): no access string
    bytes = std::max(bytes, (double)call.ints.front());
  const double r = rooflineMs(t, effectiveFlops(call), bytes, dt);
  const std::vector<CalibrationPoint> *pts = nullptr;
  // A kernel no table measures yet is priced by the points of the kernel it varies
  // (kPricedAs): a call that writes its output instead of adding into it, or adds into it
  // instead of writing, moves about the same bytes.
  //   tgrt_layer_norm_fwd_ones, tgrt_add_layer_norm_fwd_ones: the same kernels writing
  //     TGRT_ONES_COLUMNS more columns per row (64: 3% more bytes at d 768 with an f32
  //     input; not priced apart).
  //   tgrt_matmul_bias_lda / _gelu_lda: the same GEMMs reading A's rows lda apart.
  //   tgrt_adamw_islands: tgrt_adamw_wc's kernel with weight decay 0 on some packs (the
  //     same bytes; without a working copy the table's tgrt_adamw_wc point prices 2 bytes
  //     an element more). tgrt_adamw_wc_g: that kernel reading 2-byte gradients (its
  //     roofline has 2 bytes an element fewer). tgrt_adamw_split: that update on split
  //     master values (2 bytes an element fewer again: 26, tgrt.h tgrt_param.split).
  //   tgrt_matmul_wgrad: tgrt_matmul_acc's GEMM writing C (with a bias, the column sums of
  //     B are priced apart: biasSumsOf); tgrt_matmul_wgrad_lda: the same GEMM reading A's
  //     rows lda apart (a bias-rows layer norm's output); tgrt_matmul_acc_lda: that GEMM adding
  //     into C.
  //   tgrt_layer_norm_bwd_acc: _acc_slots' kernel writing dgamma / dbeta (the slots' only
  //     writes, LowerToEmitC planWeightGradWrites): 16 d bytes fewer of ~13 rows d.
  //   tgrt_embedding_bwd_acc: tgrt_embedding_bwd's sort and sums, added into the rows the
  //     ids name instead of clearing the table and storing them.
  //   tgrt_layer_norm_bwd_acc_bgrad: the same kernel with a third column sum in registers
  //     (the bias gradient; no more bytes read).
  //   tgrt_rms_norm_bwd_acc: tgrt_rms_norm_bwd's kernel that also reads the residual
  //     gradient and writes its low copy (mixed precision: 16 bytes per element against
  //     10; the extra bytes are not priced apart; the tgrt_add_mixed it replaces, 12 bytes
  //     per element, goes from the trace).
  //   tgrt_linear_cross_entropy_store: the same GEMMs, the first chunk's dw GEMM not
  //     reading dw (one vocab x d read fewer, not priced apart).
  //   tgrt_embedding_fwd_split: the gather of f32 rows from two 2-byte tables (the same
  //     bytes read; its own roofline counts them).
  static const std::pair<const char*, const char*> kPricedAs[] = {
      {"tgrt_matmul_wgrad", "tgrt_matmul_acc"},
      {"tgrt_matmul_wgrad_lda", "tgrt_matmul_acc"},
      {"tgrt_matmul_acc_lda", "tgrt_matmul_acc"},
      {"tgrt_layer_norm_fwd_ones", "tgrt_layer_norm_fwd"},
      {"tgrt_add_layer_norm_fwd_ones", "tgrt_add_layer_norm_fwd"},
      {"tgrt_matmul_bias_lda", "tgrt_matmul_bias"},
      {"tgrt_matmul_bias_gelu_lda", "tgrt_matmul_bias_gelu"},
      {"tgrt_adamw_islands", "tgrt_adamw_wc"},
      {"tgrt_adamw_wc_g", "tgrt_adamw_wc"},
      {"tgrt_adamw_split", "tgrt_adamw_wc"},
      {"tgrt_layer_norm_bwd_acc", "tgrt_layer_norm_bwd_acc_slots"},
      {"tgrt_layer_norm_bwd_acc_bgrad", "tgrt_layer_norm_bwd_acc_slots"},
      {"tgrt_linear_cross_entropy_store", "tgrt_linear_cross_entropy"},
      {"tgrt_embedding_bwd_acc", "tgrt_embedding_bwd"},
      {"tgrt_rms_norm_bwd_acc", "tgrt_rms_norm_bwd"},
      {"tgrt_embedding_fwd_split", "tgrt_embedding_fwd"}};
  auto k = t.kernels.find(call.kernel);
  // A weight gradient written in the compute type (tgrt_matmul_wgrad with a 2-byte C and no
  // bias: mixed precision's training.gradient_dtype auto) is the plain GEMM writing its
  // output, which the table measures at the weight gradients' shapes (tgrt_matmul, "tn"):
  // not tgrt_matmul_acc's read and write of an f32 C. At Llama 3.2 1B that priced the 64
  // weight-gradient GEMMs 25.04 ms per step against 22.82 measured (H200, 2026-12-02).
  if (k == t.kernels.end() && call.kernel == "tgrt_matmul_wgrad" && call.ints.size() >= 2 &&
      call.bytesWritten < 4 * call.ints[0] * call.ints[1])
    k = t.kernels.find("tgrt_matmul");
  for (const auto &[kernel, as] : kPricedAs)
    if (k == t.kernels.end() && call.kernel == kernel)
      k = t.kernels.find(as);
  if (k != t.kernels.end())
    if (auto d = k->second.find(dt); d != k->second.end() && !d->second.empty())
      pts = &d->second;
  if (!pts) {
    if (calibrated)
      *calibrated = false;
    if (call.kernel == "tgrt_all_reduce_wait")
      return t.callOverheadMs;
    if (isCollective(call.kernel) && t.linkBytesPerS > 0) {
      // The tensor a collective moves: its element count (the first integer argument, n)
      // times the dtype's size; a ring all-reduce sends and receives about twice that.
      // The buckets started in @micro_step move data only on its last run of the step
      // (their second integer argument is grad_accum).
      double elems = call.ints.empty() ? 0.0 : (double)call.ints.front();
      double size = dt == "bf16" || dt == "f16" ? 2.0 : 4.0;
      double factor = call.kernel.rfind("tgrt_all_reduce", 0) == 0 ? 2.0 : 1.0;
      if (call.kernel == "tgrt_all_reduce_mean_start" && call.ints.size() >= 2 &&
          call.ints[1] > 1)
        factor /= (double)call.ints[1];
      return t.callOverheadMs + factor * elems * size / t.linkBytesPerS * 1e3;
    }
    return t.callOverheadMs + r;
  }
  if (calibrated)
    *calibrated = true;
  const std::string variant = gemmVariant(call);
  std::vector<std::pair<double, double>> curve, same, any;
  const bool flops = usesFlops(call.kernel);
  for (const CalibrationPoint &p : *pts) {
    double ri = rooflineMs(t, flops ? p.flops : 0.0, p.bytes, dt);
    double ti = std::max(p.ms - t.callOverheadMs, p.ms / 10.0);
    if (ri <= 0 || ti <= 0)
      continue;
    std::pair<double, double> xy{std::log(ri), std::log(ri / ti)};
    any.push_back(xy);
    if (!variant.empty() && p.variant == variant)
      curve.push_back(xy);
    if (samePath(call, p).value_or(false))
      same.push_back(xy);
  }
  // The points of the call's own code path (samePath) where the table has them; then the
  // GEMM's transpose variant; then every point of the kernel and dtype.
  if (!same.empty())
    curve = std::move(same);
  if (curve.empty())
    curve = std::move(any);
  if (curve.empty() || r <= 0)
    return t.callOverheadMs + r;
  double e = std::exp(interpolate(curve, std::log(r)));
  return t.callOverheadMs + r / e;
}

PowerCoefficients powerCoefficients(const CalibrationTable &t) {
  PowerCoefficients c;
  c.limitW = t.power.limitW;
  c.maxMhz = t.power.maxMhz;
  auto invalid = [&](const std::string &why) {
    c.why = why;
    return c;
  };
  if (t.power.probes.empty())
    return invalid("the table has no power section");
  if (c.limitW <= 0 || c.maxMhz <= 0)
    return invalid("the power section lacks the power limit or the maximum clock");
  double idle = 0, jb = 0, jf = 0, burst = 0;
  int idles = 0, memories = 0, gemms = 0;
  for (const PowerProbe &p : t.power.probes)
    if (p.name == "idle") {
      idle += p.watts;
      ++idles;
    }
  if (!idles)
    return invalid("no idle probe");
  c.staticW = idle / idles;
  for (const PowerProbe &p : t.power.probes)
    if (p.name == "memory" && p.sustainedMs > 0 && p.bytes > 0) {
      jb += (p.watts - c.staticW) / (p.bytes / (p.sustainedMs * 1e-3));
      ++memories;
    }
  if (!memories)
    return invalid("no memory probe");
  c.jPerByte = jb / memories;
  for (const PowerProbe &p : t.power.probes)
    if (p.name == "gemm" && p.sustainedMs > 0 && p.flops > 0 && p.sustainedMhz > 0 &&
        p.burstMhz > 0) {
      const double s = p.sustainedMs * 1e-3;
      const double dynamic = p.watts - c.staticW - c.jPerByte * p.bytes / s;
      const double r = c.maxMhz / p.sustainedMhz;
      jf += dynamic / (p.flops / s) * r * r;
      burst += p.burstMhz;
      ++gemms;
    }
  if (!gemms)
    return invalid("no gemm probe");
  c.jPerFlop = jf / gemms;
  c.burstMhz = burst / gemms;
  double bound = 0;
  int throttled = 0;
  for (const PowerProbe &p : t.power.probes)
    if (p.name == "gemm" && p.burstMs > 0 && p.sustainedMhz > 0 &&
        p.burstMhz > 1.02 * p.sustainedMhz) {
      bound += (p.sustainedMs / p.burstMs) * (p.sustainedMhz / p.burstMhz);
      ++throttled;
    }
  c.clockBound = throttled ? std::clamp(bound / throttled, 0.05, 1.0) : 1.0;
  if (c.staticW <= 0 || c.jPerByte <= 0 || c.jPerFlop <= 0)
    return invalid("a coefficient is not positive (static " + std::to_string(c.staticW) +
                   " W, per byte " + std::to_string(c.jPerByte) + " J, per FLOP " +
                   std::to_string(c.jPerFlop) + " J)");
  c.valid = true;
  return c;
}

StepPrediction predictStep(const CalibrationTable &t, const std::vector<RuntimeCall> &calls,
                           int64_t gradAccum) {
  StepPrediction p;
  p.gradAccum = std::max<int64_t>(1, gradAccum);
  // Each call's burst time, then (power model, PowerCoefficients) the SM clock f the step
  // runs at: a call of a usesFlops kernel takes o + (ms - o) * max(1, clockBound * burstMhz /
  // f), every other call its burst time.
  struct Priced {
    const RuntimeCall *call;
    double ms, overhead; // the burst time and its per-call overhead part
    bool calibrated, compute;
    int64_t times; // per optimizer step; 0 for @eval_step
  };
  std::vector<Priced> priced;
  priced.reserve(calls.size());
  double computeMs = 0, otherMs = 0, flops = 0, bytes = 0; // per optimizer step
  for (const RuntimeCall &c : calls) {
    Priced q{&c, 0.0, 0.0, true, usesFlops(c.kernel), 0};
    q.ms = predictCallMs(t, c, &q.calibrated);
    q.overhead = std::min(q.ms, t.callOverheadMs);
    q.times = c.function == "micro_step" ? p.gradAccum : c.function == "optimizer_step" ? 1 : 0;
    if (q.compute) {
      computeMs += (double)q.times * (q.ms - q.overhead);
      otherMs += (double)q.times * q.overhead;
    } else {
      otherMs += (double)q.times * q.ms;
    }
    flops += (double)q.times * effectiveFlops(c);
    bytes += (double)q.times * (double)(c.bytesRead + c.bytesWritten);
    priced.push_back(q);
  }
  double slow = 1.0; // a compute-bound call's time at the step's clock / at burstMhz
  const PowerCoefficients pc = powerCoefficients(t);
  if (pc.valid && computeMs + otherMs > 0) {
    auto slowAt = [&](double f) { return std::max(1.0, pc.clockBound * pc.burstMhz / f); };
    auto msAt = [&](double f) { return otherMs + computeMs * slowAt(f); };
    auto wattsAt = [&](double f) {
      const double r = f / pc.maxMhz;
      return pc.staticW +
             (pc.jPerFlop * r * r * flops + pc.jPerByte * bytes) / (msAt(f) * 1e-3);
    };
    double clock = pc.burstMhz;
    if (wattsAt(clock) > pc.limitW) {
      // The power rises with the clock (more energy per FLOP, in less time): bisection.
      double lo = 0.2 * pc.maxMhz, hi = pc.burstMhz;
      for (int i = 0; i < 60; ++i) {
        const double mid = 0.5 * (lo + hi);
        (wattsAt(mid) > pc.limitW ? hi : lo) = mid;
      }
      clock = lo;
    }
    p.burstMhz = pc.burstMhz;
    p.clockMhz = clock;
    p.powerW = wattsAt(clock);
    p.unthrottledStepMs = computeMs + otherMs;
    const double r = clock / pc.maxMhz;
    p.energyFlopsJ = pc.jPerFlop * r * r * flops;
    p.energyBytesJ = pc.jPerByte * bytes;
    p.energyStaticJ = pc.staticW * msAt(clock) * 1e-3;
    p.stepFlops = flops;
    p.stepBytes = bytes;
    slow = slowAt(clock);
  }
  std::map<std::pair<std::string, std::string>, KernelTime> byKernel;
  for (const Priced &q : priced) {
    const RuntimeCall &c = *q.call;
    double ms = q.ms;
    if (q.compute && c.function != "eval_step")
      ms = q.overhead + (q.ms - q.overhead) * slow;
    if (c.function == "micro_step") {
      p.microStepMs += ms;
    } else if (c.function == "optimizer_step") {
      p.optimizerStepMs += ms;
    } else {
      p.evalStepMs += ms;
      continue;
    }
    p.callsPerStep += q.times;
    p.overheadMs += (double)q.times * t.callOverheadMs;
    KernelTime &k = byKernel[{c.kernel, dtypeKey(c.dtype)}];
    k.kernel = c.kernel;
    k.dtype = dtypeKey(c.dtype);
    k.calls += q.times;
    k.ms += (double)q.times * ms;
    k.calibrated = k.calibrated && q.calibrated;
    if (!q.calibrated)
      p.uncalibratedMs += (double)q.times * ms;
  }
  p.stepMs = (double)p.gradAccum * p.microStepMs + p.optimizerStepMs;
  for (auto &[key, k] : byKernel)
    p.byKernel.push_back(k);
  std::stable_sort(p.byKernel.begin(), p.byKernel.end(),
                   [](const KernelTime &a, const KernelTime &b) { return a.ms > b.ms; });
  for (const KernelTime &k : p.byKernel)
    if (!k.calibrated)
      p.uncalibrated.push_back(k.kernel + "/" + k.dtype);
  return p;
}

bool parseCalibrationTable(const std::string &textIn, const std::string &path,
                           CalibrationTable &out, std::string &error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(textIn);
  } catch (const nlohmann::json::parse_error &e) {
    error = path + ": not valid JSON: " + e.what();
    return false;
  }
  CalibrationTable t;
  t.path = path;
  try {
    if (!j.is_object())
      throw BadTable{"$", "expected an object, got " + typeName(j)};
    std::string format = text(member(j, "format", "$"), "$.format");
    if (format != kFormat)
      throw BadTable{"$.format", "expected \"" + std::string(kFormat) + "\", got \"" + format +
                                     "\""};
    t.target = text(member(j, "target", "$"), "$.target");
    if (t.target != "cuda" && t.target != "cpu")
      throw BadTable{"$.target", "expected \"cuda\" or \"cpu\", got \"" + t.target + "\""};
    t.device = text(member(j, "device", "$"), "$.device");
    if (j.contains("measured"))
      t.measured = text(j["measured"], "$.measured");
    if (j.contains("note"))
      t.note = text(j["note"], "$.note");
    const nlohmann::json &peak = member(j, "peak", "$");
    if (!peak.is_object())
      throw BadTable{"$.peak", "expected an object, got " + typeName(peak)};
    const nlohmann::json &fl = member(peak, "flops_per_s", "$.peak");
    if (!fl.is_object())
      throw BadTable{"$.peak.flops_per_s", "expected an object, got " + typeName(fl)};
    for (auto it = fl.begin(); it != fl.end(); ++it)
      t.peakFlops[it.key()] = positive(it.value(), "$.peak.flops_per_s." + it.key());
    if (!t.peakFlops.count("f32"))
      throw BadTable{"$.peak.flops_per_s", "missing \"f32\""};
    t.memBytesPerS = positive(member(peak, "memory_bytes_per_s", "$.peak"),
                              "$.peak.memory_bytes_per_s");
    if (peak.contains("link_bytes_per_s"))
      t.linkBytesPerS = positive(peak["link_bytes_per_s"], "$.peak.link_bytes_per_s", true);
    t.callOverheadMs = positive(member(j, "call_overhead_ms", "$"), "$.call_overhead_ms", true);
    auto wholeBytes = [&](const char *key, int64_t &out) {
      if (!j.contains(key))
        return;
      const nlohmann::json &v = j[key];
      if (!v.is_number_integer() || v.get<int64_t>() <= 0)
        throw BadTable{std::string("$.") + key,
                       "expected a whole number of bytes > 0, got " + v.dump()};
      out = v.get<int64_t>();
    };
    wholeBytes("context_bytes", t.contextBytes);
    wholeBytes("memory_bytes", t.memoryBytes);
    if (j.contains("kernels")) {
      const nlohmann::json &ks = j["kernels"];
      if (!ks.is_object())
        throw BadTable{"$.kernels", "expected an object, got " + typeName(ks)};
      for (auto k = ks.begin(); k != ks.end(); ++k) {
        std::string kw = "$.kernels." + k.key();
        if (k.key().rfind("tgrt_", 0) != 0)
          throw BadTable{kw, "a kernel name starts with tgrt_ (runtime/tgrt.h)"};
        if (!k.value().is_object())
          throw BadTable{kw, "expected an object of dtypes, got " + typeName(k.value())};
        for (auto d = k.value().begin(); d != k.value().end(); ++d) {
          std::string dw = kw + "." + d.key();
          if (!d.value().is_array())
            throw BadTable{dw, "expected an array of points, got " + typeName(d.value())};
          std::vector<CalibrationPoint> &pts = t.kernels[k.key()][d.key()];
          for (size_t i = 0; i < d.value().size(); ++i) {
            const nlohmann::json &pj = d.value()[i];
            std::string pw = dw + "[" + std::to_string(i) + "]";
            if (!pj.is_object())
              throw BadTable{pw, "expected an object {flops, bytes, ms}, got " + typeName(pj)};
            CalibrationPoint p;
            p.flops = positive(member(pj, "flops", pw), pw + ".flops", true);
            p.bytes = positive(member(pj, "bytes", pw), pw + ".bytes", true);
            p.ms = positive(member(pj, "ms", pw), pw + ".ms");
            if (p.flops == 0 && p.bytes == 0)
              throw BadTable{pw, "flops and bytes are both 0 (a point needs a size)"};
            if (pj.contains("variant")) {
              p.variant = text(pj["variant"], pw + ".variant");
              if (p.variant != "nn" && p.variant != "nt" && p.variant != "tn" &&
                  p.variant != "tt")
                throw BadTable{pw + ".variant",
                               "expected \"nn\", \"nt\", \"tn\" or \"tt\", got \"" + p.variant +
                                   "\""};
            }
            if (pj.contains("shape"))
              p.shape = text(pj["shape"], pw + ".shape");
            p.fields = shapeFields(p.shape);
            pts.push_back(std::move(p));
          }
        }
      }
    }
    if (j.contains("power")) {
      const nlohmann::json &pw = j["power"];
      if (!pw.is_object())
        throw BadTable{"$.power", "expected an object, got " + typeName(pw)};
      t.power.limitW = positive(member(pw, "limit_w", "$.power"), "$.power.limit_w");
      t.power.maxMhz = positive(member(pw, "max_mhz", "$.power"), "$.power.max_mhz");
      const nlohmann::json &probes = member(pw, "probes", "$.power");
      if (!probes.is_array())
        throw BadTable{"$.power.probes", "expected an array, got " + typeName(probes)};
      for (size_t i = 0; i < probes.size(); ++i) {
        const nlohmann::json &q = probes[i];
        const std::string w = "$.power.probes[" + std::to_string(i) + "]";
        if (!q.is_object())
          throw BadTable{w, "expected an object, got " + typeName(q)};
        PowerProbe p;
        p.name = text(member(q, "name", w), w + ".name");
        if (p.name != "idle" && p.name != "memory" && p.name != "gemm")
          throw BadTable{w + ".name", "expected \"idle\", \"memory\" or \"gemm\", got \"" +
                                          p.name + "\""};
        p.watts = positive(member(q, "watts", w), w + ".watts");
        if (p.name != "idle") {
          p.kernel = text(member(q, "kernel", w), w + ".kernel");
          p.dtype = text(member(q, "dtype", w), w + ".dtype");
          if (q.contains("shape"))
            p.shape = text(q["shape"], w + ".shape");
          p.flops = positive(member(q, "flops", w), w + ".flops", true);
          p.bytes = positive(member(q, "bytes", w), w + ".bytes", true);
          p.burstMs = positive(member(q, "burst_ms", w), w + ".burst_ms");
          p.burstMhz = positive(member(q, "burst_mhz", w), w + ".burst_mhz");
          p.sustainedMs = positive(member(q, "sustained_ms", w), w + ".sustained_ms");
        }
        if (q.contains("energy_watts"))
          p.energyWatts = positive(q["energy_watts"], w + ".energy_watts", true);
        p.sustainedMhz = positive(member(q, "sustained_mhz", w), w + ".sustained_mhz", true);
        t.power.probes.push_back(std::move(p));
      }
    }
  } catch (const BadTable &b) {
    error = path + ": " + b.path + ": " + b.what;
    return false;
  }
  out = std::move(t);
  return true;
}

bool loadCalibrationTable(const std::string &path, CalibrationTable &table,
                          std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot read the calibration table";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parseCalibrationTable(ss.str(), path, table, error);
}

std::string calibrationTableJson(const CalibrationTable &t) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["target"] = t.target;
  j["device"] = t.device;
  if (!t.measured.empty())
    j["measured"] = t.measured;
  if (!t.note.empty())
    j["note"] = t.note;
  nlohmann::ordered_json flops = nlohmann::ordered_json::object();
  for (const auto &[k, v] : t.peakFlops)
    flops[k] = v;
  j["peak"] = {{"flops_per_s", flops},
               {"memory_bytes_per_s", t.memBytesPerS},
               {"link_bytes_per_s", t.linkBytesPerS}};
  j["call_overhead_ms"] = t.callOverheadMs;
  if (t.contextBytes > 0)
    j["context_bytes"] = t.contextBytes;
  if (t.memoryBytes > 0)
    j["memory_bytes"] = t.memoryBytes;
  nlohmann::ordered_json ks = nlohmann::ordered_json::object();
  for (const auto &[kernel, dtypes] : t.kernels)
    for (const auto &[dtype, pts] : dtypes) {
      nlohmann::ordered_json arr = nlohmann::ordered_json::array();
      for (const CalibrationPoint &p : pts) {
        nlohmann::ordered_json pj;
        pj["flops"] = p.flops;
        pj["bytes"] = p.bytes;
        pj["ms"] = p.ms;
        if (!p.variant.empty())
          pj["variant"] = p.variant;
        if (!p.shape.empty())
          pj["shape"] = p.shape;
        arr.push_back(std::move(pj));
      }
      ks[kernel][dtype] = std::move(arr);
    }
  j["kernels"] = std::move(ks);
  if (!t.power.probes.empty()) {
    nlohmann::ordered_json probes = nlohmann::ordered_json::array();
    for (const PowerProbe &p : t.power.probes) {
      nlohmann::ordered_json q;
      q["name"] = p.name;
      if (p.name != "idle") {
        q["kernel"] = p.kernel;
        q["dtype"] = p.dtype;
        q["shape"] = p.shape;
        q["flops"] = p.flops;
        q["bytes"] = p.bytes;
        q["burst_ms"] = p.burstMs;
        q["burst_mhz"] = p.burstMhz;
        q["sustained_ms"] = p.sustainedMs;
      }
      q["sustained_mhz"] = p.sustainedMhz;
      q["watts"] = p.watts;
      if (p.energyWatts > 0)
        q["energy_watts"] = p.energyWatts;
      probes.push_back(std::move(q));
    }
    j["power"] = {{"limit_w", t.power.limitW}, {"max_mhz", t.power.maxMhz},
                  {"probes", std::move(probes)}};
  }
  return j.dump(1) + "\n";
}

CalibrationTable defaultRooflineTable(const std::string &target) {
  CalibrationTable t;
  t.roofline = true;
  if (target == "cuda") {
    t.target = "cuda";
    t.device = "NVIDIA H100 SXM (datasheet peaks; no measured points)";
    t.peakFlops = {{"f32", 66.9e12}, {"tf32", 494.7e12}, {"bf16", 989.4e12}, {"f16", 989.4e12}};
    t.memBytesPerS = 3.35e12;
    t.linkBytesPerS = 450e9;
    t.callOverheadMs = 0.004;
  } else {
    t.target = "cpu";
    t.device = "generic CPU (stated peaks; no measured points)";
    t.peakFlops = {{"f32", 50e9}, {"bf16", 50e9}, {"f16", 50e9}};
    t.memBytesPerS = 10e9;
    t.linkBytesPerS = 10e9;
    t.callOverheadMs = 0.001;
  }
  return t;
}

} // namespace mlir::tg
