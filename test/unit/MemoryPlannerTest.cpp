//===- MemoryPlannerTest.cpp - Tests of the static arena planner ---------------===//
//
// Hand cases with exact offsets (the arithmetic is written beside each), property
// tests over seeded random instances, a transformer-shaped instance that must come
// within 5% of the lower bound, verifyPlan negative cases, and a 100k-buffer run.
//
//===----------------------------------------------------------------------------===//
#include "passes/MemoryPlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <random>

using tgc::PlanBuffer;
using tgc::PlanResult;

namespace {

PlanBuffer buf(int64_t bytes, int64_t first, int64_t last, int64_t alignment = 1) {
  PlanBuffer b;
  b.bytes = bytes;
  b.alignment = alignment;
  b.first = first;
  b.last = last;
  return b;
}

/// O(n^2) reference for verifyPlan: any two time-overlapping buffers with bytes > 0
/// whose byte ranges intersect, or a misaligned offset.
bool bruteForceValid(const std::vector<PlanBuffer> &bs) {
  for (size_t i = 0; i < bs.size(); ++i) {
    if (bs[i].bytes <= 0)
      continue;
    if (bs[i].offset < 0 || bs[i].offset % std::max<int64_t>(bs[i].alignment, 1) != 0)
      return false;
    for (size_t j = i + 1; j < bs.size(); ++j) {
      if (bs[j].bytes <= 0)
        continue;
      bool timeOverlap = bs[i].first <= bs[j].last && bs[j].first <= bs[i].last;
      bool memOverlap = bs[i].offset < bs[j].offset + bs[j].bytes &&
                        bs[j].offset < bs[i].offset + bs[i].bytes;
      if (timeOverlap && memOverlap)
        return false;
    }
  }
  return true;
}

int64_t maxEnd(const std::vector<PlanBuffer> &bs) {
  int64_t end = 0;
  for (const PlanBuffer &b : bs)
    if (b.bytes > 0)
      end = std::max(end, b.offset + b.bytes);
  return end;
}

/// O(n^2 log n) reference for planArena's first attempt, size-desc/first-fit: the
/// buffers with bytes > 0 visited by size (largest first; ties: earlier first use,
/// then lower index), each put at the lowest offset that is a multiple of its
/// alignment and meets no time-overlapping buffer placed before it. That offset is
/// found by sorting those buffers by offset and taking the first gap between them
/// (from 0 up) that holds the aligned buffer, else the aligned top. Returns the
/// offsets, -1 for zero-byte buffers.
std::vector<int64_t> bruteForceFirstFit(const std::vector<PlanBuffer> &bs) {
  std::vector<size_t> order;
  for (size_t i = 0; i < bs.size(); ++i)
    if (bs[i].bytes > 0)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (bs[a].bytes != bs[b].bytes)
      return bs[a].bytes > bs[b].bytes;
    return bs[a].first != bs[b].first ? bs[a].first < bs[b].first : a < b;
  });
  std::vector<int64_t> offset(bs.size(), -1);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const PlanBuffer &b = bs[i];
    int64_t align = std::max<int64_t>(b.alignment, 1);
    auto alignUp = [&](int64_t x) { return (x + align - 1) / align * align; };
    std::vector<std::pair<int64_t, int64_t>> used; // [offset, end) of conflicting buffers
    for (size_t j : placed)
      if (bs[j].first <= b.last && b.first <= bs[j].last)
        used.push_back({offset[j], offset[j] + bs[j].bytes});
    std::sort(used.begin(), used.end());
    int64_t free = 0, at = -1; // free: the lowest byte above every range seen so far
    for (const auto &[begin, end] : used) {
      if (alignUp(free) + b.bytes <= begin) {
        at = alignUp(free);
        break;
      }
      free = std::max(free, end);
    }
    offset[i] = at >= 0 ? at : alignUp(free);
    placed.push_back(i);
  }
  return offset;
}

/// Random instance: `n` buffers over `numOps` ops; lifetimes mostly short (up to 8
/// ops), `longPct` percent of them up to the whole step; sizes from 1 byte to 1 MiB,
/// some exact multiples of their alignment; alignments mixed among 1, 4, 16, 64, 256,
/// 4096 (or all 256 when `mixedAlign` is false); a few zero-byte buffers.
std::vector<PlanBuffer> randomInstance(std::mt19937_64 &rng, int n, int64_t numOps,
                                       int longPct = 20, bool mixedAlign = true) {
  std::uniform_int_distribution<int64_t> op(0, numOps - 1);
  std::uniform_int_distribution<int> pct(0, 99);
  const int64_t aligns[] = {1, 4, 16, 64, 256, 4096};
  std::vector<PlanBuffer> bs;
  for (int i = 0; i < n; ++i) {
    int64_t first = op(rng);
    int64_t maxLen = pct(rng) < longPct ? numOps : 8;
    int64_t last = std::min(numOps - 1,
                            first + std::uniform_int_distribution<int64_t>(0, maxLen)(rng));
    int64_t align = mixedAlign ? aligns[rng() % 6] : 256;
    int64_t bytes = std::uniform_int_distribution<int64_t>(1, int64_t(1) << (rng() % 21))(rng);
    int kind = pct(rng);
    if (kind < 30)
      bytes = (bytes + align - 1) / align * align;
    else if (kind < 32)
      bytes = 0;
    bs.push_back(buf(bytes, first, last, align));
  }
  return bs;
}

