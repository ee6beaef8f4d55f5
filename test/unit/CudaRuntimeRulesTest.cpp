// CudaRuntimeRulesTest.cpp — the CUDA runtime's host-side rules, checked on the CPU
// emulator's build of the runtime (tgrt_cuda_emu): the cross-entropy's variant per vocabulary
// (ceVariantFor, the rule the default takes) and the TGRT_* switches read at context
// creation (a value the switch does not take is reported on stderr and the default runs);
// tgrt_upload_async's staging (the caller's buffer is free when it returns).
#include <gtest/gtest.h>

#include "runtime/cuda/CudaRuntime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kHopperSms = 132;           // H100 SXM / H200
constexpr int64_t kHopperL2 = 52428800;       // their cudaDeviceProp::l2CacheSize (an H100;
                                              // some H200 hosts report 62914560, below)

TEST(CeVariant, VocabulariesOfTheExamplesOnAHopper) {
  // bf16 rows: 4 x V x 2 x 132 against half of 50 MiB: every example takes 6.
  EXPECT_EQ(tgrt_cuda::ceVariantFor(32000, 2, kHopperSms, kHopperL2), 6);  // head dim 128 shape
  EXPECT_EQ(tgrt_cuda::ceVariantFor(49152, 2, kHopperSms, kHopperL2), 6);  // SmolLM2
  EXPECT_EQ(tgrt_cuda::ceVariantFor(50304, 2, kHopperSms, kHopperL2), 6);  // GPT-2 (padded)
  EXPECT_EQ(tgrt_cuda::ceVariantFor(128256, 2, kHopperSms, kHopperL2), 6); // Llama 3
  // ... also on an H200 that reports 60 MiB (before 2026-12-01 GPT-2 and SmolLM2 took 7 there).
  EXPECT_EQ(tgrt_cuda::ceVariantFor(32000, 2, kHopperSms, 62914560), 6);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(50304, 2, kHopperSms, 62914560), 6);
}

TEST(CeVariant, TheBoundaryIsHalfOfL2) {
  // 4 x 24824 x 2 x 132 = 26,214,144 <= 26,214,400 = 52,428,800 / 2; one more row element
  // makes it 26,215,200, 800 bytes over.
  EXPECT_EQ(tgrt_cuda::ceVariantFor(24824, 2, kHopperSms, kHopperL2), 7);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(24825, 2, kHopperSms, kHopperL2), 6);
  // The sweep's vocabularies (Kernels.cu, s10 calls 1 and 5): 7 where it was 18% faster.
  EXPECT_EQ(tgrt_cuda::ceVariantFor(16384, 2, kHopperSms, kHopperL2), 7);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(24576, 2, kHopperSms, kHopperL2), 7);
  // Element bytes count: 4-byte rows of 16384 are over it.
  EXPECT_EQ(tgrt_cuda::ceVariantFor(16384, 4, kHopperSms, kHopperL2), 6);
  // An H200 that reports 60 MiB of L2: the boundary moves to V 29789.
  EXPECT_EQ(tgrt_cuda::ceVariantFor(29789, 2, kHopperSms, 62914560), 7);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(29790, 2, kHopperSms, 62914560), 6);
  // Fewer SMs keep fewer rows in flight (the emulator's 4 SMs: GPT-2's vocabulary fits).
  EXPECT_EQ(tgrt_cuda::ceVariantFor(50304, 2, 4, kHopperL2), 7);
}

TEST(CeVariant, AnUnknownSizeTakesTheBlocksOf512) {
  EXPECT_EQ(tgrt_cuda::ceVariantFor(32000, 2, kHopperSms, 0), 6);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(32000, 2, 0, kHopperL2), 6);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(0, 2, kHopperSms, kHopperL2), 6);
  EXPECT_EQ(tgrt_cuda::ceVariantFor(32000, 0, kHopperSms, kHopperL2), 6);
}

/// A context over small regions with the environment variables `vars` set (unset after),
/// and what ctx_create wrote on stderr.
struct EnvContext {
  tgrt_cuda::Context* ctx = nullptr;
  std::string err;
  tgrt_model model{};
  EnvContext(std::initializer_list<std::pair<const char*, const char*>> vars) {
    std::memset(&model, 0, sizeof model);
    model.name = "rules-test";
    model.persistent_bytes = 1 << 16;
    model.arena_bytes = 1 << 16;
    model.workspace_bytes = 1 << 16;
    model.lr = 1e-3f;
    for (const auto& [name, value] : vars) setenv(name, value, 1);
    testing::internal::CaptureStderr();
    ctx = tgrt_cuda::createContext(&model);
    err = testing::internal::GetCapturedStderr();
    for (const auto& [name, value] : vars) unsetenv(name);
  }
  EnvContext(const char* name, const char* value) : EnvContext({{name, value}}) {}
  ~EnvContext() {
    if (ctx) tgrt_cuda::destroyContext(ctx);
  }
};

