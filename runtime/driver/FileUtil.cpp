// FileUtil.cpp — atomic file writes for the driver (see FileUtil.h).
#include "runtime/driver/FileUtil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tgrt {

AtomicFile::AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp") {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) error_ = tmp_ + ": cannot open for writing: " + std::strerror(errno);
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (!ok() || bytes == 0) return;
  if (std::fwrite(data, 1, bytes, f_) != bytes)
    error_ = tmp_ + ": write failed: " + std::strerror(errno);
}

bool AtomicFile::commit() {
  if (!f_) return false;
  if (error_.empty() && std::fflush(f_) != 0)
    error_ = tmp_ + ": write failed: " + std::strerror(errno);
  // The data must be on disk before the rename makes it the file: otherwise a crash soon
  // after could leave `path` renamed but empty or partial (ext4 and xfs reorder them).
  if (error_.empty() && ::fsync(fileno(f_)) != 0)
    error_ = tmp_ + ": fsync failed: " + std::strerror(errno);
  const int closed = std::fclose(f_);
  f_ = nullptr;
  if (error_.empty() && closed != 0) error_ = tmp_ + ": close failed: " + std::strerror(errno);
  if (error_.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0)
    error_ = "cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno);
  if (!error_.empty()) {
    std::remove(tmp_.c_str());
    return false;
  }
  // Make the rename itself durable. The new file is complete either way, so a failure here
  // (e.g. a filesystem that cannot fsync directories) is not an error.
  syncParentDir(path_);
  return true;
}

void syncParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0                ? "/"
                                                      : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

bool checkOutputPath(const std::string& path, bool append, std::string* why) {
  auto fail = [&](const std::string& msg) {
    if (why) *why = msg;
    return false;
  };
  if (path.empty()) return fail("empty path");
  struct stat st;
  if (path.back() == '/' || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
    return fail(path + " is a directory; give a file name (e.g. " +
                (path.back() == '/' ? path : path + "/") + "ck.safetensors)");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0                ? "/"
                                                      : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0)
    return fail("the directory " + dir + " does not exist (" + std::strerror(errno) + ")");
  if (!S_ISDIR(st.st_mode)) return fail(dir + " is not a directory");
  std::string probe = dir + "/.tgrt-write-check-XXXXXX";
  const int fd = ::mkstemp(&probe[0]);
  if (fd < 0)
    return fail("cannot create a file in the directory " + dir + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  if (append && ::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0)
    return fail(path + " exists and is not writable: " + std::strerror(errno));
  return true;
}

} // namespace tgrt
