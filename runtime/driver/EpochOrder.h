// EpochOrder.h — the order in which `--sampling shuffle` visits the training windows
// (docs/data.md, "Epochs"): each epoch a pseudo-random permutation of the W non-overlapping
// windows, computed index by index in O(1) memory, so that a position in the run follows
// from (seed, epoch, position) alone. Plain C++; never links MLIR.
#ifndef TGRT_DRIVER_EPOCHORDER_H
#define TGRT_DRIVER_EPOCHORDER_H

#include <cstdint>

namespace tgrt {

/// SplitMix64's output function of z + 0x9E3779B97F4A7C15 (Steele, Lea, Flood 2014): a
/// bijective 64-bit mixer.
uint64_t splitmix64(uint64_t z);

/// A pseudo-random bijection of [0, n), seeded by (seed, epoch): a balanced Feistel network
/// of 6 rounds over the smallest domain of 2^(2h) >= n values (h >= 1 bits a half; round r's
/// function F_r(x) = splitmix64(x ^ k_r) masked to h bits, k_r = splitmix64(key + r), key =
/// splitmix64(splitmix64(seed ^ 0x6A09E667F3BCC909) ^ epoch)), restricted to [0, n) by cycle
/// walking: the network is applied again while the value is >= n. The domain is < 4n, so a
/// lookup costs fewer than 4 applications on average. O(1) memory, no set-up work beyond the
/// 6 round keys; the same (n, seed, epoch) gives the same permutation on every machine.
class WindowPermutation {
public:
  WindowPermutation(uint64_t n, uint64_t seed, uint64_t epoch);
  uint64_t size() const { return n_; }
  /// The i-th element of the permutation, i in [0, n) (i >= n: undefined).
  uint64_t operator()(uint64_t i) const;

private:
  uint64_t encrypt(uint64_t x) const;
  uint64_t n_ = 0;
  int half_ = 1;          ///< h: bits in each half of the Feistel block
  uint64_t mask_ = 1;     ///< 2^h - 1
  uint64_t keys_[6] = {}; ///< k_r
};

} // namespace tgrt

#endif // TGRT_DRIVER_EPOCHORDER_H
