// FileUtil.h — small helpers shared by the driver's file formats: crash-safe atomic writes
// (temp file in the same directory, fsync, rename, fsync of the directory).
#ifndef TGRT_DRIVER_FILEUTIL_H
#define TGRT_DRIVER_FILEUTIL_H

#include <cstdio>
#include <string>

namespace tgrt {

/// An output file written to "<path>.tmp" (same directory, so the rename is atomic) and
/// renamed onto `path` by commit() after an fsync; the directory is fsynced after the rename.
/// At any moment (kill -9, power loss) `path` is either the previous complete file or the new
/// complete one. If the object is destroyed without a successful commit(), the temp file is
/// removed. Under `ulimit -f` the caller must ignore SIGXFSZ to see the EFBIG write error.
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
  /// Flushes, fsyncs, closes and renames the temp file onto the final path, then fsyncs the
  /// directory. Returns false (with error(), naming the temp file and strerror) on any
  /// failure, in which case the temp file is removed and `path` is untouched.
  bool commit();

private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  std::string error_;
};

/// fsyncs the directory holding `path` (".": no slash) so that a rename into it survives a
/// crash. Best effort: errors are ignored (some filesystems cannot fsync a directory).
void syncParentDir(const std::string& path);

/// Checks, before any work, that an output file can be written at `path`: it does not name a
/// directory (nor ends with '/'), its parent directory exists and is a directory, and a file
/// can be created in it (a temporary file is created there and removed at once). When
/// `append` is set (the file is opened in place rather than replaced by a rename) an existing
/// file must also be writable. Returns false with *why saying what is wrong, naming the path
/// or its directory.
bool checkOutputPath(const std::string& path, bool append, std::string* why);

} // namespace tgrt

#endif // TGRT_DRIVER_FILEUTIL_H
