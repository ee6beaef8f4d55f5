// fuzz_spec.cpp — libFuzzer harness for the spec parser (frontend/Spec.h: parseSpec).
//
// Input layout: leading lines that start with "--set " are overrides (the rest of the line,
// e.g. "training.batch_size=32"); everything after them is the JSON text. Checks: parseSpec
// never throws or crashes; a failure carries a non-empty located message; a success
// round-trips (its filled-in JSON parses again to the same JSON).
#include "frontend/Spec.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string in(reinterpret_cast<const char *>(data), size);
  std::vector<std::string> overrides;
  size_t pos = 0;
  while (in.compare(pos, 6, "--set ") == 0 && overrides.size() < 16) {
    size_t nl = in.find('\n', pos);
    if (nl == std::string::npos) nl = in.size();
    overrides.push_back(in.substr(pos + 6, nl - pos - 6));
    pos = nl < in.size() ? nl + 1 : nl;
  }
  const std::string text = in.substr(pos);

  tgc::Spec spec;
  tgc::SpecError err;
  if (!tgc::parseSpec(text, overrides, spec, err, "fuzz.json")) {
    const std::string msg = tgc::formatSpecError("fuzz.json", err);
    if (err.message.empty() || err.path.empty() || msg.empty()) {
      std::fprintf(stderr, "unlocated spec error: path '%s' message '%s'\n", err.path.c_str(),
                   err.message.c_str());
      std::abort();
    }
    return 0;
  }
  tgc::Spec again;
  tgc::SpecError err2;
  if (!tgc::parseSpec(spec.json, {}, again, err2, "roundtrip.json") || again.json != spec.json) {
    std::fprintf(stderr, "spec does not round-trip: %s\n--- first\n%s\n--- second\n%s\n",
                 err2.str().c_str(), spec.json.c_str(), again.json.c_str());
    std::abort();
  }
  return 0;
}
