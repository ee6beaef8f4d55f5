// DriverTest.cpp — unit tests of the training driver (runtime/driver) and `tgc data prepare`
// (tools/data): file formats, lr schedule, init, data preparation on a small corpus, and a
// fake model trained through tgrt_driver_main on the CPU backend, including exact resume,
// bf16 parameters, precision checks on resume and dynamic loss scaling.
#include "test/unit/TempDir.h"
#include "runtime/driver/Driver.h"
#include "runtime/driver/Npy.h"
#include "runtime/driver/Safetensors.h"
#include "tools/data/DataPrepare.h"

#include <gtest/gtest.h>

#include <array>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <unistd.h>

#include <chrono>
#include <thread>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory per test (TempDir.h), named after this file's tests.
struct TempDir : tgc_test::TempDir {
  TempDir() : tgc_test::TempDir("tgc-driver") {}
};

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// ------------------------------------------------------------------------------ npy --

TEST(Npy, RoundTripAllDtypes) {
  TempDir d;
  std::string err;
  const std::vector<uint16_t> a16 = {0, 1, 65535, 42};
  const std::vector<uint32_t> a32 = {0, 70000, 4000000000u};
  const std::vector<int32_t> i32 = {-5, 0, 123456};
  const std::vector<float> f32 = {1.5f, -2.25f, 3e-8f};
  ASSERT_TRUE(tgrt::writeNpy(d / "a.npy", tgrt::NpyDtype::U16, a16.data(), 4, &err)) << err;
  ASSERT_TRUE(tgrt::writeNpy(d / "b.npy", tgrt::NpyDtype::U32, a32.data(), 3, &err)) << err;
  ASSERT_TRUE(tgrt::writeNpy(d / "c.npy", tgrt::NpyDtype::I32, i32.data(), 3, &err)) << err;
  ASSERT_TRUE(tgrt::writeNpy(d / "e.npy", tgrt::NpyDtype::F32, f32.data(), 3, &err)) << err;
  ASSERT_TRUE(tgrt::writeNpy(d / "z.npy", tgrt::NpyDtype::U16, nullptr, 0, &err)) << err;
  EXPECT_FALSE(fs::exists(d / "a.npy.tmp"));

  // The header is NumPy's v1.0 layout, data 64-byte aligned.
  const std::string raw = readBytes(d / "a.npy");
  EXPECT_EQ(raw.substr(0, 6), "\x93NUMPY");
  EXPECT_NE(raw.find("{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }"),
            std::string::npos);
  EXPECT_EQ((raw.size() - 8) % 64, 0u); // 10 + header = 64 k; 4 elements * 2 bytes = 8

  tgrt::NpyArray arr;
  ASSERT_TRUE(tgrt::readNpy(d / "a.npy", &arr, &err)) << err;
  EXPECT_EQ(arr.dtype, tgrt::NpyDtype::U16);
  ASSERT_EQ(arr.count, 4);
  EXPECT_EQ(0, std::memcmp(arr.bytes.data(), a16.data(), 8));
  ASSERT_TRUE(tgrt::readNpy(d / "b.npy", &arr, &err)) << err;
  EXPECT_EQ(arr.dtype, tgrt::NpyDtype::U32);
  EXPECT_EQ(0, std::memcmp(arr.bytes.data(), a32.data(), 12));
  ASSERT_TRUE(tgrt::readNpy(d / "c.npy", &arr, &err)) << err;
  EXPECT_EQ(arr.dtype, tgrt::NpyDtype::I32);
  EXPECT_EQ(0, std::memcmp(arr.bytes.data(), i32.data(), 12));
  ASSERT_TRUE(tgrt::readNpy(d / "e.npy", &arr, &err)) << err;
  EXPECT_EQ(arr.dtype, tgrt::NpyDtype::F32);
  EXPECT_EQ(0, std::memcmp(arr.bytes.data(), f32.data(), 12));
  ASSERT_TRUE(tgrt::readNpy(d / "z.npy", &arr, &err)) << err;
  EXPECT_EQ(arr.count, 0);

  std::vector<uint32_t> toks;
  ASSERT_TRUE(tgrt::readTokens(d / "b.npy", 0, &toks, &err)) << err;
  EXPECT_EQ(toks, a32);
}

