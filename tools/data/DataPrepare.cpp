// DataPrepare.cpp — `tgc data prepare` (see DataPrepare.h).
//
// Steps: collect input files (sorted) → read documents (gzip via zlib, UTF-8 validated, CRLF →
// LF, BOM dropped, whitespace-only documents skipped) → seeded Fisher–Yates shuffle of the
// documents → split → train sentencepiece BPE on chunks of the train documents (newlines kept,
// identity normalisation so decoding gives the text back) → encode all splits in parallel →
// write npy arrays, tokenizer.model and meta.json into OUT.tmp-<pid> → rename to OUT.
#include "tools/data/DataPrepare.h"

#include "runtime/driver/Npy.h"

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace fs = std::filesystem;

namespace tgc {

int64_t firstInvalidUtf8(const std::string& s) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return (int64_t)i;
    if (i + len > n) return (int64_t)i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return (int64_t)i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return (int64_t)i;
    i += len;
  }
  return -1;
}

std::string defaultCorpusDir() {
  std::error_code ec;
  std::string best, best_ver;
  for (const auto& e : fs::directory_iterator("/usr/share/doc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("linux-doc-", 0) != 0) continue;
    const fs::path doc = e.path() / "Documentation";
    if (!fs::is_directory(doc, ec)) continue;
    const std::string ver = name.substr(10);
    if (best.empty() || strverscmp(ver.c_str(), best_ver.c_str()) > 0) {
      best = doc.string();
      best_ver = ver;
    }
  }
  return best;
}

namespace {

bool fail(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

bool endsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// Whether a file found while recursing into a directory is read as input.
bool acceptedInDirectory(const std::string& name) {
  for (const char* ext : {".txt", ".rst", ".md", ".jsonl"}) {
    if (endsWith(name, ext) || endsWith(name, (std::string(ext) + ".gz").c_str())) return true;
  }
  return false;
}

bool isJsonl(const std::string& path) {
  return endsWith(path, ".jsonl") || endsWith(path, ".jsonl.gz");
}

/// Reads a whole file, decompressing .gz with zlib.
bool readFile(const std::string& path, std::string* out, std::string* err) {
  out->clear();
  if (endsWith(path, ".gz")) {
    gzFile g = gzopen(path.c_str(), "rb");
    if (!g) return fail(err, path + ": cannot open: " + std::strerror(errno));
    char buf[1 << 16];
    for (;;) {
      const int n = gzread(g, buf, sizeof buf);
      if (n < 0) {
        int code = 0;
        const std::string msg = gzerror(g, &code);
        gzclose(g);
        return fail(err, path + ": corrupt gzip data after " + std::to_string(out->size()) +
                             " uncompressed bytes: " + msg);
      }
      if (n == 0) break;
      out->append(buf, (size_t)n);
    }
    gzclose(g);
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(err, path + ": cannot open: " + std::strerror(errno));
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return fail(err, path + ": read error");
  return true;
}

/// CRLF/CR → LF (in place).
void normalizeNewlines(std::string* s) {
  if (s->find('\r') == std::string::npos) return;
  std::string o;
  o.reserve(s->size());
  for (size_t i = 0; i < s->size(); ++i) {
    const char c = (*s)[i];
    if (c == '\r') {
      o.push_back('\n');
      if (i + 1 < s->size() && (*s)[i + 1] == '\n') ++i;
    } else {
      o.push_back(c);
    }
  }
  s->swap(o);
}

bool isBlank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  });
}

/// Largest n <= limit such that s[0, n) ends on a UTF-8 character boundary.
size_t utf8Prefix(const std::string& s, size_t limit) {
  if (limit >= s.size()) return s.size();
  size_t n = limit;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) --n;
  return n;
}

struct Document {
  std::string text;
  std::string source; ///< "file" or "file:line"
};

struct Corpus {
  std::vector<Document> docs;
  int64_t files = 0, skipped_empty = 0, bytes = 0;
  bool truncated = false; ///< stopped at max_bytes
};

/// Adds a document, honouring the byte cap. Returns false once the cap is reached.
bool addDocument(Corpus* c, std::string text, const std::string& source, int64_t max_bytes,
                 bool quiet) {
  if (isBlank(text)) {
    ++c->skipped_empty;
    if (!quiet) std::fprintf(stderr, "warning: %s: empty document skipped\n", source.c_str());
    return true;
  }
  if (max_bytes > 0 && c->bytes + (int64_t)text.size() > max_bytes) {
    text.resize(utf8Prefix(text, (size_t)(max_bytes - c->bytes)));
    c->truncated = true;
    if (!isBlank(text)) {
      c->bytes += (int64_t)text.size();
      c->docs.push_back({std::move(text), source});
    }
    return false;
  }
  c->bytes += (int64_t)text.size();
  c->docs.push_back({std::move(text), source});
  return true;
}

