// The cost model's arithmetic (passes/CostModel.h) on a fixed small calibration table:
// roofline fallback, exact reproduction of measured points, interpolation in log size,
// clamping beyond the points, GEMM variants, the step sum with grad_accum, the per-call
// overhead, the FLOPs from integer arguments, collectives, and the table's parser errors.
#include "passes/CostModel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir::tg;

namespace {

// Peaks: f32 1e12 FLOP/s, bf16 4e12, memory 1e11 B/s, 0.01 ms per call, link 1e10 B/s.
const char *kTable = R"({
  "format": "tgc-calibration/1", "target": "cpu", "device": "test machine",
  "peak": {"flops_per_s": {"f32": 1e12, "bf16": 4e12}, "memory_bytes_per_s": 1e11,
           "link_bytes_per_s": 1e10},
  "call_overhead_ms": 0.01,
  "kernels": {
    "tgrt_add": {"f32": [{"flops": 0, "bytes": 1e6, "ms": 0.05},
                         {"flops": 0, "bytes": 1e8, "ms": 1.5}]},
    "tgrt_matmul": {"f32": [
      {"flops": 2e9, "bytes": 1.2e7, "ms": 4.01, "variant": "nn"},
      {"flops": 2e9, "bytes": 1.2e7, "ms": 8.01, "variant": "tn"}]},
    "tgrt_matmul_acc": {"f32": [
      {"flops": 2e9, "bytes": 1.2e7, "ms": 3.01, "variant": "tn"}]}
  }
})";

/// `json` parsed as a calibration table named `name` (the test fails when it does not parse).
CalibrationTable parsed(const std::string &json, const char *name = "fixed.json") {
  CalibrationTable t;
  std::string err;
  EXPECT_TRUE(parseCalibrationTable(json, name, t, err)) << err;
  return t;
}

CalibrationTable table() { return parsed(kTable); }

/// A table with the peaks f32 1e12 FLOP/s, memory 1e11 B/s, 0.01 ms per call and the given
/// "kernels" object (JSON text).
CalibrationTable withKernels(const std::string &kernels) {
  return parsed(R"({"format": "tgc-calibration/1", "target": "cpu", "device": "test machine",
                    "peak": {"flops_per_s": {"f32": 1e12}, "memory_bytes_per_s": 1e11},
                    "call_overhead_ms": 0.01, "kernels": )" +
                kernels + "}");
}

RuntimeCall add(double bytes, const char *fn = "micro_step") {
  RuntimeCall c;
  c.function = fn;
  c.kernel = "tgrt_add";
  c.dtype = "TGRT_F32";
  c.bytesRead = (int64_t)(bytes * 2 / 3);
  c.bytesWritten = (int64_t)bytes - c.bytesRead;
  c.ints = {(int64_t)(bytes / 12)};
  return c;
}

RuntimeCall matmul(int64_t m, int64_t n, int64_t k, int ta, int tb, const char *dt = "TGRT_F32") {
  RuntimeCall c;
  c.function = "micro_step";
  c.kernel = "tgrt_matmul";
  c.dtype = dt;
  c.ints = {1, m, n, k, ta, tb, 0, 0, 0};
  c.bytesRead = 4 * (m * k + k * n);
  c.bytesWritten = 4 * m * n;
  c.flops = 7; // the trace's count is not what the model uses for a GEMM
  return c;
}

} // namespace

TEST(CostModel, MeasuredPointsAreReproduced) {
  CalibrationTable t = table();
  bool cal = false;
  EXPECT_NEAR(predictCallMs(t, add(1e6), &cal), 0.05, 1e-12);
  EXPECT_TRUE(cal);
  EXPECT_NEAR(predictCallMs(t, add(1e8)), 1.5, 1e-12);
  // GEMM: each variant reproduces its own point (2e9 FLOPs from m = n = k = 1000).
  EXPECT_NEAR(predictCallMs(t, matmul(1000, 1000, 1000, 0, 0)), 4.01, 1e-9);
  EXPECT_NEAR(predictCallMs(t, matmul(1000, 1000, 1000, 1, 0)), 8.01, 1e-9);
}

