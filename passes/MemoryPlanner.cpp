//===- MemoryPlanner.cpp - Static arena planning over liveness intervals ------===//
//
// Greedy offset assignment for buffers with known sizes and liveness intervals
// (a case of dynamic storage allocation / interval colouring with weights, which is
// NP-hard in general, so we use heuristics and report a lower bound beside them).
//
// Sources for the approach:
//  - Y. Pisarchyk, J. Lee, "Efficient Memory Management for Deep Neural Net
//    Inference", arXiv:2001.03288 (2020): "Greedy by Size" (visit tensors by
//    decreasing size, put each in the smallest gap between overlapping tensors
//    already placed, else on top) and "Greedy by Breadth" (visit operators by
//    decreasing total live size, place their tensors largest first).
//  - TensorFlow Lite's simple memory arena / ArenaPlanner, which uses the same
//    best-fit-among-conflicting-allocations rule on decreasing sizes.
//  - IREE's stream.resource.pack, which also packs by liveness with a greedy rule.
// What is ours: several visit orders and two fit rules (best fit, first fit) are
// tried, most useful first, and the smallest arena is kept; best-fit results are
// then "compacted" (every buffer, lowest offset first, is dropped to the lowest
// offset where it fits), which can only shrink the arena. Conflicts are found with
// a segment tree over time whose nodes hold merged runs of used bytes (see
// OccupancyIndex), so a placement consults O(log T) sorted sets of runs instead of
// every placed buffer; first fit walks them from offset 0 and stops at the first gap
// that holds the buffer, best fit unites them. A work budget (counted, not timed, so
// plans stay deterministic) bounds the attempts on large, fragmented instances; the
// search stops once an attempt reaches a lower bound that accounts for alignment, and
// identical calls in one process share one result (PlanOptions).
// docs/memory-planning.md describes the model and the heuristics.
//
//===----------------------------------------------------------------------------===//
#include "passes/MemoryPlanner.h"

#include <algorithm>
#include <cassert>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace tgc {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

/// A buffer that takes space (bytes > 0), with its alignment normalised to >= 1.
struct Item {
  int64_t bytes;
  int64_t align;
  int64_t first;
  int64_t last;
  int64_t fixed = -1; ///< pinned offset (PlanBuffer::fixedOffset), -1 when free
};

/// Smallest multiple of `align` (>= 1) that is >= x (x >= 0), in bytes.
int64_t alignUp(int64_t x, int64_t align) {
  int64_t r = x % align;
  return r == 0 ? x : x + (align - r);
}

/// Byte ranges [begin, end), sorted by begin and pairwise disjoint when kept in an
/// occupancy set.
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

/// Adds [begin, end) to a sorted set of disjoint ranges, merging it with every range
/// it overlaps or touches. O(log s + s) for a set of s ranges (the move of the tail).
/// Returns false (and leaves the set alone) when one range already holds [begin, end).
bool insertMerged(Ranges &set, int64_t begin, int64_t end) {
  // First range whose end reaches `begin` (ends are sorted because ranges are disjoint).
  auto lo = std::lower_bound(set.begin(), set.end(), begin,
                             [](const std::pair<int64_t, int64_t> &r, int64_t v) {
                               return r.second < v;
                             });
  if (lo != set.end() && lo->first <= begin && end <= lo->second)
    return false;
  auto hi = lo;
  while (hi != set.end() && hi->first <= end) {
    begin = std::min(begin, hi->first);
    end = std::max(end, hi->second);
    ++hi;
  }
  if (lo == hi) {
    set.insert(lo, {begin, end});
  } else {
    *lo = {begin, end};
    set.erase(lo + 1, hi);
  }
  return true;
}

/// How a buffer picks among the free gaps that hold it: the smallest (best fit, least
/// waste; ties: the lowest) or the lowest (first fit).
enum class Fit { Best, First };

/// Appends to `out` the union of two sorted runs of byte ranges, as a sorted run of
/// disjoint ranges (touching ones joined). O(|a| + |b|).
void unite(const std::pair<int64_t, int64_t> *a, const std::pair<int64_t, int64_t> *aEnd,
           const std::pair<int64_t, int64_t> *b, const std::pair<int64_t, int64_t> *bEnd,
           Ranges &out) {
  size_t start = out.size();
  while (a != aEnd || b != bEnd) {
    const std::pair<int64_t, int64_t> &next =
        (b == bEnd || (a != aEnd && a->first <= b->first)) ? *a++ : *b++;
    if (out.size() > start && next.first <= out.back().second)
      out.back().second = std::max(out.back().second, next.second);
    else
      out.push_back(next);
  }
}

