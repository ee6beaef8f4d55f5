// RuntimeLlamaTest.cpp — unit tests of the CPU reference of the Llama family's kernels
// (runtime/tgrt.h, "The Llama family (issue 21)"): tgrt_rms_norm_fwd / _bwd, tgrt_rope and
// tgrt_rope_inv_freq, tgrt_swiglu_fwd / _bwd, tgrt_attention_gqa_fwd / _bwd.
//
// Forward kernels are compared with straightforward double-precision references written here
// (f32 to ~1e-6 relative; bf16 / f16 inputs: the kernel equals, bit for bit, the f32 kernel
// on the widened inputs rounded once, and lies within the dtype's rounding of the double
// reference). Backward kernels are checked by central finite differences of the double
// references (h = 1e-5). Grouped-query attention is also checked against tgrt_attention_fwd
// / _bwd: exactly equal when kv_heads == heads, and equal to the run on k, v repeated per
// group (dk, dv = the group sums of that run's) otherwise; in contiguous and packed
// [batch, t, heads + 2 kv_heads, hd] layouts. Error paths exit through the backend's fail
// path ("tgrt: <loc>: ...", status 1).
#include "runtime/tgrt.h"
#include "test/unit/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace rtest;

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// Expects got and want to hold the same bits, element for element.
void expectBitEqual(const VecF& got, const VecF& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (bitsOf(got[i]) != bitsOf(want[i]) && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << what << ": first index " << first << " got " << got[first] << " want "
                     << want[first];
}


// ------------------------------------------------------- typed (bf16 / f16) buffers --

const char* dtName(int32_t dt) { return dt == TGRT_F32 ? "f32" : dt == TGRT_BF16 ? "bf16" : "f16"; }

uint16_t toHalf(int32_t dt, float f) {
  return dt == TGRT_BF16 ? tgrt_bf16_from_float(f) : tgrt_f16_from_float(f);
}
float fromHalf(int32_t dt, uint16_t h) {
  return dt == TGRT_BF16 ? tgrt_bf16_to_float(h) : tgrt_f16_to_float(h);
}

/// A tensor of one dtype: f32 values in f, bf16 / f16 bit patterns in h.
struct Typed {
  int32_t dt;
  VecF f;
  std::vector<uint16_t> h;
  Typed(int32_t dtype, const VecF& values) : dt(dtype) {
    if (dt == TGRT_F32) {
      f = values;
    } else {
      h.resize(values.size());
      for (size_t i = 0; i < values.size(); ++i) h[i] = toHalf(dt, values[i]);
    }
  }
  size_t size() const { return dt == TGRT_F32 ? f.size() : h.size(); }
  void* data() { return dt == TGRT_F32 ? (void*)f.data() : (void*)h.data(); }
  const void* data() const { return dt == TGRT_F32 ? (const void*)f.data() : (const void*)h.data(); }
  /// Pointer to element off.
  void* at(int64_t off) { return static_cast<char*>(data()) + off * (dt == TGRT_F32 ? 4 : 2); }
  VecF widened() const {
    if (dt == TGRT_F32) return f;
    VecF w(h.size());
    for (size_t i = 0; i < h.size(); ++i) w[i] = fromHalf(dt, h[i]);
    return w;
  }
  uint32_t bits(int64_t i) const { return dt == TGRT_F32 ? bitsOf(f[(size_t)i]) : h[(size_t)i]; }
};

/// n random values already representable in dt (so f32 and dt runs see the same inputs).
Typed randTyped(int32_t dt, size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Typed(dt, randVec(n, seed, lo, hi));
}

/// Expects got (dt) to equal, bit for bit, want32 rounded once to dt.
void expectRounded(const Typed& got, const VecF& want32, const std::string& what) {
  ASSERT_EQ(got.size(), want32.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < want32.size(); ++i) {
    const uint32_t want = got.dt == TGRT_F32 ? bitsOf(want32[i]) : toHalf(got.dt, want32[i]);
    if (got.bits((int64_t)i) != want && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": first index " << first;
}

/// Half an ulp of dt relative to the value (the rounding of one output).
double relRounding(int32_t dt) {
  return dt == TGRT_F32 ? 0x1p-24 : dt == TGRT_BF16 ? 0x1p-8 : 0x1p-11;
}

// ------------------------------------------------------------------- fixture --

/// A small model plan (no parameters): the kernels ignore the context, but take one.
tgrt_model makeModel() {
  tgrt_model m;
  std::memset(&m, 0, sizeof(m));
  m.name = "llama-test";
  m.spec_json = "{}";
  m.persistent_bytes = 1024;
  m.arena_bytes = 256;
  m.workspace_bytes = 64;
  m.lr = 1e-3f;
  m.beta1 = 0.9f;
  m.beta2 = 0.999f;
  m.eps = 1e-8f;
  return m;
}

class Llama : public ::testing::Test {
protected:
  void SetUp() override {
    model_ = makeModel();
    ctx_ = tgrt_ctx_create(&model_);
    ASSERT_NE(ctx_, nullptr);
  }
  void TearDown() override { tgrt_ctx_destroy(ctx_); }
  tgrt_model model_;
  tgrt_ctx* ctx_ = nullptr;
};
using LlamaDeathTest = Llama;

/// Parameterised by the dtype of the tensors.
class LlamaDt : public Llama, public ::testing::WithParamInterface<int32_t> {};
std::string dtParamName(const ::testing::TestParamInfo<int32_t>& info) {
  return dtName(info.param);
}

// ------------------------------------------------------------------ RMSNorm --

/// Double reference: y [rows, d]; rstd [rows] in *rstd when given.
VecD rmsRef(const VecD& x, const VecD& gamma, int64_t rows, int64_t d, double eps,
            VecD* rstd = nullptr) {
  VecD y(x.size());
  if (rstd) rstd->assign((size_t)rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0.0;
    for (int64_t c = 0; c < d; ++c) ms += x[r * d + c] * x[r * d + c];
    const double rs = 1.0 / std::sqrt(ms / (double)d + eps);
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = x[r * d + c] * rs * gamma[c];
    if (rstd) (*rstd)[r] = rs;
  }
  return y;
}

TEST_F(Llama, RmsNormForwardMatchesDoubleReference) {
  const int64_t rows = 6, d = 24;
  const float eps = 1e-5f;
  const VecF x = randVec(rows * d, 1, -3.0f, 3.0f), gamma = randVec(d, 2, 0.5f, 1.5f);
  VecF y(rows * d, kInf), rstd(rows, kInf);
  tgrt_rms_norm_fwd(ctx_, "layers.0.attn_norm", TGRT_F32, x.data(), TGRT_F32, gamma.data(),
                    TGRT_F32, y.data(), rstd.data(), rows, d, eps);
  VecD wantRstd;
  const VecD want = rmsRef(toD(x), toD(gamma), rows, d, eps, &wantRstd);
  expectClose(y, want, 1e-7, 1e-6, "y");
  expectClose(rstd, wantRstd, 0.0, 1e-6, "rstd");
  // Scale invariance of the normalised row (eps small against mean x^2): y(4x) ~ y(x).
  VecF x4(x), y4(rows * d), rstd4(rows);
  for (float& v : x4) v *= 4.0f;
  tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, x4.data(), TGRT_F32, gamma.data(), TGRT_F32, y4.data(),
                    rstd4.data(), rows, d, 0.0f);
  tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, x.data(), TGRT_F32, gamma.data(), TGRT_F32, y.data(),
                    rstd.data(), rows, d, 0.0f);
  expectClose(y4, toD(y), 1e-7, 1e-6, "scale invariance");
  for (int64_t r = 0; r < rows; ++r) EXPECT_NEAR(rstd4[r] * 4.0, rstd[r], 1e-6 * rstd[r]);
}

// Every mix of x_dt, p_dt, y_dt: equal to the f32 kernel on the widened inputs rounded once,
// and within the output dtype's rounding of the double reference.
TEST_F(Llama, RmsNormLowPrecisionMixes) {
  const int64_t rows = 4, d = 16;
  const float eps = 1e-6f;
  const int32_t dts[3] = {TGRT_F32, TGRT_BF16, TGRT_F16};
  for (int32_t xdt : dts)
    for (int32_t pdt : dts)
      for (int32_t ydt : dts) {
        const std::string name =
            std::string("x ") + dtName(xdt) + " p " + dtName(pdt) + " y " + dtName(ydt);
        const Typed x = randTyped(xdt, rows * d, 10, -2.0f, 2.0f),
                    g = randTyped(pdt, d, 11, 0.5f, 1.5f);
        const VecF xw = x.widened(), gw = g.widened();
        VecF y32(rows * d), rstd32(rows), rstd(rows);
        tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, xw.data(), TGRT_F32, gw.data(), TGRT_F32,
                          y32.data(), rstd32.data(), rows, d, eps);
        Typed y(ydt, VecF(rows * d));
        tgrt_rms_norm_fwd(ctx_, "n", xdt, x.data(), pdt, g.data(), ydt, y.data(), rstd.data(),
                          rows, d, eps);
        expectRounded(y, y32, "y " + name);
        expectBitEqual(rstd, rstd32, "rstd " + name);
        expectClose(y.widened(), rmsRef(toD(xw), toD(gw), rows, d, eps), 1e-7,
                    relRounding(ydt) + 1e-6, "y vs double " + name);
      }
}

