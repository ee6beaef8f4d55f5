// CudaEmu.cpp — fiber scheduler, runtime API and cuBLASLt stand-ins of CudaEmu.h.
#include "runtime/cuda/emu/CudaEmu.h"
#include "runtime/tgrt.h"

#include <cmath>
#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

namespace emu {

Thread* g_thread = nullptr;
uint3 g_blockIdx = {0, 0, 0};
dim3 g_blockDim;
dim3 g_gridDim;

namespace {

enum class State { Ready, AtSync, AtWarp, AtNamed, AtCluster, Yielded, Done };

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kMaxSmem = 227 * 1024; // Hopper's opt-in limit per block

struct Fiber {
  ucontext_t ctx;
  State state = State::Ready;
  Thread thread;
  int block = 0;        ///< its block's rank in the cluster (index into g_blocks)
  unsigned warpGen = 0; ///< warp barriers passed (selects the exchange buffer)
  int namedBar = -1;    ///< the named barrier waited at (AtNamed)
};
constexpr int kNamedBarriers = 16;

struct Warp {
  unsigned char slot[2][32][16]; ///< double-buffered exchange, 16 bytes a lane
};

ucontext_t g_sched;
std::vector<Fiber> g_fibers;
std::vector<char*> g_stacks;
std::vector<Warp> g_warps;
int g_cur = -1;
/// Bumped by whatever a thread does that another may wait for (a barrier reached, a thread
/// finished, an mbarrier operation): a round of the scheduler in which it stays put while
/// threads spin (yieldThread) is a deadlock.
unsigned long long g_progress = 0;
/// An mbarrier's state (CudaEmu.h "mbarrier").
struct Mbar {
  unsigned count = 0, pending = 0, phase = 0;
  long long tx = 0;
};
/// A running block of the cluster: its index, dynamic shared memory, mbarriers (by the byte
/// offset of their word in shared memory) and named barriers' counts (bar.sync id, count; set
/// by the first arrival).
struct Block {
  uint3 idx = {0, 0, 0};
  std::vector<float4> smem;
  std::map<size_t, Mbar> mbars;
  int namedCount[kNamedBarriers] = {0};
};
std::vector<Block> g_blocks;
int g_threadsPerBlock = 0;
const std::function<void()>* g_body = nullptr;
cudaError_t g_lastError = cudaSuccess;

/// The running fiber's block.
Block& curBlock() { return g_blocks[(size_t)g_fibers[g_cur].block]; }
size_t smemBytesOf(const Block& b) { return b.smem.size() * sizeof(float4); }

void trampoline() {
  (*g_body)();
  Fiber& f = g_fibers[g_cur];
  f.state = State::Done;
  ++g_progress;
  swapcontext(&f.ctx, &g_sched);
  std::abort(); // a finished fiber is never resumed
}

/// Yields the running fiber to the scheduler with state `s`.
void block(State s) {
  Fiber& f = g_fibers[g_cur];
  f.state = s;
  if (s != State::Yielded) ++g_progress;
  swapcontext(&f.ctx, &g_sched);
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "cuda-emu: %s\n", what);
  std::exit(3);
}

/// Runs the blocks of one cluster (g_blocks, g_threadsPerBlock threads each) as one set of
/// fibers until every thread finished. Each round runs every ready fiber once, then releases
/// what its barriers allow: a block's __syncthreads (every live thread of the block at it),
/// a warp's barrier (every live lane), a named barrier (its count), the cluster barrier
/// (every live thread of the cluster) and the spinning threads (when anything happened in
/// the round); a round that releases nothing is a deadlock.
void runCluster() {
  const int n = g_threadsPerBlock, nb = (int)g_blocks.size(), total = n * nb;
  for (int i = 0; i < total; ++i) {
    Fiber& f = g_fibers[i];
    f.state = State::Ready;
    f.warpGen = 0;
    f.block = i / n;
    const int t = i % n;
    f.thread.linear = t;
    f.thread.idx.x = (unsigned)t % g_blockDim.x;
    f.thread.idx.y = ((unsigned)t / g_blockDim.x) % g_blockDim.y;
    f.thread.idx.z = (unsigned)t / (g_blockDim.x * g_blockDim.y);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = g_stacks[i];
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, trampoline, 0);
  }
  const int nWarps = (n + 31) / 32;
  auto releaseIf = [&](int lo, int hi, auto pred) {
    for (int i = lo; i < hi; ++i)
      if (pred(g_fibers[i])) g_fibers[i].state = State::Ready;
  };
  for (;;) {
    const unsigned long long progressBefore = g_progress;
    for (int i = 0; i < total; ++i) {
      if (g_fibers[i].state != State::Ready) continue;
      g_cur = i;
      g_thread = &g_fibers[i].thread;
      g_blockIdx = g_blocks[(size_t)g_fibers[i].block].idx;
      swapcontext(&g_sched, &g_fibers[i].ctx);
    }
    int live = 0, atCluster = 0, yielded = 0;
    for (int i = 0; i < total; ++i) {
      if (g_fibers[i].state == State::Done) continue;
      ++live;
      atCluster += g_fibers[i].state == State::AtCluster;
      yielded += g_fibers[i].state == State::Yielded;
    }
    if (live == 0) return;
    bool released = false;
    if (yielded > 0 && g_progress != progressBefore) {
      releaseIf(0, total, [](const Fiber& f) { return f.state == State::Yielded; });
      released = true;
    }
    for (int b = 0; b < nb; ++b) {
      const int lo = b * n, hi = lo + n;
      for (int w = 0; w < nWarps; ++w) {
        const int wlo = lo + w * 32, whi = std::min(hi, wlo + 32);
        int wl = 0, wa = 0;
        for (int i = wlo; i < whi; ++i) {
          if (g_fibers[i].state == State::Done) continue;
          ++wl;
          wa += g_fibers[i].state == State::AtWarp;
        }
        if (wl > 0 && wa == wl) {
          releaseIf(wlo, whi, [](const Fiber& f) { return f.state == State::AtWarp; });
          released = true;
        }
      }
      Block& blk = g_blocks[(size_t)b];
      for (int id = 0; id < kNamedBarriers; ++id) {
        int at = 0;
        for (int i = lo; i < hi; ++i)
          at += g_fibers[i].state == State::AtNamed && g_fibers[i].namedBar == id;
        if (at > 0 && at >= blk.namedCount[id]) {
          releaseIf(lo, hi, [id](const Fiber& f) {
            return f.state == State::AtNamed && f.namedBar == id;
          });
          blk.namedCount[id] = 0;
          released = true;
        }
      }
      int bl = 0, bs = 0;
      for (int i = lo; i < hi; ++i) {
        if (g_fibers[i].state == State::Done) continue;
        ++bl;
        bs += g_fibers[i].state == State::AtSync;
      }
      if (bl > 0 && bs == bl) {
        releaseIf(lo, hi, [](const Fiber& f) { return f.state == State::AtSync; });
        released = true;
      }
    }
    if (atCluster == live) {
      releaseIf(0, total, [](const Fiber& f) { return f.state == State::AtCluster; });
      released = true;
    }
    if (!released) die("deadlock: threads wait at different barriers");
  }
}

} // namespace