TEST(CostModel, InterpolatesEfficiencyInLogSize) {
  CalibrationTable t = table();
  // r = bytes / 1e11 s; e_i = r_i / (ms_i - 0.01): e1 = 0.01 / 0.04, e2 = 1 / 1.49.
  const double e1 = 0.01 / 0.04, e2 = 1.0 / 1.49;
  // 1e7 bytes is halfway between the points in log size: log e is the mean.
  const double e = std::sqrt(e1 * e2);
  EXPECT_NEAR(predictCallMs(t, add(1e7)), 0.01 + 0.1 / e, 1e-9);
  // About a quarter of the way (10^6.5 bytes, as whole bytes).
  RuntimeCall q = add(std::pow(10.0, 6.5));
  const double b = (double)(q.bytesRead + q.bytesWritten);
  const double w = (std::log(b) - std::log(1e6)) / (std::log(1e8) - std::log(1e6));
  EXPECT_NEAR(w, 0.25, 1e-6);
  const double eq = std::exp((1 - w) * std::log(e1) + w * std::log(e2));
  EXPECT_NEAR(predictCallMs(t, q), 0.01 + b / 1e11 * 1e3 / eq, 1e-12);
  // Beyond the points the nearest point's efficiency holds.
  EXPECT_NEAR(predictCallMs(t, add(1e10)), 0.01 + 100.0 / e2, 1e-6);
  EXPECT_NEAR(predictCallMs(t, add(1e4)), 0.01 + 1e-4 / e1, 1e-12);
}

TEST(CostModel, GemmVariantFallsBackToAllPoints) {
  CalibrationTable t = table();
  // "nt" has no points: both points (same size) count, their mean log efficiency.
  const double r = 2.0; // 2e9 FLOPs at 1e12 FLOP/s, ms
  const double e = std::sqrt((r / 4.0) * (r / 8.0));
  EXPECT_EQ(gemmVariant(matmul(1000, 1000, 1000, 0, 1)), "nt");
  EXPECT_NEAR(predictCallMs(t, matmul(1000, 1000, 1000, 0, 1)), 0.01 + r / e, 1e-9);
}

TEST(CostModel, UncalibratedKernelIsRooflineOfPeaks) {
  CalibrationTable t = table();
  bool cal = true;
  // bf16 GEMM: no points; 2e9 FLOPs at 4e12 = 0.5 ms; bytes 1.2e7 / 1e11 = 0.12 ms.
  EXPECT_NEAR(predictCallMs(t, matmul(1000, 1000, 1000, 0, 0, "TGRT_BF16"), &cal), 0.51, 1e-12);
  EXPECT_FALSE(cal);
  // A memory-bound kernel without points: bytes / bandwidth + overhead, FLOPs ignored.
  RuntimeCall c = add(1e6);
  c.kernel = "tgrt_gelu_fwd";
  c.flops = 1000000000;
  EXPECT_NEAR(predictCallMs(t, c, &cal), 0.01 + 0.01, 1e-12);
  EXPECT_FALSE(cal);
  // The step names it, with its share.
  StepPrediction p = predictStep(t, {c, add(1e6)}, 1);
  ASSERT_EQ(p.uncalibrated.size(), 1u);
  EXPECT_EQ(p.uncalibrated[0], "tgrt_gelu_fwd/f32");
  EXPECT_NEAR(p.uncalibratedMs, 0.02, 1e-12);
}

TEST(CostModel, StepSumsGradAccumMicroStepsAndOneOptimizerStep) {
  CalibrationTable t = table();
  std::vector<RuntimeCall> calls = {add(1e6), add(1e8), add(1e6, "optimizer_step"),
                                    add(1e8, "eval_step")};
  StepPrediction p = predictStep(t, calls, 3);
  EXPECT_NEAR(p.microStepMs, 1.55, 1e-12);
  EXPECT_NEAR(p.optimizerStepMs, 0.05, 1e-12);
  EXPECT_NEAR(p.evalStepMs, 1.5, 1e-12);
  EXPECT_NEAR(p.stepMs, 3 * 1.55 + 0.05, 1e-12);
  EXPECT_EQ(p.callsPerStep, 7);
  EXPECT_NEAR(p.overheadMs, 7 * 0.01, 1e-12);
  ASSERT_EQ(p.byKernel.size(), 1u);
  EXPECT_EQ(p.byKernel[0].calls, 7);
  EXPECT_NEAR(p.byKernel[0].ms, p.stepMs, 1e-12);
  EXPECT_TRUE(p.uncalibrated.empty());
  // grad_accum below 1 counts as 1.
  EXPECT_NEAR(predictStep(t, calls, 0).stepMs, 1.6, 1e-12);
}

