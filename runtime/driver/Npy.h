// Npy.h — reading and writing 1-D NumPy .npy arrays (format v1.0; v2.0 accepted on read).
//
// The training driver reads token arrays (train.npy, val.npy, test.npy) written by
// `tgc data prepare` or by NumPy (`np.save("train.npy", ids.astype(np.uint16))`) through
// TokenFile, a read-only memory map (docs/data.md). Only 1-D, little-endian, C-order arrays
// of uint16, uint32, int32 or float32 are supported; any other file is rejected with a
// message that names the file and the byte offset of the problem. Plain C++ (POSIX mmap);
// never links MLIR.
#ifndef TGRT_DRIVER_NPY_H
#define TGRT_DRIVER_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgrt {

/// Element types supported in .npy files (all little-endian).
enum class NpyDtype { U16, U32, I32, F32 };

/// The NumPy descr string of a dtype ("<u2", "<u4", "<i4", "<f4").
const char* npyDescr(NpyDtype dtype);
/// Size of one element in bytes (2 or 4).
int64_t npyItemSize(NpyDtype dtype);

/// A 1-D array read from an .npy file: raw little-endian element bytes.
struct NpyArray {
  NpyDtype dtype = NpyDtype::U16;
  int64_t count = 0;          ///< number of elements
  int64_t data_offset = 0;    ///< bytes from the start of the file to element 0
  std::vector<uint8_t> bytes; ///< count * npyItemSize(dtype) bytes
};

/// Reads a 1-D .npy file. On failure returns false and sets *err to
/// "<path>: <what> (at byte offset N)". Rejects fortran_order=True, rank != 1, big-endian or
/// unsupported dtypes, truncated data and trailing garbage.
bool readNpy(const std::string& path, NpyArray* out, std::string* err);

/// Writes `count` elements at `data` (host memory, little-endian, npyItemSize(dtype) bytes
/// each) as a 1-D .npy v1.0 file. Writes "<path>.tmp" and renames it onto `path`, so a failure
/// never leaves a half-written file. Returns false and sets *err on I/O failure.
bool writeNpy(const std::string& path, NpyDtype dtype, const void* data, int64_t count,
              std::string* err);

/// Reads a token array (uint16, uint32 or non-negative int32) into `tokens` and checks that
/// every id is < vocab_size (skipped when vocab_size <= 0). Errors name the file and, for a bad
/// id, its index and byte offset in the file. Reads the whole file into host memory (4 bytes a
/// token) and scans every id: for small files and tools; the driver uses TokenFile.
bool readTokens(const std::string& path, int64_t vocab_size, std::vector<uint32_t>* tokens,
                std::string* err);

/// A token array (a 1-D .npy file of uint16, uint32 or int32 ids) memory-mapped read-only:
/// opening costs a header parse and an mmap whatever the file's size (a 10 B-token uint16
/// file, 20 GB, takes no host memory until read); the pages a read touches come from the
/// kernel's page cache, which every mapping of the file shares (the driver's data-parallel
/// ranks each open their own TokenFile of a split and share those pages).
///
/// Units: indices, sizes and counts are in tokens (elements); byte offsets are from the
/// start of the file.
///
/// Validation: open() checks everything but the ids — the header as readNpy does (the same
/// messages; a float32 or other dtype is refused as readTokens refuses it), and that the
/// file size is exactly data_offset + size() * itemsize (a truncated file or trailing bytes
/// are refused, naming the file and the byte offset). The ids are checked when read: read()
/// checks every id it copies against [0, vocab_size), so a bad id is reported by the first
/// read that covers it (in the driver: the first training batch or evaluation that touches
/// it) and never if no read does. Scanning a 10 B-token file at open would read all 20 GB
/// before the first step.
///
/// Move-only; the destructor unmaps the file. The file must not be truncated while mapped
/// (reading a page past the new end raises SIGBUS, as for any mapped file).
class TokenFile {
public:
  /// How the pages will be read (madvise): Random for sampled windows (no read-ahead
  /// beyond the window), Sequential for a scan, Normal for the kernel's default.
  enum class Access { Normal, Random, Sequential };

  TokenFile() = default;
  ~TokenFile();
  TokenFile(TokenFile&& o) noexcept;
  TokenFile& operator=(TokenFile&& o) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  /// Opens and maps `path`; `vocab_size`: the bound read() checks ids against (<= 0: only
  /// that each id fits a non-negative int32). Any previously open file is closed first. On
  /// failure returns false, sets *err to "<path>: <what> (at byte offset N)" (or the
  /// open/mmap error) and leaves this TokenFile closed.
  bool open(const std::string& path, int64_t vocab_size, std::string* err);
  /// Unmaps the file (size() becomes 0). Called by the destructor.
  void close();
  /// Advises the kernel how the pages will be read (a hint; never fails visibly).
  void advise(Access access) const;

  bool isOpen() const { return base_ != nullptr; }
  const std::string& path() const { return path_; }
  NpyDtype dtype() const { return dtype_; }
  /// Number of tokens.
  int64_t size() const { return count_; }
  /// Bytes from the start of the file to token 0.
  int64_t dataOffset() const { return data_offset_; }
  /// Bytes from the start of the file to the header's 'descr' value (the dtype), for
  /// messages that locate a dtype the caller does not accept.
  int64_t descrOffset() const { return descr_offset_; }
  int64_t vocabSize() const { return vocab_size_; }

  /// Copies tokens [start, start + n) into out[0, n) as int32, checking each id. Returns
  /// false and sets *err (out[] partly written) when an id is outside [0, vocab_size):
  /// "<path>: token id X at index I is outside [0, vocab_size=V) (at byte offset O)" — the
  /// message readTokens gives — or, with no vocab_size, when it does not fit a non-negative
  /// int32; or when the range is not inside [0, size()) (a caller's bug, named as such).
  bool read(int64_t start, int64_t n, int32_t* out, std::string* err) const;

private:
  std::string path_;
  NpyDtype dtype_ = NpyDtype::U16;
  int64_t count_ = 0, data_offset_ = 0, descr_offset_ = 0, vocab_size_ = 0;
  void* base_ = nullptr; ///< the mapping of the whole file (NULL: closed)
  size_t map_bytes_ = 0; ///< its length: the file size
};

} // namespace tgrt

#endif // TGRT_DRIVER_NPY_H
