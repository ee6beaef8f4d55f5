// Safetensors.cpp — float32 safetensors reader/writer (see Safetensors.h).
#include "runtime/driver/Safetensors.h"

#include "runtime/driver/FileUtil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace tgrt {
namespace {

bool fail(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

std::string at(int64_t offset) { return " (at byte offset " + std::to_string(offset) + ")"; }

/// Slicing-by-8 tables of the reflected CRC-32 polynomial 0xEDB88320.
struct Crc32Tables {
  uint32_t t[8][256];
  Crc32Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

} // namespace

uint32_t crc32(const void* data, size_t bytes, uint32_t crc) {
  static const Crc32Tables tables;
  const auto& t = tables.t;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (; bytes >= 8; bytes -= 8, p += 8) {
    const uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; bytes > 0; --bytes, ++p) c = t[0][(c ^ *p) & 0xFF] ^ (c >> 8);
  return ~c;
}

std::string checksumKey(const std::string& name) { return "crc32." + name; }

std::string checksumText(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", (unsigned)crc);
  return buf;
}

int64_t firstNonFinite(const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return i;
  return -1;
}

std::string nonFiniteText(const std::string& name, const std::vector<int64_t>& shape,
                          const float* v, int64_t i) {
  std::string index;
  int64_t rest = i;
  for (size_t k = shape.size(); k-- > 0;) {
    const int64_t d = shape[k] > 0 ? shape[k] : 1;
    index = std::to_string(rest % d) + (index.empty() ? "" : ", ") + index;
    rest /= d;
  }
  std::string shape_text = "[";
  for (size_t k = 0; k < shape.size(); ++k)
    shape_text += (k ? ", " : "") + std::to_string(shape[k]);
  shape_text += "]";
  return "tensor '" + name + "' holds " + (std::isnan(v[i]) ? "NaN" : v[i] > 0 ? "+inf" : "-inf") +
         " at element " + std::to_string(i) + " (index [" + index + "] of shape " + shape_text +
         ")";
}

bool writeSafetensors(const std::string& path, const std::vector<StTensorView>& tensors,
                      const std::map<std::string, std::string>& metadata, std::string* err,
                      bool checksums) {
  // Keep the caller's order in the data section; the JSON object itself is key-sorted.
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty() || checksums) {
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& kv : metadata) meta[kv.first] = kv.second;
    if (checksums) {
      meta[kChecksumsKey] = kChecksumsValue;
      for (const StTensorView& t : tensors) {
        int64_t numel = 1;
        for (int64_t d : t.shape) numel *= d > 0 ? d : 0;
        meta[checksumKey(t.name)] = checksumText(crc32(t.data, (size_t)numel * 4));
      }
    }
    header["__metadata__"] = meta;
  }
  int64_t offset = 0;
  for (const StTensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      return fail(err, path + ": invalid tensor name '" + t.name + "'");
    if (header.contains(t.name)) return fail(err, path + ": duplicate tensor name " + t.name);
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) return fail(err, path + ": negative dimension in tensor " + t.name);
      numel *= d;
    }
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + numel * 4}}};
    offset += numel * 4;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = (uint8_t)(n >> (8 * i));
  AtomicFile f(path);
  f.write(len, 8);
  f.write(text.data(), text.size());
  for (const StTensorView& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    f.write(t.data, (size_t)numel * 4);
  }
  if (!f.commit()) return fail(err, f.error());
  return true;
}

SafetensorsReader::~SafetensorsReader() {
  if (f_) std::fclose(f_);
}

const StTensorInfo* SafetensorsReader::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

