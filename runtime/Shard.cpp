//===- Shard.cpp - ZeRO-2/3 chunk arithmetic, backend-independent -------------===//
//
// tgrt_shard_span (runtime/tgrt.h, "ZeRO-2 / ZeRO-3"): compiled into every backend's
// library, like NonFinite.cpp.
//
//===----------------------------------------------------------------------------===//
#include "runtime/tgrt.h"

extern "C" {

/// Rank `rank`'s chunk of a tensor of n elements in chunks of c: [rank*c, rank*c + count).
/// begin or count may be NULL. Negative n or c count as 0 (nothing held).
void tgrt_shard_span(int64_t n, int64_t c, int32_t rank, int64_t* begin, int64_t* count) {
  const int64_t b = (int64_t)rank * c;
  int64_t k = n - b;
  if (k > c) k = c;
  if (k < 0) k = 0;
  if (begin) *begin = b;
  if (count) *count = k;
}

} // extern "C"