TEST(CostModel, OverheadIsAddedToEveryCall) {
  CalibrationTable u = table();
  u.callOverheadMs = 0.5;
  u.kernels.clear();
  // Roofline (1e6 bytes at 1e11 B/s = 0.01 ms) + the overhead.
  EXPECT_NEAR(predictCallMs(u, add(1e6)), 0.5 + 0.01, 1e-12);
  // A measured point below the overhead: at least a tenth of its time is the kernel's.
  CalibrationTable t = table();
  t.callOverheadMs = 0.049;
  EXPECT_NEAR(predictCallMs(t, add(1e6)), 0.049 + 0.005, 1e-12);
  RuntimeCall wait;
  wait.function = "micro_step";
  wait.kernel = "tgrt_all_reduce_wait";
  EXPECT_NEAR(predictCallMs(u, wait), 0.5, 1e-12);
}

TEST(CostModel, FlopsComeFromTheIntegerArguments) {
  RuntimeCall c = matmul(10, 20, 30, 0, 0);
  c.ints[0] = 4; // batch
  EXPECT_EQ(effectiveFlops(c), 2.0 * 4 * 10 * 20 * 30);
  RuntimeCall acc;
  acc.kernel = "tgrt_matmul_acc";
  acc.ints = {10, 20, 30, 1, 0};
  EXPECT_EQ(effectiveFlops(acc), 2.0 * 10 * 20 * 30);
  RuntimeCall lce;
  lce.kernel = "tgrt_linear_cross_entropy";
  lce.ints = {512, 64, 2048, 512, -1};
  EXPECT_EQ(effectiveFlops(lce), 6.0 * 512 * 64 * 2048);
  // Attention: batch 2, heads 3, t 8, hd 16, 6 strides, causal, window.
  RuntimeCall fwd;
  fwd.kernel = "tgrt_attention_fwd";
  fwd.ints = {2, 3, 8, 16, 0, 0, 0, 0, 0, 0, 1, 0};
  EXPECT_EQ(effectiveFlops(fwd), 4.0 * 2 * 3 * 16 * 36); // 8*9/2 pairs
  fwd.kernel = "tgrt_attention_bwd";
  fwd.ints[11] = 3; // window 3: 1 + 2 + 3 * 6 = 21 pairs
  EXPECT_EQ(effectiveFlops(fwd), 10.0 * 2 * 3 * 16 * 21);
  fwd.ints[10] = 0; // no mask: all 64
  EXPECT_EQ(effectiveFlops(fwd), 10.0 * 2 * 3 * 16 * 64);
  // Grouped-query: batch, heads, kv_heads, t, hd, 9 strides, causal, window.
  RuntimeCall gqa;
  gqa.kernel = "tgrt_attention_gqa_fwd";
  gqa.ints = {2, 8, 2, 8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
  EXPECT_EQ(effectiveFlops(gqa), 4.0 * 2 * 8 * 16 * 36);
  // Memory-bound kernels are priced by bytes alone.
  RuntimeCall ln;
  ln.kernel = "tgrt_layer_norm_fwd";
  ln.flops = 123456;
  EXPECT_EQ(effectiveFlops(ln), 0.0);
  EXPECT_FALSE(usesFlops("tgrt_softmax_fwd"));
  EXPECT_TRUE(usesFlops("tgrt_matmul_bias_gelu"));
}

TEST(CostModel, WeightGradientWritesArePricedAsAccumulations) {
  // tgrt_matmul_wgrad has no points of its own in this table: tgrt_matmul_acc's (the same
  // GEMM, C written instead of added to) price it, calibrated; a kernel with neither falls
  // back to the roofline, uncalibrated.
  CalibrationTable t = table();
  RuntimeCall w = matmul(1000, 1000, 1000, 1, 0);
  w.kernel = "tgrt_matmul_wgrad";
  w.ints = {1000, 1000, 1000, 1, 0};
  w.nullArgs = {kernelParamIndex("tgrt_matmul_wgrad", "dbias")}; // no bias gradient
  // (BiasGradientsOfGemmsArePricedApart prices one)
  bool cal = false;
  EXPECT_NEAR(predictCallMs(t, w, &cal), 3.01, 1e-9);
  EXPECT_TRUE(cal);
  t.kernels.erase("tgrt_matmul_acc");
  cal = true;
  EXPECT_NEAR(predictCallMs(t, w, &cal), 0.01 + 2e9 / 1e12 * 1e3, 1e-9);
  EXPECT_FALSE(cal);
}

TEST(CostModel, NormsAndAttentionArePricedByThePointsOfTheirCodePath) {
  // A norm at d 768 runs in registers at 0.5 of the roofline; at d 2048 the unfused kernels
  // run at 0.25. A d 768 call as large as the d 2048 point takes the d 768 efficiency (the
  // bytes alone would interpolate toward 0.25); a width without points takes all of them.
  CalibrationTable t = withKernels(R"({
      "tgrt_layer_norm_bwd": {"f32": [
        {"flops": 0, "bytes": 2e8, "ms": 4.01, "shape": "rows 16384 d 768"},
        {"flops": 0, "bytes": 3e8, "ms": 12.01, "shape": "rows 8192 d 2048"}]},
      "tgrt_attention_fwd": {"f32": [
        {"flops": 1e12, "bytes": 0, "ms": 2000.01, "shape": "B 4 H 12 Hkv 12 T 1024 hd 64"},
        {"flops": 2e12, "bytes": 0, "ms": 2500.01, "shape": "B 2 H 16 Hkv 16 T 2048 hd 128"}]}
    })");
  RuntimeCall ln;
  ln.function = "micro_step";
  ln.kernel = "tgrt_layer_norm_bwd";
  ln.dtype = "TGRT_F32";
  ln.bytesRead = (int64_t)2.9e8;
  ln.ints = {16384 * 3, 768};
  EXPECT_NEAR(predictCallMs(t, ln), 0.01 + 2.9 / 0.5, 1e-9);
  ln.ints = {8192, 2048};
  EXPECT_NEAR(predictCallMs(t, ln), 0.01 + 2.9 / 0.25, 1e-9);
  ln.ints = {16384, 1024}; // no point at d 1024: interpolated over both in log size
  const double e = 0.5 * std::pow(0.25 / 0.5, std::log(2.9 / 2.0) / std::log(3.0 / 2.0));
  EXPECT_NEAR(predictCallMs(t, ln), 0.01 + 2.9 / e, 1e-9);
  // Attention (batch, heads, t, hd, 6 strides, causal, window): a head-dim-64 call with the
  // FLOPs of the head-dim-128 point takes the head-dim-64 efficiency (0.5, not 0.8).
  RuntimeCall fwd;
  fwd.function = "micro_step";
  fwd.kernel = "tgrt_attention_fwd";
  fwd.dtype = "TGRT_F32";
  fwd.ints = {1, 1, 1, 64, 0, 0, 0, 0, 0, 0, 0, 0}; // no mask: 4 * 64 * 1 FLOPs ...
  fwd.ints[0] = (int64_t)(2e12 / (4.0 * 64)); // ... times batch: 2e12
  EXPECT_NEAR(predictCallMs(t, fwd), 0.01 + 2000.0 / 0.5, 1e-6);
  fwd.ints[3] = 128;
  fwd.ints[0] = (int64_t)(2e12 / (4.0 * 128));
  EXPECT_NEAR(predictCallMs(t, fwd), 0.01 + 2000.0 / 0.8, 1e-6);
}

