// TokenSplitTest.cpp — unit tests of tgrt::TokenSplit and the sharded data index
// (runtime/driver/TokenSplit.h; docs/data.md): a split of several shards reads as their
// concatenation, windows across shard boundaries included (and equal to the same tokens in
// one file); a shard whose token count or dtype disagrees with meta.json, a missing shard and
// a malformed index are each refused naming the shard file (or the index's JSON path) and a
// byte offset; a bad id is reported with the shard and its index in that shard. Also
// tgrt::WindowPermutation (EpochOrder.h), the epoch order of --sampling shuffle: a bijection
// of [0, n) for every n, different per epoch and seed.
#include "test/unit/TempDir.h"
#include "runtime/driver/EpochOrder.h"
#include "runtime/driver/Npy.h"
#include "runtime/driver/TokenSplit.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

struct TempDir : tgc_test::TempDir {
  TempDir() : tgc_test::TempDir("tgc-tokensplit") {}
};

void writeText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

/// Writes `sizes` uint16 shards train-0000i.npy of ids < 500 into d, their index as d/meta.json
/// (val: one shard "val.npy" of 40 tokens), and returns the concatenated train tokens.
std::vector<int32_t> writeShards(const TempDir& d, const std::vector<int64_t>& sizes) {
  std::mt19937 rng(11);
  std::vector<int32_t> all;
  std::string shards, err;
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<uint16_t> v((size_t)sizes[i]);
    for (auto& x : v) {
      x = (uint16_t)(rng() % 500);
      all.push_back(x);
    }
    const std::string name = "train-0000" + std::to_string(i) + ".npy";
    EXPECT_TRUE(tgrt::writeNpy(d / name, tgrt::NpyDtype::U16, v.data(), sizes[i], &err)) << err;
    shards += std::string(i ? ", " : "") + "{\"file\": \"" + name +
              "\", \"tokens\": " + std::to_string(sizes[i]) + "}";
    total += sizes[i];
  }
  std::vector<uint16_t> val(40, 3);
  EXPECT_TRUE(tgrt::writeNpy(d / "val.npy", tgrt::NpyDtype::U16, val.data(), 40, &err)) << err;
  writeText(d / "meta.json",
            "{\"format\": \"tgc-tokens\", \"format_version\": 2, \"vocab_size\": 500, "
            "\"dtype\": \"uint16\", \"eos_id\": null, \"splits\": {\"train\": {\"tokens\": " +
                std::to_string(total) + ", \"documents\": 3, \"shards\": [" + shards +
                "], \"document_starts\": \"train-docs.npy\"}, \"val\": {\"tokens\": 40, "
                "\"shards\": [{\"file\": \"val.npy\", \"tokens\": 40}]}}}");
  return all;
}

std::string readText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Parses d/meta.json and opens its train split; returns the error ("" on success).
std::string openTrain(const TempDir& d, tgrt::TokenSplit* s, int64_t vocab = 500) {
  tgrt::DataIndex index;
  std::string err;
  if (!tgrt::parseDataIndex(d / "meta.json", readText(d / "meta.json"), &index, &err)) return err;
  EXPECT_TRUE(index.sharded);
  if (!s->openShards(d.path.string(), d / "meta.json", "train", index.splits.at("train"),
                     index.dtype, vocab, &err))
    return err;
  return "";
}

/// The index error for meta.json text `text` ("" when it parses).
std::string indexError(const std::string& text) {
  tgrt::DataIndex index;
  std::string err;
  return tgrt::parseDataIndex("D/meta.json", text, &index, &err) ? "" : err;
}

} // namespace

TEST(TokenSplit, WindowsAcrossShardBoundariesEqualTheConcatenation) {
  TempDir d;
  // An empty shard in the middle: windows step over it.
  const std::vector<int32_t> all = writeShards(d, {37, 50, 0, 13, 64});
  tgrt::TokenSplit s;
  ASSERT_EQ(openTrain(d, &s), "");
  ASSERT_EQ(s.tokens(), (int64_t)all.size());
  ASSERT_EQ(s.shardCount(), 5u);
  EXPECT_EQ(s.shardStart(3), 87);
  EXPECT_EQ(s.describe(), d / "meta.json" + " (splits.train: 5 shards)");
  // The same tokens as one file, read through openFile.
  std::string err;
  std::vector<uint16_t> u16(all.begin(), all.end());
  ASSERT_TRUE(tgrt::writeNpy(d / "one.npy", tgrt::NpyDtype::U16, u16.data(),
                             (int64_t)u16.size(), &err));
  tgrt::TokenSplit one;
  ASSERT_TRUE(one.openFile(d / "one.npy", 500, &err)) << err;
  EXPECT_EQ(one.shardCount(), 1u);
  EXPECT_EQ(one.describe(), d / "one.npy");
  for (int64_t n : {1, 2, 17, 51, 64, (int)all.size()}) {
    for (int64_t off = 0; off + n <= (int64_t)all.size(); ++off) {
      std::vector<int32_t> a((size_t)n, -1), b((size_t)n, -1);
      ASSERT_TRUE(s.copyWindow(off, n, a.data(), &err)) << err;
      ASSERT_TRUE(one.copyWindow(off, n, b.data(), &err)) << err;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(a[(size_t)i], all[(size_t)(off + i)]) << "offset " << off << " n " << n;
        ASSERT_EQ(b[(size_t)i], all[(size_t)(off + i)]) << "offset " << off << " n " << n;
      }
    }
  }
  // Out of range: a caller's bug, refused.
  int32_t w[4];
  EXPECT_FALSE(s.copyWindow((int64_t)all.size() - 3, 4, w, &err));
  EXPECT_NE(err.find("internal error"), std::string::npos) << err;
  // Moves keep the mappings.
  tgrt::TokenSplit moved = std::move(s);
  ASSERT_TRUE(moved.copyWindow(30, 4, w, &err)) << err;
  EXPECT_EQ(w[3], all[33]);
}