/// Which bytes are taken, over a span of time, by the buffers placed so far.
///
/// Time (the distinct interval endpoints, compressed to 0..T-1) is the leaf range of
/// a segment tree. A placed buffer covering [lo, hi] is recorded in
///  - cover(c) for each node c of the canonical decomposition of [lo, hi], and
///  - any(a) for each such c and every ancestor a of it,
/// each a merged set of byte ranges. The bytes used at some time inside the span of a
/// node c are then any(c) (buffers touching the span from below it) united with
/// cover(a) of c's strict ancestors (buffers covering an enclosing span); a buffer
/// that meets c's span without covering an ancestor's is stored below c. A query over
/// [lo, hi] consults those sets over its canonical nodes: O(log T) sets, whose sizes
/// are the number of maximal runs of used bytes, usually far below the number k of
/// conflicting buffers (they abut once packed). Best fit unites them; first fit reads
/// them side by side from offset 0 up to the first gap that holds the buffer (see
/// firstFit), which is usually among the lowest few runs. This is the segment tree
/// of Bentley (1977) with a "subtree union" augmentation; cf. de Berg et al.,
/// "Computational Geometry", ch. 10. Merged sets cannot forget one buffer, so every
/// placement pass starts from a cleared index and only adds.
class OccupancyIndex {
public:
  /// An empty index over compressed times 0..numTimes-1.
  explicit OccupancyIndex(size_t numTimes) {
    leaves = 1;
    while (leaves < numTimes)
      leaves <<= 1;
    tree.resize(2 * leaves);
  }

  /// Forgets every placed buffer (keeps the allocated capacity).
  void clear() {
    for (Node &n : tree) {
      n.cover.clear();
      n.any.clear();
    }
  }

  /// Records bytes [begin, end) as used over compressed times [lo, hi].
  void insert(size_t lo, size_t hi, int64_t begin, int64_t end) {
    ++epoch;
    canonical(lo, hi);
    for (size_t c : nodes) {
      insertMerged(tree[c].cover, begin, end);
      // any(a) holds any(c) for every ancestor a of c: once the bytes are already in
      // one, they are in all above it.
      for (size_t a = c; a >= 1 && tree[a].stamp != epoch; a >>= 1) {
        tree[a].stamp = epoch;
        if (!insertMerged(tree[a].any, begin, end))
          break;
      }
    }
  }

  /// Chooses an offset (bytes) for a buffer of `bytes` and `align` that will live
  /// over compressed times [lo, hi], among the bytes used by then. Gaps are the free
  /// spaces between the runs of used bytes, from offset 0 up; Fit::Best takes the
  /// smallest gap that holds the aligned buffer (ties: the lowest), Fit::First the
  /// lowest such gap; when no gap holds it, the buffer goes on top of the highest
  /// run. The space above the top is unbounded and used only as that fallback.
  ///
  /// Adds to `work` the number of ranges stored in the O(log T) sets the query
  /// covers (what uniting them reads), however the answer is found: first fit
  /// usually reads only the lowest few ranges of each set (see firstFit), but
  /// counting the full size keeps the work, hence the attempts that run within the
  /// budget, independent of that shortcut.
  int64_t findOffset(size_t lo, size_t hi, int64_t bytes, int64_t align, Fit fit,
                     uint64_t &work) {
    size_t read = gather(lo, hi);
    work += read;
    if (fit == Fit::First) {
      // Each move costs up to one check per set, the union about one step per range:
      // give up once the moves could have cost a few times the union (rarely: moves
      // are cheap and usually few, so a generous bound measured fastest).
      size_t maxMoves = std::max<size_t>(16, 4 * read / std::max<size_t>(1, sets.size()));
      int64_t at = firstFit(bytes, align, maxMoves);
      if (at >= 0)
        return at;
      gather(lo, hi); // firstFit moved the cursors; counted once above
    }
    uniteGathered();
    int64_t free = 0; // lowest byte not used by the runs seen so far
    int64_t best = -1;
    int64_t bestGap = std::numeric_limits<int64_t>::max();
    for (const auto &[begin, end] : runs) {
      int64_t start = alignUp(free, align);
      if (start + bytes <= begin) { // the gap [free, begin) holds it
        int64_t gap = begin - free;
        if (fit == Fit::First || gap == bytes)
          return start;
        if (gap < bestGap) {
          bestGap = gap;
          best = start;
        }
      }
      free = end;
    }
    return best >= 0 ? best : alignUp(free, align);
  }

private:
  /// A sorted set of ranges being read from `cur` on.
  struct Cursor {
    const std::pair<int64_t, int64_t> *cur, *end;
  };

  /// Points `sets` at the non-empty sets whose union is the bytes used at some time in
  /// compressed times [lo, hi] (see the class comment). Returns the number of ranges
  /// they hold.
  size_t gather(size_t lo, size_t hi) {
    ++epoch;
    canonical(lo, hi);
    sets.clear();
    size_t read = 0;
    auto add = [&](const Ranges &set) {
      if (!set.empty()) {
        sets.push_back({set.data(), set.data() + set.size()});
        read += set.size();
      }
    };
    for (size_t c : nodes) {
      add(tree[c].any);
      for (size_t a = c >> 1; a >= 1 && tree[a].stamp != epoch; a >>= 1) {
        tree[a].stamp = epoch;
        add(tree[a].cover);
      }
    }
    return read;
  }

