// RuntimeCpuTest.cpp — unit tests of the CPU reference backend (runtime/cpu) against the
// semantics written in runtime/tgrt.h.
//
// Forward kernels are compared with naive references written here (double precision, plain
// index loops). Backward kernels are checked by central finite differences of those double
// references (h = 1e-5, so the FD gradient is accurate to ~1e-9 and any tolerance failure is
// the kernel's), plus a few fp32 FD checks through the kernels themselves.
//
// bf16 / f16 (tests CpuLow/*, parameterised by dtype): every low-precision kernel must equal,
// bit for bit, the f32 kernel run on the widened inputs and rounded once (RNE) to the output
// dtype; plus tgrt_cast (overflow, NaN, f16 subnormals, ties to even), loss scaling
// (tgrt_fill_loss_scaled, tgrt_clip_scale's unscaling, the skipped step on an overflowed
// gradient) and unknown dtypes.
#include "runtime/tgrt.h"
#include "test/unit/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace rtest;

/// A small model plan for context tests (no parameters).
tgrt_model makeModel(int64_t persistent, int64_t arena, int64_t workspace) {
  tgrt_model m;
  std::memset(&m, 0, sizeof(m));
  m.name = "test";
  m.spec_json = "{}";
  m.persistent_bytes = persistent;
  m.arena_bytes = arena;
  m.workspace_bytes = workspace;
  m.lr = 1e-3f;
  m.beta1 = 0.9f;
  m.beta2 = 0.999f;
  m.eps = 1e-8f;
  return m;
}

/// Fixture holding a live context (most kernels ignore it; dropout, AdamW, clip and loss
/// reporting read or write it).
class Cpu : public ::testing::Test {
protected:
  void SetUp() override {
    model_ = makeModel(1024, 256, 64);
    ctx_ = tgrt_ctx_create(&model_);
    ASSERT_NE(ctx_, nullptr);
  }
  void TearDown() override { tgrt_ctx_destroy(ctx_); }
  tgrt_model model_;
  tgrt_ctx* ctx_ = nullptr;
};

// ------------------------------------------------------------------ context --

TEST_F(Cpu, BackendNameIsCpu) { EXPECT_STREQ(tgrt_backend_name(), "cpu"); }

TEST_F(Cpu, PowerSampleHasNoReadingAndWritesNothing) {
  double j = -1, mhz = -2, maxMhz = -3, watts = -4, limit = -5;
  EXPECT_EQ(tgrt_power_sample(ctx_, &j, &mhz, &maxMhz, &watts, &limit), 0);
  EXPECT_EQ(j, -1);
  EXPECT_EQ(mhz, -2);
  EXPECT_EQ(maxMhz, -3);
  EXPECT_EQ(watts, -4);
  EXPECT_EQ(limit, -5);
  EXPECT_EQ(tgrt_power_sample(ctx_, nullptr, nullptr, nullptr, nullptr, nullptr), 0);
}

TEST_F(Cpu, RegionsAreAlignedZeroedAndDistinct) {
  const int64_t sizes[3] = {1024, 256, 64};
  for (int r = 0; r < 3; ++r) {
    char* base = tgrt_region(ctx_, r);
    ASSERT_NE(base, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 64, 0u) << "region " << r;
    for (int64_t i = 0; i < sizes[r]; ++i) ASSERT_EQ(base[i], 0) << "region " << r << " @" << i;
  }
  EXPECT_NE(tgrt_region(ctx_, TGRT_PERSISTENT), tgrt_region(ctx_, TGRT_ARENA));
  EXPECT_NE(tgrt_region(ctx_, TGRT_ARENA), tgrt_region(ctx_, TGRT_WORKSPACE));
}

TEST_F(Cpu, UploadDownloadRoundTrip) {
  const VecF src = randVec(16, 1);
  tgrt_upload(ctx_, TGRT_PERSISTENT, 128, src.data(), 64);
  VecF back(16, 0.0f);
  tgrt_download(ctx_, TGRT_PERSISTENT, 128, back.data(), 64);
  EXPECT_EQ(src, back);
  // The bytes land at base + offset.
  const float* direct = reinterpret_cast<const float*>(tgrt_region(ctx_, TGRT_PERSISTENT) + 128);
  EXPECT_EQ(direct[5], src[5]);
  // The edge of the region is reachable; a byte past it is an error.
  tgrt_upload(ctx_, TGRT_ARENA, 192, src.data(), 64);
  tgrt_synchronize(ctx_);
  EXPECT_EXIT(tgrt_upload(ctx_, TGRT_ARENA, 193, src.data(), 64),
              ::testing::ExitedWithCode(1), "tgrt: upload: range \\[193, 257\\) outside the arena");
  // TGRT_HOST exists (0 bytes without offload); index 4 does not.
  EXPECT_EXIT(tgrt_download(ctx_, TGRT_HOST, 0, back.data(), 4), ::testing::ExitedWithCode(1),
              "tgrt: download: range \\[0, 4\\) outside the host region of 0 bytes");
  EXPECT_EXIT(tgrt_download(ctx_, 4, 0, back.data(), 4), ::testing::ExitedWithCode(1),
              "invalid region index 4");
}

TEST(CpuContext, CreateFailsCleanly) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(tgrt_ctx_create(nullptr), nullptr);
  const tgrt_model huge = makeModel(int64_t(1) << 62, 16, 16);
  EXPECT_EQ(tgrt_ctx_create(&huge), nullptr);
  const tgrt_model negative = makeModel(16, -1, 16);
  EXPECT_EQ(tgrt_ctx_create(&negative), nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("NULL model"), std::string::npos) << err;
  EXPECT_NE(err.find("cannot allocate the persistent region"), std::string::npos) << err;
  EXPECT_NE(err.find("negative arena size"), std::string::npos) << err;
  tgrt_ctx_destroy(nullptr); // no-op
}

TEST(CpuContext, ZeroSizedRegionsStillUsable) {
  const tgrt_model m = makeModel(0, 0, 0);
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  ASSERT_NE(ctx, nullptr);
  EXPECT_NE(tgrt_region(ctx, TGRT_WORKSPACE), nullptr);
  tgrt_upload(ctx, TGRT_PERSISTENT, 0, nullptr, 0);
  tgrt_ctx_destroy(ctx);
}

TEST_F(Cpu, TakeLossSumsAndResets) {
  int64_t count = -1;
  EXPECT_EQ(tgrt_take_loss(ctx_, &count), 0.0);
  EXPECT_EQ(count, 0);
  const float a = 2.5f, b = 1.25f;
  tgrt_report_loss(ctx_, "loss", &a);
  tgrt_report_loss(ctx_, "loss", &b);
  EXPECT_DOUBLE_EQ(tgrt_take_loss(ctx_, &count), 3.75);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(tgrt_take_loss(ctx_, &count), 0.0);
  EXPECT_EQ(count, 0);
  tgrt_report_loss(ctx_, "loss", &a);
  EXPECT_DOUBLE_EQ(tgrt_take_loss(ctx_, nullptr), 2.5); // count may be NULL
}

// The CPU has no graphs: tgrt_run_graph runs the step itself, every call, and says so (0).
int g_runGraphCalls = 0;
void countingStep(tgrt_ctx* ctx) {
  ++g_runGraphCalls;
  const float loss = 1.5f;
  tgrt_report_loss(ctx, "loss", &loss);
}

TEST_F(Cpu, RunGraphRunsTheStepEveryCall) {
  g_runGraphCalls = 0;
  EXPECT_EQ(tgrt_run_graph(ctx_, 0, countingStep), 0);
  EXPECT_EQ(tgrt_run_graph(ctx_, 0, countingStep), 0);
  EXPECT_EQ(tgrt_run_graph(ctx_, 3, countingStep), 0);
  EXPECT_EQ(g_runGraphCalls, 3);
  int64_t count = 0;
  EXPECT_DOUBLE_EQ(tgrt_take_loss(ctx_, &count), 4.5);
  EXPECT_EQ(count, 3);
  EXPECT_EXIT(tgrt_run_graph(ctx_, 4, countingStep), ::testing::ExitedWithCode(1),
              "run_graph: slot 4 outside \\[0, 4\\)");
  EXPECT_EXIT(tgrt_run_graph(ctx_, 0, nullptr), ::testing::ExitedWithCode(1),
              "run_graph: NULL function");
}

// ---------------------------------------------------------------- embedding --

TEST_F(Cpu, EmbeddingForwardBackward) {
  const int64_t vocab = 7, d = 5, n = 9;
  const VecF table = randVec(vocab * d, 2);
  const std::vector<int32_t> ids = {3, 0, 6, 3, 3, 1, 6, 2, 0};
  VecF out(n * d, kInf);
  tgrt_embedding_fwd(ctx_, "wte", TGRT_F32, table.data(), ids.data(), out.data(), n, d, vocab);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) ASSERT_EQ(out[i * d + c], table[ids[i] * d + c]);

  const VecF dout = randVec(n * d, 3);
  VecF dtable(vocab * d, 123.0f); // must be overwritten, not accumulated
  tgrt_embedding_bwd(ctx_, "wte", TGRT_F32, ids.data(), dout.data(), dtable.data(), n, d, vocab);
  VecD want(vocab * d, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) want[ids[i] * d + c] += dout[i * d + c];
  expectClose(dtable, want, 1e-6, 1e-6, "dtable");
  for (int64_t c = 0; c < d; ++c) EXPECT_EQ(dtable[4 * d + c], 0.0f); // id 4 never used

  // tgrt_embedding_bwd_acc adds the same sums into a table: bit-equal to the backward into a
  // scratch table followed by tgrt_accumulate, untouched rows (id 4, 5) left as they were.
  VecF start = randVec(vocab * d, 4), sum = start, scratch(vocab * d);
  tgrt_embedding_bwd(ctx_, "wte", TGRT_F32, ids.data(), dout.data(), scratch.data(), n, d, vocab);
  tgrt_accumulate(ctx_, "wte", TGRT_F32, sum.data(), scratch.data(), vocab * d);
  VecF acc = start;
  for (int64_t c = 0; c < d; ++c) acc[4 * d + c] = -0.0f; // + 0.0 would make it +0
  tgrt_embedding_bwd_acc(ctx_, "wte", TGRT_F32, ids.data(), dout.data(), acc.data(), n, d,
                         vocab);
  for (int64_t i = 0; i < vocab * d; ++i) {
    if (i / d == 4) EXPECT_TRUE(std::signbit(acc[i]) && acc[i] == 0.0f) << "untouched " << i;
    else EXPECT_EQ(std::memcmp(&acc[i], &sum[i], 4), 0) << "element " << i;
  }
  const std::vector<int32_t> bad = {2, 9};
  EXPECT_EXIT(tgrt_embedding_bwd_acc(ctx_, "wte", TGRT_F32, bad.data(), dout.data(), acc.data(),
                                     2, d, vocab),
              ::testing::ExitedWithCode(1), "tgrt: wte: embedding id 9 at position 1");
}

// ------------------------------------------------------- data parallel (comm) --

/// Runs fn(rank, ctx) on `ranks` threads, each with its own context attached to one
/// in-process communicator.
void onRanks(int32_t ranks, const std::function<void(int32_t, tgrt_ctx*)>& fn) {
  const tgrt_model m = makeModel(64, 64, 64);
  tgrt_comm* comm = tgrt_comm_create_local(ranks);
  ASSERT_NE(comm, nullptr);
  std::vector<tgrt_ctx*> ctxs(ranks);
  for (int32_t r = 0; r < ranks; ++r) {
    ctxs[r] = tgrt_ctx_create(&m);
    tgrt_set_comm(ctxs[r], comm, r, ranks);
  }
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < ranks; ++r) threads.emplace_back([&, r] { fn(r, ctxs[r]); });
  for (auto& t : threads) t.join();
  for (tgrt_ctx* c : ctxs) tgrt_ctx_destroy(c);
  tgrt_comm_destroy(comm);
}

TEST(CpuComm, AllReduceMeanIsTheOrderedFloatMeanOnEveryRank) {
  const int32_t R = 3;
  const int64_t n = 1001; // not a multiple of R: uneven shares
  auto value = [](int32_t r, int64_t i) { return std::sin(0.37f * (float)i + 1.3f * (float)r) * 1e3f; };
  std::vector<VecF> f32(R, VecF(n));
  std::vector<std::vector<uint16_t>> bf(R, std::vector<uint16_t>(n));
  for (int32_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < n; ++i) {
      f32[r][i] = value(r, i);
      bf[r][i] = tgrt_bf16_from_float(value(r, i));
    }
  onRanks(R, [&](int32_t r, tgrt_ctx* ctx) {
    tgrt_all_reduce_mean(ctx, "grads", TGRT_F32, f32[r].data(), n);
    tgrt_all_reduce_mean(ctx, "grads.bf16", TGRT_BF16, bf[r].data(), n);
    double host[2] = {(double)r, 10.0 * r};
    tgrt_all_reduce_mean_host(ctx, "loss", host, 2);
    EXPECT_EQ(host[0], 1.0);
    EXPECT_EQ(host[1], 10.0);
  });
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f, sb = 0.0f;
    for (int32_t r = 0; r < R; ++r) {
      s += value(r, i);
      sb += tgrt_bf16_to_float(tgrt_bf16_from_float(value(r, i)));
    }
    const float want = s / (float)R;
    const uint16_t want_bf = tgrt_bf16_from_float(sb / (float)R);
    for (int32_t r = 0; r < R; ++r) {
      ASSERT_EQ(std::memcmp(&f32[r][i], &want, 4), 0) << "rank " << r << " element " << i;
      ASSERT_EQ(bf[r][i], want_bf) << "rank " << r << " element " << i;
    }
  }
}

// The overlapped bucket all-reduce (tgrt_all_reduce_mean_start) acts on the last micro-batch
// of the step only: before it the slots still accumulate and must stay local.
TEST(CpuComm, AllReduceStartActsOnTheLastMicroBatchOnly) {
  const int32_t R = 2;
  std::vector<VecF> g(R, VecF(5));
  for (int32_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < 5; ++i) g[r][i] = (float)(10 * r + i);
  onRanks(R, [&](int32_t r, tgrt_ctx* ctx) {
    tgrt_set_micro_batch(ctx, 0);
    tgrt_all_reduce_mean_start(ctx, "bucket", TGRT_F32, g[r].data(), 5, 2);
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(g[r][i], (float)(10 * r + i)) << "micro-batch 0";
    tgrt_set_micro_batch(ctx, 1);
    tgrt_all_reduce_mean_start(ctx, "bucket", TGRT_F32, g[r].data(), 5, 2);
    tgrt_all_reduce_wait(ctx, "wait");
  });
  for (int32_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(g[r][i], (float)(5 + i)) << "rank " << r;
}

TEST(CpuComm, NoCommunicatorIsANoOp) {
  const tgrt_model m = makeModel(64, 64, 64);
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  VecF g = {1.0f, 2.0f};
  tgrt_all_reduce_mean(ctx, "g", TGRT_F32, g.data(), 2);
  EXPECT_EQ(g, (VecF{1.0f, 2.0f}));
  tgrt_ctx_destroy(ctx);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(tgrt_comm_create_local(0), nullptr);
  EXPECT_EQ(tgrt_comm_create_local(65), nullptr);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("ranks 0 outside [1, 64]"),
            std::string::npos);
}

/// Rank 0 of a 2-rank communicator whose rank 1 never calls, with a 0.2 s timeout (for the
/// death tests: the context and communicator live until the process exits).
tgrt_ctx* loneRank0() {
  setenv("TGRT_COMM_TIMEOUT_S", "0.2", 1);
  static const tgrt_model m = makeModel(64, 64, 64);
  tgrt_comm* comm = tgrt_comm_create_local(2);
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  tgrt_set_comm(ctx, comm, 0, 2);
  return ctx;
}

TEST(CpuCommDeathTest, MissingRankTimesOutNamingTheCollective) {
  // Rank 1 never arrives: rank 0 fails after the timeout instead of hanging.
  EXPECT_EXIT(
      {
        VecF g(4, 1.0f);
        tgrt_all_reduce_mean(loneRank0(), "optimizer.all_reduce.wte", TGRT_F32, g.data(), 4);
      },
      ::testing::ExitedWithCode(1),
      "tgrt: optimizer.all_reduce.wte: all_reduce_mean: rank 0 of 2 waited 0.2 s for the other "
      "ranks \\(1 of 2 arrived\\)");
}

TEST(CpuCommDeathTest, RanksCallingDifferentCollectivesFail) {
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF g(8, 1.0f);
                        tgrt_all_reduce_mean(ctx, r == 0 ? "a" : "b", TGRT_F32, g.data(),
                                             r == 0 ? 8 : 4);
                      }),
              ::testing::ExitedWithCode(1), "the ranks run different steps");
}

// ------------------------------------------------ ZeRO-1 (broadcast, owned AdamW) --

/// Raw bytes of rank r's buffer for the broadcast tests: distinct per rank (and per seed), so a
/// rank that kept its own bytes differs from root's.
std::vector<unsigned char> rankBytes(int32_t r, int32_t seed, size_t bytes) {
  std::mt19937 gen(1000u * (uint32_t)seed + (uint32_t)r);
  std::vector<unsigned char> b(bytes);
  for (unsigned char& c : b) c = (unsigned char)(gen() & 0xff);
  return b;
}

TEST(CpuComm, BroadcastGivesEveryRankRootsExactBytes) {
  const int64_t n = 1001;
  for (int32_t R : {3, 4})
    for (int32_t root : {0, 2})
      for (int32_t dt : {TGRT_F32, TGRT_BF16}) {
        const size_t bytes = (size_t)(n * tgrt_dtype_size(dt));
        const int32_t seed = 10 * R + root + 100 * dt;
        std::vector<std::vector<unsigned char>> bufs(R);
        for (int32_t r = 0; r < R; ++r) bufs[r] = rankBytes(r, seed, bytes);
        const std::vector<unsigned char> want = bufs[root];
        std::vector<std::vector<unsigned char>> after(R);
        onRanks(R, [&](int32_t r, tgrt_ctx* ctx) {
          tgrt_broadcast(ctx, "zero1.broadcast.wte", dt, bufs[r].data(), n, root);
          after[r] = bufs[r];
          // Root may reuse its buffer as soon as the call returns: every copy is done.
          if (r == root) std::fill(bufs[r].begin(), bufs[r].end(), (unsigned char)0xa5);
        });
        for (int32_t r = 0; r < R; ++r)
          ASSERT_TRUE(after[r] == want) << R << " ranks, root " << root << ", dtype " << dt
                                        << ": rank " << r << " differs from root's bytes";
        for (int32_t r = 0; r < R; ++r) {
          if (r != root) {
            ASSERT_TRUE(bufs[r] == want) << "rank " << r << " saw root's buffer reused";
          }
        }
      }
}

TEST(CpuComm, BroadcastsInARowAndOfNothing) {
  // n = 0 (NULL buffers) is still a collective every rank passes through; back-to-back
  // broadcasts from different roots reuse the rendezvous.
  const int32_t R = 3;
  std::vector<VecF> a(R), b(R);
  for (int32_t r = 0; r < R; ++r) {
    a[r] = randVec(17, 300 + r);
    b[r] = randVec(5, 400 + r);
  }
  const VecF wantA = a[1], wantB = b[2];
  onRanks(R, [&](int32_t r, tgrt_ctx* ctx) {
    tgrt_broadcast(ctx, "empty", TGRT_F32, nullptr, 0, 0);
    tgrt_broadcast(ctx, "a", TGRT_F32, a[r].data(), 17, 1);
    tgrt_broadcast(ctx, "empty", TGRT_BF16, nullptr, 0, 2);
    tgrt_broadcast(ctx, "b", TGRT_F32, b[r].data(), 5, 2);
  });
  for (int32_t r = 0; r < R; ++r) {
    EXPECT_EQ(std::memcmp(a[r].data(), wantA.data(), 17 * 4), 0) << "rank " << r;
    EXPECT_EQ(std::memcmp(b[r].data(), wantB.data(), 5 * 4), 0) << "rank " << r;
  }
}

TEST(CpuComm, BroadcastWithoutCommunicatorIsANoOpAndCommRankIsTheRank) {
  const tgrt_model m = makeModel(64, 64, 64);
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  VecF p = {1.0f, -2.0f, 3.5f};
  tgrt_broadcast(ctx, "p", TGRT_F32, p.data(), 3, 3); // no communicator: root not checked
  EXPECT_EQ(p, (VecF{1.0f, -2.0f, 3.5f}));
  EXPECT_EQ(tgrt_comm_rank(ctx), 0);
  tgrt_comm* comm = tgrt_comm_create_local(4);
  tgrt_set_comm(ctx, comm, 3, 4);
  EXPECT_EQ(tgrt_comm_rank(ctx), 3);
  tgrt_set_comm(ctx, nullptr, 0, 1);
  EXPECT_EQ(tgrt_comm_rank(ctx), 0);
  tgrt_ctx_destroy(ctx);
  tgrt_comm_destroy(comm);
  std::vector<int32_t> seen(4, -1);
  onRanks(4, [&](int32_t r, tgrt_ctx* c) { seen[r] = tgrt_comm_rank(c); });
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(CpuCommDeathTest, BroadcastMismatchesFailNamingBothRanks) {
  // Rank 2 passes 4 elements at "b" where the others pass 8 at "a": whichever rank notices
  // names its own and the other's arguments and locations.
  EXPECT_EXIT(onRanks(3,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF g(8, 1.0f);
                        tgrt_broadcast(ctx, r == 2 ? "b" : "a", TGRT_F32, g.data(),
                                       r == 2 ? 4 : 8, 0);
                      }),
              ::testing::ExitedWithCode(1),
              "broadcast: rank [0-2] passes [48] elements of dtype 0 from root 0 at [ab], "
              "rank [0-2] passes [48] elements of dtype 0 from root 0 at [ab] \\(the ranks run "
              "different steps\\)");
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF g(8, 1.0f);
                        tgrt_broadcast(ctx, r == 0 ? "p0" : "p1", TGRT_F32, g.data(), 8, r);
                      }),
              ::testing::ExitedWithCode(1),
              "broadcast: rank [01] passes 8 elements of dtype 0 from root [01] at p[01], "
              "rank [01] passes 8 elements of dtype 0 from root [01] at p[01]");
  // One rank broadcasts while the other all-reduces.
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF g(8, 1.0f);
                        if (r == 0)
                          tgrt_broadcast(ctx, "bc", TGRT_F32, g.data(), 8, 0);
                        else
                          tgrt_all_reduce_mean(ctx, "ar", TGRT_F32, g.data(), 8);
                      }),
              ::testing::ExitedWithCode(1),
              "rank [01] calls (broadcast|all_reduce_mean) at (bc|ar), rank [01] calls "
              "(broadcast|all_reduce_mean) at (bc|ar) \\(the ranks run different steps\\)");
}

TEST(CpuCommDeathTest, BroadcastRootOutOfRangeFails) {
  const tgrt_model m = makeModel(64, 64, 64);
  for (int32_t root : {2, -1}) {
    EXPECT_EXIT(
        {
          tgrt_comm* comm = tgrt_comm_create_local(2);
          tgrt_ctx* ctx = tgrt_ctx_create(&m);
          tgrt_set_comm(ctx, comm, 0, 2);
          VecF g(4, 1.0f);
          tgrt_broadcast(ctx, "zero1.broadcast.h.0", TGRT_F32, g.data(), 4, root);
        },
        ::testing::ExitedWithCode(1),
        "tgrt: zero1.broadcast.h.0: broadcast: root " + std::to_string(root) +
            " outside \\[0, 2\\)");
  }
}

TEST(CpuCommDeathTest, BroadcastMissingRankTimesOut) {
  // Rank 1 never arrives: rank 0 fails after the 0.2 s timeout instead of hanging (the
  // default timeout is 120 s: the bound on the wall time shows the setting is used).
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(
      {
        VecF g(4, 1.0f);
        tgrt_broadcast(loneRank0(), "zero1.broadcast.wte", TGRT_F32, g.data(), 4, 0);
      },
      ::testing::ExitedWithCode(1),
      "tgrt: zero1.broadcast.wte: broadcast: rank 0 of 2 waited 0.2 s for the other ranks "
      "\\(1 of 2 arrived\\)");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            30.0);
}

/// The inputs of the owned-AdamW tests: p, g f32; m, v f32 or bf16 (state_dt).
struct AdamInputs {
  VecF p, g;
  std::vector<unsigned char> m, v;
  std::vector<uint16_t> w;
};

AdamInputs adamInputs(int64_t n, int32_t state_dt) {
  AdamInputs a;
  a.p = randVec(n, 500);
  a.g = randVec(n, 501);
  const VecF m = randVec(n, 502, -0.1f, 0.1f), v = randVec(n, 503, 0.0f, 0.1f);
  const size_t sz = (size_t)tgrt_dtype_size(state_dt);
  a.m.resize(n * sz);
  a.v.resize(n * sz);
  for (int64_t i = 0; i < n; ++i) {
    if (state_dt == TGRT_F32) {
      std::memcpy(&a.m[i * 4], &m[i], 4);
      std::memcpy(&a.v[i * 4], &v[i], 4);
    } else {
      const uint16_t hm = tgrt_bf16_from_float(m[i]), hv = tgrt_bf16_from_float(v[i]);
      std::memcpy(&a.m[i * 2], &hm, 2);
      std::memcpy(&a.v[i * 2], &hv, 2);
    }
  }
  a.w.assign(n, 0x7e57);
  return a;
}

bool sameBits(const AdamInputs& a, const AdamInputs& b) {
  return std::memcmp(a.p.data(), b.p.data(), a.p.size() * 4) == 0 && a.m == b.m && a.v == b.v &&
         a.w == b.w && std::memcmp(a.g.data(), b.g.data(), a.g.size() * 4) == 0;
}

