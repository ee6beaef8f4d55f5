// Npy.cpp — 1-D .npy reader/writer (see Npy.h). Format reference: the NumPy NEP 1 ".npy"
// description: magic "\x93NUMPY", major, minor, little-endian header length (uint16 in v1,
// uint32 in v2/v3), an ASCII Python dict literal padded with spaces and ended by '\n' so that
// the data starts at a multiple of 64 bytes, then the raw elements.
#include "runtime/driver/Npy.h"

#include "runtime/driver/FileUtil.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

namespace tgrt {
namespace {

std::string at(int64_t offset) { return " (at byte offset " + std::to_string(offset) + ")"; }

bool fail(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

/// Finds the value text after 'key': in a header dict; npos if absent.
size_t findKey(const std::string& h, const char* key) {
  const std::string k1 = std::string("'") + key + "'";
  size_t p = h.find(k1);
  if (p == std::string::npos) return p;
  p = h.find(':', p + k1.size());
  if (p == std::string::npos) return p;
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  return p;
}

} // namespace

const char* npyDescr(NpyDtype dtype) {
  switch (dtype) {
  case NpyDtype::U16: return "<u2";
  case NpyDtype::U32: return "<u4";
  case NpyDtype::I32: return "<i4";
  case NpyDtype::F32: return "<f4";
  }
  return "?";
}

int64_t npyItemSize(NpyDtype dtype) { return dtype == NpyDtype::U16 ? 2 : 4; }

namespace {

/// What a parsed header says about the data.
struct NpyHeader {
  NpyDtype dtype = NpyDtype::U16;
  int64_t count = 0;       ///< elements
  int64_t data_offset = 0; ///< bytes from the start of the file to element 0
  int64_t descr_offset = 0; ///< bytes from the start of the file to the 'descr' value
};

/// Opens `path` for reading and sets *file_size (bytes). Errors name the file.
bool openNpy(const std::string& path, FilePtr* f, int64_t* file_size, std::string* err) {
  f->reset(std::fopen(path.c_str(), "rb"));
  if (!*f) return fail(err, path + ": cannot open: " + std::strerror(errno));
  if (std::fseek(f->get(), 0, SEEK_END) != 0) return fail(err, path + ": cannot seek");
  const long file_size_l = std::ftell(f->get());
  if (file_size_l < 0) return fail(err, path + ": cannot determine the file size");
  *file_size = file_size_l;
  std::rewind(f->get());
  return true;
}

/// Parses the header of the .npy file `f` (open at its start; `file_size` bytes) and checks
/// that the file holds exactly the elements the header promises: nothing missing, nothing
/// after them. Leaves `f` at the first element. `tokens`: the file must hold token ids, so
/// float32 is refused with the dtype message and that message lists only the integer dtypes.
/// The one header parser of readNpy, readTokens and TokenFile::open.
bool parseNpyHeader(std::FILE* f, const std::string& path, int64_t file_size, bool tokens,
                    NpyHeader* out, std::string* err) {
  unsigned char pre[12];
  const size_t got = std::fread(pre, 1, 10, f);
  if (got < 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0)
    return fail(err, path + ": not a .npy file (missing the \\x93NUMPY magic)" + at(0));
  const int major = pre[6];
  int64_t header_len = 0, header_start = 10;
  if (major == 1) {
    header_len = pre[8] | (pre[9] << 8);
  } else if (major == 2 || major == 3) {
    if (std::fread(pre + 10, 1, 2, f) != 2)
      return fail(err, path + ": truncated header length" + at(8));
    header_len = (int64_t)pre[8] | ((int64_t)pre[9] << 8) | ((int64_t)pre[10] << 16) |
                 ((int64_t)pre[11] << 24);
    header_start = 12;
  } else {
    return fail(err, path + ": unsupported .npy format version " + std::to_string(major) +
                         at(6));
  }
  if (header_start + header_len > file_size)
    return fail(err, path + ": header of " + std::to_string(header_len) +
                         " bytes runs past the end of the file (" + std::to_string(file_size) +
                         " bytes)" + at(header_start));
  std::string h((size_t)header_len, '\0');
  if (header_len > 0 && std::fread(&h[0], 1, (size_t)header_len, f) != (size_t)header_len)
    return fail(err, path + ": cannot read the header" + at(header_start));

  // descr
  size_t p = findKey(h, "descr");
  if (p == std::string::npos || p >= h.size() || (h[p] != '\'' && h[p] != '"'))
    return fail(err, path + ": header has no 'descr' string" + at(header_start));
  const size_t q = h.find(h[p], p + 1);
  if (q == std::string::npos)
    return fail(err, path + ": unterminated 'descr' string" + at(header_start + (int64_t)p));
  const std::string descr = h.substr(p + 1, q - p - 1);
  const size_t descr_at = p;
  NpyDtype dtype;
  if (descr == "<u2") dtype = NpyDtype::U16;
  else if (descr == "<u4") dtype = NpyDtype::U32;
  else if (descr == "<i4") dtype = NpyDtype::I32;
  else if (descr == "<f4" && !tokens) dtype = NpyDtype::F32;
  else if (tokens)
    return fail(err, path + ": unsupported dtype '" + descr +
                         "' for token ids (expected little-endian uint16 '<u2', uint32 '<u4' or "
                         "int32 '<i4')" + at(header_start + (int64_t)p));
  else
    return fail(err, path + ": unsupported dtype '" + descr +
                         "' (expected little-endian uint16 '<u2', uint32 '<u4', int32 '<i4' or "
                         "float32 '<f4')" + at(header_start + (int64_t)p));

  // fortran_order
  p = findKey(h, "fortran_order");
  if (p == std::string::npos)
    return fail(err, path + ": header has no 'fortran_order'" + at(header_start));
  if (h.compare(p, 4, "True") == 0)
    return fail(err, path + ": fortran_order=True is not supported" + at(header_start + (int64_t)p));

  // shape: must be (N,)
  p = findKey(h, "shape");
  if (p == std::string::npos || p >= h.size() || h[p] != '(')
    return fail(err, path + ": header has no 'shape' tuple" + at(header_start));
  const size_t close = h.find(')', p);
  if (close == std::string::npos)
    return fail(err, path + ": unterminated 'shape' tuple" + at(header_start + (int64_t)p));
  std::string shape = h.substr(p + 1, close - p - 1);
  std::vector<int64_t> dims;
  {
    size_t i = 0;
    while (i < shape.size()) {
      while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
      if (i >= shape.size()) break;
      if (shape[i] < '0' || shape[i] > '9')
        return fail(err, path + ": malformed 'shape' (" + shape + ")" +
                             at(header_start + (int64_t)p));
      int64_t v = 0;
      while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
        if (v > (INT64_MAX - 9) / 10)
          return fail(err, path + ": 'shape' dimension too large" + at(header_start + (int64_t)p));
        v = v * 10 + (shape[i++] - '0');
      }
      dims.push_back(v);
    }
  }
  if (dims.size() != 1)
    return fail(err, path + ": expected a 1-D array, found shape (" + shape + ")" +
                         at(header_start + (int64_t)p));