  /// First fit over the gathered sets without uniting them: the lowest aligned offset
  /// `start` such that no gathered range meets [start, start + bytes). The candidate
  /// starts at 0; the sets are checked in turn, each at the first of its ranges that
  /// ends above `start` (found by a galloping search from where that set was left:
  /// `start` only grows, so the ranges skipped can never meet a later window). When
  /// that range begins below start + bytes it meets every window starting in
  /// [start, its end), so the candidate moves to the aligned end and the checks go on
  /// from the same set; once every set in a row passes, `start` is the answer. This
  /// is the lowest gap of the union that holds the aligned buffer, i.e. what the union
  /// scan in findOffset finds. The answer usually lies in the first gap or two (at
  /// 1000 GPT-2 layers, about 7 moves per query against ~370 runs in the union); after
  /// `maxMoves` moves it returns -1 and the caller unites instead.
  int64_t firstFit(int64_t bytes, int64_t align, size_t maxMoves) {
    const size_t n = sets.size();
    int64_t start = 0;
    size_t moves = 0;
    for (size_t i = 0, clean = 0; clean < n;) {
      Cursor &c = sets[i];
      if (c.cur != c.end && c.cur->second <= start) {
        auto endsBelow = [&](const std::pair<int64_t, int64_t> &r) {
          return r.second <= start;
        };
        const std::pair<int64_t, int64_t> *lo = c.cur + 1, *hi = lo;
        for (size_t step = 1; hi < c.end && endsBelow(*hi); step <<= 1) {
          lo = hi + 1;
          hi = size_t(c.end - lo) > step ? lo + step : c.end;
        }
        c.cur = std::partition_point(lo, hi, endsBelow);
      }
      if (c.cur != c.end && c.cur->first < start + bytes) {
        if (++moves > maxMoves)
          return -1;
        start = alignUp(c.cur->second, align);
        clean = 0; // check this set again at the new start
        continue;
      }
      ++clean;
      i = i + 1 == n ? 0 : i + 1;
    }
    return start;
  }

  /// Sets `runs` to the maximal runs of bytes used at some time in the gathered sets'
  /// span, sorted (touching runs joined). The sets are each sorted; they are united
  /// pairwise, bottom-up, O(m log s) for m ranges in s sets; the same long-lived
  /// buffers appear in several sets, so the runs shrink as they are united. Reads
  /// each set from its cursor, which gather puts at its start.
  void uniteGathered() {
    runs.clear();
    starts.clear();
    for (const Cursor &c : sets) {
      starts.push_back(runs.size());
      runs.insert(runs.end(), c.cur, c.end);
    }
    starts.push_back(runs.size());
    // starts[i]..starts[i+1] is the i-th sorted run of ranges in `runs`.
    while (starts.size() > 2) {
      scratch.clear();
      nextStarts.clear();
      size_t i = 0;
      for (; i + 2 < starts.size(); i += 2) {
        nextStarts.push_back(scratch.size());
        unite(runs.data() + starts[i], runs.data() + starts[i + 1],
              runs.data() + starts[i + 1], runs.data() + starts[i + 2], scratch);
      }
      if (i + 1 < starts.size()) { // an odd one left over: copy it
        nextStarts.push_back(scratch.size());
        scratch.insert(scratch.end(), runs.begin() + starts[i], runs.begin() + starts[i + 1]);
      }
      nextStarts.push_back(scratch.size());
      runs.swap(scratch);
      starts.swap(nextStarts);
    }
  }

  /// Fills `nodes` with the canonical decomposition of leaves [lo, hi].
  void canonical(size_t lo, size_t hi) {
    nodes.clear();
    for (size_t l = lo + leaves, r = hi + leaves + 1; l < r; l >>= 1, r >>= 1) {
      if (l & 1)
        nodes.push_back(l++);
      if (r & 1)
        nodes.push_back(--r);
    }
  }

  /// One segment-tree node: its two sets (see the class comment) and the last epoch
  /// (one per insert or query) that visited it, side by side so that a visit touches
  /// one cache line.
  struct Node {
    Ranges cover, any;
    uint64_t stamp = 0;
  };

  size_t leaves = 1;
  std::vector<Node> tree; ///< 1-based; leaves at [leaves, 2*leaves)
  uint64_t epoch = 0;
  std::vector<size_t> nodes;
  std::vector<Cursor> sets;             ///< the sets gather found
  Ranges runs, scratch;                 ///< findOffset scratch
  std::vector<size_t> starts, nextStarts; ///< starts of the sorted runs being united
};

/// Work units charged per placed buffer on top of the ranges its query read: the
/// O(log T) set visits and updates cost about this many range reads.
constexpr uint64_t kWorkPerBuffer = 32;

/// Items with their liveness intervals mapped to compressed time (leaf indices).
struct Timeline {
  std::vector<size_t> lo, hi; ///< per item
  size_t numTimes = 0;
};