TEST_F(Llama, RmsNormBackwardMatchesFiniteDifferences) {
  const int64_t rows = 4, d = 7;
  const float eps = 1e-5f;
  const VecF x = randVec(rows * d, 20, -2.0f, 2.0f), gamma = randVec(d, 21, 0.5f, 1.5f),
             w = randVec(rows * d, 22);
  VecF y(rows * d), rstd(rows);
  tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, x.data(), TGRT_F32, gamma.data(), TGRT_F32, y.data(),
                    rstd.data(), rows, d, eps);
  VecF dx(rows * d, kInf), dgamma(d, kInf); // overwritten, never read
  tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, w.data(), TGRT_F32, x.data(), TGRT_F32, gamma.data(),
                    rstd.data(), dx.data(), dgamma.data(), rows, d);
  // L = sum(w * y(x, gamma)), so dy = w.
  const VecD xd = toD(x), gd = toD(gamma), wd = toD(w);
  auto lx = [&](const VecD& v) { return dotD(wd, rmsRef(v, gd, rows, d, eps)); };
  auto lg = [&](const VecD& v) { return dotD(wd, rmsRef(xd, v, rows, d, eps)); };
  expectClose(dx, numericGrad(lx, xd), 2e-6, 2e-5, "dx");
  expectClose(dgamma, numericGrad(lg, gd), 2e-6, 2e-5, "dgamma");
}

// x f32 (residual stream), gamma and dy bf16: dx and dgamma equal the f32 kernel on the
// widened values, rounded once.
TEST_F(Llama, RmsNormBackwardMixedPrecisionIsTheRoundedF32) {
  const int64_t rows = 3, d = 10;
  const VecF x = randVec(rows * d, 30, -2.0f, 2.0f);
  const Typed g = randTyped(TGRT_BF16, d, 31, 0.5f, 1.5f), dy = randTyped(TGRT_BF16, rows * d, 32);
  const VecF gw = g.widened(), dyw = dy.widened();
  VecF y(rows * d), rstd(rows);
  tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, x.data(), TGRT_F32, gw.data(), TGRT_F32, y.data(),
                    rstd.data(), rows, d, 1e-5f);
  VecF dx32(rows * d), dg32(d), dx(rows * d);
  tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, dyw.data(), TGRT_F32, x.data(), TGRT_F32, gw.data(),
                    rstd.data(), dx32.data(), dg32.data(), rows, d);
  Typed dg(TGRT_BF16, VecF(d));
  tgrt_rms_norm_bwd(ctx_, "n", TGRT_BF16, dy.data(), TGRT_F32, x.data(), TGRT_BF16, g.data(),
                    rstd.data(), dx.data(), dg.data(), rows, d);
  expectBitEqual(dx, dx32, "dx");
  expectRounded(dg, dg32, "dgamma");
}

// The accumulating form: dres + dx (the residual stream's gradient, f32) and its bf16 copy,
// with dx checked against finite differences of the norm (independent of the kernel) and
// dgamma equal to tgrt_rms_norm_bwd's; the dgamma buffer is overwritten, never read.
TEST_F(Llama, RmsNormBackwardAccAddsIntoTheResidualGradient) {
  const int64_t rows = 4, d = 7;
  const float eps = 1e-5f;
  const VecF x = randVec(rows * d, 40, -2.0f, 2.0f), gamma = randVec(d, 41, 0.5f, 1.5f),
             w = randVec(rows * d, 42), dres0 = randVec(rows * d, 43);
  VecF y(rows * d), rstd(rows);
  tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, x.data(), TGRT_F32, gamma.data(), TGRT_F32, y.data(),
                    rstd.data(), rows, d, eps);
  VecF dres(dres0), dg(d, kInf), dx(rows * d), dgRef(d);
  Typed low(TGRT_BF16, VecF(rows * d, kInf));
  tgrt_rms_norm_bwd_acc(ctx_, "layers.0.ln1", TGRT_F32, w.data(), TGRT_F32, x.data(), TGRT_F32,
                        gamma.data(), rstd.data(), dres.data(), TGRT_BF16, low.data(), dg.data(),
                        rows, d);
  tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, w.data(), TGRT_F32, x.data(), TGRT_F32, gamma.data(),
                    rstd.data(), dx.data(), dgRef.data(), rows, d);
  const VecD xd = toD(x), gd = toD(gamma), wd = toD(w);
  auto lx = [&](const VecD& v) { return dotD(wd, rmsRef(v, gd, rows, d, eps)); };
  VecD want = numericGrad(lx, xd);
  for (size_t i = 0; i < want.size(); ++i) want[i] += dres0[i];
  expectClose(dres, want, 2e-6, 2e-5, "dres + dx");
  VecF sum(rows * d);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = dres0[i] + dx[i]; // one f32 rounding
  expectBitEqual(dres, sum, "dres = dres + dx in f32");
  expectRounded(low, dres, "low = bf16(dres)");
  expectBitEqual(dg, dgRef, "dgamma");
  // Without low: the same dres.
  VecF dres2(dres0);
  tgrt_rms_norm_bwd_acc(ctx_, "n", TGRT_F32, w.data(), TGRT_F32, x.data(), TGRT_F32,
                        gamma.data(), rstd.data(), dres2.data(), TGRT_F32, nullptr, dg.data(),
                        rows, d);
  expectBitEqual(dres2, dres, "dres without low");
}

// --------------------------------------------------------------------- RoPE --

TEST(LlamaRope, InvFreqWithoutScaling) {
  const float scalingOff[4] = {0.0f, 1.0f, 4.0f, 8192.0f}; // factor <= 0: no scaling
  for (int64_t i : {0, 1, 5, 17, 31}) {
    const double want = 1.0 / std::pow(10000.0, 2.0 * (double)i / 64.0);
    EXPECT_EQ(tgrt_rope_inv_freq(i, 64, 10000.0f, nullptr), (float)want) << i;
    EXPECT_EQ(tgrt_rope_inv_freq(i, 64, 10000.0f, scalingOff), (float)want) << i;
  }
  EXPECT_EQ(tgrt_rope_inv_freq(0, 128, 500000.0f, nullptr), 1.0f);
  EXPECT_FLOAT_EQ(tgrt_rope_inv_freq(32, 128, 500000.0f, nullptr), 1.0f / std::sqrt(500000.0f));
}