TEST(Npy, CorruptFilesNameFileAndOffset) {
  TempDir d;
  std::string err;
  tgrt::NpyArray arr;
  EXPECT_FALSE(tgrt::readNpy(d / "missing.npy", &arr, &err));
  EXPECT_NE(err.find("missing.npy"), std::string::npos) << err;

  writeBytes(d / "magic.npy", "PK\x03\x04 not numpy at all");
  EXPECT_FALSE(tgrt::readNpy(d / "magic.npy", &arr, &err));
  EXPECT_NE(err.find("magic.npy"), std::string::npos) << err;
  EXPECT_NE(err.find("byte offset 0"), std::string::npos) << err;

  const std::vector<uint16_t> v(100, 7);
  ASSERT_TRUE(tgrt::writeNpy(d / "ok.npy", tgrt::NpyDtype::U16, v.data(), 100, &err));
  std::string raw = readBytes(d / "ok.npy");
  writeBytes(d / "trunc.npy", raw.substr(0, raw.size() - 11));
  EXPECT_FALSE(tgrt::readNpy(d / "trunc.npy", &arr, &err));
  EXPECT_NE(err.find("trunc.npy"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  // The ~60-character header dict pads 10 + header to 128 bytes, where the data starts.
  EXPECT_NE(err.find("byte offset 128"), std::string::npos) << err;

  std::string twod = raw;
  twod.replace(twod.find("(100,)"), 6, "(10,10)");
  writeBytes(d / "2d.npy", twod);
  EXPECT_FALSE(tgrt::readNpy(d / "2d.npy", &arr, &err));
  EXPECT_NE(err.find("1-D"), std::string::npos) << err;

  std::string be = raw;
  be.replace(be.find("<u2"), 3, ">u2");
  writeBytes(d / "be.npy", be);
  EXPECT_FALSE(tgrt::readNpy(d / "be.npy", &arr, &err));
  EXPECT_NE(err.find("'>u2'"), std::string::npos) << err;

  // Token id out of range: names the index and the byte offset (128 + 2 * index).
  std::vector<uint16_t> toks = {1, 2, 3, 99, 4};
  ASSERT_TRUE(tgrt::writeNpy(d / "t.npy", tgrt::NpyDtype::U16, toks.data(), 5, &err));
  std::vector<uint32_t> out;
  EXPECT_FALSE(tgrt::readTokens(d / "t.npy", 50, &out, &err));
  EXPECT_NE(err.find("t.npy"), std::string::npos) << err;
  EXPECT_NE(err.find("token id 99 at index 3"), std::string::npos) << err;
  EXPECT_NE(err.find("byte offset 134"), std::string::npos) << err;
}

TEST(Npy, TokenDtypeMessageListsWhatIsAccepted) {
  // Token files: the message lists the dtypes readTokens accepts (float32 is not one), for
  // float32 itself as for any other dtype; readNpy alone still reads float32.
  TempDir d;
  std::string err;
  const std::vector<float> f = {1, 2, 3};
  ASSERT_TRUE(tgrt::writeNpy(d / "f.npy", tgrt::NpyDtype::F32, f.data(), 3, &err));
  tgrt::NpyArray arr;
  EXPECT_TRUE(tgrt::readNpy(d / "f.npy", &arr, &err)) << err;
  std::vector<uint32_t> toks;
  const std::string want = "' for token ids (expected little-endian uint16 '<u2', uint32 '<u4' "
                           "or int32 '<i4') (at byte offset ";
  EXPECT_FALSE(tgrt::readTokens(d / "f.npy", 0, &toks, &err));
  EXPECT_NE(err.find("f.npy: unsupported dtype '<f4" + want), std::string::npos) << err;
  std::string raw = readBytes(d / "f.npy");
  raw.replace(raw.find("<f4"), 3, "<f8");
  writeBytes(d / "f8.npy", raw);
  EXPECT_FALSE(tgrt::readTokens(d / "f8.npy", 0, &toks, &err));
  EXPECT_NE(err.find("f8.npy: unsupported dtype '<f8" + want), std::string::npos) << err;
  EXPECT_EQ(err.find("float32"), std::string::npos) << err;
}

// ---------------------------------------------------------------------- safetensors --

TEST(Safetensors, ChecksumsAreZlibCrc32AndVerifiedOnRead) {
  // crc32 is zlib's (Python's zlib.crc32), whatever the length and alignment.
  std::mt19937 rng(3);
  std::vector<uint8_t> buf(1000);
  for (auto& b : buf) b = (uint8_t)rng();
  for (size_t off : {0, 1, 3}) {
    for (size_t n : {0, 1, 7, 8, 9, 64, 997 - 3}) {
      EXPECT_EQ(tgrt::crc32(buf.data() + off, n),
                (uint32_t)::crc32(0L, buf.data() + off, (uInt)n))
          << off << " " << n;
    }
  }
  EXPECT_EQ(tgrt::crc32("123456789", 9), 0xCBF43926u); // the CRC-32 check value
  TempDir d;
  std::string err;
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, b = {0.5f, -1};
  ASSERT_TRUE(tgrt::writeSafetensors(d / "c.st", {{"w", {2, 3}, w.data()}, {"b", {2}, b.data()}},
                                     {{"step", "1"}}, &err, /*checksums=*/true))
      << err;
  tgrt::SafetensorsReader r;
  ASSERT_TRUE(r.open(d / "c.st", &err)) << err;
  EXPECT_TRUE(r.hasChecksums());
  EXPECT_EQ(r.metadata().at("crc32.w"), tgrt::checksumText(tgrt::crc32(w.data(), 24)));
  std::vector<float> got(6);
  ASSERT_TRUE(r.readF32("w", got.data(), 6, &err)) << err;
  EXPECT_EQ(got, w);
  // One flipped bit in w's data: readF32 and readBytes refuse it, naming the tensor.
  std::string raw = readBytes(d / "c.st");
  const size_t data_start = raw.size() - 8 * 4;
  const auto& info = *r.find("w");
  raw[data_start + (size_t)info.begin + 5] ^= 0x10;
  writeBytes(d / "bad.st", raw);
  tgrt::SafetensorsReader rb;
  ASSERT_TRUE(rb.open(d / "bad.st", &err)) << err;
  EXPECT_FALSE(rb.readF32("w", got.data(), 6, &err));
  EXPECT_NE(err.find("bad.st: tensor 'w' fails its checksum"), std::string::npos) << err;
  EXPECT_FALSE(rb.readBytes("w", got.data(), 24, &err));
  EXPECT_NE(err.find("tensor 'w' fails its checksum"), std::string::npos) << err;
  ASSERT_TRUE(rb.readF32("b", got.data(), 2, &err)) << err; // the other tensor is intact
  // Without checksums (files from before them): read unverified.
  ASSERT_TRUE(tgrt::writeSafetensors(d / "old.st", {{"w", {2, 3}, w.data()}}, {}, &err)) << err;
  tgrt::SafetensorsReader ro;
  ASSERT_TRUE(ro.open(d / "old.st", &err)) << err;
  EXPECT_FALSE(ro.hasChecksums());
  EXPECT_TRUE(ro.readF32("w", got.data(), 6, &err)) << err;
  // Non-finite values: the first one, with its index.
  std::vector<float> v = {1, 2, 3, 4, NAN, INFINITY};
  EXPECT_EQ(tgrt::firstNonFinite(v.data(), 4), -1);
  EXPECT_EQ(tgrt::firstNonFinite(v.data(), 6), 4);
  EXPECT_EQ(tgrt::nonFiniteText("x", {2, 3}, v.data(), 4),
            "tensor 'x' holds NaN at element 4 (index [1, 1] of shape [2, 3])");
  EXPECT_EQ(tgrt::nonFiniteText("x", {6}, v.data(), 5),
            "tensor 'x' holds +inf at element 5 (index [5] of shape [6])");
}

TEST(Safetensors, RoundTripAndMetadata) {
  TempDir d;
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {-1.5f};
  std::string err;
  ASSERT_TRUE(tgrt::writeSafetensors(d / "x.safetensors",
                                     {{"layer.w", {2, 3}, a.data()}, {"bias", {1}, b.data()}},
                                     {{"step", "17"}, {"note", "hello \"quoted\""}}, &err))
      << err;
  EXPECT_FALSE(fs::exists(d / "x.safetensors.tmp"));
  // Layout: u64 header length (multiple of 8), JSON, then 28 data bytes.
  const std::string raw = readBytes(d / "x.safetensors");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= (uint64_t)(unsigned char)raw[i] << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.size(), 8 + n + 28);
  const auto header = nlohmann::json::parse(raw.substr(8, n));
  EXPECT_EQ(header["layer.w"]["dtype"], "F32");
  EXPECT_EQ(header["layer.w"]["data_offsets"], nlohmann::json({0, 24}));
  EXPECT_EQ(header["bias"]["data_offsets"], nlohmann::json({24, 28}));

  tgrt::SafetensorsReader r;
  ASSERT_TRUE(r.open(d / "x.safetensors", &err)) << err;
  EXPECT_EQ(r.metadata().at("step"), "17");
  EXPECT_EQ(r.metadata().at("note"), "hello \"quoted\"");
  ASSERT_NE(r.find("layer.w"), nullptr);
  EXPECT_EQ(r.find("layer.w")->shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> back(6);
  ASSERT_TRUE(r.readF32("layer.w", back.data(), 6, &err)) << err;
  EXPECT_EQ(back, a);
  float bb = 0;
  ASSERT_TRUE(r.readF32("bias", &bb, 1, &err)) << err;
  EXPECT_EQ(bb, -1.5f);
  EXPECT_FALSE(r.readF32("bias", back.data(), 2, &err));
  EXPECT_NE(err.find("expected 2"), std::string::npos) << err;
  EXPECT_FALSE(r.readF32("nope", back.data(), 1, &err));

  // Truncated: the data section is too short for the offsets.
  writeBytes(d / "t.safetensors", raw.substr(0, raw.size() - 4));
  tgrt::SafetensorsReader r2;
  EXPECT_FALSE(r2.open(d / "t.safetensors", &err));
  EXPECT_NE(err.find("t.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("bias"), std::string::npos) << err;
  // Garbage header length.
  writeBytes(d / "g.safetensors", "\xff\xff\xff\xff\xff\xff\xff\x7f{}");
  EXPECT_FALSE(r2.open(d / "g.safetensors", &err));
  EXPECT_NE(err.find("byte offset 0"), std::string::npos) << err;
  // Malformed JSON: offset of the problem inside the file.
  writeBytes(d / "j.safetensors", std::string("\x08\0\0\0\0\0\0\0{\"a\": ]}", 16));
  EXPECT_FALSE(r2.open(d / "j.safetensors", &err));
  EXPECT_NE(err.find("malformed JSON"), std::string::npos) << err;
}

// ----------------------------------------------------------------- lr schedule, init --

tgrt_model scheduleModel(int32_t decay) {
  tgrt_model m{};
  m.lr = 1e-3f;
  m.min_lr = 1e-4f;
  m.warmup_steps = 10;
  m.decay = decay;
  return m;
}

TEST(Schedule, WarmupThenCosineOrLinear) {
  const tgrt_model cos = scheduleModel(1);
  // Warmup: lr * s / 10.
  EXPECT_NEAR(tgrt::learningRate(cos, 1, 110), 1e-4, 1e-9);
  EXPECT_NEAR(tgrt::learningRate(cos, 5, 110), 5e-4, 1e-9);
  EXPECT_NEAR(tgrt::learningRate(cos, 10, 110), 1e-3, 1e-9);
  // Cosine over steps 10..110: midpoint 60 gives (lr + min_lr) / 2, the end min_lr.
  EXPECT_NEAR(tgrt::learningRate(cos, 60, 110), 5.5e-4, 1e-9);
  EXPECT_NEAR(tgrt::learningRate(cos, 110, 110), 1e-4, 1e-9);
  EXPECT_NEAR(tgrt::learningRate(cos, 500, 110), 1e-4, 1e-9);
  // 25% of the way: min + (lr-min) * (1 + cos(pi/4)) / 2.
  EXPECT_NEAR(tgrt::learningRate(cos, 35, 110), 1e-4 + 9e-4 * (1 + std::cos(M_PI / 4)) / 2,
              1e-9);
  const tgrt_model lin = scheduleModel(2);
  EXPECT_NEAR(tgrt::learningRate(lin, 35, 110), 1e-3 - 9e-4 * 0.25, 1e-9);
  EXPECT_NEAR(tgrt::learningRate(lin, 110, 110), 1e-4, 1e-9);
  const tgrt_model none = scheduleModel(0);
  EXPECT_NEAR(tgrt::learningRate(none, 100, 110), 1e-3, 1e-9);
  tgrt_model nowarm = scheduleModel(1);
  nowarm.warmup_steps = 0;
  EXPECT_NEAR(tgrt::learningRate(nowarm, 0, 100), 1e-3, 1e-9);
}

TEST(Init, DeterministicPerSeedAndName) {
  tgrt_param p{};
  p.name = "layers.0.mlp.fc.weight";
  p.numel = 20001;
  p.init = TGRT_INIT_NORMAL;
  p.init_std = 0.02f;
  std::vector<float> a(p.numel), b(p.numel), c(p.numel);
  tgrt::initParam(p, 7, a.data());
  tgrt::initParam(p, 7, b.data());
  tgrt::initParam(p, 8, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double s = 0, s2 = 0;
  for (float x : a) s += x, s2 += (double)x * x;
  const double mean = s / p.numel, sd = std::sqrt(s2 / p.numel - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001); // 4 standard errors: 4 * 0.02 / sqrt(20001) = 5.7e-4
  EXPECT_NEAR(sd, 0.02, 0.0008);
  p.init = TGRT_INIT_ONES;
  tgrt::initParam(p, 7, a.data());
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[20000], 1.0f);
  p.init = TGRT_INIT_ZEROS;
  tgrt::initParam(p, 7, a.data());
  EXPECT_EQ(a[123], 0.0f);
}

TEST(Init, BlocksGiveInitParamsValuesOfAnySpan) {
  tgrt_param p{};
  p.name = "wte";
  p.numel = 1001; // odd: the last Box-Muller pair is cut
  p.init = TGRT_INIT_NORMAL;
  p.init_std = 0.02f;
  std::vector<float> whole(p.numel);
  tgrt::initParam(p, 11, whole.data());
  // Spans of a ZeRO-3 chunk (odd starts cut a pair), tiny and uneven blocks.
  for (auto [begin, end, block] : std::vector<std::array<int64_t, 3>>{
           {0, 1001, 64}, {334, 668, 7}, {667, 1001, 1000}, {1, 2, 2}, {1000, 1001, 4},
           {-5, 3000, 256}}) {
    std::vector<float> got(p.numel, -1.0f);
    int64_t calls = 0, total = 0, next = std::max<int64_t>(0, begin);
    tgrt::initParamBlocks(p, 11, begin, end, block, [&](int64_t at, const float* v, int64_t n) {
      EXPECT_EQ(at, next); // in order, contiguous
      EXPECT_LE(n, std::max<int64_t>(2, block & ~int64_t(1)));
      std::copy(v, v + n, got.begin() + at);
      next = at + n;
      total += n;
      ++calls;
    });
    const int64_t lo = std::max<int64_t>(0, begin), hi = std::min<int64_t>(p.numel, end);
    EXPECT_EQ(total, hi - lo) << begin << ".." << end;
    for (int64_t i = 0; i < p.numel; ++i)
      EXPECT_EQ(got[i], i >= lo && i < hi ? whole[i] : -1.0f) << "element " << i;
  }
  p.init = TGRT_INIT_ONES;
  std::vector<float> ones;
  tgrt::initParamBlocks(p, 11, 10, 20, 4, [&](int64_t, const float* v, int64_t n) {
    ones.insert(ones.end(), v, v + n);
  });
  EXPECT_EQ(ones, std::vector<float>(10, 1.0f));
}

TEST(WatchdogDeathTest, EndsARankThatMakesNoProgress) {
  EXPECT_EXIT(
      {
        tgrt::Watchdog w(0.3, 1, 2, "train");
        w.beat("step 3");
        std::this_thread::sleep_for(std::chrono::seconds(3));
        std::exit(0); // not reached: the watchdog ends the process first
      },
      ::testing::ExitedWithCode(124),
      "train: error: rank 1 of 2 made no progress for [0-9]+ s since step 3 \\(a collective is "
      "waiting for a rank that stopped or hung; TGRT_COMM_TIMEOUT_S=0.3\\); ending this rank");
}

TEST(Watchdog, BeatsKeepItQuietAndDestroyingStopsIt) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    tgrt::Watchdog w(0.5, 0, 2, "train");
    for (int i = 0; i < 10; ++i) { // 1 s in all, never 0.5 s without a beat
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      w.beat("step " + std::to_string(i));
    }
  }
  { tgrt::Watchdog off(0, 0, 2, "train"); } // <= 0: no thread
  std::this_thread::sleep_for(std::chrono::milliseconds(700)); // a stray thread would fire now
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3)); // joined promptly
}

// ------------------------------------------------------------- element types, loss scale --

TEST(Dtypes, NamesAndHostConversions) {
  EXPECT_STREQ(tgrt::precisionName(TGRT_PRECISION_FP32), "fp32");
  EXPECT_STREQ(tgrt::precisionName(TGRT_PRECISION_BF16_MIXED), "bf16-mixed");
  EXPECT_STREQ(tgrt::precisionName(TGRT_PRECISION_FP16_MIXED), "fp16-mixed");
  EXPECT_STREQ(tgrt::precisionName(TGRT_PRECISION_BF16), "bf16");
  EXPECT_EQ(tgrt::precisionName(4), nullptr);
  EXPECT_STREQ(tgrt::dtypeName(TGRT_BF16), "bf16");
  EXPECT_EQ(tgrt::dtypeName(-1), nullptr);
  // 1 + 2^-8 lies half-way between the bf16 neighbours 1 and 1 + 2^-7: ties go to the even
  // mantissa (1); 1 + 3 * 2^-8 lies between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  const float in[4] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f, 1e6f};
  uint16_t h[4];
  float back[4];
  tgrt::floatToDtype(in, 4, TGRT_BF16, h);
  tgrt::dtypeToFloat(h, TGRT_BF16, 4, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f + 0x1p-6f);
  EXPECT_EQ(back[2], -2.5f);
  EXPECT_EQ(back[3], 999424.0f); // 1e6 = 0xF4240: 8 significant bits keep 0xF4000
  tgrt::floatToDtype(in, 4, TGRT_F16, h);
  tgrt::dtypeToFloat(h, TGRT_F16, 4, back);
  EXPECT_EQ(back[0], 1.0f + 0x1p-8f); // exact in f16 (10 mantissa bits)
  EXPECT_TRUE(std::isinf(back[3]));   // > 65504
}