/// Runs tgrt_adamw (wc: tgrt_adamw_wc with a bf16 working copy) or the owned variant with
/// `owner` on ctx (step 3, lr 2e-3, clip factor 0.5).
void runAdam(tgrt_ctx* ctx, AdamInputs& a, int32_t state_dt, bool wc, int32_t owner,
             bool owned) {
  tgrt_set_lr(ctx, 2e-3f);
  tgrt_set_step(ctx, 3);
  const float clip[2] = {0.0f, 0.5f};
  const int64_t n = (int64_t)a.p.size();
  if (wc && owned)
    tgrt_adamw_wc_owned(ctx, "opt.h.0", TGRT_F32, a.p.data(), a.g.data(), state_dt, a.m.data(),
                        a.v.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip, TGRT_BF16, a.w.data(),
                        owner);
  else if (wc)
    tgrt_adamw_wc(ctx, "opt.h.0", TGRT_F32, a.p.data(), a.g.data(), state_dt, a.m.data(),
                  a.v.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip, TGRT_BF16, a.w.data());
  else if (owned)
    tgrt_adamw_owned(ctx, "opt.h.0", TGRT_F32, a.p.data(), a.g.data(), state_dt, a.m.data(),
                     a.v.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip, owner);
  else
    tgrt_adamw(ctx, "opt.h.0", TGRT_F32, a.p.data(), a.g.data(), state_dt, a.m.data(),
               a.v.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip);
}

TEST(CpuZero1, AdamWOwnedUpdatesOnlyOnTheOwner) {
  const int64_t n = 53;
  const tgrt_model model = makeModel(64, 64, 64);
  tgrt_ctx* plain = tgrt_ctx_create(&model);
  for (int32_t state_dt : {TGRT_F32, TGRT_BF16})
    for (bool wc : {false, true}) {
      const AdamInputs before = adamInputs(n, state_dt);
      AdamInputs want = before;
      runAdam(plain, want, state_dt, wc, 0, false);
      ASSERT_FALSE(sameBits(want, before)); // the step changes p, m and v
      std::vector<AdamInputs> owner1(2, before), owner0(2, before);
      onRanks(2, [&](int32_t r, tgrt_ctx* ctx) {
        runAdam(ctx, owner1[r], state_dt, wc, 1, true);
        runAdam(ctx, owner0[r], state_dt, wc, 0, true);
      });
      const std::string what = std::string(wc ? "adamw_wc_owned" : "adamw_owned") +
                               " state dtype " + std::to_string(state_dt);
      EXPECT_TRUE(sameBits(owner1[0], before)) << what << ": rank 0 changed owner 1's range";
      EXPECT_TRUE(sameBits(owner1[1], want)) << what << ": rank 1 (owner) != tgrt_adamw";
      EXPECT_TRUE(sameBits(owner0[0], want)) << what << ": rank 0 (owner) != tgrt_adamw";
      EXPECT_TRUE(sameBits(owner0[1], before)) << what << ": rank 1 changed owner 0's range";
      // Without a communicator every range is this rank's: owned == plain for any owner.
      tgrt_ctx* solo = tgrt_ctx_create(&model);
      for (int32_t owner : {0, 1, 7}) {
        AdamInputs got = before;
        runAdam(solo, got, state_dt, wc, owner, true);
        EXPECT_TRUE(sameBits(got, want)) << what << ", no communicator, owner " << owner;
      }
      tgrt_ctx_destroy(solo);
    }
  tgrt_ctx_destroy(plain);
}

/// Rank 0 of 2 calls both owned AdamWs for owner 1 with NULL p, g, m, v and w, then exits 0.
void ownedOffTheOwnerWithNulls() {
  const tgrt_model m = makeModel(64, 64, 64);
  tgrt_comm* comm = tgrt_comm_create_local(2);
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  tgrt_set_comm(ctx, comm, 0, 2);
  tgrt_set_step(ctx, 1);
  const float clip[2] = {0.0f, 0.5f};
  tgrt_adamw_owned(ctx, "opt.h.0", TGRT_F32, nullptr, nullptr, TGRT_F32, nullptr, nullptr, 8,
                   0.9f, 0.95f, 1e-8f, 0.1f, clip, 1);
  tgrt_adamw_wc_owned(ctx, "opt.h.0", TGRT_F32, nullptr, nullptr, TGRT_F32, nullptr, nullptr, 8,
                      0.9f, 0.95f, 1e-8f, 0.1f, clip, TGRT_BF16, nullptr, 1);
  std::fprintf(stderr, "returned\n");
  std::exit(0);
}

TEST(CpuZero1DeathTest, AdamWOwnedOffTheOwnerReadsNothing) {
  // Not the owner: m and v (here even p, g and w) are not this rank's memory; the call
  // returns without reading them (the kernel would fail on the NULL pointers).
  EXPECT_EXIT(ownedOffTheOwnerWithNulls(), ::testing::ExitedWithCode(0), "returned");
}

TEST(CpuZero1DeathTest, AdamWOwnerOutOfRangeFails) {
  const tgrt_model m = makeModel(64, 64, 64);
  EXPECT_EXIT(
      {
        tgrt_comm* comm = tgrt_comm_create_local(2);
        tgrt_ctx* ctx = tgrt_ctx_create(&m);
        tgrt_set_comm(ctx, comm, 0, 2);
        tgrt_set_step(ctx, 1);
        VecF a(4, 0.5f);
        tgrt_adamw_owned(ctx, "opt.wte", TGRT_F32, a.data(), a.data(), TGRT_F32, a.data(),
                         a.data(), 4, 0.9f, 0.95f, 1e-8f, 0.0f, nullptr, 2);
      },
      ::testing::ExitedWithCode(1), "tgrt: opt.wte: adamw_owned: owner 2 outside \\[0, 2\\)");
}

TEST_F(Cpu, EmbeddingIdOutOfRangeFails) {
  const VecF table(4 * 2, 1.0f);
  const std::vector<int32_t> ids = {0, 4};
  VecF out(4 * 2);
  EXPECT_EXIT(tgrt_embedding_fwd(ctx_, "model.wte", TGRT_F32, table.data(), ids.data(), out.data(),
                                 2, 2, 4),
              ::testing::ExitedWithCode(1),
              "tgrt: model.wte: embedding id 4 at position 1 is outside \\[0, 4\\)");
  const std::vector<int32_t> neg = {-1};
  EXPECT_EXIT(tgrt_embedding_bwd(ctx_, "e", TGRT_F32, neg.data(), out.data(), out.data(), 1, 2, 4),
              ::testing::ExitedWithCode(1), "tgrt: e: embedding id -1");
}

TEST_F(Cpu, PositionalForwardBackward) {
  const int64_t batch = 3, t = 4, d = 5, context = 6;
  const VecF x = randVec(batch * t * d, 4), wpe = randVec(context * d, 5);
  VecF out(x.size());
  tgrt_positional_fwd(ctx_, "wpe", TGRT_F32, x.data(), wpe.data(), out.data(), batch, t, d);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < t; ++s)
      for (int64_t c = 0; c < d; ++c)
        ASSERT_EQ(out[(b * t + s) * d + c], x[(b * t + s) * d + c] + wpe[s * d + c]);

  const VecF dout = randVec(batch * t * d, 6);
  VecF dwpe(context * d, 99.0f);
  tgrt_positional_bwd(ctx_, "wpe", TGRT_F32, dout.data(), dwpe.data(), batch, t, d, context);
  VecD want(context * d, 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < t; ++s)
      for (int64_t c = 0; c < d; ++c) want[s * d + c] += dout[(b * t + s) * d + c];
  expectClose(dwpe, want, 1e-6, 1e-6, "dwpe");
  EXPECT_EQ(dwpe[t * d], 0.0f);
  EXPECT_EQ(dwpe[context * d - 1], 0.0f);
}

// -------------------------------------------------------------- elementwise --

TEST_F(Cpu, AddAccumulateFillZero) {
  const int64_t n = 37;
  VecF a = randVec(n, 7), b = randVec(n, 8), out(n);
  tgrt_add(ctx_, "add", TGRT_F32, a.data(), b.data(), out.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]);
  VecF alias = a;
  tgrt_add(ctx_, "add", TGRT_F32, alias.data(), b.data(), alias.data(), n); // out aliases a
  EXPECT_EQ(alias, out);

  VecF dst = a;
  tgrt_accumulate(ctx_, "acc", TGRT_F32, dst.data(), b.data(), n);
  tgrt_accumulate(ctx_, "acc", TGRT_F32, dst.data(), b.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(dst[i], a[i] + b[i] + b[i]);

  tgrt_fill(ctx_, "fill", TGRT_F32, dst.data(), n - 1, -2.5f);
  for (int64_t i = 0; i < n - 1; ++i) ASSERT_EQ(dst[i], -2.5f);
  EXPECT_NE(dst[n - 1], -2.5f); // only n-1 written

  tgrt_zero(ctx_, "zero", dst.data(), 8); // two floats
  EXPECT_EQ(dst[0], 0.0f);
  EXPECT_EQ(dst[1], 0.0f);
  EXPECT_EQ(dst[2], -2.5f);
}

TEST_F(Cpu, Copy2dBlock) {
  const int64_t rows = 3, cols = 4, srcLd = 10, dstLd = 6;
  const VecF src = randVec(rows * srcLd, 9);
  VecF dst(rows * dstLd, -7.0f);
  tgrt_copy2d(ctx_, "split", TGRT_F32, src.data() + 2, srcLd, dst.data() + 1, dstLd, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < dstLd; ++c) {
      const float want = (c >= 1 && c < 1 + cols) ? src[r * srcLd + 2 + c - 1] : -7.0f;
      ASSERT_EQ(dst[r * dstLd + c], want) << r << "," << c;
    }
  EXPECT_EXIT(tgrt_copy2d(ctx_, "bad", TGRT_F32, src.data(), 2, dst.data(), 6, 1, 4),
              ::testing::ExitedWithCode(1), "tgrt: bad: copy2d: leading dimensions");
}

TEST_F(Cpu, Transpose4AllPermutations) {
  const int64_t d[4] = {2, 3, 4, 5};
  const VecF x = randVec(2 * 3 * 4 * 5, 10);
  int p[4] = {0, 1, 2, 3};
  int count = 0;
  do {
    VecF y(x.size(), kInf);
    tgrt_transpose4(ctx_, "t", TGRT_F32, x.data(), y.data(), d[0], d[1], d[2], d[3], p[0], p[1],
                    p[2], p[3]);
    const int64_t yd[4] = {d[p[0]], d[p[1]], d[p[2]], d[p[3]]};
    // Walk y's coordinates j and read x at i with i[p[a]] = j[a].
    int64_t j[4];
    for (j[0] = 0; j[0] < yd[0]; ++j[0])
      for (j[1] = 0; j[1] < yd[1]; ++j[1])
        for (j[2] = 0; j[2] < yd[2]; ++j[2])
          for (j[3] = 0; j[3] < yd[3]; ++j[3]) {
            int64_t i[4];
            for (int a = 0; a < 4; ++a) i[p[a]] = j[a];
            const int64_t xi = ((i[0] * d[1] + i[1]) * d[2] + i[2]) * d[3] + i[3];
            const int64_t yi = ((j[0] * yd[1] + j[1]) * yd[2] + j[2]) * yd[3] + j[3];
            ASSERT_EQ(y[yi], x[xi]) << "perm " << p[0] << p[1] << p[2] << p[3];
          }
    ++count;
  } while (std::next_permutation(p, p + 4));
  EXPECT_EQ(count, 24);
  VecF y(x.size());
  EXPECT_EXIT(tgrt_transpose4(ctx_, "t", TGRT_F32, x.data(), y.data(), 2, 3, 4, 5, 0, 1, 1, 3),
              ::testing::ExitedWithCode(1), "is not a permutation");
}

// --------------------------------------------------------------- layer norm --

/// Double reference layer norm of one [rows, d] block.
VecD layerNormRef(const VecD& x, const VecD& gamma, const VecD& beta, int64_t rows, int64_t d,
                  double eps, VecD* mean = nullptr, VecD* rstd = nullptr) {
  VecD y(rows * d);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t c = 0; c < d; ++c) mu += x[r * d + c];
    mu /= d;
    for (int64_t c = 0; c < d; ++c) var += (x[r * d + c] - mu) * (x[r * d + c] - mu);
    var /= d;
    const double rs = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = (x[r * d + c] - mu) * rs * gamma[c] + beta[c];
    if (mean) (*mean).push_back(mu);
    if (rstd) (*rstd).push_back(rs);
  }
  return y;
}

TEST_F(Cpu, LayerNormForward) {
  const int64_t rows = 6, d = 16;
  const float eps = 1e-5f;
  const VecF x = randVec(rows * d, 11, -2.0f, 3.0f), gamma = randVec(d, 12, 0.5f, 1.5f),
             beta = randVec(d, 13);
  VecF y(rows * d), mean(rows), rstd(rows);
  tgrt_layer_norm_fwd(ctx_, "ln", TGRT_F32, x.data(), TGRT_F32, gamma.data(), beta.data(),
                      TGRT_F32, y.data(), mean.data(),
                      rstd.data(), rows, d, eps);
  VecD wm, wr;
  const VecD want = layerNormRef(toD(x), toD(gamma), toD(beta), rows, d, eps, &wm, &wr);
  expectClose(y, want, 1e-5, 1e-5, "y");
  expectClose(mean, wm, 1e-6, 1e-6, "mean");
  expectClose(rstd, wr, 1e-6, 1e-5, "rstd");
}

TEST_F(Cpu, LayerNormBackwardMatchesFiniteDifferences) {
  const int64_t rows = 4, d = 8;
  const double eps = 1e-5;
  const VecF x = randVec(rows * d, 14, -2.0f, 2.0f), gamma = randVec(d, 15, 0.5f, 1.5f),
             beta = randVec(d, 16), w = randVec(rows * d, 17);
  VecF y(rows * d), mean(rows), rstd(rows);
  tgrt_layer_norm_fwd(ctx_, "ln", TGRT_F32, x.data(), TGRT_F32, gamma.data(), beta.data(),
                      TGRT_F32, y.data(), mean.data(),
                      rstd.data(), rows, d, (float)eps);
  VecF dx(rows * d), dgamma(d, 5.0f), dbeta(d, 5.0f);
  tgrt_layer_norm_bwd(ctx_, "ln", TGRT_F32, w.data(), TGRT_F32, x.data(), TGRT_F32, gamma.data(),
                      mean.data(), rstd.data(),
                      dx.data(), dgamma.data(), dbeta.data(), rows, d);
  // L = sum(w * LN(x; gamma, beta)), so dy = w.
  const VecD xd = toD(x), gd = toD(gamma), bd = toD(beta), wd = toD(w);
  auto lx = [&](const VecD& v) { return dotD(wd, layerNormRef(v, gd, bd, rows, d, eps)); };
  auto lg = [&](const VecD& v) { return dotD(wd, layerNormRef(xd, v, bd, rows, d, eps)); };
  auto lb = [&](const VecD& v) { return dotD(wd, layerNormRef(xd, gd, v, rows, d, eps)); };
  expectClose(dx, numericGrad(lx, xd), 1e-5, 1e-4, "dx");
  expectClose(dgamma, numericGrad(lg, gd), 1e-5, 1e-4, "dgamma");
  expectClose(dbeta, numericGrad(lb, bd), 1e-5, 1e-4, "dbeta");
}

// ------------------------------------------------------------------- matmul --

/// Double reference of one tgrt_matmul call (same argument meaning).
VecD matmulRef(const VecF& a, const VecF& b, const VecF& c0, int64_t batch, int64_t m, int64_t n,
               int64_t k, bool ta, bool tb, int64_t sa, int64_t sb, int64_t sc, double alpha,
               double beta) {
  VecD c = toD(c0);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double av = ta ? a[bi * sa + p * m + i] : a[bi * sa + i * k + p];
          const double bv = tb ? b[bi * sb + j * k + p] : b[bi * sb + p * n + j];
          s += av * bv;
        }
        double& out = c[bi * sc + i * n + j];
        out = alpha * s + (beta == 0.0 ? 0.0 : beta * out);
      }
  return c;
}

TEST_F(Cpu, MatmulAllTransposesStridesAlphaBeta) {
  const int64_t batch = 3, m = 5, n = 7, k = 4;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      // Padded strides: each batch entry sits further apart than its size.
      const int64_t sa = m * k + 3, sb = k * n + 5, sc = m * n + 2;
      const VecF a = randVec(batch * sa, 20 + ta), b = randVec(batch * sb, 30 + tb);
      const VecF c0 = randVec(batch * sc, 40);
      VecF c = c0;
      tgrt_matmul(ctx_, "mm", TGRT_F32, a.data(), b.data(), c.data(), batch, m, n, k, ta, tb, sa,
                  sb, sc, 0.7f, 0.3f);
      const VecD want = matmulRef(a, b, c0, batch, m, n, k, ta, tb, sa, sb, sc, 0.7, 0.3);
      expectClose(c, want, 1e-5, 1e-5,
                  "matmul ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      // Padding between batch entries of C is untouched.
      EXPECT_EQ(c[m * n], c0[m * n]);
    }
}

TEST_F(Cpu, MatmulBetaZeroIgnoresGarbageAndBroadcastsStrideZero) {
  const int64_t batch = 4, m = 3, n = 6, k = 5;
  const VecF a = randVec(batch * m * k, 50), w = randVec(k * n, 51); // one shared weight
  VecF c(batch * m * n, std::numeric_limits<float>::quiet_NaN());
  tgrt_matmul(ctx_, "mm", TGRT_F32, a.data(), w.data(), c.data(), batch, m, n, k, 0, 0, m * k, 0,
              m * n, 1.0f, 0.0f);
  const VecF zeros(batch * m * n, 0.0f);
  const VecD want = matmulRef(a, w, zeros, batch, m, n, k, false, false, m * k, 0, m * n, 1, 0);
  expectClose(c, want, 1e-5, 1e-5, "broadcast B");
  // Broadcast A instead (stride_a = 0), with B transposed.
  const VecF bt = randVec(batch * n * k, 52), a1 = randVec(m * k, 53);
  std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
  tgrt_matmul(ctx_, "mm", TGRT_F32, a1.data(), bt.data(), c.data(), batch, m, n, k, 0, 1, 0, n * k,
              m * n, 2.0f, 0.0f);
  expectClose(c, matmulRef(a1, bt, zeros, batch, m, n, k, false, true, 0, n * k, m * n, 2, 0),
              1e-5, 1e-5, "broadcast A");
  // A single 1x1x1 product and k = 0 (empty sum: C = beta C).
  const float one = 3.0f, two = -2.0f;
  float out = 100.0f;
  tgrt_matmul(ctx_, "mm", TGRT_F32, &one, &two, &out, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1.0f, 1.0f);
  EXPECT_FLOAT_EQ(out, 94.0f);
  tgrt_matmul(ctx_, "mm", TGRT_F32, nullptr, nullptr, &out, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f);
  EXPECT_FLOAT_EQ(out, 47.0f);
}

TEST_F(Cpu, BiasAddAndGrad) {
  const int64_t rows = 5, n = 9;
  const VecF x = randVec(rows * n, 60), bias = randVec(n, 61);
  VecF out(rows * n);
  tgrt_bias_add(ctx_, "b", TGRT_F32, x.data(), bias.data(), out.data(), rows, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) ASSERT_EQ(out[r * n + c], x[r * n + c] + bias[c]);
  VecF inplace = x;
  tgrt_bias_add(ctx_, "b", TGRT_F32, inplace.data(), bias.data(), inplace.data(), rows, n);
  EXPECT_EQ(inplace, out);
  VecF db(n, 42.0f);
  tgrt_bias_grad(ctx_, "b", TGRT_F32, x.data(), db.data(), rows, n);
  VecD want(n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) want[c] += x[r * n + c];
  expectClose(db, want, 1e-6, 1e-6, "dbias");
}

// --------------------------------------------------------------------- GELU --

double geluRef(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST_F(Cpu, GeluForwardBackward) {
  const int64_t n = 64;
  const VecF x = randVec(n, 70, -4.0f, 4.0f), dy = randVec(n, 71);
  VecF y(n);
  tgrt_gelu_fwd(ctx_, "gelu", TGRT_F32, x.data(), y.data(), n);
  VecD want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = geluRef(x[i]);
  expectClose(y, want, 1e-6, 1e-5, "gelu");
  EXPECT_NEAR(y[0] - (float)want[0], 0.0, 1e-6);

  VecF dx(n);
  tgrt_gelu_bwd(ctx_, "gelu", TGRT_F32, x.data(), dy.data(), dx.data(), n);
  VecD fd(n);
  for (int64_t i = 0; i < n; ++i)
    fd[i] = dy[i] * (geluRef(x[i] + 1e-5) - geluRef(x[i] - 1e-5)) / 2e-5;
  expectClose(dx, fd, 1e-6, 1e-5, "dgelu");
  VecF alias = dy; // dx may alias dy
  tgrt_gelu_bwd(ctx_, "gelu", TGRT_F32, x.data(), alias.data(), alias.data(), n);
  EXPECT_EQ(alias, dx);
}

// ------------------------------------------------------------------ dropout --

TEST_F(Cpu, DropoutStatisticsAndDeterminism) {
  const int64_t n = 200000;
  const VecF x = randVec(n, 80, 0.5f, 1.5f); // strictly positive: zero <=> dropped
  auto run = [&](int64_t step, int32_t mb, uint64_t seed, float rate) {
    tgrt_set_step(ctx_, step);
    tgrt_set_micro_batch(ctx_, mb);
    VecF y(n);
    tgrt_dropout(ctx_, "drop", TGRT_F32, x.data(), y.data(), n, rate, seed);
    return y;
  };
  auto keptFraction = [&](const VecF& y) {
    return (double)std::count_if(y.begin(), y.end(), [](float v) { return v != 0.0f; }) / n;
  };
  auto disagreement = [&](const VecF& a, const VecF& b) {
    int64_t diff = 0;
    for (int64_t i = 0; i < n; ++i) diff += (a[i] != 0.0f) != (b[i] != 0.0f);
    return (double)diff / n;
  };
  const VecF y = run(5, 0, 1234, 0.5f);
  // Binomial(n, 0.5): std of the fraction ~0.0011, so +-0.01 is ~9 sigma.
  EXPECT_NEAR(keptFraction(y), 0.5, 0.01);
  for (int64_t i = 0; i < n; ++i) {
    if (y[i] != 0.0f) {
      ASSERT_EQ(y[i], x[i] * 2.0f) << i;
    }
  }
  EXPECT_EQ(run(5, 0, 1234, 0.5f), y);                  // same args, same mask
  EXPECT_NEAR(disagreement(run(6, 0, 1234, 0.5f), y), 0.5, 0.02); // other step
  EXPECT_NEAR(disagreement(run(5, 1, 1234, 0.5f), y), 0.5, 0.02); // other micro-batch
  EXPECT_NEAR(disagreement(run(5, 0, 1235, 0.5f), y), 0.5, 0.02); // other seed
  EXPECT_NEAR(keptFraction(run(5, 0, 7, 0.1f)), 0.9, 0.01);
  EXPECT_EQ(run(5, 0, 7, 0.0f), x);
  EXPECT_EQ(keptFraction(run(5, 0, 7, 1.0f)), 0.0);

  // Backward = the same call on dy: zero exactly where the forward dropped, dy*2 elsewhere.
  const VecF dy = randVec(n, 81, 0.5f, 1.5f);
  tgrt_set_step(ctx_, 5);
  tgrt_set_micro_batch(ctx_, 0);
  VecF dx = dy; // in place
  tgrt_dropout(ctx_, "drop", TGRT_F32, dx.data(), dx.data(), n, 0.5f, 1234);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dx[i], y[i] != 0.0f ? dy[i] * 2.0f : 0.0f) << i;

  EXPECT_EXIT(tgrt_dropout(ctx_, "drop", TGRT_F32, x.data(), dx.data(), n, 1.5f, 1),
              ::testing::ExitedWithCode(1), "tgrt: drop: dropout rate 1.5 outside");
}

// -------------------------------------------------------- mask and softmax --

TEST_F(Cpu, CausalMaskWithOffsetAndWindow) {
  const int64_t batch = 2, tq = 3, tk = 5;
  const VecF x = randVec(batch * tq * tk, 90);
  for (int64_t window : {0, 1, 2}) {
    VecF y = x; // in place
    tgrt_causal_mask(ctx_, "mask", TGRT_F32, y.data(), y.data(), batch, tq, tk, window, -1e9f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < tq; ++i)
        for (int64_t j = 0; j < tk; ++j) {
          const int64_t pos = i + 2; // query i at key position i + tk - tq
          const bool vis = j <= pos && (window <= 0 || pos - j < window);
          const int64_t idx = (b * tq + i) * tk + j;
          ASSERT_EQ(y[idx], vis ? x[idx] : -1e9f) << "window " << window << " " << i << "," << j;
        }
  }
  // Spot checks of the rule: window 1 keeps only the diagonal.
  VecF y(tk * tk);
  const VecF sq = randVec(tk * tk, 91);
  tgrt_causal_mask(ctx_, "mask", TGRT_F32, sq.data(), y.data(), 1, tk, tk, 1, -kInf);
  EXPECT_EQ(y[2 * tk + 2], sq[2 * tk + 2]);
  EXPECT_EQ(y[2 * tk + 1], -kInf);
  EXPECT_EQ(y[2 * tk + 3], -kInf);
}