TEST(CostModel, KernelParameterPositionsComeFromTheKernelList) {
  // Positions after (ctx, loc), as runtime/tgrt_kernels.def declares the parameters.
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_wgrad", "ab_dt"), 0);
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_wgrad", "c"), 4);
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_wgrad", "dbias"), 11);
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_dgelu_bgrad", "pre"), 3);
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_dgelu_bgrad", "dbias"), 5);
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_dgelu_bgrad", "alpha"), 11);
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_wgrad", "ctx"), -1); // (ctx, loc) are not counted
  EXPECT_EQ(kernelParamIndex("tgrt_matmul_wgrad", "nope"), -1);
  EXPECT_EQ(kernelParamIndex("tgrt_no_such_kernel", "dbias"), -1);
}

TEST(CostModel, BiasGradientsOfGemmsArePricedApart) {
  // A weight-gradient or dGELU GEMM that also writes a bias gradient (its dbias argument not
  // NULL: RuntimeCall::nullArgs) costs its GEMM's points plus a tgrt_bias_grad_acc of the
  // summed operand ([k, n] for the weight gradient's dy, [m, n] for dGELU's output), one
  // call's overhead fewer.
  CalibrationTable t = withKernels(R"({
      "tgrt_matmul_acc": {"f32": [{"flops": 2e9, "bytes": 1.2e7, "ms": 3.01, "variant": "tn"}]},
      "tgrt_matmul_dgelu_bgrad": {"f32": [
        {"flops": 2e9, "bytes": 1.2e7, "ms": 5.01, "variant": "nt"}]},
      "tgrt_bias_grad_acc": {"f32": [{"flops": 0, "bytes": 4.008e6, "ms": 0.51}]}
    })");
  RuntimeCall w = matmul(1000, 1000, 1000, 1, 0);
  w.kernel = "tgrt_matmul_wgrad";
  w.ints = {1000, 1000, 1000, 1, 0};
  w.bytesRead = 8000000;
  w.bytesWritten = 4 * 1000 * 1000; // C alone
  const int wDbias = kernelParamIndex("tgrt_matmul_wgrad", "dbias");
  const int gDbias = kernelParamIndex("tgrt_matmul_dgelu_bgrad", "dbias");
  w.nullArgs = {wDbias};            // dbias NULL
  EXPECT_NEAR(predictCallMs(t, w), 3.01, 1e-9);
  w.bytesWritten = 4 * 1000 * 1001; // C and dbias (f32)
  w.nullArgs = {};
  EXPECT_NEAR(predictCallMs(t, w), 3.01 + 0.51 - 0.01, 1e-9);
  w.nullArgs = {gDbias}; // another argument NULL: the weight gradient's dbias is set
  EXPECT_NEAR(predictCallMs(t, w), 3.01 + 0.51 - 0.01, 1e-9);
  RuntimeCall g = w;
  g.kernel = "tgrt_matmul_dgelu_bgrad";
  g.ints = {1000, 1000, 1000, 0, 1};
  g.bytesWritten = 4 * 1000 * 1000;
  g.nullArgs = {gDbias};
  EXPECT_NEAR(predictCallMs(t, g), 5.01, 1e-9);
  g.bytesWritten = 4 * 1000 * 1001;
  g.nullArgs = {};
  EXPECT_NEAR(predictCallMs(t, g), 5.01 + 0.51 - 0.01, 1e-9);
  // Without points for the sums they are priced at the roofline, and the call is marked
  // uncalibrated.
  t.kernels.erase("tgrt_bias_grad_acc");
  bool cal = true;
  EXPECT_NEAR(predictCallMs(t, g, &cal), 5.01 + 4.008e6 / 1e11 * 1e3, 1e-9);
  EXPECT_FALSE(cal);
}