TEST(LossScaler, GradScalerRule) {
  tgrt::LossScaler off;
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.scale(), 1.0f);
  off.update(false);
  EXPECT_EQ(off.scale(), 1.0f);
  EXPECT_EQ(off.skippedSteps(), 0);
  EXPECT_FALSE(tgrt::LossScaler(0.0f, 100).enabled());

  tgrt::LossScaler s(65536.0f, 3);
  EXPECT_TRUE(s.enabled());
  EXPECT_EQ(s.scale(), 65536.0f);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.growthCounter(), 2);
  EXPECT_EQ(s.scale(), 65536.0f);
  // Overflow: halve, count the skip, reset the counter.
  s.update(false);
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.skippedSteps(), 1);
  EXPECT_EQ(s.growthCounter(), 0);
  // Three clean steps in a row: doubles and the counter restarts.
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 32768.0f);
  s.update(true);
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.growthCounter(), 0);
  s.update(true);
  EXPECT_EQ(s.growthCounter(), 1);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 16384.0f);
  EXPECT_EQ(s.skippedSteps(), 3);
  // Growth never overflows float32; interval 0 never grows.
  tgrt::LossScaler big(0x1p127f, 1);
  big.update(true);
  EXPECT_EQ(big.scale(), 0x1p127f);
  EXPECT_EQ(big.growthCounter(), 0);
  tgrt::LossScaler never(8.0f, 0);
  for (int i = 0; i < 10; ++i) never.update(true);
  EXPECT_EQ(never.scale(), 8.0f);
  s.restore(4.0f, 2, 7);
  EXPECT_EQ(s.scale(), 4.0f);
  EXPECT_EQ(s.growthCounter(), 2);
  EXPECT_EQ(s.skippedSteps(), 7);
}

// ------------------------------------------------------- checkpoints of typed parameters --

/// A parameter table for checkpoint tests: slots packed from byte 0 of the persistent region.
struct TypedTable {
  std::vector<std::string> names;
  std::vector<tgrt_param> params;
  tgrt_model model{};

  /// One parameter per (shape, dtype, state_dtype) entry.
  TypedTable(const std::vector<std::pair<std::vector<int64_t>, std::pair<int32_t, int32_t>>>&
                 spec,
             int32_t precision) {
    int64_t off = 0;
    for (size_t i = 0; i < spec.size(); ++i) names.push_back("p" + std::to_string(i));
    for (size_t i = 0; i < spec.size(); ++i) {
      tgrt_param p{};
      p.name = names[i].c_str();
      p.rank = (int32_t)spec[i].first.size();
      p.numel = 1;
      for (int r = 0; r < 4; ++r) p.shape[r] = r < p.rank ? spec[i].first[(size_t)r] : 1;
      for (int64_t d : spec[i].first) p.numel *= d;
      p.dtype = spec[i].second.first;
      p.state_dtype = spec[i].second.second;
      auto take = [&](int64_t bytes) {
        const int64_t o = off;
        off += (bytes + 63) / 64 * 64;
        return o;
      };
      p.offset = take(p.numel * tgrt_dtype_size(p.dtype));
      p.grad_offset = take(p.numel * tgrt_dtype_size(p.dtype));
      p.m_offset = take(p.numel * tgrt_dtype_size(p.state_dtype));
      p.v_offset = take(p.numel * tgrt_dtype_size(p.state_dtype));
      p.init = TGRT_INIT_NORMAL;
      p.init_std = 1.0f;
      params.push_back(p);
    }
    model.name = "typed";
    model.n_params = (int32_t)params.size();
    model.params = params.data();
    model.persistent_bytes = off;
    model.precision = precision;
  }
};

/// Random float32 values (not representable in bf16 in general), one vector per slot.
std::vector<float> randomFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> v((size_t)n);
  for (auto& x : v) x = nd(rng);
  return v;
}

/// The values a `dtype` slot holds after storing `v` (rounded to nearest even).
std::vector<float> rounded(const std::vector<float>& v, int32_t dtype) {
  std::vector<uint16_t> h(v.size() * 2);
  std::vector<float> out(v.size());
  tgrt::floatToDtype(v.data(), (int64_t)v.size(), dtype, h.data());
  tgrt::dtypeToFloat(h.data(), dtype, (int64_t)v.size(), out.data());
  return out;
}

TEST(Checkpoint, SplitValuesRoundTripThroughTheHostAndACheckpoint) {
  // A split master value (tgrt_param.split): its slot at offset holds the low halves, its
  // working copy at work_offset the high halves (tgrt_split_value). uploadValue splits on the
  // host, downloadValue joins; a checkpoint holds the f32 values and loads them back.
  TempDir d;
  TypedTable t({{{33, 7}, {TGRT_F32, TGRT_F32}}, {{5}, {TGRT_F32, TGRT_F32}}},
               TGRT_PRECISION_BF16_MIXED);
  tgrt_param& p = t.params[0];
  p.split = 1;
  p.work_offset = t.model.persistent_bytes; // the copies after every slot
  t.model.persistent_bytes += (p.numel * 2 + 63) / 64 * 64;
  t.params[1].work_offset = -1;
  tgrt_ctx* ctx = tgrt_ctx_create(&t.model);
  ASSERT_NE(ctx, nullptr);
  std::vector<float> v = randomFloats(p.numel, 5);
  uint32_t halfway = 0x3f808000u; // 1 + 2^-8: halfway, rounded down, comes back one ulp lower
  std::memcpy(&v[3], &halfway, 4);
  tgrt::uploadValue(ctx, p, v.data(), 0, p.numel);
  std::vector<uint16_t> hi((size_t)p.numel), lo((size_t)p.numel);
  tgrt_download(ctx, TGRT_PERSISTENT, p.work_offset, hi.data(), p.numel * 2);
  tgrt_download(ctx, TGRT_PERSISTENT, p.offset, lo.data(), p.numel * 2);
  std::vector<float> want((size_t)p.numel);
  for (int64_t i = 0; i < p.numel; ++i) {
    uint16_t h, l;
    tgrt_split_value(v[(size_t)i], &h, &l);
    EXPECT_EQ(hi[(size_t)i], h) << i;
    EXPECT_EQ(lo[(size_t)i], l) << i;
    want[(size_t)i] = tgrt_split_join(h, l);
  }
  uint32_t back3;
  std::memcpy(&back3, &want[3], 4);
  EXPECT_EQ(back3, halfway - 1);
  std::vector<float> back((size_t)p.numel);
  tgrt::downloadValue(ctx, p, back.data(), 0, p.numel);
  EXPECT_EQ(back, want);
  // A partial upload [10, 20) changes those values only.
  const std::vector<float> part(10, 0.25f);
  tgrt::uploadValue(ctx, p, part.data(), 10, 10);
  std::fill(want.begin() + 10, want.begin() + 20, 0.25f);
  tgrt::downloadValue(ctx, p, back.data(), 0, p.numel);
  EXPECT_EQ(back, want);
  std::string err;
  ASSERT_TRUE(tgrt::saveParams(ctx, t.model, d / "ck.safetensors", {}, &err)) << err;
  tgrt_ctx_destroy(ctx);
  tgrt::SafetensorsReader r;
  ASSERT_TRUE(r.open(d / "ck.safetensors", &err)) << err;
  std::vector<float> f((size_t)p.numel);
  ASSERT_TRUE(r.readF32("p0", f.data(), p.numel, &err)) << err;
  EXPECT_EQ(f, want);
  tgrt_ctx* ctx2 = tgrt_ctx_create(&t.model);
  ASSERT_NE(ctx2, nullptr);
  bool have_optim = false;
  ASSERT_TRUE(tgrt::loadParams(ctx2, t.model, r, &have_optim, &err)) << err;
  tgrt::downloadValue(ctx2, p, back.data(), 0, p.numel);
  EXPECT_EQ(back, want);
  tgrt_ctx_destroy(ctx2);
}

TEST(Checkpoint, Bf16TableRoundTripsThroughSaveAndLoad) {
  TempDir d;
  TypedTable t({{{3, 5}, {TGRT_BF16, TGRT_BF16}},
                {{7}, {TGRT_BF16, TGRT_F32}},
                {{2, 2, 3}, {TGRT_F16, TGRT_F32}},
                {{4}, {TGRT_F32, TGRT_F32}}},
               TGRT_PRECISION_BF16);
  tgrt_ctx* ctx = tgrt_ctx_create(&t.model);
  ASSERT_NE(ctx, nullptr);
  // Slot k of parameter i holds rounded(randomFloats(...), slot dtype).
  std::vector<std::vector<float>> want;
  for (size_t i = 0; i < t.params.size(); ++i) {
    const tgrt_param& p = t.params[i];
    const int64_t offs[3] = {p.offset, p.m_offset, p.v_offset};
    for (int k = 0; k < 3; ++k) {
      const int32_t dt = k == 0 ? p.dtype : p.state_dtype;
      const std::vector<float> v = randomFloats(p.numel, (uint32_t)(10 * i + k));
      tgrt::uploadFloats(ctx, offs[k], dt, v.data(), p.numel);
      want.push_back(rounded(v, dt));
      // The slot holds exactly numel * dtype-size bytes of the rounded bit patterns.
      std::vector<float> back((size_t)p.numel);
      tgrt::downloadFloats(ctx, offs[k], dt, back.data(), p.numel);
      EXPECT_EQ(back, want.back()) << p.name << " slot " << k;
    }
  }
  std::string err;
  ASSERT_TRUE(tgrt::saveParams(ctx, t.model, d / "ck.safetensors", {{"step", "4"}}, &err))
      << err;
  tgrt_ctx_destroy(ctx);

  // The file is float32 holding exactly the rounded values, and records the precision.
  tgrt::SafetensorsReader r;
  ASSERT_TRUE(r.open(d / "ck.safetensors", &err)) << err;
  EXPECT_EQ(r.metadata().at("precision"), "bf16");
  EXPECT_EQ(r.metadata().at("step"), "4");
  EXPECT_EQ(r.find("p0")->dtype, "F32");
  EXPECT_EQ(r.find("optim.v.p2")->shape, (std::vector<int64_t>{2, 2, 3}));
  size_t w = 0;
  for (const tgrt_param& p : t.params)
    for (const char* prefix : {"", "optim.m.", "optim.v."}) {
      std::vector<float> f((size_t)p.numel);
      ASSERT_TRUE(r.readF32(prefix + std::string(p.name), f.data(), p.numel, &err)) << err;
      EXPECT_EQ(f, want[w++]) << prefix << p.name;
    }

  // Load into a fresh context: every slot comes back bit-equal.
  tgrt_ctx* ctx2 = tgrt_ctx_create(&t.model);
  ASSERT_NE(ctx2, nullptr);
  bool have_optim = false;
  ASSERT_TRUE(tgrt::loadParams(ctx2, t.model, r, &have_optim, &err)) << err;
  EXPECT_TRUE(have_optim);
  w = 0;
  for (const tgrt_param& p : t.params) {
    const int64_t offs[3] = {p.offset, p.m_offset, p.v_offset};
    for (int k = 0; k < 3; ++k) {
      std::vector<float> back((size_t)p.numel);
      tgrt::downloadFloats(ctx2, offs[k], k == 0 ? p.dtype : p.state_dtype, back.data(),
                           p.numel);
      EXPECT_EQ(back, want[w++]) << p.name << " slot " << k;
    }
  }
  tgrt_ctx_destroy(ctx2);

  // Unrounded float32 values loaded into bf16 slots are rounded to nearest even.
  TypedTable one({{{4}, {TGRT_BF16, TGRT_BF16}}}, TGRT_PRECISION_BF16);
  const std::vector<float> raw = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 0.1f, -7.3f};
  ASSERT_TRUE(tgrt::writeSafetensors(d / "raw.safetensors", {{"p0", {4}, raw.data()}},
                                     {{"precision", "bf16"}}, &err));
  tgrt::SafetensorsReader r2;
  ASSERT_TRUE(r2.open(d / "raw.safetensors", &err)) << err;
  tgrt_ctx* ctx3 = tgrt_ctx_create(&one.model);
  ASSERT_NE(ctx3, nullptr);
  ASSERT_TRUE(tgrt::loadParams(ctx3, one.model, r2, &have_optim, &err)) << err;
  EXPECT_FALSE(have_optim);
  std::vector<uint16_t> bits(4);
  tgrt_download(ctx3, TGRT_PERSISTENT, one.params[0].offset, bits.data(), 8);
  EXPECT_EQ(bits[0], 0x3f80); // 1 + 2^-8: tie to even -> 1
  EXPECT_EQ(bits[1], 0x3f82); // 1 + 3 * 2^-8: tie to even -> 1 + 2^-6
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bits[(size_t)i], tgrt_bf16_from_float(raw[(size_t)i]));
  tgrt_ctx_destroy(ctx3);
}

