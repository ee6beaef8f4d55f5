//===- MemoryPlanner.h - Static arena planning over liveness intervals --------===//
//
// Pure C++ (no MLIR). Given buffers with sizes and liveness intervals over a total
// order of the step's ops, assigns byte offsets in one arena so that no two buffers
// that are live at the same time overlap. Used by the tg-plan-memory pass.
//
// Algorithm: greedy best-fit placement (as in TFLite's arena planner / IREE's
// stream.resource.pack): visit buffers in some order; place each at the lowest-waste
// gap among the already-placed buffers whose intervals intersect it. Several visit
// orders are tried (size decreasing, interval-length decreasing, first-use, area =
// size x length decreasing, ...) and the smallest arena is kept.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_MEMORYPLANNER_H
#define TGC_PASSES_MEMORYPLANNER_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

struct PlanBuffer {
  int64_t bytes = 0;      ///< size in bytes (> 0)
  int64_t alignment = 256;///< offset alignment in bytes (power of two)
  int64_t first = 0;      ///< index of the op that defines it (inclusive)
  int64_t last = 0;       ///< index of the last op that reads it (inclusive), >= first
  int64_t offset = -1;    ///< output: byte offset in the arena
  /// Input: >= 0 pins the buffer at this byte offset (a multiple of `alignment`); the
  /// planner places the other buffers around the pinned ones and never moves them. Used
  /// for gradients in the arena, whose slots keep one contiguous layout (so that the
  /// optimizer runs over runs of slots) while each is live only from its first write.
  int64_t fixedOffset = -1;
};

struct PlanResult {
  int64_t arenaBytes = 0;   ///< max over buffers of offset + bytes (0 when empty)
  int64_t lowerBound = 0;   ///< max over ops i of the sum of bytes of buffers live at i
  std::string heuristic;    ///< name of the visit order that won
  /// False only when PlanOptions::fitsBytes stopped the search early (see there).
  bool complete = true;
};

/// Assigns `offset` of every buffer. Two buffers a, b overlap in time iff
/// a.first <= b.last && b.first <= a.last; such buffers get disjoint byte ranges.
/// Deterministic: the same input gives the same offsets. Pinned buffers (fixedOffset >= 0)
/// keep their offset; the caller keeps pinned buffers that meet in time disjoint
/// (verifyPlan reports it otherwise).
/// Errors: none (bytes <= 0 gets offset 0 and takes no space).
PlanResult planArena(std::vector<PlanBuffer> &buffers);

/// Knobs of planArena; the defaults are what planArena(buffers) uses.
struct PlanOptions {
  /// Randomized restarts after the fixed heuristics: buffers visited by size with
  /// each size scaled by a random factor in [0.6, 1.4] (fixed seed, so plans stay
  /// deterministic), alternating first fit and best fit. 0 turns the search off.
  int searchRounds = 32;
  /// Work budget (one unit per byte range stored in the occupancy sets a placement
  /// consults, whether or not first fit reads them all, plus a constant per buffer)
  /// after which no new attempt starts and a running one is abandoned; the first
  /// attempt always completes, even with a budget of 0. 2^24 units of best fit take
  /// about 0.3 s on one core; first fit reads far fewer ranges than it counts.
  uint64_t workBudget = uint64_t(1) << 24;
  /// >= 0: the caller only needs to know whether the arena is <= fitsBytes. The search
  /// then stops as soon as that is decided: once an attempt plans <= fitsBytes (the full
  /// search could only go lower), or when the aligned lower bound (see planArena) is
  /// above it. The result is then marked incomplete; its arenaBytes (and offsets, a valid
  /// plan of that arena, or the first attempt's when the bound decided) is <= fitsBytes
  /// exactly when the complete search's would be. -1: the complete search.
  int64_t fitsBytes = -1;
  /// Reuse the result of an identical earlier call (same buffers and options) in this
  /// process: planning is deterministic, so the answer is the same. Thread-safe; a
  /// bounded number of recent complete results is kept.
  bool memoize = true;
  /// Stop once an attempt reaches the aligned lower bound (see planArena); false: only
  /// at the plain one (lowerBound). The plan is the same either way (for tests).
  bool stopAtAlignedBound = true;
};

/// planArena with explicit options.
///
/// The search stops early, with the plan it would return anyway, once an attempt reaches
/// a lower bound on every plan's arena: the peak over ops of the live bytes, each buffer
/// rounded up to g, the gcd of the alignments (every offset is a multiple of g, so a
/// buffer below another ends at most at the other's offset), less the largest such
/// rounding among them (the topmost buffer need not be rounded). Attempts after it could
/// only tie, and ties keep the earlier plan.
PlanResult planArena(std::vector<PlanBuffer> &buffers, const PlanOptions &options);

namespace detail {
/// For tests: one greedy pass of planArena's over `buffers` (all with bytes > 0, none
/// pinned) in `order` (indices into `buffers`), first fit or best fit, through the
/// planner's occupancy index. Writes the offsets, returns the arena and adds the pass's
/// work units (PlanOptions::workBudget) to *work when given.
int64_t greedyPassForTest(std::vector<PlanBuffer> &buffers, const std::vector<int32_t> &order,
                          bool bestFit, uint64_t *work = nullptr);
} // namespace detail

/// Sum of bytes live at op i, for each i in [0, numOps).
std::vector<int64_t> liveBytesPerOp(const std::vector<PlanBuffer> &buffers, int64_t numOps);

/// True when no two time-overlapping buffers overlap in memory and every offset is
/// aligned; on false, `why` names the first offending pair.
bool verifyPlan(const std::vector<PlanBuffer> &buffers, std::string *why = nullptr);

} // namespace tgc

#endif