TEST(CostModel, CollectivesUseTheLinkBandwidth) {
  CalibrationTable t = table();
  RuntimeCall ar;
  ar.function = "optimizer_step";
  ar.kernel = "tgrt_all_reduce_mean";
  ar.dtype = "TGRT_F32";
  ar.ints = {1000000}; // 4 MB: a ring all-reduce moves ~2x over 1e10 B/s
  bool cal = true;
  EXPECT_NEAR(predictCallMs(t, ar, &cal), 0.01 + 2 * 4e6 / 1e10 * 1e3, 1e-9);
  EXPECT_FALSE(cal);
  ar.kernel = "tgrt_all_reduce_mean_start";
  ar.ints = {1000000, 4}; // moves data on one micro-step of 4
  EXPECT_NEAR(predictCallMs(t, ar), 0.01 + 2 * 4e6 / 1e10 * 1e3 / 4, 1e-9);
  ar.kernel = "tgrt_all_gather_start";
  ar.dtype = "TGRT_BF16";
  ar.ints = {1000000, 250000};
  EXPECT_NEAR(predictCallMs(t, ar), 0.01 + 2e6 / 1e10 * 1e3, 1e-9);
}

TEST(CostModel, TableRoundTrips) {
  CalibrationTable t = table();
  CalibrationTable u;
  std::string err;
  ASSERT_TRUE(parseCalibrationTable(calibrationTableJson(t), "again.json", u, err)) << err;
  EXPECT_EQ(u.device, "test machine");
  EXPECT_EQ(u.peakFlops, t.peakFlops);
  EXPECT_EQ(u.memBytesPerS, t.memBytesPerS);
  EXPECT_EQ(u.callOverheadMs, t.callOverheadMs);
  ASSERT_EQ(u.kernels["tgrt_matmul"]["f32"].size(), 2u);
  EXPECT_EQ(u.kernels["tgrt_matmul"]["f32"][1].variant, "tn");
  EXPECT_EQ(predictCallMs(u, add(3e7)), predictCallMs(t, add(3e7)));
  // The reserve outside the plan: absent stays absent (0), a value round-trips.
  EXPECT_EQ(u.contextBytes, 0);
  EXPECT_EQ(calibrationTableJson(u).find("context_bytes"), std::string::npos);
  t.contextBytes = 571473920;
  ASSERT_TRUE(parseCalibrationTable(calibrationTableJson(t), "again.json", u, err)) << err;
  EXPECT_EQ(u.contextBytes, 571473920);
  // The device's memory: absent stays absent (0), a value round-trips.
  EXPECT_EQ(u.memoryBytes, 0);
  EXPECT_EQ(calibrationTableJson(u).find("\"memory_bytes\""), std::string::npos);
  t.memoryBytes = 150108446720;
  ASSERT_TRUE(parseCalibrationTable(calibrationTableJson(t), "again.json", u, err)) << err;
  EXPECT_EQ(u.memoryBytes, 150108446720);
}

