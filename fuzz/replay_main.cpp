// replay_main.cpp — a main() for the fuzz harnesses without libFuzzer (any compiler): calls
// LLVMFuzzerTestOneInput once on every file named on the command line and on every regular
// file under each directory named (recursively, in sorted order). Used by ctest to replay
// fuzz/corpus/<name>/ as a regression suite. Exits 1 if an argument cannot be read or no
// input was found; a crashing input aborts the process (the test fails).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    const fs::path p(argv[i]);
    if (fs::is_directory(p, ec)) {
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
           it.increment(ec))
        if (it->is_regular_file()) files.push_back(it->path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: not a file or directory\n", argv[i]);
      return 1;
    }
    if (ec) {
      std::fprintf(stderr, "%s: %s\n", argv[i], ec.message().c_str());
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 1;
  }
  for (const fs::path &f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", f.c_str());
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