Timeline compressTime(const std::vector<Item> &items) {
  std::vector<int64_t> times;
  times.reserve(2 * items.size());
  for (const Item &it : items) {
    times.push_back(it.first);
    times.push_back(it.last);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  Timeline t;
  t.numTimes = times.size();
  for (const Item &it : items) {
    t.lo.push_back(std::lower_bound(times.begin(), times.end(), it.first) - times.begin());
    t.hi.push_back(std::lower_bound(times.begin(), times.end(), it.last) - times.begin());
  }
  return t;
}

/// Places items in `order` greedily with `fit`; writes offsets (bytes) and returns
/// the arena size (bytes). O(n log T) index updates plus the query sizes, which are
/// added to `work`; gives up and returns -1 as soon as `work` exceeds `limit`.
///
/// `granule` (bytes) divides every item's alignment, so no buffer can start in the
/// bytes between a buffer's end and the next multiple of the granule: the index
/// records each buffer as ending there, which keeps abutting buffers in one run.
int64_t placeInOrder(const std::vector<Item> &items, const Timeline &time,
                     const std::vector<int32_t> &order, Fit fit, int64_t granule,
                     OccupancyIndex &index, std::vector<int64_t> &offsets, uint64_t &work,
                     uint64_t limit = std::numeric_limits<uint64_t>::max()) {
  index.clear();
  offsets.assign(items.size(), -1);
  int64_t arena = 0;
  // Pinned buffers first, where they are; every order then skips them.
  for (size_t id = 0; id < items.size(); ++id)
    if (const Item &it = items[id]; it.fixed >= 0) {
      offsets[id] = it.fixed;
      index.insert(time.lo[id], time.hi[id], it.fixed, alignUp(it.fixed + it.bytes, granule));
      arena = std::max(arena, it.fixed + it.bytes);
    }
  for (int32_t id : order) {
    const Item &it = items[id];
    if (it.fixed >= 0)
      continue;
    int64_t off = index.findOffset(time.lo[id], time.hi[id], it.bytes, it.align, fit, work);
    work += kWorkPerBuffer;
    if (work > limit)
      return -1;
    offsets[id] = off;
    index.insert(time.lo[id], time.hi[id], off, alignUp(off + it.bytes, granule));
    arena = std::max(arena, off + it.bytes);
  }
  return arena;
}

/// Improves a complete placement ("gravity" compaction): re-places every buffer, in
/// order of its current offset, at the lowest aligned offset free of the buffers
/// re-placed before it. A buffer never moves up: if it meets an earlier re-placed
/// buffer in time, that one ended below the buffer's old offset before and only moved
/// down; later buffers that meet it in time lie above its old end and do not block it.
/// So the arena never grows. Repeats while it shrinks, at most `maxRounds` times, and
/// stops (keeping the last complete round) once `work` exceeds `budget`.
/// Returns the arena size (bytes).
int64_t compact(const std::vector<Item> &items, const Timeline &time, int64_t granule,
                OccupancyIndex &index, std::vector<int64_t> &offsets, int64_t arena,
                int maxRounds, uint64_t &work, uint64_t budget) {
  std::vector<int32_t> byOffset(items.size());
  std::vector<int64_t> next;
  for (int round = 0; round < maxRounds; ++round) {
    std::iota(byOffset.begin(), byOffset.end(), 0);
    std::sort(byOffset.begin(), byOffset.end(), [&](int32_t a, int32_t b) {
      return offsets[a] != offsets[b] ? offsets[a] < offsets[b] : a < b;
    });
    int64_t shrunk =
        placeInOrder(items, time, byOffset, Fit::First, granule, index, next, work, budget);
    if (shrunk < 0 || shrunk >= arena)
      break;
    arena = shrunk;
    offsets.swap(next);
  }
  return arena;
}

/// Visit order of Pisarchyk & Lee's "Greedy by Breadth": operators by decreasing
/// breadth (bytes live at the op; ties: earlier op), and at each operator its
/// not-yet-visited buffers by decreasing size. A buffer is therefore visited at the
/// op of its interval that comes first in that operator order, i.e. the op in
/// [first, last] with the largest breadth (ties: the earliest). Breadth only rises
/// at some buffer's `first`, so that op is one of the distinct `first` values in the
/// interval; a sparse table over them answers the range-argmax in O(1).
std::vector<int32_t> breadthOrder(const std::vector<Item> &items) {
  size_t n = items.size();
  // Events: +bytes at first, -bytes after last; breadth at each distinct first.
  std::vector<int64_t> points;
  points.reserve(n);
  for (const Item &it : items)
    points.push_back(it.first);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::vector<std::pair<int64_t, int64_t>> ends; // (last, bytes)
  ends.reserve(n);
  std::vector<int64_t> startBytes(points.size(), 0);
  for (const Item &it : items) {
    startBytes[std::lower_bound(points.begin(), points.end(), it.first) - points.begin()] +=
        it.bytes;
    ends.emplace_back(it.last, it.bytes);
  }
  std::sort(ends.begin(), ends.end());
  std::vector<int64_t> breadth(points.size());
  int64_t live = 0;
  size_t e = 0;
  for (size_t p = 0; p < points.size(); ++p) {
    while (e < ends.size() && ends[e].first < points[p])
      live -= ends[e++].second;
    live += startBytes[p];
    breadth[p] = live;
  }
  // Sparse table of argmax positions (larger breadth wins, then lower position).
  size_t m = points.size();
  auto better = [&](int32_t a, int32_t b) {
    return breadth[a] != breadth[b] ? (breadth[a] > breadth[b] ? a : b) : std::min(a, b);
  };
  std::vector<std::vector<int32_t>> table(1, std::vector<int32_t>(m));
  std::iota(table[0].begin(), table[0].end(), 0);
  for (size_t k = 1; (size_t(1) << k) <= m; ++k) {
    const auto &prev = table[k - 1];
    std::vector<int32_t> row(m - (size_t(1) << k) + 1);
    for (size_t i = 0; i < row.size(); ++i)
      row[i] = better(prev[i], prev[i + (size_t(1) << (k - 1))]);
    table.push_back(std::move(row));
  }
  auto argmax = [&](size_t lo, size_t hi) { // inclusive
    size_t len = hi - lo + 1;
    size_t k = 63 - __builtin_clzll(len);
    return better(table[k][lo], table[k][hi + 1 - (size_t(1) << k)]);
  };
  // The op's rank in the operator order is (breadth desc, position asc).
  std::vector<int32_t> peakOf(n);
  for (size_t i = 0; i < n; ++i) {
    size_t lo = std::lower_bound(points.begin(), points.end(), items[i].first) - points.begin();
    size_t hi = std::upper_bound(points.begin(), points.end(), items[i].last) - points.begin() - 1;
    peakOf[i] = argmax(lo, hi);
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    int32_t pa = peakOf[a], pb = peakOf[b];
    if (pa != pb)
      return breadth[pa] != breadth[pb] ? breadth[pa] > breadth[pb] : pa < pb;
    if (items[a].bytes != items[b].bytes)
      return items[a].bytes > items[b].bytes;
    return a < b;
  });
  return order;
}