TEST_F(Cpu, SoftmaxForwardBackward) {
  const int64_t rows = 4, n = 6;
  VecF x = randVec(rows * n, 100, -3.0f, 3.0f);
  x[1 * n + 2] = -kInf; // a masked entry
  for (int64_t c = 0; c < n; ++c) x[3 * n + c] = -kInf; // a fully masked row
  VecF y(rows * n, 5.0f);
  tgrt_softmax_fwd(ctx_, "sm", TGRT_F32, x.data(), y.data(), rows, n);
  for (int64_t r = 0; r < 3; ++r) {
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < n; ++c) mx = std::max(mx, (double)x[r * n + c]);
    for (int64_t c = 0; c < n; ++c) s += std::exp(x[r * n + c] - mx);
    for (int64_t c = 0; c < n; ++c)
      ASSERT_NEAR(y[r * n + c], std::exp(x[r * n + c] - mx) / s, 1e-6);
  }
  EXPECT_EQ(y[1 * n + 2], 0.0f);
  for (int64_t c = 0; c < n; ++c) EXPECT_EQ(y[3 * n + c], 0.0f);

  // Backward vs FD of L = sum(w * softmax(x)) on finite rows.
  const int64_t r2 = 3;
  const VecF xs = randVec(r2 * n, 101, -2.0f, 2.0f), w = randVec(r2 * n, 102);
  VecF ys(r2 * n);
  tgrt_softmax_fwd(ctx_, "sm", TGRT_F32, xs.data(), ys.data(), r2, n);
  VecF dx = w; // dx aliases dy
  tgrt_softmax_bwd(ctx_, "sm", TGRT_F32, ys.data(), dx.data(), dx.data(), r2, n);
  auto loss = [&](const VecD& v) {
    double l = 0;
    for (int64_t r = 0; r < r2; ++r) {
      double s = 0;
      for (int64_t c = 0; c < n; ++c) s += std::exp(v[r * n + c]);
      for (int64_t c = 0; c < n; ++c) l += w[r * n + c] * std::exp(v[r * n + c]) / s;
    }
    return l;
  };
  expectClose(dx, numericGrad(loss, toD(xs)), 1e-6, 1e-4, "softmax dx");
}

// ------------------------------------------------------------ cross entropy --

/// Double reference of the mean cross entropy with ignore_index.
double crossEntropyRef(const VecD& z, const std::vector<int32_t>& t, int64_t rows, int64_t vocab,
                       int64_t ignore) {
  double sum = 0;
  int64_t valid = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (t[r] == ignore) continue;
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < vocab; ++c) mx = std::max(mx, z[r * vocab + c]);
    for (int64_t c = 0; c < vocab; ++c) s += std::exp(z[r * vocab + c] - mx);
    sum += mx + std::log(s) - z[r * vocab + t[r]];
    ++valid;
  }
  return valid ? sum / valid : 0.0;
}

TEST_F(Cpu, CrossEntropyForwardBackwardWithIgnoreIndex) {
  const int64_t rows = 6, vocab = 11, ignore = -100;
  const VecF z = randVec(rows * vocab, 110, -4.0f, 4.0f);
  const std::vector<int32_t> t = {3, -100, 0, 10, -100, 7};
  float loss = -1.0f;
  tgrt_cross_entropy_fwd(ctx_, "ce", TGRT_F32, z.data(), t.data(), &loss, rows, vocab, ignore);
  const double want = crossEntropyRef(toD(z), t, rows, vocab, ignore);
  EXPECT_NEAR(loss, want, 1e-5 * std::fabs(want));
  EXPECT_GT(loss, 0.0f);

  const float dloss = 1.7f;
  VecF dz(rows * vocab, kInf);
  tgrt_cross_entropy_bwd(ctx_, "ce", TGRT_F32, z.data(), t.data(), &dloss, dz.data(), rows, vocab,
                         ignore);
  VecD fd = numericGrad(
      [&](const VecD& v) { return dloss * crossEntropyRef(v, t, rows, vocab, ignore); }, toD(z));
  expectClose(dz, fd, 1e-6, 1e-4, "dlogits");
  for (int64_t c = 0; c < vocab; ++c) EXPECT_EQ(dz[1 * vocab + c], 0.0f); // ignored row

  VecF inplace = z; // dlogits == logits
  tgrt_cross_entropy_bwd(ctx_, "ce", TGRT_F32, inplace.data(), t.data(), &dloss, inplace.data(),
                         rows, vocab, ignore);
  EXPECT_EQ(inplace, dz);
}

TEST_F(Cpu, CrossEntropyAllIgnoredAndBadTarget) {
  const int64_t rows = 2, vocab = 3;
  const VecF z = randVec(rows * vocab, 111);
  const std::vector<int32_t> t = {-1, -1};
  float loss = 9.0f, dloss = 1.0f;
  tgrt_cross_entropy_fwd(ctx_, "ce", TGRT_F32, z.data(), t.data(), &loss, rows, vocab, -1);
  EXPECT_EQ(loss, 0.0f);
  VecF dz(rows * vocab, 9.0f);
  tgrt_cross_entropy_bwd(ctx_, "ce", TGRT_F32, z.data(), t.data(), &dloss, dz.data(), rows, vocab,
                         -1);
  for (float v : dz) EXPECT_EQ(v, 0.0f);
  const std::vector<int32_t> bad = {0, 3};
  EXPECT_EXIT(tgrt_cross_entropy_fwd(ctx_, "lm_head.ce", TGRT_F32, z.data(), bad.data(), &loss,
                                     rows, vocab, -1),
              ::testing::ExitedWithCode(1), "tgrt: lm_head.ce: cross_entropy target 3 at row 1");
}

// ---------------------------------------------------------------- attention --

/// Double reference attention: returns out [bh, t, hd]; lse [bh, t] in *lse when given.
VecD attentionRef(const VecD& q, const VecD& k, const VecD& v, int64_t bh, int64_t t, int64_t hd,
                  bool causal, int64_t window, double scale, VecD* lse = nullptr) {
  VecD out(bh * t * hd, 0.0);
  if (lse) lse->assign(bh * t, 0.0);
  for (int64_t h = 0; h < bh; ++h)
    for (int64_t i = 0; i < t; ++i) {
      VecD s(t, -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < t; ++j) {
        const bool vis = !causal || (j <= i && (window <= 0 || i - j < window));
        if (!vis) continue;
        double d = 0;
        for (int64_t c = 0; c < hd; ++c) d += q[(h * t + i) * hd + c] * k[(h * t + j) * hd + c];
        s[j] = scale * d;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < t; ++j) sum += std::exp(s[j] - mx);
      for (int64_t j = 0; j < t; ++j)
        for (int64_t c = 0; c < hd; ++c)
          out[(h * t + i) * hd + c] += std::exp(s[j] - mx) / sum * v[(h * t + j) * hd + c];
      if (lse) (*lse)[h * t + i] = mx + std::log(sum);
    }
  return out;
}

/// Attention composed from the CPU kernels themselves: matmul (q k^T), causal_mask, softmax,
/// matmul (P v).
VecF attentionComposed(tgrt_ctx* ctx, const VecF& q, const VecF& k, const VecF& v, int64_t bh,
                       int64_t t, int64_t hd, bool causal, int64_t window, float scale) {
  VecF s(bh * t * t), p(bh * t * t), out(bh * t * hd);
  tgrt_matmul(ctx, "qk", TGRT_F32, q.data(), k.data(), s.data(), bh, t, t, hd, 0, 1, t * hd, t * hd,
              t * t, scale, 0.0f);
  if (causal)
    tgrt_causal_mask(ctx, "mask", TGRT_F32, s.data(), s.data(), bh, t, t, window,
                     -std::numeric_limits<float>::infinity());
  tgrt_softmax_fwd(ctx, "sm", TGRT_F32, s.data(), p.data(), bh * t, t);
  tgrt_matmul(ctx, "pv", TGRT_F32, p.data(), v.data(), out.data(), bh, t, hd, t, 0, 0, t * t,
              t * hd, t * hd, 1.0f, 0.0f);
  return out;
}

struct AttnCase {
  bool causal;
  int64_t window;
};

/// The batch, heads, t, hd and stride arguments of tgrt_attention_fwd / _bwd for bh
/// contiguous [t, hd] problems (batch 1, heads bh; in and out strides both contiguous).
#define ATTN_CONTIG(bh, t, hd)                                                                     \
  1, (bh), (t), (hd), (bh) * (t) * (hd), (t) * (hd), (hd), (bh) * (t) * (hd), (t) * (hd), (hd)

TEST_F(Cpu, AttentionForwardMatchesComposedAndNaive) {
  const int64_t bh = 3, t = 7, hd = 8;
  const float scale = 1.0f / std::sqrt((float)hd);
  const VecF q = randVec(bh * t * hd, 120, -2.0f, 2.0f), k = randVec(bh * t * hd, 121, -2.0f, 2.0f),
             v = randVec(bh * t * hd, 122);
  for (AttnCase ac :
       {AttnCase{false, 0}, AttnCase{true, 0}, AttnCase{true, 3}, AttnCase{true, 1}}) {
    const std::string name =
        "causal=" + std::to_string(ac.causal) + " window=" + std::to_string(ac.window);
    VecF out(bh * t * hd), lse(bh * t);
    tgrt_attention_fwd(ctx_, "attn", TGRT_F32, q.data(), k.data(), v.data(), out.data(), lse.data(),
                       ATTN_CONTIG(bh, t, hd), ac.causal, ac.window, scale);
    VecD wantLse;
    const VecD want =
        attentionRef(toD(q), toD(k), toD(v), bh, t, hd, ac.causal, ac.window, scale, &wantLse);
    expectClose(out, want, 1e-5, 1e-4, "out vs naive " + name);
    expectClose(lse, wantLse, 1e-5, 1e-5, "lse vs naive " + name);
    expectClose(out, attentionComposed(ctx_, q, k, v, bh, t, hd, ac.causal, ac.window, scale),
                1e-5, 1e-4, "out vs composed " + name);
    if (ac.causal && ac.window == 1) { // each query sees only itself: out = v
      expectClose(out, v, 1e-6, 0.0, "window 1");
      for (int64_t i = 0; i < bh * t; ++i) {
        double d = 0;
        for (int64_t c = 0; c < hd; ++c) d += (double)q[i * hd + c] * k[i * hd + c];
        ASSERT_NEAR(lse[i], scale * d, 1e-5);
      }
    }
    if (ac.causal) { // first query sees only key 0 regardless of window
      for (int64_t c = 0; c < hd; ++c) EXPECT_NEAR(out[c], v[c], 1e-6);
    }
  }
}

TEST_F(Cpu, AttentionBackwardMatchesFiniteDifferences) {
  const int64_t bh = 2, t = 5, hd = 4;
  const float scale = 0.5f;
  const VecF q = randVec(bh * t * hd, 130, -1.5f, 1.5f), k = randVec(bh * t * hd, 131, -1.5f, 1.5f),
             v = randVec(bh * t * hd, 132), w = randVec(bh * t * hd, 133);
  const VecD qd = toD(q), kd = toD(k), vd = toD(v), wd = toD(w);
  for (AttnCase ac : {AttnCase{false, 0}, AttnCase{true, 0}, AttnCase{true, 2}}) {
    const std::string name =
        "causal=" + std::to_string(ac.causal) + " window=" + std::to_string(ac.window);
    VecF out(bh * t * hd), lse(bh * t);
    tgrt_attention_fwd(ctx_, "attn", TGRT_F32, q.data(), k.data(), v.data(), out.data(), lse.data(),
                       ATTN_CONTIG(bh, t, hd), ac.causal, ac.window, scale);
    VecF dq(q.size(), kInf), dk(k.size(), kInf), dv(v.size(), kInf);
    tgrt_attention_bwd(ctx_, "attn", TGRT_F32, q.data(), k.data(), v.data(), out.data(), lse.data(),
                       w.data(), dq.data(), dk.data(), dv.data(), ATTN_CONTIG(bh, t, hd), ac.causal,
                       ac.window, scale);
    // L = sum(w * attention(q, k, v)), so dout = w.
    auto lq = [&](const VecD& x) {
      return dotD(wd, attentionRef(x, kd, vd, bh, t, hd, ac.causal, ac.window, scale));
    };
    auto lk = [&](const VecD& x) {
      return dotD(wd, attentionRef(qd, x, vd, bh, t, hd, ac.causal, ac.window, scale));
    };
    auto lv = [&](const VecD& x) {
      return dotD(wd, attentionRef(qd, kd, x, bh, t, hd, ac.causal, ac.window, scale));
    };
    expectClose(dq, numericGrad(lq, qd), 2e-6, 2e-5, "dq " + name);
    expectClose(dk, numericGrad(lk, kd), 2e-6, 2e-5, "dk " + name);
    expectClose(dv, numericGrad(lv, vd), 2e-6, 2e-5, "dv " + name);
  }
}