TEST(TokenSplit, BadIdNamesTheShardAndTheIndexInIt) {
  TempDir d;
  writeShards(d, {20, 30});
  std::vector<uint16_t> v(30, 1);
  v[7] = 500; // == vocab_size
  std::string err;
  ASSERT_TRUE(tgrt::writeNpy(d / "train-00001.npy", tgrt::NpyDtype::U16, v.data(), 30, &err));
  tgrt::TokenSplit s;
  ASSERT_EQ(openTrain(d, &s), ""); // not checked at open
  int32_t w[10];
  ASSERT_TRUE(s.copyWindow(15, 10, w, &err)) << err; // tokens 15..24: shard 1's 0..4
  EXPECT_FALSE(s.copyWindow(18, 10, w, &err));        // shard 1's 0..7
  EXPECT_EQ(err, d / "train-00001.npy" +
                     ": token id 500 at index 7 is outside [0, vocab_size=500) (at byte "
                     "offset 142)");
}

TEST(TokenSplit, ShardsThatDisagreeWithTheIndexAreRefusedAtOpen) {
  TempDir d;
  writeShards(d, {20, 30, 25, 1000});
  std::string err;
  tgrt::TokenSplit s;
  // Token count: the file holds fewer tokens than the index says.
  std::vector<uint16_t> v(500, 1);
  ASSERT_TRUE(tgrt::writeNpy(d / "train-00003.npy", tgrt::NpyDtype::U16, v.data(), 500, &err));
  EXPECT_EQ(openTrain(d, &s), d / "train-00003.npy" + ": 500 tokens in the file, 1000 in " +
                                  d / "meta.json" +
                                  " (splits.train.shards[3].tokens) (at byte offset 128)");
  EXPECT_FALSE(s.isOpen());
  // Dtype: a uint32 shard in a uint16 index.
  std::vector<uint32_t> u(1000, 1);
  ASSERT_TRUE(tgrt::writeNpy(d / "train-00003.npy", tgrt::NpyDtype::U32, u.data(), 1000, &err));
  EXPECT_EQ(openTrain(d, &s), d / "train-00003.npy" + ": dtype '<u4' in the file, 'uint16' "
                                  "('<u2') in " + d / "meta.json" +
                                  " (dtype) (at byte offset 20)");
  // Truncated: the file's own check, at the data offset.
  std::vector<uint16_t> w(1000, 1);
  ASSERT_TRUE(tgrt::writeNpy(d / "train-00003.npy", tgrt::NpyDtype::U16, w.data(), 1000, &err));
  std::filesystem::resize_file(d / "train-00003.npy", 128 + 2 * 999);
  EXPECT_EQ(openTrain(d, &s).rfind(d / "train-00003.npy" + ": truncated: the header promises "
                                       "1000 elements of 2 bytes but only 1998 bytes follow "
                                       "(at byte offset 128)", 0),
            0u);
  // Missing.
  std::filesystem::remove(d / "train-00002.npy");
  EXPECT_EQ(openTrain(d, &s), d / "train-00002.npy" + ": cannot open: No such file or "
                                  "directory (listed in " + d / "meta.json" +
                                  " as splits.train.shards[2].file)");
  EXPECT_FALSE(s.isOpen());
}

