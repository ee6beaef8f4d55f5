// RuntimeTestUtil.h — helpers shared by the runtime unit tests (RuntimeCpuTest.cpp,
// RuntimeLlamaTest.cpp): random vectors, tolerance comparison, finite differences.
#ifndef TGC_TEST_UNIT_RUNTIMETESTUTIL_H
#define TGC_TEST_UNIT_RUNTIMETESTUTIL_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace rtest {

using VecF = std::vector<float>;
using VecD = std::vector<double>;
inline const float kInf = std::numeric_limits<float>::infinity();

/// n floats uniform in [lo, hi), deterministic in seed.
inline VecF randVec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  VecF v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline VecD toD(const VecF& v) { return VecD(v.begin(), v.end()); }

/// Expects |got[i] - want[i]| <= atol + rtol*|want[i]| for every i; reports the count and
/// the worst offender.
inline void expectClose(const VecF& got, const VecD& want, double atol, double rtol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, worst = 0;
  double worstExcess = -1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs((double)got[i] - want[i]);
    const double excess = err - (atol + rtol * std::fabs(want[i]));
    if (!(excess <= 0.0)) ++bad;
    if (!(excess <= worstExcess)) {
      worstExcess = excess;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": worst index " << worst << " got " << got[worst] << " want "
                     << want[worst];
}

inline void expectClose(const VecF& got, const VecF& want, double atol, double rtol,
                 const std::string& what) {
  expectClose(got, toD(want), atol, rtol, what);
}

/// Central finite-difference gradient of the scalar function f at x (double), step h.
inline VecD numericGrad(const std::function<double(const VecD&)>& f, VecD x, double h = 1e-5) {
  VecD g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2.0 * h);
  }
  return g;
}

inline double dotD(const VecD& a, const VecD& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

} // namespace rtest

#endif