TEST(RuntimeSwitches, ACrossEntropyVariantItTakes) {
  for (const auto& [value, want] :
       {std::pair<const char*, int>{"7", 7}, {"6", 6}, {"0", 0}, {"auto", -1}}) {
    EnvContext c("TGRT_CE_FAST", value);
    ASSERT_NE(c.ctx, nullptr) << c.err;
    EXPECT_EQ(c.err.find("TGRT_CE_FAST"), std::string::npos) << c.err;
    // setCeFast returns the variant before it.
    EXPECT_EQ(tgrt_cuda::setCeFast(c.ctx, -1), want) << "TGRT_CE_FAST=" << value;
  }
}

TEST(RuntimeSwitches, AValueASwitchDoesNotTakeIsNamedAndTheDefaultRuns) {
  EnvContext c("TGRT_CE_FAST", "5");
  ASSERT_NE(c.ctx, nullptr) << c.err;
  EXPECT_NE(c.err.find("TGRT_CE_FAST=5 is not one of auto, 0, 6, 7; the default runs"),
            std::string::npos)
      << c.err;
  EXPECT_EQ(tgrt_cuda::setCeFast(c.ctx, -1), -1);
}

TEST(RuntimeSwitches, AdamwArithmeticIsFloatByDefault) {
  // setAdamwF32 returns the setting before: the one TGRT_ADAMW_MATH gave the context.
  EnvContext def({});
  ASSERT_NE(def.ctx, nullptr) << def.err;
  EXPECT_TRUE(tgrt_cuda::setAdamwF32(def.ctx, true));
  EnvContext f64("TGRT_ADAMW_MATH", "f64");
  ASSERT_NE(f64.ctx, nullptr) << f64.err;
  EXPECT_EQ(f64.err.find("TGRT_ADAMW_MATH"), std::string::npos) << f64.err;
  EXPECT_FALSE(tgrt_cuda::setAdamwF32(f64.ctx, true));
  EnvContext bad("TGRT_ADAMW_MATH", "double");
  ASSERT_NE(bad.ctx, nullptr) << bad.err;
  EXPECT_NE(bad.err.find("TGRT_ADAMW_MATH=double is not one of f64, f32; the default runs"),
            std::string::npos)
      << bad.err;
  EXPECT_TRUE(tgrt_cuda::setAdamwF32(bad.ctx, true));
}

TEST(RuntimeSwitches, AnIntegerSwitchOutsideItsRangeIsNamed) {
  for (const char* value : {"0", "1001", "3x", "-2"}) {
    EnvContext c("TGRT_GEMM_TUNE_CALLS", value);
    ASSERT_NE(c.ctx, nullptr) << c.err;
    EXPECT_NE(c.err.find(std::string("TGRT_GEMM_TUNE_CALLS=") + value +
                         " is not a whole number in [1, 1000]"),
              std::string::npos)
        << c.err;
  }
  EnvContext good("TGRT_GEMM_TUNE_CALLS", "3");
  ASSERT_NE(good.ctx, nullptr) << good.err;
  EXPECT_EQ(good.err.find("TGRT_GEMM_TUNE_CALLS"), std::string::npos) << good.err;
}

