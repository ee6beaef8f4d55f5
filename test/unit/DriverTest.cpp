// DriverTest.cpp — unit tests of the training driver (runtime/driver) and `tgc data prepare`
// (tools/data): file formats, lr schedule, init, data preparation on a small corpus, and a
// fake model trained through tgrt_driver_main on the CPU backend, including exact resume.
#include "runtime/driver/Driver.h"
#include "runtime/driver/Npy.h"
#include "runtime/driver/Safetensors.h"
#include "tools/data/DataPrepare.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = fs::temp_directory_path() /
           ("tgc-driver-" + std::string(info->name()) + "-" + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
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

// ---------------------------------------------------------------------- safetensors --

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

constexpr int64_t kN = 16, kB = 2, kT = 8, kVocab = 50;
// Persistent layout (bytes): w 0, grad 64, m 128, v 192, tokens 256, targets 320, acc 384,
// loss 392.
tgrt_param gParam = {"w", 1, {kN, 1, 1, 1}, kN, 0, 64, 128, 192, TGRT_INIT_NORMAL, 0.5f, 0};
tgrt_model gModel;

const tgrt_model* fakeInfo() {
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
  return &gModel;
}

float fakeLoss(tgrt_ctx* ctx, bool accumulate) {
  char* base = tgrt_region(ctx, TGRT_PERSISTENT);
  float* w = reinterpret_cast<float*>(base);
  float* g = reinterpret_cast<float*>(base + 64);
  const int32_t* tok = reinterpret_cast<const int32_t*>(base + 256);
  double loss = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const double t = (double)tok[i] / kVocab, diff = w[i] - t;
    loss += diff * diff / kN;
    if (accumulate) g[i] += (float)(2.0 * diff / kN / gModel.grad_accum);
  }
  float* l = reinterpret_cast<float*>(base + 392);
  *l = (float)loss;
  return *l;
}

void fakeMicro(tgrt_ctx* ctx) {
  fakeLoss(ctx, true);
  tgrt_report_loss(ctx, "fake.loss", reinterpret_cast<float*>(tgrt_region(ctx, 0) + 392));
}

void fakeOptim(tgrt_ctx* ctx) {
  char* base = tgrt_region(ctx, TGRT_PERSISTENT);
  float* acc = reinterpret_cast<float*>(base + 384);
  float* w = reinterpret_cast<float*>(base);
  float* g = reinterpret_cast<float*>(base + 64);
  tgrt_zero(ctx, "fake.acc", acc, 8);
  tgrt_grad_norm_sq(ctx, "fake.norm", g, kN, acc);
  tgrt_clip_scale(ctx, "fake.clip", acc, gModel.grad_clip);
  tgrt_adamw(ctx, "fake.adamw", w, g, reinterpret_cast<float*>(base + 128),
             reinterpret_cast<float*>(base + 192), kN, gModel.beta1, gModel.beta2, gModel.eps,
             gModel.weight_decay, acc);
  tgrt_zero(ctx, "fake.zero_grad", g, kN * 4);
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
  EXPECT_NE(e.find("wrong.safetensors: tensor 'w' has shape [15]"), std::string::npos) << e;

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
  EXPECT_NE(out.find("parameters   16 in 1 tensors"), std::string::npos) << out;
  EXPECT_NE(out.find("persistent   448 bytes"), std::string::npos) << out;
  testing::internal::CaptureStdout();
  EXPECT_EQ(runDriver({"--help"}), 0);
  out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("--resume FILE"), std::string::npos) << out;
}

} // namespace