namespace {
/// The capturing stream's recorded work (NULL when no stream captures), and whether a
/// forbidden call invalidated the capture.
std::vector<std::function<void()>>* g_capture = nullptr;
bool g_captureInvalid = false;
} // namespace

bool recording(const std::function<void()>& op) {
  if (!g_capture) return false;
  g_capture->push_back(op);
  return true;
}

void launch(dim3 grid, dim3 blockDims, size_t smemBytes, const std::function<void()>& body,
            unsigned clusterX) {
  const long long n = (long long)blockDims.x * blockDims.y * blockDims.z;
  if (n <= 0 || n > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535 || clusterX == 0 || clusterX > 8 || grid.x % clusterX != 0) {
    g_lastError = cudaErrorInvalidValue;
    return;
  }
  if (smemBytes > kMaxSmem) {
    std::fprintf(stderr, "cuda-emu: launch asks for %zu bytes of dynamic shared memory\n",
                 smemBytes);
    g_lastError = cudaErrorInvalidValue;
    return;
  }
  // Captured: the closure (which holds its arguments by value) runs at each graph launch.
  if (recording([grid, blockDims, smemBytes, body, clusterX] {
        launch(grid, blockDims, smemBytes, body, clusterX);
      }))
    return;
  const size_t total = (size_t)n * clusterX;
  while (g_stacks.size() < total) {
    char* s = static_cast<char*>(std::malloc(kStackBytes));
    if (!s) die("out of memory for fiber stacks");
    g_stacks.push_back(s);
  }
  if (g_fibers.size() < total) g_fibers.resize(total);
  g_warps.resize(clusterX * (size_t)((n + 31) / 32));
  g_blocks.assign(clusterX, Block{});
  for (Block& b : g_blocks) b.smem.resize(smemBytes / sizeof(float4) + 1);
  g_threadsPerBlock = (int)n;
  g_body = &body;
  g_blockDim = blockDims;
  g_gridDim = grid;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; x += clusterX) {
        for (unsigned r = 0; r < clusterX; ++r) {
          Block& b = g_blocks[r];
          b.idx = {x + r, y, z};
          b.mbars.clear();
          std::fill(std::begin(b.namedCount), std::end(b.namedCount), 0);
          // Poison shared memory (NaN bytes) so reads of never-written smem show up.
          std::memset(static_cast<void*>(b.smem.data()), 0xff, smemBytesOf(b));
        }
        runCluster();
      }
  g_thread = nullptr;
  g_cur = -1;
}

void* dynamicSmem() { return curBlock().smem.data(); }

unsigned clusterCtaRank() { return (unsigned)g_fibers[g_cur].block; }

unsigned clusterSize() { return (unsigned)g_blocks.size(); }

void clusterSync() { block(State::AtCluster); }

void yieldThread() { block(State::Yielded); }

void namedBarrier(int id, int count) {
  if (id < 0 || id >= kNamedBarriers || count <= 0 || count % 32 != 0)
    die("bar.sync: id must be in [0, 16) and the count a positive multiple of 32");
  int& expected = curBlock().namedCount[id];
  if (expected != 0 && expected != count)
    die("bar.sync: threads wait at one named barrier with different counts");
  expected = count;
  g_fibers[g_cur].namedBar = id;
  block(State::AtNamed);
}

void tmaStore2d(const TensorMap* map, const void* src, int c0, int c1) {
  if (map->elemBytes != 2) die("tma store: only 2-byte elements are emulated");
  const size_t rowBytes = (size_t)map->box[0] * 2;
  if (map->swizzle128 && rowBytes != 128) die("tma store: the 128-byte swizzle needs 128-byte box rows");
  const Block& blk = curBlock();
  const char* smem = reinterpret_cast<const char*>(blk.smem.data());
  const size_t base = (size_t)(static_cast<const char*>(src) - smem);
  if (base % (map->swizzle128 ? 1024 : 128) != 0 || base + rowBytes * map->box[1] > smemBytesOf(blk))
    die("tma store: the source is misaligned or outside shared memory");
  char* g = static_cast<char*>(const_cast<void*>(map->base));
  for (uint32_t r = 0; r < map->box[1]; ++r)
    for (uint32_t e = 0; e < map->box[0]; ++e) {
      const long long row = (long long)c1 + r, col = (long long)c0 + e;
      if (row < 0 || col < 0 || (uint64_t)row >= map->dims[1] || (uint64_t)col >= map->dims[0])
        continue; // outside the tensor: not written
      size_t a = base + r * rowBytes + e * 2;
      if (map->swizzle128) a ^= ((a >> 7) & 7) << 4;
      std::memcpy(g + (size_t)row * map->rowBytes + (size_t)col * 2, smem + a, 2);
    }
}