// Llama 3.2's scaling {factor 32, low 1, high 4, original context 8192}, theta 500000, hd 64:
// wavelengths below 2048 keep f (i <= 14), above 8192 get f / 32 (i >= 18), in between the
// smooth interpolation (i = 15, 16, 17).
TEST(LlamaRope, InvFreqWithLlama3Scaling) {
  const float scaling[4] = {32.0f, 1.0f, 4.0f, 8192.0f};
  const double theta = 500000.0, hd = 64.0, factor = 32.0, lo = 1.0, hi = 4.0, ctx = 8192.0;
  const double twoPi = 2.0 * std::acos(-1.0);
  int bands[3] = {0, 0, 0}; // unchanged, interpolated, divided
  for (int64_t i = 0; i < 32; ++i) {
    const double f = 1.0 / std::pow(theta, 2.0 * (double)i / hd), w = twoPi / f;
    double want;
    if (w < ctx / hi) {
      want = f;
      ++bands[0];
    } else if (w > ctx / lo) {
      want = f / factor;
      ++bands[2];
    } else {
      const double s = (ctx / w - lo) / (hi - lo);
      want = (1.0 - s) * f / factor + s * f;
      ++bands[1];
    }
    EXPECT_FLOAT_EQ(tgrt_rope_inv_freq(i, 64, 500000.0f, scaling), (float)want) << i;
  }
  EXPECT_EQ(bands[0], 15);
  EXPECT_EQ(bands[1], 3);
  EXPECT_EQ(bands[2], 14);
  // Hand-computed values, one per band (Python, double).
  EXPECT_NEAR(tgrt_rope_inv_freq(3, 64, 500000.0f, scaling), 0.2922278225730151,
              1e-7 * 0.2922278225730151);
  EXPECT_NEAR(tgrt_rope_inv_freq(16, 64, 500000.0f, scaling), 4.2955679655936815e-4,
              1e-7 * 4.2955679655936815e-4); // s = 0.281283
  EXPECT_NEAR(tgrt_rope_inv_freq(25, 64, 500000.0f, scaling), 1.102883668639601e-06,
              1e-7 * 1.102883668639601e-06);
}

/// Double reference of tgrt_rope on x [batch, t, heads + 2 kv, hd]: a = p * f_i in float (as
/// tgrt.h says), the rotation in double.
VecD ropeRef(const VecD& x, int64_t batch, int64_t t, int64_t heads, int64_t kv, int64_t hd,
             float theta, const float* scaling, int sign) {
  VecD y(x);
  const int64_t nh = heads + 2 * kv, half = hd / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < t; ++p)
      for (int64_t n = 0; n < heads + kv; ++n)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t o = ((b * t + p) * nh + n) * hd;
          const double a = (double)((float)p * tgrt_rope_inv_freq(i, hd, theta, scaling));
          const double c = std::cos(a), s = std::sin(a);
          y[o + i] = x[o + i] * c - sign * x[o + i + half] * s;
          y[o + i + half] = x[o + i + half] * c + sign * x[o + i] * s;
        }
  return y;
}

struct RopeCase {
  float theta;
  bool scaled;
};

TEST_F(Llama, RopeMatchesDoubleReferenceAndKeepsVAndPositionZero) {
  const int64_t B = 2, T = 6, H = 4, KV = 2, hd = 16, nh = H + 2 * KV, n = B * T * nh * hd;
  // Wavelengths 2 pi theta^(2i/hd): with theta 10000 pair 0 keeps f (< 8), pair 1 is
  // interpolated (in [8, 32]), pairs >= 2 get f / 8 (> 32).
  const float scaling[4] = {8.0f, 1.0f, 4.0f, 32.0f};
  for (RopeCase rc :
       {RopeCase{10000.0f, false}, RopeCase{10000.0f, true}, RopeCase{500000.0f, true}})
    for (int sign : {1, -1}) {
      const std::string name = "theta " + std::to_string(rc.theta) +
                               (rc.scaled ? " scaled" : "") + " sign " + std::to_string(sign);
      const float* sc = rc.scaled ? scaling : nullptr;
      const VecF x = randVec(n, 40, -2.0f, 2.0f);
      VecF y(n, kInf);
      tgrt_rope(ctx_, "layers.0.rope", TGRT_F32, x.data(), y.data(), B, T, H, KV, hd, rc.theta, sc,
                sign);
      expectClose(y, ropeRef(toD(x), B, T, H, KV, hd, rc.theta, sc, sign), 1e-6, 1e-6, name);
      int64_t vChanged = 0, p0Changed = 0, moved = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t p = 0; p < T; ++p)
          for (int64_t h = 0; h < nh; ++h)
            for (int64_t j = 0; j < hd; ++j) {
              const int64_t o = ((b * T + p) * nh + h) * hd + j;
              const bool same = bitsOf(y[o]) == bitsOf(x[o]);
              if (h >= H + KV) vChanged += !same;
              else if (p == 0) p0Changed += !same;
              else moved += !same;
            }
      EXPECT_EQ(vChanged, 0) << "v heads must be copied " << name;
      EXPECT_EQ(p0Changed, 0) << "position 0 is the identity " << name;
      EXPECT_GT(moved, B * (T - 1) * (H + KV) * hd / 2) << "q, k heads must rotate " << name;
    }
}

// sign = -1 undoes sign = +1; the rotation is orthogonal, so sign -1 is the backward:
// <rope(x), w> = <x, rope^-1(w)>; in place equals out of place, bit for bit.
TEST_F(Llama, RopeInverseBackwardAndInPlace) {
  const int64_t B = 2, T = 9, H = 3, KV = 1, hd = 8, nh = H + 2 * KV, n = B * T * nh * hd;
  const float scaling[4] = {4.0f, 1.0f, 2.0f, 6.0f};
  for (const float* sc : {(const float*)nullptr, (const float*)scaling}) {
    const VecF x = randVec(n, 50, -2.0f, 2.0f), w = randVec(n, 51);
    VecF y(n), back(n), wb(n);
    tgrt_rope(ctx_, "r", TGRT_F32, x.data(), y.data(), B, T, H, KV, hd, 10000.0f, sc, 1);
    tgrt_rope(ctx_, "r", TGRT_F32, y.data(), back.data(), B, T, H, KV, hd, 10000.0f, sc, -1);
    expectClose(back, toD(x), 1e-6, 1e-6, "sign -1 undoes sign +1");
    tgrt_rope(ctx_, "r", TGRT_F32, w.data(), wb.data(), B, T, H, KV, hd, 10000.0f, sc, -1);
    const double lhs = dotD(toD(y), toD(w)), rhs = dotD(toD(x), toD(wb));
    EXPECT_NEAR(lhs, rhs, 1e-5 * std::fabs(lhs) + 1e-5) << "adjoint";
    for (int sign : {1, -1}) {
      VecF out(n), inPlace(x);
      tgrt_rope(ctx_, "r", TGRT_F32, x.data(), out.data(), B, T, H, KV, hd, 10000.0f, sc, sign);
      tgrt_rope(ctx_, "r", TGRT_F32, inPlace.data(), inPlace.data(), B, T, H, KV, hd, 10000.0f, sc,
                sign);
      expectBitEqual(inPlace, out, "in place, sign " + std::to_string(sign));
    }
  }
}