TEST(CostModel, MalformedTablesNameFileAndPath) {
  auto error = [](const std::string &text) {
    CalibrationTable t;
    std::string err;
    EXPECT_FALSE(parseCalibrationTable(text, "bad.json", t, err));
    return err;
  };
  std::string good = kTable;
  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_EQ(error(replaced("\"ms\": 1.5", "\"ms\": -1")),
            "bad.json: $.kernels.tgrt_add.f32[1].ms: expected a number > 0, got -1");
  EXPECT_EQ(error(replaced("\"memory_bytes_per_s\": 1e11,", "")),
            "bad.json: $.peak: missing \"memory_bytes_per_s\"");
  EXPECT_EQ(error(replaced("tgc-calibration/1", "tgc-calibration/0")),
            "bad.json: $.format: expected \"tgc-calibration/1\", got \"tgc-calibration/0\"");
  EXPECT_EQ(error(replaced("\"variant\": \"tn\"", "\"variant\": \"xy\"")),
            "bad.json: $.kernels.tgrt_matmul.f32[1].variant: expected \"nn\", \"nt\", \"tn\" "
            "or \"tt\", got \"xy\"");
  EXPECT_EQ(error(replaced("\"f32\": 1e12,", "\"f32\": \"fast\",")),
            "bad.json: $.peak.flops_per_s.f32: expected a number > 0, got string");
  EXPECT_EQ(error(replaced("\"tgrt_add\":", "\"add\":")),
            "bad.json: $.kernels.add: a kernel name starts with tgrt_ (runtime/tgrt.h)");
  EXPECT_EQ(error(replaced("\"call_overhead_ms\": 0.01,",
                           "\"call_overhead_ms\": 0.01, \"context_bytes\": -5,")),
            "bad.json: $.context_bytes: expected a whole number of bytes > 0, got -5");
  EXPECT_EQ(error(replaced("\"call_overhead_ms\": 0.01,",
                           "\"call_overhead_ms\": 0.01, \"context_bytes\": \"545MiB\",")),
            "bad.json: $.context_bytes: expected a whole number of bytes > 0, got \"545MiB\"");
  EXPECT_EQ(error(replaced("\"call_overhead_ms\": 0.01,",
                           "\"call_overhead_ms\": 0.01, \"memory_bytes\": 1.5e11,")),
            "bad.json: $.memory_bytes: expected a whole number of bytes > 0, got 150000000000.0");
  EXPECT_EQ(error("[1, 2]"), "bad.json: $: expected an object, got array");
  EXPECT_EQ(error("{").rfind("bad.json: not valid JSON: ", 0), 0u);
  CalibrationTable t;
  std::string err;
  EXPECT_FALSE(loadCalibrationTable("/nonexistent/x.json", t, err));
  EXPECT_EQ(err, "/nonexistent/x.json: cannot read the calibration table");
}

TEST(CostModel, DefaultRooflineTablesAreUsable) {
  for (const char *target : {"cuda", "cpu"}) {
    CalibrationTable t = defaultRooflineTable(target);
    EXPECT_TRUE(t.roofline);
    EXPECT_GT(peakFlopsOf(t, "bf16"), 0);
    bool cal = true;
    EXPECT_GT(predictCallMs(t, matmul(64, 64, 64, 0, 0), &cal), t.callOverheadMs);
    EXPECT_FALSE(cal);
  }
  EXPECT_EQ(peakFlopsOf(defaultRooflineTable("cuda"), "bf16"), 989.4e12);
}

namespace {
/// A table with one f32 GEMM point (2e12 FLOPs, 1.2e9 bytes in 4 ms), one add point, no
/// per-call overhead, and a power section: limit 500 W, max 2000 MHz, idle 100 W; a memory
/// probe moving 1e12 B/s at 300 W (2e-10 J per byte); a GEMM probe of 1e12 FLOPs, burst
/// 1 ms at 2000 MHz, sustained 1.25 ms at 1000 MHz and 500 W (clock bound 1.25 * 1000 / 2000
/// = 0.625; 400 W of dynamic power at 8e14 FLOP/s = 5e-13 J per FLOP at 1000 MHz, 2e-12 at
/// 2000).
CalibrationTable powerTable(const std::string &power) {
  return parsed(
      R"({"format": "tgc-calibration/1", "target": "cuda", "device": "test GPU",
          "peak": {"flops_per_s": {"f32": 1e15}, "memory_bytes_per_s": 1e13},
          "call_overhead_ms": 0,
          "kernels": {
            "tgrt_matmul": {"f32": [{"flops": 2e12, "bytes": 1.2e9, "ms": 4.0, "variant": "nn"}]},
            "tgrt_add": {"f32": [{"flops": 0, "bytes": 1e9, "ms": 1.0}]}},
          "power": )" + power + "}",
      "power.json");
}
const char *kPower = R"({"limit_w": 500, "max_mhz": 2000, "probes": [
    {"name": "idle", "sustained_mhz": 2000, "watts": 100},
    {"name": "memory", "kernel": "tgrt_add", "dtype": "bf16", "shape": "n 1", "flops": 0,
     "bytes": 1e9, "burst_ms": 1, "burst_mhz": 2000, "sustained_ms": 1, "sustained_mhz": 2000,
     "watts": 300},
    {"name": "gemm", "kernel": "tgrt_matmul", "dtype": "bf16", "shape": "m 1", "flops": 1e12,
     "bytes": 0, "burst_ms": 1, "burst_mhz": 2000, "sustained_ms": 1.25,
     "sustained_mhz": 1000, "watts": 500, "energy_watts": 480}]})";
} // namespace