TEST(Bf16, RoundingRoundTrip) {
  // Exact values survive; the upper 16 bits are the bf16 pattern.
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 3.0e38f, 1.0e-38f, kInf, -kInf}) {
    const uint16_t h = tgrt_bf16_from_float(x);
    const float back = tgrt_bf16_to_float(h);
    uint32_t u;
    std::memcpy(&u, &back, 4);
    EXPECT_EQ(tgrt_bf16_from_float(back), h) << x;
    EXPECT_EQ(u & 0xffffu, 0u) << x;
  }
  EXPECT_EQ(tgrt_bf16_to_float(tgrt_bf16_from_float(1.0f)), 1.0f);
  // Round to nearest, ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> 1 (even);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 -> 1 + 2^-6 (even); just above a tie
  // rounds up.
  EXPECT_EQ(tgrt_bf16_to_float(tgrt_bf16_from_float(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(tgrt_bf16_to_float(tgrt_bf16_from_float(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(tgrt_bf16_to_float(tgrt_bf16_from_float(1.0f + 0x1p-8f + 0x1p-20f)), 1.0f + 0x1p-7f);
  EXPECT_EQ(tgrt_bf16_to_float(tgrt_bf16_from_float(-(1.0f + 0x1p-8f + 0x1p-20f))),
            -(1.0f + 0x1p-7f));
  // Overflow past the largest bf16 goes to inf; NaN stays NaN.
  EXPECT_EQ(tgrt_bf16_to_float(tgrt_bf16_from_float(3.4e38f)), kInf);
  EXPECT_TRUE(std::isnan(tgrt_bf16_to_float(tgrt_bf16_from_float(std::nanf("")))));
  // Relative error of rounding is at most 2^-8 (half of the 8-bit significand's ulp).
  const VecF r = randVec(10000, 7, -100.0f, 100.0f);
  for (float x : r) {
    const float b = tgrt_bf16_to_float(tgrt_bf16_from_float(x));
    EXPECT_LE(std::fabs(b - x), std::ldexp(std::fabs(x), -8)) << x;
  }
}

TEST_F(Cpu, AttentionBackwardFp32FiniteDifferencesThroughKernel) {
  // The same check through the fp32 forward kernel itself (eps 1e-2, loose tolerance).
  const int64_t bh = 1, t = 4, hd = 3;
  const float scale = 0.8f;
  VecF q = randVec(t * hd, 140), k = randVec(t * hd, 141), v = randVec(t * hd, 142);
  const VecF w = randVec(t * hd, 143);
  VecF out(t * hd), lse(t);
  auto loss = [&]() {
    tgrt_attention_fwd(ctx_, "attn", TGRT_F32, q.data(), k.data(), v.data(), out.data(), lse.data(),
                       ATTN_CONTIG(bh, t, hd), 1, 0, scale);
    double l = 0;
    for (int64_t i = 0; i < t * hd; ++i)
      l += (double)w[i] * out[i];
    return l;
  };
  loss();
  VecF dq(t * hd), dk(t * hd), dv(t * hd);
  tgrt_attention_bwd(ctx_, "attn", TGRT_F32, q.data(), k.data(), v.data(), out.data(), lse.data(),
                     w.data(), dq.data(), dk.data(), dv.data(), ATTN_CONTIG(bh, t, hd), 1, 0,
                     scale);
  const float h = 1e-2f;
  for (VecF* x : {&q, &k, &v}) {
    VecD fd(t * hd);
    for (int64_t i = 0; i < t * hd; ++i) {
      const float x0 = (*x)[i];
      (*x)[i] = x0 + h;
      const double lp = loss();
      (*x)[i] = x0 - h;
      const double lm = loss();
      (*x)[i] = x0;
      fd[i] = (lp - lm) / (2.0 * h);
    }
    const VecF& g = x == &q ? dq : (x == &k ? dk : dv);
    expectClose(g, fd, 2e-3, 1e-2, x == &q ? "dq" : (x == &k ? "dk" : "dv"));
  }
}

// ---------------------------------------------------------------- optimizer --

TEST_F(Cpu, GradNormAndClipScale) {
  const VecF g1 = {3.0f, 4.0f}, g2 = {12.0f};
  float acc[2] = {0.0f, -1.0f};
  tgrt_grad_norm_sq(ctx_, "norm", TGRT_F32, g1.data(), 2, acc);
  tgrt_grad_norm_sq(ctx_, "norm", TGRT_F32, g2.data(), 1, acc);
  EXPECT_EQ(acc[0], 169.0f); // 9 + 16 + 144, norm 13
  tgrt_clip_scale(ctx_, "clip", acc, 1.0f);
  EXPECT_NEAR(acc[1], 1.0 / (13.0 + 1e-6), 1e-7);
  EXPECT_FLOAT_EQ(tgrt_last_grad_norm(ctx_), 13.0f);
  tgrt_clip_scale(ctx_, "clip", acc, 20.0f); // under the limit
  EXPECT_EQ(acc[1], 1.0f);
  tgrt_clip_scale(ctx_, "clip", acc, 0.0f); // clipping disabled
  EXPECT_EQ(acc[1], 1.0f);
  EXPECT_FLOAT_EQ(tgrt_last_grad_norm(ctx_), 13.0f);
}

TEST_F(Cpu, AdamWTwoStepsByHand) {
  // p = 1, g = 2, clip scale 0.5 -> g' = 1; b1 0.9, b2 0.999, lr 0.1, wd 0.1, eps 1e-8.
  // Step 1: m = 0.1, v = 0.001, mhat = 0.1/0.1 = 1, vhat = 0.001/0.001 = 1,
  //         p = 1 - 0.1 (1/(1+1e-8) + 0.1*1) = 0.89 (to ~1e-9).
  // Step 2: m = 0.19, v = 0.001999, mhat = 0.19/0.19 = 1, vhat = 0.001999/0.001999 = 1,
  //         p = 0.89 - 0.1 (1 + 0.1*0.89) = 0.7811.
  float p = 1.0f, m = 0.0f, v = 0.0f;
  const float g = 2.0f, clip[2] = {0.0f, 0.5f};
  tgrt_set_lr(ctx_, 0.1f);
  tgrt_set_step(ctx_, 1);
  tgrt_adamw(ctx_, "opt", TGRT_F32, &p, &g, TGRT_F32, &m, &v, 1, 0.9f, 0.999f, 1e-8f, 0.1f, clip);
  EXPECT_NEAR(m, 0.1, 1e-7);
  EXPECT_NEAR(v, 0.001, 3e-8); // (1 - 0.999f) carries fp32 rounding of beta2 (~1.3e-5 rel.)
  EXPECT_NEAR(p, 0.89, 1e-6);
  tgrt_set_step(ctx_, 2);
  tgrt_adamw(ctx_, "opt", TGRT_F32, &p, &g, TGRT_F32, &m, &v, 1, 0.9f, 0.999f, 1e-8f, 0.1f, clip);
  EXPECT_NEAR(m, 0.19, 1e-7);
  EXPECT_NEAR(v, 0.001999, 6e-8);
  EXPECT_NEAR(p, 0.7811, 1e-6);
}

TEST_F(Cpu, AdamWNonTrivialRatioNoDecay) {
  // p = 0.5, g = -0.3, m = 0.05, v = 0.01, step 3, b1 0.8, b2 0.9, lr 0.01, eps 0.1, no decay,
  // no clip buffer. m' = 0.8*0.05 + 0.2*(-0.3) = -0.02; v' = 0.9*0.01 + 0.1*0.09 = 0.018;
  // mhat = -0.02/(1-0.512) = -0.040983607; vhat = 0.018/(1-0.729) = 0.066420664;
  // sqrt(vhat) = 0.257722; p = 0.5 - 0.01 * (-0.040983607/(0.257722+0.1)) = 0.501145680.
  float p = 0.5f, m = 0.05f, v = 0.01f;
  const float g = -0.3f;
  tgrt_set_lr(ctx_, 0.01f);
  tgrt_set_step(ctx_, 3);
  tgrt_adamw(ctx_, "opt", TGRT_F32, &p, &g, TGRT_F32, &m, &v, 1, 0.8f, 0.9f, 0.1f, 0.0f, nullptr);
  EXPECT_NEAR(m, -0.02, 1e-7);
  EXPECT_NEAR(v, 0.018, 1e-8);
  EXPECT_NEAR(p, 0.501145680, 1e-6);
  tgrt_set_step(ctx_, 0);
  EXPECT_EXIT(tgrt_adamw(ctx_, "opt", TGRT_F32, &p, &g, TGRT_F32, &m, &v, 1, 0.8f, 0.9f, 0.1f, 0.0f,
                         nullptr),
              ::testing::ExitedWithCode(1), "tgrt: opt: adamw: optimizer step 0 must be >= 1");
}

TEST_F(Cpu, SplitValueRoundTripsButTheHalfwayCase) {
  // tgrt_split_value / tgrt_split_join (tgrt.h): hi is the RNE bf16 of the value, and the
  // join gives the value back, but for a value exactly halfway between two bf16 values and
  // rounded down (to the even one), which comes back one ulp towards hi.
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int i = 0; i < 100000; ++i) {
    const float w = u(gen);
    uint16_t hi = 0, lo = 0;
    tgrt_split_value(w, &hi, &lo);
    ASSERT_EQ(hi, tgrt_bf16_from_float(w)) << w;
    uint32_t wb, jb;
    const float j = tgrt_split_join(hi, lo);
    std::memcpy(&wb, &w, 4);
    std::memcpy(&jb, &j, 4);
    if (wb - ((uint32_t)hi << 16) == 0x8000u) EXPECT_EQ(jb, wb - 1) << w;
    else EXPECT_EQ(jb, wb) << w;
  }
  auto bitsToFloat = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  uint16_t hi = 0, lo = 0;
  tgrt_split_value(bitsToFloat(0x3f808000u), &hi, &lo); // halfway, rounded down to 0x3f80
  EXPECT_EQ(hi, 0x3f80);
  EXPECT_EQ(lo, 0x7fff);
  tgrt_split_value(bitsToFloat(0xbf818000u), &hi, &lo); // halfway, rounded up to 0xbf82
  EXPECT_EQ(hi, 0xbf82);
  EXPECT_EQ(lo, 0x8000);
  EXPECT_EQ(tgrt_split_join(hi, lo), bitsToFloat(0xbf818000u)); // exact
  tgrt_split_value(std::numeric_limits<float>::infinity(), &hi, &lo);
  EXPECT_TRUE(std::isinf(tgrt_split_join(hi, lo)));
  tgrt_split_value(std::numeric_limits<float>::quiet_NaN(), &hi, &lo);
  EXPECT_TRUE(std::isnan(tgrt_split_join(hi, lo)));
}

TEST_F(Cpu, AdamWSplitIsAdamWOnTheJoinedValues) {
  // tgrt_adamw_split = tgrt_adamw_wc_g (f32 values, bf16 gradients, no copy) on the joined
  // values, split again; a skipped step (clip[1] NaN) changes nothing.
  const int64_t n = 5000; // more than one of the reference's blocks of 4096
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> p(n), m(n), v(n);
  std::vector<uint16_t> hi(n), lo(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    tgrt_split_value(u(gen), &hi[i], &lo[i]);
    p[i] = tgrt_split_join(hi[i], lo[i]);
    m[i] = 0.01f * u(gen);
    v[i] = 1e-4f * (1.5f + u(gen));
    g[i] = tgrt_bf16_from_float(0.05f * u(gen));
  }
  std::vector<float> m2 = m, v2 = v;
  const float clip[2] = {0.0f, 0.5f};
  tgrt_set_lr(ctx_, 1e-3f);
  tgrt_set_step(ctx_, 4);
  tgrt_adamw_wc_g(ctx_, "opt", TGRT_F32, p.data(), TGRT_BF16, g.data(), TGRT_F32, m.data(),
                  v.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip, TGRT_BF16, nullptr);
  tgrt_adamw_split(ctx_, "opt", hi.data(), lo.data(), TGRT_BF16, g.data(), TGRT_F32, m2.data(),
                   v2.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip);
  int64_t moved = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h, l;
    tgrt_split_value(p[i], &h, &l);
    ASSERT_EQ(hi[i], h) << i;
    ASSERT_EQ(lo[i], l) << i;
    ASSERT_EQ(m2[i], m[i]) << i;
    ASSERT_EQ(v2[i], v[i]) << i;
    moved += tgrt_split_join(hi[i], lo[i]) != p[i];
  }
  EXPECT_LE(moved, 2); // halfway values only (about 1 in 65536)
  std::vector<uint16_t> hi0 = hi, lo0 = lo;
  const float skip[2] = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  tgrt_adamw_split(ctx_, "opt", hi.data(), lo.data(), TGRT_BF16, g.data(), TGRT_F32, m2.data(),
                   v2.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, skip);
  EXPECT_EQ(hi, hi0);
  EXPECT_EQ(lo, lo0);
  EXPECT_EXIT(tgrt_adamw_split(ctx_, "opt", hi.data(), lo.data(), TGRT_F16, g.data(), TGRT_F32,
                               m2.data(), v2.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip),
              ::testing::ExitedWithCode(1),
              "tgrt: opt: adamw_split: the gradients' dtype 2 is neither bf16");
}

TEST_F(Cpu, AdamWVectorMatchesScalarFormula) {
  const int64_t n = 100;
  VecF p = randVec(n, 150), m = randVec(n, 151, -0.1f, 0.1f), v = randVec(n, 152, 0.0f, 0.1f);
  const VecF g = randVec(n, 153);
  const VecF p0 = p, m0 = m, v0 = v;
  const float clip[2] = {0.0f, 0.25f};
  tgrt_set_lr(ctx_, 3e-3f);
  tgrt_set_step(ctx_, 10);
  tgrt_adamw(ctx_, "opt", TGRT_F32, p.data(), g.data(), TGRT_F32, m.data(), v.data(), n, 0.9f,
             0.95f, 1e-8f, 0.1f, clip);
  VecD wp(n);
  for (int64_t i = 0; i < n; ++i) {
    const double gi = g[i] * 0.25;
    const double mi = 0.9 * m0[i] + 0.1 * gi, vi = 0.95 * v0[i] + 0.05 * gi * gi;
    const double mh = mi / (1 - std::pow(0.9, 10)), vh = vi / (1 - std::pow(0.95, 10));
    wp[i] = p0[i] - 3e-3 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * p0[i]);
  }
  expectClose(p, wp, 1e-6, 1e-5, "adamw p");
}

// ------------------------------------------------------------ low precision --
//
// The contract of the CPU reference for bf16 / f16 (runtime/cpu/Kernels.cpp): every input is
// widened exactly, the f32 computation runs unchanged, every output is rounded once. So each
// low-precision kernel must equal, bit for bit, the RNE rounding of the f32 kernel run on
// the widened inputs. The tests below check exactly that, for both low-precision dtypes.

/// float -> bf16 / f16 bit pattern (RNE), by dtype.
uint16_t lowOf(int32_t dt, float x) {
  return dt == TGRT_BF16 ? tgrt_bf16_from_float(x) : tgrt_f16_from_float(x);
}
/// bf16 / f16 bit pattern -> float (exact), by dtype.
float widenOf(int32_t dt, uint16_t h) {
  return dt == TGRT_BF16 ? tgrt_bf16_to_float(h) : tgrt_f16_to_float(h);
}
uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float floatOfBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
const char* dtName(int32_t dt) {
  return dt == TGRT_F32 ? "f32" : dt == TGRT_BF16 ? "bf16" : dt == TGRT_F16 ? "f16" : "?";
}

/// A host tensor of one tgrt_dtype: float32 data in f, bf16 / f16 bit patterns in h.
struct Typed {
  int32_t dt;
  VecF f;
  std::vector<uint16_t> h;
  /// values rounded to dt (exact for f32).
  Typed(int32_t dtype, const VecF& values) : dt(dtype) {
    if (dt == TGRT_F32) {
      f = values;
    } else {
      h.resize(values.size());
      for (size_t i = 0; i < values.size(); ++i) h[i] = lowOf(dt, values[i]);
    }
  }
  size_t size() const { return dt == TGRT_F32 ? f.size() : h.size(); }
  void* data() { return dt == TGRT_F32 ? static_cast<void*>(f.data()) : h.data(); }
  const void* data() const {
    return dt == TGRT_F32 ? static_cast<const void*>(f.data()) : h.data();
  }
  /// Same dtype and the same bits (NaN payloads included).
  bool sameBits(const Typed& o) const {
    if (dt != o.dt || size() != o.size()) return false;
    return dt == TGRT_F32 ? std::memcmp(f.data(), o.f.data(), f.size() * sizeof(float)) == 0
                          : h == o.h;
  }
  /// The stored values, widened exactly to float.
  VecF widened() const {
    if (dt == TGRT_F32) return f;
    VecF w(h.size());
    for (size_t i = 0; i < h.size(); ++i) w[i] = widenOf(dt, h[i]);
    return w;
  }
};

/// n values uniform in [lo, hi) rounded to dt (so widened() is what the kernel sees).
Typed randTyped(int32_t dt, size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Typed(dt, randVec(n, seed, lo, hi));
}

/// Expects got to hold, bit for bit, want (f32 results) rounded to got.dt.
void expectRounded(const Typed& got, const VecF& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool eq = got.dt == TGRT_F32 ? bitsOf(got.f[i]) == bitsOf(want[i])
                                       : got.h[i] == lowOf(got.dt, want[i]);
    if (!eq && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << " (" << dtName(got.dt) << "): first mismatch at " << first
                     << ": got " << got.widened()[first] << " want round(" << want[first] << ")";
}

/// Expects two float vectors to be equal bit for bit.
void expectBitEqual(const VecF& got, const VecF& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
}

/// Fixture parameterised by the low-precision dtype (bf16, f16).
class CpuLow : public Cpu, public ::testing::WithParamInterface<int32_t> {};

std::string lowName(const ::testing::TestParamInfo<int32_t>& info) {
  return dtName(info.param);
}

TEST_P(CpuLow, EmbeddingAndPositionalMatchF32) {
  const int32_t dt = GetParam();
  const int64_t vocab = 7, d = 5, n = 12;
  const Typed table = randTyped(dt, vocab * d, 200);
  const std::vector<int32_t> ids = {3, 0, 6, 3, 3, 1, 6, 2, 0, 3, 3, 3};
  Typed out(dt, VecF(n * d, 9.0f));
  tgrt_embedding_fwd(ctx_, "wte", dt, table.data(), ids.data(), out.data(),
                     n, d, vocab);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) ASSERT_EQ(out.h[i * d + c], table.h[ids[i] * d + c]);

  // Backward: float sums, one rounding per element of dtable.
  Typed dout = randTyped(dt, n * d, 201);
  const VecF doutW = dout.widened();
  VecF dtable32(vocab * d);
  tgrt_embedding_bwd(ctx_, "wte", TGRT_F32, ids.data(), doutW.data(), dtable32.data(), n, d,
                     vocab);
  Typed dtable(dt, VecF(vocab * d, 123.0f));
  tgrt_embedding_bwd(ctx_, "wte", dt, ids.data(), dout.data(), dtable.data(), n, d, vocab);
  expectRounded(dtable, dtable32, "embedding_bwd");

  // Added into a table (tgrt_embedding_bwd_acc): bit-equal to the backward into a scratch
  // table and tgrt_accumulate; id 4 (and 5) never used: its row is not touched, even a NaN.
  Typed start = randTyped(dt, vocab * d, 204);
  Typed sum = start;
  Typed scratch(dt, VecF(vocab * d, 0.0f));
  tgrt_embedding_bwd(ctx_, "wte", dt, ids.data(), dout.data(), scratch.data(), n, d, vocab);
  tgrt_accumulate(ctx_, "wte", dt, sum.data(), scratch.data(), vocab * d);
  Typed nanRow = start;
  for (int64_t c = 0; c < d; ++c) nanRow.h[4 * d + c] = 0x7fc0; // a quiet NaN in bf16 and f16
  Typed viaAcc = nanRow;
  tgrt_embedding_bwd_acc(ctx_, "wte", dt, ids.data(), dout.data(), viaAcc.data(), n, d, vocab);
  for (int64_t i = 0; i < vocab * d; ++i) {
    if (i / d == 4) ASSERT_EQ(viaAcc.h[i], nanRow.h[i]) << "untouched row, element " << i;
    else ASSERT_EQ(viaAcc.h[i], sum.h[i]) << "element " << i;
  }

  const int64_t batch = 3, t = 4, context = 6;
  Typed x = randTyped(dt, batch * t * d, 202), wpe = randTyped(dt, context * d, 203);
  const VecF xW = x.widened(), wpeW = wpe.widened();
  VecF out32(batch * t * d);
  tgrt_positional_fwd(ctx_, "wpe", TGRT_F32, xW.data(), wpeW.data(), out32.data(), batch, t, d);
  Typed pos(dt, VecF(batch * t * d));
  tgrt_positional_fwd(ctx_, "wpe", dt, x.data(), wpe.data(), pos.data(), batch, t, d);
  expectRounded(pos, out32, "positional_fwd");
  VecF dwpe32(context * d);
  tgrt_positional_bwd(ctx_, "wpe", TGRT_F32, xW.data(), dwpe32.data(), batch, t, d, context);
  Typed dwpe(dt, VecF(context * d, 5.0f));
  tgrt_positional_bwd(ctx_, "wpe", dt, x.data(), dwpe.data(), batch, t, d, context);
  expectRounded(dwpe, dwpe32, "positional_bwd");
  EXPECT_EQ(dwpe.h[context * d - 1], 0u); // rows t.. are zero
}

TEST_P(CpuLow, ElementwiseMatchF32) {
  const int32_t dt = GetParam();
  const int64_t n = 301;
  Typed a = randTyped(dt, n, 210, -4.0f, 4.0f), b = randTyped(dt, n, 211, -4.0f, 4.0f);
  const VecF aW = a.widened(), bW = b.widened();
  VecF r32(n);

  tgrt_add(ctx_, "add", TGRT_F32, aW.data(), bW.data(), r32.data(), n);
  Typed r(dt, VecF(n));
  tgrt_add(ctx_, "add", dt, a.data(), b.data(), r.data(), n);
  expectRounded(r, r32, "add");
  Typed alias = a; // out aliases a
  tgrt_add(ctx_, "add", dt, alias.data(), b.data(), alias.data(), n);
  EXPECT_EQ(alias.h, r.h);

  Typed acc = a;
  tgrt_accumulate(ctx_, "acc", dt, acc.data(), b.data(), n);
  EXPECT_EQ(acc.h, r.h); // the same float add and rounding

  tgrt_fill(ctx_, "fill", dt, r.data(), n, 0.1f);
  for (uint16_t v : r.h) ASSERT_EQ(v, lowOf(dt, 0.1f));

  tgrt_gelu_fwd(ctx_, "gelu", TGRT_F32, aW.data(), r32.data(), n);
  tgrt_gelu_fwd(ctx_, "gelu", dt, a.data(), r.data(), n);
  expectRounded(r, r32, "gelu_fwd");
  tgrt_gelu_bwd(ctx_, "gelu", TGRT_F32, aW.data(), bW.data(), r32.data(), n);
  Typed dx = b; // dx aliases dy
  tgrt_gelu_bwd(ctx_, "gelu", dt, a.data(), dx.data(), dx.data(), n);
  expectRounded(dx, r32, "gelu_bwd");

  tgrt_set_step(ctx_, 4);
  tgrt_set_micro_batch(ctx_, 1);
  tgrt_dropout(ctx_, "drop", TGRT_F32, aW.data(), r32.data(), n, 0.3f, 99);
  tgrt_dropout(ctx_, "drop", dt, a.data(), r.data(), n, 0.3f, 99);
  expectRounded(r, r32, "dropout");
  tgrt_dropout(ctx_, "drop", dt, a.data(), r.data(), n, 0.0f, 99);
  EXPECT_EQ(r.h, a.h);

  const int64_t rows = 7, cols = 43; // 301 = 7 x 43
  tgrt_bias_add(ctx_, "b", TGRT_F32, aW.data(), bW.data(), r32.data(), rows, cols);
  tgrt_bias_add(ctx_, "b", dt, a.data(), b.data(), r.data(), rows, cols);
  expectRounded(r, r32, "bias_add");
  VecF db32(cols);
  tgrt_bias_grad(ctx_, "b", TGRT_F32, aW.data(), db32.data(), rows, cols);
  Typed db(dt, VecF(cols, 7.0f));
  tgrt_bias_grad(ctx_, "b", dt, a.data(), db.data(), rows, cols);
  expectRounded(db, db32, "bias_grad");

  // Pure data movement: the bit patterns are copied.
  Typed c2(dt, VecF(n, 3.0f));
  tgrt_copy2d(ctx_, "copy", dt, static_cast<uint16_t*>(a.data()) + 1, cols,
              static_cast<uint16_t*>(c2.data()) + 2, cols, rows - 1, cols - 3);
  for (int64_t rr = 0; rr < rows - 1; ++rr)
    for (int64_t c = 0; c < cols - 3; ++c)
      ASSERT_EQ(c2.h[rr * cols + 2 + c], a.h[rr * cols + 1 + c]);
  EXPECT_EQ(c2.h[0], lowOf(dt, 3.0f));
  VecF t32(n);
  tgrt_transpose4(ctx_, "t", TGRT_F32, aW.data(), t32.data(), 1, 7, 43, 1, 0, 2, 1, 3);
  tgrt_transpose4(ctx_, "t", dt, a.data(), r.data(), 1, 7, 43, 1, 0, 2, 1, 3);
  expectRounded(r, t32, "transpose4");

  // Causal mask: kept scores are copied, masked_value is rounded to dt.
  const int64_t batch = 1, tq = 7, tk = 43;
  tgrt_causal_mask(ctx_, "mask", TGRT_F32, aW.data(), r32.data(), batch, tq, tk, 5, -1e4f);
  tgrt_causal_mask(ctx_, "mask", dt, a.data(), r.data(), batch, tq, tk, 5, -1e4f);
  expectRounded(r, r32, "causal_mask");
  Typed inplace = a;
  tgrt_causal_mask(ctx_, "mask", dt, inplace.data(), inplace.data(), batch, tq, tk, 5, -1e4f);
  EXPECT_EQ(inplace.h, r.h);
}

TEST_P(CpuLow, LayerNormMatchesF32ForEveryDtypeMix) {
  const int32_t lo = GetParam();
  const int64_t rows = 5, d = 24;
  const float eps = 1e-5f;
  // (x_dt, p_dt, y_dt): all low; the mixed-precision case (f32 residual stream and
  // parameters, low-precision y); low x with f32 parameters and y.
  const int32_t mixes[3][3] = {{lo, lo, lo}, {TGRT_F32, TGRT_F32, lo}, {lo, TGRT_F32, TGRT_F32}};
  for (const auto& mix : mixes) {
    const int32_t xdt = mix[0], pdt = mix[1], ydt = mix[2];
    const std::string name = std::string("x ") + dtName(xdt) + " p " + dtName(pdt) + " y " +
                             dtName(ydt);
    Typed x = randTyped(xdt, rows * d, 220, -2.0f, 3.0f),
          gamma = randTyped(pdt, d, 221, 0.5f, 1.5f), beta = randTyped(pdt, d, 222);
    const VecF xW = x.widened(), gW = gamma.widened(), bW = beta.widened();
    VecF y32(rows * d), mean32(rows), rstd32(rows);
    tgrt_layer_norm_fwd(ctx_, "ln", TGRT_F32, xW.data(), TGRT_F32, gW.data(), bW.data(),
                        TGRT_F32, y32.data(), mean32.data(), rstd32.data(), rows, d, eps);
    Typed y(ydt, VecF(rows * d));
    VecF mean(rows), rstd(rows);
    tgrt_layer_norm_fwd(ctx_, "ln", xdt, x.data(), pdt, gamma.data(), beta.data(), ydt,
                        y.data(), mean.data(), rstd.data(), rows, d, eps);
    expectRounded(y, y32, "layer_norm_fwd y, " + name);
    expectBitEqual(mean, mean32, "mean, " + name);
    expectBitEqual(rstd, rstd32, "rstd, " + name);

    // Backward: dy in y_dt, dx in x_dt, dgamma / dbeta in p_dt.
    Typed dy = randTyped(ydt, rows * d, 223);
    const VecF dyW = dy.widened();
    VecF dx32(rows * d), dg32(d), db32(d);
    tgrt_layer_norm_bwd(ctx_, "ln", TGRT_F32, dyW.data(), TGRT_F32, xW.data(), TGRT_F32,
                        gW.data(), mean32.data(), rstd32.data(), dx32.data(), dg32.data(),
                        db32.data(), rows, d);
    Typed dx(xdt, VecF(rows * d)), dg(pdt, VecF(d, 5.0f)), db(pdt, VecF(d, 5.0f));
    tgrt_layer_norm_bwd(ctx_, "ln", ydt, dy.data(), xdt, x.data(), pdt, gamma.data(),
                        mean.data(), rstd.data(), dx.data(), dg.data(), db.data(), rows, d);
    expectRounded(dx, dx32, "layer_norm_bwd dx, " + name);
    expectRounded(dg, dg32, "layer_norm_bwd dgamma, " + name);
    expectRounded(db, db32, "layer_norm_bwd dbeta, " + name);
  }
}

TEST_P(CpuLow, SoftmaxMatchesF32) {
  const int32_t dt = GetParam();
  const int64_t rows = 4, n = 9;
  VecF xv = randVec(rows * n, 230, -3.0f, 3.0f);
  xv[1 * n + 2] = -kInf;                             // a masked entry
  for (int64_t c = 0; c < n; ++c) xv[3 * n + c] = -kInf; // a fully masked row
  Typed x(dt, xv);
  const VecF xW = x.widened();
  VecF y32(rows * n);
  tgrt_softmax_fwd(ctx_, "sm", TGRT_F32, xW.data(), y32.data(), rows, n);
  Typed y(dt, VecF(rows * n, 5.0f));
  tgrt_softmax_fwd(ctx_, "sm", dt, x.data(), y.data(), rows, n);
  expectRounded(y, y32, "softmax_fwd");
  EXPECT_EQ(y.h[3 * n], 0u);

  const Typed yb = randTyped(dt, rows * n, 231, 0.0f, 0.3f);
  Typed dy = randTyped(dt, rows * n, 232);
  const VecF ybW = yb.widened(), dyW = dy.widened();
  VecF dx32(rows * n);
  tgrt_softmax_bwd(ctx_, "sm", TGRT_F32, ybW.data(), dyW.data(), dx32.data(), rows, n);
  tgrt_softmax_bwd(ctx_, "sm", dt, yb.data(), dy.data(), dy.data(), rows,
                   n); // dx aliases dy
  expectRounded(dy, dx32, "softmax_bwd");
}

TEST_P(CpuLow, MatmulMatchesF32) {
  const int32_t dt = GetParam();
  const int64_t batch = 3, m = 5, n = 7, k = 6;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (float beta : {0.0f, 0.5f}) {
        const std::string name = "ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                                 " beta=" + std::to_string(beta);
        // Padded A and C strides; B broadcast (stride 0) when tb.
        const int64_t sa = m * k + 3, sb = tb ? 0 : k * n, sc = m * n + 2;
        Typed a = randTyped(dt, batch * sa, 240 + ta), b = randTyped(dt, batch * k * n, 242 + tb);
        Typed c = randTyped(dt, batch * sc, 244, -2.0f, 2.0f);
        const VecF aW = a.widened(), bW = b.widened();
        VecF c32 = c.widened();
        tgrt_matmul(ctx_, "mm", TGRT_F32, aW.data(), bW.data(), c32.data(), batch, m, n, k, ta,
                    tb, sa, sb, sc, 0.7f, beta);
        const Typed c0 = c;
        tgrt_matmul(ctx_, "mm", dt, a.data(), b.data(), c.data(), batch, m, n, k, ta, tb, sa, sb,
                    sc, 0.7f, beta);
        expectRounded(c, c32, "matmul " + name);
        EXPECT_EQ(c.h[m * n], c0.h[m * n]) << "padding between batch entries untouched";
      }
  // beta = 0 ignores NaN in C; k = 0 gives C = beta C.
  Typed a = randTyped(dt, 6, 246), b = randTyped(dt, 6, 247);
  Typed c(dt, VecF(4, std::nanf("")));
  tgrt_matmul(ctx_, "mm", dt, a.data(), b.data(), c.data(), 1, 2, 2, 3, 0, 0, 0, 0, 0, 1.0f,
              0.0f);
  for (float v : c.widened()) EXPECT_FALSE(std::isnan(v));
  Typed c1(dt, VecF{3.0f, -5.0f});
  tgrt_matmul(ctx_, "mm", dt, nullptr, nullptr, c1.data(), 1, 1, 2, 0, 0, 0, 0, 0, 0, 1.0f,
              0.25f);
  EXPECT_EQ(c1.widened(), (VecF{0.75f, -1.25f}));
}

TEST_P(CpuLow, MatmulBiasAndBiasGeluMatchF32) {
  const int32_t dt = GetParam();
  const int64_t m = 6, n = 10, k = 12;
  for (int tb = 0; tb < 2; ++tb) {
    const std::string name = "tb=" + std::to_string(tb);
    Typed a = randTyped(dt, m * k, 250, -2.0f, 2.0f), b = randTyped(dt, k * n, 251, -2.0f, 2.0f),
          bias = randTyped(dt, n, 252);
    const VecF aW = a.widened(), bW = b.widened(), biasW = bias.widened();
    // f32 reference: the GEMM and the bias add in float, one rounding.
    VecF c32(m * n);
    tgrt_matmul_bias(ctx_, "lin", TGRT_F32, aW.data(), bW.data(), biasW.data(), c32.data(), m, n,
                     k, 0, tb, 0.5f);
    Typed c(dt, VecF(m * n));
    tgrt_matmul_bias(ctx_, "lin", dt, a.data(), b.data(), bias.data(), c.data(), m, n, k, 0, tb,
                     0.5f);
    expectRounded(c, c32, "matmul_bias " + name);

    // Fused up-projection: pre as matmul_bias; out = GELU of the rounded pre.
    Typed pre(dt, VecF(m * n)), out(dt, VecF(m * n));
    tgrt_matmul_bias_gelu(ctx_, "mlp", dt, a.data(), b.data(), bias.data(), pre.data(),
                          out.data(), m, n, k, 0, tb, 0.5f);
    EXPECT_EQ(pre.h, c.h) << name;
    Typed unfused(dt, VecF(m * n));
    tgrt_gelu_fwd(ctx_, "gelu", dt, c.data(), unfused.data(), m * n);
    EXPECT_EQ(out.h, unfused.h) << name;
    const VecF preW = pre.widened();
    VecF g32(m * n);
    tgrt_gelu_fwd(ctx_, "gelu", TGRT_F32, preW.data(), g32.data(), m * n);
    expectRounded(out, g32, "matmul_bias_gelu out " + name);
  }
}

TEST_P(CpuLow, CrossEntropyMatchesF32) {
  const int32_t dt = GetParam();
  const int64_t rows = 6, vocab = 11, ignore = -100;
  Typed z = randTyped(dt, rows * vocab, 260, -4.0f, 4.0f);
  const VecF zW = z.widened();
  const std::vector<int32_t> t = {3, -100, 0, 10, -100, 7};
  float loss32 = -1.0f, loss = -2.0f;
  tgrt_cross_entropy_fwd(ctx_, "ce", TGRT_F32, zW.data(), t.data(), &loss32, rows, vocab, ignore);
  tgrt_cross_entropy_fwd(ctx_, "ce", dt, z.data(), t.data(), &loss, rows, vocab, ignore);
  EXPECT_EQ(bitsOf(loss), bitsOf(loss32)); // loss is float32 either way

  const float dloss = 1.7f;
  VecF dz32(rows * vocab);
  tgrt_cross_entropy_bwd(ctx_, "ce", TGRT_F32, zW.data(), t.data(), &dloss, dz32.data(), rows,
                         vocab, ignore);
  Typed dz(dt, VecF(rows * vocab, 9.0f));
  tgrt_cross_entropy_bwd(ctx_, "ce", dt, z.data(), t.data(), &dloss, dz.data(), rows, vocab,
                         ignore);
  expectRounded(dz, dz32, "cross_entropy_bwd");
  Typed inplace = z; // dlogits == logits
  tgrt_cross_entropy_bwd(ctx_, "ce", dt, inplace.data(), t.data(), &dloss, inplace.data(), rows,
                         vocab, ignore);
  EXPECT_EQ(inplace.h, dz.h);
}

TEST_P(CpuLow, AttentionMatchesF32) {
  const int32_t dt = GetParam();
  const int64_t bh = 2, t = 9, hd = 8, n = bh * t * hd;
  const float scale = 1.0f / std::sqrt((float)hd);
  Typed q = randTyped(dt, n, 270, -2.0f, 2.0f), k = randTyped(dt, n, 271, -2.0f, 2.0f),
        v = randTyped(dt, n, 272), w = randTyped(dt, n, 273);
  const VecF qW = q.widened(), kW = k.widened(), vW = v.widened(), wW = w.widened();
  for (AttnCase ac :
       {AttnCase{false, 0}, AttnCase{true, 0}, AttnCase{true, 3}, AttnCase{true, 1}}) {
    const std::string name =
        "causal=" + std::to_string(ac.causal) + " window=" + std::to_string(ac.window);
    VecF out32(n), lse32(bh * t), lse(bh * t);
    tgrt_attention_fwd(ctx_, "attn", TGRT_F32, qW.data(), kW.data(), vW.data(), out32.data(),
                       lse32.data(), ATTN_CONTIG(bh, t, hd), ac.causal, ac.window, scale);
    Typed out(dt, VecF(n));
    tgrt_attention_fwd(ctx_, "attn", dt, q.data(), k.data(), v.data(), out.data(), lse.data(),
                       ATTN_CONTIG(bh, t, hd), ac.causal, ac.window, scale);
    expectRounded(out, out32, "attention_fwd out " + name);
    expectBitEqual(lse, lse32, "attention_fwd lse " + name);

    // Backward on the low-precision forward output (what a low-precision model keeps).
    const VecF outW = out.widened();
    VecF dq32(n), dk32(n), dv32(n);
    tgrt_attention_bwd(ctx_, "attn", TGRT_F32, qW.data(), kW.data(), vW.data(), outW.data(),
                       lse.data(), wW.data(), dq32.data(), dk32.data(), dv32.data(),
                       ATTN_CONTIG(bh, t, hd), ac.causal, ac.window, scale);
    Typed dq(dt, VecF(n, kInf)), dk(dt, VecF(n, kInf)), dv(dt, VecF(n, kInf));
    tgrt_attention_bwd(ctx_, "attn", dt, q.data(), k.data(), v.data(), out.data(), lse.data(),
                       w.data(), dq.data(), dk.data(), dv.data(), ATTN_CONTIG(bh, t, hd), ac.causal,
                       ac.window, scale);
    expectRounded(dq, dq32, "attention_bwd dq " + name);
    expectRounded(dk, dk32, "attention_bwd dk " + name);
    expectRounded(dv, dv32, "attention_bwd dv " + name);
  }
}

TEST_P(CpuLow, GradNormSqMatchesF32) {
  const int32_t dt = GetParam();
  Typed g = randTyped(dt, 257, 280, -3.0f, 3.0f);
  const VecF gW = g.widened();
  float acc32[2] = {2.0f, 0.0f}, acc[2] = {2.0f, 0.0f};
  tgrt_grad_norm_sq(ctx_, "norm", TGRT_F32, gW.data(), (int64_t)gW.size(), acc32);
  tgrt_grad_norm_sq(ctx_, "norm", dt, g.data(), (int64_t)g.size(), acc);
  EXPECT_EQ(bitsOf(acc[0]), bitsOf(acc32[0]));
}

TEST_P(CpuLow, AdamWMatchesF32Rounded) {
  const int32_t lo = GetParam();
  const int64_t n = 200;
  const float clip[2] = {0.0f, 0.25f};
  // (p_dt, state_dt): all low (pure bf16 / f16); low params with f32 state; f32 params
  // (master weights) with low state.
  const int32_t mixes[3][2] = {{lo, lo}, {lo, TGRT_F32}, {TGRT_F32, lo}};
  for (const auto& mix : mixes) {
    const int32_t pdt = mix[0], sdt = mix[1];
    const std::string name = std::string("p ") + dtName(pdt) + " state " + dtName(sdt);
    Typed p = randTyped(pdt, n, 290), g = randTyped(pdt, n, 291),
          m = randTyped(sdt, n, 292, -0.1f, 0.1f), v = randTyped(sdt, n, 293, 0.0f, 0.1f);
    VecF p32 = p.widened(), m32 = m.widened(), v32 = v.widened();
    const VecF g32 = g.widened();
    tgrt_set_lr(ctx_, 3e-2f);
    for (int64_t step = 1; step <= 3; ++step) {
      tgrt_set_step(ctx_, step);
      tgrt_adamw(ctx_, "opt", TGRT_F32, p32.data(), g32.data(), TGRT_F32, m32.data(), v32.data(),
                 n, 0.9f, 0.95f, 1e-8f, 0.1f, clip);
      tgrt_adamw(ctx_, "opt", pdt, p.data(), g.data(), sdt, m.data(), v.data(), n, 0.9f, 0.95f,
                 1e-8f, 0.1f, clip);
      const std::string what = name + " step " + std::to_string(step);
      expectRounded(p, p32, "adamw p, " + what);
      expectRounded(m, m32, "adamw m, " + what);
      expectRounded(v, v32, "adamw v, " + what);
      // Continue the f32 reference from the stored (rounded) state, as the kernel does.
      p32 = p.widened();
      m32 = m.widened();
      v32 = v.widened();
    }
  }
}

TEST_P(CpuLow, FillLossScaled) {
  const int32_t dt = GetParam();
  Typed out(dt, VecF(5, 0.0f));
  tgrt_fill_loss_scaled(ctx_, "seed", dt, out.data(), 5, 0.3f); // default scale 1
  for (uint16_t v : out.h) EXPECT_EQ(v, lowOf(dt, 0.3f));
  tgrt_set_loss_scale(ctx_, 1024.0f);
  tgrt_fill_loss_scaled(ctx_, "seed", dt, out.data(), 4, 0.3f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.h[i], lowOf(dt, 0.3f * 1024.0f));
  EXPECT_EQ(out.h[4], lowOf(dt, 0.3f)); // only n written
  tgrt_set_loss_scale(ctx_, 65536.0f);
  tgrt_fill_loss_scaled(ctx_, "seed", dt, out.data(), 1, 2.0f);
  // 131072 overflows f16 (max 65504) to +inf; bf16 holds it exactly.
  EXPECT_EQ(out.widened()[0], dt == TGRT_F16 ? kInf : 131072.0f);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuLow, ::testing::Values(TGRT_BF16, TGRT_F16), lowName);

// --------------------------------------------------- attention, strided layouts --

class CpuAttnLayout : public Cpu, public ::testing::WithParamInterface<int32_t> {};

/// The bits of element i of a Typed buffer (f32: 32 bits, bf16 / f16: 16 bits).
uint32_t elemBits(const Typed& x, int64_t i) {
  return x.dt == TGRT_F32 ? bitsOf(x.f[(size_t)i]) : (uint32_t)x.h[(size_t)i];
}
void setElemBits(Typed& x, int64_t i, uint32_t bits) {
  if (x.dt == TGRT_F32)
    std::memcpy(&x.f[(size_t)i], &bits, 4);
  else
    x.h[(size_t)i] = (uint16_t)bits;
}
/// A buffer of n elements of dt, every one holding the guard bit pattern (a NaN).
Typed guardBuffer(int32_t dt, int64_t n) {
  Typed x(dt, VecF((size_t)n));
  for (int64_t i = 0; i < n; ++i)
    setElemBits(x, i, dt == TGRT_F32 ? 0x7fc0beefu : 0x7e5bu);
  return x;
}
/// Pointer to element `off` of x.
void* elemPtr(Typed& x, int64_t off) {
  return static_cast<char*>(x.data()) + off * (x.dt == TGRT_F32 ? 4 : 2);
}

// q, k, v as views into one packed projection output [B, T, 3, H, hd] (optionally with
// padding after each row and each batch), out / dout [B, T, H, hd] (optionally padded), dq,
// dk, dv written into one packed gradient buffer: every result equals, bit for bit, the
// contiguous [B, H, T, hd] result, and no element outside the outputs' own is touched.
TEST_P(CpuAttnLayout, PackedLayoutMatchesContiguousBitForBit) {
  const int32_t dt = GetParam();
  const int64_t B = 2, H = 3, T = 9, hd = 8, bh = B * H, n = bh * T * hd;
  const float scale = 1.0f / std::sqrt((float)hd);
  const Typed q = randTyped(dt, n, 300, -2.0f, 2.0f), k = randTyped(dt, n, 301, -2.0f, 2.0f),
              v = randTyped(dt, n, 302), w = randTyped(dt, n, 303);
  // Contiguous index of (b, h, i, j).
  auto ci = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    return ((b * H + h) * T + i) * hd + j;
  };
  for (const int64_t pad : {(int64_t)0, (int64_t)8}) {
    // in strides: packed [B, T, 3, H, hd] with pad elements after each row / batch.
    const int64_t ist = 3 * H * hd + pad, ish = hd, isb = T * ist + 2 * pad;
    const int64_t ost = H * hd + pad, osh = hd, osb = T * ost + pad;
    const int64_t nIn = B * isb, nOut = B * osb;
    for (AttnCase ac : {AttnCase{false, 0}, AttnCase{true, 0}, AttnCase{true, 3}}) {
      const std::string name = std::string(dtName(dt)) + " pad=" + std::to_string(pad) +
                               " causal=" + std::to_string(ac.causal) +
                               " window=" + std::to_string(ac.window);
      // Contiguous reference.
      Typed outC(dt, VecF(n));
      VecF lseC(bh * T);
      tgrt_attention_fwd(ctx_, "attn", dt, q.data(), k.data(), v.data(), outC.data(), lseC.data(),
                         ATTN_CONTIG(bh, T, hd), ac.causal, ac.window, scale);
      Typed dqC(dt, VecF(n)), dkC(dt, VecF(n)), dvC(dt, VecF(n));
      tgrt_attention_bwd(ctx_, "attn", dt, q.data(), k.data(), v.data(), outC.data(), lseC.data(),
                         w.data(), dqC.data(), dkC.data(), dvC.data(), ATTN_CONTIG(bh, T, hd),
                         ac.causal, ac.window, scale);

      // Packed operands; guard values everywhere else.
      Typed qkv = guardBuffer(dt, nIn), dout = guardBuffer(dt, nOut);
      std::vector<bool> inOwned((size_t)nIn, false), outOwned((size_t)nOut, false);
      // f(pi, po, c) for every element: its packed qkv offset (q part), its out offset and
      // its contiguous index.
      auto forEachElement = [&](auto f) {
        for (int64_t b = 0; b < B; ++b)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i)
              for (int64_t j = 0; j < hd; ++j)
                f(b * isb + h * ish + i * ist + j, b * osb + h * osh + i * ost + j,
                  ci(b, h, i, j));
      };
      forEachElement([&](int64_t pi, int64_t po, int64_t c) {
        setElemBits(qkv, pi, elemBits(q, c));
        setElemBits(qkv, pi + H * hd, elemBits(k, c));
        setElemBits(qkv, pi + 2 * H * hd, elemBits(v, c));
        setElemBits(dout, po, elemBits(w, c));
        inOwned[(size_t)pi] = inOwned[(size_t)(pi + H * hd)] = inOwned[(size_t)(pi + 2 * H * hd)] =
            true;
        outOwned[(size_t)po] = true;
      });
      const Typed qkv0 = qkv;
      Typed out = guardBuffer(dt, nOut), dqkv = guardBuffer(dt, nIn);
      VecF lse(bh * T, 7.0f);
      tgrt_attention_fwd(ctx_, "attn", dt, elemPtr(qkv, 0), elemPtr(qkv, H * hd),
                         elemPtr(qkv, 2 * H * hd), out.data(), lse.data(), B, H, T, hd, isb, ish,
                         ist, osb, osh, ost, ac.causal, ac.window, scale);
      tgrt_attention_bwd(ctx_, "attn", dt, elemPtr(qkv, 0), elemPtr(qkv, H * hd),
                         elemPtr(qkv, 2 * H * hd), out.data(), lse.data(), dout.data(),
                         elemPtr(dqkv, 0), elemPtr(dqkv, H * hd), elemPtr(dqkv, 2 * H * hd), B, H,
                         T, hd, isb, ish, ist, osb, osh, ost, ac.causal, ac.window, scale);
      expectBitEqual(lse, lseC, "lse " + name);
      EXPECT_TRUE(qkv.sameBits(qkv0)) << "qkv modified " << name;
      int64_t bad = 0;
      forEachElement([&](int64_t pi, int64_t po, int64_t c) {
        bad += elemBits(out, po) != elemBits(outC, c);
        bad += elemBits(dqkv, pi) != elemBits(dqC, c);
        bad += elemBits(dqkv, pi + H * hd) != elemBits(dkC, c);
        bad += elemBits(dqkv, pi + 2 * H * hd) != elemBits(dvC, c);
      });
      EXPECT_EQ(bad, 0) << "packed results differ from contiguous: " << name;
      const Typed guardIn = guardBuffer(dt, nIn), guardOut = guardBuffer(dt, nOut);
      int64_t touched = 0, ownedIn = 0;
      for (int64_t x = 0; x < nIn; ++x) {
        ownedIn += inOwned[(size_t)x];
        if (!inOwned[(size_t)x])
          touched += elemBits(dqkv, x) != elemBits(guardIn, x);
      }
      for (int64_t x = 0; x < nOut; ++x)
        if (!outOwned[(size_t)x])
          touched += elemBits(out, x) != elemBits(guardOut, x);
      EXPECT_EQ(touched, 0) << "padding elements written: " << name;
      EXPECT_EQ(ownedIn, 3 * n) << name;
      if (pad == 0) { // fully packed: no gaps
        EXPECT_EQ(ownedIn, nIn) << name;
      }
    }
  }
}