// bf16 / f16: the f32 kernel on the widened x, rounded once; within the dtype's rounding of
// the double reference; in place equals out of place.
TEST_P(LlamaDt, RopeLowPrecisionIsTheRoundedF32) {
  const int32_t dt = GetParam();
  const int64_t B = 1, T = 7, H = 2, KV = 2, hd = 64, nh = H + 2 * KV, n = B * T * nh * hd;
  const float scaling[4] = {32.0f, 1.0f, 4.0f, 8192.0f};
  const Typed x = randTyped(dt, n, 60, -2.0f, 2.0f);
  const VecF xw = x.widened();
  VecF y32(n);
  tgrt_rope(ctx_, "r", TGRT_F32, xw.data(), y32.data(), B, T, H, KV, hd, 500000.0f, scaling, 1);
  Typed y(dt, VecF(n)), inPlace = x;
  tgrt_rope(ctx_, "r", dt, x.data(), y.data(), B, T, H, KV, hd, 500000.0f, scaling, 1);
  tgrt_rope(ctx_, "r", dt, inPlace.data(), inPlace.data(), B, T, H, KV, hd, 500000.0f, scaling, 1);
  expectRounded(y, y32, "y");
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += inPlace.bits(i) != y.bits(i);
  EXPECT_EQ(differ, 0) << "in place";
  expectClose(y.widened(), ropeRef(toD(xw), B, T, H, KV, hd, 500000.0f, scaling, 1), 1e-6,
              relRounding(dt) + 1e-6, "vs double");
}

// ------------------------------------------------------------------- SwiGLU --

VecD swigluRef(const VecD& x, int64_t rows, int64_t f) {
  VecD y((size_t)(rows * f));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < f; ++c) {
      const double g = x[r * 2 * f + c], u = x[r * 2 * f + f + c];
      y[r * f + c] = g / (1.0 + std::exp(-g)) * u;
    }
  return y;
}

TEST_F(Llama, SwigluForwardMatchesDoubleReference) {
  const int64_t rows = 5, f = 12;
  const VecF x = randVec(rows * 2 * f, 70, -6.0f, 6.0f);
  VecF y(rows * f, kInf);
  tgrt_swiglu_fwd(ctx_, "layers.0.mlp.act", TGRT_F32, x.data(), y.data(), rows, f);
  expectClose(y, swigluRef(toD(x), rows, f), 1e-7, 1e-6, "y");
  // silu(0) = 0, silu(g) -> g for large g, -> 0 for very negative g.
  const VecF e = {0.0f, 30.0f, -100.0f, 3.0f, 2.0f, 5.0f};
  VecF ye(3);
  tgrt_swiglu_fwd(ctx_, "s", TGRT_F32, e.data(), ye.data(), 1, 3);
  EXPECT_EQ(ye[0], 0.0f);
  EXPECT_NEAR(ye[1], 60.0f, 1e-5);
  EXPECT_NEAR(ye[2], 0.0f, 1e-30);
}

TEST_F(Llama, SwigluBackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, f = 5;
  const VecF x = randVec(rows * 2 * f, 80, -4.0f, 4.0f), w = randVec(rows * f, 81);
  VecF dx(rows * 2 * f, kInf);
  tgrt_swiglu_bwd(ctx_, "s", TGRT_F32, x.data(), w.data(), dx.data(), rows, f);
  const VecD wd = toD(w);
  auto l = [&](const VecD& v) { return dotD(wd, swigluRef(v, rows, f)); };
  expectClose(dx, numericGrad(l, toD(x)), 2e-6, 2e-5, "dx");
}

TEST_P(LlamaDt, SwigluLowPrecisionIsTheRoundedF32) {
  const int32_t dt = GetParam();
  const int64_t rows = 4, f = 9;
  const Typed x = randTyped(dt, rows * 2 * f, 90, -5.0f, 5.0f), dy = randTyped(dt, rows * f, 91);
  const VecF xw = x.widened(), dyw = dy.widened();
  VecF y32(rows * f), dx32(rows * 2 * f);
  tgrt_swiglu_fwd(ctx_, "s", TGRT_F32, xw.data(), y32.data(), rows, f);
  tgrt_swiglu_bwd(ctx_, "s", TGRT_F32, xw.data(), dyw.data(), dx32.data(), rows, f);
  Typed y(dt, VecF(rows * f)), dx(dt, VecF(rows * 2 * f));
  tgrt_swiglu_fwd(ctx_, "s", dt, x.data(), y.data(), rows, f);
  tgrt_swiglu_bwd(ctx_, "s", dt, x.data(), dy.data(), dx.data(), rows, f);
  expectRounded(y, y32, "y");
  expectRounded(dx, dx32, "dx");
  expectClose(y.widened(), swigluRef(toD(xw), rows, f), 1e-6, relRounding(dt) + 1e-6, "vs double");
}

// ------------------------------------------------------ grouped-query attention --

/// Double reference of grouped-query attention on contiguous q [B, H, T, hd] and k, v
/// [B, KV, T, hd]: out [B, H, T, hd]; lse [B, H, T] in *lse when given.
VecD gqaRef(const VecD& q, const VecD& k, const VecD& v, int64_t B, int64_t H, int64_t KV,
            int64_t T, int64_t hd, bool causal, int64_t window, double scale,
            VecD* lse = nullptr) {
  VecD out((size_t)(B * H * T * hd), 0.0);
  if (lse) lse->assign((size_t)(B * H * T), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t qo = (b * H + h) * T * hd, ko = (b * KV + h / (H / KV)) * T * hd;
      for (int64_t i = 0; i < T; ++i) {
        VecD s((size_t)T, -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          if (causal && (j > i || (window > 0 && i - j >= window))) continue;
          double d = 0.0;
          for (int64_t c = 0; c < hd; ++c) d += q[qo + i * hd + c] * k[ko + j * hd + c];
          s[j] = scale * d;
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < T; ++j) sum += std::exp(s[j] - mx);
        for (int64_t j = 0; j < T; ++j)
          for (int64_t c = 0; c < hd; ++c)
            out[qo + i * hd + c] += std::exp(s[j] - mx) / sum * v[ko + j * hd + c];
        if (lse) (*lse)[(b * H + h) * T + i] = mx + std::log(sum);
      }
    }
  return out;
}

/// k [B, KV, T, hd] repeated per group into [B, H, T, hd] (what GQA avoids in memory).
template <class V>
V repeatKv(const V& k, int64_t B, int64_t H, int64_t KV, int64_t T, int64_t hd) {
  V r((size_t)(B * H * T * hd));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      std::copy(k.begin() + (b * KV + h / (H / KV)) * T * hd,
                k.begin() + (b * KV + h / (H / KV) + 1) * T * hd, r.begin() + (b * H + h) * T * hd);
  return r;
}

/// The group sums, in head order and float32, of dk [B, H, T, hd] into [B, KV, T, hd].
VecF groupSum(const VecF& dk, int64_t B, int64_t H, int64_t KV, int64_t T, int64_t hd) {
  VecF s((size_t)(B * KV * T * hd));
  const int64_t G = H / KV, n = T * hd;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t kv = 0; kv < KV; ++kv)
      for (int64_t x = 0; x < n; ++x) {
        float acc = dk[(size_t)((b * H + kv * G) * n + x)];
        for (int64_t g = 1; g < G; ++g) acc += dk[(size_t)((b * H + kv * G + g) * n + x)];
        s[(size_t)((b * KV + kv) * n + x)] = acc;
      }
  return s;
}

