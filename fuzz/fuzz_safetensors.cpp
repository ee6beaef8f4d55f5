// fuzz_safetensors.cpp — libFuzzer harness for the checkpoint reader
// (runtime/driver/Safetensors.h: SafetensorsReader). The input is the whole file. Checks: no
// crash; open() and readF32() failures name the file; every F32 tensor open() accepted (up to
// 1 Mi elements) reads back.
#include "fuzz/FuzzUtil.h"
#include "runtime/driver/Safetensors.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tgcfuzz::ScratchFile file("st", "safetensors");
  file.write(data, size);
  const std::string prefix = file.path() + ": ";
  tgrt::SafetensorsReader r;
  std::string err;
  if (!r.open(file.path(), &err)) {
    tgcfuzz::expectLocated(err, prefix);
    return 0;
  }
  std::vector<float> buf;
  for (const auto &[name, info] : r.tensors()) {
    const int64_t numel = (info.end - info.begin) / 4;
    if (numel > (1 << 20)) continue;
    buf.resize((size_t)numel + 1);
    err.clear();
    const bool ok = r.readF32(name, buf.data(), numel, &err);
    if (!ok) tgcfuzz::expectLocated(err, prefix);
    if (ok && info.dtype != "F32") std::abort();
    // A wrong element count must be refused.
    err.clear();
    if (r.readF32(name, buf.data(), numel + 1, &err)) std::abort();
    tgcfuzz::expectLocated(err, prefix);
  }
  err.clear();
  if (r.readF32("no such tensor \x01", buf.data(), 0, &err)) std::abort();
  tgcfuzz::expectLocated(err, prefix);
  return 0;
}
