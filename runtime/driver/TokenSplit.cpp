// TokenSplit.cpp — see TokenSplit.h; the index format is described in docs/data.md.
#include "runtime/driver/TokenSplit.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace tgrt {
namespace {

using json = nlohmann::json;

bool fail(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

/// A JSON value for messages: short values as they are, long ones cut.
std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

/// Whether v is an integer in [0, INT64_MAX].
bool isCount(const json& v) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= (uint64_t)INT64_MAX;
  return v.get<int64_t>() >= 0;
}

} // namespace

bool parseDataIndex(const std::string& meta_path, const std::string& text, DataIndex* out,
                    std::string* err) {
  *out = DataIndex();
  auto bad = [&](const std::string& where, const std::string& what) {
    return fail(err, meta_path + ": " + where + ": " + what);
  };
  json meta;
  try {
    meta = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail(err, meta_path + ": malformed JSON at byte offset " +
                         std::to_string(e.byte > 0 ? e.byte - 1 : 0) +
                         ": expected one JSON object (" + e.what() + ")");
  } catch (const json::exception& e) {
    return fail(err, meta_path + ": malformed JSON: expected one JSON object (" + e.what() + ")");
  }
  if (!meta.is_object())
    return bad("(root)", "expected a JSON object, found " + std::string(meta.type_name()));
  const auto splits = meta.find("splits");
  if (splits == meta.end()) return true; // the single-file layout
  out->sharded = true;

  if (const auto f = meta.find("format"); f != meta.end() && *f != json("tgc-tokens"))
    return bad("format", "expected \"tgc-tokens\", found " + shown(*f));
  if (const auto v = meta.find("format_version"); v != meta.end()) {
    if (!v->is_number_integer())
      return bad("format_version", "expected an integer, found " + shown(*v));
    if (!isCount(*v) || v->get<int64_t>() > 2)
      return bad("format_version", shown(*v) + " is not a version this driver reads (1 or 2)");
  }
  const auto dt = meta.find("dtype");
  if (dt == meta.end())
    return bad("dtype", "missing (a sharded index must give its shards' element type, "
                        "\"uint16\" or \"uint32\")");
  if (*dt == json("uint16")) out->dtype = NpyDtype::U16;
  else if (*dt == json("uint32")) out->dtype = NpyDtype::U32;
  else return bad("dtype", "expected \"uint16\" or \"uint32\", found " + shown(*dt));

  if (!splits->is_object())
    return bad("splits", "expected an object, found " + std::string(splits->type_name()));
  for (const char* required : {"train", "val"})
    if (!splits->contains(required))
      return bad(std::string("splits.") + required,
                 "missing (the driver needs the train and val splits)");
  for (const auto& [name, sp] : splits->items()) {
    const std::string at = "splits." + name;
    if (!sp.is_object())
      return bad(at, "expected an object, found " + std::string(sp.type_name()));
    SplitIndex si;
    const auto tok = sp.find("tokens");
    if (tok == sp.end()) return bad(at + ".tokens", "missing");
    if (!isCount(*tok))
      return bad(at + ".tokens", "expected a non-negative integer, found " + shown(*tok));
    si.tokens = tok->get<int64_t>();
    const auto shards = sp.find("shards");
    if (shards == sp.end()) return bad(at + ".shards", "missing");
    if (!shards->is_array())
      return bad(at + ".shards", "expected an array, found " + std::string(shards->type_name()));
    int64_t sum = 0;
    for (size_t i = 0; i < shards->size(); ++i) {
      const json& sh = (*shards)[i];
      const std::string sat = at + ".shards[" + std::to_string(i) + "]";
      if (!sh.is_object())
        return bad(sat, "expected an object, found " + std::string(sh.type_name()));
      SplitIndex::Shard s;
      const auto file = sh.find("file");
      if (file == sh.end()) return bad(sat + ".file", "missing");
      if (!file->is_string()) return bad(sat + ".file", "expected a string, found " + shown(*file));
      s.file = file->get<std::string>();
      if (s.file.empty() || s.file[0] == '/')
        return bad(sat + ".file", "expected a path relative to the data directory, found " +
                                      shown(*file));
      const auto n = sh.find("tokens");
      if (n == sh.end()) return bad(sat + ".tokens", "missing");
      if (!isCount(*n))
        return bad(sat + ".tokens", "expected a non-negative integer, found " + shown(*n));
      s.tokens = n->get<int64_t>();
      if (s.tokens > INT64_MAX - sum) return bad(sat + ".tokens", "the sum overflows");
      sum += s.tokens;
      si.shards.push_back(std::move(s));
    }
    if (sum != si.tokens)
      return bad(at + ".tokens", std::to_string(si.tokens) + ", but its shards hold " +
                                     std::to_string(sum) + " tokens (the sum of " + at +
                                     ".shards[*].tokens)");
    out->splits[name] = std::move(si);
  }
  return true;
}