struct AttnCase {
  bool causal;
  int64_t window;
};
const AttnCase kAttnCases[] = {{false, 0}, {true, 0}, {true, 3}, {true, 1}};
std::string caseName(const AttnCase& ac) {
  return "causal=" + std::to_string(ac.causal) + " window=" + std::to_string(ac.window);
}

/// Contiguous strides of [B, heads, T, hd]: (heads T hd, T hd, hd).
#define CONTIG(heads, T, hd) (heads) * (T) * (hd), (T) * (hd), (hd)

TEST_F(Llama, GqaForwardMatchesDoubleReference) {
  const int64_t B = 2, H = 6, T = 7, hd = 8;
  const float scale = 1.0f / std::sqrt((float)hd);
  for (int64_t KV : {6, 3, 2, 1})
    for (const AttnCase& ac : kAttnCases) {
      const std::string name = "kv_heads " + std::to_string(KV) + " " + caseName(ac);
      const VecF q = randVec(B * H * T * hd, 100, -2.0f, 2.0f),
                 k = randVec(B * KV * T * hd, 101, -2.0f, 2.0f), v = randVec(B * KV * T * hd, 102);
      VecF out(q.size(), kInf), lse(B * H * T, kInf);
      tgrt_attention_gqa_fwd(ctx_, "layers.0.attn", TGRT_F32, q.data(), k.data(), v.data(),
                             out.data(), lse.data(), B, H, KV, T, hd, CONTIG(H, T, hd),
                             CONTIG(KV, T, hd), CONTIG(H, T, hd), ac.causal, ac.window, scale);
      VecD wantLse;
      const VecD want =
          gqaRef(toD(q), toD(k), toD(v), B, H, KV, T, hd, ac.causal, ac.window, scale, &wantLse);
      expectClose(out, want, 1e-6, 1e-6, "out " + name);
      expectClose(lse, wantLse, 1e-6, 1e-6, "lse " + name);
    }
}

// kv_heads == heads with kv strides == in strides is tgrt_attention_fwd / _bwd, bit for bit.
TEST_P(LlamaDt, GqaWithAllHeadsIsAttentionExactly) {
  const int32_t dt = GetParam();
  const int64_t B = 2, H = 3, T = 6, hd = 8, n = B * H * T * hd;
  const float scale = 0.4f;
  const Typed q = randTyped(dt, n, 110, -2.0f, 2.0f), k = randTyped(dt, n, 111, -2.0f, 2.0f),
              v = randTyped(dt, n, 112), w = randTyped(dt, n, 113);
  for (const AttnCase& ac : kAttnCases) {
    const std::string name = caseName(ac);
    Typed outA(dt, VecF(n)), outG(dt, VecF(n, kInf));
    VecF lseA(B * H * T), lseG(B * H * T, kInf);
    tgrt_attention_fwd(ctx_, "a", dt, q.data(), k.data(), v.data(), outA.data(), lseA.data(), B, H,
                       T, hd, CONTIG(H, T, hd), CONTIG(H, T, hd), ac.causal, ac.window, scale);
    tgrt_attention_gqa_fwd(ctx_, "a", dt, q.data(), k.data(), v.data(), outG.data(), lseG.data(),
                           B, H, H, T, hd, CONTIG(H, T, hd), CONTIG(H, T, hd), CONTIG(H, T, hd),
                           ac.causal, ac.window, scale);
    expectRounded(outG, outA.widened(), "out " + name);
    expectBitEqual(lseG, lseA, "lse " + name);
    Typed dqA(dt, VecF(n)), dkA(dt, VecF(n)), dvA(dt, VecF(n));
    Typed dqG(dt, VecF(n, kInf)), dkG(dt, VecF(n, kInf)), dvG(dt, VecF(n, kInf));
    tgrt_attention_bwd(ctx_, "a", dt, q.data(), k.data(), v.data(), outA.data(), lseA.data(),
                       w.data(), dqA.data(), dkA.data(), dvA.data(), B, H, T, hd, CONTIG(H, T, hd),
                       CONTIG(H, T, hd), ac.causal, ac.window, scale);
    tgrt_attention_gqa_bwd(ctx_, "a", dt, q.data(), k.data(), v.data(), outA.data(), lseA.data(),
                           w.data(), dqG.data(), dkG.data(), dvG.data(), B, H, H, T, hd,
                           CONTIG(H, T, hd), CONTIG(H, T, hd), CONTIG(H, T, hd), ac.causal,
                           ac.window, scale);
    expectRounded(dqG, dqA.widened(), "dq " + name);
    expectRounded(dkG, dkA.widened(), "dk " + name);
    expectRounded(dvG, dvA.widened(), "dv " + name);
  }
}

// kv_heads < heads: the forward equals tgrt_attention_fwd on k, v repeated per group, bit for
// bit; dq too; dk, dv equal the float32 group sums of that run's dk, dv (bf16 / f16: of the
// f32 run on the widened inputs, rounded once).
TEST_P(LlamaDt, GqaEqualsAttentionOnRepeatedKv) {
  const int32_t dt = GetParam();
  const int64_t B = 2, H = 4, T = 7, hd = 8, nq = B * H * T * hd;
  const float scale = 1.0f / std::sqrt((float)hd);
  for (int64_t KV : {2, 1}) {
    const int64_t nkv = B * KV * T * hd;
    const Typed q = randTyped(dt, nq, 120, -2.0f, 2.0f), k = randTyped(dt, nkv, 121, -2.0f, 2.0f),
                v = randTyped(dt, nkv, 122), w = randTyped(dt, nq, 123);
    const VecF qw = q.widened(), kw = k.widened(), vw = v.widened(), ww = w.widened();
    const VecF kr = repeatKv(kw, B, H, KV, T, hd), vr = repeatKv(vw, B, H, KV, T, hd);
    for (const AttnCase& ac : kAttnCases) {
      const std::string name = "kv_heads " + std::to_string(KV) + " " + caseName(ac);
      VecF out32(nq), lse32(B * H * T);
      tgrt_attention_fwd(ctx_, "a", TGRT_F32, qw.data(), kr.data(), vr.data(), out32.data(),
                         lse32.data(), B, H, T, hd, CONTIG(H, T, hd), CONTIG(H, T, hd), ac.causal,
                         ac.window, scale);
      Typed out(dt, VecF(nq, kInf));
      VecF lse(B * H * T, kInf);
      tgrt_attention_gqa_fwd(ctx_, "a", dt, q.data(), k.data(), v.data(), out.data(), lse.data(),
                             B, H, KV, T, hd, CONTIG(H, T, hd), CONTIG(KV, T, hd),
                             CONTIG(H, T, hd), ac.causal, ac.window, scale);
      expectRounded(out, out32, "out " + name);
      expectBitEqual(lse, lse32, "lse " + name);

      const VecF outw = out.widened();
      VecF dq32(nq), dk32(nq), dv32(nq);
      tgrt_attention_bwd(ctx_, "a", TGRT_F32, qw.data(), kr.data(), vr.data(), outw.data(),
                         lse.data(), ww.data(), dq32.data(), dk32.data(), dv32.data(), B, H, T, hd,
                         CONTIG(H, T, hd), CONTIG(H, T, hd), ac.causal, ac.window, scale);
      Typed dq(dt, VecF(nq, kInf)), dk(dt, VecF(nkv, kInf)), dv(dt, VecF(nkv, kInf));
      tgrt_attention_gqa_bwd(ctx_, "a", dt, q.data(), k.data(), v.data(), out.data(), lse.data(),
                             w.data(), dq.data(), dk.data(), dv.data(), B, H, KV, T, hd,
                             CONTIG(H, T, hd), CONTIG(KV, T, hd), CONTIG(H, T, hd), ac.causal,
                             ac.window, scale);
      expectRounded(dq, dq32, "dq " + name);
      expectRounded(dk, groupSum(dk32, B, H, KV, T, hd), "dk " + name);
      expectRounded(dv, groupSum(dv32, B, H, KV, T, hd), "dv " + name);
    }
  }
}

