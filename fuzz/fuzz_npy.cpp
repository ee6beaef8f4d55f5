// fuzz_npy.cpp — libFuzzer harness for the .npy token reader (runtime/driver/Npy.h: readNpy,
// readTokens). The input is the whole file. Checks: no crash; a failure names the file; a
// success returns count * itemsize bytes.
#include "fuzz/FuzzUtil.h"
#include "runtime/driver/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tgcfuzz::ScratchFile file("npy", "npy");
  file.write(data, size);
  const std::string prefix = file.path() + ": ";
  tgrt::NpyArray a;
  std::string err;
  if (!tgrt::readNpy(file.path(), &a, &err)) {
    tgcfuzz::expectLocated(err, prefix);
  } else if ((int64_t)a.bytes.size() != a.count * tgrt::npyItemSize(a.dtype) ||
             a.data_offset + (int64_t)a.bytes.size() != (int64_t)size) {
    std::abort();
  }
  std::vector<uint32_t> tokens;
  err.clear();
  if (!tgrt::readTokens(file.path(), 512, &tokens, &err)) {
    tgcfuzz::expectLocated(err, prefix);
  } else {
    for (uint32_t t : tokens)
      if (t >= 512) std::abort();
  }
  return 0;
}