TEST(Checkpoint, PrecisionMismatchIsRefused) {
  TempDir d;
  TypedTable fp32({{{4}, {TGRT_F32, TGRT_F32}}}, TGRT_PRECISION_FP32);
  TypedTable bf16({{{4}, {TGRT_BF16, TGRT_BF16}}}, TGRT_PRECISION_BF16);
  tgrt_ctx* ctx = tgrt_ctx_create(&bf16.model);
  ASSERT_NE(ctx, nullptr);
  std::string err;
  ASSERT_TRUE(tgrt::saveParams(ctx, bf16.model, d / "bf16.safetensors", {}, &err)) << err;
  tgrt_ctx_destroy(ctx);
  tgrt::SafetensorsReader r;
  ASSERT_TRUE(r.open(d / "bf16.safetensors", &err)) << err;
  ctx = tgrt_ctx_create(&fp32.model);
  ASSERT_NE(ctx, nullptr);
  bool have_optim = false;
  EXPECT_FALSE(tgrt::loadParams(ctx, fp32.model, r, &have_optim, &err));
  EXPECT_NE(err.find("bf16.safetensors was saved by another model: precision bf16, this "
                     "model fp32"),
            std::string::npos)
      << err;
  tgrt_ctx_destroy(ctx);
  // No precision key counts as fp32: fine for an fp32 model, refused for a bf16 one.
  const std::vector<float> v(4, 0.5f);
  ASSERT_TRUE(tgrt::writeSafetensors(d / "old.safetensors", {{"p0", {4}, v.data()}}, {}, &err));
  tgrt::SafetensorsReader r2;
  ASSERT_TRUE(r2.open(d / "old.safetensors", &err)) << err;
  ctx = tgrt_ctx_create(&fp32.model);
  EXPECT_TRUE(tgrt::loadParams(ctx, fp32.model, r2, &have_optim, &err)) << err;
  tgrt_ctx_destroy(ctx);
  ctx = tgrt_ctx_create(&bf16.model);
  EXPECT_FALSE(tgrt::loadParams(ctx, bf16.model, r2, &have_optim, &err));
  EXPECT_NE(err.find("precision fp32 (no precision metadata), this model bf16"),
            std::string::npos)
      << err;
  tgrt_ctx_destroy(ctx);
}

// --------------------------------------------------------------------- data prepare --

const char* kSentences[] = {
    "The river bends twice before it reaches the old mill, where the water slows and turns "
    "green under the willows.",
    "A compiler translates a program written in one language into an equivalent program in "
    "another, usually lower-level, language.",
    "Memory planning assigns every temporary tensor an offset in a single arena so that "
    "buffers whose lifetimes do not overlap can share bytes.",
    "She packed three apples, a thermos of coffee and a map that was twenty years out of date.",
    "Gradient descent follows the negative gradient of the loss; momentum smooths the path "
    "and Adam rescales each coordinate.",
    "The committee met on Tuesday and agreed, after a long discussion, to postpone the vote "
    "until the spring.",
    "Tokenizers split text into pieces; byte-pair encoding merges the most frequent adjacent "
    "pair again and again.",
    "In winter the harbour freezes at the edges and the fishing boats stay tied to the pier "
    "for weeks.",
    "Quick brown foxes jump over lazy dogs, while zebras quietly graze near the jagged "
    "volcanic hills.",
    "Numbers such as 3.14159, 2.71828 and 1.41421 appear in geometry, analysis and "
    "engineering alike.",
    "The kernel schedules threads, maps virtual memory to physical pages and handles "
    "interrupts from devices.",
    "Please remember to lock the door, water the plants and feed the cat before you leave "
    "on Friday.",
};
constexpr int kNumSentences = sizeof(kSentences) / sizeof(kSentences[0]);

/// A document of `n` sentences chosen deterministically from the list.
std::string makeDoc(int doc, int n) {
  std::string s;
  for (int k = 0; k < n; ++k) {
    s += kSentences[(doc * 7 + k * 5) % kNumSentences];
    s += (k % 3 == 2) ? "\n\n" : " ";
  }
  return s + "\n";
}

void writeGz(const std::string& path, const std::string& text) {
  gzFile g = gzopen(path.c_str(), "wb");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(gzwrite(g, text.data(), (unsigned)text.size()), (int)text.size());
  gzclose(g);
}

/// ~20 KB corpus: .txt, .md, .rst.gz files in nested directories and a .jsonl file.
void writeCorpus(const fs::path& root) {
  fs::create_directories(root / "a" / "b");
  for (int i = 0; i < 12; ++i)
    writeBytes((root / ("doc" + std::to_string(i) + ".txt")).string(), makeDoc(i, 8 + i % 5));
  for (int i = 12; i < 16; ++i)
    writeBytes((root / "a" / ("n" + std::to_string(i) + ".md")).string(), "# Notes\n\n" + makeDoc(i, 9));
  for (int i = 16; i < 20; ++i)
    writeGz((root / "a" / "b" / ("r" + std::to_string(i) + ".rst.gz")).string(),
            "Title\n=====\n\n" + makeDoc(i, 10));
  std::string jl;
  for (int i = 20; i < 30; ++i) jl += nlohmann::json({{"text", makeDoc(i, 6)}, {"id", i}}).dump() + "\n";
  writeBytes((root / "more.jsonl").string(), jl);
  writeBytes((root / "ignored.bin").string(), "\xff\xfe binary, not read");
  writeBytes((root / "empty.txt").string(), "  \n\n");
}

TEST(DataPrepare, SmallCorpusEndToEnd) {
  TempDir d;
  writeCorpus(d.path / "corpus");
  tgc::DataOptions o;
  o.inputs = {d / "corpus"};
  o.vocab = 400;
  o.out = d / "out";
  o.quiet = true;
  std::string err;
  ASSERT_TRUE(tgc::prepareData(o, &err)) << err;
  for (const char* f : {"train.npy", "val.npy", "test.npy", "tokenizer.model", "meta.json"})
    EXPECT_TRUE(fs::exists(d.path / "out" / f)) << f;
  // Nothing temporary left beside the output.
  for (const auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();

  std::ifstream mf(d / "out/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(mf);
  EXPECT_EQ(meta["vocab_size"], 400);
  EXPECT_EQ(meta["dtype"], "uint16");
  EXPECT_EQ(meta["documents"]["train"].get<int>() + meta["documents"]["val"].get<int>() +
                meta["documents"]["test"].get<int>(),
            30); // 12 txt + 4 md + 4 rst.gz + 10 jsonl lines; empty.txt skipped
  EXPECT_EQ(meta["skipped_empty_documents"], 1);
  EXPECT_EQ(meta["documents"]["train"], 24); // 30 - round(3.0) - round(3.0)
  const int eos = meta["eos_id"];
  for (const char* split : {"train", "val", "test"}) {
    std::vector<uint32_t> toks;
    ASSERT_TRUE(tgrt::readTokens(d / (std::string("out/") + split + ".npy"), 400, &toks, &err))
        << err;
    EXPECT_GT(toks.size(), 0u) << split;
    EXPECT_EQ((int64_t)toks.size(), meta["tokens"][split].get<int64_t>()) << split;
    int64_t eos_count = 0;
    for (uint32_t t : toks) eos_count += t == (uint32_t)eos;
    EXPECT_EQ(eos_count, meta["documents"][split].get<int64_t>()) << split;
    EXPECT_EQ(toks.back(), (uint32_t)eos);
  }
  const double ppl = meta["val_unigram_perplexity"];
  EXPECT_TRUE(std::isfinite(ppl));
  EXPECT_GT(ppl, 1.0);
  EXPECT_LT(ppl, 400.0);
  EXPECT_GT(meta["unigram"]["train"]["entropy_nats"].get<double>(), 0.0);

  // Deterministic: the same options give the same arrays.
  o.out = d / "out2";
  ASSERT_TRUE(tgc::prepareData(o, &err)) << err;
  EXPECT_EQ(readBytes(d / "out/train.npy"), readBytes(d / "out2/train.npy"));
  EXPECT_EQ(readBytes(d / "out/val.npy"), readBytes(d / "out2/val.npy"));
  // Re-running into an existing data directory replaces it.
  o.out = d / "out";
  o.seed = 99;
  ASSERT_TRUE(tgc::prepareData(o, &err)) << err;
  EXPECT_TRUE(fs::exists(d.path / "out" / "meta.json"));
}

TEST(DataPrepare, InvalidUtf8NamesByteOffset) {
  TempDir d;
  writeCorpus(d.path / "corpus");
  writeBytes(d / "corpus/zz_bad.txt", "Hello there,\nbad byte: \xC3\x28 here");
  tgc::DataOptions o;
  o.inputs = {d / "corpus"};
  o.vocab = 400;
  o.out = d / "out";
  o.quiet = true;
  std::string err;
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("zz_bad.txt"), std::string::npos) << err;
  EXPECT_NE(err.find("invalid UTF-8 at byte offset 23"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(d.path / "out"));
  EXPECT_EQ(tgc::firstInvalidUtf8("ok \xE2\x82\xAC"), -1);     // euro sign
  EXPECT_EQ(tgc::firstInvalidUtf8("\xED\xA0\x80"), 0);         // surrogate
  EXPECT_EQ(tgc::firstInvalidUtf8("ab\xC0\xAF"), 2);           // overlong '/'
  EXPECT_EQ(tgc::firstInvalidUtf8("abc\xF0\x9F\x98"), 3);      // truncated emoji
}

TEST(DataPrepare, ErrorsAreClear) {
  TempDir d;
  writeCorpus(d.path / "corpus");
  tgc::DataOptions o;
  o.vocab = 400;
  o.out = d / "out";
  o.quiet = true;
  std::string err;
  // Malformed jsonl names file:line.
  writeBytes(d / "bad.jsonl", "{\"text\": \"fine\"}\n{\"txt\": \"no text field\"}\n");
  o.inputs = {d / "corpus", d / "bad.jsonl"};
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("bad.jsonl:2"), std::string::npos) << err;
  writeBytes(d / "bad2.jsonl", "{\"text\": \"fine\"}\n\n{\"text\": \"unterminated}\n");
  o.inputs = {d / "corpus", d / "bad2.jsonl"};
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("bad2.jsonl:3"), std::string::npos) << err;
  // Missing input.
  o.inputs = {d / "nope"};
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("nope: input not found"), std::string::npos) << err;
  // No documents.
  fs::create_directories(d.path / "emptydir");
  o.inputs = {d / "emptydir"};
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("no non-empty documents"), std::string::npos) << err;
  // Vocab too large for a tiny corpus, and too small for its characters.
  o.inputs = {d / "corpus"};
  o.vocab = 20000;
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("use a smaller --vocab"), std::string::npos) << err;
  EXPECT_NE(err.find("sentencepiece:"), std::string::npos) << err;
  o.vocab = 100;
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("use a larger --vocab"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(d.path / "out"));
  // Refuses to replace a directory that is not a data directory.
  fs::create_directories(d.path / "precious");
  writeBytes(d / "precious/thesis.tex", "do not delete");
  o.vocab = 400;
  o.out = d / "precious";
  EXPECT_FALSE(tgc::prepareData(o, &err));
  EXPECT_NE(err.find("refusing to replace"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(d.path / "precious" / "thesis.tex"));
}