namespace {
/// The byte offset of p in the running block's shared memory; dies (naming `what`) unless
/// p lies in it, aligned to `align` with `bytes` bytes from there inside it.
size_t smemOffset(const void* p, size_t align, size_t bytes, const char* what) {
  const Block& blk = curBlock();
  const char* base = reinterpret_cast<const char*>(blk.smem.data());
  const char* q = static_cast<const char*>(p);
  if (q < base || (size_t)(q - base) % align != 0 || (size_t)(q - base) + bytes > smemBytesOf(blk)) {
    std::fprintf(stderr, "cuda-emu: %s: the address is misaligned or outside shared memory\n",
                 what);
    std::exit(3);
  }
  return (size_t)(q - base);
}
/// The mbarrier at byte offset `off` of block `rank`'s shared memory.
Mbar& mbarOf(unsigned rank, size_t off) {
  if (rank >= g_blocks.size()) die("mbarrier: the CTA rank is outside the cluster");
  return g_blocks[rank].mbars[off];
}
Mbar& mbarAt(void* bar, const char* what) {
  return curBlock().mbars[smemOffset(bar, 8, 8, what)];
}
void mbarSettle(Mbar& m) {
  if (m.pending == 0 && m.tx == 0) {
    m.phase ^= 1u;
    m.pending = m.count;
  }
}
void arriveOn(Mbar& m, unsigned txBytes) {
  if (m.count == 0 || m.pending == 0) die("mbarrier.arrive on a barrier never initialised");
  m.tx += txBytes;
  --m.pending;
  mbarSettle(m);
  ++g_progress;
}
void completeTxOn(Mbar& m, unsigned bytes) {
  if (m.count == 0) die("complete_tx on an mbarrier never initialised");
  m.tx -= bytes;
  mbarSettle(m);
  ++g_progress;
}
/// The box of `map` at (c0, c1) into block `rank`'s shared memory at byte offset `base`
/// (see tmaLoad2d); returns the box's bytes.
size_t loadBox(unsigned rank, size_t base, const TensorMap* map, int c0, int c1) {
  char* smem = reinterpret_cast<char*>(g_blocks[rank].smem.data());
  const size_t rowBytes = (size_t)map->box[0] * 2;
  const char* g = static_cast<const char*>(map->base);
  for (uint32_t r = 0; r < map->box[1]; ++r)
    for (uint32_t e = 0; e < map->box[0]; ++e) {
      const long long row = (long long)c1 + r, col = (long long)c0 + e;
      uint16_t v = 0;
      if (row >= 0 && col >= 0 && (uint64_t)row < map->dims[1] && (uint64_t)col < map->dims[0])
        std::memcpy(&v, g + (size_t)row * map->rowBytes + (size_t)col * 2, 2);
      size_t a = base + r * rowBytes + e * 2;
      if (map->swizzle128) a ^= ((a >> 7) & 7) << 4;
      std::memcpy(smem + a, &v, 2);
    }
  return rowBytes * map->box[1];
}
/// The destination offset of a TMA load into the running block (checked against `map`).
size_t tmaDst(void* dst, const TensorMap* map, const char* what) {
  if (map->elemBytes != 2) die("tma: only 2-byte elements are emulated");
  const size_t rowBytes = (size_t)map->box[0] * 2;
  if (map->swizzle128 && rowBytes != 128) die("tma: the 128-byte swizzle needs 128-byte box rows");
  return smemOffset(dst, map->swizzle128 ? 1024 : 128, rowBytes * map->box[1], what);
}
} // namespace

void mbarInit(void* bar, unsigned count) {
  Mbar& m = mbarAt(bar, "mbarrier.init");
  m = Mbar{count, count, 0, 0};
  ++g_progress;
}

void mbarArrive(void* bar, unsigned txBytes) { arriveOn(mbarAt(bar, "mbarrier.arrive"), txBytes); }

void mbarArriveCluster(void* bar, unsigned rank) {
  arriveOn(mbarOf(rank, smemOffset(bar, 8, 8, "mbarrier.arrive.shared::cluster")), 0);
}

void mbarCompleteTx(void* bar, unsigned bytes) { completeTxOn(mbarAt(bar, "complete_tx"), bytes); }

bool mbarDone(void* bar, unsigned parity) {
  Mbar& m = mbarAt(bar, "mbarrier.try_wait");
  if (m.count == 0) die("mbarrier.try_wait on a barrier never initialised");
  return m.phase != (parity & 1u);
}

void tmaLoad2d(void* dst, const TensorMap* map, int c0, int c1, void* bar) {
  const size_t base = tmaDst(dst, map, "tma load");
  const size_t bytes = loadBox(clusterCtaRank(), base, map, c0, c1);
  mbarCompleteTx(bar, (unsigned)bytes);
}

void tmaLoad2dMulticast(void* dst, const TensorMap* map, int c0, int c1, void* bar,
                        uint16_t ctaMask) {
  const size_t base = tmaDst(dst, map, "tma multicast load");
  const size_t barOff = smemOffset(bar, 8, 8, "tma multicast load (mbarrier)");
  if (ctaMask == 0 || (ctaMask >> g_blocks.size()) != 0)
    die("tma multicast: the CTA mask names no CTA or one outside the cluster");
  for (unsigned r = 0; r < g_blocks.size(); ++r)
    if (ctaMask & (1u << r)) completeTxOn(mbarOf(r, barOff), (unsigned)loadBox(r, base, map, c0, c1));
}