  const int64_t item = npyItemSize(dtype);
  const int64_t data_offset = header_start + header_len;
  const int64_t count = dims[0];
  const int64_t avail = file_size - data_offset; // >= 0: the header fits in the file
  if (count > avail / item) // (count * item could overflow: never computed unchecked)
    return fail(err, path + ": truncated: the header promises " + std::to_string(count) +
                         " elements of " + std::to_string(item) + " bytes but only " +
                         std::to_string(avail) + " bytes follow" + at(data_offset));
  if (count * item != avail)
    return fail(err, path + ": " + std::to_string(avail - count * item) +
                         " unexpected bytes after the data" + at(data_offset + count * item));
  out->dtype = dtype;
  out->count = count;
  out->data_offset = data_offset;
  out->descr_offset = header_start + (int64_t)descr_at;
  return true;
}

/// readNpy; `tokens`: see parseNpyHeader.
bool readNpyImpl(const std::string& path, NpyArray* out, std::string* err, bool tokens) {
  FilePtr f;
  int64_t file_size = 0;
  NpyHeader hd;
  if (!openNpy(path, &f, &file_size, err) ||
      !parseNpyHeader(f.get(), path, file_size, tokens, &hd, err))
    return false;
  out->dtype = hd.dtype;
  out->count = hd.count;
  out->data_offset = hd.data_offset;
  out->bytes.resize((size_t)(hd.count * npyItemSize(hd.dtype)));
  if (hd.count > 0 &&
      std::fread(out->bytes.data(), 1, out->bytes.size(), f.get()) != out->bytes.size())
    return fail(err, path + ": read error in the data" + at(hd.data_offset));
  return true;
}

/// The token id at `b` (one element of `dtype`, little-endian), sign-extended for int32.
inline int64_t decodeId(NpyDtype dtype, const uint8_t* b) {
  if (dtype == NpyDtype::U16) return (int64_t)(b[0] | (b[1] << 8));
  const uint32_t u = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
                     ((uint32_t)b[3] << 24);
  return dtype == NpyDtype::I32 ? (int64_t)(int32_t)u : (int64_t)u;
}

/// "<path>: token id X at index I is outside [0, vocab_size=V) (at byte offset O)".
std::string badIdMessage(const std::string& path, int64_t id, int64_t index,
                         int64_t vocab_size, int64_t data_offset, int64_t item) {
  return path + ": token id " + std::to_string(id) + " at index " + std::to_string(index) +
         " is outside [0, vocab_size=" + std::to_string(vocab_size) + ")" +
         at(data_offset + index * item);
}

} // namespace

bool readNpy(const std::string& path, NpyArray* out, std::string* err) {
  return readNpyImpl(path, out, err, /*tokens=*/false);
}

bool writeNpy(const std::string& path, NpyDtype dtype, const void* data, int64_t count,
              std::string* err) {
  if (count < 0) return fail(err, path + ": negative element count");
  std::string dict = std::string("{'descr': '") + npyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(count) + ",), }";
  // Pad with spaces so that 10 + len(header) is a multiple of 64, ending with '\n'.
  size_t total = 10 + dict.size() + 1;
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  if (dict.size() > 65535) return fail(err, path + ": header too long for .npy v1.0");
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  pre[8] = (unsigned char)(dict.size() & 0xff);
  pre[9] = (unsigned char)(dict.size() >> 8);
  AtomicFile f(path);
  f.write(pre, sizeof pre);
  f.write(dict.data(), dict.size());
  f.write(data, (size_t)(count * npyItemSize(dtype)));
  if (!f.commit()) return fail(err, f.error());
  return true;
}

bool readTokens(const std::string& path, int64_t vocab_size, std::vector<uint32_t>* tokens,
                std::string* err) {
  NpyArray a;
  if (!readNpyImpl(path, &a, err, /*tokens=*/true)) return false;
  tokens->resize((size_t)a.count);
  const int64_t item = npyItemSize(a.dtype);
  for (int64_t i = 0; i < a.count; ++i) {
    const int64_t id = decodeId(a.dtype, a.bytes.data() + i * item);
    if (id < 0 || (vocab_size > 0 && id >= vocab_size))
      return fail(err, badIdMessage(path, id, i, vocab_size, a.data_offset, item));
    (*tokens)[(size_t)i] = (uint32_t)id;
  }
  return true;
}

// ------------------------------------------------------------------------ TokenFile --

TokenFile::~TokenFile() { close(); }

TokenFile::TokenFile(TokenFile&& o) noexcept { *this = std::move(o); }

TokenFile& TokenFile::operator=(TokenFile&& o) noexcept {
  if (this == &o) return *this;
  close();
  path_ = std::move(o.path_);
  dtype_ = o.dtype_;
  count_ = o.count_;
  data_offset_ = o.data_offset_;
  descr_offset_ = o.descr_offset_;
  vocab_size_ = o.vocab_size_;
  base_ = o.base_;
  map_bytes_ = o.map_bytes_;
  o.base_ = nullptr;
  o.map_bytes_ = 0;
  o.count_ = o.data_offset_ = o.descr_offset_ = 0;
  return *this;
}

void TokenFile::close() {
  if (base_) munmap(base_, map_bytes_);
  base_ = nullptr;
  map_bytes_ = 0;
  count_ = data_offset_ = descr_offset_ = 0;
}

bool TokenFile::open(const std::string& path, int64_t vocab_size, std::string* err) {
  close();
  FilePtr f;
  int64_t file_size = 0;
  NpyHeader hd;
  if (!openNpy(path, &f, &file_size, err) ||
      !parseNpyHeader(f.get(), path, file_size, /*tokens=*/true, &hd, err))
    return false;
  // The whole file (header included: data_offset need not be page-aligned); file_size > 0
  // (the header is in it). PROT_READ + MAP_SHARED: the page cache's pages, no private copy.
  void* p = mmap(nullptr, (size_t)file_size, PROT_READ, MAP_SHARED, fileno(f.get()), 0);
  if (p == MAP_FAILED)
    return fail(err, path + ": cannot memory-map " + std::to_string(file_size) + " bytes: " +
                         std::strerror(errno));
  path_ = path;
  dtype_ = hd.dtype;
  count_ = hd.count;
  data_offset_ = hd.data_offset;
  descr_offset_ = hd.descr_offset;
  vocab_size_ = vocab_size;
  base_ = p;
  map_bytes_ = (size_t)file_size;
  return true; // the mapping outlives the descriptor fclose closes
}

void TokenFile::advise(Access access) const {
  if (!base_) return;
  const int advice = access == Access::Random       ? MADV_RANDOM
                     : access == Access::Sequential ? MADV_SEQUENTIAL
                                                    : MADV_NORMAL;
  (void)madvise(base_, map_bytes_, advice);
}

bool TokenFile::read(int64_t start, int64_t n, int32_t* out, std::string* err) const {
  if (start < 0 || n < 0 || start > count_ || n > count_ - start)
    return fail(err, path_ + ": internal error: tokens [" + std::to_string(start) + ", " +
                         std::to_string(start) + " + " + std::to_string(n) +
                         ") read from a file of " + std::to_string(count_) + " tokens");
  const int64_t item = npyItemSize(dtype_);
  // No vocab_size: ids must still be valid int32 model inputs.
  const int64_t bound = vocab_size_ > 0 ? vocab_size_ : (int64_t)INT32_MAX + 1;
  const uint8_t* b = static_cast<const uint8_t*>(base_) + data_offset_ + start * item;
  for (int64_t i = 0; i < n; ++i, b += item) {
    const int64_t id = decodeId(dtype_, b);
    if (id < 0 || id >= bound) {
      if (vocab_size_ > 0)
        return fail(err, badIdMessage(path_, id, start + i, vocab_size_, data_offset_, item));
      return fail(err, path_ + ": token id " + std::to_string(id) + " at index " +
                           std::to_string(start + i) + " is outside [0, 2^31) (not an int32 id)" +
                           at(data_offset_ + (start + i) * item));
    }
    out[i] = (int32_t)id;
  }
  return true;
}

} // namespace tgrt