TEST_F(Llama, GqaBackwardMatchesFiniteDifferences) {
  const int64_t B = 2, H = 4, KV = 2, T = 5, hd = 3;
  const float scale = 0.6f;
  const VecF q = randVec(B * H * T * hd, 130, -1.5f, 1.5f),
             k = randVec(B * KV * T * hd, 131, -1.5f, 1.5f), v = randVec(B * KV * T * hd, 132),
             w = randVec(B * H * T * hd, 133);
  const VecD qd = toD(q), kd = toD(k), vd = toD(v), wd = toD(w);
  for (const AttnCase& ac : {AttnCase{false, 0}, AttnCase{true, 0}, AttnCase{true, 2}}) {
    const std::string name = caseName(ac);
    VecF out(q.size()), lse(B * H * T);
    tgrt_attention_gqa_fwd(ctx_, "a", TGRT_F32, q.data(), k.data(), v.data(), out.data(),
                           lse.data(), B, H, KV, T, hd, CONTIG(H, T, hd), CONTIG(KV, T, hd),
                           CONTIG(H, T, hd), ac.causal, ac.window, scale);
    VecF dq(q.size(), kInf), dk(k.size(), kInf), dv(v.size(), kInf);
    tgrt_attention_gqa_bwd(ctx_, "a", TGRT_F32, q.data(), k.data(), v.data(), out.data(),
                           lse.data(), w.data(), dq.data(), dk.data(), dv.data(), B, H, KV, T, hd,
                           CONTIG(H, T, hd), CONTIG(KV, T, hd), CONTIG(H, T, hd), ac.causal,
                           ac.window, scale);
    // L = sum(w * gqa(q, k, v)), so dout = w.
    auto f = [&](const VecD& a, const VecD& b, const VecD& c) {
      return dotD(wd, gqaRef(a, b, c, B, H, KV, T, hd, ac.causal, ac.window, scale));
    };
    expectClose(dq, numericGrad([&](const VecD& x) { return f(x, kd, vd); }, qd), 2e-6, 2e-5,
                "dq " + name);
    expectClose(dk, numericGrad([&](const VecD& x) { return f(qd, x, vd); }, kd), 2e-6, 2e-5,
                "dk " + name);
    expectClose(dv, numericGrad([&](const VecD& x) { return f(qd, kd, x); }, vd), 2e-6, 2e-5,
                "dv " + name);
  }
}

// q, k, v as views into one packed projection [B, T, H + 2 KV, hd] (with pad elements after
// each token row), out [B, T, H, hd], dq, dk, dv into one packed gradient buffer of the same
// layout: every result equals, bit for bit, the contiguous GQA result, and no element outside
// the outputs' own is written.
TEST_P(LlamaDt, GqaPackedLayoutMatchesContiguous) {
  const int32_t dt = GetParam();
  const int64_t B = 2, H = 4, KV = 2, T = 6, hd = 8, nh = H + 2 * KV;
  const int64_t nq = B * H * T * hd, nkv = B * KV * T * hd;
  const float scale = 1.0f / std::sqrt((float)hd);
  const Typed q = randTyped(dt, nq, 140, -2.0f, 2.0f), k = randTyped(dt, nkv, 141, -2.0f, 2.0f),
              v = randTyped(dt, nkv, 142), w = randTyped(dt, nq, 143);
  const float guard = 1234.5f; // exact in every dtype
  for (int64_t pad : {0, 8}) {
    const int64_t st = nh * hd + pad, sb = T * st, nIn = B * sb;          // packed qkv
    const int64_t ost = H * hd, osb = T * ost, nOut = B * osb;            // out [B, T, H, hd]
    for (const AttnCase& ac : kAttnCases) {
      const std::string name = "pad " + std::to_string(pad) + " " + caseName(ac);
      Typed outC(dt, VecF(nq));
      VecF lseC(B * H * T);
      tgrt_attention_gqa_fwd(ctx_, "a", dt, q.data(), k.data(), v.data(), outC.data(), lseC.data(),
                             B, H, KV, T, hd, CONTIG(H, T, hd), CONTIG(KV, T, hd),
                             CONTIG(H, T, hd), ac.causal, ac.window, scale);
      Typed dqC(dt, VecF(nq)), dkC(dt, VecF(nkv)), dvC(dt, VecF(nkv));
      tgrt_attention_gqa_bwd(ctx_, "a", dt, q.data(), k.data(), v.data(), outC.data(),
                             lseC.data(), w.data(), dqC.data(), dkC.data(), dvC.data(), B, H, KV,
                             T, hd, CONTIG(H, T, hd), CONTIG(KV, T, hd), CONTIG(H, T, hd),
                             ac.causal, ac.window, scale);
      // Packed copies: head n of token (b, i) at b sb + i st + n hd.
      VecF qkvF(nIn, guard), doutF(nOut);
      const VecF qw = q.widened(), kw = k.widened(), vw = v.widened(), ww = w.widened();
      std::vector<bool> owned((size_t)nIn, false);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
          for (int64_t n = 0; n < nh; ++n)
            for (int64_t j = 0; j < hd; ++j) {
              const int64_t p = b * sb + i * st + n * hd + j;
              owned[(size_t)p] = true;
              if (n < H) {
                qkvF[p] = qw[((b * H + n) * T + i) * hd + j];
                doutF[b * osb + i * ost + n * hd + j] = ww[((b * H + n) * T + i) * hd + j];
              } else if (n < H + KV) {
                qkvF[p] = kw[((b * KV + n - H) * T + i) * hd + j];
              } else {
                qkvF[p] = vw[((b * KV + n - H - KV) * T + i) * hd + j];
              }
            }
      Typed qkv(dt, qkvF), dout(dt, doutF), out(dt, VecF(nOut, kInf)), dqkv(dt, VecF(nIn, guard));
      const Typed qkv0 = qkv;
      VecF lse(B * H * T, kInf);
      tgrt_attention_gqa_fwd(ctx_, "a", dt, qkv.at(0), qkv.at(H * hd), qkv.at((H + KV) * hd),
                             out.data(), lse.data(), B, H, KV, T, hd, sb, hd, st, sb, hd, st, osb,
                             hd, ost, ac.causal, ac.window, scale);
      tgrt_attention_gqa_bwd(ctx_, "a", dt, qkv.at(0), qkv.at(H * hd), qkv.at((H + KV) * hd),
                             out.data(), lse.data(), dout.data(), dqkv.at(0), dqkv.at(H * hd),
                             dqkv.at((H + KV) * hd), B, H, KV, T, hd, sb, hd, st, sb, hd, st, osb,
                             hd, ost, ac.causal, ac.window, scale);
      expectBitEqual(lse, lseC, "lse " + name);
      int64_t bad = 0, touched = 0, inputChanged = 0;
      for (int64_t x = 0; x < nIn; ++x) inputChanged += qkv.bits(x) != qkv0.bits(x);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
          for (int64_t n = 0; n < nh; ++n)
            for (int64_t j = 0; j < hd; ++j) {
              const int64_t p = b * sb + i * st + n * hd + j;
              if (n < H) {
                const int64_t c = ((b * H + n) * T + i) * hd + j;
                bad += out.bits(b * osb + i * ost + n * hd + j) != outC.bits(c);
                bad += dqkv.bits(p) != dqC.bits(c);
              } else if (n < H + KV) {
                bad += dqkv.bits(p) != dkC.bits(((b * KV + n - H) * T + i) * hd + j);
              } else {
                bad += dqkv.bits(p) != dvC.bits(((b * KV + n - H - KV) * T + i) * hd + j);
              }
            }
      const Typed guardT(dt, VecF(1, guard));
      for (int64_t x = 0; x < nIn; ++x)
        if (!owned[(size_t)x]) touched += dqkv.bits(x) != guardT.bits(0);
      EXPECT_EQ(bad, 0) << "packed differs from contiguous: " << name;
      EXPECT_EQ(touched, 0) << "padding written: " << name;
      EXPECT_EQ(inputChanged, 0) << "qkv modified: " << name;
    }
  }
}