TEST(CostModel, PowerCoefficientsComeFromTheProbes) {
  PowerCoefficients c = powerCoefficients(powerTable(kPower));
  ASSERT_TRUE(c.valid) << c.why;
  EXPECT_NEAR(c.staticW, 100, 1e-9);
  EXPECT_NEAR(c.jPerByte, 2e-10, 1e-22);
  EXPECT_NEAR(c.jPerFlop, 2e-12, 1e-24);
  EXPECT_NEAR(c.burstMhz, 2000, 1e-9);
  EXPECT_NEAR(c.clockBound, 0.625, 1e-12);
  EXPECT_NEAR(c.limitW, 500, 1e-9);
  // Without a power section, or without one of the probes, there is no model.
  EXPECT_FALSE(powerCoefficients(table()).valid);
  PowerCoefficients noIdle = powerCoefficients(powerTable(
      R"({"limit_w": 500, "max_mhz": 2000, "probes": [
          {"name": "gemm", "kernel": "tgrt_matmul", "dtype": "bf16", "flops": 1e12, "bytes": 0,
           "burst_ms": 1, "burst_mhz": 2000, "sustained_ms": 1, "sustained_mhz": 2000,
           "watts": 400}]})"));
  EXPECT_FALSE(noIdle.valid);
  EXPECT_EQ(noIdle.why, "no idle probe");
}

TEST(CostModel, APowerLimitedStepRunsAtTheClockThatMeetsTheLimit) {
  CalibrationTable t = powerTable(kPower);
  // A GEMM of 2e12 FLOPs and 1.2e9 bytes in 4 ms at 2000 MHz: 4 J + 0.24 J in 4 ms is 1160
  // W with the static 100: over the limit. At clock f < 1250 MHz (0.625 x 2000) the GEMM
  // takes 4 x 1250 / f ms and P(f) = 100 + (4 (f / 2000)^2 + 0.24) f / 5 W, which is 500 W
  // where f^3 / 1e6 + 0.24 f = 2000 (f ~ 1196.48 MHz).
  RuntimeCall g = matmul(10000, 10000, 10000, 0, 0);
  StepPrediction alone = predictStep(t, {g}, 1);
  const double f1 = alone.clockMhz;
  EXPECT_NEAR(f1 * f1 * f1 / 1e6 + 0.24 * f1, 2000.0, 1e-6);
  EXPECT_NEAR(f1, 1196.48, 0.01);
  EXPECT_NEAR(alone.stepMs, 5000.0 / f1, 1e-9);
  EXPECT_NEAR(alone.burstMhz, 2000, 1e-9);
  RuntimeCall a = add(1e9);
  StepPrediction p = predictStep(t, {g, a}, 1);
  const double f = p.clockMhz;
  EXPECT_GT(f, f1); // the add's power is lower than the GEMM's: the clock rises
  // The add (1e9 bytes in 1 ms: 0.2 J) is in the same step: its energy counts, its time
  // does not change. Solve with it: P(f) = 100 + (4 r^2 + 0.24 + 0.2) / (T(f) / 1000) with
  // T(f) = 5000 / f + 1.
  const double r = f / 2000.0, ms = 5000.0 / f + 1.0;
  EXPECT_NEAR(100.0 + (4.0 * r * r + 0.44) / (ms * 1e-3), 500.0, 1e-6);
  EXPECT_NEAR(p.powerW, 500.0, 1e-6);
  EXPECT_NEAR(p.stepMs, ms, 1e-9);
  EXPECT_NEAR(p.unthrottledStepMs, 5.0, 1e-12);
  // The step's energy by term: 4 r^2 J of FLOPs (2e12 at 2e-12 J x r^2), 0.44 J of bytes
  // (2.2e9 at 2e-10 J), 100 W static over the step; together the limit's 500 W x the step.
  EXPECT_NEAR(p.energyFlopsJ, 4.0 * r * r, 1e-12);
  EXPECT_NEAR(p.energyBytesJ, 0.44, 1e-12);
  EXPECT_NEAR(p.energyStaticJ, 100.0 * ms * 1e-3, 1e-12);
  EXPECT_NEAR(p.energyFlopsJ + p.energyBytesJ + p.energyStaticJ, 500.0 * ms * 1e-3, 1e-9);
  EXPECT_NEAR(p.stepFlops, 2e12, 1e-3);
  EXPECT_NEAR(p.stepBytes, 2.2e9, 1e-3);
  ASSERT_EQ(p.byKernel.size(), 2u);
  EXPECT_EQ(p.byKernel[0].kernel, "tgrt_matmul");
  EXPECT_NEAR(p.byKernel[0].ms, 5000.0 / f, 1e-9);
  EXPECT_NEAR(p.byKernel[1].ms, 1.0, 1e-12);
  // predictCallMs prices the call at the calibration's clock (tgc plan --calls).
  EXPECT_NEAR(predictCallMs(t, g), 4.0, 1e-12);
}