/// A training step shaped like a small GPT: `layers` blocks of forward ops, each
/// producing an activation that stays live until the matching backward op (LIFO),
/// short-lived scratch inside ops, and gradients that live from the backward op
/// that makes them to the next one. Sizes (in units of B*T*C*4 bytes) follow a GPT
/// block: ln1 1, qkv 3, attention probabilities (scaled by T/C) , attn out 1,
/// residual 1, ln2 1, fc 4, gelu 4, proj 1, residual 1. All sizes are multiples of
/// 256 bytes, as the compiler's are.
std::vector<PlanBuffer> transformerInstance(int layers, int64_t unit, int64_t attnUnits) {
  const int64_t perBlock[] = {1, 3, attnUnits, 1, 1, 1, 4, 4, 1, 1};
  const int perLayer = sizeof(perBlock) / sizeof(perBlock[0]);
  const int64_t forwardOps = int64_t(layers) * perLayer;
  const int64_t total = 2 * forwardOps; // forward ops then backward ops
  std::vector<PlanBuffer> bs;
  for (int64_t i = 0; i < forwardOps; ++i) {
    int64_t bytes = perBlock[i % perLayer] * unit;
    int64_t backward = total - 1 - i;
    bs.push_back(buf(bytes, i, backward, 256));          // activation, LIFO
    bs.push_back(buf(unit / 2, i, i, 256));              // forward scratch
    bs.push_back(buf(bytes, backward, backward + 1 < total ? backward + 1 : backward,
                     256));                              // gradient wrt the activation
    bs.push_back(buf(unit / 4, backward, backward, 256)); // backward scratch
  }
  return bs;
}

/// A GPT training step in more detail than transformerInstance, in units of B*T*C*4
/// bytes (`unit`): per block, ln1 (1, plus small mean/rstd), qkv (3), attention
/// scores and probabilities (`attnUnits` each, B*H*T*T), attention output (1),
/// projection (1, consumed at once by the residual add), residual (1), ln2 (1 + stats),
/// fc (4), gelu (4), projection (1, consumed at once), residual (1); then the
/// logits (`vocabUnits`) and the loss. Saved activations live until the backward op
/// of their forward op (gelu's input also until the next one, as its backward reads
/// it); each backward op makes the gradient of its input, read by the next backward
/// op, except residual-stream gradients, which stay live across the block (both
/// branches read them); every op has scratch of 1/8 to 1/2 unit. All sizes are
/// multiples of 256 bytes.
std::vector<PlanBuffer> gptStepInstance(int layers, int64_t unit, int64_t attnUnits,
                                        int64_t vocabUnits) {
  struct FwdOp {
    int64_t units; // output size
    bool saved;    // kept for the backward pass
  };
  std::vector<FwdOp> fwd;
  for (int l = 0; l < layers; ++l) {
    const FwdOp block[] = {{1, true},         {3, true}, {attnUnits, true}, {attnUnits, true},
                           {1, true},         {1, false}, {1, true},        {1, true},
                           {4, true},         {4, true}, {1, false},        {1, true}};
    fwd.insert(fwd.end(), std::begin(block), std::end(block));
  }
  fwd.push_back({1, true});          // final layernorm
  fwd.push_back({vocabUnits, true}); // logits
  const int64_t F = int64_t(fwd.size());
  const int64_t total = 2 * F + 1; // forward, loss, backward
  auto bwd = [&](int64_t j) { return total - 1 - j; };
  std::vector<PlanBuffer> bs;
  for (int64_t j = 0; j < F; ++j) {
    int64_t bytes = fwd[j].units * unit;
    int64_t last = fwd[j].saved ? bwd(j) : j + 1;
    if (j % 12 == 8) // fc output: gelu's backward reads it too
      last = bwd(j) + 1;
    bs.push_back(buf(bytes, j, last, 256));
    if (j % 12 == 0 || j % 12 == 7) // layernorm mean and rstd, 2 * B*T*4 bytes
      bs.push_back(buf(std::max<int64_t>(256, unit / 384 / 256 * 256), j, bwd(j), 256));
    bs.push_back(buf(unit / 8 * (1 + j % 4), j, j, 256)); // forward scratch
  }
  bs.push_back(buf(unit, F, F, 256)); // loss op scratch
  for (int64_t j = F - 1; j >= 0; --j) {
    int64_t t = bwd(j);
    int64_t bytes = (j > 0 ? fwd[j - 1].units : 1) * unit; // gradient wrt the input
    bool residual = j % 12 == 6 || j % 12 == 11;
    int64_t last = std::min(total - 1, residual ? t + 6 : t + 1);
    bs.push_back(buf(bytes, t, last, 256));
    bs.push_back(buf(unit / 8 * (1 + (j * 7) % 4), t, t, 256)); // backward scratch
  }
  return bs;
}