TEST(DataPrepare, MaxBytesCapsInput) {
  TempDir d;
  writeCorpus(d.path / "corpus");
  tgc::DataOptions o;
  o.inputs = {d / "corpus"};
  o.vocab = 400;
  o.out = d / "out";
  o.quiet = true;
  o.max_bytes = 9000;
  std::string err;
  ASSERT_TRUE(tgc::prepareData(o, &err)) << err;
  std::ifstream mf(d / "out/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(mf);
  EXPECT_EQ(meta["truncated_at_max_bytes"], true);
  EXPECT_EQ(meta["bytes"]["train"].get<int64_t>() + meta["bytes"]["val"].get<int64_t>() +
                meta["bytes"]["test"].get<int64_t>(),
            9000);
}

// --------------------------------------------------------- fake model through the driver --
//
// One parameter vector w [16]; the micro-batch's tokens define a target
// t_i = tokens[i] / vocab, loss = mean_i (w_i - t_i)^2, dL/dw_i = 2 (w_i - t_i) / 16, scaled by
// 1/grad_accum. The optimizer step uses the CPU backend's grad-norm, clip and AdamW kernels.
// gFake selects the element types (w and its gradient in `dtype`, m and v in `state_dtype`)
// and loss scaling: the micro-step then multiplies its gradient by the context's loss scale
// and, with f16_overflow, rounds it through f16 as an fp16 backward would (> 65504 -> inf).

constexpr int64_t kN = 16, kB = 2, kT = 8, kVocab = 50;
// Persistent layout (bytes): w 0, grad 64, m 128, v 192, tokens 256, targets 320, acc 384,
// loss 392 (room for f32; bf16 / f16 slots use the first half).
tgrt_param gParam = {"w",  1,          {kN, 1, 1, 1}, kN, 0, 64, 128, 192, TGRT_INIT_NORMAL,
                     0.5f, 0, TGRT_F32, TGRT_F32};
tgrt_model gModel;

struct FakeConfig {
  int32_t dtype = TGRT_F32, state_dtype = TGRT_F32, precision = TGRT_PRECISION_FP32;
  float loss_scale_init = 0;
  int32_t growth_interval = 0;
  bool f16_overflow = false;
  bool nan_grads = false; ///< every gradient NaN (overflows at any loss scale)
};
FakeConfig gFake;

/// Sets gFake for the lifetime of the object (one test), then restores the default.
struct FakeScope {
  explicit FakeScope(const FakeConfig& c) { gFake = c; }
  ~FakeScope() { gFake = FakeConfig{}; }
};

float loadElem(const char* p, int32_t dt, int64_t i) {
  float x = 0;
  tgrt::dtypeToFloat(p + i * tgrt_dtype_size(dt), dt, 1, &x);
  return x;
}

void storeElem(char* p, int32_t dt, int64_t i, float x) {
  tgrt::floatToDtype(&x, 1, dt, p + i * tgrt_dtype_size(dt));
}

const tgrt_model* fakeInfo() {
  gParam.dtype = gFake.dtype;
  gParam.state_dtype = gFake.state_dtype;
  gModel = tgrt_model{};
  gModel.name = "fake";
  gModel.spec_json = "{\"name\": \"fake\"}";
  gModel.n_params = 1;
  gModel.params = &gParam;
  gModel.persistent_bytes = 448;
  gModel.tokens_offset = 256;
  gModel.targets_offset = 320;
  gModel.batch_size = kB;
  gModel.context = kT;
  gModel.vocab_size = kVocab;
  gModel.grad_accum = 2;
  gModel.lr = 0.05f;
  gModel.min_lr = 0.005f;
  gModel.beta1 = 0.9f;
  gModel.beta2 = 0.95f;
  gModel.eps = 1e-8f;
  gModel.weight_decay = 0.0f;
  gModel.grad_clip = 1.0f;
  gModel.warmup_steps = 3;
  gModel.decay = 1;
  gModel.seed = 5;
  gModel.precision = gFake.precision;
  gModel.loss_scale_init = gFake.loss_scale_init;
  gModel.loss_scale_growth_interval = gFake.growth_interval;
  return &gModel;
}

float fakeLoss(tgrt_ctx* ctx, bool accumulate) {
  char* base = tgrt_region(ctx, TGRT_PERSISTENT);
  const int32_t dt = gParam.dtype;
  const int32_t* tok = reinterpret_cast<const int32_t*>(base + 256);
  float scale = 1.0f; // the seed of a loss-scaled backward: 1 * the context's loss scale
  if (accumulate && gModel.loss_scale_init > 0)
    tgrt_fill_loss_scaled(ctx, "fake.seed", TGRT_F32, &scale, 1, 1.0f);
  double loss = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const double t = (double)tok[i] / kVocab, diff = loadElem(base, dt, i) - t;
    loss += diff * diff / kN;
    if (!accumulate) continue;
    float gi = loadElem(base + 64, dt, i) + (float)(scale * 2.0 * diff / kN / gModel.grad_accum);
    if (gFake.f16_overflow) gi = tgrt_f16_to_float(tgrt_f16_from_float(gi));
    if (gFake.nan_grads) gi = std::numeric_limits<float>::quiet_NaN();
    storeElem(base + 64, dt, i, gi);
  }
  float* l = reinterpret_cast<float*>(base + 392);
  *l = (float)loss;
  return *l;
}

/// Sum of the tokens of each micro-step (which batch ran), for the --find-nonfinite tests.
std::vector<int64_t> gMicroTokens;

void fakeMicro(tgrt_ctx* ctx) {
  const int32_t* tok = reinterpret_cast<const int32_t*>(tgrt_region(ctx, TGRT_PERSISTENT) + 256);
  gMicroTokens.push_back(std::accumulate(tok, tok + kB * kT, int64_t(0)));
  fakeLoss(ctx, true);
  // The check emitted code makes after a call that writes the gradient (runtime/tgrt.h).
  static const tgrt_check_tensor kGrad[2] = {
      {"w (gradient)", "[16]", TGRT_CHECK_OUT, TGRT_F32, TGRT_PERSISTENT, 0, 64, 1, kN, kN},
      {"w (parameter)", "[16]", TGRT_CHECK_IN, TGRT_F32, TGRT_PERSISTENT, 0, 0, 1, kN, kN}};
  static const tgrt_check_site kSite = {"fake.grad", "fake.mse_grad", "fakeLoss", "backward", 2,
                                        kGrad};
  if (tgrt_check_enabled(ctx) && gParam.dtype == TGRT_F32) tgrt_check_op(ctx, &kSite);
  tgrt_report_loss(ctx, "fake.loss", reinterpret_cast<float*>(tgrt_region(ctx, 0) + 392));
}

void fakeOptim(tgrt_ctx* ctx) {
  char* base = tgrt_region(ctx, TGRT_PERSISTENT);
  float* acc = reinterpret_cast<float*>(base + 384);
  const int32_t dt = gParam.dtype, sdt = gParam.state_dtype;
  tgrt_zero(ctx, "fake.acc", acc, 8);
  tgrt_grad_norm_sq(ctx, "fake.norm", dt, base + 64, kN, acc);
  tgrt_clip_scale(ctx, "fake.clip", acc, gModel.grad_clip);
  tgrt_adamw(ctx, "fake.adamw", dt, base, base + 64, sdt, base + 128, base + 192, kN,
             gModel.beta1, gModel.beta2, gModel.eps, gModel.weight_decay, acc);
  tgrt_zero(ctx, "fake.zero_grad", base + 64, kN * tgrt_dtype_size(dt));
}

void fakeEval(tgrt_ctx* ctx) {
  fakeLoss(ctx, false);
  tgrt_report_loss(ctx, "fake.loss", reinterpret_cast<float*>(tgrt_region(ctx, 0) + 392));
}

tgrt_driver_hooks fakeHooks() {
  tgrt_driver_hooks h;
  h.model_info = &fakeInfo;
  h.micro_step = &fakeMicro;
  h.optimizer_step = &fakeOptim;
  h.eval_step = &fakeEval;
  return h;
}

/// Token data for the fake model: ids drawn so that windows differ (targets vary).
void writeFakeData(const TempDir& d, const std::string& sub, int64_t n_train = 2000) {
  fs::create_directories(d.path / sub);
  std::mt19937 rng(3);
  auto make = [&](int64_t n) {
    std::vector<uint16_t> v((size_t)n);
    for (auto& x : v) x = (uint16_t)(rng() % kVocab);
    return v;
  };
  std::string err;
  const auto tr = make(n_train), va = make(300), te = make(170);
  ASSERT_TRUE(tgrt::writeNpy(d / (sub + "/train.npy"), tgrt::NpyDtype::U16, tr.data(),
                             (int64_t)tr.size(), &err));
  ASSERT_TRUE(tgrt::writeNpy(d / (sub + "/val.npy"), tgrt::NpyDtype::U16, va.data(),
                             (int64_t)va.size(), &err));
  ASSERT_TRUE(tgrt::writeNpy(d / (sub + "/test.npy"), tgrt::NpyDtype::U16, te.data(),
                             (int64_t)te.size(), &err));
  writeBytes(d / (sub + "/meta.json"), "{\"vocab_size\": 50}\n");
}

int runDriver(std::vector<std::string> args) {
  args.insert(args.begin(), "train");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return tgrt_driver_main((int)args.size(), argv.data(), fakeHooks());
}

struct LogLines {
  std::vector<nlohmann::json> steps, evals;
};

LogLines readLog(const std::string& path) {
  LogLines l;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line);
    (j.contains("eval") ? l.evals : l.steps).push_back(j);
  }
  return l;
}

