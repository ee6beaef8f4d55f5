// ParserRegressionTest.cpp — the located errors of the inputs that fuzzing (scripts/fuzz.sh,
// docs/testing.md "Fuzzing") found crashing or unlocated; fuzz/corpus/ replays the raw
// inputs, these pin the messages.
#include "frontend/Spec.h"
#include "runtime/driver/DataMeta.h"
#include "runtime/driver/Npy.h"
#include "runtime/driver/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

namespace {

std::string writeTemp(const std::string &name, const std::string &bytes) {
  const std::string p =
      (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-" + name))
          .string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string specError(const std::string &text, const std::vector<std::string> &ov = {}) {
  tgc::Spec s;
  tgc::SpecError e;
  if (tgc::parseSpec(text, ov, s, e, "s.json")) return "OK";
  return tgc::formatSpecError("s.json", e);
}

TEST(ParserRegression, SpecNumberOutOfRangeIsASyntaxError) {
  // Used to escape parseSpec as nlohmann's out_of_range.406 (std::terminate).
  EXPECT_EQ(specError("{\n  \"model\": 1e400}"),
            "s.json:2:12: number 1e400 is out of range (expected a number that fits a double)");
  // In an override it is raw text, then refused by the field's type check.
  EXPECT_NE(specError("{}", {"training.optimizer.lr=1e999"}).find("--set training.optimizer.lr"),
            std::string::npos);
}

TEST(ParserRegression, SpecOverrideMustBeUtf8) {
  // Used to end in "internal error" with an empty path (type_error.316 from dump()).
  EXPECT_EQ(specError("{}", {"training.precision=bf\xe3" "16-mixed"}).rfind(
                "--set training.precision: expected UTF-8 text in the value", 0),
            0u);
}

TEST(ParserRegression, SpecEmptyKeyHasAPath) {
  EXPECT_EQ(specError("{\"\": 1}"), "s.json: \"\": unknown field");
  EXPECT_EQ(specError("{\"model\": {\"\": 1}}"), "s.json: model.\"\": unknown field");
  EXPECT_EQ(specError("{\"\": 1, \"\": 2}"),
            "s.json: \"\": duplicate field (it appears more than once)");
}

TEST(ParserRegression, NpyHugeCountIsTruncationNotOverflow) {
  // 'shape': (7000000000000000000,) used to overflow count * itemsize (UB).
  std::string dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (7000000000000000000,), }";
  dict.append(117 - dict.size(), ' ');
  dict.push_back('\n');
  const std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict;
  const std::string p = writeTemp("huge.npy", bytes);
  tgrt::NpyArray a;
  std::string err;
  EXPECT_FALSE(tgrt::readNpy(p, &a, &err));
  EXPECT_EQ(err, p + ": truncated: the header promises 7000000000000000000 elements of 2 bytes "
                     "but only 0 bytes follow (at byte offset 128)");
  std::remove(p.c_str());
}

std::string stFile(const std::string &name, const std::string &header, size_t data_bytes) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = char((h.size() >> (8 * i)) & 0xff);
  return writeTemp(name, len + h + std::string(data_bytes, '\0'));
}

TEST(ParserRegression, SafetensorsHeaderEdgeCases) {
  tgrt::SafetensorsReader r1, r2, r3;
  std::string err;
  const std::string big = stFile(
      "big.safetensors",
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 8);
  EXPECT_FALSE(r1.open(big, &err));
  EXPECT_EQ(err, big + ": tensor 'a' has a shape of more than 2^60 elements (at byte offset 8)");
  const std::string num = stFile("num.safetensors", R"({"a":1e999})", 0);
  EXPECT_FALSE(r2.open(num, &err));
  EXPECT_EQ(err.rfind(num + ": malformed JSON header: ", 0), 0u) << err;
  // A zero-size tensor at the offset where the next one starts does not overlap it.
  const std::string zero = stFile(
      "zero.safetensors",
      R"({"q":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", 4);
  EXPECT_TRUE(r3.open(zero, &err)) << err;
  for (const auto &p : {big, num, zero}) std::remove(p.c_str());
}

TEST(ParserRegression, DataMetaErrorsAreLocated) {
  std::string err;
  EXPECT_TRUE(tgrt::checkDataMeta("m.json", "{\"vocab_size\": 400, \"x\": []}", 512, &err));
  EXPECT_TRUE(tgrt::checkDataMeta("m.json", "{}", 512, &err));
  EXPECT_FALSE(tgrt::checkDataMeta("m.json", "[1]", 512, &err));
  EXPECT_EQ(err, "m.json: (root): expected a JSON object, found array");
  EXPECT_FALSE(tgrt::checkDataMeta("m.json", "{\"vocab_size\": \"x\"}", 512, &err));
  EXPECT_EQ(err, "m.json: vocab_size: expected a positive integer, found \"x\"");
  EXPECT_FALSE(tgrt::checkDataMeta("m.json", "{\"vocab_size\": 600}", 512, &err));
  EXPECT_EQ(err.rfind("m.json: vocab_size: the data's vocab_size 600 exceeds the model's", 0), 0u);
  EXPECT_FALSE(tgrt::checkDataMeta("m.json", "{\"vocab_size\": 1e999}", 512, &err));
  EXPECT_EQ(err.rfind("m.json: malformed JSON at byte offset 15: expected one JSON object", 0),
            0u) << err;
  EXPECT_FALSE(tgrt::checkDataMeta("m.json", "{\"vocab_size\": 3", 512, &err));
  EXPECT_EQ(err.rfind("m.json: malformed JSON at byte offset 16: expected one JSON object", 0),
            0u) << err;
}

} // namespace