/// A training step with activation checkpointing per block: the forward pass keeps
/// only each block's output; before a block's backward ops, its forward ops run
/// again and their activations live until the matching backward op (LIFO inside
/// the block). `perBlock` gives the op output sizes in units of `unit` bytes; each
/// op also has scratch, and each gradient lives one op.
std::vector<PlanBuffer> checkpointedInstance(int layers, int64_t unit,
                                             const std::vector<int64_t> &perBlock) {
  const int64_t k = int64_t(perBlock.size());
  const int64_t F = layers * k;
  std::vector<PlanBuffer> bs;
  // Backward of block b (b = layers-1 first) starts at R(b): k recompute ops, then
  // k backward ops.
  auto R = [&](int64_t b) { return F + (layers - 1 - b) * 2 * k; };
  const int64_t total = F + layers * 2 * k;
  for (int64_t b = 0; b < layers; ++b) {
    for (int64_t p = 0; p < k; ++p) {
      int64_t j = b * k + p;
      int64_t bytes = perBlock[p] * unit;
      // Block outputs are kept until the next block's backward is done (its
      // recompute reads them); other forward outputs die at the next op.
      int64_t last = p == k - 1 ? (b + 1 < layers ? R(b + 1) + 2 * k - 1 : R(b)) : j + 1;
      bs.push_back(buf(bytes, j, last, 256));
      bs.push_back(buf(unit / 4, j, j, 256)); // forward scratch
      int64_t r = R(b) + p;                   // recompute
      int64_t back = R(b) + k + (k - 1 - p);  // its backward op
      bs.push_back(buf(bytes, r, back, 256));
      bs.push_back(buf(unit / 4, r, r, 256));
      bs.push_back(buf(bytes, back, std::min(back + 1, total - 1), 256)); // gradient
      bs.push_back(buf(unit / 2, back, back, 256));                        // scratch
    }
  }
  return bs;
}

} // namespace

// ---- hand cases -------------------------------------------------------------------

TEST(MemoryPlanner, EmptyInput) {
  std::vector<PlanBuffer> bs;
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(r.arenaBytes, 0);
  EXPECT_EQ(r.lowerBound, 0);
}

TEST(MemoryPlanner, DisjointLifetimesShareOffsetZero) {
  // A lives [0,1], B lives [2,3]: never live together, so both start at 0.
  std::vector<PlanBuffer> bs = {buf(1024, 0, 1, 256), buf(4096, 2, 3, 256)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[1].offset, 0);
  EXPECT_EQ(r.arenaBytes, 4096); // max(1024, 4096)
  EXPECT_EQ(r.lowerBound, 4096);
  EXPECT_TRUE(tgc::verifyPlan(bs));
}