TEST(DriverFake, TrainsAndLossFalls) {
  TempDir d;
  writeFakeData(d, "data");
  testing::internal::CaptureStdout();
  const int rc = runDriver({"--data", d / "data", "--steps", "20", "--log", d / "log.jsonl",
                            "--eval-every", "10", "--eval-batches", "2"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0) << out;
  const LogLines log = readLog(d / "log.jsonl");
  ASSERT_EQ(log.steps.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(log.steps[i]["step"], i + 1);
    for (const char* k : {"loss", "lr", "grad_norm", "tokens_per_s", "ms"})
      EXPECT_TRUE(log.steps[i].contains(k)) << k;
    EXPECT_FALSE(log.steps[i].contains("loss_scale")); // no loss scaling: no extra fields
    EXPECT_FALSE(log.steps[i].contains("skipped_steps"));
  }
  // w starts ~N(0, 0.5^2) against targets in [0, 1): mean squared error ~0.33 drops towards
  // the variance of the targets (~1/12 = 0.083).
  const double first = log.steps[0]["loss"], last = log.steps[19]["loss"];
  EXPECT_GT(first, 0.15);
  EXPECT_LT(last, 0.6 * first);
  EXPECT_NEAR(log.steps[0]["lr"].get<double>(), 0.05 / 3, 1e-7);      // warmup 1/3
  EXPECT_NEAR(log.steps[19]["lr"].get<double>(), 0.005, 1e-7);        // cosine end = min_lr
  // One periodic eval (step 10, capped at 2 batches), then the final val and test evals.
  ASSERT_EQ(log.evals.size(), 3u);
  EXPECT_EQ(log.evals[0]["eval"], "val");
  EXPECT_EQ(log.evals[0]["step"], 10);
  EXPECT_EQ(log.evals[0]["batches"], 2);
  EXPECT_EQ(log.evals[1]["batches"], 18); // (300 - 1) / 8 = 37 windows -> 18 batches of 2
  EXPECT_EQ(log.evals[2]["eval"], "test");
  EXPECT_EQ(log.evals[2]["batches"], 10); // (170 - 1) / 8 = 21 windows -> 10 batches
  EXPECT_NEAR(log.evals[1]["ppl"].get<double>(), std::exp(log.evals[1]["loss"].get<double>()),
              1e-9);
  EXPECT_NE(out.find("val loss "), std::string::npos) << out;
  EXPECT_NE(out.find("test loss "), std::string::npos) << out;
  EXPECT_NE(out.find("step 20/20"), std::string::npos) << out;
  EXPECT_EQ(out.find("scale"), std::string::npos) << out;
}

TEST(DriverFake, ResumeContinuesExactly) {
  TempDir d;
  writeFakeData(d, "data");
  const std::string data = d / "data";
  ASSERT_EQ(runDriver({"--data", data, "--steps", "20", "--log", d / "full.jsonl", "--quiet"}),
            0);
  // Interrupted run: the same 20-step schedule, stopped after 10 with a checkpoint at 5 too.
  ASSERT_EQ(runDriver({"--data", data, "--steps", "20", "--stop-after", "10", "--save",
                       d / "ck.safetensors", "--save-every", "5", "--log", d / "part.jsonl",
                       "--quiet"}),
            0);
  EXPECT_FALSE(fs::exists(d / "ck.safetensors.tmp"));
  {
    tgrt::SafetensorsReader r;
    std::string err;
    ASSERT_TRUE(r.open(d / "ck.safetensors", &err)) << err;
    EXPECT_EQ(r.metadata().at("step"), "10");
    EXPECT_EQ(r.metadata().at("total_steps"), "20");
    EXPECT_EQ(r.metadata().at("model"), "fake");
    EXPECT_TRUE(r.find("w") && r.find("optim.m.w") && r.find("optim.v.w"));
  }
  // Resume: the total (20) comes from the checkpoint; the log is appended.
  ASSERT_EQ(runDriver({"--data", data, "--resume", d / "ck.safetensors", "--log",
                       d / "part.jsonl", "--quiet"}),
            0);
  const LogLines full = readLog(d / "full.jsonl"), part = readLog(d / "part.jsonl");
  ASSERT_EQ(full.steps.size(), 20u);
  ASSERT_EQ(part.steps.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(part.steps[i]["step"], full.steps[i]["step"]);
    EXPECT_EQ(part.steps[i]["loss"].get<double>(), full.steps[i]["loss"].get<double>())
        << "step " << i + 1;
    EXPECT_EQ(part.steps[i]["lr"].get<double>(), full.steps[i]["lr"].get<double>());
    EXPECT_EQ(part.steps[i]["grad_norm"].get<double>(), full.steps[i]["grad_norm"].get<double>());
  }
  // The final evaluations agree too.
  ASSERT_EQ(full.evals.size(), 2u);
  ASSERT_EQ(part.evals.size(), 4u); // final evals of the stopped run + of the resumed run
  EXPECT_EQ(part.evals[2]["loss"].get<double>(), full.evals[0]["loss"].get<double>());
  EXPECT_EQ(part.evals[3]["loss"].get<double>(), full.evals[1]["loss"].get<double>());
}

// Crash safety (issue 10): a resumed run cuts the log back to the checkpoint's step (records
// a killed run wrote after it, and a last line without its newline); a checkpoint from
// another model is refused naming the first difference; a failed save stops the run.
TEST(DriverFake, KilledRunResumesCleanLogAndRefusals) {
  TempDir d;
  writeFakeData(d, "data");
  const std::string data = d / "data";
  ASSERT_EQ(runDriver({"--data", data, "--steps", "8", "--log", d / "full.jsonl", "--quiet"}), 0);
  ASSERT_EQ(runDriver({"--data", data, "--steps", "8", "--stop-after", "3", "--save",
                       d / "ck.safetensors", "--log", d / "part.jsonl", "--quiet"}),
            0);
  // As if killed after logging steps 4 and 5 and part of 6, before saving them.
  writeBytes(d / "part.jsonl", readBytes(d / "part.jsonl") +
                                   "{\"loss\":1.5,\"step\":4}\n{\"loss\":1.25,\"step\":5}\n"
                                   "{\"loss\":1.0,\"st");
  ASSERT_EQ(runDriver({"--data", data, "--resume", d / "ck.safetensors", "--log",
                       d / "part.jsonl", "--quiet"}),
            0);
  const LogLines full = readLog(d / "full.jsonl"), part = readLog(d / "part.jsonl");
  ASSERT_EQ(part.steps.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(part.steps[i]["step"], full.steps[i]["step"]);
    EXPECT_EQ(part.steps[i]["loss"].get<double>(), full.steps[i]["loss"].get<double>());
  }

  // Refusals: an extra tensor, then a differing spec field under "model".
  std::string err;
  tgrt::SafetensorsReader r;
  ASSERT_TRUE(r.open(d / "ck.safetensors", &err)) << err;
  std::vector<float> w16(16, 0.0f), x3(3, 0.0f);
  ASSERT_TRUE(tgrt::writeSafetensors(d / "extra.safetensors",
                                     {{"w", {16}, w16.data()}, {"x", {3}, x3.data()}},
                                     {{"step", "1"}}, &err));
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", data, "--resume", d / "extra.safetensors", "--quiet"}), 1);
  std::string e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("extra.safetensors was saved by another model: it has x of shape [3], this "
                   "model has none"),
            std::string::npos)
      << e;
  ASSERT_TRUE(tgrt::writeSafetensors(
      d / "spec.safetensors", {{"w", {16}, w16.data()}},
      {{"step", "1"}, {"spec", "{\"model\": {\"d_model\": 16, \"n_heads\": 2}}"}}, &err));
  tgrt_model m = *fakeInfo();
  m.spec_json = "{\"model\": {\"d_model\": 16, \"n_heads\": 4}}";
  tgrt::SafetensorsReader rs;
  ASSERT_TRUE(rs.open(d / "spec.safetensors", &err)) << err;
  EXPECT_FALSE(tgrt::checkCheckpoint(m, rs, &err));
  EXPECT_NE(err.find("spec.safetensors was saved by another model: model.n_heads: 2 in the "
                     "checkpoint, 4 in this model (to resume it, compile with --set "
                     "model.n_heads=2)"),
            std::string::npos)
      << err;

  // A --save path that cannot be written is refused at start-up (exit 2, naming the option
  // and the path), before step 1: no step is trained and then lost at the first save.
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", data, "--steps", "4", "--save-every", "2", "--save",
                       d / "no-such-dir/ck.safetensors", "--log", d / "fail.jsonl",
                       "--quiet"}),
            2);
  e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("error: --save " + (d / "no-such-dir/ck.safetensors") +
                   ": cannot be written: the directory " + (d / "no-such-dir") +
                   " does not exist (No such file or directory) (checked before training "
                   "starts)"),
            std::string::npos)
      << e;
  EXPECT_FALSE(fs::exists(d / "fail.jsonl")); // stopped before the log was opened
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", data, "--steps", "4", "--save", d.path.string(), "--quiet"}),
            2);
  e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("error: --save " + d.path.string() + ": cannot be written: " +
                   d.path.string() + " is a directory; give a file name"),
            std::string::npos)
      << e;
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", data, "--steps", "4", "--log", d / "no-such-dir/l.jsonl",
                       "--quiet"}),
            2);
  e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("error: --log " + (d / "no-such-dir/l.jsonl") + ": cannot be written: the "
                   "directory " + (d / "no-such-dir") + " does not exist"),
            std::string::npos)
      << e;
}

TEST(DriverFake, SeedChangesInitAndEpochsSetSteps) {
  TempDir d;
  writeFakeData(d, "data", 1000);
  ASSERT_EQ(runDriver({"--data", d / "data", "--steps", "2", "--log", d / "a.jsonl", "--quiet"}), 0);
  ASSERT_EQ(runDriver({"--data", d / "data", "--steps", "2", "--seed", "6", "--log",
                       d / "b.jsonl", "--quiet"}),
            0);
  EXPECT_NE(readLog(d / "a.jsonl").steps[0]["loss"], readLog(d / "b.jsonl").steps[0]["loss"]);
  // One epoch = floor(1000 / (2 * 8 * 2)) = 31 steps; 1.5 epochs = 46.
  EXPECT_EQ(tgrt::stepsPerEpoch(*fakeInfo(), 1000), 31);
  ASSERT_EQ(runDriver({"--data", d / "data", "--epochs", "1.5", "--log", d / "c.jsonl",
                       "--quiet"}),
            0);
  EXPECT_EQ(readLog(d / "c.jsonl").steps.size(), 46u);
}

