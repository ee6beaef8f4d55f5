// FileUtil.h — small helpers shared by the driver's file formats: atomic writes (temp file +
// rename) and whole-file reads with error messages that name the file.
#ifndef TGRT_DRIVER_FILEUTIL_H
#define TGRT_DRIVER_FILEUTIL_H

#include <cstdio>
#include <string>

namespace tgrt {

/// An output file written to "<path>.tmp" and renamed onto `path` by commit(). If the object
/// is destroyed without a successful commit(), the temp file is removed.
class AtomicFile {
public:
  /// Opens "<path>.tmp" for writing (binary). ok() tells whether it worked; error() says why.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool ok() const { return f_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }
  /// Appends `bytes` bytes; records the first failure (see error()).
  void write(const void* data, size_t bytes);
  /// Flushes, closes and renames the temp file onto the final path. Returns false (with
  /// error()) on any failure, in which case the temp file is removed.
  bool commit();

private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  std::string error_;
};

} // namespace tgrt

#endif // TGRT_DRIVER_FILEUTIL_H