TEST(MemoryPlanner, ThreeOverlappingBuffersStack) {
  // All live over [0,2]: arena = 256 + 512 + 1024 = 1792. Largest first:
  // 1024 at 0, 512 at 1024, 256 at 1024 + 512 = 1536.
  std::vector<PlanBuffer> bs = {buf(256, 0, 2, 256), buf(512, 0, 2, 256),
                                buf(1024, 0, 2, 256)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(r.arenaBytes, 1792);
  EXPECT_EQ(r.lowerBound, 1792);
  EXPECT_EQ(bs[2].offset, 0);
  EXPECT_EQ(bs[1].offset, 1024);
  EXPECT_EQ(bs[0].offset, 1536);
  EXPECT_EQ(r.heuristic, "size-desc/first-fit"); // the first attempt reached the bound
}

TEST(MemoryPlanner, AlignmentPadding) {
  // Two 100-byte buffers aligned to 256 live together: the second must start at 256,
  // so the arena is 256 + 100 = 356 while the byte lower bound is 200.
  std::vector<PlanBuffer> bs = {buf(100, 0, 1, 256), buf(100, 0, 1, 256)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[1].offset, 256);
  EXPECT_EQ(r.arenaBytes, 356);
  EXPECT_EQ(r.lowerBound, 200);
}

TEST(MemoryPlanner, UnalignedSmallBufferGoesOnTopWithoutPadding) {
  // 300 bytes (align 256) and 10 bytes (align 1): the big one at 0, the small one
  // right after it at 300; arena 310 equals the lower bound.
  std::vector<PlanBuffer> bs = {buf(10, 0, 0, 1), buf(300, 0, 0, 256)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(bs[1].offset, 0);
  EXPECT_EQ(bs[0].offset, 300);
  EXPECT_EQ(r.arenaBytes, 310);
}

TEST(MemoryPlanner, AlignedPlacementInsideGap) {
  // A, B, C are 1000 B (align 1), all live at op 0; A and C live on to op 3. Size
  // order (ties by first use, then index): A at 0, B at 1000, C at 2000. D (10 B,
  // align 256, ops 1..3) meets A [0,1000) and C [2000,3000): the gap [1000,2000)
  // holds it at the first multiple of 256 inside it, 1024.
  std::vector<PlanBuffer> bs = {buf(1000, 0, 3), buf(1000, 0, 0), buf(1000, 0, 3),
                                buf(10, 1, 3, 256)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[1].offset, 1000);
  EXPECT_EQ(bs[2].offset, 2000);
  EXPECT_EQ(bs[3].offset, 1024);
  EXPECT_EQ(r.arenaBytes, 3000);
  EXPECT_EQ(r.lowerBound, 3000);
}

TEST(MemoryPlanner, FreedSpaceIsReused) {
  // X 1024 B [0,1], Y 512 B [0,3], Z 1024 B [2,3]. Size order X, Z, Y: X at 0; Z only
  // meets Y (not placed yet), so it reuses X's bytes at 0; Y meets both, goes at 1024.
  std::vector<PlanBuffer> bs = {buf(1024, 0, 1), buf(512, 0, 3), buf(1024, 2, 3)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[2].offset, 0);
  EXPECT_EQ(bs[1].offset, 1024);
  EXPECT_EQ(r.arenaBytes, 1536); // = lower bound 1024 + 512
  EXPECT_EQ(r.lowerBound, 1536);
}

TEST(MemoryPlanner, BestFitPicksTheTightestGap) {
  // Long-lived P1 1000 [0,9], P2 400 [0,9], P3 280 [0,9]; short G1 500 [0,1] and
  // G2 300 [0,1]. Size order: P1 0, G1 1000, P2 1500, G2 1900, P3 2200. From op 2 on,
  // G1 and G2 are dead: the holes are [1000,1500) (500 B) and [1900,2200) (300 B).
  // Then X (250 B, [2,9]) and W (250 B, align 512, [3,9]).
  //  - First fit puts X at 1000; W needs a multiple of 512: 1024 is taken by X, 2048
  //    + 250 > 2200, so W goes on top at 2560: arena 2810.
  //  - Best fit puts X in the tighter hole at 1900 and W at 1024: arena 2480, the
  //    lower bound (op 0: 1000 + 500 + 400 + 300 + 280), so best fit wins.
  std::vector<PlanBuffer> bs = {buf(1000, 0, 9), buf(500, 0, 1),   buf(400, 0, 9),
                                buf(300, 0, 1),  buf(280, 0, 9),   buf(250, 2, 9),
                                buf(250, 3, 9, 512)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(r.heuristic, "size-desc/best-fit");
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[1].offset, 1000);
  EXPECT_EQ(bs[2].offset, 1500);
  EXPECT_EQ(bs[3].offset, 1900);
  EXPECT_EQ(bs[4].offset, 2200);
  EXPECT_EQ(bs[5].offset, 1900);
  EXPECT_EQ(bs[6].offset, 1024);
  EXPECT_EQ(r.arenaBytes, 2480);
  EXPECT_EQ(r.lowerBound, 2480);
}

TEST(MemoryPlanner, ZeroByteBuffersTakeNoSpace) {
  std::vector<PlanBuffer> bs = {buf(0, 0, 5, 256), buf(512, 0, 5, 256), buf(-3, 1, 2)};
  PlanResult r = tgc::planArena(bs);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[2].offset, 0);
  EXPECT_EQ(bs[1].offset, 0);
  EXPECT_EQ(r.arenaBytes, 512);
  EXPECT_EQ(r.lowerBound, 512);
  EXPECT_TRUE(tgc::verifyPlan(bs));
}

TEST(MemoryPlanner, LiveBytesPerOp) {
  // [0,1] 10 B, [1,3] 20 B, [3,3] 5 B (and a zero-byte one that counts for nothing).
  std::vector<PlanBuffer> bs = {buf(10, 0, 1), buf(20, 1, 3), buf(5, 3, 3), buf(0, 0, 3)};
  std::vector<int64_t> live = tgc::liveBytesPerOp(bs, 5);
  EXPECT_EQ(live, (std::vector<int64_t>{10, 30, 20, 25, 0}));
  EXPECT_TRUE(tgc::liveBytesPerOp(bs, 0).empty());
}

// ---- verifyPlan ---------------------------------------------------------------------

TEST(VerifyPlan, DetectsPlantedOverlapAndNamesIt) {
  std::vector<PlanBuffer> bs = {buf(1024, 0, 3), buf(1024, 4, 6), buf(1024, 2, 5)};
  bs[0].offset = 0;
  bs[1].offset = 0;    // fine: [4,6] does not meet [0,3]
  bs[2].offset = 1024; // fine so far
  std::string why;
  ASSERT_TRUE(tgc::verifyPlan(bs, &why)) << why;
  bs[2].offset = 512; // now buffer 2 [512,1536) meets buffer 0 [0,1024) at ops 2..3
  ASSERT_FALSE(tgc::verifyPlan(bs, &why));
  EXPECT_NE(why.find("buffer 0"), std::string::npos) << why;
  EXPECT_NE(why.find("buffer 2"), std::string::npos) << why;
  EXPECT_NE(why.find("overlaps"), std::string::npos) << why;
}

TEST(VerifyPlan, DetectsMisalignment) {
  std::vector<PlanBuffer> bs = {buf(64, 0, 0, 256)};
  bs[0].offset = 128;
  std::string why;
  ASSERT_FALSE(tgc::verifyPlan(bs, &why));
  EXPECT_NE(why.find("buffer 0"), std::string::npos) << why;
  EXPECT_NE(why.find("aligned to 256"), std::string::npos) << why;
}

TEST(VerifyPlan, DetectsMissingOffset) {
  std::vector<PlanBuffer> bs = {buf(64, 0, 0)};
  std::string why;
  ASSERT_FALSE(tgc::verifyPlan(bs, &why));
  EXPECT_NE(why.find("no offset"), std::string::npos) << why;
}

TEST(VerifyPlan, AgreesWithBruteForceOnRandomPlans) {
  // Random offsets on a small arena so that both outcomes are common.
  std::mt19937_64 rng(7);
  int valid = 0, invalid = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    int n = 1 + int(rng() % 12);
    std::vector<PlanBuffer> bs;
    for (int i = 0; i < n; ++i) {
      int64_t first = int64_t(rng() % 10);
      PlanBuffer b = buf(1 + int64_t(rng() % 64), first, first + int64_t(rng() % 4),
                         int64_t(1) << (rng() % 4));
      b.offset = int64_t(rng() % 16) * 16;
      bs.push_back(b);
    }
    bool expect = bruteForceValid(bs);
    std::string why;
    EXPECT_EQ(tgc::verifyPlan(bs, &why), expect) << "trial " << trial << ": " << why;
    (expect ? valid : invalid)++;
  }
  EXPECT_GT(valid, 100);
  EXPECT_GT(invalid, 100);
}