/// The visit order the planner tries under `name` (size-desc, breadth, area-desc,
/// length-desc or first-use; an empty order for any other name). Ties always end on
/// the item id, so the orders (and the plan) are deterministic. O(n log n).
std::vector<int32_t> buildOrder(const std::vector<Item> &items, const std::string &name) {
  if (name == "breadth")
    return breadthOrder(items);
  size_t n = items.size();
  std::vector<int32_t> o(n);
  std::iota(o.begin(), o.end(), 0);
  auto len = [&](int32_t i) { return items[i].last - items[i].first + 1; };
  if (name == "size-desc")
    std::sort(o.begin(), o.end(), [&](int32_t a, int32_t b) {
      const Item &x = items[a], &y = items[b];
      if (x.bytes != y.bytes)
        return x.bytes > y.bytes;
      if (x.first != y.first)
        return x.first < y.first;
      return a < b;
    });
  else if (name == "area-desc")
    std::sort(o.begin(), o.end(), [&](int32_t a, int32_t b) {
      __int128 x = (__int128)items[a].bytes * len(a);
      __int128 y = (__int128)items[b].bytes * len(b);
      if (x != y)
        return x > y;
      if (items[a].bytes != items[b].bytes)
        return items[a].bytes > items[b].bytes;
      return a < b;
    });
  else if (name == "length-desc")
    std::sort(o.begin(), o.end(), [&](int32_t a, int32_t b) {
      if (len(a) != len(b))
        return len(a) > len(b);
      if (items[a].bytes != items[b].bytes)
        return items[a].bytes > items[b].bytes;
      return a < b;
    });
  else if (name == "first-use")
    std::sort(o.begin(), o.end(), [&](int32_t a, int32_t b) {
      const Item &x = items[a], &y = items[b];
      if (x.first != y.first)
        return x.first < y.first;
      if (x.bytes != y.bytes)
        return x.bytes > y.bytes;
      return a < b;
    });
  else
    o.clear();
  return o;
}

} // namespace

std::vector<int64_t> liveBytesPerOp(const std::vector<PlanBuffer> &buffers, int64_t numOps) {
  if (numOps <= 0)
    return {};
  // Difference array: +bytes at first, -bytes after last, clipped to [0, numOps).
  std::vector<int64_t> delta(numOps + 1, 0);
  for (const PlanBuffer &b : buffers) {
    if (b.bytes <= 0 || b.last < 0 || b.first >= numOps || b.last < b.first)
      continue;
    delta[std::max<int64_t>(b.first, 0)] += b.bytes;
    delta[std::min<int64_t>(b.last + 1, numOps)] -= b.bytes;
  }
  std::vector<int64_t> live(numOps);
  int64_t running = 0;
  for (int64_t i = 0; i < numOps; ++i)
    live[i] = running += delta[i];
  return live;
}

PlanResult planArena(std::vector<PlanBuffer> &buffers) {
  return planArena(buffers, PlanOptions());
}