/// Reads one input file into documents. Returns false with *err on a hard error; sets *more to
/// false when the byte cap was reached.
bool readDocuments(const std::string& path, const DataOptions& o, Corpus* c, bool* more,
                   std::string* err) {
  std::string data;
  if (!readFile(path, &data, err)) return false;
  ++c->files;
  const std::string what = endsWith(path, ".gz") ? " (uncompressed)" : "";
  if (data.size() >= 3 && (unsigned char)data[0] == 0xEF && (unsigned char)data[1] == 0xBB &&
      (unsigned char)data[2] == 0xBF) {
    if (const int64_t bad = firstInvalidUtf8(data); bad >= 0)
      return fail(err, path + ": invalid UTF-8 at byte offset " + std::to_string(bad) + what);
    data.erase(0, 3);
  } else if (const int64_t bad = firstInvalidUtf8(data); bad >= 0) {
    return fail(err, path + ": invalid UTF-8 at byte offset " + std::to_string(bad) + what);
  }
  if (!isJsonl(path)) {
    normalizeNewlines(&data);
    *more = addDocument(c, std::move(data), path, o.max_bytes, o.quiet);
    return true;
  }
  size_t pos = 0;
  int64_t line_no = 0, empty_lines = 0;
  while (pos < data.size() && *more) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    const std::string line = data.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (isBlank(line)) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      return fail(err, where + ": malformed JSON at column " + std::to_string(e.byte) + ": " +
                           e.what());
    }
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
      return fail(err, where + ": expected a JSON object with a string field \"text\"");
    std::string text = j["text"].get<std::string>();
    normalizeNewlines(&text);
    if (isBlank(text)) {
      ++empty_lines;
      ++c->skipped_empty;
      continue;
    }
    *more = addDocument(c, std::move(text), where, o.max_bytes, true);
  }
  if (empty_lines > 0 && !o.quiet)
    std::fprintf(stderr, "warning: %s: %lld empty \"text\" documents skipped\n", path.c_str(),
                 (long long)empty_lines);
  return true;
}

/// Feeds training chunks to sentencepiece.
class ChunkIterator : public sentencepiece::SentenceIterator {
public:
  explicit ChunkIterator(const std::vector<std::string>* chunks) : chunks_(chunks) {}
  bool done() const override { return i_ >= chunks_->size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return (*chunks_)[i_]; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

private:
  const std::vector<std::string>* chunks_;
  size_t i_ = 0;
};

constexpr size_t kChunkBytes = 2048;              ///< target size of one training "sentence"
constexpr int64_t kTrainTextCap = 24ll << 20;     ///< bytes of text the BPE trainer sees at most

/// Cuts a document into chunks of whole lines (newlines kept) of at most kChunkBytes; a longer
/// line is cut at UTF-8 boundaries.
void chunkDocument(const std::string& doc, std::vector<std::string>* out) {
  std::string cur;
  size_t pos = 0;
  while (pos < doc.size()) {
    size_t nl = doc.find('\n', pos);
    size_t end = nl == std::string::npos ? doc.size() : nl + 1;
    std::string line = doc.substr(pos, end - pos);
    pos = end;
    if (cur.size() + line.size() > kChunkBytes && !cur.empty()) {
      out->push_back(std::move(cur));
      cur.clear();
    }
    while (line.size() > kChunkBytes) {
      size_t cut = utf8Prefix(line, kChunkBytes);
      if (cut == 0) cut = kChunkBytes;
      out->push_back(line.substr(0, cut));
      line.erase(0, cut);
    }
    cur += line;
  }
  if (!isBlank(cur)) out->push_back(std::move(cur));
}

struct UnigramStats {
  double entropy = 0;       ///< nats per token, of the split's own distribution
  double cross_entropy = 0; ///< nats per token under the train distribution, add-one smoothed
};

std::vector<int64_t> countTokens(const std::vector<uint32_t>& ids, int vocab) {
  std::vector<int64_t> c((size_t)vocab, 0);
  for (uint32_t t : ids) ++c[t];
  return c;
}

UnigramStats unigram(const std::vector<int64_t>& counts, const std::vector<int64_t>& train,
                     int64_t train_total) {
  UnigramStats s;
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  if (n == 0) return s;
  const double denom = (double)train_total + (double)train.size();
  for (size_t t = 0; t < counts.size(); ++t) {
    if (counts[t] == 0) continue;
    const double p = (double)counts[t] / (double)n;
    s.entropy -= p * std::log(p);
    s.cross_entropy -= p * std::log(((double)train[t] + 1.0) / denom);
  }
  return s;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool writeText(const fs::path& p, const std::string& text, std::string* err) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) return fail(err, p.string() + ": write failed: " + std::strerror(errno));
  return true;
}