// The same problem with in and out in distinct non-contiguous layouts: heads outermost with
// padded rows for q, k, v (separate buffers) and batch-interleaved out; checks the layouts are
// independent (the in strides apply to dq, dk, dv, the out strides to out and dout).
TEST_P(CpuAttnLayout, DistinctInAndOutLayouts) {
  const int32_t dt = GetParam();
  const int64_t B = 2, H = 2, T = 5, hd = 4, bh = B * H, n = bh * T * hd;
  const float scale = 0.7f;
  const Typed q = randTyped(dt, n, 310, -2.0f, 2.0f), k = randTyped(dt, n, 311, -2.0f, 2.0f),
              v = randTyped(dt, n, 312), w = randTyped(dt, n, 313);
  auto ci = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    return ((b * H + h) * T + i) * hd + j;
  };
  // in: [H, B, T, hd + 4]; out: [T, B, H, hd].
  const int64_t ist = hd + 4, isb = T * ist, ish = B * isb, nIn = H * ish;
  const int64_t osh = hd, osb = H * hd, ost = B * H * hd, nOut = T * ost;
  Typed outC(dt, VecF(n));
  VecF lseC(bh * T);
  tgrt_attention_fwd(ctx_, "attn", dt, q.data(), k.data(), v.data(), outC.data(), lseC.data(),
                     ATTN_CONTIG(bh, T, hd), 1, 0, scale);
  Typed dqC(dt, VecF(n)), dkC(dt, VecF(n)), dvC(dt, VecF(n));
  tgrt_attention_bwd(ctx_, "attn", dt, q.data(), k.data(), v.data(), outC.data(), lseC.data(),
                     w.data(), dqC.data(), dkC.data(), dvC.data(), ATTN_CONTIG(bh, T, hd), 1, 0,
                     scale);
  Typed qs = guardBuffer(dt, nIn), ks = guardBuffer(dt, nIn), vs = guardBuffer(dt, nIn),
        dos = guardBuffer(dt, nOut);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < hd; ++j) {
          const int64_t pi = b * isb + h * ish + i * ist + j, po = b * osb + h * osh + i * ost + j;
          setElemBits(qs, pi, elemBits(q, ci(b, h, i, j)));
          setElemBits(ks, pi, elemBits(k, ci(b, h, i, j)));
          setElemBits(vs, pi, elemBits(v, ci(b, h, i, j)));
          setElemBits(dos, po, elemBits(w, ci(b, h, i, j)));
        }
  Typed out = guardBuffer(dt, nOut), dq = guardBuffer(dt, nIn), dk = guardBuffer(dt, nIn),
        dv = guardBuffer(dt, nIn);
  VecF lse(bh * T);
  tgrt_attention_fwd(ctx_, "attn", dt, qs.data(), ks.data(), vs.data(), out.data(), lse.data(), B,
                     H, T, hd, isb, ish, ist, osb, osh, ost, 1, 0, scale);
  tgrt_attention_bwd(ctx_, "attn", dt, qs.data(), ks.data(), vs.data(), out.data(), lse.data(),
                     dos.data(), dq.data(), dk.data(), dv.data(), B, H, T, hd, isb, ish, ist, osb,
                     osh, ost, 1, 0, scale);
  expectBitEqual(lse, lseC, "lse");
  const Typed guard = guardBuffer(dt, nIn);
  int64_t bad = 0, touched = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < hd + 4; ++j) {
          const int64_t pi = b * isb + h * ish + i * ist + j, po = b * osb + h * osh + i * ost + j;
          if (j >= hd) { // row padding of dq, dk, dv
            touched += elemBits(dq, pi) != elemBits(guard, pi);
            touched += elemBits(dk, pi) != elemBits(guard, pi);
            touched += elemBits(dv, pi) != elemBits(guard, pi);
            continue;
          }
          const int64_t c = ci(b, h, i, j);
          bad += elemBits(out, po) != elemBits(outC, c);
          bad += elemBits(dq, pi) != elemBits(dqC, c);
          bad += elemBits(dk, pi) != elemBits(dkC, c);
          bad += elemBits(dv, pi) != elemBits(dvC, c);
        }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(touched, 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuAttnLayout, ::testing::Values(TGRT_F32, TGRT_BF16, TGRT_F16),
                         lowName);

TEST(F16, RoundingRoundTrip) {
  // Every f16 bit pattern widens exactly and rounds back to itself (NaN stays NaN).
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = tgrt_f16_to_float((uint16_t)h);
    const bool nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    EXPECT_EQ(std::isnan(f), nan) << h;
    if (nan)
      EXPECT_TRUE(std::isnan(tgrt_f16_to_float(tgrt_f16_from_float(f)))) << h;
    else
      ASSERT_EQ(tgrt_f16_from_float(f), (uint16_t)h) << h;
  }
  EXPECT_EQ(tgrt_f16_to_float(0x3c00u), 1.0f);
  EXPECT_EQ(tgrt_f16_to_float(0x7bffu), 65504.0f);
  EXPECT_EQ(tgrt_f16_to_float(0x0001u), 0x1p-24f); // smallest subnormal
  EXPECT_EQ(tgrt_f16_to_float(0x03ffu), 1023 * 0x1p-24f);
  EXPECT_EQ(tgrt_f16_to_float(0x8000u), 0.0f);
  EXPECT_TRUE(std::signbit(tgrt_f16_to_float(0x8000u)));
}

/// tgrt_bias_grad_acc: a bf16 / f16 / f32 dy's column sums added to an f32 slot, against
/// double sums of the widened dy; rows == 0 leaves the slot as it was.
TEST_F(Cpu, BiasGradAccAddsColumnSumsIntoTheSlot) {
  const int64_t rows = 37, n = 11;
  for (int32_t dt : {TGRT_F32, TGRT_BF16, TGRT_F16}) {
    const Typed dy = randTyped(dt, (size_t)(rows * n), 71);
    const VecF g = dy.widened(), slot0 = randVec(n, 72);
    VecF slot = slot0;
    tgrt_bias_grad_acc(ctx_, "b", dt, dy.data(), TGRT_F32, slot.data(), rows, n);
    VecD want(n);
    for (int64_t c = 0; c < n; ++c) {
      want[c] = slot0[c];
      for (int64_t r = 0; r < rows; ++r) want[c] += g[r * n + c];
    }
    expectClose(slot, want, 1e-6, 1e-6, std::string("bias_grad_acc ") + dtName(dt));
    VecF same = slot;
    tgrt_bias_grad_acc(ctx_, "b", dt, dy.data(), TGRT_F32, slot.data(), 0, n);
    EXPECT_EQ(slot, same);
  }
}

/// tgrt_matmul_bias_residual: out = res + (A B + bias) from bf16 A, B and f32 bias, res,
/// against double sums of the widened operands; in place (out = res) gives the same bits.
TEST_F(Cpu, MatmulBiasResidualAddsTheLinearLayerToTheStream) {
  const int64_t m = 6, n = 5, k = 7;
  const Typed a = randTyped(TGRT_BF16, (size_t)(m * k), 81), b = randTyped(TGRT_BF16, (size_t)(k * n), 82);
  const VecF aw = a.widened(), bw = b.widened(), bias = randVec(n, 83), res = randVec(m * n, 84);
  VecF out(m * n, NAN);
  tgrt_matmul_bias_residual(ctx_, "proj", TGRT_BF16, a.data(), b.data(), TGRT_F32, bias.data(),
                            res.data(), out.data(), m, n, k, 0, 0, 1.0f);
  VecD want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) s += (double)aw[i * k + p] * bw[p * n + j];
      want[i * n + j] = s + bias[j] + res[i * n + j];
    }
  expectClose(out, want, 1e-6, 1e-6, "matmul_bias_residual");
  VecF inplace = res;
  tgrt_matmul_bias_residual(ctx_, "proj", TGRT_BF16, a.data(), b.data(), TGRT_F32, bias.data(),
                            inplace.data(), inplace.data(), m, n, k, 0, 0, 1.0f);
  EXPECT_EQ(inplace, out);
}

/// tgrt_matmul_wgrad: the weight gradient written (NaN before: C is not read) as the float64
/// x^T dy, and the bias gradient, the column sums of dy, from the same call; bf16 operands
/// into f32 slots and f32 throughout. A bias gradient with trans_b = 1 is refused.
TEST_F(Cpu, WeightGradientWritesItsSlotAndTheBiasGradient) {
  const int64_t k = 9, m = 5, n = 7; // x [k, m], dy [k, n] -> dW [m, n], db [n]
  for (int32_t dt : {TGRT_BF16, TGRT_F32}) {
    const Typed x = randTyped(dt, (size_t)(k * m), 71), dy = randTyped(dt, (size_t)(k * n), 72);
    const VecF xw = x.widened(), dyw = dy.widened();
    VecF dw(m * n, NAN), db(n, NAN);
    tgrt_matmul_wgrad(ctx_, "fc", dt, x.data(), dy.data(), TGRT_F32, dw.data(), m, n, k, 1, 0,
                      1.0f, db.data());
    VecD wantW(m * n, 0.0), wantB(n, 0.0);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) {
        wantB[j] += dyw[p * n + j];
        for (int64_t i = 0; i < m; ++i) wantW[i * n + j] += (double)xw[p * m + i] * dyw[p * n + j];
      }
    expectClose(dw, wantW, 1e-6, 1e-5, std::string("matmul_wgrad dW ") + dtName(dt));
    expectClose(db, wantB, 1e-6, 1e-5, std::string("matmul_wgrad db ") + dtName(dt));
    VecF dwOnly(m * n, NAN); // no bias: C alone
    tgrt_matmul_wgrad(ctx_, "fc", dt, x.data(), dy.data(), TGRT_F32, dwOnly.data(), m, n, k, 1, 0,
                      1.0f, nullptr);
    EXPECT_EQ(dwOnly, dw) << dtName(dt);
  }
  VecF a(k * m, 0.0f), b(k * n, 0.0f), c(m * n), db(n);
  EXPECT_EXIT(tgrt_matmul_wgrad(ctx_, "fc", TGRT_F32, a.data(), b.data(), TGRT_F32, c.data(), m,
                                n, k, 1, 1, 1.0f, db.data()),
              ::testing::ExitedWithCode(1),
              "tgrt: fc: matmul_wgrad: a bias gradient needs trans_b = 0");
}

/// tgrt_linear_cross_entropy in chunks of 3 rows (11 rows: chunks 3, 3, 3, 2; two ignored
/// targets) against the unfused calls it replaces, tgrt_matmul + tgrt_cross_entropy_fwd_bwd
/// + tgrt_matmul + tgrt_matmul_acc: the loss, dx and dw (added onto its old value) within
/// the storage type's rounding; bf16 operands with an f32 dw, and f32 throughout.
TEST_F(Cpu, LinearCrossEntropyInChunksEqualsTheUnfusedCalls) {
  const int64_t rows = 11, d = 6, vocab = 13, chunk = 3;
  std::vector<int32_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = (int32_t)((r * 5) % vocab);
  targets[4] = targets[9] = -1; // ignored
  for (int32_t dt : {TGRT_BF16, TGRT_F32}) {
    const Typed x = randTyped(dt, (size_t)(rows * d), 91), w = randTyped(dt, (size_t)(vocab * d), 92);
    const VecF dw0 = randVec(vocab * d, 93);
    const float dloss = 0.75f;
    // Unfused.
    Typed logits(dt, VecF(rows * vocab, 0.0f)), dxRef(dt, VecF(rows * d, 0.0f));
    float lossRef = 0.0f;
    VecF dwRef = dw0;
    tgrt_matmul(ctx_, "lm_head", dt, x.data(), w.data(), logits.data(), 1, rows, vocab, d, 0, 1, 0,
                0, 0, 1.0f, 0.0f);
    tgrt_cross_entropy_fwd_bwd(ctx_, "loss", dt, logits.data(), targets.data(), &lossRef, &dloss,
                               logits.data(), rows, vocab, -1);
    tgrt_matmul(ctx_, "lm_head", dt, logits.data(), w.data(), dxRef.data(), 1, rows, d, vocab, 0,
                0, 0, 0, 0, 1.0f, 0.0f);
    tgrt_matmul_acc(ctx_, "lm_head", dt, logits.data(), x.data(), TGRT_F32, dwRef.data(), vocab,
                    d, rows, 1, 0, 1.0f);
    // Fused.
    Typed dx(dt, VecF(rows * d, NAN));
    VecF dw = dw0, scratch((512 + chunk * vocab * 4) / 4, NAN);
    float loss = NAN;
    tgrt_linear_cross_entropy(ctx_, "loss", dt, x.data(), w.data(), targets.data(), &dloss, &loss,
                              dx.data(), TGRT_F32, dw.data(), scratch.data(), rows, d, vocab,
                              chunk, -1);
    // The GEMM of a 3-row chunk and of all 11 rows may sum in different orders (OpenBLAS
    // picks its kernel by shape and CPU), so the logits, and from them the loss and dx, agree
    // to the last bit of the storage type, not bit for bit: f32 within 1e-6 relative, bf16
    // within one unit in its 8-bit significand (2^-7 relative; absolute against the largest
    // |dx| where a sum cancels).
    const double tol = dt == TGRT_F32 ? 1e-6 : 1.0 / 128;
    EXPECT_NEAR(loss, lossRef, tol * std::fabs(lossRef)) << dtName(dt);
    const VecF dxw = dxRef.widened();
    double dxMax = 0.0;
    for (float v : dxw) dxMax = std::max(dxMax, (double)std::fabs(v));
    expectClose(dx.widened(), dxw, tol * dxMax, tol,
                std::string("linear_cross_entropy dx ") + dtName(dt));
    VecD want(dwRef.begin(), dwRef.end());
    expectClose(dw, want, 1e-6, 1e-5, std::string("linear_cross_entropy dw ") + dtName(dt));
    // The loss only (dx, dw NULL: an evaluation step): the same loss, bit for bit.
    float lossOnly = NAN;
    tgrt_linear_cross_entropy(ctx_, "loss", dt, x.data(), w.data(), targets.data(), &dloss,
                              &lossOnly, nullptr, TGRT_F32, nullptr, scratch.data(), rows, d,
                              vocab, chunk, -1);
    EXPECT_EQ(lossOnly, loss) << dtName(dt);
  }
  // chunk_rows outside [1, rows] is refused with the call's location.
  const VecF x(rows * d, 0.0f), w(vocab * d, 0.0f);
  VecF dx(rows * d), dw(vocab * d), scratch(1024);
  float loss = 0.0f, dloss = 1.0f;
  EXPECT_EXIT(tgrt_linear_cross_entropy(ctx_, "lm_loss", TGRT_F32, x.data(), w.data(),
                                        targets.data(), &dloss, &loss, dx.data(), TGRT_F32,
                                        dw.data(), scratch.data(), rows, d, vocab, 0, -1),
              ::testing::ExitedWithCode(1),
              "tgrt: lm_loss: linear_cross_entropy: chunk_rows 0 outside \\[1, 11\\]");
  // One of dx, dw NULL is an error (both NULL: the loss only).
  EXPECT_EXIT(tgrt_linear_cross_entropy(ctx_, "lm_loss", TGRT_F32, x.data(), w.data(),
                                        targets.data(), &dloss, &loss, nullptr, TGRT_F32,
                                        dw.data(), scratch.data(), rows, d, vocab, 3, -1),
              ::testing::ExitedWithCode(1), "tgrt: lm_loss: linear_cross_entropy: .*NULL");
}