/// The lines TGRT_LOG_WINDOWS wrote to `path`.
std::vector<nlohmann::json> readWindowLog(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// --sampling shuffle (docs/data.md, "Epochs"): the default with --epochs. 1010 tokens of
// context 8: W = 126 windows, G = 2 x 2 = 4 a step, S = 31 steps an epoch, 2 dropped. Each
// epoch reads 124 distinct windows, in another order than the previous epoch.
TEST(DriverFake, ShuffleVisitsEveryWindowOncePerEpoch) {
  TempDir d;
  writeFakeData(d, "data", 1010);
  ASSERT_EQ(setenv("TGRT_LOG_WINDOWS", (d / "w.jsonl").c_str(), 1), 0);
  testing::internal::CaptureStdout();
  const int rc = runDriver({"--data", d / "data", "--epochs", "2", "--log", d / "log.jsonl"});
  const std::string out = testing::internal::GetCapturedStdout();
  unsetenv("TGRT_LOG_WINDOWS");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("sampling: shuffle: 126 windows of 9 tokens, each epoch in a new order, 31 "
                     "steps of 4 windows an epoch (its last 2 windows dropped)"),
            std::string::npos)
      << out;
  // Progress lines every 62 / 10 = 6 steps: step 30 in epoch 1, step 36 in epoch 2.
  const size_t p30 = out.find("step 30/62 | "), p36 = out.find("step 36/62 | ");
  ASSERT_NE(p30, std::string::npos) << out;
  ASSERT_NE(p36, std::string::npos) << out;
  EXPECT_EQ(out.find(" | epoch 1/2\n", p30), out.find('\n', p30) - 12) << out;
  EXPECT_EQ(out.find(" | epoch 2/2\n", p36), out.find('\n', p36) - 12) << out;
  EXPECT_NE(out.find("epoch 1/2 done at step 31: 31 steps in "), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 2/2 done at step 62: 31 steps in "), std::string::npos) << out;
  EXPECT_NE(out.find("time per epoch: 1: "), std::string::npos) << out;
  const LogLines log = readLog(d / "log.jsonl");
  ASSERT_EQ(log.steps.size(), 62u);
  EXPECT_EQ(log.steps[30]["epoch"], 1);
  EXPECT_EQ(log.steps[31]["epoch"], 2);
  const std::vector<nlohmann::json> w = readWindowLog(d / "w.jsonl");
  ASSERT_EQ(w.size(), 124u); // 62 steps x 2 micro-batches
  std::vector<int64_t> order[2];
  for (const auto& rec : w) {
    const int64_t step = rec["step"], epoch = rec["epoch"];
    EXPECT_EQ(epoch, (step - 1) / 31 + 1);
    EXPECT_EQ(rec["rank"], 0);
    ASSERT_EQ(rec["windows"].size(), 2u);
    for (const auto& x : rec["windows"]) order[epoch - 1].push_back(x.get<int64_t>());
  }
  for (const auto& o : order) {
    ASSERT_EQ(o.size(), 124u);
    const std::set<int64_t> distinct(o.begin(), o.end());
    EXPECT_EQ(distinct.size(), 124u);
    EXPECT_GE(*distinct.begin(), 0);
    EXPECT_LT(*distinct.rbegin(), 126);
  }
  EXPECT_NE(order[0], order[1]);
  // --steps: random sampling as before (offsets, no epoch field).
  ASSERT_EQ(setenv("TGRT_LOG_WINDOWS", (d / "r.jsonl").c_str(), 1), 0);
  const int rc2 = runDriver({"--data", d / "data", "--steps", "3", "--log", d / "r.jsonl.log",
                             "--quiet"});
  unsetenv("TGRT_LOG_WINDOWS");
  ASSERT_EQ(rc2, 0);
  const std::vector<nlohmann::json> r = readWindowLog(d / "r.jsonl");
  ASSERT_EQ(r.size(), 6u);
  EXPECT_TRUE(r[0].contains("offsets"));
  EXPECT_FALSE(readLog(d / "r.jsonl.log").steps[0].contains("epoch"));
  // Too few windows for one step of shuffle: refused, random still works.
  writeFakeData(d, "small", 30); // 3 windows < 4
  EXPECT_EQ(runDriver({"--data", d / "small", "--steps", "2", "--sampling", "shuffle",
                       "--quiet"}),
            1);
  EXPECT_EQ(runDriver({"--data", d / "small", "--steps", "2", "--quiet"}), 0);
  EXPECT_EQ(runDriver({"--data", d / "small", "--steps", "2", "--sampling", "sorted"}), 2);
}

// Resuming a shuffled run mid-epoch: the checkpoint records the mode, the position follows
// from the step; losses and the final checkpoint bytes equal an uninterrupted run's.
TEST(DriverFake, ShuffleResumesMidEpochExactly) {
  TempDir d;
  writeFakeData(d, "data", 1010);
  const std::string data = d / "data";
  ASSERT_EQ(runDriver({"--data", data, "--epochs", "2", "--log", d / "full.jsonl", "--save",
                       d / "full.ckpt", "--quiet"}),
            0);
  ASSERT_EQ(runDriver({"--data", data, "--epochs", "2", "--stop-after", "45", "--log",
                       d / "part.jsonl", "--save", d / "part.ckpt", "--quiet"}),
            0);
  {
    tgrt::SafetensorsReader r;
    std::string err;
    ASSERT_TRUE(r.open(d / "part.ckpt", &err)) << err;
    EXPECT_EQ(r.metadata().at("sampling"), "shuffle");
    EXPECT_EQ(r.metadata().at("epoch_windows"), "126");
    EXPECT_EQ(r.metadata().at("step_windows"), "4");
  }
  // No --epochs, no --sampling: the total and the mode come from the checkpoint.
  testing::internal::CaptureStdout();
  const int rc = runDriver({"--data", data, "--resume", d / "part.ckpt", "--log",
                            d / "part.jsonl", "--save", d / "part.ckpt"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("epoch 2/2 done at step 62: 17 steps (of 31; resumed at step 45) in "),
            std::string::npos)
      << out;
  const LogLines full = readLog(d / "full.jsonl"), part = readLog(d / "part.jsonl");
  ASSERT_EQ(full.steps.size(), 62u);
  ASSERT_EQ(part.steps.size(), 62u);
  for (size_t i = 0; i < 62; ++i)
    EXPECT_EQ(part.steps[i]["loss"].get<double>(), full.steps[i]["loss"].get<double>())
        << "step " << i + 1;
  EXPECT_EQ(readBytes(d / "part.ckpt"), readBytes(d / "full.ckpt"));
}

TEST(DriverFake, TimeLimitStopsAndRecordsSteps) {
  TempDir d;
  writeFakeData(d, "data");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(runDriver({"--data", d / "data", "--time-limit", "0.005", "--save",
                       d / "t.safetensors", "--quiet"}),
            0);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 5.0); // 0.3 s of training plus the final evals
  tgrt::SafetensorsReader r;
  std::string err;
  ASSERT_TRUE(r.open(d / "t.safetensors", &err)) << err;
  const int64_t steps = std::stoll(r.metadata().at("step"));
  EXPECT_GT(steps, 5);
  EXPECT_EQ(r.metadata().at("total_steps"), r.metadata().at("step"));
}

TEST(DriverFake, ErrorsAreClearAndNonZero) {
  TempDir d;
  writeFakeData(d, "data");
  // Usage errors.
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--steps", "3"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("--data DIR is required"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--bogus"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown option '--bogus'"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--steps", "3", "--epochs", "1"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("mutually exclusive"), std::string::npos);

  // Token id >= vocab_size in val.npy: names the file and byte offset.
  fs::create_directories(d.path / "bad");
  fs::copy(d.path / "data", d.path / "bad", fs::copy_options::recursive);
  std::vector<uint16_t> val(100, 3);
  val[40] = 50;
  std::string err;
  ASSERT_TRUE(tgrt::writeNpy(d / "bad/val.npy", tgrt::NpyDtype::U16, val.data(), 100, &err));
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "bad", "--steps", "3", "--quiet"}), 1);
  std::string e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("val.npy: token id 50 at index 40"), std::string::npos) << e;
  EXPECT_NE(e.find("byte offset 208"), std::string::npos) << e; // 128 + 2 * 40

  // Missing train.npy.
  fs::remove(d.path / "bad" / "train.npy");
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "bad", "--steps", "3", "--quiet"}), 1);
  e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("train.npy: cannot open"), std::string::npos) << e;

  // Resume from a checkpoint whose tensor shape does not match.
  std::vector<float> w15(15, 0.0f);
  ASSERT_TRUE(tgrt::writeSafetensors(d / "wrong.safetensors", {{"w", {15}, w15.data()}},
                                     {{"step", "3"}}, &err));
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--resume", d / "wrong.safetensors", "--quiet"}), 1);
  e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("wrong.safetensors was saved by another model: w has shape [15], this "
                   "model [16]"),
            std::string::npos)
      << e;

  // Resume from a truncated checkpoint.
  ASSERT_EQ(runDriver({"--data", d / "data", "--steps", "2", "--save", d / "ok.safetensors",
                       "--quiet"}),
            0);
  const std::string raw = readBytes(d / "ok.safetensors");
  writeBytes(d / "cut.safetensors", raw.substr(0, raw.size() - 10));
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--resume", d / "cut.safetensors", "--quiet"}), 1);
  e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("cut.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(DriverFake, InfoAndHelp) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(runDriver({"--info"}), 0);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("precision    fp32\n"), std::string::npos) << out;
  EXPECT_NE(out.find("parameters   16 in 1 tensors (64 B fp32; gradients the same)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("adamw state  128 B fp32 (moments m and v)"), std::string::npos) << out;
  EXPECT_NE(out.find("persistent   448 bytes"), std::string::npos) << out;
  {
    FakeConfig c;
    c.precision = TGRT_PRECISION_BF16;
    c.dtype = c.state_dtype = TGRT_BF16;
    FakeScope scope(c);
    testing::internal::CaptureStdout();
    EXPECT_EQ(runDriver({"--info"}), 0);
    out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("precision    bf16\n"), std::string::npos) << out;
    EXPECT_NE(out.find("parameters   16 in 1 tensors (32 B bf16; gradients the same)"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("adamw state  64 B bf16 (moments m and v)"), std::string::npos) << out;
  }
  {
    FakeConfig c;
    c.precision = TGRT_PRECISION_FP16_MIXED;
    c.loss_scale_init = 65536.0f;
    c.growth_interval = 2000;
    FakeScope scope(c);
    testing::internal::CaptureStdout();
    EXPECT_EQ(runDriver({"--info"}), 0);
    out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("precision    fp16-mixed, dynamic loss scaling from 65536 (x2 after 2000 "
                       "clean steps"),
              std::string::npos)
        << out;
  }
  {
    FakeConfig c;
    c.dtype = 9;
    FakeScope scope(c);
    testing::internal::CaptureStderr();
    EXPECT_EQ(runDriver({"--info"}), 1);
    const std::string e = testing::internal::GetCapturedStderr();
    EXPECT_NE(e.find("parameter 'w' has an unknown dtype 9"), std::string::npos) << e;
  }
  testing::internal::CaptureStdout();
  EXPECT_EQ(runDriver({"--help"}), 0);
  out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("--resume FILE"), std::string::npos) << out;
}

/// Every value in the float32 tensor `name` of checkpoint `path` is a bf16 value.
void expectBf16Values(const std::string& path, const std::string& name) {
  tgrt::SafetensorsReader r;
  std::string err;
  ASSERT_TRUE(r.open(path, &err)) << err;
  std::vector<float> v(kN);
  ASSERT_TRUE(r.readF32(name, v.data(), kN, &err)) << err;
  for (float x : v) EXPECT_EQ(x, tgrt_bf16_to_float(tgrt_bf16_from_float(x))) << name;
}