/// The part of prepareData that writes into `tmp` (a fresh directory).
bool prepareInto(const DataOptions& o, const fs::path& tmp, std::string* err) {
  const auto t0 = std::chrono::steady_clock::now();
  auto note = [&](const char* fmt, auto... args) {
    if (o.quiet) return;
    std::fprintf(stderr, "[data %6.1fs] ", secondsSince(t0));
    std::fprintf(stderr, fmt, args...);
    std::fputc('\n', stderr);
  };

  // 1. Inputs.
  std::vector<std::string> roots = o.inputs;
  std::string excluded; // a directory skipped while recursing
  if (roots.empty()) {
    const std::string def = defaultCorpusDir();
    if (def.empty())
      return fail(err, "no --input given and no /usr/share/doc/linux-doc-*/Documentation "
                       "found (install linux-doc or pass --input PATH)");
    roots.push_back(def);
    // The translations (zh_CN, ja_JP, ko_KR, ...) bring ~3,000 distinct CJK characters, more
    // than a 2048-token vocabulary can hold at character_coverage 1.0; the default corpus is
    // the English documentation only.
    excluded = (fs::path(def) / "translations").string();
    note("no --input: using %s (without translations/)", def.c_str());
  }
  std::vector<std::string> files;
  for (const std::string& r : roots) {
    std::error_code ec;
    const fs::file_status st = fs::status(r, ec);
    if (ec || !fs::exists(st)) return fail(err, r + ": input not found");
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      fs::recursive_directory_iterator it(r, fs::directory_options::skip_permission_denied, ec),
          end;
      if (ec) return fail(err, r + ": cannot list directory: " + ec.message());
      for (; it != end; it.increment(ec)) {
        if (ec) return fail(err, r + ": cannot list directory: " + ec.message());
        if (!excluded.empty() && it->path().string() == excluded) {
          it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file(ec) && acceptedInDirectory(it->path().filename().string()))
          found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty() && !o.quiet)
        std::fprintf(stderr, "warning: %s: no .txt/.rst/.md/.jsonl(.gz) files found\n",
                     r.c_str());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(r);
    }
  }
  {
    std::vector<std::string> uniq;
    for (const auto& f : files)
      if (std::find(uniq.begin(), uniq.end(), f) == uniq.end()) uniq.push_back(f);
    files.swap(uniq);
  }

  // 2. Documents.
  Corpus corpus;
  bool more = true;
  for (const std::string& f : files) {
    if (!more) break;
    if (!readDocuments(f, o, &corpus, &more, err)) return false;
  }
  if (corpus.docs.empty())
    return fail(err, "no non-empty documents found in the inputs (" +
                         std::to_string(corpus.files) + " files read)");
  if (corpus.docs.size() < 3)
    return fail(err, "only " + std::to_string(corpus.docs.size()) +
                         " document(s) found; train/val/test are split by document, so at "
                         "least 3 are needed (one per file or per .jsonl line)");
  note("read %lld documents, %.1f MB from %lld files%s", (long long)corpus.docs.size(),
       corpus.bytes / 1e6, (long long)corpus.files,
       corpus.truncated ? " (stopped at --max-bytes)" : "");

  // 3. Shuffle + split.
  const size_t n = corpus.docs.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(o.seed);
  for (size_t i = n - 1; i > 0; --i) std::swap(order[i], order[(size_t)(rng() % (i + 1))]);
  size_t n_val = std::max<size_t>(1, (size_t)std::llround((double)n * o.val_frac));
  size_t n_test =
      std::max<size_t>(1, (size_t)std::llround((double)n * (1.0 - o.train_frac - o.val_frac)));
  while (n_val + n_test > n - 1) (n_val >= n_test ? n_val : n_test)--;
  const size_t n_train = n - n_val - n_test;
  const size_t split_begin[4] = {0, n_train, n_train + n_val, n};
  const char* split_names[3] = {"train", "val", "test"};

  // 4. Tokenizer training on the train split.
  std::vector<std::string> chunks;
  int64_t train_bytes = 0;
  for (size_t i = 0; i < n_train; ++i) {
    const std::string& d = corpus.docs[order[i]].text;
    train_bytes += (int64_t)d.size();
    chunkDocument(d, &chunks);
  }
  if (train_bytes > kTrainTextCap) {
    // Deterministic subsample of about kTrainTextCap bytes of chunks.
    std::mt19937_64 pick(o.seed ^ 0x5DEECE66Dull);
    const double keep = (double)kTrainTextCap / (double)train_bytes;
    std::vector<std::string> kept;
    for (auto& c : chunks)
      if ((double)(pick() >> 11) * (1.0 / 9007199254740992.0) < keep) kept.push_back(std::move(c));
    chunks.swap(kept);
  }
  int64_t sp_bytes = 0;
  for (const auto& c : chunks) sp_bytes += (int64_t)c.size();
  note("training a BPE tokenizer (vocab %d) on %zu chunks, %.1f MB of the train split", o.vocab,
       chunks.size(), sp_bytes / 1e6);
  sentencepiece::SetRandomGeneratorSeed((unsigned)(o.seed & 0xffffffffu));
  const std::unordered_map<std::string, std::string> kw = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(o.vocab)},
      {"character_coverage", "1.0"},
      {"byte_fallback", "true"},
      {"unk_id", "0"},
      {"eos_id", "1"},
      {"bos_id", "-1"},
      {"pad_id", "-1"},
      {"num_threads", "2"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"max_sentence_length", std::to_string(kChunkBytes * 2)},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", o.quiet ? "2" : "1"},
  };
  ChunkIterator it(&chunks);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(kw, &it, &proto);
  if (!status.ok()) {
    const std::string msg = status.message();
    std::string why = "cannot train a BPE tokenizer with vocab_size " + std::to_string(o.vocab) +
                      " on the train split (" + std::to_string(n_train) + " documents, " +
                      std::to_string(sp_bytes) + " bytes)";
    if (msg.find("smaller than required_chars") != std::string::npos)
      why += ": the vocabulary must hold the 256 byte-fallback pieces, the special tokens and "
             "every distinct character of the text; use a larger --vocab";
    else if (msg.find("too high") != std::string::npos)
      why += ": the corpus is too small to learn that many merges; use a smaller --vocab or "
             "more text";
    return fail(err, why + ". sentencepiece: " + msg);
  }
  chunks.clear();
  chunks.shrink_to_fit();
  sentencepiece::SentencePieceProcessor sp;
  if (const auto st = sp.LoadFromSerializedProto(proto); !st.ok())
    return fail(err, "cannot load the trained tokenizer: " + st.ToString());
  const int vocab = sp.GetPieceSize();
  const int eos = sp.eos_id();
  if (!writeText(tmp / "tokenizer.model", proto, err)) return false;
  note("tokenizer: %d pieces, eos id %d", vocab, eos);

  // 5. Encode (two threads over documents), EOS after each document.
  std::vector<std::vector<int>> enc(n);
  std::string enc_err[2]; // one per thread
  auto encodeRange = [&](size_t begin, size_t step) {
    for (size_t i = begin; i < n; i += step) {
      const auto st = sp.Encode(corpus.docs[order[i]].text, &enc[i]);
      if (!st.ok()) {
        enc_err[begin] = corpus.docs[order[i]].source + ": cannot encode: " + st.ToString();
        return;
      }
    }
  };
  {
    std::thread t1(encodeRange, 1, 2);
    encodeRange(0, 2);
    t1.join();
  }
  for (const std::string& e : enc_err)
    if (!e.empty()) return fail(err, e);

  std::vector<uint32_t> split_tokens[3];
  int64_t split_bytes[3] = {0, 0, 0};
  for (int s = 0; s < 3; ++s) {
    for (size_t i = split_begin[s]; i < split_begin[s + 1]; ++i) {
      for (int id : enc[i]) split_tokens[s].push_back((uint32_t)id);
      split_tokens[s].push_back((uint32_t)eos);
      split_bytes[s] += (int64_t)corpus.docs[order[i]].text.size();
      std::vector<int>().swap(enc[i]);
    }
  }
  note("encoded: train %zu, val %zu, test %zu tokens", split_tokens[0].size(),
       split_tokens[1].size(), split_tokens[2].size());

  // 6. Arrays.
  const bool u16 = vocab <= 65535;
  for (int s = 0; s < 3; ++s) {
    const fs::path p = tmp / (std::string(split_names[s]) + ".npy");
    bool ok;
    if (u16) {
      std::vector<uint16_t> v(split_tokens[s].begin(), split_tokens[s].end());
      ok = tgrt::writeNpy(p.string(), tgrt::NpyDtype::U16, v.data(), (int64_t)v.size(), err);
    } else {
      ok = tgrt::writeNpy(p.string(), tgrt::NpyDtype::U32, split_tokens[s].data(),
                          (int64_t)split_tokens[s].size(), err);
    }
    if (!ok) return false;
  }

  // 7. meta.json.
  const std::vector<int64_t> train_counts = countTokens(split_tokens[0], vocab);
  nlohmann::json meta;
  meta["format"] = "tgc-data-1";
  meta["vocab_size"] = vocab;
  meta["dtype"] = u16 ? "uint16" : "uint32";
  meta["eos_id"] = eos;
  meta["unk_id"] = sp.unk_id();
  meta["bos_id"] = -1;
  meta["pad_id"] = -1;
  meta["tokenizer"] = "tokenizer.model";
  meta["tokenizer_type"] = "sentencepiece bpe, byte_fallback, identity normalization";
  meta["tokenizer_training_bytes"] = sp_bytes;
  meta["seed"] = o.seed;
  meta["train_frac"] = o.train_frac;
  meta["val_frac"] = o.val_frac;
  meta["max_bytes"] = o.max_bytes;
  meta["truncated_at_max_bytes"] = corpus.truncated;
  meta["sources"] = roots;
  if (!excluded.empty()) meta["excluded"] = excluded;
  meta["files"] = corpus.files;
  meta["skipped_empty_documents"] = corpus.skipped_empty;
  nlohmann::json unig;
  for (int s = 0; s < 3; ++s) {
    const std::string k = split_names[s];
    meta["tokens"][k] = split_tokens[s].size();
    meta["documents"][k] = split_begin[s + 1] - split_begin[s];
    meta["bytes"][k] = split_bytes[s];
    const UnigramStats u = unigram(countTokens(split_tokens[s], vocab), train_counts,
                                   (int64_t)split_tokens[0].size());
    unig[k]["entropy_nats"] = u.entropy;
    unig[k]["perplexity"] = std::exp(u.entropy);
    if (s > 0) {
      unig[k]["cross_entropy_under_train_nats"] = u.cross_entropy;
      unig[k]["perplexity_under_train"] = std::exp(u.cross_entropy);
    }
  }
  unig["note"] = "nats per token incl. EOS; *_under_train: the train split's unigram "
                 "distribution with add-one smoothing over vocab_size";
  meta["unigram"] = unig;
  meta["val_unigram_perplexity"] = unig["val"]["perplexity_under_train"];
  if (!writeText(tmp / "meta.json", meta.dump(2) + "\n", err)) return false;
  note("val unigram perplexity (train distribution, add-one): %.2f",
       unig["val"]["perplexity_under_train"].get<double>());
  return true;
}

} // namespace