namespace {

/// The aligned lower bound of planArena's comment: max over times of the live bytes, each
/// item rounded up to `granule`, less the largest rounding among the items live then.
/// Every offset must be a multiple of `granule` (the caller folds pinned offsets into it).
int64_t alignedLowerBound(const std::vector<Item> &items, int64_t granule) {
  struct Event {
    int64_t key; ///< 2 * time for a start, 2 * last + 1 for an end
    int64_t bytes, pad;
  };
  std::vector<Event> events;
  events.reserve(2 * items.size());
  for (const Item &it : items) {
    int64_t rounded = alignUp(it.bytes, granule);
    events.push_back({2 * it.first, rounded, rounded - it.bytes});
    events.push_back({2 * it.last + 1, -rounded, rounded - it.bytes});
  }
  std::sort(events.begin(), events.end(),
            [](const Event &a, const Event &b) { return a.key < b.key; });
  std::multiset<int64_t> pads; // of the items live
  int64_t live = 0, bound = 0;
  for (size_t i = 0; i < events.size();) {
    size_t j = i;
    for (; j < events.size() && events[j].key == events[i].key; ++j) {
      live += events[j].bytes;
      if (events[j].bytes > 0)
        pads.insert(events[j].pad);
      else
        pads.erase(pads.find(events[j].pad));
    }
    if (!pads.empty())
      bound = std::max(bound, live - *pads.rbegin());
    i = j;
  }
  return bound;
}

/// planArena's memo (PlanOptions::memoize): recent complete results by their input.
struct PlanMemo {
  struct Entry {
    std::vector<int64_t> key;     ///< every input field of every buffer, then the options
    std::vector<int64_t> offsets; ///< per buffer
    PlanResult result;
  };
  static constexpr size_t kEntries = 256;
  std::mutex mutex;
  std::unordered_multimap<uint64_t, std::shared_ptr<const Entry>> byHash;
  std::deque<uint64_t> fifo; ///< hashes in insertion order, for eviction

  static std::vector<int64_t> keyOf(const std::vector<PlanBuffer> &buffers,
                                    const PlanOptions &options) {
    std::vector<int64_t> key;
    key.reserve(5 * buffers.size() + 2);
    for (const PlanBuffer &b : buffers)
      key.insert(key.end(), {b.bytes, b.alignment, b.first, b.last, b.fixedOffset});
    key.push_back(options.searchRounds);
    key.push_back((int64_t)options.workBudget);
    key.push_back(options.stopAtAlignedBound);
    return key;
  }
  static uint64_t hashOf(const std::vector<int64_t> &key) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int64_t v : key) {
      h ^= (uint64_t)v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    }
    return h;
  }
  std::shared_ptr<const Entry> find(uint64_t hash, const std::vector<int64_t> &key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, end] = byHash.equal_range(hash);
    for (; it != end; ++it)
      if (it->second->key == key)
        return it->second;
    return nullptr;
  }
  void add(uint64_t hash, std::shared_ptr<const Entry> entry) {
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, end] = byHash.equal_range(hash);
    for (; it != end; ++it)
      if (it->second->key == entry->key)
        return; // planned meanwhile by another thread
    byHash.emplace(hash, std::move(entry));
    fifo.push_back(hash);
    if (fifo.size() > kEntries) {
      auto oldest = byHash.find(fifo.front()); // one of that hash (collisions: any)
      if (oldest != byHash.end())
        byHash.erase(oldest);
      fifo.pop_front();
    }
  }
  static PlanMemo &get() {
    static PlanMemo memo;
    return memo;
  }
};

PlanResult planArenaUncached(std::vector<PlanBuffer> &buffers, const PlanOptions &options);

} // namespace

PlanResult planArena(std::vector<PlanBuffer> &buffers, const PlanOptions &options) {
  if (!options.memoize)
    return planArenaUncached(buffers, options);
  std::vector<int64_t> key = PlanMemo::keyOf(buffers, options);
  uint64_t hash = PlanMemo::hashOf(key);
  PlanMemo &memo = PlanMemo::get();
  if (std::shared_ptr<const PlanMemo::Entry> hit = memo.find(hash, key)) {
    for (size_t i = 0; i < buffers.size(); ++i)
      buffers[i].offset = hit->offsets[i];
    return hit->result;
  }
  PlanResult result = planArenaUncached(buffers, options);
  if (result.complete) {
    auto entry = std::make_shared<PlanMemo::Entry>();
    entry->key = std::move(key);
    entry->offsets.reserve(buffers.size());
    for (const PlanBuffer &b : buffers)
      entry->offsets.push_back(b.offset);
    entry->result = result;
    memo.add(hash, std::move(entry));
  }
  return result;
}