// bf16 / f16 inputs: within the dtype's rounding (plus the float32 arithmetic) of the double
// reference on the widened inputs.
TEST_P(LlamaDt, GqaLowPrecisionWithinRoundingOfDoubleReference) {
  const int32_t dt = GetParam();
  const int64_t B = 1, H = 4, KV = 2, T = 8, hd = 16;
  const float scale = 0.25f;
  const Typed q = randTyped(dt, B * H * T * hd, 150, -2.0f, 2.0f),
              k = randTyped(dt, B * KV * T * hd, 151, -2.0f, 2.0f),
              v = randTyped(dt, B * KV * T * hd, 152);
  Typed out(dt, VecF(q.size()));
  VecF lse(B * H * T);
  tgrt_attention_gqa_fwd(ctx_, "a", dt, q.data(), k.data(), v.data(), out.data(), lse.data(), B,
                         H, KV, T, hd, CONTIG(H, T, hd), CONTIG(KV, T, hd), CONTIG(H, T, hd), 1, 0,
                         scale);
  VecD wantLse;
  const VecD want = gqaRef(toD(q.widened()), toD(k.widened()), toD(v.widened()), B, H, KV, T, hd,
                           true, 0, scale, &wantLse);
  expectClose(out.widened(), want, 1e-6, relRounding(dt) + 1e-6, "out");
  expectClose(lse, wantLse, 1e-6, 1e-6, "lse");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LlamaDt, ::testing::Values(TGRT_F32, TGRT_BF16, TGRT_F16),
                         dtParamName);

// -------------------------------------------------------------------- errors --

TEST_F(LlamaDeathTest, GqaHeadsNotAMultipleOfKvHeadsFails) {
  VecF a(256, 0.5f);
  EXPECT_EXIT(tgrt_attention_gqa_fwd(ctx_, "layers.2.attn", TGRT_F32, a.data(), a.data(), a.data(),
                                     a.data(), a.data(), 1, 4, 3, 2, 4, CONTIG(4, 2, 4),
                                     CONTIG(3, 2, 4), CONTIG(4, 2, 4), 1, 0, 1.0f),
              ::testing::ExitedWithCode(1),
              "tgrt: layers.2.attn: attention_gqa_fwd: heads 4 is not a multiple of kv_heads 3");
  EXPECT_EXIT(tgrt_attention_gqa_bwd(ctx_, "layers.2.attn", TGRT_F32, a.data(), a.data(), a.data(),
                                     a.data(), a.data(), a.data(), a.data(), a.data(), a.data(), 1,
                                     4, 3, 2, 4, CONTIG(4, 2, 4), CONTIG(3, 2, 4), CONTIG(4, 2, 4),
                                     1, 0, 1.0f),
              ::testing::ExitedWithCode(1),
              "tgrt: layers.2.attn: attention_gqa_bwd: heads 4 is not a multiple of kv_heads 3");
  EXPECT_EXIT(tgrt_attention_gqa_fwd(ctx_, "attn", TGRT_F32, a.data(), a.data(), a.data(),
                                     a.data(), a.data(), 1, 4, 0, 2, 4, CONTIG(4, 2, 4),
                                     CONTIG(1, 2, 4), CONTIG(4, 2, 4), 1, 0, 1.0f),
              ::testing::ExitedWithCode(1), "tgrt: attn: attention_gqa_fwd: heads 4 is not a");
}

TEST_F(LlamaDeathTest, RopeBadArgumentsFail) {
  VecF a(512, 0.5f);
  EXPECT_EXIT(tgrt_rope(ctx_, "layers.0.rope", TGRT_F32, a.data(), a.data(), 1, 2, 2, 1, 7,
                        10000.0f, nullptr, 1),
              ::testing::ExitedWithCode(1), "tgrt: layers.0.rope: rope: head dim 7 is odd");
  EXPECT_EXIT(tgrt_rope(ctx_, "r", TGRT_F32, a.data(), a.data(), 1, 2, 2, 1, 8, 10000.0f, nullptr,
                        0),
              ::testing::ExitedWithCode(1), "tgrt: r: rope: sign 0 is not \\+1 or -1");
  EXPECT_EXIT(tgrt_rope(ctx_, "r", TGRT_F32, a.data(), a.data(), 1, 2, 2, 1, 8, 0.0f, nullptr, 1),
              ::testing::ExitedWithCode(1), "tgrt: r: rope: theta 0 is not > 0");
  const float badScaling[4] = {8.0f, 4.0f, 4.0f, 8192.0f}; // high_freq_factor == low
  EXPECT_EXIT(tgrt_rope(ctx_, "r", TGRT_F32, a.data(), a.data(), 1, 2, 2, 1, 8, 10000.0f,
                        badScaling, 1),
              ::testing::ExitedWithCode(1), "tgrt: r: rope: scaling");
  EXPECT_EXIT(tgrt_rope(ctx_, "r", TGRT_F32, a.data(), nullptr, 1, 2, 2, 1, 8, 10000.0f, nullptr,
                        1),
              ::testing::ExitedWithCode(1), "tgrt: r: rope: pointer argument #1 is NULL");
  EXPECT_EXIT(tgrt_rope(ctx_, "r", 5, a.data(), a.data(), 1, 2, 2, 1, 8, 10000.0f, nullptr, 1),
              ::testing::ExitedWithCode(1), "tgrt: r: rope: unknown dtype 5");
}

