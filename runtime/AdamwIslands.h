/* AdamwIslands.h — the no-decay islands of tgrt_adamw_islands (runtime/tgrt_kernels.def),
 * shared by the CPU and CUDA backends: the argument check and the membership test. */
#ifndef TGRT_ADAMW_ISLANDS_H
#define TGRT_ADAMW_ISLANDS_H

#include "runtime/tgrt.h"

#include <stdint.h>
#include <stdio.h>

/* Elements i with base <= i < base + reps * period whose offset (i - base) mod period lies
 * in [s0, s0 + l0) or [s1, s1 + l1); period 0: none. */
struct tgrt_adamw_islands_t {
  int64_t base = 0, period = 0, reps = 0, s0 = 0, l0 = 0, s1 = 0, l1 = 0;
  TGRT_HOST_DEVICE bool contains(int64_t i) const {
    if (period == 0 || i < base) return false;
    const int64_t q = i - base;
    if (q >= reps * period) return false;
    const int64_t r = q % period;
    return (r >= s0 && r < s0 + l0) || (r >= s1 && r < s1 + l1);
  }
  /* Non-negative fields, islands inside their period and the last one inside [0, n). */
  bool fits(int64_t n) const {
    if (base < 0 || period < 0 || reps < 0 || s0 < 0 || l0 < 0 || s1 < 0 || l1 < 0 ||
        s0 + l0 > period || s1 + l1 > period)
      return false;
    const int64_t end = s0 + l0 > s1 + l1 ? s0 + l0 : s1 + l1;
    return reps == 0 || base + (reps - 1) * period + end <= n;
  }
  /* The backends' error text when !fits(n) (into buf, at most size bytes). */
  void describe(char* buf, size_t size, int64_t n) const {
    snprintf(buf, size,
             "adamw_islands: islands (base %lld, period %lld, reps %lld, [%lld, +%lld), "
             "[%lld, +%lld)) outside the run of %lld elements",
             (long long)base, (long long)period, (long long)reps, (long long)s0, (long long)l0,
             (long long)s1, (long long)l1, (long long)n);
  }
};

#endif