namespace {

PlanResult planArenaUncached(std::vector<PlanBuffer> &buffers, const PlanOptions &options) {
  PlanResult result;
  std::vector<Item> items;
  std::vector<size_t> bufferOf; // item id -> index in `buffers`
  for (size_t i = 0; i < buffers.size(); ++i) {
    PlanBuffer &b = buffers[i];
    b.offset = 0;
    if (b.bytes <= 0)
      continue;
    assert(b.first <= b.last && "liveness interval must not be empty");
    items.push_back({b.bytes, std::max<int64_t>(b.alignment, 1), b.first,
                     std::max(b.first, b.last), b.fixedOffset});
    bufferOf.push_back(i);
  }
  if (items.empty()) {
    result.heuristic = "empty";
    return result;
  }

  // Lower bound: the peak of the sum of live bytes (sweep over interval endpoints;
  // at equal times starts come before ends because intervals are inclusive).
  {
    std::vector<std::pair<int64_t, int64_t>> events; // (time*2 [+1 for end], +-bytes)
    events.reserve(2 * items.size());
    for (const Item &it : items) {
      events.emplace_back(2 * it.first, it.bytes);
      events.emplace_back(2 * it.last + 1, -it.bytes);
    }
    std::sort(events.begin(), events.end());
    int64_t live = 0;
    for (const auto &ev : events) {
      live += ev.second;
      result.lowerBound = std::max(result.lowerBound, live);
    }
  }

  int64_t granule = 0; // gcd of all alignments (bytes)
  for (const Item &it : items)
    granule = std::gcd(granule, it.align);
  // Pinned offsets are multiples of their alignment (the caller's contract); folded in
  // anyway, so that the bound holds whatever they are.
  int64_t boundGranule = granule;
  for (const Item &it : items)
    if (it.fixed > 0)
      boundGranule = std::gcd(boundGranule, it.fixed);
  const int64_t stopBound =
      options.stopAtAlignedBound
          ? std::max(result.lowerBound, alignedLowerBound(items, boundGranule))
          : result.lowerBound;
  Timeline time = compressTime(items);
  OccupancyIndex index(time.numTimes);
  // Orders are built when an attempt first needs them: when the first attempt
  // reaches the lower bound (as on the compiler's training steps), the others never are.
  std::map<std::string, std::vector<int32_t>> orders;
  auto orderNamed = [&](const char *name) -> const std::vector<int32_t> & {
    auto it = orders.find(name);
    if (it == orders.end())
      it = orders.emplace(name, buildOrder(items, name)).first;
    return it->second;
  };
  // Attempts, most useful first. On random instances size-desc/first-fit is the best
  // single attempt (about 2% above the lower bound on average), size-desc/best-fit
  // after compaction comes close, and breadth and length orders win the rest. Best-fit
  // results are also compacted, which recovers the small holes best fit leaves.
  const std::pair<const char *, Fit> attempts[] = {
      {"size-desc", Fit::First},  {"size-desc", Fit::Best},   {"breadth", Fit::Best},
      {"length-desc", Fit::Best}, {"area-desc", Fit::Best},   {"length-desc", Fit::First},
      {"area-desc", Fit::First},  {"breadth", Fit::First},    {"first-use", Fit::Best},
      {"first-use", Fit::First}};

  // Work (index ranges read, plus a per-buffer constant) is counted as passes run; the
  // first attempt always completes, and any later pass is abandoned as soon as the
  // total exceeds the budget. The budget counts work, not time, so the plan stays
  // deterministic.
  const uint64_t kWorkBudget = options.workBudget;
  uint64_t work = 0;
  std::vector<int64_t> offsets, bestOffsets;
  int64_t bestArena = std::numeric_limits<int64_t>::max();
  auto consider = [&](int64_t arena, const std::string &name) {
    if (arena < bestArena) {
      bestArena = arena;
      bestOffsets = offsets;
      result.heuristic = name;
    }
  };
  // Places in `ids` order with `fit`, compacts a best-fit result, and keeps the
  // result if it is the smallest so far. False when the pass ran out of budget.
  auto attempt = [&](const std::vector<int32_t> &ids, Fit fit, std::string name) {
    name += fit == Fit::Best ? "/best-fit" : "/first-fit";
    uint64_t limit = bestOffsets.empty() ? std::numeric_limits<uint64_t>::max() : kWorkBudget;
    int64_t arena = placeInOrder(items, time, ids, fit, granule, index, offsets, work, limit);
    if (arena < 0)
      return false;
    consider(arena, name);
    if (fit == Fit::Best && arena > stopBound && work < kWorkBudget) {
      int64_t compacted = compact(items, time, granule, index, offsets, arena,
                                  /*maxRounds=*/4, work, kWorkBudget);
      if (compacted < arena)
        consider(compacted, name + "+compact");
    }
    return true;
  };
  // Never before the first attempt, which always runs (even with a zero budget).
  // Decided for PlanOptions::fitsBytes: an attempt fits, or the bound says none can.
  auto decided = [&] {
    return options.fitsBytes >= 0 &&
           (bestArena <= options.fitsBytes || stopBound > options.fitsBytes);
  };
  auto done = [&] {
    if (bestOffsets.empty())
      return false;
    if (bestArena > stopBound && work < kWorkBudget && decided())
      result.complete = false; // the complete search might still have gone lower
    return bestArena <= stopBound || work >= kWorkBudget || decided();
  };

  for (const auto &[orderName, fit] : attempts)
    if (done() || !attempt(orderNamed(orderName), fit, orderName))
      break; // optimal (nothing beats the lower bound), or out of budget

  // Randomized restarts (the "greedy randomized" half of GRASP: Feo & Resende,
  // "Greedy Randomized Adaptive Search Procedures", J. Global Optim. 6, 1995): visit
  // by size with each size scaled by a random factor in [0.6, 1.4], so that buffers
  // of similar size swap places, and alternate first fit with compacted best fit.
  // On random instances this halves the excess over the lower bound of the fixed
  // heuristics. The generator is std::mt19937_64 with a fixed seed, whose output the
  // C++ standard specifies, and the keys are integers, so plans are reproducible.
  std::mt19937_64 rng(0x7467632d706c616eULL); // "tgc-plan"
  std::vector<__int128> key(items.size());
  std::vector<int32_t> perturbed(items.size());
  for (int round = 0; round < options.searchRounds && !done(); ++round) {
    for (size_t i = 0; i < items.size(); ++i) // factor (1024 + [-410, 410]) / 1024
      key[i] = (__int128)items[i].bytes * (1024 - 410 + int64_t(rng() % 821));
    std::iota(perturbed.begin(), perturbed.end(), 0);
    std::sort(perturbed.begin(), perturbed.end(), [&](int32_t a, int32_t b) {
      return key[a] != key[b] ? key[a] > key[b] : a < b;
    });
    Fit fit = round % 2 == 0 ? Fit::First : Fit::Best;
    if (!attempt(perturbed, fit, "size-random#" + std::to_string(round)))
      break;
  }

  for (size_t id = 0; id < items.size(); ++id)
    buffers[bufferOf[id]].offset = bestOffsets[id];
  result.arenaBytes = bestArena;
  return result;
}

} // namespace