/// tgrt_linear_cross_entropy_store: dw written (its NaN start never read), the bits of
/// tgrt_linear_cross_entropy onto a zeroed dw; loss and dx as that call's.
TEST_F(Cpu, LinearCrossEntropyStoreWritesDw) {
  const int64_t rows = 11, d = 6, vocab = 13, chunk = 3;
  std::vector<int32_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = (int32_t)((r * 7) % vocab);
  const Typed x = randTyped(TGRT_BF16, (size_t)(rows * d), 95),
              w = randTyped(TGRT_BF16, (size_t)(vocab * d), 96);
  const float dloss = 1.25f;
  VecF dwRef(vocab * d, 0.0f), dw(vocab * d, NAN), s1((512 + chunk * vocab * 4) / 4, NAN),
      s2 = s1;
  Typed dxRef(TGRT_BF16, VecF(rows * d, NAN)), dx(TGRT_BF16, VecF(rows * d, NAN));
  float lossRef = NAN, loss = NAN;
  tgrt_linear_cross_entropy(ctx_, "loss", TGRT_BF16, x.data(), w.data(), targets.data(), &dloss,
                            &lossRef, dxRef.data(), TGRT_F32, dwRef.data(), s1.data(), rows, d,
                            vocab, chunk, -1);
  tgrt_linear_cross_entropy_store(ctx_, "loss", TGRT_BF16, x.data(), w.data(), targets.data(),
                                  &dloss, &loss, dx.data(), TGRT_F32, dw.data(), s2.data(), rows,
                                  d, vocab, chunk, -1);
  EXPECT_EQ(std::memcmp(dw.data(), dwRef.data(), dw.size() * sizeof(float)), 0);
  EXPECT_TRUE(dx.sameBits(dxRef));
  EXPECT_EQ(loss, lossRef);
  for (float v : dw) ASSERT_TRUE(std::isfinite(v));
}

/// A mixed-precision layer norm's backward inputs, [rows, d]: f32 x, gamma, beta and the
/// residual gradient dres0, bf16 dy (random, seeds seed .. seed + 4), and the forward's mean
/// and rstd of x.
struct LnBackwardInputs {
  VecF x, gamma, beta, dres0;
  Typed dy;
  VecF mean, rstd;
};
LnBackwardInputs lnBackwardInputs(tgrt_ctx* ctx, int64_t rows, int64_t d, unsigned seed) {
  LnBackwardInputs in{randVec(rows * d, seed, -2.0f, 2.0f), randVec(d, seed + 1, 0.5f, 1.5f),
                      randVec(d, seed + 2), randVec(rows * d, seed + 3),
                      randTyped(TGRT_BF16, (size_t)(rows * d), seed + 4), VecF(rows),
                      VecF(rows)};
  VecF y(rows * d);
  tgrt_layer_norm_fwd(ctx, "ln", TGRT_F32, in.x.data(), TGRT_F32, in.gamma.data(),
                      in.beta.data(), TGRT_F32, y.data(), in.mean.data(), in.rstd.data(), rows,
                      d, 1e-5f);
  return in;
}

/// tgrt_layer_norm_bwd_acc_bgrad: dres, low, dgamma, dbeta bit-equal to
/// tgrt_layer_norm_bwd_acc; dbias the column sums of what was stored (low when given, else
/// the updated dres), over a NaN start; a NULL dbias is refused with the call's location.
TEST_F(Cpu, LayerNormBackwardAccSumsTheProjectionBias) {
  const int64_t rows = 7, d = 16;
  const LnBackwardInputs in = lnBackwardInputs(ctx_, rows, d, 30);
  const VecF &x = in.x, &gamma = in.gamma, &dres0 = in.dres0, &mean = in.mean, &rstd = in.rstd;
  const Typed& dy = in.dy;
  for (bool withLow : {true, false}) {
    VecF resRef = dres0, res = dres0, dgRef(d), dbRef(d), dg(d, NAN), db(d, NAN),
         dbias(d, NAN);
    Typed lowRef(TGRT_BF16, VecF(rows * d, 0.0f)), low(TGRT_BF16, VecF(rows * d, NAN));
    tgrt_layer_norm_bwd_acc(ctx_, "ln2", TGRT_BF16, dy.data(), TGRT_F32, x.data(), TGRT_F32,
                            gamma.data(), mean.data(), rstd.data(), resRef.data(), TGRT_BF16,
                            withLow ? lowRef.data() : nullptr, dgRef.data(), dbRef.data(), rows,
                            d);
    tgrt_layer_norm_bwd_acc_bgrad(ctx_, "ln2", TGRT_BF16, dy.data(), TGRT_F32, x.data(),
                                  TGRT_F32, gamma.data(), mean.data(), rstd.data(), res.data(),
                                  TGRT_BF16, withLow ? low.data() : nullptr, dg.data(),
                                  db.data(), TGRT_F32, dbias.data(), rows, d);
    EXPECT_EQ(res, resRef) << withLow;
    EXPECT_EQ(dg, dgRef) << withLow;
    EXPECT_EQ(db, dbRef) << withLow;
    if (withLow) EXPECT_TRUE(low.sameBits(lowRef));
    const VecF stored = withLow ? lowRef.widened() : resRef;
    for (int64_t c = 0; c < d; ++c) {
      double want = 0.0;
      for (int64_t r = 0; r < rows; ++r) want += stored[r * d + c];
      EXPECT_NEAR(dbias[c], want, 1e-6 * (1.0 + std::fabs(want))) << withLow << " column " << c;
    }
  }
  VecF res = dres0, dg(d), db(d);
  EXPECT_EXIT(tgrt_layer_norm_bwd_acc_bgrad(ctx_, "layers.3.ln1", TGRT_BF16, dy.data(), TGRT_F32,
                                            x.data(), TGRT_F32, gamma.data(), mean.data(),
                                            rstd.data(), res.data(), TGRT_F32, nullptr, dg.data(),
                                            db.data(), TGRT_F32, nullptr, rows, d),
              ::testing::ExitedWithCode(1),
              "tgrt: layers.3.ln1: layer_norm_bwd_acc_bgrad: pointer argument #0 is NULL");
}

/// tgrt_layer_norm_bwd_acc (and _bgrad) with low in dy's own buffer, where tg-plan-memory
/// puts the copy when dy dies at the norm: the same dres, low, dgamma, dbeta and dbias bits
/// as with separate buffers (tgrt_kernels.def: every element of dy is read first).
TEST_F(Cpu, LayerNormBackwardAccWritesLowOverDy) {
  const int64_t rows = 5, d = 24;
  const LnBackwardInputs in = lnBackwardInputs(ctx_, rows, d, 40);
  const VecF &x = in.x, &gamma = in.gamma, &dres0 = in.dres0, &mean = in.mean, &rstd = in.rstd;
  const Typed& dy = in.dy;
  for (bool bgrad : {false, true}) {
    VecF resRef = dres0, res = dres0, dgRef(d), dbRef(d), dg(d, NAN), db(d, NAN),
         biasRef(d, NAN), bias(d, NAN);
    Typed lowRef(TGRT_BF16, VecF(rows * d, 0.0f)), inPlace = dy;
    if (bgrad) {
      tgrt_layer_norm_bwd_acc_bgrad(ctx_, "ln2", TGRT_BF16, dy.data(), TGRT_F32, x.data(),
                                    TGRT_F32, gamma.data(), mean.data(), rstd.data(),
                                    resRef.data(), TGRT_BF16, lowRef.data(), dgRef.data(),
                                    dbRef.data(), TGRT_F32, biasRef.data(), rows, d);
      tgrt_layer_norm_bwd_acc_bgrad(ctx_, "ln2", TGRT_BF16, inPlace.data(), TGRT_F32, x.data(),
                                    TGRT_F32, gamma.data(), mean.data(), rstd.data(), res.data(),
                                    TGRT_BF16, inPlace.data(), dg.data(), db.data(), TGRT_F32,
                                    bias.data(), rows, d);
      EXPECT_EQ(bias, biasRef);
    } else {
      tgrt_layer_norm_bwd_acc(ctx_, "ln2", TGRT_BF16, dy.data(), TGRT_F32, x.data(), TGRT_F32,
                              gamma.data(), mean.data(), rstd.data(), resRef.data(), TGRT_BF16,
                              lowRef.data(), dgRef.data(), dbRef.data(), rows, d);
      tgrt_layer_norm_bwd_acc(ctx_, "ln2", TGRT_BF16, inPlace.data(), TGRT_F32, x.data(),
                              TGRT_F32, gamma.data(), mean.data(), rstd.data(), res.data(),
                              TGRT_BF16, inPlace.data(), dg.data(), db.data(), rows, d);
    }
    EXPECT_EQ(res, resRef) << bgrad;
    EXPECT_EQ(dg, dgRef) << bgrad;
    EXPECT_EQ(db, dbRef) << bgrad;
    EXPECT_TRUE(inPlace.sameBits(lowRef)) << bgrad;
    EXPECT_FALSE(inPlace.sameBits(dy)) << bgrad; // the copy did overwrite dy
  }
}

/// tgrt_adamw_wc: p, m, v bit-equal to tgrt_adamw's, and the working copy the updated p
/// rounded to bf16 / f16; a skipped step (clip[1] NaN) leaves the copy alone.
TEST_F(Cpu, AdamWWritesTheWorkingCopy) {
  const int64_t n = 37;
  for (int32_t wdt : {TGRT_BF16, TGRT_F16}) {
    VecF p = randVec(n, 160), m = randVec(n, 161, -0.1f, 0.1f), v = randVec(n, 162, 0.0f, 0.1f);
    const VecF g = randVec(n, 163);
    VecF p2 = p, m2 = m, v2 = v;
    const float clip[2] = {0.0f, 0.5f};
    tgrt_set_lr(ctx_, 2e-3f);
    tgrt_set_step(ctx_, 3);
    tgrt_adamw(ctx_, "opt", TGRT_F32, p.data(), g.data(), TGRT_F32, m.data(), v.data(), n, 0.9f,
               0.95f, 1e-8f, 0.1f, clip);
    std::vector<uint16_t> w(n, 0xffff);
    tgrt_adamw_wc(ctx_, "opt", TGRT_F32, p2.data(), g.data(), TGRT_F32, m2.data(), v2.data(), n,
                  0.9f, 0.95f, 1e-8f, 0.1f, clip, wdt, w.data());
    EXPECT_EQ(p2, p);
    EXPECT_EQ(m2, m);
    EXPECT_EQ(v2, v);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w[i], lowOf(wdt, p[i])) << dtName(wdt) << " " << i;
    const float skip[2] = {0.0f, NAN};
    const std::vector<uint16_t> before = w;
    tgrt_adamw_wc(ctx_, "opt", TGRT_F32, p2.data(), g.data(), TGRT_F32, m2.data(), v2.data(), n,
                  0.9f, 0.95f, 1e-8f, 0.1f, skip, wdt, w.data());
    EXPECT_EQ(w, before);
    EXPECT_EQ(p2, p);
  }
  VecF a(4);
  EXPECT_EXIT(tgrt_adamw_wc(ctx_, "opt", TGRT_F32, a.data(), a.data(), TGRT_F32, a.data(),
                            a.data(), 4, 0.9f, 0.95f, 1e-8f, 0.0f, nullptr, TGRT_F32, a.data()),
              ::testing::ExitedWithCode(1), "tgrt: opt: adamw_wc: the working copy's dtype 0");
}

/// tgrt_adamw_wc_g (the plan's grad_dtype: mixed precision's weight gradients in the compute
/// type): p, m, v and the copy bit-equal to tgrt_adamw_wc's on the same gradients widened to
/// f32; g_dt = p_dt is tgrt_adamw_wc; a g_dt that is neither p_dt nor the copy's is refused.
TEST_F(Cpu, AdamWReadsGradientsOfTheComputeType) {
  const int64_t n = 37;
  for (int32_t gdt : {TGRT_BF16, TGRT_F16}) {
    const VecF p = randVec(n, 170), m = randVec(n, 171, -0.1f, 0.1f), v = randVec(n, 172, 0.0f, 0.1f);
    const VecF g = randVec(n, 173);
    std::vector<uint16_t> glow(n);
    VecF wide(n);
    for (int64_t i = 0; i < n; ++i) {
      glow[i] = lowOf(gdt, g[i]);
      wide[i] = gdt == TGRT_BF16 ? tgrt_bf16_to_float(glow[i]) : tgrt_f16_to_float(glow[i]);
    }
    ASSERT_NE(wide, g); // the rounding changed some gradients: the test tells the two apart
    const float clip[2] = {0.0f, 0.5f};
    tgrt_set_lr(ctx_, 2e-3f);
    tgrt_set_step(ctx_, 3);
    VecF pa = p, ma = m, va = v, pb = p, mb = m, vb = v, pc = p, mc = m, vc = v;
    std::vector<uint16_t> wa(n, 0xffff), wb(n, 0), wc(n, 0);
    tgrt_adamw_wc_g(ctx_, "opt", TGRT_F32, pa.data(), gdt, glow.data(), TGRT_F32, ma.data(),
                    va.data(), n, 0.9f, 0.95f, 1e-8f, 0.1f, clip, gdt, wa.data());
    tgrt_adamw_wc(ctx_, "opt", TGRT_F32, pb.data(), wide.data(), TGRT_F32, mb.data(), vb.data(), n,
                  0.9f, 0.95f, 1e-8f, 0.1f, clip, gdt, wb.data());
    tgrt_adamw_wc(ctx_, "opt", TGRT_F32, pc.data(), g.data(), TGRT_F32, mc.data(), vc.data(), n,
                  0.9f, 0.95f, 1e-8f, 0.1f, clip, gdt, wc.data());
    EXPECT_EQ(pa, pb) << dtName(gdt);
    EXPECT_EQ(ma, mb);
    EXPECT_EQ(va, vb);
    EXPECT_EQ(wa, wb);
    EXPECT_NE(ma, mc); // not the f32 gradients' update
  }
  VecF a(4);
  std::vector<uint16_t> h(4);
  EXPECT_EXIT(tgrt_adamw_wc_g(ctx_, "opt", TGRT_F32, a.data(), TGRT_F16, h.data(), TGRT_F32,
                              a.data(), a.data(), 4, 0.9f, 0.95f, 1e-8f, 0.0f, nullptr, TGRT_BF16,
                              h.data()),
              ::testing::ExitedWithCode(1),
              "tgrt: opt: adamw_wc_g: the gradients' dtype 2 is neither the values' \\(0\\)");
}

/// tgrt_take_weights_stale: 1 after the context is created and after an upload that touches
/// a parameter's value slot; 0 after an upload elsewhere (the tokens) and once taken.
TEST(CpuWeightsStale, SetByUploadsIntoParameterValues) {
  tgrt_param params[2] = {};
  params[0].name = "a";
  params[0].numel = 16;
  params[0].offset = 256;
  params[0].dtype = TGRT_F32;
  params[1].name = "b";
  params[1].numel = 8;
  params[1].offset = 512;
  params[1].dtype = TGRT_F32;
  tgrt_model m = makeModel(2048, 256, 64);
  m.n_params = 2;
  m.params = params;
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(tgrt_take_weights_stale(ctx), 1); // fresh values
  EXPECT_EQ(tgrt_take_weights_stale(ctx), 0);
  const float x[16] = {};
  tgrt_upload(ctx, TGRT_PERSISTENT, 1024, x, sizeof x); // past the values: tokens, say
  tgrt_upload(ctx, TGRT_PERSISTENT, 0, x, 256);         // before them
  tgrt_upload(ctx, TGRT_ARENA, 0, x, sizeof x);
  EXPECT_EQ(tgrt_take_weights_stale(ctx), 0);
  tgrt_upload(ctx, TGRT_PERSISTENT, 540, x, 4); // inside b's value
  EXPECT_EQ(tgrt_take_weights_stale(ctx), 1);
  tgrt_upload(ctx, TGRT_PERSISTENT, 200, x, 60); // ends at 260: overlaps a's first float
  EXPECT_EQ(tgrt_take_weights_stale(ctx), 1);
  EXPECT_EQ(tgrt_take_weights_stale(ctx), 0);
  tgrt_ctx_destroy(ctx);
}

TEST_F(Cpu, CastRoundTripsOverflowNanSubnormalsTiesToEven) {
  EXPECT_EQ(tgrt_dtype_size(TGRT_F32), 4);
  EXPECT_EQ(tgrt_dtype_size(TGRT_BF16), 2);
  EXPECT_EQ(tgrt_dtype_size(TGRT_F16), 2);
  EXPECT_EQ(tgrt_dtype_size(3), 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const VecF special = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, 1e5f, 3.4e38f,
                        -3.4e38f, kInf, -kInf, nan, 0x1p-24f, 0x1p-25f, 3 * 0x1p-25f,
                        5 * 0x1p-25f, 0x1p-26f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
                        1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 0x1p-14f, 1e-8f};
  const VecF rnd = randVec(500, 300, -1000.0f, 1000.0f);
  VecF x = special;
  x.insert(x.end(), rnd.begin(), rnd.end());
  const int64_t n = (int64_t)x.size();

  // f32 -> low: exactly the host rounding helpers.
  for (int32_t dt : {TGRT_BF16, TGRT_F16}) {
    Typed low(dt, VecF(n));
    tgrt_cast(ctx_, "cast", TGRT_F32, x.data(), dt, low.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(low.h[i], lowOf(dt, x[i])) << dtName(dt) << " " << i;
    // low -> f32 is exact.
    VecF back(n);
    tgrt_cast(ctx_, "cast", dt, low.data(), TGRT_F32, back.data(), n);
    expectBitEqual(back, low.widened(), std::string("widen ") + dtName(dt));
    // low -> f32 -> low is the identity.
    Typed again(dt, VecF(n));
    tgrt_cast(ctx_, "cast", TGRT_F32, back.data(), dt, again.data(), n);
    EXPECT_EQ(again.h, low.h) << dtName(dt);
  }
  auto f16 = [&](float v) { return tgrt_f16_from_float(v); };
  auto bf16 = [&](float v) { return tgrt_bf16_from_float(v); };
  // Overflow to inf, NaN stays NaN.
  EXPECT_EQ(f16(65519.0f), 0x7bffu);   // below the midpoint to 2^16: rounds to 65504
  EXPECT_EQ(f16(65520.0f), 0x7c00u);   // the midpoint: rounds (to even) up to +inf
  EXPECT_EQ(f16(1e5f), 0x7c00u);
  EXPECT_EQ(f16(-1e5f), 0xfc00u);
  EXPECT_EQ(bf16(3.4e38f), 0x7f80u);
  EXPECT_EQ(bf16(-3.4e38f), 0xff80u);
  EXPECT_TRUE(std::isnan(tgrt_f16_to_float(f16(nan))));
  EXPECT_TRUE(std::isnan(tgrt_bf16_to_float(bf16(nan))));
  // f16 subnormals, ties to even: 2^-25 is half of the smallest subnormal -> 0 (even);
  // 3*2^-25 -> 2 ulp (even), 5*2^-25 -> 2 ulp (even); 2^-26 -> 0.
  EXPECT_EQ(f16(0x1p-24f), 0x0001u);
  EXPECT_EQ(f16(0x1p-25f), 0x0000u);
  EXPECT_EQ(f16(-0x1p-25f), 0x8000u);
  EXPECT_EQ(f16(3 * 0x1p-25f), 0x0002u);
  EXPECT_EQ(f16(5 * 0x1p-25f), 0x0002u);
  EXPECT_EQ(f16(0x1p-26f), 0x0000u);
  EXPECT_EQ(f16(0x1p-14f), 0x0400u); // smallest normal
  EXPECT_EQ(f16(0x1p-14f - 0x1p-24f), 0x03ffu); // largest subnormal
  // Normal ties to even (f16 has 10 fraction bits): 1 + 2^-11 -> 1; 1 + 3*2^-11 -> 1 + 2^-9.
  EXPECT_EQ(f16(1.0f + 0x1p-11f), 0x3c00u);
  EXPECT_EQ(f16(1.0f + 3 * 0x1p-11f), 0x3c02u);
  EXPECT_EQ(f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01u);

  // bf16 <-> f16: widen exactly, round once.
  const Typed b(TGRT_BF16, x);
  Typed h(TGRT_F16, VecF(n));
  tgrt_cast(ctx_, "cast", TGRT_BF16, b.data(), TGRT_F16, h.data(), n);
  const VecF bW = b.widened();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h.h[i], f16(bW[i])) << i;
  Typed b2(TGRT_BF16, VecF(n));
  tgrt_cast(ctx_, "cast", TGRT_F16, h.data(), TGRT_BF16, b2.data(), n);
  const VecF hW = h.widened();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b2.h[i], bf16(hW[i])) << i;

  // Same-type casts copy the bits, NaN payloads included.
  VecF xs = x;
  xs[0] = floatOfBits(0x7fc01234u);
  VecF y(n, 1.0f);
  tgrt_cast(ctx_, "cast", TGRT_F32, xs.data(), TGRT_F32, y.data(), n);
  expectBitEqual(y, xs, "f32 copy");
  Typed hc(TGRT_F16, VecF(n));
  h.h[1] = 0x7d01u; // a NaN with payload
  tgrt_cast(ctx_, "cast", TGRT_F16, h.data(), TGRT_F16, hc.data(), n);
  EXPECT_EQ(hc.h, h.h);
}

TEST_F(Cpu, ClipScaleUnscalesByTheLossScale) {
  // Gradients (3, 4, 12) (norm 13) seeded with loss scale 1024: scaled grads (3, 4, 12) * 1024.
  const VecF g = {3.0f * 1024, 4.0f * 1024, 12.0f * 1024};
  float ref[2] = {169.0f, 0.0f};
  tgrt_clip_scale(ctx_, "clip", ref, 1.0f); // S = 1: today's factor
  tgrt_set_loss_scale(ctx_, 1024.0f);
  float acc[2] = {0.0f, -1.0f};
  tgrt_grad_norm_sq(ctx_, "norm", TGRT_F32, g.data(), 3, acc);
  EXPECT_EQ(acc[0], 169.0f * 1024 * 1024);
  tgrt_clip_scale(ctx_, "clip", acc, 1.0f);
  EXPECT_EQ(acc[1], ref[1] / 1024.0f); // the same clip factor times 1/1024 (exact)
  EXPECT_NEAR(acc[1], 1.0 / (13.0 + 1e-6) / 1024.0, 1e-10);
  EXPECT_EQ(tgrt_last_grad_norm(ctx_), 13.0f); // unscaled
  tgrt_clip_scale(ctx_, "clip", acc, 20.0f); // under the limit: just the unscaling
  EXPECT_EQ(acc[1], 1.0f / 1024.0f);
  tgrt_clip_scale(ctx_, "clip", acc, 0.0f); // clipping disabled
  EXPECT_EQ(acc[1], 1.0f / 1024.0f);

  // AdamW with the unscaling factor sees the same g' as an unscaled run.
  tgrt_set_lr(ctx_, 0.1f);
  tgrt_set_step(ctx_, 1);
  float p1 = 0.5f, m1 = 0.0f, v1 = 0.0f, p2 = 0.5f, m2 = 0.0f, v2 = 0.0f;
  const float gs = 2048.0f, gu = 2.0f, one[2] = {0.0f, 1.0f};
  tgrt_adamw(ctx_, "opt", TGRT_F32, &p1, &gs, TGRT_F32, &m1, &v1, 1, 0.9f, 0.999f, 1e-8f, 0.0f,
             acc);
  tgrt_adamw(ctx_, "opt", TGRT_F32, &p2, &gu, TGRT_F32, &m2, &v2, 1, 0.9f, 0.999f, 1e-8f, 0.0f,
             one);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(v1, v2);
}

TEST_F(Cpu, LossScaleMustBeFinitePositive) {
  EXPECT_EXIT(tgrt_set_loss_scale(ctx_, 0.0f), ::testing::ExitedWithCode(1),
              "tgrt: set_loss_scale: loss scale 0 must be finite and > 0");
  EXPECT_EXIT(tgrt_set_loss_scale(ctx_, -2.0f), ::testing::ExitedWithCode(1), "loss scale -2");
  EXPECT_EXIT(tgrt_set_loss_scale(ctx_, kInf), ::testing::ExitedWithCode(1), "loss scale inf");
  EXPECT_EXIT(tgrt_set_loss_scale(ctx_, std::nanf("")), ::testing::ExitedWithCode(1),
              "loss scale");
  tgrt_set_loss_scale(ctx_, 0.5f); // fine
}

TEST_F(Cpu, OverflowedGradientSkipsTheStep) {
  tgrt_set_loss_scale(ctx_, 65536.0f);
  tgrt_set_lr(ctx_, 0.1f);
  tgrt_set_step(ctx_, 2);
  for (int32_t dt : {TGRT_F32, TGRT_BF16, TGRT_F16}) {
    for (float bad : {kInf, -kInf, std::numeric_limits<float>::quiet_NaN()}) {
      const std::string name = std::string(dtName(dt)) + " bad " + std::to_string(bad);
      VecF gv = randVec(16, 310);
      gv[5] = bad;
      Typed g(dt, gv);
      float acc[2] = {0.0f, 0.0f};
      tgrt_grad_norm_sq(ctx_, "norm", dt, g.data(), 16, acc);
      EXPECT_FALSE(std::isfinite(acc[0])) << name;
      tgrt_clip_scale(ctx_, "clip", acc, 1.0f);
      EXPECT_TRUE(std::isnan(acc[1])) << name;
      EXPECT_FALSE(std::isfinite(tgrt_last_grad_norm(ctx_))) << name;
      // AdamW changes nothing (p, m, v keep their bits), for any state dtype.
      for (int32_t sdt : {(int32_t)TGRT_F32, dt}) {
        Typed p = randTyped(dt, 16, 311), m = randTyped(sdt, 16, 312),
              v = randTyped(sdt, 16, 313, 0.0f, 1.0f);
        const Typed p0 = p, m0 = m, v0 = v;
        tgrt_adamw(ctx_, "opt", dt, p.data(), g.data(), sdt, m.data(), v.data(), 16, 0.9f,
                   0.999f, 1e-8f, 0.1f, acc);
        EXPECT_TRUE(p.sameBits(p0)) << name;
        EXPECT_TRUE(m.sameBits(m0)) << name << " state " << dtName(sdt);
        EXPECT_TRUE(v.sameBits(v0)) << name << " state " << dtName(sdt);
      }
    }
  }
  // A finite factor with a finite gradient does update.
  float acc[2] = {4.0f, 0.0f};
  tgrt_clip_scale(ctx_, "clip", acc, 0.0f);
  EXPECT_EQ(acc[1], 1.0f / 65536.0f);
  EXPECT_EQ(tgrt_last_grad_norm(ctx_), 2.0f / 65536.0f);
}

