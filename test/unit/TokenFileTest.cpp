// TokenFileTest.cpp — unit tests of tgrt::TokenFile (runtime/driver/Npy.h), the read-only
// memory-mapped token array the training driver reads its splits through: the same ids as
// readTokens for every token dtype, refusals at open (size, dtype) naming the file and byte
// offset, ids checked when read (a bad id is reported only by a read that covers it, with its
// index and byte offset), empty splits, moves, and 64-bit offsets in a sparse file of more
// than 4 GiB.
#include "test/unit/TempDir.h"
#include "runtime/driver/Npy.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory per test (TempDir.h), named after this file's tests.
struct TempDir : tgc_test::TempDir {
  TempDir() : tgc_test::TempDir("tgc-tokenfile") {}
};

std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

/// All tokens of `f` through read(), in chunks of `chunk` tokens.
std::vector<int32_t> readAll(const tgrt::TokenFile& f, int64_t chunk) {
  std::vector<int32_t> out((size_t)f.size());
  std::string err;
  for (int64_t i = 0; i < f.size(); i += chunk) {
    const int64_t n = std::min(chunk, f.size() - i);
    EXPECT_TRUE(f.read(i, n, out.data() + i, &err)) << err;
  }
  return out;
}

} // namespace

TEST(TokenFile, ReadsTheIdsReadTokensReads) {
  TempDir d;
  std::string err;
  std::mt19937 rng(7);
  const int64_t n = 10007, vocab = 60000;
  std::vector<uint16_t> u16((size_t)n);
  std::vector<uint32_t> u32((size_t)n);
  std::vector<int32_t> i32((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    u16[(size_t)i] = (uint16_t)(rng() % vocab);
    u32[(size_t)i] = (uint32_t)(rng() % vocab);
    i32[(size_t)i] = (int32_t)(rng() % vocab);
  }
  ASSERT_TRUE(tgrt::writeNpy(d / "u16.npy", tgrt::NpyDtype::U16, u16.data(), n, &err)) << err;
  ASSERT_TRUE(tgrt::writeNpy(d / "u32.npy", tgrt::NpyDtype::U32, u32.data(), n, &err)) << err;
  ASSERT_TRUE(tgrt::writeNpy(d / "i32.npy", tgrt::NpyDtype::I32, i32.data(), n, &err)) << err;
  const struct {
    const char* name;
    tgrt::NpyDtype dtype;
  } files[] = {{"u16.npy", tgrt::NpyDtype::U16},
               {"u32.npy", tgrt::NpyDtype::U32},
               {"i32.npy", tgrt::NpyDtype::I32}};
  for (const auto& file : files) {
    SCOPED_TRACE(file.name);
    std::vector<uint32_t> want;
    ASSERT_TRUE(tgrt::readTokens(d / file.name, vocab, &want, &err)) << err;
    tgrt::TokenFile f;
    ASSERT_TRUE(f.open(d / file.name, vocab, &err)) << err;
    EXPECT_TRUE(f.isOpen());
    EXPECT_EQ(f.path(), d / file.name);
    EXPECT_EQ(f.dtype(), file.dtype);
    EXPECT_EQ(f.size(), n);
    EXPECT_EQ(f.dataOffset(), 128); // writeNpy's header: 10 + 118 bytes
    EXPECT_EQ(f.vocabSize(), vocab);
    for (int64_t chunk : {int64_t(1), int64_t(17), int64_t(4096), n}) {
      const std::vector<int32_t> got = readAll(f, chunk);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ((uint32_t)got[i], want[i]) << "index " << i << ", chunk " << chunk;
    }
    // An inner range, as a training window reads it.
    int32_t w[5];
    ASSERT_TRUE(f.read(1234, 5, w, &err)) << err;
    for (int i = 0; i < 5; ++i) EXPECT_EQ((uint32_t)w[i], want[(size_t)(1234 + i)]);
  }
}

TEST(TokenFile, TruncatedFileAndTrailingBytesAreRefusedAtOpen) {
  TempDir d;
  std::string err;
  const std::vector<uint16_t> v(100, 7);
  ASSERT_TRUE(tgrt::writeNpy(d / "ok.npy", tgrt::NpyDtype::U16, v.data(), 100, &err));
  const std::string raw = readBytes(d / "ok.npy"); // 128 header bytes + 200 data bytes
  ASSERT_EQ(raw.size(), 328u);
  tgrt::TokenFile f;

  writeBytes(d / "trunc.npy", raw.substr(0, raw.size() - 11));
  EXPECT_FALSE(f.open(d / "trunc.npy", 50, &err));
  EXPECT_FALSE(f.isOpen());
  EXPECT_EQ(f.size(), 0);
  EXPECT_NE(err.find("trunc.npy: truncated: the header promises 100 elements of 2 bytes but "
                     "only 189 bytes follow (at byte offset 128)"),
            std::string::npos)
      << err;

  writeBytes(d / "trail.npy", raw + "xyz");
  EXPECT_FALSE(f.open(d / "trail.npy", 50, &err));
  EXPECT_NE(err.find("trail.npy: 3 unexpected bytes after the data (at byte offset 328)"),
            std::string::npos)
      << err;

  // Header only, shape promising data: truncated at the data offset.
  writeBytes(d / "hdr.npy", raw.substr(0, 128));
  EXPECT_FALSE(f.open(d / "hdr.npy", 50, &err));
  EXPECT_NE(err.find("hdr.npy: truncated: the header promises 100 elements"), std::string::npos)
      << err;
  EXPECT_NE(err.find("(at byte offset 128)"), std::string::npos) << err;

  // The open that fails leaves a previously open file closed, not half-replaced.
  ASSERT_TRUE(f.open(d / "ok.npy", 50, &err)) << err;
  EXPECT_EQ(f.size(), 100);
  EXPECT_FALSE(f.open(d / "trail.npy", 50, &err));
  EXPECT_FALSE(f.isOpen());
  EXPECT_EQ(f.size(), 0);
}

TEST(TokenFile, OpenRefusesWhatReadTokensRefuses) {
  TempDir d;
  std::string err, want_err;
  tgrt::TokenFile f;
  std::vector<uint32_t> toks;
  EXPECT_FALSE(f.open(d / "missing.npy", 50, &err));
  EXPECT_NE(err.find("missing.npy: cannot open: No such file or directory"), std::string::npos)
      << err;

  // float32 and float64: the dtype message of readTokens, word for word.
  const std::vector<float> fl = {1, 2, 3};
  ASSERT_TRUE(tgrt::writeNpy(d / "f.npy", tgrt::NpyDtype::F32, fl.data(), 3, &err));
  std::string raw = readBytes(d / "f.npy");
  raw.replace(raw.find("<f4"), 3, "<f8");
  writeBytes(d / "f8.npy", raw);
  for (const char* name : {"f.npy", "f8.npy"}) {
    EXPECT_FALSE(tgrt::readTokens(d / name, 50, &toks, &want_err));
    EXPECT_FALSE(f.open(d / name, 50, &err));
    EXPECT_EQ(err, want_err);
    EXPECT_NE(err.find("for token ids (expected little-endian uint16 '<u2', uint32 '<u4' or "
                       "int32 '<i4') (at byte offset "),
              std::string::npos)
        << err;
  }

  writeBytes(d / "magic.npy", "PK\x03\x04 not numpy at all");
  EXPECT_FALSE(f.open(d / "magic.npy", 50, &err));
  EXPECT_NE(err.find("magic.npy: not a .npy file"), std::string::npos) << err;
  EXPECT_NE(err.find("(at byte offset 0)"), std::string::npos) << err;
}

TEST(TokenFile, BadIdIsReportedOnlyByAReadThatCoversIt) {
  TempDir d;
  std::string err;
  // uint16: id 99 >= vocab 50 at index 3 (byte 128 + 2 * 3 = 134).
  const std::vector<uint16_t> toks = {1, 2, 3, 99, 4, 5};
  ASSERT_TRUE(tgrt::writeNpy(d / "t.npy", tgrt::NpyDtype::U16, toks.data(), 6, &err));
  tgrt::TokenFile f;
  ASSERT_TRUE(f.open(d / "t.npy", 50, &err)) << err; // not scanned at open
  int32_t out[6];
  ASSERT_TRUE(f.read(0, 3, out, &err)) << err;
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[2], 3);
  ASSERT_TRUE(f.read(4, 2, out, &err)) << err;
  EXPECT_EQ(out[1], 5);
  err.clear();
  EXPECT_FALSE(f.read(2, 3, out, &err));
  EXPECT_EQ(err, d / "t.npy" + ": token id 99 at index 3 is outside [0, vocab_size=50) (at "
                               "byte offset 134)");
  // readTokens gives the same message, at open.
  std::string want;
  std::vector<uint32_t> all;
  EXPECT_FALSE(tgrt::readTokens(d / "t.npy", 50, &all, &want));
  EXPECT_EQ(err, want);

  // int32: a negative id at index 1 (byte 128 + 4 * 1 = 132).
  const std::vector<int32_t> neg = {0, -7, 3};
  ASSERT_TRUE(tgrt::writeNpy(d / "n.npy", tgrt::NpyDtype::I32, neg.data(), 3, &err));
  ASSERT_TRUE(f.open(d / "n.npy", 50, &err)) << err;
  ASSERT_TRUE(f.read(2, 1, out, &err)) << err;
  EXPECT_FALSE(f.read(0, 3, out, &err));
  EXPECT_NE(err.find("n.npy: token id -7 at index 1 is outside [0, vocab_size=50) (at byte "
                     "offset 132)"),
            std::string::npos)
      << err;

  // uint32 without a vocab_size: ids must still be non-negative int32 model inputs.
  const std::vector<uint32_t> big = {5, 4000000000u};
  ASSERT_TRUE(tgrt::writeNpy(d / "b.npy", tgrt::NpyDtype::U32, big.data(), 2, &err));
  ASSERT_TRUE(f.open(d / "b.npy", 0, &err)) << err;
  ASSERT_TRUE(f.read(0, 1, out, &err)) << err;
  EXPECT_EQ(out[0], 5);
  EXPECT_FALSE(f.read(0, 2, out, &err));
  EXPECT_NE(err.find("b.npy: token id 4000000000 at index 1 is outside [0, 2^31)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("(at byte offset 132)"), std::string::npos) << err;

  // A range outside the file is the caller's bug, said so.
  ASSERT_TRUE(f.open(d / "t.npy", 50, &err)) << err;
  EXPECT_FALSE(f.read(4, 3, out, &err));
  EXPECT_NE(err.find("internal error"), std::string::npos) << err;
  EXPECT_FALSE(f.read(-1, 1, out, &err));
  EXPECT_TRUE(f.read(6, 0, out, &err)) << err; // empty, at the end
}

TEST(TokenFile, EmptySplit) {
  TempDir d;
  std::string err;
  ASSERT_TRUE(tgrt::writeNpy(d / "z.npy", tgrt::NpyDtype::U16, nullptr, 0, &err)) << err;
  tgrt::TokenFile f;
  ASSERT_TRUE(f.open(d / "z.npy", 50, &err)) << err;
  EXPECT_TRUE(f.isOpen());
  EXPECT_EQ(f.size(), 0);
  int32_t out[1] = {-1};
  EXPECT_TRUE(f.read(0, 0, out, &err)) << err;
  EXPECT_EQ(out[0], -1);
  EXPECT_FALSE(f.read(0, 1, out, &err));
  EXPECT_NE(err.find("internal error"), std::string::npos) << err;
  f.advise(tgrt::TokenFile::Access::Sequential); // a hint; harmless on any mapping
}

TEST(TokenFile, MovesKeepTheMapping) {
  TempDir d;
  std::string err;
  const std::vector<uint16_t> toks = {9, 8, 7};
  ASSERT_TRUE(tgrt::writeNpy(d / "m.npy", tgrt::NpyDtype::U16, toks.data(), 3, &err));
  tgrt::TokenFile a;
  ASSERT_TRUE(a.open(d / "m.npy", 10, &err)) << err;
  a.advise(tgrt::TokenFile::Access::Random);
  tgrt::TokenFile b(std::move(a));
  EXPECT_FALSE(a.isOpen()); // NOLINT(bugprone-use-after-move): moved-from is closed
  EXPECT_EQ(a.size(), 0);
  ASSERT_TRUE(b.isOpen());
  std::vector<tgrt::TokenFile> v;
  v.push_back(std::move(b));
  v.emplace_back();
  ASSERT_TRUE(v[1].open(d / "m.npy", 10, &err)) << err;
  v.reserve(64); // relocates both
  for (const tgrt::TokenFile& f : v) {
    int32_t out[3];
    ASSERT_TRUE(f.read(0, 3, out, &err)) << err;
    EXPECT_EQ(out[0], 9);
    EXPECT_EQ(out[2], 7);
  }
  v[0] = std::move(v[1]); // unmaps v[0]'s file, takes v[1]'s
  EXPECT_EQ(v[0].size(), 3);
  EXPECT_FALSE(v[1].isOpen());
}

TEST(TokenFile, SparseFileBeyond4GiB) {
  // 2.5 G uint16 tokens (5 GB, a sparse file: no disk space), one bad id near the end: the
  // open reads only the header; a read far beyond 4 GiB returns the ids and names the bad
  // one by its 64-bit index and byte offset.
  TempDir d;
  std::string err;
  const int64_t n = 2500000000LL, bad = n - 3;
  ASSERT_TRUE(tgrt::writeNpy(d / "s.npy", tgrt::NpyDtype::U16, nullptr, 0, &err)) << err;
  std::string raw = readBytes(d / "s.npy");
  const std::string shape = "(" + std::to_string(n) + ",)";
  raw.replace(raw.find("(0,)"), 4, shape);
  const size_t longer = shape.size() - 4; // taken from the spaces that pad the header
  raw.erase(raw.size() - 1 - longer, longer);
  ASSERT_EQ(raw.size(), 128u);
  ASSERT_EQ(raw.back(), '\n');
  writeBytes(d / "s.npy", raw);
  {
    std::FILE* fp = std::fopen((d / "s.npy").c_str(), "r+b");
    ASSERT_NE(fp, nullptr);
    ASSERT_EQ(ftruncate(fileno(fp), 128 + 2 * n), 0);
    ASSERT_EQ(fseeko(fp, 128 + 2 * bad, SEEK_SET), 0);
    const unsigned char id[2] = {0x34, 0x12}; // 0x1234 = 4660
    ASSERT_EQ(std::fwrite(id, 1, 2, fp), 2u);
    std::fclose(fp);
  }
  struct stat st;
  ASSERT_EQ(stat((d / "s.npy").c_str(), &st), 0);
  if ((int64_t)st.st_blocks * 512 > 64 * 1024 * 1024)
    GTEST_SKIP() << "the file system does not keep sparse files sparse";
  tgrt::TokenFile f;
  ASSERT_TRUE(f.open(d / "s.npy", 4660, &err)) << err;
  EXPECT_EQ(f.size(), n);
  int32_t out[8];
  ASSERT_TRUE(f.read(n - 8, 5, out, &err)) << err;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[i], 0);
  EXPECT_FALSE(f.read(n - 8, 8, out, &err));
  EXPECT_NE(err.find("token id 4660 at index 2499999997 is outside [0, vocab_size=4660) (at "
                     "byte offset 5000000122)"),
            std::string::npos)
      << err;
  ASSERT_TRUE(f.open(d / "s.npy", 4661, &err)) << err;
  ASSERT_TRUE(f.read(n - 8, 8, out, &err)) << err;
  EXPECT_EQ(out[5], 4660);
}