// ---- properties over random instances --------------------------------------------

TEST(MemoryPlannerProperty, RandomInstances) {
  std::mt19937_64 rng(20240601);
  for (int trial = 0; trial < 100; ++trial) {
    int n = 1 + int(rng() % 2000);
    int64_t numOps = 1 + int64_t(rng() % 600);
    std::vector<PlanBuffer> bs = randomInstance(rng, n, numOps);
    std::vector<PlanBuffer> again = bs;
    // Every tenth trial with the defaults; the others with a small budget and few
    // search rounds to keep the test fast (the properties hold for any options).
    tgc::PlanOptions options;
    if (trial % 10 != 0) {
      options.searchRounds = 2;
      options.workBudget = uint64_t(1) << 21;
    }
    PlanResult r = tgc::planArena(bs, options);
    SCOPED_TRACE("trial " + std::to_string(trial) + " n=" + std::to_string(n) +
                 " heuristic=" + r.heuristic);
    std::string why;
    ASSERT_TRUE(tgc::verifyPlan(bs, &why)) << why;
    for (const PlanBuffer &b : bs) {
      ASSERT_GE(b.offset, 0);
      ASSERT_EQ(b.offset % b.alignment, 0);
    }
    EXPECT_EQ(r.arenaBytes, maxEnd(bs));
    EXPECT_GE(r.arenaBytes, r.lowerBound);
    std::vector<int64_t> live = tgc::liveBytesPerOp(bs, numOps);
    EXPECT_EQ(r.lowerBound, *std::max_element(live.begin(), live.end()));
    EXPECT_FALSE(r.heuristic.empty());
    // Deterministic: the same input gives the same offsets and result.
    PlanResult r2 = tgc::planArena(again, options);
    EXPECT_EQ(r2.arenaBytes, r.arenaBytes);
    EXPECT_EQ(r2.heuristic, r.heuristic);
    for (size_t i = 0; i < bs.size(); ++i)
      ASSERT_EQ(again[i].offset, bs[i].offset) << "buffer " << i;
  }
}

TEST(MemoryPlannerProperty, SmallInstancesAgreeWithBruteForceCheck) {
  // Tiny instances, checked with the O(n^2) reference instead of verifyPlan.
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<PlanBuffer> bs = randomInstance(rng, 1 + int(rng() % 30), 1 + int(rng() % 20));
    tgc::planArena(bs);
    ASSERT_TRUE(bruteForceValid(bs)) << "trial " << trial;
  }
}

TEST(MemoryPlannerProperty, FirstAttemptIsExactFirstFit) {
  // With no budget and no search, planArena runs only its first attempt (the first
  // attempt always completes), size-desc/first-fit. Its queries walk the segment
  // tree's sets side by side up to the first gap that holds the buffer, and unite
  // them when that takes too many moves; dense instances with mixed alignments leave
  // many small gaps, so both paths run (about 1 query in 70 unites here). Every offset
  // must be the reference's.
  std::mt19937_64 rng(20261123);
  tgc::PlanOptions firstOnly;
  firstOnly.searchRounds = 0;
  firstOnly.workBudget = 0;
  for (int trial = 0; trial < 60; ++trial) {
    int n = 1 + int(rng() % 1500);
    int64_t numOps = 1 + int64_t(rng() % 300);
    int longPct = int(rng() % 50);
    std::vector<PlanBuffer> bs = randomInstance(rng, n, numOps, longPct, trial % 2 == 0);
    PlanResult r = tgc::planArena(bs, firstOnly);
    SCOPED_TRACE("trial " + std::to_string(trial) + " n=" + std::to_string(n));
    EXPECT_EQ(r.heuristic, "size-desc/first-fit");
    std::vector<int64_t> expected = bruteForceFirstFit(bs);
    for (size_t i = 0; i < bs.size(); ++i) {
      if (bs[i].bytes > 0) {
        ASSERT_EQ(bs[i].offset, expected[i]) << "buffer " << i;
      }
    }
    EXPECT_EQ(r.arenaBytes, maxEnd(bs));
    ASSERT_TRUE(tgc::verifyPlan(bs));
  }
}