void syncthreads() { block(State::AtSync); }

void syncwarp() {
  block(State::AtWarp);
  g_fibers[g_cur].warpGen++;
}

/// Publishes `bytes` (<= 16) of `mine` in this lane's slot and waits for the warp (a
/// barrier). Returns the warp's slots; `lane` is this lane, `lanes` how many lanes exist (a
/// partial last warp has fewer than 32). The caller reads what it needs, then increments
/// g_fibers[g_cur].warpGen to flip the double buffer.
unsigned char (*publishToWarp(const void* mine, size_t bytes, const char* what, int& lane,
                              int& lanes))[16] {
  if (bytes > 16) die(what);
  Fiber& f = g_fibers[g_cur];
  lane = f.thread.linear & 31;
  Warp& w = g_warps[(size_t)(f.block * ((g_threadsPerBlock + 31) / 32) + f.thread.linear / 32)];
  const unsigned buf = f.warpGen & 1;
  std::memcpy(w.slot[buf][lane], mine, bytes);
  block(State::AtWarp);
  const int n = (int)(g_blockDim.x * g_blockDim.y * g_blockDim.z);
  lanes = std::min(32, n - (f.thread.linear & ~31));
  return w.slot[buf];
}

void warpExchange(const void* mine, void* out, size_t bytes, int srcLane) {
  int lane = 0, lanes = 0;
  auto slots = publishToWarp(mine, bytes, "warp exchange of more than 16 bytes", lane, lanes);
  const int src = (srcLane >= 0 && srcLane < lanes) ? srcLane : lane;
  std::memcpy(out, slots[src], bytes);
  g_fibers[g_cur].warpGen++;
}

void warpGather(const void* mine, void* all, size_t bytes) {
  int lane = 0, lanes = 0;
  auto slots = publishToWarp(mine, bytes, "warp gather of more than 16 bytes", lane, lanes);
  for (int l = 0; l < lanes; ++l)
    std::memcpy(static_cast<char*>(all) + l * bytes, slots[l], bytes);
  g_fibers[g_cur].warpGen++;
}

