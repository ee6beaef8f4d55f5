// fuzz_meta.cpp — libFuzzer harness for the data directory's meta.json check
// (runtime/driver/DataMeta.h: checkDataMeta), against a model of 512 tokens. The input is the
// whole file. Checks: no crash or exception; a failure names the file.
#include "fuzz/FuzzUtil.h"
#include "runtime/driver/DataMeta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  std::string err;
  if (!tgrt::checkDataMeta("data/meta.json", text, 512, &err))
    tgcfuzz::expectLocated(err, "data/meta.json: ");
  return 0;
}