TEST_F(Cpu, UnknownDtypeFailsWithLocation) {
  VecF a(8, 1.0f), mean(2), rstd(2);
  EXPECT_EXIT(tgrt_add(ctx_, "layers.0.res", 7, a.data(), a.data(), a.data(), 8),
              ::testing::ExitedWithCode(1), "tgrt: layers.0.res: add: unknown dtype 7");
  EXPECT_EXIT(tgrt_fill(ctx_, "f", -1, a.data(), 0, 0.0f), ::testing::ExitedWithCode(1),
              "tgrt: f: fill: unknown dtype -1"); // even with nothing to do
  EXPECT_EXIT(tgrt_layer_norm_fwd(ctx_, "ln_f", TGRT_F32, a.data(), 3, a.data(), a.data(), TGRT_F32,
                                  a.data(), mean.data(), rstd.data(), 2, 4, 1e-5f),
              ::testing::ExitedWithCode(1),
              "tgrt: ln_f: layer_norm_fwd \\(p_dt\\): unknown dtype 3");
  EXPECT_EXIT(tgrt_cast(ctx_, "cast", TGRT_F32, a.data(), 9, a.data(), 8),
              ::testing::ExitedWithCode(1), "tgrt: cast: cast \\(dst_dt\\): unknown dtype 9");
  EXPECT_EXIT(tgrt_adamw(ctx_, "opt", TGRT_F32, a.data(), a.data(), 4, a.data(), a.data(), 8,
                         0.9f, 0.999f, 1e-8f, 0.0f, nullptr),
              ::testing::ExitedWithCode(1), "tgrt: opt: adamw \\(state_dt\\): unknown dtype 4");
  EXPECT_EXIT(tgrt_matmul(ctx_, "mm", 5, a.data(), a.data(), a.data(), 1, 2, 2, 2, 0, 0, 0, 0, 0,
                          1.0f, 0.0f),
              ::testing::ExitedWithCode(1), "tgrt: mm: matmul: unknown dtype 5");
  EXPECT_EXIT(tgrt_attention_fwd(ctx_, "attn", 3, a.data(), a.data(), a.data(), a.data(),
                                 mean.data(), ATTN_CONTIG(1, 2, 4), 1, 0, 1.0f),
              ::testing::ExitedWithCode(1), "tgrt: attn: attention_fwd: unknown dtype 3");
}

// ------------------------------------------------------------------- errors --

TEST_F(Cpu, NegativeSizesAndNullPointersFailWithLocation) {
  VecF a(4);
  EXPECT_EXIT(tgrt_add(ctx_, "layers.0.res", TGRT_F32, a.data(), a.data(), a.data(), -1),
              ::testing::ExitedWithCode(1), "tgrt: layers.0.res: negative size in add");
  EXPECT_EXIT(tgrt_gelu_fwd(ctx_, "layers.1.mlp.gelu", TGRT_F32, nullptr, a.data(), 4),
              ::testing::ExitedWithCode(1), "tgrt: layers.1.mlp.gelu: gelu_fwd: pointer");
  EXPECT_EXIT(tgrt_report_loss(nullptr, "loss", a.data()), ::testing::ExitedWithCode(1),
              "tgrt: loss: NULL context");
}

// ------------------------------------------- ZeRO-2 / ZeRO-3 (sharded tensors) --

/// ceil(n / R): the chunk every rank holds.
int64_t chunkOf(int64_t n, int32_t R) { return (n + R - 1) / R; }

/// Element i of x widened to float (exact).
float elemF(const Typed& x, int64_t i) {
  return x.dt == TGRT_F32 ? x.f[(size_t)i] : widenOf(x.dt, x.h[(size_t)i]);
}
/// v rounded to dt (RNE), as the element bits elemBits reports.
uint32_t bitsIn(int32_t dt, float v) {
  return dt == TGRT_F32 ? bitsOf(v) : (uint32_t)lowOf(dt, v);
}
/// v rounded to dt and widened back.
float roundIn(int32_t dt, float v) { return dt == TGRT_F32 ? v : widenOf(dt, lowOf(dt, v)); }

/// The guard bit pattern of guardBuffer (a NaN; never a valid result here).
uint32_t guardBits(int32_t dt) { return dt == TGRT_F32 ? 0x7fc0beefu : 0x7e5bu; }

/// The padding pattern of the all-gather tests' shards: a NaN other than the guard, so that a
/// padding element copied into full's tail shows.
uint32_t padBits(int32_t dt) { return dt == TGRT_F32 ? 0x7fc0deadu : 0x7e5du; }

/// A shard of c elements for rank r of an n-element tensor in chunks of c: its valid count
/// from values (rounded to dt), the padding holding `pad` (bits; these calls never write it).
Typed shardOf(int32_t dt, const VecF& values, int64_t n, int64_t c, int32_t r, uint32_t pad) {
  int64_t begin = 0, count = 0;
  tgrt_shard_span(n, c, r, &begin, &count);
  Typed s = guardBuffer(dt, c);
  const Typed v(dt, values);
  for (int64_t i = 0; i < c; ++i) setElemBits(s, i, i < count ? elemBits(v, i) : pad);
  return s;
}

/// Rank r's test values: n floats in [-1, 1) scaled by 10^(r mod 3), so that the rank order
/// of a float sum matters.
VecF rankValues(int32_t r, int64_t n, uint32_t seed) {
  VecF v = randVec((size_t)n, seed + 97u * (uint32_t)r);
  const float scale = r % 3 == 0 ? 1.0f : r % 3 == 1 ? 10.0f : 100.0f;
  for (float& x : v) x *= scale;
  return v;
}

struct ShardCase {
  int32_t R;
  int64_t n, c;
};
std::string caseName(const ShardCase& k, int32_t dt) {
  return std::to_string(k.R) + " ranks, n " + std::to_string(k.n) + ", c " +
         std::to_string(k.c) + ", " + dtName(dt);
}
// n divisible by N and not (7 over 3 ranks: chunks 3, 3, 1), and c above ceil(n/N) (7 over 3
// ranks in chunks of 4: 4, 3, and none on rank 2); 1001 over 3 ranks (334, 334, 333) has
// enough elements for the rank order of the float sums to show.
const ShardCase kShardCases[] = {{2, 8, 4}, {2, 7, 4},   {3, 9, 3},
                                 {3, 7, 3}, {3, 7, 4}, {3, 1001, 334}};

TEST(CpuZero23, ShardSpanValues) {
  struct Span {
    int64_t n, c;
    int32_t rank;
    int64_t begin, count;
  };
  const Span spans[] = {{7, 3, 0, 0, 3}, {7, 3, 1, 3, 3}, {7, 3, 2, 6, 1}, {7, 3, 3, 9, 0},
                        {6, 3, 1, 3, 3}, {7, 4, 1, 4, 3}, {7, 4, 2, 8, 0}, {0, 0, 0, 0, 0},
                        {0, 0, 3, 0, 0}, {5, 5, 0, 0, 5}, {5, 5, 1, 5, 0}, {1, 1, 0, 0, 1},
                        {7, 9, 0, 0, 7}, {7, 9, 1, 9, 0}};
  for (const Span& s : spans) {
    int64_t begin = -1, count = -1;
    tgrt_shard_span(s.n, s.c, s.rank, &begin, &count);
    EXPECT_EQ(begin, s.begin) << "n " << s.n << " c " << s.c << " rank " << s.rank;
    EXPECT_EQ(count, s.count) << "n " << s.n << " c " << s.c << " rank " << s.rank;
  }
  int64_t x = -1;
  tgrt_shard_span(7, 3, 2, nullptr, &x); // either output may be NULL
  EXPECT_EQ(x, 1);
  tgrt_shard_span(7, 3, 2, &x, nullptr);
  EXPECT_EQ(x, 6);
  // With c = ceil(n / R) the ranks' spans tile [0, n) exactly once.
  for (int64_t n = 0; n <= 40; ++n)
    for (int32_t R = 1; R <= 6; ++R) {
      const int64_t c = chunkOf(n, R);
      std::vector<int> hits((size_t)n, 0);
      for (int32_t r = 0; r < R; ++r) {
        int64_t begin = 0, count = 0;
        tgrt_shard_span(n, c, r, &begin, &count);
        ASSERT_EQ(begin, r * c);
        ASSERT_GE(count, 0);
        ASSERT_LE(count, c);
        for (int64_t i = begin; i < begin + count; ++i) ++hits[(size_t)i];
      }
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[(size_t)i], 1) << "n " << n << " R " << R;
    }
}

TEST(CpuZero23, AllGatherGivesEveryRankTheConcatenation) {
  const int64_t kTail = 3; // guard elements after each full buffer
  for (const ShardCase& k : kShardCases)
    for (int32_t dt : {TGRT_F32, TGRT_BF16}) {
      const std::string what = caseName(k, dt);
      std::vector<Typed> shards, fulls, inPlace;
      // want: the concatenation of the ranks' valid chunks.
      std::vector<uint32_t> want((size_t)k.n, 0);
      for (int32_t r = 0; r < k.R; ++r) {
        shards.push_back(
            shardOf(dt, rankValues(r, k.c, 11u + (uint32_t)dt), k.n, k.c, r, padBits(dt)));
        int64_t begin = 0, count = 0;
        tgrt_shard_span(k.n, k.c, r, &begin, &count);
        for (int64_t i = 0; i < count; ++i) want[(size_t)(begin + i)] = elemBits(shards[r], i);
        fulls.push_back(guardBuffer(dt, k.n + kTail));
        // In place: the rank's own chunk already sits in full; the rest is garbage.
        Typed ip = guardBuffer(dt, k.n + kTail);
        for (int64_t i = 0; i < count; ++i) setElemBits(ip, begin + i, elemBits(shards[r], i));
        inPlace.push_back(ip);
      }
      std::vector<Typed> inPlaceNull = inPlace; // shard = NULL: the same in-place gather
      const std::vector<Typed> shardsBefore = shards;
      std::vector<Typed> shardsAfter = shards;
      onRanks(k.R, [&](int32_t r, tgrt_ctx* ctx) {
        tgrt_all_gather_start(ctx, "zero3.gather.wte", dt, shards[r].data(), fulls[r].data(),
                              k.n, k.c);
        // A rank may reuse its shard as soon as the call returns: every copy is done.
        shardsAfter[r] = shards[r];
        for (int64_t i = 0; i < k.c; ++i) setElemBits(shards[r], i, guardBits(dt));
      });
      onRanks(k.R, [&](int32_t r, tgrt_ctx* ctx) {
        int64_t begin = 0;
        tgrt_shard_span(k.n, k.c, r, &begin, nullptr);
        tgrt_all_gather_start(ctx, "zero2.gather.wte", dt, elemPtr(inPlace[r], begin),
                              inPlace[r].data(), k.n, k.c);
        tgrt_all_reduce_wait(ctx, "zero2.wait");
        tgrt_all_gather_start(ctx, "zero2.gather.null", dt, nullptr, inPlaceNull[r].data(), k.n,
                              k.c);
      });
      for (int32_t r = 0; r < k.R; ++r) {
        for (int64_t i = 0; i < k.n; ++i) {
          ASSERT_EQ(elemBits(fulls[r], i), want[(size_t)i]) << what << ": rank " << r << " [" << i << "]";
          ASSERT_EQ(elemBits(inPlace[r], i), want[(size_t)i])
              << what << ", in place: rank " << r << " [" << i << "]";
          ASSERT_EQ(elemBits(inPlaceNull[r], i), want[(size_t)i])
              << what << ", in place (NULL shard): rank " << r << " [" << i << "]";
        }
        for (int64_t i = k.n; i < k.n + kTail; ++i) {
          ASSERT_EQ(elemBits(fulls[r], i), guardBits(dt)) << what << ": wrote past n";
          ASSERT_EQ(elemBits(inPlace[r], i), guardBits(dt)) << what << ", in place: wrote past n";
        }
        EXPECT_TRUE(shardsAfter[r].sameBits(shardsBefore[r]))
            << what << ": rank " << r << "'s shard changed";
      }
    }
}

TEST(CpuZero23, ReduceScatterAddsTheOrderedMeanIntoEachRanksChunkOnly) {
  const int64_t kTail = 3; // finite values after each full gradient: never read
  for (const ShardCase& k : kShardCases)
    for (int32_t dt : {TGRT_F32, TGRT_BF16, TGRT_F16}) {
      const std::string what = caseName(k, dt);
      const uint32_t pad = bitsIn(dt, 777.0f); // finite: any add into the padding shows
      std::vector<Typed> full1, full2, shards, reduced;
      for (int32_t r = 0; r < k.R; ++r) {
        full1.emplace_back(dt, rankValues(r, k.n + kTail, 21u));
        full2.emplace_back(dt, rankValues(r, k.n + kTail, 22u));
        // A zero shard (the valid count) with padding 777.
        shards.push_back(shardOf(dt, VecF((size_t)k.c, 0.0f), k.n, k.c, r, pad));
      }
      reduced = full1; // tgrt_all_reduce_mean of full1, for the zero-shard comparison
      const std::vector<Typed> full1Before = full1, full2Before = full2;
      std::vector<Typed> afterFirst(k.R, Typed(dt, VecF())), full1After = full1;
      onRanks(k.R, [&](int32_t r, tgrt_ctx* ctx) {
        tgrt_reduce_scatter_mean_start(ctx, "micro.grad.wte", dt, full1[r].data(),
                                       shards[r].data(), k.n, k.c);
        tgrt_all_reduce_wait(ctx, "micro.wait");
        afterFirst[r] = shards[r];
        // The gradient buffer may be reused once the wait returns: every rank has read it.
        full1After[r] = full1[r];
        for (int64_t i = 0; i < k.n; ++i) setElemBits(full1[r], i, guardBits(dt));
        // Accumulating onto the now non-zero shard (the next micro-batch).
        tgrt_reduce_scatter_mean_start(ctx, "micro.grad.wte", dt, full2[r].data(),
                                       shards[r].data(), k.n, k.c);
        tgrt_all_reduce_wait(ctx, "micro.wait");
        tgrt_all_reduce_mean(ctx, "ref.all_reduce", dt, reduced[r].data(), k.n);
      });
      // The documented arithmetic: mean = round((sum over r in order, float) / N), then
      // shard = round(float(shard) + mean).
      auto meanOf = [&](const std::vector<Typed>& f, int64_t j) {
        float s = 0.0f;
        for (int32_t q = 0; q < k.R; ++q) s += elemF(f[q], j);
        return roundIn(dt, s / (float)k.R);
      };
      for (int32_t r = 0; r < k.R; ++r) {
        int64_t begin = 0, count = 0;
        tgrt_shard_span(k.n, k.c, r, &begin, &count);
        for (int64_t i = 0; i < count; ++i) {
          const int64_t j = begin + i;
          const float m1 = meanOf(full1Before, j);
          ASSERT_EQ(elemBits(afterFirst[r], i), bitsIn(dt, 0.0f + m1))
              << what << ": rank " << r << " [" << i << "] first";
          ASSERT_EQ(elemBits(afterFirst[r], i), elemBits(reduced[r], j))
              << what << ": rank " << r << " [" << i << "] != tgrt_all_reduce_mean's element";
          const float want = elemF(afterFirst[r], i) + meanOf(full2Before, j);
          ASSERT_EQ(elemBits(shards[r], i), bitsIn(dt, want))
              << what << ": rank " << r << " [" << i << "] accumulated";
        }
        for (int64_t i = count; i < k.c; ++i)
          ASSERT_EQ(elemBits(shards[r], i), pad) << what << ": padding written";
        // The CPU reads the gradients only.
        EXPECT_TRUE(full1After[r].sameBits(full1Before[r])) << what << ": rank " << r << " full";
        EXPECT_TRUE(full2[r].sameBits(full2Before[r])) << what << ": rank " << r << " full";
      }
    }
}

TEST(CpuZero23, AllReduceSumF32IsTheOrderedFloatSumOnEveryRank) {
  for (int32_t R : {2, 3}) {
    const int64_t n = 1001; // uneven shares of the work
    std::vector<VecF> in(R), bufs(R), got(R);
    for (int32_t r = 0; r < R; ++r) in[r] = bufs[r] = rankValues(r, n, 31u);
    onRanks(R, [&](int32_t r, tgrt_ctx* ctx) {
      tgrt_all_reduce_sum_f32(ctx, "optimizer.grad_norm_sq", bufs[r].data(), n);
      got[r] = bufs[r]; // complete on return: every rank's share is written
      tgrt_all_reduce_sum_f32(ctx, "empty", nullptr, 0);
    });
    for (int64_t i = 0; i < n; ++i) {
      float s = 0.0f;
      for (int32_t r = 0; r < R; ++r) s += in[r][(size_t)i];
      for (int32_t r = 0; r < R; ++r)
        ASSERT_EQ(bitsOf(got[r][(size_t)i]), bitsOf(s)) << R << " ranks: rank " << r << " [" << i << "]";
    }
  }
}

/// AdamW settings of the chunk tests (tgrt_adamw's arguments after n).
constexpr float kB1 = 0.9f, kB2 = 0.95f, kEps = 1e-8f, kWd = 0.1f;
const float kClip[2] = {0.0f, 0.5f};

/// Whole-tensor AdamW inputs split as ZeRO-2 holds them on rank r: p, w whole (n); g, m, v
/// the rank's shards of c elements (valid count from the whole tensors, padding guarded).
struct ChunkInputs {
  VecF p, g;
  std::vector<unsigned char> m, v;
  std::vector<uint16_t> w;
};
ChunkInputs chunkInputs(const AdamInputs& whole, int32_t state_dt, int64_t n, int64_t c,
                        int32_t r) {
  int64_t begin = 0, count = 0;
  tgrt_shard_span(n, c, r, &begin, &count);
  const size_t sz = (size_t)tgrt_dtype_size(state_dt);
  ChunkInputs ci;
  ci.p = whole.p;
  ci.w = whole.w;
  ci.g.assign((size_t)c, 123.0f);
  ci.m.assign((size_t)c * sz, 0xab);
  ci.v.assign((size_t)c * sz, 0xcd);
  for (int64_t i = 0; i < count; ++i) ci.g[(size_t)i] = whole.g[(size_t)(begin + i)];
  if (count > 0) {
    std::memcpy(ci.m.data(), whole.m.data() + begin * sz, (size_t)count * sz);
    std::memcpy(ci.v.data(), whole.v.data() + begin * sz, (size_t)count * sz);
  }
  return ci;
}

void runChunk(tgrt_ctx* ctx, ChunkInputs& a, int32_t state_dt, bool wc, int64_t n, int64_t c) {
  tgrt_set_lr(ctx, 2e-3f);
  tgrt_set_step(ctx, 3);
  if (wc)
    tgrt_adamw_wc_chunk(ctx, "opt.h.0.w", TGRT_F32, a.p.data(), a.g.data(), state_dt, a.m.data(),
                        a.v.data(), n, c, kB1, kB2, kEps, kWd, kClip, TGRT_BF16, a.w.data());
  else
    tgrt_adamw_chunk(ctx, "opt.h.0.w", TGRT_F32, a.p.data(), a.g.data(), state_dt, a.m.data(),
                     a.v.data(), n, c, kB1, kB2, kEps, kWd, kClip);
}

/// Expects the state after tgrt_adamw(_wc)_chunk on rank r (`got`, from `before`) to be
/// exactly tgrt_adamw(_wc) on the rank's slice [begin, begin + count) computed on `plain` (a
/// context without a communicator), with everything outside the slice and the padding
/// untouched.
void expectChunkIsAdamWOnTheSlice(tgrt_ctx* plain, const ChunkInputs& before,
                                  const ChunkInputs& got, int32_t state_dt, bool wc, int64_t n,
                                  int64_t c, int32_t r, const std::string& what) {
  int64_t begin = 0, count = 0;
  tgrt_shard_span(n, c, r, &begin, &count);
  const size_t sz = (size_t)tgrt_dtype_size(state_dt);
  // The reference: tgrt_adamw(_wc) on copies of the slice.
  VecF p(before.p.begin() + begin, before.p.begin() + begin + count);
  VecF g(before.g.begin(), before.g.begin() + count);
  std::vector<unsigned char> m(before.m.begin(), before.m.begin() + count * sz);
  std::vector<unsigned char> v(before.v.begin(), before.v.begin() + count * sz);
  std::vector<uint16_t> w(before.w.begin() + begin, before.w.begin() + begin + count);
  tgrt_set_lr(plain, 2e-3f);
  tgrt_set_step(plain, 3);
  if (count > 0) {
    if (wc)
      tgrt_adamw_wc(plain, "ref", TGRT_F32, p.data(), g.data(), state_dt, m.data(), v.data(),
                    count, kB1, kB2, kEps, kWd, kClip, TGRT_BF16, w.data());
    else
      tgrt_adamw(plain, "ref", TGRT_F32, p.data(), g.data(), state_dt, m.data(), v.data(), count,
                 kB1, kB2, kEps, kWd, kClip);
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool in = i >= begin && i < begin + count;
    const float want = in ? p[(size_t)(i - begin)] : before.p[(size_t)i];
    ASSERT_EQ(bitsOf(got.p[(size_t)i]), bitsOf(want)) << what << ": rank " << r << " p[" << i << "]";
    const uint16_t wantW = in && wc ? w[(size_t)(i - begin)] : before.w[(size_t)i];
    ASSERT_EQ(got.w[(size_t)i], wantW) << what << ": rank " << r << " w[" << i << "]";
  }
  if (count > 0) {
    EXPECT_NE(std::memcmp(got.p.data() + begin, before.p.data() + begin, (size_t)count * 4), 0)
        << what << ": the step changed nothing";
  }
  EXPECT_EQ(std::memcmp(got.m.data(), m.data(), (size_t)count * sz), 0) << what << ": m";
  EXPECT_EQ(std::memcmp(got.v.data(), v.data(), (size_t)count * sz), 0) << what << ": v";
  EXPECT_TRUE(std::equal(got.m.begin() + count * sz, got.m.end(), before.m.begin() + count * sz))
      << what << ": m padding";
  EXPECT_TRUE(std::equal(got.v.begin() + count * sz, got.v.end(), before.v.begin() + count * sz))
      << what << ": v padding";
  EXPECT_EQ(std::memcmp(got.g.data(), before.g.data(), (size_t)c * 4), 0) << what << ": g";
}

TEST(CpuZero23, AdamWChunkIsAdamWOnTheRanksSliceThenTheGatherIsTheWholeStep) {
  const tgrt_model model = makeModel(64, 64, 64);
  tgrt_ctx* plain = tgrt_ctx_create(&model);
  for (const ShardCase& k : kShardCases)
    for (int32_t state_dt : {TGRT_F32, TGRT_BF16})
      for (bool wc : {false, true}) {
        const std::string what = std::string(wc ? "adamw_wc_chunk, " : "adamw_chunk, ") +
                                 caseName(k, TGRT_F32) + ", state " + dtName(state_dt);
        const AdamInputs whole = adamInputs(k.n, state_dt);
        // ZeRO-2's whole step: tgrt_adamw(_wc) on the whole tensors.
        AdamInputs wholeStep = whole;
        runAdam(plain, wholeStep, state_dt, wc, 0, false);
        std::vector<ChunkInputs> before, got;
        for (int32_t r = 0; r < k.R; ++r)
          before.push_back(chunkInputs(whole, state_dt, k.n, k.c, r));
        got = before;
        std::vector<ChunkInputs> gathered(k.R);
        onRanks(k.R, [&](int32_t r, tgrt_ctx* ctx) {
          runChunk(ctx, got[r], state_dt, wc, k.n, k.c);
          // ZeRO-2: then every rank gathers the updated values (and working copies) in place.
          gathered[r] = got[r];
          int64_t begin = 0;
          tgrt_shard_span(k.n, k.c, r, &begin, nullptr);
          tgrt_all_gather_start(ctx, "opt.gather.p", TGRT_F32, gathered[r].p.data() + begin,
                                gathered[r].p.data(), k.n, k.c);
          tgrt_all_gather_start(ctx, "opt.gather.w", TGRT_BF16, gathered[r].w.data() + begin,
                                gathered[r].w.data(), k.n, k.c);
          tgrt_all_reduce_wait(ctx, "opt.wait");
        });
        for (int32_t r = 0; r < k.R; ++r) {
          expectChunkIsAdamWOnTheSlice(plain, before[r], got[r], state_dt, wc, k.n, k.c, r, what);
          EXPECT_EQ(std::memcmp(gathered[r].p.data(), wholeStep.p.data(), (size_t)k.n * 4), 0)
              << what << ": rank " << r << "'s gathered p != tgrt_adamw on the whole tensor";
          EXPECT_EQ(gathered[r].w, wholeStep.w) << what << ": rank " << r << "'s gathered w";
        }
      }
  tgrt_ctx_destroy(plain);
}