namespace {
float bf16Lo(uint32_t x) {
  const uint32_t u = x << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float bf16Hi(uint32_t x) {
  const uint32_t u = x & 0xffff0000u;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
} // namespace

void mmaBf16m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                     const float (&c)[4]) {
  uint32_t as[32][4], bs[32][2];
  warpGather(a, as, sizeof as[0]);
  warpGather(b, bs, sizeof bs[0]);
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, q = l & 3;
    const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * q, 2 * q, 2 * q + 8, 2 * q + 8};
    for (int i = 0; i < 4; ++i) {
      A[rows[i]][cols[i]] = bf16Lo(as[l][i]);
      A[rows[i]][cols[i] + 1] = bf16Hi(as[l][i]);
    }
    for (int i = 0; i < 2; ++i) {
      B[2 * q + 8 * i][g] = bf16Lo(bs[l][i]);
      B[2 * q + 8 * i + 1][g] = bf16Hi(bs[l][i]);
    }
  }
  const int lane = laneId(), g = lane >> 2, q = lane & 3;
  const int rr[4] = {g, g, g + 8, g + 8}, cc[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
  float out[4];
  for (int i = 0; i < 4; ++i) {
    float s = c[i];
    for (int kk = 0; kk < 16; ++kk) s += A[rr[i]][kk] * B[kk][cc[i]];
    out[i] = s;
  }
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

void mmaF16m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                    const float (&c)[4]) {
  uint32_t as[32][4], bs[32][2];
  warpGather(a, as, sizeof as[0]);
  warpGather(b, bs, sizeof bs[0]);
  auto lo = [](uint32_t x) { return tgrt_f16_to_float((uint16_t)(x & 0xffffu)); };
  auto hi = [](uint32_t x) { return tgrt_f16_to_float((uint16_t)(x >> 16)); };
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, q = l & 3;
    const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * q, 2 * q, 2 * q + 8, 2 * q + 8};
    for (int i = 0; i < 4; ++i) {
      A[rows[i]][cols[i]] = lo(as[l][i]);
      A[rows[i]][cols[i] + 1] = hi(as[l][i]);
    }
    for (int i = 0; i < 2; ++i) {
      B[2 * q + 8 * i][g] = lo(bs[l][i]);
      B[2 * q + 8 * i + 1][g] = hi(bs[l][i]);
    }
  }
  const int lane = laneId(), g = lane >> 2, q = lane & 3;
  const int rr[4] = {g, g, g + 8, g + 8}, cc[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
  float out[4];
  for (int i = 0; i < 4; ++i) {
    float s = c[i];
    for (int kk = 0; kk < 16; ++kk) s += A[rr[i]][kk] * B[kk][cc[i]];
    out[i] = s;
  }
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

namespace {
/// Element (mn, k) of a 2-byte operand described by `desc` (see wgmma in CudaEmu.h).
uint16_t descElem(uint64_t desc, int mn, int k, bool mnMajor) {
  const size_t start = (size_t)(desc & 0x3fffu) << 4;
  const size_t lbo = (size_t)((desc >> 16) & 0x3fffu) << 4;
  const size_t sbo = (size_t)((desc >> 32) & 0x3fffu) << 4;
  const int layout = (int)(desc >> 62);
  size_t a;
  if (layout == 0) { // no swizzle: 8 x 16-byte core matrices
    a = start + (mnMajor ? (size_t)(mn / 8) * sbo + (size_t)(k / 8) * lbo +
                               (size_t)(k % 8) * 16 + (size_t)(mn % 8) * 2
                         : (size_t)(mn / 8) * sbo + (size_t)(k / 8) * lbo +
                               (size_t)(mn % 8) * 16 + (size_t)(k % 8) * 2);
  } else if (layout == 1) { // 128-byte swizzle: 128-byte rows, chunk ^= address bits 7-9
    a = start + (mnMajor ? (size_t)(mn / 64) * lbo + (size_t)(mn % 64) * 2 +
                               (size_t)(k % 8) * 128 + (size_t)(k / 8) * sbo
                         : (size_t)(mn / 8) * sbo + (size_t)(mn % 8) * 128 + (size_t)k * 2);
    a ^= ((a >> 7) & 7) << 4;
  } else {
    die("wgmma: only the no-swizzle and 128-byte swizzle layouts are emulated");
  }
  uint16_t v;
  std::memcpy(&v, static_cast<const char*>(dynamicSmem()) + a, 2);
  return v;
}
} // namespace

void wgmma(float* d, int n, bool f16, const uint32_t* a, uint64_t descA, uint64_t descB,
           int transB) {
  if (n % 8 != 0 || n < 8 || n > 256) die("wgmma: N must be a multiple of 8 in [8, 256]");
  auto cvt = [f16](uint16_t h) {
    if (f16) return tgrt_f16_to_float(h);
    const uint32_t u = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  const int lane = laneId(), g = lane >> 2, q = lane & 3;
  const int warp = (g_thread->linear / 32) % 4;
  float A[16][16];
  if (a) {
    uint32_t as[32][4];
    warpGather(a, as, sizeof as[0]);
    for (int l = 0; l < 32; ++l) {
      const int lg = l >> 2, lq = l & 3;
      const int rows[4] = {lg, lg + 8, lg, lg + 8};
      const int cols[4] = {2 * lq, 2 * lq, 2 * lq + 8, 2 * lq + 8};
      for (int i = 0; i < 4; ++i) {
        A[rows[i]][cols[i]] = cvt((uint16_t)(as[l][i] & 0xffffu));
        A[rows[i]][cols[i] + 1] = cvt((uint16_t)(as[l][i] >> 16));
      }
    }
  } else {
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 16; ++k) A[r][k] = cvt(descElem(descA, warp * 16 + r, k, false));
  }
  for (int j = 0; j < n / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      const int r = g + 8 * (e >> 1), c = 8 * j + 2 * q + (e & 1);
      float s = d[4 * j + e];
      for (int k = 0; k < 16; ++k) s += A[r][k] * cvt(descElem(descB, c, k, transB != 0));
      d[4 * j + e] = s;
    }
}

float tf32Rna(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) { // finite: add half an ulp of TF32 to the magnitude
    u += 0x1000u;                          // (sign-magnitude, so ties go away from zero)
    u &= 0xffffe000u;
  }
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

void mmaTf32m16n8k8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                    const float (&c)[4]) {
  uint32_t as[32][4], bs[32][2];
  warpGather(a, as, sizeof as[0]);
  warpGather(b, bs, sizeof bs[0]);
  auto tf = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return tf32Rna(f);
  };
  float A[16][8], B[8][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, q = l & 3;
    A[g][q] = tf(as[l][0]);
    A[g + 8][q] = tf(as[l][1]);
    A[g][q + 4] = tf(as[l][2]);
    A[g + 8][q + 4] = tf(as[l][3]);
    B[q][g] = tf(bs[l][0]);
    B[q + 4][g] = tf(bs[l][1]);
  }
  const int lane = laneId(), g = lane >> 2, q = lane & 3;
  const int rr[4] = {g, g, g + 8, g + 8}, cc[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
  float out[4];
  for (int i = 0; i < 4; ++i) {
    float s = c[i];
    for (int kk = 0; kk < 8; ++kk) s += A[rr[i]][kk] * B[kk][cc[i]];
    out[i] = s;
  }
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

void ldmatrix(uint32_t* r, int n, bool trans, const void* rowAddr) {
  if (n != 1 && n != 2 && n != 4) die("ldmatrix: .x1, .x2 or .x4");
  const void* ptrs[32];
  warpGather(&rowAddr, ptrs, sizeof(void*));
  const int lane = laneId();
  for (int i = 0; i < n; ++i) {
    uint16_t lo, hi;
    if (!trans) {
      const uint16_t* row = static_cast<const uint16_t*>(ptrs[8 * i + lane / 4]);
      lo = row[2 * (lane % 4)];
      hi = row[2 * (lane % 4) + 1];
    } else {
      lo = static_cast<const uint16_t*>(ptrs[8 * i + 2 * (lane % 4)])[lane / 4];
      hi = static_cast<const uint16_t*>(ptrs[8 * i + 2 * (lane % 4) + 1])[lane / 4];
    }
    r[i] = (uint32_t)lo | ((uint32_t)hi << 16);
  }
}

void stmatrix(const uint32_t* r, int n, const void* rowAddr) {
  if (n != 1 && n != 2 && n != 4) die("stmatrix: .x1, .x2 or .x4");
  void* ptrs[32];
  uint32_t frags[32][4] = {};
  uint32_t mine[4] = {};
  for (int i = 0; i < n; ++i) mine[i] = r[i];
  warpGather(&rowAddr, ptrs, sizeof(void*));
  warpGather(mine, frags, sizeof mine);
  const int lane = laneId();
  if (lane >= 8 * n) return;
  const int i = lane / 8, row = lane % 8; // this lane writes row `row` of matrix i
  uint16_t* dst = static_cast<uint16_t*>(ptrs[lane]);
  for (int q = 0; q < 4; ++q) {
    const uint32_t v = frags[4 * row + q][i];
    dst[2 * q] = (uint16_t)(v & 0xffffu);
    dst[2 * q + 1] = (uint16_t)(v >> 16);
  }
}

} // namespace emu

// ---------------------------------------------------------------------- runtime API --