bool prepareData(const DataOptions& o, std::string* err) {
  if (o.out.empty()) return fail(err, "no output directory given (--out DIR)");
  if (o.vocab < 2) return fail(err, "--vocab must be at least 2, got " + std::to_string(o.vocab));
  if (!(o.train_frac > 0) || !(o.val_frac > 0) || !(o.train_frac + o.val_frac < 1.0))
    return fail(err, "split fractions must satisfy train_frac > 0, val_frac > 0 and "
                     "train_frac + val_frac < 1 (test gets the rest)");
  if (o.max_bytes < 0) return fail(err, "--max-bytes must be >= 0");
  std::error_code ec;
  fs::path out = fs::path(o.out);
  if (out.has_filename() == false) out = out.parent_path(); // "dir/" → "dir"
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec))
      return fail(err, out.string() + " exists and is not a directory");
    const bool empty = fs::is_empty(out, ec);
    if (!empty && !fs::exists(out / "meta.json", ec))
      return fail(err, out.string() + " exists and is not a tgc data directory (no meta.json); "
                                      "refusing to replace it");
  }
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  const std::string pid = std::to_string((long long)getpid());
  const fs::path tmp = out.string() + ".tmp-" + pid;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec))
    return fail(err, tmp.string() + ": cannot create directory: " + ec.message());
  if (!prepareInto(o, tmp, err)) {
    fs::remove_all(tmp, ec);
    return false;
  }
  const fs::path old = out.string() + ".old-" + pid;
  const bool had_old = fs::exists(out, ec);
  if (had_old) {
    fs::rename(out, old, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      return fail(err, "cannot move the previous " + out.string() + " aside: " + ec.message());
    }
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    const std::string msg = ec.message();
    if (had_old) fs::rename(old, out, ec);
    fs::remove_all(tmp, ec);
    return fail(err, "cannot rename " + tmp.string() + " to " + out.string() + ": " + msg);
  }
  if (had_old) fs::remove_all(old, ec);
  if (!o.quiet) std::fprintf(stderr, "[data] wrote %s\n", out.string().c_str());
  return true;
}

} // namespace tgc