TEST(MemoryPlannerProperty, RandomSearchNeverHurtsAndUsuallyHelps) {
  // The randomized restarts only replace the plan by a strictly smaller one, so the
  // arena with them is at most the arena without; over these instances they must
  // also shrink the total excess over the lower bound.
  std::mt19937_64 rng(31337);
  tgc::PlanOptions noSearch;
  noSearch.searchRounds = 0;
  int64_t excessWithout = 0, excessWith = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<PlanBuffer> a = randomInstance(rng, 300 + int(rng() % 700), 100, 20, false);
    std::vector<PlanBuffer> b = a;
    PlanResult without = tgc::planArena(a, noSearch);
    PlanResult with = tgc::planArena(b);
    ASSERT_TRUE(tgc::verifyPlan(b));
    EXPECT_LE(with.arenaBytes, without.arenaBytes) << "trial " << trial;
    excessWithout += without.arenaBytes - without.lowerBound;
    excessWith += with.arenaBytes - with.lowerBound;
  }
  EXPECT_LT(excessWith, excessWithout);
  std::printf("excess over the lower bound: %lld B without search, %lld B with\n",
              (long long)excessWithout, (long long)excessWith);
}

// ---- the occupancy index against a reference ---------------------------------------

/// O(n^2 log n) reference for one greedy pass in `order`: each buffer, in turn, at the
/// lowest (first fit) or the tightest (best fit: the smallest gap, ties the lowest; a gap
/// of exactly the buffer's size at once) aligned gap among the time-overlapping buffers
/// placed before it, else on top of them. Each placed buffer is taken to end at the next
/// multiple of the gcd of all alignments, as the planner records it (no buffer can start
/// in those bytes, so only best fit's gap sizes see it).
std::vector<int64_t> bruteForceGreedy(const std::vector<PlanBuffer> &bs,
                                      const std::vector<int32_t> &order, bool bestFit) {
  int64_t granule = 0;
  for (const PlanBuffer &b : bs)
    granule = std::gcd(granule, std::max<int64_t>(b.alignment, 1));
  auto up = [](int64_t x, int64_t a) { return (x + a - 1) / a * a; };
  std::vector<int64_t> offset(bs.size(), -1);
  std::vector<int32_t> placed;
  for (int32_t i : order) {
    const PlanBuffer &b = bs[i];
    int64_t align = std::max<int64_t>(b.alignment, 1);
    std::vector<std::pair<int64_t, int64_t>> used;
    for (int32_t j : placed)
      if (bs[j].first <= b.last && b.first <= bs[j].last)
        used.push_back({offset[j], up(offset[j] + bs[j].bytes, granule)});
    std::sort(used.begin(), used.end());
    int64_t free = 0, at = -1, bestGap = INT64_MAX;
    for (const auto &[begin, end] : used) {
      int64_t start = up(free, align);
      if (start + b.bytes <= begin) {
        int64_t gap = begin - free;
        if (!bestFit || gap == b.bytes) {
          at = start;
          bestGap = -1;
          break;
        }
        if (gap < bestGap) {
          bestGap = gap;
          at = start;
        }
      }
      free = std::max(free, end);
    }
    offset[i] = at >= 0 ? at : up(free, align);
    placed.push_back(i);
  }
  return offset;
}

TEST(MemoryPlannerIndex, GreedyPassAgreesWithReferenceOnRandomIntervals) {
  // One greedy pass through the occupancy index (a segment tree of merged byte runs;
  // first fit reads its sets side by side, best fit unites them), first fit and best fit,
  // in size order and in a random order, sparse and dense instances, mixed alignments:
  // every offset must be the O(n^2) reference's.
  std::mt19937_64 rng(20261128);
  int compared = 0;
  for (int trial = 0; trial < 80; ++trial) {
    int n = 1 + int(rng() % (trial % 8 == 0 ? 1200 : 250));
    int64_t numOps = 1 + int64_t(rng() % 200);
    std::vector<PlanBuffer> bs;
    for (const PlanBuffer &b : randomInstance(rng, n, numOps, int(rng() % 60), trial % 2 == 0))
      if (b.bytes > 0)
        bs.push_back(b);
    if (bs.empty())
      continue;
    std::vector<int32_t> order(bs.size());
    std::iota(order.begin(), order.end(), 0);
    if (trial % 3 == 0)
      std::shuffle(order.begin(), order.end(), rng);
    else
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return bs[a].bytes > bs[b].bytes; });
    for (bool bestFit : {false, true}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " n=" + std::to_string(bs.size()) +
                   (bestFit ? " best fit" : " first fit"));
      std::vector<int64_t> expected = bruteForceGreedy(bs, order, bestFit);
      std::vector<PlanBuffer> placed = bs;
      uint64_t work = 0;
      int64_t arena = tgc::detail::greedyPassForTest(placed, order, bestFit, &work);
      for (size_t i = 0; i < placed.size(); ++i)
        ASSERT_EQ(placed[i].offset, expected[i]) << "buffer " << i;
      EXPECT_EQ(arena, maxEnd(placed));
      EXPECT_GT(work, 0u);
      ASSERT_TRUE(tgc::verifyPlan(placed));
      ++compared;
    }
  }
  EXPECT_GT(compared, 150);
}