struct EmuStream {
  bool capturing = false;
  std::vector<std::function<void()>> ops; ///< the work recorded while capturing
};
struct EmuGraph {
  std::vector<std::function<void()>> ops;
};
struct EmuEvent {
  std::chrono::steady_clock::time_point t;
};

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
  }
  return "unknown error";
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = emu::g_lastError;
  emu::g_lastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return emu::g_lastError; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "CPU emulator");
  p->totalGlobalMem = (size_t)80 << 30;
  p->sharedMemPerBlockOptin = emu::kMaxSmem;
  p->multiProcessorCount = 4;
  p->l2CacheSize = 50 << 20; // an H100's
  p->major = 9;
  p->minor = 0;
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* freeBytes, size_t* total) {
  // TGRT_EMU_FREE_BYTES lets a test exercise the "plan does not fit" path.
  const char* env = std::getenv("TGRT_EMU_FREE_BYTES");
  *total = (size_t)80 << 30;
  *freeBytes = env ? (size_t)std::strtoull(env, nullptr, 10) : ((size_t)64 << 30);
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
  const size_t rounded = ((bytes + 255) / 256) * 256;
  *p = std::aligned_alloc(256, rounded ? rounded : 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  if (emu::recording([=] { cudaMemcpy(dst, src, bytes, kind); })) return cudaSuccess;
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s) {
  if (width > dpitch || width > spitch) return cudaErrorInvalidValue;
  if (emu::recording([=] { cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, s); }))
    return cudaSuccess;
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                 width);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  if (emu::recording([=] { cudaMemset(p, value, bytes); })) return cudaSuccess;
  return cudaMemset(p, value, bytes);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new EmuStream();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (s && s->capturing) { // as on a GPU: not allowed, and the capture is lost
    emu::g_captureInvalid = true;
    return cudaErrorStreamCaptureUnsupported;
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (emu::g_capture) {
    emu::g_captureInvalid = true;
    return cudaErrorStreamCaptureUnsupported;
  }
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  if (!s || s->capturing || emu::g_capture) return cudaErrorIllegalState;
  s->capturing = true;
  s->ops.clear();
  emu::g_capture = &s->ops;
  emu::g_captureInvalid = false;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  if (!s || !s->capturing) return cudaErrorIllegalState;
  s->capturing = false;
  emu::g_capture = nullptr;
  *graph = nullptr;
  if (emu::g_captureInvalid) {
    s->ops.clear();
    return cudaErrorStreamCaptureInvalidated;
  }
  *graph = new EmuGraph{std::move(s->ops)};
  s->ops.clear();
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph || !count) return cudaErrorInvalidValue;
  if (nodes)
    for (size_t i = 0; i < *count && i < graph->ops.size(); ++i) nodes[i] = &graph->ops[i];
  *count = graph->ops.size();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph || !exec) return cudaErrorInvalidValue;
  *exec = new EmuGraph{graph->ops};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec) return cudaErrorInvalidValue;
  if (s && s->capturing) return cudaErrorStreamCaptureUnsupported;
  for (const auto& op : exec->ops) op();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new EmuEvent();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}

// ---------------------------------------------------------------------------- cuBLASLt --

struct EmuLtHandle {};
struct EmuLtDesc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  int32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr; ///< CUBLASLT_EPILOGUE_BIAS: one value per row of D
  void* aux = nullptr;        ///< GELU_AUX_BIAS: the pre-activation, D's shape
  int64_t auxLd = 0;          ///< its leading dimension (elements)
  int32_t biasType = -1;      ///< cudaDataType_t of the bias; -1: D's
  int32_t auxType = -1;       ///< cudaDataType_t of the aux; -1: D's
};
struct EmuLtLayout {
  cudaDataType type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct EmuLtPref {
  uint64_t workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};
};

