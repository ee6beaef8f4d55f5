// FuzzUtil.h — helpers shared by the fuzz harnesses (fuzz/*.cpp): a per-process scratch file
// for the parsers that read a path, and the "located error" check every harness applies.
#ifndef TGC_FUZZ_FUZZUTIL_H
#define TGC_FUZZ_FUZZUTIL_H

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tgcfuzz {

/// A scratch file "<dir>/tgc-fuzz-<tag>-<pid>.<ext>" (dir: /dev/shm when present, else /tmp),
/// removed at exit. write() replaces its contents with `size` bytes; aborts on I/O failure
/// (a harness problem, not a parser bug).
class ScratchFile {
public:
  ScratchFile(const char *tag, const char *ext) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/tgc-fuzz-" + tag + "-" + std::to_string(getpid()) + "." + ext;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string &path() const { return path_; }
  void write(const uint8_t *data, size_t size) {
    std::FILE *f = std::fopen(path_.c_str(), "wb");
    if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
      std::perror(path_.c_str());
      std::abort();
    }
  }

private:
  std::string path_;
};

/// Aborts (a finding for the fuzzer) unless `err` is a located error: it starts with
/// `prefix` (the file name and ": ") and says something after it.
inline void expectLocated(const std::string &err, const std::string &prefix) {
  if (err.size() <= prefix.size() || err.compare(0, prefix.size(), prefix) != 0) {
    std::fprintf(stderr, "unlocated error (expected the prefix '%s'): '%s'\n", prefix.c_str(),
                 err.c_str());
    std::abort();
  }
}

} // namespace tgcfuzz

#endif // TGC_FUZZ_FUZZUTIL_H