TEST(TokenSplit, MalformedIndexNamesItsJsonPath) {
  // No "splits": the single-file layout, not an error.
  tgrt::DataIndex index;
  std::string err;
  ASSERT_TRUE(tgrt::parseDataIndex("D/meta.json", "{\"vocab_size\": 5}", &index, &err));
  EXPECT_FALSE(index.sharded);

  const std::string head = "{\"dtype\": \"uint16\", \"splits\": {\"val\": {\"tokens\": 0, "
                           "\"shards\": []}, \"train\": ";
  auto with = [&](const std::string& train) { return head + train + "}}"; };
  EXPECT_EQ(indexError(with("{\"tokens\": 5, \"shards\": [{\"file\": \"a.npy\", \"tokens\": 2}, "
                            "{\"file\": \"b.npy\", \"tokens\": 3}]}")),
            "");
  EXPECT_EQ(indexError(with("{\"tokens\": 6, \"shards\": [{\"file\": \"a.npy\", \"tokens\": 2}, "
                            "{\"file\": \"b.npy\", \"tokens\": 3}, {\"file\": 3, \"tokens\": 1}]}")),
            "D/meta.json: splits.train.shards[2].file: expected a string, found 3");
  EXPECT_EQ(indexError(with("{\"tokens\": 6, \"shards\": [{\"file\": \"a.npy\", \"tokens\": 2}, "
                            "{\"file\": \"b.npy\", \"tokens\": 3}]}")),
            "D/meta.json: splits.train.tokens: 6, but its shards hold 5 tokens (the sum of "
            "splits.train.shards[*].tokens)");
  EXPECT_EQ(indexError(with("{\"tokens\": 2, \"shards\": [{\"file\": \"a.npy\", \"tokens\": -2}]}")),
            "D/meta.json: splits.train.shards[0].tokens: expected a non-negative integer, "
            "found -2");
  EXPECT_EQ(indexError(with("{\"tokens\": 2, \"shards\": [{\"tokens\": 2}]}")),
            "D/meta.json: splits.train.shards[0].file: missing");
  EXPECT_EQ(indexError(with("{\"tokens\": 2, \"shards\": [{\"file\": \"/abs.npy\", \"tokens\": 2}]}")),
            "D/meta.json: splits.train.shards[0].file: expected a path relative to the data "
            "directory, found \"/abs.npy\"");
  EXPECT_EQ(indexError(with("{\"tokens\": 2, \"shards\": {}}")),
            "D/meta.json: splits.train.shards: expected an array, found object");
  EXPECT_EQ(indexError(with("[]")), "D/meta.json: splits.train: expected an object, found array");
  EXPECT_EQ(indexError("{\"dtype\": \"uint16\", \"splits\": {\"train\": {\"tokens\": 0, "
                       "\"shards\": []}}}"),
            "D/meta.json: splits.val: missing (the driver needs the train and val splits)");
  EXPECT_EQ(indexError("{\"dtype\": \"float32\", \"splits\": {}}"),
            "D/meta.json: dtype: expected \"uint16\" or \"uint32\", found \"float32\"");
  EXPECT_EQ(indexError("{\"splits\": {}}").rfind("D/meta.json: dtype: missing", 0), 0u);
  EXPECT_EQ(indexError("{\"format_version\": 3, \"dtype\": \"uint16\", \"splits\": {}}"),
            "D/meta.json: format_version: 3 is not a version this driver reads (1 or 2)");
  EXPECT_EQ(indexError("{\"dtype\": \"uint16\", \"splits\": []}"),
            "D/meta.json: splits: expected an object, found array");
  EXPECT_EQ(indexError("{\"splits\": ").rfind("D/meta.json: malformed JSON at byte offset", 0),
            0u);
}

TEST(WindowPermutation, IsABijectionDifferentPerEpochAndSeed) {
  for (uint64_t n : {1, 2, 3, 4, 5, 7, 16, 17, 100, 1000, 4097, 65536, 100003}) {
    SCOPED_TRACE(n);
    std::vector<char> seen(n, 0);
    const tgrt::WindowPermutation p(n, 5, 0);
    EXPECT_EQ(p.size(), n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t x = p(i);
      ASSERT_LT(x, n);
      ASSERT_FALSE(seen[x]) << "value " << x << " twice";
      seen[x] = 1;
    }
    if (n < 100) continue;
    const tgrt::WindowPermutation e1(n, 5, 1), s6(n, 6, 0), again(n, 5, 0);
    int64_t same_epoch = 0, same_seed = 0, fixed = 0;
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(again(i), p(i)); // deterministic
      same_epoch += e1(i) == p(i);
      same_seed += s6(i) == p(i);
      fixed += p(i) == i;
    }
    // A random permutation agrees with another in about 1 place (and has ~1 fixed point).
    EXPECT_LT(same_epoch, 10);
    EXPECT_LT(same_seed, 10);
    EXPECT_LT(fixed, 10);
  }
  // Large n: O(1) memory, any index.
  const tgrt::WindowPermutation big(625000000000ull, 1, 7); // 10 T tokens / 16
  EXPECT_LT(big(624999999999ull), 625000000000ull);
  EXPECT_NE(big(0), big(1));
}