TEST(MemoryPlannerIndex, AlignedBoundKeepsThePlan) {
  // Stopping at the aligned lower bound (sizes rounded to the alignments' gcd) instead
  // of the plain one must not change any plan: nothing after can beat it, ties keep the
  // earlier plan. Mixed alignments and sizes that are not multiples of them, small and
  // transformer-shaped instances.
  std::mt19937_64 rng(1128);
  tgc::PlanOptions plain, aligned;
  plain.memoize = aligned.memoize = false;
  plain.stopAtAlignedBound = false;
  plain.workBudget = aligned.workBudget = uint64_t(1) << 20;
  std::vector<std::vector<PlanBuffer>> cases;
  for (int trial = 0; trial < 40; ++trial)
    cases.push_back(randomInstance(rng, 1 + int(rng() % 400), 1 + int64_t(rng() % 100),
                                   int(rng() % 40), trial % 2 == 0));
  for (int layers : {1, 2, 4}) {
    std::vector<PlanBuffer> t = transformerInstance(layers, 1 << 16, 2);
    t.push_back(buf(4, 0, 1 << 20, 256)); // a loss scalar live throughout
    cases.push_back(t);
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<PlanBuffer> a = cases[c], b = cases[c];
    PlanResult ra = tgc::planArena(a, plain), rb = tgc::planArena(b, aligned);
    SCOPED_TRACE("case " + std::to_string(c));
    EXPECT_EQ(ra.arenaBytes, rb.arenaBytes);
    EXPECT_EQ(ra.heuristic, rb.heuristic);
    EXPECT_EQ(ra.lowerBound, rb.lowerBound);
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(a[i].offset, b[i].offset) << "buffer " << i;
  }
}

TEST(MemoryPlannerIndex, FitsBytesDecidesAsTheCompleteSearch) {
  // PlanOptions::fitsBytes: the answer is on the same side of the limit as the complete
  // search's, the offsets are a valid plan of the arena it reports, and a result marked
  // complete is the complete search's.
  std::mt19937_64 rng(777);
  tgc::PlanOptions full;
  full.memoize = false;
  full.workBudget = uint64_t(1) << 20;
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<PlanBuffer> bs =
        randomInstance(rng, 1 + int(rng() % 500), 1 + int64_t(rng() % 120), 20, trial % 2 == 0);
    std::vector<PlanBuffer> ref = bs;
    PlanResult r = tgc::planArena(ref, full);
    for (int64_t limit : {r.lowerBound - 1, r.lowerBound, r.arenaBytes - 1, r.arenaBytes,
                          r.arenaBytes + 1, 2 * r.arenaBytes}) {
      if (limit < 0)
        continue;
      tgc::PlanOptions decide = full;
      decide.fitsBytes = limit;
      std::vector<PlanBuffer> d = bs;
      PlanResult rd = tgc::planArena(d, decide);
      SCOPED_TRACE("trial " + std::to_string(trial) + " limit " + std::to_string(limit));
      EXPECT_EQ(rd.arenaBytes <= limit, r.arenaBytes <= limit);
      EXPECT_EQ(rd.arenaBytes, maxEnd(d));
      ASSERT_TRUE(tgc::verifyPlan(d));
      if (rd.complete) {
        EXPECT_EQ(rd.arenaBytes, r.arenaBytes);
        for (size_t i = 0; i < d.size(); ++i)
          ASSERT_EQ(d[i].offset, ref[i].offset) << "buffer " << i;
      }
    }
  }
}

TEST(MemoryPlannerIndex, MemoizedPlanIsThePlan) {
  // A second call with the same input is answered from the memo: the same offsets and
  // result as planning it again without the memo.
  std::mt19937_64 rng(4242);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<PlanBuffer> bs = randomInstance(rng, 1 + int(rng() % 600), 80);
    std::vector<PlanBuffer> first = bs, second = bs, fresh = bs;
    for (PlanBuffer &b : second)
      b.offset = 12345; // overwritten
    tgc::PlanOptions noMemo;
    noMemo.memoize = false;
    PlanResult r1 = tgc::planArena(first), r2 = tgc::planArena(second),
               r3 = tgc::planArena(fresh, noMemo);
    EXPECT_EQ(r1.arenaBytes, r2.arenaBytes);
    EXPECT_EQ(r1.arenaBytes, r3.arenaBytes);
    EXPECT_EQ(r2.heuristic, r3.heuristic);
    EXPECT_EQ(r2.lowerBound, r3.lowerBound);
    for (size_t i = 0; i < bs.size(); ++i) {
      ASSERT_EQ(second[i].offset, first[i].offset) << "trial " << trial << " buffer " << i;
      ASSERT_EQ(fresh[i].offset, first[i].offset) << "trial " << trial << " buffer " << i;
    }
  }
}