TEST(RuntimeSwitches, AdamwGridIsReadAtCreation) {
  // setAdamwBlocks returns the grid before: the one TGRT_ADAMW_BLOCKS gave the context.
  EnvContext def({});
  ASSERT_NE(def.ctx, nullptr) << def.err;
  EXPECT_EQ(tgrt_cuda::setAdamwBlocks(def.ctx, 1), 65536);
  EnvContext set("TGRT_ADAMW_BLOCKS", "16384");
  ASSERT_NE(set.ctx, nullptr) << set.err;
  EXPECT_EQ(set.err.find("TGRT_ADAMW_BLOCKS"), std::string::npos) << set.err;
  EXPECT_EQ(tgrt_cuda::setAdamwBlocks(set.ctx, 1), 16384);
  EnvContext bad("TGRT_ADAMW_BLOCKS", "0");
  ASSERT_NE(bad.ctx, nullptr) << bad.err;
  EXPECT_NE(bad.err.find("TGRT_ADAMW_BLOCKS=0 is not a whole number in [1, 2147483647]"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(tgrt_cuda::setAdamwBlocks(bad.ctx, 1), 65536);
}

TEST(RuntimeSwitches, TheAttentionTuningSwitchesAreReadAtCreation) {
  EnvContext bad("TGRT_ATTN_TUNE", "yes");
  ASSERT_NE(bad.ctx, nullptr) << bad.err;
  EXPECT_NE(bad.err.find("TGRT_ATTN_TUNE=yes is not one of 0, 1"), std::string::npos) << bad.err;
  EnvContext log("TGRT_ATTN_TUNE_LOG", "2");
  ASSERT_NE(log.ctx, nullptr) << log.err;
  EXPECT_NE(log.err.find("TGRT_ATTN_TUNE_LOG=2 is not one of 0, 1"), std::string::npos)
      << log.err;
}

TEST(RuntimeSwitches, AnAttentionImplementationItDoesNotTakeKeepsTheCompiledOne) {
  // The emulator's build has no cuDNN: the compiled choice is the own kernels.
  EnvContext bad("TGRT_ATTN", "flash");
  ASSERT_NE(bad.ctx, nullptr) << bad.err;
  EXPECT_NE(bad.err.find("TGRT_ATTN=flash is not one of own, cudnn, cudnn-det; the default runs"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(tgrt_cuda::attentionImpl(bad.ctx), tgrt_cuda::AttentionImpl::Own);
  EnvContext own("TGRT_ATTN", "own");
  ASSERT_NE(own.ctx, nullptr) << own.err;
  EXPECT_EQ(own.err.find("TGRT_ATTN"), std::string::npos) << own.err;
}

TEST(CeVariant, TheContextsDefaultIsTheRuleOnItsDevice) {
  EnvContext c("TGRT_CE_FAST", "auto");
  ASSERT_NE(c.ctx, nullptr) << c.err;
  // The emulator's device: 4 SMs; GPT-2's vocabulary fits its L2 (the rule's test above).
  EXPECT_EQ(tgrt_cuda::ceAutoVariant(c.ctx, 50304, 2), 7);
  EXPECT_EQ(tgrt_cuda::ceAutoVariant(c.ctx, 50304, 2),
            tgrt_cuda::ceVariantFor(50304, 2, 4, 52428800));
}

TEST(GemmStepTune, EachCandidateIsTimedInTheStepThenOneIsKept) {
  // The emulator's cuBLASLt offers two algorithms per shape (the same arithmetic): both are
  // timed alone at the first call, then each in kStepTuneRounds steps of its own, in turn.
  EnvContext c({{"TGRT_GEMM_STEP_TUNE", "1"}, {"TGRT_GEMM_TUNE_CACHE", ""}});
  ASSERT_NE(c.ctx, nullptr) << c.err;
  const int64_t m = 8, n = 16, k = 32;
  std::vector<float> a((size_t)(m * k)), b((size_t)(k * n)), want((size_t)(m * n), 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = (float)((i * 7) % 11) - 5.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = (float)((i * 5) % 13) - 6.0f;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t q = 0; q < k; ++q)
        want[(size_t)(i * n + j)] += a[(size_t)(i * k + q)] * b[(size_t)(q * n + j)];
  const int64_t offA = 0, offB = 4096, offC = 8192;
  tgrt_cuda::upload(c.ctx, TGRT_ARENA, offA, a.data(), (int64_t)a.size() * 4);
  tgrt_cuda::upload(c.ctx, TGRT_ARENA, offB, b.data(), (int64_t)b.size() * 4);
  char* base = tgrt_cuda::region(c.ctx, TGRT_ARENA);
  int decided = -1, changed = -1, active = -1;
  int steps = 0;
  testing::internal::CaptureStderr();
  for (; steps < 20; ++steps) { // a "step": the GEMM twice, then the step's synchronisation
    for (int call = 0; call < 2; ++call)
      tgrt_cuda::matmul(c.ctx, "test", TGRT_F32, base + offA, base + offB, base + offC, 1, m, n,
                        k, 0, 0, 0, 0, 0, 1.0f, 0.0f);
    tgrt_cuda::synchronize(c.ctx);
    std::vector<float> got((size_t)(m * n));
    tgrt_cuda::download(c.ctx, TGRT_ARENA, offC, got.data(), (int64_t)got.size() * 4);
    ASSERT_EQ(got, want) << "step " << steps;
    tgrt_cuda::gemmStepTuneCounts(c.ctx, &decided, &changed, &active);
    if (!active) break;
  }
  const std::string err = testing::internal::GetCapturedStderr();
  // Step 1 tunes alone; then 2 candidates x 3 rounds.
  EXPECT_EQ(active, 0);
  EXPECT_EQ(decided, 1);
  EXPECT_EQ(steps + 1, 1 + 2 * 3);
  EXPECT_GE(changed, 0);
  EXPECT_NE(err.find("GEMM tuning in the step (TGRT_GEMM_STEP_TUNE=1): 1 shape(s) decided "
                     "after 7 steps"),
            std::string::npos)
      << err;
}

TEST(GemmStepTune, OffByDefault) {
  EnvContext c("TGRT_GEMM_TUNE_CACHE", ""); // (no file written)
  ASSERT_NE(c.ctx, nullptr) << c.err;
  std::vector<float> x(64, 1.0f);
  tgrt_cuda::upload(c.ctx, TGRT_ARENA, 0, x.data(), 256);
  char* base = tgrt_cuda::region(c.ctx, TGRT_ARENA);
  for (int s = 0; s < 3; ++s) {
    tgrt_cuda::matmul(c.ctx, "test", TGRT_F32, base, base, base + 4096, 1, 8, 8, 8, 0, 0, 0, 0,
                      0, 1.0f, 0.0f);
    tgrt_cuda::synchronize(c.ctx);
  }
  int decided = -1, changed = -1, active = -1;
  tgrt_cuda::gemmStepTuneCounts(c.ctx, &decided, &changed, &active);
  EXPECT_EQ(decided, 0);
  EXPECT_EQ(active, 0);
}

TEST(UploadAsync, TheCallersBufferIsFreeWhenItReturns) {
  EnvContext c("TGRT_CE_FAST", "auto");
  ASSERT_NE(c.ctx, nullptr) << c.err;
  // More uploads than staging buffers (4), growing in size, each source overwritten at once:
  // what lands is what the source held at the call.
  std::vector<int32_t> src;
  int64_t offset = 0;
  std::vector<std::pair<int64_t, std::vector<int32_t>>> want;
  for (int i = 0; i < 9; ++i) {
    const int64_t n = 64 << (i % 4);
    src.assign((size_t)n, 0);
    for (int64_t j = 0; j < n; ++j) src[(size_t)j] = (int32_t)(i * 100000 + j);
    tgrt_cuda::uploadAsync(c.ctx, TGRT_ARENA, offset, src.data(), n * 4);
    want.push_back({offset, src});
    std::fill(src.begin(), src.end(), -1);
    offset += n * 4;
  }
  ASSERT_LE(offset, c.model.arena_bytes);
  tgrt_cuda::synchronize(c.ctx);
  for (const auto& [off, bytes] : want) {
    std::vector<int32_t> got(bytes.size(), 0);
    tgrt_cuda::download(c.ctx, TGRT_ARENA, off, got.data(), (int64_t)got.size() * 4);
    EXPECT_EQ(got, bytes) << "upload at offset " << off;
  }
  // Zero bytes is no copy; the host region takes the synchronous path.
  tgrt_cuda::uploadAsync(c.ctx, TGRT_ARENA, 0, nullptr, 0);
}

/// The norms' backwards take their low copy in dy's own buffer (tg-plan-memory puts it there)
/// but refuse, with the call's location, a copy that overlaps dy without being it, or that is
/// dy with another dtype (runtime/tgrt_kernels.def); checked before anything runs.
TEST(NormLowCopy, AnOverlapOrAnotherDtypeInDyIsRefused) {
  EnvContext c("TGRT_CE_FAST", "auto");
  ASSERT_NE(c.ctx, nullptr) << c.err;
  const int64_t rows = 4, d = 64;
  std::vector<uint16_t> dy((size_t)(rows * d + 8));
  std::vector<float> x((size_t)(rows * d)), g((size_t)d), stat((size_t)rows), res(x.size()),
      dg((size_t)d), db((size_t)d);
  auto ln = [&](void* low, int32_t low_dt) {
    tgrt_cuda::layerNormBwdAcc(c.ctx, "layers.2.ln1", false, TGRT_BF16, dy.data(), TGRT_F32,
                               x.data(), TGRT_F32, g.data(), stat.data(), stat.data(),
                               res.data(), low_dt, low, dg.data(), db.data(), rows, d);
  };
  auto rms = [&](void* low, int32_t low_dt) {
    tgrt_cuda::rmsNormBwdAcc(c.ctx, "layers.2.ln2", TGRT_BF16, dy.data(), TGRT_F32, x.data(),
                             TGRT_F32, g.data(), stat.data(), res.data(), low_dt, low,
                             dg.data(), rows, d);
  };
  EXPECT_EXIT(ln(dy.data() + 8, TGRT_BF16), ::testing::ExitedWithCode(1),
              "tgrt: layers.2.ln1: layer_norm_bwd_acc: low overlaps dy without being equal to it");
  EXPECT_EXIT(ln(dy.data(), TGRT_F16), ::testing::ExitedWithCode(1),
              "tgrt: layers.2.ln1: layer_norm_bwd_acc: low equals dy with another dtype");
  EXPECT_EXIT(rms(dy.data() + 8, TGRT_BF16), ::testing::ExitedWithCode(1),
              "tgrt: layers.2.ln2: rms_norm_bwd_acc: low overlaps dy without being equal to it");
  EXPECT_EXIT(rms(dy.data(), TGRT_F16), ::testing::ExitedWithCode(1),
              "tgrt: layers.2.ln2: rms_norm_bwd_acc: low equals dy with another dtype");
}

} // namespace
