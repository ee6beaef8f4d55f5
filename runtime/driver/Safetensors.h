// Safetensors.h — float32 safetensors files for checkpoints (loadable by PyTorch's
// `safetensors.torch.load_file`).
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"key": "string", ...},
//    "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8, then the data section; offsets are bytes relative to
// the start of the data section. Tensors are stored in the order given, contiguously.
#ifndef TGRT_DRIVER_SAFETENSORS_H
#define TGRT_DRIVER_SAFETENSORS_H

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tgrt {

/// A tensor to write: `numel` float32 values at `data` (host memory), product(shape) == numel.
struct StTensorView {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;
};

/// Writes `tensors` and string `metadata` to "<path>.tmp", then renames it onto `path`.
/// Returns false and sets *err (naming the file) on failure; no partial file remains.
/// With `checksums`, the metadata also gets kChecksumsKey = "crc32" and, per tensor,
/// "crc32.<name>" = the CRC-32 of its data bytes (tensorChecksum), which readF32 / readBytes
/// verify.
bool writeSafetensors(const std::string& path, const std::vector<StTensorView>& tensors,
                      const std::map<std::string, std::string>& metadata, std::string* err,
                      bool checksums = false);

/// CRC-32 (zlib's / IEEE 802.3: Python's zlib.crc32) of `bytes` bytes, continuing from `crc`.
uint32_t crc32(const void* data, size_t bytes, uint32_t crc = 0);
/// The metadata key that says a file carries per-tensor checksums, and its value.
constexpr const char* kChecksumsKey = "checksums";
constexpr const char* kChecksumsValue = "crc32";
/// The metadata key of tensor `name`'s checksum ("crc32.<name>").
std::string checksumKey(const std::string& name);
/// A checksum as its metadata value: 8 lowercase hex digits.
std::string checksumText(uint32_t crc);
/// Index of the first NaN or infinite value of v[0, n), or -1 when all are finite.
int64_t firstNonFinite(const float* v, int64_t n);
/// "tensor 'NAME' holds NaN at element I (index [a, b]) of SHAPE": for refusals.
std::string nonFiniteText(const std::string& name, const std::vector<int64_t>& shape,
                          const float* v, int64_t i);

/// One tensor entry of a safetensors header.
struct StTensorInfo {
  std::string dtype;          ///< "F32", "BF16", ...
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0; ///< bytes, relative to the data section
};

/// Reads a safetensors file: open() parses and validates the header (JSON, dtypes, offsets in
/// range and non-overlapping); readF32() reads one float32 tensor.
class SafetensorsReader {
public:
  SafetensorsReader() = default;
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  /// Opens and validates `path`. Errors name the file and the byte offset of the problem.
  bool open(const std::string& path, std::string* err);
  /// The path given to open().
  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, StTensorInfo>& tensors() const { return tensors_; }
  /// The entry for `name`, or nullptr.
  const StTensorInfo* find(const std::string& name) const;
  /// Whether the file records per-tensor checksums (metadata checksums = crc32; files
  /// written before they existed have none and are read unverified).
  bool hasChecksums() const;
  /// Reads tensor `name` into dst (numel floats). Fails unless the tensor exists, is F32 and
  /// has exactly `numel` elements, and (hasChecksums()) its bytes match its checksum.
  bool readF32(const std::string& name, float* dst, int64_t numel, std::string* err);
  /// Reads the `bytes` bytes of tensor `name` (any dtype) into dst. Fails unless the tensor
  /// exists and holds exactly `bytes` bytes, and (hasChecksums()) they match its checksum.
  bool readBytes(const std::string& name, void* dst, int64_t bytes, std::string* err);

private:
  /// With hasChecksums(): compares the CRC-32 of the `bytes` bytes read for `name` with its
  /// metadata entry; a missing or different one fails naming the tensor.
  bool verify(const std::string& name, const void* data, int64_t bytes, std::string* err) const;
  std::string path_;
  std::FILE* f_ = nullptr;
  int64_t data_start_ = 0; ///< bytes from the start of the file to the data section
  std::map<std::string, std::string> metadata_;
  std::map<std::string, StTensorInfo> tensors_;
};

} // namespace tgrt

#endif // TGRT_DRIVER_SAFETENSORS_H