// ---- transformer-shaped instance ------------------------------------------------

TEST(MemoryPlannerQuality, TransformerLikeWithinFivePercentOfLowerBound) {
  for (int layers : {1, 2, 4, 12, 24}) {
    for (int64_t attnUnits : {int64_t(1), int64_t(2), int64_t(8)}) {
      std::vector<PlanBuffer> bs = transformerInstance(layers, 1 << 20, attnUnits);
      PlanResult r = tgc::planArena(bs);
      ASSERT_TRUE(tgc::verifyPlan(bs));
      EXPECT_LE(double(r.arenaBytes), 1.05 * double(r.lowerBound))
          << "layers=" << layers << " attn=" << attnUnits << " arena=" << r.arenaBytes
          << " lower bound=" << r.lowerBound << " heuristic=" << r.heuristic;
    }
  }
}

TEST(MemoryPlannerQuality, GptStepWithinFivePercentOfLowerBound) {
  // attnUnits = H*T/C: 12 heads, T = 1024, C = 768 gives 16; vocab 50304 / 768 ~ 65.
  for (int layers : {1, 4, 12}) {
    for (int64_t attnUnits : {int64_t(1), int64_t(4), int64_t(16)}) {
      std::vector<PlanBuffer> bs = gptStepInstance(layers, 1 << 20, attnUnits, 65);
      PlanResult r = tgc::planArena(bs);
      ASSERT_TRUE(tgc::verifyPlan(bs));
      std::printf("gpt step, %d layers, attention %lld units: arena / bound = %.4f (%s)\n",
                  layers, (long long)attnUnits, double(r.arenaBytes) / double(r.lowerBound),
                  r.heuristic.c_str());
      EXPECT_LE(double(r.arenaBytes), 1.05 * double(r.lowerBound))
          << "layers=" << layers << " attn=" << attnUnits << " arena=" << r.arenaBytes
          << " lower bound=" << r.lowerBound << " heuristic=" << r.heuristic;
    }
  }
}

TEST(MemoryPlannerQuality, CheckpointedStepWithinFivePercentOfLowerBound) {
  const std::vector<int64_t> block = {1, 3, 16, 16, 1, 1, 1, 1, 4, 4, 1, 1};
  for (int layers : {1, 2, 6, 12, 48}) {
    std::vector<PlanBuffer> bs = checkpointedInstance(layers, 1 << 20, block);
    PlanResult r = tgc::planArena(bs);
    ASSERT_TRUE(tgc::verifyPlan(bs));
    std::printf("checkpointed step, %d layers: arena / bound = %.4f (%s)\n", layers,
                double(r.arenaBytes) / double(r.lowerBound), r.heuristic.c_str());
    EXPECT_LE(double(r.arenaBytes), 1.05 * double(r.lowerBound))
        << "layers=" << layers << " arena=" << r.arenaBytes << " lower bound=" << r.lowerBound;
  }
}

// ---- scale ---------------------------------------------------------------------------

TEST(MemoryPlannerScale, HundredThousandBuffers) {
  // Alignment 256 as the compiler uses; 2% of the buffers live long (up to the whole
  // step), so several hundred are live at any op.
  std::mt19937_64 rng(5);
  std::vector<PlanBuffer> bs = randomInstance(rng, 100000, 40000, /*longPct=*/2,
                                              /*mixedAlign=*/false);
  auto t0 = std::chrono::steady_clock::now();
  PlanResult r = tgc::planArena(bs);
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("100k random buffers: %.2f s, arena %lld, lower bound %lld (%.3fx), %s\n", sec,
              (long long)r.arenaBytes, (long long)r.lowerBound,
              double(r.arenaBytes) / double(r.lowerBound), r.heuristic.c_str());
  EXPECT_TRUE(tgc::verifyPlan(bs));
  EXPECT_GE(r.arenaBytes, r.lowerBound);
  EXPECT_LT(sec, 60.0); // generous: a sanity bound, not a benchmark

  // A transformer-shaped step with 100k buffers (2500 layers x 10 ops x 4 buffers).
  std::vector<PlanBuffer> tb = transformerInstance(2500, 1 << 16, 2);
  t0 = std::chrono::steady_clock::now();
  PlanResult tr = tgc::planArena(tb);
  sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("100k transformer buffers: %.2f s, arena %lld, lower bound %lld (%.3fx), %s\n",
              sec, (long long)tr.arenaBytes, (long long)tr.lowerBound,
              double(tr.arenaBytes) / double(tr.lowerBound), tr.heuristic.c_str());
  EXPECT_TRUE(tgc::verifyPlan(tb));
  EXPECT_LT(sec, 60.0);
}
