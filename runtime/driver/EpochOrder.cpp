// EpochOrder.cpp — see EpochOrder.h.
#include "runtime/driver/EpochOrder.h"

namespace tgrt {

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

WindowPermutation::WindowPermutation(uint64_t n, uint64_t seed, uint64_t epoch) : n_(n) {
  int bits = 0; // ceil(log2(n)): the values 0..n-1 fit in `bits` bits
  while (bits < 64 && (uint64_t(1) << bits) < n) ++bits;
  half_ = bits < 2 ? 1 : (bits + 1) / 2;
  mask_ = half_ >= 32 ? 0xFFFFFFFFull : (uint64_t(1) << half_) - 1;
  const uint64_t key = splitmix64(splitmix64(seed ^ 0x6A09E667F3BCC909ull) ^ epoch);
  for (int r = 0; r < 6; ++r) keys_[r] = splitmix64(key + (uint64_t)r);
}

uint64_t WindowPermutation::encrypt(uint64_t x) const {
  uint64_t l = (x >> half_) & mask_, r = x & mask_;
  for (int k = 0; k < 6; ++k) {
    const uint64_t f = splitmix64(r ^ keys_[k]) & mask_;
    const uint64_t nl = r;
    r = l ^ f;
    l = nl;
  }
  return (l << half_) | r;
}

uint64_t WindowPermutation::operator()(uint64_t i) const {
  uint64_t x = encrypt(i);
  while (x >= n_) x = encrypt(x); // cycle walking: ends, as i's cycle holds i < n
  return x;
}

} // namespace tgrt
