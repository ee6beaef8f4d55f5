// Npy.h — reading and writing 1-D NumPy .npy arrays (format v1.0; v2.0 accepted on read).
//
// The training driver reads token arrays (train.npy, val.npy, test.npy) written by
// `tgc data prepare` or by NumPy (`np.save("train.npy", ids.astype(np.uint16))`). Only
// 1-D, little-endian, C-order arrays of uint16, uint32, int32 or float32 are supported; any
// other file is rejected with a message that names the file and the byte offset of the
// problem. Plain C++; never links MLIR.
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
/// id, its index and byte offset in the file.
bool readTokens(const std::string& path, int64_t vocab_size, std::vector<uint32_t>* tokens,
                std::string* err);

} // namespace tgrt

#endif // TGRT_DRIVER_NPY_H