TEST(DriverFake, Bf16ParamsTrainAndResumeExactly) {
  FakeConfig c;
  c.precision = TGRT_PRECISION_BF16;
  c.dtype = c.state_dtype = TGRT_BF16;
  FakeScope scope(c);
  TempDir d;
  writeFakeData(d, "data");
  const std::string data = d / "data";
  ASSERT_EQ(runDriver({"--data", data, "--steps", "20", "--log", d / "full.jsonl", "--quiet"}),
            0);
  ASSERT_EQ(runDriver({"--data", data, "--steps", "20", "--stop-after", "10", "--save",
                       d / "ck.safetensors", "--log", d / "part.jsonl", "--quiet"}),
            0);
  {
    tgrt::SafetensorsReader r;
    std::string err;
    ASSERT_TRUE(r.open(d / "ck.safetensors", &err)) << err;
    EXPECT_EQ(r.metadata().at("precision"), "bf16");
    EXPECT_EQ(r.find("w")->dtype, "F32");
    EXPECT_EQ(r.metadata().count("loss_scale"), 0u); // no loss scaling
  }
  for (const char* name : {"w", "optim.m.w", "optim.v.w"})
    expectBf16Values(d / "ck.safetensors", name);
  ASSERT_EQ(runDriver({"--data", data, "--resume", d / "ck.safetensors", "--log",
                       d / "part.jsonl", "--quiet"}),
            0);
  const LogLines full = readLog(d / "full.jsonl"), part = readLog(d / "part.jsonl");
  ASSERT_EQ(full.steps.size(), 20u);
  ASSERT_EQ(part.steps.size(), 20u);
  for (size_t i = 0; i < 20; ++i)
    EXPECT_EQ(part.steps[i]["loss"].get<double>(), full.steps[i]["loss"].get<double>())
        << "step " << i + 1;
  EXPECT_LT(full.steps[19]["loss"].get<double>(), 0.6 * full.steps[0]["loss"].get<double>());

  // The bf16 checkpoint cannot be resumed by the fp32 build of the model.
  gFake = FakeConfig{};
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", data, "--resume", d / "ck.safetensors", "--quiet"}), 1);
  const std::string e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("ck.safetensors was saved by another model: precision bf16, this model "
                   "fp32; resume with a model compiled for bf16"),
            std::string::npos)
      << e;
}

TEST(DriverFake, PrecisionMismatchResumeIsRefused) {
  TempDir d;
  writeFakeData(d, "data");
  // An fp32 checkpoint (precision recorded) resumed by a bf16-mixed build of the model.
  ASSERT_EQ(runDriver({"--data", d / "data", "--steps", "2", "--save", d / "ck.safetensors",
                       "--quiet"}),
            0);
  FakeConfig c;
  c.precision = TGRT_PRECISION_BF16_MIXED;
  FakeScope scope(c);
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--resume", d / "ck.safetensors", "--quiet"}), 1);
  const std::string e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("ck.safetensors was saved by another model: precision fp32, this model "
                   "bf16-mixed"),
            std::string::npos)
      << e;
}

/// Fake fp16-mixed model: fp32 weights, gradients rounded through f16, loss scale from 2^20
/// (too large at first: the scaled gradients overflow f16), doubling after 4 clean steps.
FakeConfig lossScaledFake() {
  FakeConfig c;
  c.precision = TGRT_PRECISION_FP16_MIXED;
  c.loss_scale_init = 1048576.0f;
  c.growth_interval = 4;
  c.f16_overflow = true;
  return c;
}

TEST(DriverFake, LossScalingSkipsHalvesGrowsAndResumes) {
  FakeScope scope(lossScaledFake());
  TempDir d;
  writeFakeData(d, "data");
  const std::string data = d / "data";
  testing::internal::CaptureStdout();
  ASSERT_EQ(runDriver({"--data", data, "--steps", "30", "--log", d / "full.jsonl"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  const LogLines full = readLog(d / "full.jsonl");
  ASSERT_EQ(full.steps.size(), 30u);
  // Replay the GradScaler rule from the records: each step logs the scale it ran with and the
  // skips so far; a skipped step has a non-finite (null) grad_norm.
  tgrt::LossScaler ref(1048576.0f, 4);
  int64_t grown = 0;
  for (size_t i = 0; i < 30; ++i) {
    const auto& st = full.steps[i];
    ASSERT_TRUE(st.contains("loss_scale") && st.contains("skipped_steps")) << st.dump();
    EXPECT_EQ(st["loss_scale"].get<double>(), (double)ref.scale()) << "step " << i + 1;
    const bool skipped = st["grad_norm"].is_null();
    if (!skipped) {
      EXPECT_LT(st["grad_norm"].get<double>(), 10.0) << "unscaled, step " << i + 1;
    }
    const float before = ref.scale();
    ref.update(!skipped);
    grown += ref.scale() > before;
    EXPECT_EQ(st["skipped_steps"].get<int64_t>(), ref.skippedSteps()) << "step " << i + 1;
    EXPECT_TRUE(std::isfinite(st["loss"].get<double>()));
  }
  EXPECT_GE(ref.skippedSteps(), 1); // the initial scale overflows
  EXPECT_GE(grown, 1);              // and it grows again after clean steps
  EXPECT_TRUE(full.steps[0]["grad_norm"].is_null()) << full.steps[0].dump();
  EXPECT_EQ(full.steps[1]["loss_scale"].get<double>(), 524288.0);
  EXPECT_LT(full.steps[29]["loss"].get<double>(), 0.6 * full.steps[0]["loss"].get<double>());
  EXPECT_NE(out.find("| scale "), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(ref.skippedSteps()) + " of 30 optimizer steps skipped"),
            std::string::npos)
      << out;

  // Interrupted at step 13 and resumed: scale, growth counter and skips continue exactly.
  ASSERT_EQ(runDriver({"--data", data, "--steps", "30", "--stop-after", "13", "--save",
                       d / "ck.safetensors", "--log", d / "part.jsonl", "--quiet"}),
            0);
  {
    tgrt::SafetensorsReader r;
    std::string err;
    ASSERT_TRUE(r.open(d / "ck.safetensors", &err)) << err;
    EXPECT_EQ(r.metadata().at("precision"), "fp16-mixed");
    EXPECT_TRUE(r.metadata().count("loss_scale") && r.metadata().count("skipped_steps") &&
                r.metadata().count("loss_scale_growth_counter"));
  }
  ASSERT_EQ(runDriver({"--data", data, "--resume", d / "ck.safetensors", "--log",
                       d / "part.jsonl", "--quiet"}),
            0);
  const LogLines part = readLog(d / "part.jsonl");
  ASSERT_EQ(part.steps.size(), 30u);
  for (size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(part.steps[i]["loss"].get<double>(), full.steps[i]["loss"].get<double>())
        << "step " << i + 1;
    EXPECT_EQ(part.steps[i]["loss_scale"], full.steps[i]["loss_scale"]) << "step " << i + 1;
    EXPECT_EQ(part.steps[i]["skipped_steps"], full.steps[i]["skipped_steps"]) << i + 1;
    EXPECT_EQ(part.steps[i]["grad_norm"], full.steps[i]["grad_norm"]) << "step " << i + 1;
  }
}

TEST(DriverFake, LossScaleUnderflowStopsTraining) {
  FakeConfig c = lossScaledFake();
  c.loss_scale_init = 1.0f;
  c.nan_grads = true;
  FakeScope scope(c);
  TempDir d;
  writeFakeData(d, "data");
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--steps", "500", "--log", d / "log.jsonl",
                       "--quiet"}),
            1);
  const std::string e = testing::internal::GetCapturedStderr();
  // 1 -> 2^-127 (below the smallest normal float) after 127 skipped steps.
  EXPECT_NE(e.find("the loss scale fell to 5.87747175e-39 at step 127 after 127 skipped steps"),
            std::string::npos)
      << e;
  const LogLines log = readLog(d / "log.jsonl");
  ASSERT_EQ(log.steps.size(), 127u);
  EXPECT_EQ(log.steps[126]["skipped_steps"], 127);
}

/// Without loss scaling a non-finite gradient norm stops the run at that step (AdamW skipped
/// the update, so going on would silently train nothing).
TEST(DriverFake, NonFiniteGradNormStopsWithoutLossScaling) {
  FakeConfig c;
  c.nan_grads = true;
  FakeScope scope(c);
  TempDir d;
  writeFakeData(d, "data");
  testing::internal::CaptureStderr();
  EXPECT_EQ(runDriver({"--data", d / "data", "--steps", "20", "--log", d / "log.jsonl",
                       "--quiet"}),
            1);
  const std::string e = testing::internal::GetCapturedStderr();
  EXPECT_NE(e.find("the gradient norm is NaN at step 1"), std::string::npos) << e;
  EXPECT_NE(e.find("the parameters were not updated"), std::string::npos) << e;
  EXPECT_NE(e.find("rerun with --find-nonfinite (or TGRT_FIND_NONFINITE=1) to name the op"),
            std::string::npos)
      << e;
  const LogLines log = readLog(d / "log.jsonl");
  ASSERT_EQ(log.steps.size(), 1u); // the step is logged, then the run stops
}

/// --find-nonfinite (and TGRT_FIND_NONFINITE=1): the failing step runs again, on the same
/// batches (data RNG restored) with checks on, and the error names the first op whose output
/// was not finite.
TEST(DriverFake, FindNonFiniteNamesTheFirstOp) {
  FakeConfig c;
  c.nan_grads = true;
  FakeScope scope(c);
  TempDir d;
  writeFakeData(d, "data");
  for (bool env : {false, true}) {
    gMicroTokens.clear();
    if (env) setenv("TGRT_FIND_NONFINITE", "1", 1);
    testing::internal::CaptureStderr();
    std::vector<std::string> args = {"--data", d / "data", "--steps", "20", "--quiet"};
    if (!env) args.push_back("--find-nonfinite");
    EXPECT_EQ(runDriver(args), 1);
    const std::string e = testing::internal::GetCapturedStderr();
    if (env) unsetenv("TGRT_FIND_NONFINITE");
    EXPECT_NE(e.find("the gradient norm is NaN at step 1"), std::string::npos) << e;
    EXPECT_EQ(e.find("rerun with --find-nonfinite"), std::string::npos) << e;
    EXPECT_NE(e.find("find-nonfinite: re-ran step 1 (2 micro-batches and the optimizer step; "
                     "the same batches and dropout masks) with a check after every op; the "
                     "first op that wrote inf or NaN (@micro_step, micro-batch 0 of 2):\n"
                     "fake.grad (fake.mse_grad, backward; runtime call fakeLoss) wrote "
                     "non-finite values:\n"
                     "  output w (gradient) f32 [16]: every element NaN, 16 of 16 not "
                     "finite (16 NaN, 0 +inf, 0 -inf)\n"
                     "  input  w (parameter) f32 [16]: min "),
              std::string::npos)
        << e;
    // Micro-batches 0 and 1, then micro-batch 0 again (where the check fired): same tokens.
    ASSERT_EQ(gMicroTokens.size(), 3u);
    EXPECT_EQ(gMicroTokens[2], gMicroTokens[0]);
    EXPECT_NE(gMicroTokens[1], gMicroTokens[0]);
  }
}

/// With --find-nonfinite and no failure the run is the same: losses and gradient norms bit for
/// bit (the switch only moves the loss read before the optimizer step).
TEST(DriverFake, FindNonFiniteChangesNothingWhenFinite) {
  TempDir d;
  writeFakeData(d, "data");
  testing::internal::CaptureStdout();
  EXPECT_EQ(runDriver({"--data", d / "data", "--steps", "15", "--log", d / "a.jsonl"}), 0);
  EXPECT_EQ(runDriver({"--data", d / "data", "--steps", "15", "--log", d / "b.jsonl",
                       "--find-nonfinite"}),
            0);
  testing::internal::GetCapturedStdout();
  const LogLines a = readLog(d / "a.jsonl"), b = readLog(d / "b.jsonl");
  ASSERT_EQ(a.steps.size(), 15u);
  ASSERT_EQ(b.steps.size(), 15u);
  for (size_t i = 0; i < 15; ++i) {
    EXPECT_EQ(a.steps[i]["loss"], b.steps[i]["loss"]) << i;
    EXPECT_EQ(a.steps[i]["grad_norm"], b.steps[i]["grad_norm"]) << i;
  }
  ASSERT_EQ(a.evals.size(), b.evals.size());
  for (size_t i = 0; i < a.evals.size(); ++i) EXPECT_EQ(a.evals[i]["loss"], b.evals[i]["loss"]);
}

} // namespace