bool SafetensorsReader::open(const std::string& path, std::string* err) {
  path_ = path;
  if (f_) std::fclose(f_);
  metadata_.clear();
  tensors_.clear();
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) return fail(err, path + ": cannot open: " + std::strerror(errno));
  std::fseek(f_, 0, SEEK_END);
  const int64_t file_size = std::ftell(f_);
  std::rewind(f_);
  uint8_t len[8];
  if (file_size < 8 || std::fread(len, 1, 8, f_) != 8)
    return fail(err, path + ": not a safetensors file: shorter than the 8-byte header length" +
                         at(0));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= (uint64_t)len[i] << (8 * i);
  if (n > (uint64_t)(file_size - 8) || n > (100u << 20))
    return fail(err, path + ": header length " + std::to_string(n) +
                         " bytes is larger than the file (" + std::to_string(file_size) +
                         " bytes) or than 100 MiB: not a safetensors file or truncated" + at(0));
  std::string text((size_t)n, '\0');
  if (n > 0 && std::fread(&text[0], 1, (size_t)n, f_) != n)
    return fail(err, path + ": cannot read the header" + at(8));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return fail(err, path + ": malformed JSON header at byte offset " +
                         std::to_string(8 + (int64_t)e.byte - 1) + ": " + e.what());
  } catch (const nlohmann::json::exception& e) { // e.g. a number too large for a double
    return fail(err, path + ": malformed JSON header: " + e.what() + at(8));
  }
  if (!header.is_object()) return fail(err, path + ": the JSON header is not an object" + at(8));
  data_start_ = 8 + (int64_t)n;
  const int64_t data_size = file_size - data_start_;
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> ranges; // ((begin, end), name)
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    if (key == "__metadata__") {
      if (!it->is_object()) return fail(err, path + ": __metadata__ is not an object" + at(8));
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return fail(err, path + ": __metadata__." + m.key() + " is not a string" + at(8));
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json& e = *it;
    StTensorInfo info;
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() ||
        !e.contains("shape") || !e["shape"].is_array() || !e.contains("data_offsets") ||
        !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      return fail(err, path + ": tensor '" + key +
                           "' needs dtype (string), shape (array) and data_offsets [begin, end]" +
                           at(8));
    info.dtype = e["dtype"].get<std::string>();
    int64_t numel = 1;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return fail(err, path + ": tensor '" + key + "' has an invalid shape" + at(8));
      info.shape.push_back(d.get<int64_t>());
      if (info.shape.back() > 0 && numel > (INT64_MAX / 8) / info.shape.back())
        return fail(err, path + ": tensor '" + key + "' has a shape of more than 2^60 elements" +
                             at(8));
      numel *= info.shape.back();
    }
    const auto& off = e["data_offsets"];
    if (!off[0].is_number_integer() || !off[1].is_number_integer())
      return fail(err, path + ": tensor '" + key + "' has non-integer data_offsets" + at(8));
    info.begin = off[0].get<int64_t>();
    info.end = off[1].get<int64_t>();
    if (info.begin < 0 || info.end < info.begin || info.end > data_size)
      return fail(err, path + ": tensor '" + key + "' data_offsets [" +
                           std::to_string(info.begin) + ", " + std::to_string(info.end) +
                           "] lie outside the data section of " + std::to_string(data_size) +
                           " bytes (file truncated?)" + at(data_start_ + info.begin));
    const int64_t item = info.dtype == "F32" || info.dtype == "I32" ? 4
                         : info.dtype == "F16" || info.dtype == "BF16" ? 2
                         : info.dtype == "F64" || info.dtype == "I64" ? 8
                                                                       : 0;
    if (item != 0 && info.end - info.begin != numel * item)
      return fail(err, path + ": tensor '" + key + "' has " +
                           std::to_string(info.end - info.begin) + " bytes but its shape needs " +
                           std::to_string(numel * item) + at(data_start_ + info.begin));
    ranges.push_back({{info.begin, info.end}, key});
    tensors_[key] = std::move(info);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    const StTensorInfo& prev = tensors_[ranges[i - 1].second];
    if (ranges[i].first.first < prev.end)
      return fail(err, path + ": tensors '" + ranges[i - 1].second + "' and '" +
                           ranges[i].second + "' overlap" + at(data_start_ + ranges[i].first.first));
  }
  return true;
}

bool SafetensorsReader::hasChecksums() const {
  auto it = metadata_.find(kChecksumsKey);
  return it != metadata_.end() && it->second == kChecksumsValue;
}

bool SafetensorsReader::verify(const std::string& name, const void* data, int64_t bytes,
                               std::string* err) const {
  if (!hasChecksums()) return true;
  auto it = metadata_.find(checksumKey(name));
  if (it == metadata_.end())
    return fail(err, path_ + ": tensor '" + name + "' has no checksum (__metadata__ has no '" +
                         checksumKey(name) + "', although the file records checksums): the "
                         "file was altered");
  const std::string got = checksumText(crc32(data, (size_t)bytes));
  if (it->second != got)
    return fail(err, path_ + ": tensor '" + name + "' fails its checksum (crc32 " + got +
                         " of its bytes, " + it->second + " recorded when it was saved): the "
                         "file is corrupt (flipped or overwritten bytes); use an earlier "
                         "checkpoint");
  return true;
}

bool SafetensorsReader::readF32(const std::string& name, float* dst, int64_t numel,
                                std::string* err) {
  const StTensorInfo* t = find(name);
  if (!t) return fail(err, path_ + ": no tensor named '" + name + "'");
  if (t->dtype != "F32")
    return fail(err, path_ + ": tensor '" + name + "' has dtype " + t->dtype + ", expected F32");
  if (t->end - t->begin != numel * 4)
    return fail(err, path_ + ": tensor '" + name + "' has " +
                         std::to_string((t->end - t->begin) / 4) + " elements, expected " +
                         std::to_string(numel));
  if (std::fseek(f_, (long)(data_start_ + t->begin), SEEK_SET) != 0 ||
      (numel > 0 && std::fread(dst, 4, (size_t)numel, f_) != (size_t)numel))
    return fail(err, path_ + ": cannot read tensor '" + name + "'" + at(data_start_ + t->begin));
  return verify(name, dst, numel * 4, err);
}

bool SafetensorsReader::readBytes(const std::string& name, void* dst, int64_t bytes,
                                  std::string* err) {
  const StTensorInfo* t = find(name);
  if (!t) return fail(err, path_ + ": no tensor named '" + name + "'");
  if (t->end - t->begin != bytes)
    return fail(err, path_ + ": tensor '" + name + "' has " + std::to_string(t->end - t->begin) +
                         " bytes, expected " + std::to_string(bytes));
  if (std::fseek(f_, (long)(data_start_ + t->begin), SEEK_SET) != 0 ||
      (bytes > 0 && std::fread(dst, 1, (size_t)bytes, f_) != (size_t)bytes))
    return fail(err, path_ + ": cannot read tensor '" + name + "'" + at(data_start_ + t->begin));
  return verify(name, dst, bytes, err);
}

} // namespace tgrt