TEST(CpuZero23, AdamWChunkOnARankHoldingNothingTouchesNothing) {
  // 7 elements over 3 ranks in chunks of 4: rank 2 holds none; its g, m, v may be NULL.
  onRanks(3, [](int32_t r, tgrt_ctx* ctx) {
    tgrt_set_step(ctx, 1);
    if (r != 2) return;
    VecF p(7, 0.5f);
    tgrt_adamw_chunk(ctx, "opt.b", TGRT_F32, p.data(), nullptr, TGRT_F32, nullptr, nullptr, 7, 4,
                     kB1, kB2, kEps, kWd, kClip);
    tgrt_adamw_wc_chunk(ctx, "opt.b", TGRT_F32, p.data(), nullptr, TGRT_F32, nullptr, nullptr, 7,
                        4, kB1, kB2, kEps, kWd, kClip, TGRT_BF16, nullptr);
    EXPECT_EQ(p, VecF(7, 0.5f));
  });
}

TEST(CpuZero23, WithoutCommunicatorTheCallsActOnRankZerosChunk) {
  const tgrt_model model = makeModel(64, 64, 64);
  tgrt_ctx* solo = tgrt_ctx_create(&model);
  tgrt_comm* comm1 = tgrt_comm_create_local(1);
  tgrt_ctx* one = tgrt_ctx_create(&model); // a 1-rank communicator: the same results
  tgrt_set_comm(one, comm1, 0, 1);
  const int64_t n = 7;
  for (int32_t dt : {TGRT_F32, TGRT_BF16}) {
    // All-gather copies min(n, c) elements of rank 0's shard.
    for (int64_t c : {3, 7, 9}) {
      if (c < n) { // without a communicator only: a 1-rank one needs c >= n
        const Typed shard(dt, randVec((size_t)c, 41));
        Typed full = guardBuffer(dt, n + 2);
        tgrt_all_gather_start(solo, "gather", dt, shard.data(), full.data(), n, c);
        for (int64_t i = 0; i < n + 2; ++i)
          ASSERT_EQ(elemBits(full, i), i < c ? elemBits(shard, i) : guardBits(dt))
              << dtName(dt) << " c " << c << " [" << i << "]";
        continue;
      }
      for (tgrt_ctx* ctx : {solo, one}) {
        const Typed shard(dt, randVec((size_t)c, 42));
        Typed full = guardBuffer(dt, n + 2);
        tgrt_all_gather_start(ctx, "gather", dt, shard.data(), full.data(), n, c);
        for (int64_t i = 0; i < n + 2; ++i)
          ASSERT_EQ(elemBits(full, i), i < n ? elemBits(shard, i) : guardBits(dt))
              << dtName(dt) << " c " << c << " [" << i << "]";
        // In place (rank 0: shard == full): nothing changes.
        const Typed fullBefore = full;
        tgrt_all_gather_start(ctx, "gather.in_place", dt, full.data(), full.data(), n, c);
        EXPECT_TRUE(full.sameBits(fullBefore));
      }
    }
    // Reduce-scatter: shard[i] += full[i] for i < min(n, c), float32 add rounded once.
    for (int64_t c : {3, 9}) {
      for (tgrt_ctx* ctx : {solo, one}) {
        if (ctx == one && c < n) continue;
        Typed full(dt, randVec((size_t)n + 2, 43)); // 2 finite values past n: never read
        const Typed start(dt, randVec((size_t)c, 44));
        const int64_t valid = std::min(n, c);
        const uint32_t pad = bitsIn(dt, 777.0f);
        Typed shard = shardOf(dt, start.widened(), valid, c, 0, pad);
        tgrt_reduce_scatter_mean_start(ctx, "scatter", dt, full.data(), shard.data(), n, c);
        for (int64_t i = 0; i < c; ++i)
          ASSERT_EQ(elemBits(shard, i),
                    i < valid ? bitsIn(dt, elemF(start, i) + elemF(full, i)) : pad)
              << dtName(dt) << " c " << c << " [" << i << "]";
      }
    }
  }
  // The sum all-reduce is a no-op.
  VecF s = {1.5f, -2.0f, 3.25f};
  tgrt_all_reduce_sum_f32(solo, "norm", s.data(), 3);
  tgrt_all_reduce_sum_f32(one, "norm", s.data(), 3);
  EXPECT_EQ(s, (VecF{1.5f, -2.0f, 3.25f}));
  // AdamW over rank 0's chunk: [0, min(n, c)).
  for (int32_t state_dt : {TGRT_F32, TGRT_BF16})
    for (bool wc : {false, true})
      for (int64_t c : {3, 7, 9}) {
        const std::string what = std::string(wc ? "adamw_wc_chunk" : "adamw_chunk") +
                                 ", no communicator, c " + std::to_string(c);
        const AdamInputs whole = adamInputs(n, state_dt);
        const ChunkInputs before = chunkInputs(whole, state_dt, n, c, 0);
        ChunkInputs got = before;
        runChunk(solo, got, state_dt, wc, n, c);
        expectChunkIsAdamWOnTheSlice(one, before, got, state_dt, wc, n, c, 0, what);
        if (c >= n) { // with the 1-rank communicator too
          ChunkInputs got1 = before;
          runChunk(one, got1, state_dt, wc, n, c);
          expectChunkIsAdamWOnTheSlice(solo, before, got1, state_dt, wc, n, c, 0,
                                       what + ", 1-rank communicator");
        }
      }
  tgrt_ctx_destroy(one);
  tgrt_ctx_destroy(solo);
  tgrt_comm_destroy(comm1);
}

TEST(CpuZero23DeathTest, MismatchedArgumentsFailNamingBothRanks) {
  // n differs (8 vs 7, both in chunks of 4).
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF full(8, 1.0f), shard(4, 1.0f);
                        tgrt_all_gather_start(ctx, r == 0 ? "gather.a" : "gather.b", TGRT_F32,
                                              shard.data(), full.data(), r == 0 ? 8 : 7, 4);
                      }),
              ::testing::ExitedWithCode(1),
              "tgrt: gather\\.[ab]: all_gather: rank [01] passes [78] elements of dtype 0 in "
              "chunks of 4 at gather\\.[ab], rank [01] passes [78] elements of dtype 0 in chunks "
              "of 4 at gather\\.[ab] \\(the ranks run different steps\\)");
  // c differs (4 vs 5 for 7 elements: both cover the tensor).
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF full(7, 1.0f), shard(5, 0.0f);
                        tgrt_reduce_scatter_mean_start(ctx, r == 0 ? "scatter.a" : "scatter.b",
                                                       TGRT_F32, full.data(), shard.data(), 7,
                                                       r == 0 ? 4 : 5);
                      }),
              ::testing::ExitedWithCode(1),
              "reduce_scatter_mean: rank [01] passes 7 elements of dtype 0 in chunks of [45] at "
              "scatter\\.[ab], rank [01] passes 7 elements of dtype 0 in chunks of [45] at "
              "scatter\\.[ab] \\(the ranks run different steps\\)");
  // dt differs.
  EXPECT_EXIT(onRanks(3,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF full(9, 1.0f), shard(3, 0.0f);
                        tgrt_all_gather_start(ctx, "gather.h.1", r == 1 ? TGRT_BF16 : TGRT_F32,
                                              shard.data(), full.data(), 9, 3);
                      }),
              ::testing::ExitedWithCode(1),
              "all_gather: rank [0-2] passes 9 elements of dtype [01] in chunks of 3 at "
              "gather\\.h\\.1, rank [0-2] passes 9 elements of dtype [01] in chunks of 3");
  // The sum all-reduce's n differs.
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF b(5, 1.0f);
                        tgrt_all_reduce_sum_f32(ctx, r == 0 ? "norm.a" : "norm.b", b.data(),
                                                r == 0 ? 5 : 4);
                      }),
              ::testing::ExitedWithCode(1),
              "all_reduce_sum_f32: rank [01] passes [45] elements of dtype 0 at norm\\.[ab], "
              "rank [01] passes [45] elements of dtype 0 at norm\\.[ab]");
  // Different collectives.
  EXPECT_EXIT(onRanks(2,
                      [](int32_t r, tgrt_ctx* ctx) {
                        VecF full(8, 1.0f), shard(4, 0.0f);
                        if (r == 0)
                          tgrt_all_gather_start(ctx, "ga", TGRT_F32, shard.data(), full.data(), 8,
                                                4);
                        else
                          tgrt_reduce_scatter_mean_start(ctx, "rs", TGRT_F32, full.data(),
                                                         shard.data(), 8, 4);
                      }),
              ::testing::ExitedWithCode(1),
              "rank [01] calls (all_gather|reduce_scatter_mean) at (ga|rs), rank [01] calls "
              "(all_gather|reduce_scatter_mean) at (ga|rs) \\(the ranks run different steps\\)");
}

/// Rank 0 of a 3-rank communicator (the others never call: the checks below come first).
tgrt_ctx* rank0Of3() {
  static const tgrt_model m = makeModel(64, 64, 64);
  tgrt_comm* comm = tgrt_comm_create_local(3);
  tgrt_ctx* ctx = tgrt_ctx_create(&m);
  tgrt_set_comm(ctx, comm, 0, 3);
  tgrt_set_step(ctx, 1);
  return ctx;
}

TEST(CpuZero23DeathTest, BadChunkSizeOrDtypeFailsNamingLoc) {
  VecF full(7, 1.0f), shard(3, 0.0f);
  EXPECT_EXIT(tgrt_reduce_scatter_mean_start(rank0Of3(), "micro.grad.h.0.w", TGRT_F32,
                                             full.data(), shard.data(), 7, 2),
              ::testing::ExitedWithCode(1),
              "tgrt: micro.grad.h.0.w: reduce_scatter_mean: chunk of 2 elements < ceil\\(7 / 3 "
              "ranks\\) = 3");
  EXPECT_EXIT(tgrt_all_gather_start(rank0Of3(), "gather.h.0.w", TGRT_F32, shard.data(),
                                    full.data(), 7, 2),
              ::testing::ExitedWithCode(1),
              "tgrt: gather.h.0.w: all_gather: chunk of 2 elements < ceil\\(7 / 3 ranks\\) = 3");
  EXPECT_EXIT(tgrt_adamw_chunk(rank0Of3(), "opt.h.0.w", TGRT_F32, full.data(), shard.data(),
                               TGRT_F32, shard.data(), shard.data(), 7, 2, kB1, kB2, kEps, kWd,
                               kClip),
              ::testing::ExitedWithCode(1),
              "tgrt: opt.h.0.w: adamw_chunk: chunk of 2 elements < ceil\\(7 / 3 ranks\\) = 3");
  EXPECT_EXIT(tgrt_adamw_wc_chunk(rank0Of3(), "opt.h.0.w", TGRT_F32, full.data(), shard.data(),
                                  TGRT_F32, shard.data(), shard.data(), 7, 2, kB1, kB2, kEps,
                                  kWd, kClip, TGRT_BF16, nullptr),
              ::testing::ExitedWithCode(1),
              "tgrt: opt.h.0.w: adamw_wc_chunk: chunk of 2 elements < ceil\\(7 / 3 ranks\\) = 3");
  // A 1-rank communicator needs c >= n.
  EXPECT_EXIT(
      {
        static const tgrt_model m = makeModel(64, 64, 64);
        tgrt_ctx* ctx = tgrt_ctx_create(&m);
        tgrt_set_comm(ctx, tgrt_comm_create_local(1), 0, 1);
        tgrt_all_gather_start(ctx, "gather.one", TGRT_F32, shard.data(), full.data(), 7, 3);
      },
      ::testing::ExitedWithCode(1),
      "tgrt: gather.one: all_gather: chunk of 3 elements < ceil\\(7 / 1 ranks\\) = 7");
  // Unknown dtype, negative sizes.
  EXPECT_EXIT(tgrt_all_gather_start(rank0Of3(), "gather.x", 7, shard.data(), full.data(), 7, 3),
              ::testing::ExitedWithCode(1), "tgrt: gather.x: all_gather: unknown dtype 7");
  EXPECT_EXIT(tgrt_reduce_scatter_mean_start(rank0Of3(), "scatter.x", TGRT_F32, full.data(),
                                             shard.data(), -1, 3),
              ::testing::ExitedWithCode(1),
              "tgrt: scatter.x: reduce_scatter_mean: negative size \\(n -1, c 3\\)");
  EXPECT_EXIT(tgrt_all_reduce_sum_f32(rank0Of3(), "norm.x", full.data(), -2),
              ::testing::ExitedWithCode(1), "tgrt: norm.x: negative size in all_reduce_sum_f32");
}

TEST(CpuZero23DeathTest, MissingRankTimesOutNamingTheCollective) {
  EXPECT_EXIT(
      {
        VecF full(8, 1.0f);
        VecF shard(4, 1.0f);
        tgrt_all_gather_start(loneRank0(), "zero3.gather.wte", TGRT_F32, shard.data(),
                              full.data(), 8, 4);
      },
      ::testing::ExitedWithCode(1),
      "tgrt: zero3.gather.wte: all_gather: rank 0 of 2 waited 0.2 s for the other ranks \\(1 of "
      "2 arrived\\)");
  EXPECT_EXIT(
      {
        VecF full(8, 1.0f);
        VecF shard(4, 1.0f);
        tgrt_reduce_scatter_mean_start(loneRank0(), "micro.grad.wte", TGRT_F32, full.data(),
                                       shard.data(), 8, 4);
      },
      ::testing::ExitedWithCode(1),
      "tgrt: micro.grad.wte: reduce_scatter_mean: rank 0 of 2 waited 0.2 s");
  EXPECT_EXIT(
      {
        VecF b(2, 1.0f);
        tgrt_all_reduce_sum_f32(loneRank0(), "optimizer.norm", b.data(), 2);
      },
      ::testing::ExitedWithCode(1),
      "tgrt: optimizer.norm: all_reduce_sum_f32: rank 0 of 2 waited 0.2 s");
}

} // namespace

// tgrt_matmul_bias is the GEMM followed by the row-broadcast bias (a linear layer).
TEST(CpuLinear, MatmulBiasEqualsMatmulThenBiasAdd) {
  tgrt_model model{};
  tgrt_ctx* ctx = tgrt_ctx_create(&model);
  ASSERT_NE(ctx, nullptr);
  const int64_t m = 7, n = 5, k = 3;
  std::vector<float> a(m * k), b(n * k), bias(n), want(m * n), got(m * n, 123.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.1f * (float)((i * 37) % 11) - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.2f * (float)((i * 17) % 7) - 0.6f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.3f * (float)i - 0.7f;
  for (int32_t tb = 0; tb < 2; ++tb) { // b stored [k, n] or, transposed, [n, k]
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (double)a[r * k + p] * (tb ? b[c * k + p] : b[p * n + c]);
        want[r * n + c] = (float)(0.5 * s + bias[c]);
      }
    tgrt_matmul_bias(ctx, "test", TGRT_F32, a.data(), b.data(), bias.data(), got.data(), m, n, k, 0,
                     tb, 0.5f);
    for (int64_t i = 0; i < m * n; ++i)
      EXPECT_NEAR(got[i], want[i], 1e-6) << "tb " << tb << " i " << i;
  }
  tgrt_ctx_destroy(ctx);
}

// ------------------------------------------------- non-finite checks (--find-nonfinite) --

namespace {

/// tgrt_stats of `v` (f32) computed naively here.
tgrt_stats naiveStats(const std::vector<float>& v) {
  tgrt_stats s{(int64_t)v.size(), 0, 0, 0, NAN, NAN};
  for (float x : v) {
    if (std::isnan(x)) {
      ++s.nan;
      continue;
    }
    s.pos_inf += x == kInf;
    s.neg_inf += x == -kInf;
    if (std::isnan(s.min) || x < s.min) s.min = x;
    if (std::isnan(s.max) || x > s.max) s.max = x;
  }
  return s;
}

void expectStats(const tgrt_stats& got, const tgrt_stats& want, const std::string& what) {
  EXPECT_EQ(got.count, want.count) << what;
  EXPECT_EQ(got.nan, want.nan) << what;
  EXPECT_EQ(got.pos_inf, want.pos_inf) << what;
  EXPECT_EQ(got.neg_inf, want.neg_inf) << what;
  if (std::isnan(want.min)) EXPECT_TRUE(std::isnan(got.min)) << what;
  else EXPECT_EQ(got.min, want.min) << what;
  if (std::isnan(want.max)) EXPECT_TRUE(std::isnan(got.max)) << what;
  else EXPECT_EQ(got.max, want.max) << what;
}

} // namespace

// Counts and min / max over every element type, with a row stride whose gaps hold NaN and inf
// that must not be counted; all-NaN and empty tensors; int32 ids beyond float precision.
TEST(CpuChecks, TensorStats) {
  tgrt_model model{};
  tgrt_ctx* ctx = tgrt_ctx_create(&model);
  ASSERT_NE(ctx, nullptr);
  const int64_t rows = 5, cols = 7, ld = 9;
  VecF v = randVec(rows * ld, 11, -3.0f, 3.0f);
  v[2] = NAN;
  v[ld + 3] = kInf;
  v[3 * ld + 6] = -kInf;
  v[4 * ld + 1] = 250.0f; // exact in bf16 and f16: the max
  for (int64_t r = 0; r < rows; ++r) v[r * ld + 7] = NAN, v[r * ld + 8] = kInf; // the gaps
  std::vector<float> seen; // what the strided view covers
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) seen.push_back(v[r * ld + c]);
  for (int32_t dt : {TGRT_F32, TGRT_BF16, TGRT_F16}) {
    std::vector<uint16_t> low(v.size());
    std::vector<float> widened(seen.size());
    for (size_t i = 0; i < v.size(); ++i)
      low[i] = dt == TGRT_BF16 ? tgrt_bf16_from_float(v[i]) : tgrt_f16_from_float(v[i]);
    for (size_t i = 0; i < seen.size(); ++i) {
      const uint16_t h = dt == TGRT_BF16 ? tgrt_bf16_from_float(seen[i]) : tgrt_f16_from_float(seen[i]);
      widened[i] = dt == TGRT_F32 ? seen[i] : dt == TGRT_BF16 ? tgrt_bf16_to_float(h) : tgrt_f16_to_float(h);
    }
    const void* p = dt == TGRT_F32 ? (const void*)v.data() : (const void*)low.data();
    tgrt_stats s;
    tgrt_tensor_stats(ctx, "test", dt, p, rows, cols, ld, &s);
    const tgrt_stats want = naiveStats(widened);
    expectStats(s, want, "dtype " + std::to_string(dt));
    EXPECT_EQ(s.count, rows * cols);
    EXPECT_EQ(s.nan, 1);
    EXPECT_EQ(s.pos_inf, 1);
    EXPECT_EQ(s.neg_inf, 1);
    EXPECT_EQ(s.min, -INFINITY);
    EXPECT_EQ(s.max, INFINITY);
  }
  // Only finite values: min and max are the extremes; contiguous (rows 1).
  const VecF fin = {0.5f, -2.0f, 3.25f, 1.0f};
  tgrt_stats s;
  tgrt_tensor_stats(ctx, "test", TGRT_F32, fin.data(), 1, 4, 4, &s);
  expectStats(s, naiveStats(fin), "finite");
  EXPECT_EQ(s.min, -2.0);
  EXPECT_EQ(s.max, 3.25);
  // All NaN: no min / max.
  const VecF nans(6, NAN);
  tgrt_tensor_stats(ctx, "test", TGRT_F32, nans.data(), 2, 3, 3, &s);
  EXPECT_EQ(s.nan, 6);
  EXPECT_TRUE(std::isnan(s.min) && std::isnan(s.max));
  // Empty.
  tgrt_tensor_stats(ctx, "test", TGRT_F32, nullptr, 0, 8, 8, &s);
  EXPECT_EQ(s.count, 0);
  EXPECT_TRUE(std::isnan(s.min));
  // int32 (token ids): exact beyond 2^24.
  const std::vector<int32_t> ids = {7, 16777217, -5, 3};
  tgrt_tensor_stats(ctx, "test", TGRT_CHECK_I32, ids.data(), 1, 4, 4, &s);
  EXPECT_EQ(s.min, -5.0);
  EXPECT_EQ(s.max, 16777217.0);
  EXPECT_EQ(s.nan + s.pos_inf + s.neg_inf, 0);
  // Errors.
  EXPECT_EXIT(tgrt_tensor_stats(ctx, "here", TGRT_F32, fin.data(), 2, 4, 3, &s),
              ::testing::ExitedWithCode(1), "tgrt: here: tensor_stats: row stride ld 3 < cols 4");
  EXPECT_EXIT(tgrt_tensor_stats(ctx, "here", 7, fin.data(), 1, 4, 4, &s),
              ::testing::ExitedWithCode(1), "tgrt: here: tensor_stats: unknown dtype 7");
  tgrt_ctx_destroy(ctx);
}

// The check session: off by default (no-op), the first site with a non-finite output wins
// (later ones are ignored), inputs overwritten in place are reported as they were before the
// call, -inf passes where the site allows it, and end turns the checks off.
TEST(CpuChecks, FirstNonFiniteOpIsReported) {
  tgrt_model model = makeModel(256, 256, 0);
  tgrt_ctx* ctx = tgrt_ctx_create(&model);
  ASSERT_NE(ctx, nullptr);
  float* x = reinterpret_cast<float*>(tgrt_region(ctx, TGRT_PERSISTENT)); // "w" [4]
  float* y = reinterpret_cast<float*>(tgrt_region(ctx, TGRT_ARENA));      // "y" [4], at 0
  const float w[4] = {1.0f, -2.0f, kInf, 0.5f};
  std::memcpy(x, w, sizeof w);
  const tgrt_check_tensor mask[2] = {
      {"m (tg.causal_mask)", "[4]", TGRT_CHECK_OUT, TGRT_F32, TGRT_ARENA, TGRT_CHECK_NEG_INF_OK,
       16, 1, 4, 4},
      {"w (parameter)", "[4]", TGRT_CHECK_IN, TGRT_F32, TGRT_PERSISTENT, 0, 0, 1, 4, 4}};
  const tgrt_check_tensor add[2] = {
      {"y (tg.add)", "[4]", TGRT_CHECK_OUT, TGRT_F32, TGRT_ARENA, 0, 0, 1, 4, 4},
      {"y0 (tg.fill)", "[4]", TGRT_CHECK_IN_OVERWRITTEN, TGRT_F32, TGRT_ARENA, 0, 0, 1, 4, 4}};
  const tgrt_check_tensor other[2] = {
      {"z (tg.gelu)", "[2]", TGRT_CHECK_OUT, TGRT_F32, TGRT_ARENA, 0, 32, 1, 2, 2},
      {"w (parameter)", "[4]", TGRT_CHECK_IN, TGRT_F32, TGRT_PERSISTENT, 0, 0, 1, 4, 4}};
  const tgrt_check_site maskSite = {"layers.0.attn.mask", "tg.causal_mask", "tgrt_causal_mask",
                                    "forward", 2, mask};
  const tgrt_check_site addSite = {"layers.1.mlp.residual", "tg.add", "tgrt_add", "forward", 2,
                                   add};
  const tgrt_check_site otherSite = {"later", "tg.gelu", "tgrt_gelu_fwd", "forward", 2, other};
  float* m = y + 4;
  float* z = y + 8;
  m[0] = 1.0f, m[1] = -kInf, m[2] = -kInf, m[3] = 2.0f; // -inf allowed: no hit
  z[0] = NAN, z[1] = 1.0f;

  // Off: nothing is checked, nothing reported.
  EXPECT_EQ(tgrt_check_enabled(ctx), 0);
  EXPECT_EQ(tgrt_check_op(ctx, &otherSite), 0);
  EXPECT_EQ(tgrt_check_report(ctx), nullptr);

  tgrt_check_begin(ctx);
  EXPECT_EQ(tgrt_check_enabled(ctx), 1);
  EXPECT_EQ(tgrt_check_op(ctx, &maskSite), 0);
  // y = y0 + w in place: y0 finite before, y gets the inf.
  const float y0[4] = {0.25f, 0.5f, 0.75f, -1.0f};
  std::memcpy(y, y0, sizeof y0);
  tgrt_check_inputs(ctx, &addSite);
  for (int i = 0; i < 4; ++i) y[i] += w[i];
  EXPECT_EQ(tgrt_check_op(ctx, &addSite), 1);
  EXPECT_EQ(tgrt_check_enabled(ctx), 0); // found: the rest of the step runs unchecked
  EXPECT_EQ(tgrt_check_op(ctx, &otherSite), 0); // not reported: not the first
  const char* r = tgrt_check_report(ctx);
  ASSERT_NE(r, nullptr);
  const std::string report = r;
  EXPECT_EQ(report,
            "layers.1.mlp.residual (tg.add, forward; runtime call tgrt_add) wrote non-finite "
            "values:\n"
            "  output y (tg.add) f32 [4]: min -1.5 max inf, 1 of 4 not finite (0 NaN, 1 +inf, "
            "0 -inf)\n"
            "  input  y0 (tg.fill) f32 [4]: min -1 max 0.75, all finite (before the call; "
            "updated in place)");
  tgrt_check_end(ctx);
  EXPECT_EQ(tgrt_check_enabled(ctx), 0);
  EXPECT_EQ(tgrt_check_report(ctx), nullptr);

  // A new session reports again; inputs read after the call.
  tgrt_check_begin(ctx);
  EXPECT_EQ(tgrt_check_op(ctx, &otherSite), 1);
  EXPECT_NE(std::string(tgrt_check_report(ctx)).find(
                "  output z (tg.gelu) f32 [2]: min 1 max 1, 1 of 2 not finite (1 NaN, 0 +inf, "
                "0 -inf)\n  input  w (parameter) f32 [4]: min -2 max inf, 1 of 4 not finite "
                "(0 NaN, 1 +inf, 0 -inf)"),
            std::string::npos)
      << tgrt_check_report(ctx);
  // Another context is not affected.
  tgrt_ctx* other_ctx = tgrt_ctx_create(&model);
  EXPECT_EQ(tgrt_check_enabled(other_ctx), 0);
  tgrt_ctx_destroy(other_ctx);
  tgrt_check_end(ctx);
  tgrt_ctx_destroy(ctx);
}