TEST_F(LlamaDeathTest, NullPointersNegativeSizesAndUnknownDtypesFail) {
  VecF a(64, 0.5f), r(8);
  EXPECT_EXIT(tgrt_rms_norm_fwd(ctx_, "layers.1.ffn_norm", TGRT_F32, a.data(), TGRT_F32, nullptr,
                                TGRT_F32, a.data(), r.data(), 2, 4, 1e-5f),
              ::testing::ExitedWithCode(1),
              "tgrt: layers.1.ffn_norm: rms_norm_fwd: pointer argument #1 is NULL");
  EXPECT_EXIT(tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, a.data(), 3, a.data(), TGRT_F32, a.data(),
                                r.data(), 2, 4, 1e-5f),
              ::testing::ExitedWithCode(1), "tgrt: n: rms_norm_fwd \\(p_dt\\): unknown dtype 3");
  EXPECT_EXIT(tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, a.data(), TGRT_F32, a.data(), TGRT_F32,
                                a.data(), r.data(), 2, 0, 1e-5f),
              ::testing::ExitedWithCode(1), "tgrt: n: rms_norm_fwd: d must be > 0");
  EXPECT_EXIT(tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, a.data(), TGRT_F32, a.data(), TGRT_F32,
                                a.data(), r.data(), a.data(), nullptr, 2, 4),
              ::testing::ExitedWithCode(1), "tgrt: n: rms_norm_bwd: pointer argument #0 is NULL");
  EXPECT_EXIT(tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, a.data(), TGRT_F32, a.data(), TGRT_F32,
                                a.data(), nullptr, a.data(), a.data(), 2, 4),
              ::testing::ExitedWithCode(1), "tgrt: n: rms_norm_bwd: pointer argument #3 is NULL");
  EXPECT_EXIT(tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, a.data(), TGRT_F32, a.data(), TGRT_F32,
                                a.data(), r.data(), a.data(), a.data(), -2, 4),
              ::testing::ExitedWithCode(1), "tgrt: n: negative size in rms_norm_bwd");
  EXPECT_EXIT(tgrt_rms_norm_bwd_acc(ctx_, "layers.2.ln2", TGRT_F32, a.data(), TGRT_F32, a.data(),
                                    TGRT_F32, a.data(), r.data(), nullptr, TGRT_BF16, nullptr,
                                    a.data(), 2, 4),
              ::testing::ExitedWithCode(1),
              "tgrt: layers.2.ln2: rms_norm_bwd_acc: pointer argument #0 is NULL");
  EXPECT_EXIT(tgrt_rms_norm_bwd_acc(ctx_, "n", TGRT_F32, a.data(), 7, a.data(), TGRT_F32,
                                    a.data(), r.data(), a.data(), TGRT_BF16, nullptr, a.data(),
                                    2, 4),
              ::testing::ExitedWithCode(1), "tgrt: n: rms_norm_bwd_acc \\(x, dres\\): unknown dtype 7");
  EXPECT_EXIT(tgrt_swiglu_fwd(ctx_, "layers.0.mlp.act", TGRT_F32, nullptr, a.data(), 2, 4),
              ::testing::ExitedWithCode(1),
              "tgrt: layers.0.mlp.act: swiglu_fwd: pointer argument #0 is NULL");
  EXPECT_EXIT(tgrt_swiglu_bwd(ctx_, "s", TGRT_F32, a.data(), a.data(), nullptr, 2, 4),
              ::testing::ExitedWithCode(1), "tgrt: s: swiglu_bwd: pointer argument #2 is NULL");
  EXPECT_EXIT(tgrt_swiglu_bwd(ctx_, "s", 9, a.data(), a.data(), a.data(), 2, 4),
              ::testing::ExitedWithCode(1), "tgrt: s: swiglu_bwd: unknown dtype 9");
  EXPECT_EXIT(tgrt_swiglu_fwd(ctx_, "s", TGRT_F32, a.data(), a.data(), 2, -1),
              ::testing::ExitedWithCode(1), "tgrt: s: negative size in swiglu_fwd");
  EXPECT_EXIT(tgrt_attention_gqa_fwd(ctx_, "attn", TGRT_F32, a.data(), nullptr, a.data(),
                                     a.data(), r.data(), 1, 2, 1, 2, 4, CONTIG(2, 2, 4),
                                     CONTIG(1, 2, 4), CONTIG(2, 2, 4), 1, 0, 1.0f),
              ::testing::ExitedWithCode(1),
              "tgrt: attn: attention_gqa_fwd: pointer argument #1 is NULL");
  EXPECT_EXIT(tgrt_attention_gqa_bwd(ctx_, "attn", TGRT_F32, a.data(), a.data(), a.data(),
                                     a.data(), r.data(), a.data(), a.data(), nullptr, a.data(), 1,
                                     2, 1, 2, 4, CONTIG(2, 2, 4), CONTIG(1, 2, 4), CONTIG(2, 2, 4),
                                     1, 0, 1.0f),
              ::testing::ExitedWithCode(1),
              "tgrt: attn: attention_gqa_bwd: pointer argument #7 is NULL");
  EXPECT_EXIT(tgrt_attention_gqa_fwd(ctx_, "attn", TGRT_F32, a.data(), a.data(), a.data(),
                                     a.data(), r.data(), 1, 2, 1, 2, 4, CONTIG(2, 2, 4), -1, 8, 4,
                                     CONTIG(2, 2, 4), 1, 0, 1.0f),
              ::testing::ExitedWithCode(1),
              "tgrt: attn: negative size in attention_gqa_fwd\\(kv strides\\)");
  EXPECT_EXIT(tgrt_attention_gqa_fwd(ctx_, "attn", 4, a.data(), a.data(), a.data(), a.data(),
                                     r.data(), 1, 2, 1, 2, 4, CONTIG(2, 2, 4), CONTIG(1, 2, 4),
                                     CONTIG(2, 2, 4), 1, 0, 1.0f),
              ::testing::ExitedWithCode(1), "tgrt: attn: attention_gqa_fwd: unknown dtype 4");
}

// Nothing to do: zero-sized calls read no pointer.
TEST_F(Llama, EmptyShapesAreNoOps) {
  tgrt_rms_norm_fwd(ctx_, "n", TGRT_F32, nullptr, TGRT_F32, nullptr, TGRT_F32, nullptr, nullptr, 0,
                    4, 1e-5f);
  tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, nullptr, TGRT_F32, nullptr, TGRT_F32, nullptr, nullptr,
                    nullptr, nullptr, 3, 0);
  tgrt_rope(ctx_, "r", TGRT_F32, nullptr, nullptr, 0, 4, 2, 1, 8, 10000.0f, nullptr, 1);
  tgrt_swiglu_fwd(ctx_, "s", TGRT_F32, nullptr, nullptr, 0, 4);
  tgrt_swiglu_bwd(ctx_, "s", TGRT_F32, nullptr, nullptr, nullptr, 3, 0);
  tgrt_attention_gqa_fwd(ctx_, "a", TGRT_F32, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 4,
                         2, 3, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1.0f);
  // rms_norm_bwd with rows == 0 still zeroes dgamma (a column sum over no rows).
  VecF dg(4, kInf);
  tgrt_rms_norm_bwd(ctx_, "n", TGRT_F32, nullptr, TGRT_F32, nullptr, TGRT_F32, nullptr, nullptr,
                    nullptr, dg.data(), 0, 4);
  for (float g : dg) EXPECT_EQ(g, 0.0f);
}

} // namespace

// ------------------------------------------------ the residual GEMM, no bias --

/// tg.matmul_residual lowers to tgrt_matmul_bias_residual with bias NULL: out = res + A B,
/// bit-equal to the same call with a zero bias, and in place on res; against a double
/// reference.
TEST_F(Llama, MatmulResidualWithoutBias) {
  const int64_t m = 6, n = 5, k = 7;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), res(m * n), zero(n, 0.0f);
  for (auto* v : {&a, &b, &res})
    for (float& x : *v) x = u(rng);
  std::vector<float> out(m * n), outZero(m * n), inPlace = res;
  tgrt_matmul_bias_residual(ctx_, "t", TGRT_F32, a.data(), b.data(), TGRT_F32, nullptr,
                            res.data(), out.data(), m, n, k, 0, 0, 1.0f);
  tgrt_matmul_bias_residual(ctx_, "t", TGRT_F32, a.data(), b.data(), TGRT_F32, zero.data(),
                            res.data(), outZero.data(), m, n, k, 0, 0, 1.0f);
  tgrt_matmul_bias_residual(ctx_, "t", TGRT_F32, a.data(), b.data(), TGRT_F32, nullptr,
                            inPlace.data(), inPlace.data(), m, n, k, 0, 0, 1.0f);
  for (int64_t i = 0; i < m * n; ++i) {
    double ref = res[i];
    for (int64_t j = 0; j < k; ++j) ref += (double)a[i / n * k + j] * b[j * n + i % n];
    EXPECT_NEAR(out[i], ref, 1e-5) << i;
    EXPECT_EQ(out[i], outZero[i]) << i;
    EXPECT_EQ(out[i], inPlace[i]) << i;
  }
}