TEST(CostModel, AStepWithinThePowerLimitKeepsItsBurstTimes) {
  CalibrationTable t = powerTable(kPower);
  // The add alone: 0.2 J in 1 ms = 200 W + 100 static, under 500 W.
  StepPrediction p = predictStep(t, {add(1e9)}, 1);
  EXPECT_NEAR(p.clockMhz, 2000, 1e-9);
  EXPECT_NEAR(p.powerW, 300, 1e-9);
  EXPECT_NEAR(p.stepMs, 1.0, 1e-12);
  EXPECT_NEAR(p.energyFlopsJ, 0.0, 1e-12); // the add computes nothing
  EXPECT_NEAR(p.energyBytesJ + p.energyStaticJ, 0.3, 1e-12); // 300 W for 1 ms
  // A limit the GEMM step stays under: no change either.
  std::string high = kPower;
  high.replace(high.find("\"limit_w\": 500"), 14, "\"limit_w\": 2000");
  StepPrediction q = predictStep(powerTable(high), {matmul(10000, 10000, 10000, 0, 0)}, 1);
  EXPECT_NEAR(q.clockMhz, 2000, 1e-9);
  EXPECT_NEAR(q.stepMs, 4.0, 1e-12);
  // No power section: no clock, no energy.
  EXPECT_EQ(predictStep(table(), {add(1e6)}, 1).clockMhz, 0.0);
  EXPECT_EQ(predictStep(table(), {add(1e6)}, 1).energyBytesJ, 0.0);
}

TEST(CostModel, PowerSectionRoundTripsAndIsChecked) {
  CalibrationTable t = powerTable(kPower), u;
  std::string err;
  ASSERT_TRUE(parseCalibrationTable(calibrationTableJson(t), "again.json", u, err)) << err;
  ASSERT_EQ(u.power.probes.size(), 3u);
  EXPECT_EQ(u.power.limitW, 500);
  EXPECT_EQ(u.power.probes[2].sustainedMhz, 1000);
  EXPECT_EQ(u.power.probes[2].energyWatts, 480);
  EXPECT_EQ(u.power.probes[1].kernel, "tgrt_add");
  auto bad = [&](const std::string &power) {
    CalibrationTable v;
    std::string e;
    EXPECT_FALSE(parseCalibrationTable(
        R"({"format": "tgc-calibration/1", "target": "cuda", "device": "d",
            "peak": {"flops_per_s": {"f32": 1e15}, "memory_bytes_per_s": 1e13},
            "call_overhead_ms": 0, "power": )" + power + "}",
        "bad.json", v, e));
    return e;
  };
  EXPECT_EQ(bad(R"({"max_mhz": 2000, "probes": []})"), "bad.json: $.power: missing \"limit_w\"");
  EXPECT_EQ(bad(R"({"limit_w": 500, "max_mhz": 2000, "probes": [{"name": "fan", "watts": 1}]})"),
            "bad.json: $.power.probes[0].name: expected \"idle\", \"memory\" or \"gemm\", got \"fan\"");
  EXPECT_EQ(bad(R"({"limit_w": 500, "max_mhz": 2000, "probes": [{"name": "idle", "watts": -5,
                    "sustained_mhz": 1}]})"),
            "bad.json: $.power.probes[0].watts: expected a number > 0, got -5");
}