const char* cublasLtGetStatusString(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = new EmuLtHandle();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                        cudaDataType_t) {
  *d = new EmuLtDesc();
  (*d)->compute = compute;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  if (attr == CUBLASLT_MATMUL_DESC_BIAS_POINTER) {
    if (bytes != sizeof(const void*)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&d->bias, buf, sizeof d->bias);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER) {
    if (bytes != sizeof(void*)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&d->aux, buf, sizeof d->aux);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD) {
    if (bytes != sizeof(int64_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&d->auxLd, buf, sizeof d->auxLd);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (bytes != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  int32_t v;
  std::memcpy(&v, buf, sizeof v);
  if (attr == CUBLASLT_MATMUL_DESC_TRANSA) d->transa = v;
  else if (attr == CUBLASLT_MATMUL_DESC_TRANSB) d->transb = v;
  else if (attr == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE) d->biasType = v;
  else if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE) d->auxType = v;
  else if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE) {
    if (v != CUBLASLT_EPILOGUE_DEFAULT && v != CUBLASLT_EPILOGUE_BIAS &&
        v != CUBLASLT_EPILOGUE_GELU_AUX_BIAS && v != CUBLASLT_EPILOGUE_DGELU &&
        v != CUBLASLT_EPILOGUE_DGELU_BGRAD && v != CUBLASLT_EPILOGUE_BGRADA)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    d->epilogue = v;
  } else return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (type != CUDA_R_32F && type != CUDA_R_16F && type != CUDA_R_16BF)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  *l = new EmuLtLayout();
  (*l)->type = type;
  (*l)->rows = rows;
  (*l)->cols = cols;
  (*l)->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes) {
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && bytes == sizeof(int32_t))
    std::memcpy(&l->batch, buf, bytes);
  else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && bytes == sizeof(int64_t))
    std::memcpy(&l->stride, buf, bytes);
  else return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = new EmuLtPref();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t bytes) {
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && bytes == sizeof(uint64_t)) {
    std::memcpy(&p->workspace, buf, bytes);
  } else if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
             attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES && bytes == sizeof(uint32_t)) {
    std::memcpy(&p->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes);
  } else {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

namespace {
/// m x k of op(X) from a layout and its transpose flag.
void opShape(const EmuLtLayout* l, int32_t trans, uint64_t& r, uint64_t& c) {
  r = trans ? l->cols : l->rows;
  c = trans ? l->rows : l->cols;
}
bool layoutOk(const EmuLtLayout* l) { return l->ld >= (int64_t)std::max<uint64_t>(1, l->rows); }
/// Element i of a matrix or vector of cudaDataType `type`, widened to float (exact).
float loadAs(int32_t type, const void* p, int64_t i) {
  if (type == CUDA_R_16BF) return tgrt_bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  if (type == CUDA_R_16F) return tgrt_f16_to_float(static_cast<const uint16_t*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
/// Stores x rounded (RNE) to `type`.
void storeAs(int32_t type, void* p, int64_t i, float x) {
  if (type == CUDA_R_16BF) static_cast<uint16_t*>(p)[i] = tgrt_bf16_from_float(x);
  else if (type == CUDA_R_16F) static_cast<uint16_t*>(p)[i] = tgrt_f16_from_float(x);
  else static_cast<float*>(p)[i] = x;
}
} // namespace

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  if (requested <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t am, ak, bk, bn;
  opShape(a, desc->transa, am, ak);
  opShape(b, desc->transb, bk, bn);
  if (ak != bk || c->rows != am || c->cols != bn || d->rows != am || d->cols != bn ||
      !layoutOk(a) || !layoutOk(b) || !layoutOk(c) || !layoutOk(d) || a->batch != c->batch ||
      b->batch != c->batch || d->batch != c->batch || a->type != b->type ||
      c->type != d->type || (desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32 &&
                             a->type != CUDA_R_32F)) {
    *returned = 0;
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // Two "algorithms" (data[4] = 0, 1; the same triple loop), so that GEMM tuning and its
  // cache run here too; data[0..3] hold the alignments they were chosen for.
  const int count = requested < 2 ? requested : 2;
  for (int r = 0; r < count; ++r) {
    std::memset(&results[r], 0, sizeof(results[r]));
    for (int i = 0; i < 4; ++i) results[r].algo.data[i] = pref->align[i];
    results[r].algo.data[4] = (uint64_t)r;
    results[r].state = CUBLAS_STATUS_SUCCESS;
  }
  *returned = count;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {
/// The emulator's algorithm configuration fields (CudaEmu.h): which data word and bit range.
bool configField(cublasLtMatmulAlgoConfigAttributes_t attr, int& word, int& shift, int& bits) {
  switch (attr) {
  case CUBLASLT_ALGO_CONFIG_ID: word = 4, shift = 32, bits = 16; return true;
  case CUBLASLT_ALGO_CONFIG_TILE_ID: word = 5, shift = 0, bits = 32; return true;
  case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID: word = 6, shift = 0, bits = 16; return true;
  case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: word = 6, shift = 16, bits = 16; return true;
  case CUBLASLT_ALGO_CONFIG_SPLITK_NUM: word = 7, shift = 0, bits = 16; return true;
  case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: word = 7, shift = 16, bits = 16; return true;
  case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING: word = 7, shift = 32, bits = 16; return true;
  }
  return false;
}
} // namespace

cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    const void* buf, size_t bytes) {
  int word, shift, bits;
  if (!algo || !buf || !configField(attr, word, shift, bits)) return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t v = 0;
  if (bytes == 2) v = *static_cast<const uint16_t*>(buf);
  else if (bytes == 4) v = *static_cast<const uint32_t*>(buf);
  else return CUBLAS_STATUS_INVALID_VALUE;
  const uint64_t mask = ((1ull << bits) - 1) << shift;
  algo->data[word] = (algo->data[word] & ~mask) | ((v << shift) & mask);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void* buf, size_t bytes, size_t* written) {
  int word, shift, bits;
  if (!algo || !buf || !configField(attr, word, shift, bits)) return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t v = (algo->data[word] >> shift) & ((1ull << bits) - 1);
  if (attr == CUBLASLT_ALGO_CONFIG_ID) v = 66; // one algorithm id
  if (bytes == 2) *static_cast<uint16_t*>(buf) = (uint16_t)v;
  else if (bytes == 4) *static_cast<uint32_t*>(buf) = (uint32_t)v;
  else return CUBLAS_STATUS_INVALID_VALUE;
  if (written) *written = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                 cublasLtMatmulAlgoCapAttributes_t attr,
                                                 void* buf, size_t bytes, size_t* written) {
  if (!algo) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_ALGO_CAP_TILE_IDS) {
    const uint32_t tiles[2] = {20, 151}; // 128x128, 96x192
    if (written) *written = sizeof tiles;
    if (!buf || bytes == 0) return CUBLAS_STATUS_SUCCESS; // the size query
    if (bytes < sizeof tiles) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, tiles, sizeof tiles);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || bytes != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  int32_t v;
  switch (attr) {
  case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX: v = 1; break;
  case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES: v = 4; break;
  default: return CUBLAS_STATUS_INVALID_VALUE;
  }
  *static_cast<int32_t*>(buf) = v;
  if (written) *written = sizeof v;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                                       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t* algo,
                                       cublasLtMatmulHeuristicResult_t* result) {
  if (!desc || !algo || !result) return CUBLAS_STATUS_INVALID_VALUE;
  if ((algo->data[6] & 0xffff) == CUBLASLT_CLUSTER_SHAPE_2x1x1) return CUBLAS_STATUS_NOT_SUPPORTED;
  std::memset(result, 0, sizeof *result);
  result->algo = *algo;
  result->state = CUBLAS_STATUS_SUCCESS;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alphaP,
                              const void* A, cublasLtMatrixLayout_t ad, const void* B,
                              cublasLtMatrixLayout_t bd, const void* betaP, const void* C,
                              cublasLtMatrixLayout_t cd, void* D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t* algo, void* ws, size_t wsBytes,
                              cudaStream_t stream) {
  if (!algo) return CUBLAS_STATUS_INVALID_VALUE;
  if (emu::g_capture) {
    // As a GPU's capture: alpha, beta, the descriptors' attributes (bias and aux pointers)
    // and the algorithm as they are now; operands read at each graph launch.
    struct Snap {
      EmuLtDesc desc;
      EmuLtLayout a, b, c, d;
      float alpha, beta;
      cublasLtMatmulAlgo_t algo;
    };
    auto s = std::make_shared<Snap>(Snap{*desc, *ad, *bd, *cd, *dd,
                                         *static_cast<const float*>(alphaP),
                                         *static_cast<const float*>(betaP), *algo});
    emu::recording([=] {
      if (cublasLtMatmul(h, &s->desc, &s->alpha, A, &s->a, B, &s->b, &s->beta, C, &s->c, D,
                         &s->d, &s->algo, ws, wsBytes, stream) != CUBLAS_STATUS_SUCCESS)
        emu::g_lastError = cudaErrorInvalidValue; // a failed kernel of the graph
    });
    return CUBLAS_STATUS_SUCCESS;
  }
  // The algorithm was chosen for the alignments in the preference: like a real kernel, it
  // may not run on pointers aligned less than that.
  const void* ptrs[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i)
    if ((uintptr_t)ptrs[i] % algo->data[i] != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  uint64_t m, k, k2, n;
  opShape(ad, desc->transa, m, k);
  opShape(bd, desc->transb, k2, n);
  if (k != k2) return CUBLAS_STATUS_INVALID_VALUE;
  const float alpha = *static_cast<const float*>(alphaP);
  const float beta = *static_cast<const float*>(betaP);
  const int32_t ta = ad->type, tb = bd->type, tc = cd->type, td = dd->type;
  const int32_t biasType = desc->biasType >= 0 ? desc->biasType : td;
  const int32_t auxType = desc->auxType >= 0 ? desc->auxType : td;
  const bool bgradOut = desc->epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  const bool dgelu = bgradOut || desc->epilogue == CUBLASLT_EPILOGUE_DGELU;
  if (dgelu && (!desc->aux || (bgradOut && !desc->bias) || desc->auxLd < (int64_t)m ||
                cd->batch != 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  std::vector<double> bgrad(bgradOut ? m : 0, 0.0);
  if (desc->epilogue == CUBLASLT_EPILOGUE_BGRADA) { // bias[i] = sum_p op(A)(i, p), unscaled
    if (!desc->bias || cd->batch != 1) return CUBLAS_STATUS_INVALID_VALUE;
    for (uint64_t i = 0; i < m; ++i) {
      double s = 0.0;
      for (uint64_t p = 0; p < k; ++p)
        s += desc->transa ? loadAs(ta, A, (int64_t)(p + i * ad->ld))
                          : loadAs(ta, A, (int64_t)(i + p * ad->ld));
      storeAs(biasType, const_cast<void*>(desc->bias), (int64_t)i, (float)s);
    }
  }
  for (int32_t bi = 0; bi < cd->batch; ++bi) {
    const int64_t ao = bi * ad->stride, bo = bi * bd->stride, co = bi * cd->stride,
                  dof = bi * dd->stride;
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        double s = 0.0;
        for (uint64_t p = 0; p < k; ++p) {
          const float av = desc->transa ? loadAs(ta, A, ao + (int64_t)(p + i * ad->ld))
                                        : loadAs(ta, A, ao + (int64_t)(i + p * ad->ld));
          const float bv = desc->transb ? loadAs(tb, B, bo + (int64_t)(j + p * bd->ld))
                                        : loadAs(tb, B, bo + (int64_t)(p + j * bd->ld));
          s += (double)av * bv;
        }
        double r = alpha * s;
        if (beta != 0.0f) r += (double)beta * loadAs(tc, C, co + (int64_t)(i + j * cd->ld));
        if (desc->epilogue == CUBLASLT_EPILOGUE_BIAS ||
            desc->epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
          if (!desc->bias) return CUBLAS_STATUS_INVALID_VALUE;
          r += loadAs(biasType, desc->bias, (int64_t)i); // broadcast along the columns of D
        }
        if (desc->epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
          if (!desc->aux || desc->auxLd < (int64_t)m || cd->batch != 1)
            return CUBLAS_STATUS_INVALID_VALUE;
          const float x = (float)r;
          storeAs(auxType, desc->aux, (int64_t)(i + j * desc->auxLd), x);
          const double xd = x; // tanh GELU (Hendrycks & Gimpel 2016) of the unrounded sum
          r = 0.5 * xd * (1.0 + std::tanh(0.7978845608028654 * (xd + 0.044715 * xd * xd * xd)));
        }
        if (dgelu) { // tanh GELU's derivative at the aux input
          const double x = loadAs(auxType, desc->aux, (int64_t)(i + j * desc->auxLd));
          const double th = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
          r *= 0.5 * (1.0 + th) +
               0.5 * x * (1.0 - th * th) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
          if (bgradOut) bgrad[i] += (float)r;
        }
        storeAs(td, D, dof + (int64_t)(i + j * dd->ld), (float)r);
      }
  }
  for (uint64_t i = 0; i < bgrad.size(); ++i)
    storeAs(biasType, const_cast<void*>(desc->bias), (int64_t)i, (float)bgrad[i]);
  return CUBLAS_STATUS_SUCCESS;
}