namespace detail {
int64_t greedyPassForTest(std::vector<PlanBuffer> &buffers, const std::vector<int32_t> &order,
                          bool bestFit, uint64_t *work) {
  std::vector<Item> items;
  int64_t granule = 0;
  for (const PlanBuffer &b : buffers) {
    assert(b.bytes > 0 && b.fixedOffset < 0 && "greedyPassForTest: no empty or pinned buffers");
    items.push_back({b.bytes, std::max<int64_t>(b.alignment, 1), b.first,
                     std::max(b.first, b.last), -1});
    granule = std::gcd(granule, items.back().align);
  }
  Timeline time = compressTime(items);
  OccupancyIndex index(time.numTimes);
  std::vector<int64_t> offsets;
  uint64_t units = 0;
  int64_t arena = placeInOrder(items, time, order, bestFit ? Fit::Best : Fit::First, granule,
                               index, offsets, units);
  for (size_t i = 0; i < buffers.size(); ++i)
    buffers[i].offset = offsets[i];
  if (work)
    *work += units;
  return arena;
}
} // namespace detail

bool verifyPlan(const std::vector<PlanBuffer> &buffers, std::string *why) {
  auto describe = [&](size_t i) {
    const PlanBuffer &b = buffers[i];
    std::ostringstream os;
    os << "buffer " << i << " (bytes [" << b.offset << ", " << b.offset + b.bytes
       << "), live [" << b.first << ", " << b.last << "])";
    return os.str();
  };
  auto fail = [&](const std::string &msg) {
    if (why)
      *why = msg;
    return false;
  };
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &b = buffers[i];
    if (b.bytes <= 0)
      continue;
    if (b.offset < 0)
      return fail(describe(i) + " has no offset");
    int64_t align = std::max<int64_t>(b.alignment, 1);
    if (b.offset % align != 0)
      return fail(describe(i) + " is not aligned to " + std::to_string(align));
    if (b.last < b.first)
      return fail(describe(i) + " has an empty liveness interval");
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].first != buffers[b].first ? buffers[a].first < buffers[b].first : a < b;
  });
  // Sweep by `first`. `active` holds the buffers live at the current time, keyed by
  // offset; they are pairwise disjoint in memory (else we already failed), so a new
  // buffer overlaps one of them iff it overlaps its neighbour below or above.
  std::vector<std::pair<int64_t, size_t>> expiry; // min-heap on (last, index)
  auto later = [](const auto &x, const auto &y) { return x > y; };
  std::set<std::pair<int64_t, size_t>> active; // (offset, index)
  for (size_t i : order) {
    const PlanBuffer &b = buffers[i];
    while (!expiry.empty() && expiry.front().first < b.first) {
      size_t gone = expiry.front().second;
      std::pop_heap(expiry.begin(), expiry.end(), later);
      expiry.pop_back();
      active.erase(std::make_pair(buffers[gone].offset, gone));
    }
    auto key = std::make_pair(b.offset, i);
    auto pos = active.lower_bound(key);
    if (pos != active.begin()) {
      size_t below = std::prev(pos)->second;
      if (buffers[below].offset + buffers[below].bytes > b.offset)
        return fail(describe(below) + " overlaps " + describe(i));
    }
    if (pos != active.end()) {
      size_t above = pos->second;
      if (b.offset + b.bytes > buffers[above].offset)
        return fail(describe(i) + " overlaps " + describe(above));
    }
    active.insert(pos, key);
    expiry.emplace_back(b.last, i);
    std::push_heap(expiry.begin(), expiry.end(), later);
  }
  return true;
}

} // namespace tgc