// ------------------------------------------------------------------------ TokenSplit --

bool TokenSplit::openFile(const std::string& path, int64_t vocab_size, std::string* err) {
  close();
  TokenFile f;
  if (!f.open(path, vocab_size, err)) return false;
  starts_ = {0, f.size()};
  files_.push_back(std::move(f));
  describe_ = path;
  return true;
}

bool TokenSplit::openShards(const std::string& dir, const std::string& meta_path,
                            const std::string& name, const SplitIndex& index, NpyDtype dtype,
                            int64_t vocab_size, std::string* err) {
  close();
  std::vector<TokenFile> files;
  std::vector<int64_t> starts{0};
  files.reserve(index.shards.size());
  for (size_t i = 0; i < index.shards.size(); ++i) {
    const SplitIndex::Shard& sh = index.shards[i];
    const std::string entry = "splits." + name + ".shards[" + std::to_string(i) + "]";
    const std::string path = dir + "/" + sh.file;
    TokenFile f;
    std::string why;
    if (!f.open(path, vocab_size, &why))
      return fail(err, why + " (listed in " + meta_path + " as " + entry + ".file)");
    if (f.dtype() != dtype)
      return fail(err, path + ": dtype '" + npyDescr(f.dtype()) + "' in the file, '" +
                           (dtype == NpyDtype::U16 ? "uint16" : "uint32") + "' ('" +
                           npyDescr(dtype) + "') in " + meta_path + " (dtype) (at byte offset " +
                           std::to_string(f.descrOffset()) + ")");
    if (f.size() != sh.tokens)
      return fail(err, path + ": " + std::to_string(f.size()) + " tokens in the file, " +
                           std::to_string(sh.tokens) + " in " + meta_path + " (" + entry +
                           ".tokens) (at byte offset " + std::to_string(f.dataOffset()) + ")");
    starts.push_back(starts.back() + f.size());
    files.push_back(std::move(f));
  }
  // parseDataIndex checked the sum; an index built by hand is checked here as well.
  if (starts.back() != index.tokens)
    return fail(err, meta_path + ": splits." + name + ".tokens: " + std::to_string(index.tokens) +
                         ", but its shards hold " + std::to_string(starts.back()) + " tokens");
  files_ = std::move(files);
  starts_ = std::move(starts);
  // A split of one shard reads as that file (the messages of the single-file layout).
  describe_ = files_.size() == 1 ? files_[0].path()
                                 : meta_path + " (splits." + name + ": " +
                                       std::to_string(files_.size()) + " shards)";
  return true;
}

void TokenSplit::close() {
  files_.clear();
  starts_.clear();
  describe_.clear();
}

void TokenSplit::advise(TokenFile::Access access) const {
  for (const TokenFile& f : files_) f.advise(access);
}

bool TokenSplit::copyWindow(int64_t offset, int64_t n, int32_t* dst, std::string* err) const {
  const int64_t total = tokens();
  if (offset < 0 || n < 0 || offset > total || n > total - offset)
    return fail(err, describe_ + ": internal error: tokens [" + std::to_string(offset) + ", " +
                         std::to_string(offset) + " + " + std::to_string(n) +
                         ") read from a split of " + std::to_string(total) + " tokens");
  // The shard holding `offset`: the last start <= offset (empty shards are skipped over).
  size_t i = (size_t)(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin());
  i = i == 0 ? 0 : i - 1;
  while (n > 0) {
    while (i < files_.size() && starts_[i + 1] <= offset) ++i; // empty shards
    const int64_t local = offset - starts_[i];
    const int64_t take = std::min(n, files_[i].size() - local);
    if (!files_[i].read(local, take, dst, err)) return false;
    dst += take;
    offset += take;
    n -= take;
    ++i;
  }
  return true;
}

} // namespace tgrt
