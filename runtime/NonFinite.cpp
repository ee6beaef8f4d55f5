// NonFinite.cpp — the non-finite checks of runtime/tgrt.h (tgrt_check_*), for every backend.
//
// Backend-independent: built into each backend library (tgrt_cpu, tgrt_cuda) and reaching the
// tensors only through tgrt_region and tgrt_tensor_stats, which each backend implements (a
// plain loop on CPU, a reduction kernel on CUDA). A session (tgrt_check_begin .. _end) per
// checked context holds the input statistics taken before an in-place call and the report of
// the first op that wrote a non-finite value.
#include "runtime/tgrt.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Session {
  tgrt_ctx* ctx = nullptr;
  bool found = false;
  std::string report;
  /// Statistics tgrt_check_inputs took for `before_site`, one per tensor (count -1: none).
  const tgrt_check_site* before_site = nullptr;
  std::vector<tgrt_stats> before;
};

std::mutex g_mu;
std::vector<std::unique_ptr<Session>> g_sessions; ///< guarded by g_mu
std::atomic<int> g_active{0};                     ///< g_sessions.size()

/// The session of ctx or nullptr. Call with g_mu held.
Session* sessionOf(tgrt_ctx* ctx) {
  for (auto& s : g_sessions)
    if (s->ctx == ctx) return s.get();
  return nullptr;
}

const char* dtypeText(int32_t dt) {
  switch (dt) {
  case TGRT_F32: return "f32";
  case TGRT_BF16: return "bf16";
  case TGRT_F16: return "f16";
  case TGRT_CHECK_I32: return "i32";
  default: return "?";
  }
}

tgrt_stats statsOf(tgrt_ctx* ctx, const char* loc, const tgrt_check_tensor& t) {
  tgrt_stats s;
  const char* base = tgrt_region(ctx, t.region);
  tgrt_tensor_stats(ctx, loc, t.dtype, base + t.offset, t.rows, t.cols, t.ld, &s);
  return s;
}

int64_t badCount(const tgrt_stats& s, int32_t flags) {
  return s.nan + s.pos_inf + ((flags & TGRT_CHECK_NEG_INF_OK) ? 0 : s.neg_inf);
}

std::string num(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

/// "min -0.5 max inf, 3 not finite (0 NaN, 3 +inf, 0 -inf)" or "..., all finite".
std::string describe(const tgrt_stats& s, int32_t flags) {
  std::string r;
  if (std::isnan(s.min)) r = s.count == 0 ? "empty" : "every element NaN";
  else r = "min " + num(s.min) + " max " + num(s.max);
  const int64_t bad = badCount(s, flags);
  if (bad == 0 && s.neg_inf == 0) return r + ", all finite";
  r += ", " + std::to_string(s.nan + s.pos_inf + s.neg_inf) + " of " + std::to_string(s.count) +
       " not finite (" + std::to_string(s.nan) + " NaN, " + std::to_string(s.pos_inf) +
       " +inf, " + std::to_string(s.neg_inf) + " -inf)";
  if (bad == 0) r += "; -inf is allowed here";
  return r;
}

std::string header(const tgrt_check_tensor& t) {
  return std::string(t.name ? t.name : "?") + " " + dtypeText(t.dtype) + " " +
         (t.shape ? t.shape : "?") + ": ";
}

} // namespace

extern "C" {

void tgrt_check_begin(tgrt_ctx* ctx) {
  std::lock_guard<std::mutex> lock(g_mu);
  Session* s = sessionOf(ctx);
  if (!s) {
    g_sessions.push_back(std::make_unique<Session>());
    s = g_sessions.back().get();
    g_active.store((int)g_sessions.size(), std::memory_order_release);
  }
  *s = Session();
  s->ctx = ctx;
}

int32_t tgrt_check_enabled(tgrt_ctx* ctx) {
  if (g_active.load(std::memory_order_acquire) == 0) return 0;
  std::lock_guard<std::mutex> lock(g_mu);
  Session* s = sessionOf(ctx);
  return s && !s->found ? 1 : 0;
}

void tgrt_check_inputs(tgrt_ctx* ctx, const tgrt_check_site* site) {
  if (!site || g_active.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  Session* s = sessionOf(ctx);
  if (!s || s->found) return;
  s->before_site = site;
  s->before.assign((size_t)site->n_tensors, tgrt_stats{-1, 0, 0, 0, NAN, NAN});
  for (int32_t i = 0; i < site->n_tensors; ++i)
    if (site->tensors[i].role == TGRT_CHECK_IN_OVERWRITTEN)
      s->before[(size_t)i] = statsOf(ctx, site->loc, site->tensors[i]);
}

int32_t tgrt_check_op(tgrt_ctx* ctx, const tgrt_check_site* site) {
  if (!site || g_active.load(std::memory_order_acquire) == 0) return 0;
  std::lock_guard<std::mutex> lock(g_mu);
  Session* s = sessionOf(ctx);
  if (!s || s->found) return 0;
  const bool have_before = s->before_site == site;
  s->before_site = nullptr;
  std::vector<tgrt_stats> out((size_t)site->n_tensors);
  bool hit = false;
  for (int32_t i = 0; i < site->n_tensors; ++i) {
    const tgrt_check_tensor& t = site->tensors[i];
    if (t.role != TGRT_CHECK_OUT) continue;
    out[(size_t)i] = statsOf(ctx, site->loc, t);
    hit |= badCount(out[(size_t)i], t.flags) > 0;
  }
  if (!hit) return 0;
  std::string r = std::string(site->loc ? site->loc : "?") + " (" + (site->op ? site->op : "?") +
                  ", " + (site->phase ? site->phase : "?") + "; runtime call " +
                  (site->kernel ? site->kernel : "?") + ") wrote non-finite values:";
  for (int32_t i = 0; i < site->n_tensors; ++i) {
    const tgrt_check_tensor& t = site->tensors[i];
    if (t.role == TGRT_CHECK_OUT)
      r += "\n  output " + header(t) + describe(out[(size_t)i], t.flags);
  }
  for (int32_t i = 0; i < site->n_tensors; ++i) {
    const tgrt_check_tensor& t = site->tensors[i];
    if (t.role == TGRT_CHECK_IN) {
      r += "\n  input  " + header(t) + describe(statsOf(ctx, site->loc, t), 0);
    } else if (t.role == TGRT_CHECK_IN_OVERWRITTEN) {
      r += "\n  input  " + header(t);
      if (have_before && s->before[(size_t)i].count >= 0)
        r += describe(s->before[(size_t)i], 0) + " (before the call; updated in place)";
      else
        r += "(updated in place; its value before the call was not recorded)";
    }
  }
  s->found = true;
  s->report = r;
  return 1;
}

const char* tgrt_check_report(tgrt_ctx* ctx) {
  std::lock_guard<std::mutex> lock(g_mu);
  Session* s = sessionOf(ctx);
  return s && s->found ? s->report.c_str() : nullptr;
}

void tgrt_check_end(tgrt_ctx* ctx) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (size_t i = 0; i < g_sessions.size(); ++i)
    if (g_sessions[i]->ctx == ctx) {
      g_sessions.erase(g_sessions.begin() + (long)i);
      break;
    }
  g_active.store((int)g_sessions.size(), std::memory_order_release);
}

} // extern "C"
