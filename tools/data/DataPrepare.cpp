// DataPrepare.cpp — `tgc data prepare` (see DataPrepare.h).
//
// Steps: collect input files (sorted) → read documents (gzip via zlib, UTF-8 validated, CRLF →
// LF, BOM dropped, whitespace-only documents skipped) → seeded Fisher–Yates shuffle of the
// documents → split → train sentencepiece BPE on chunks of the train documents (newlines kept,
// identity normalisation so decoding gives the text back) → encode all splits in parallel →
// write npy arrays, tokenizer.model and meta.json into OUT.tmp-<pid> → rename to OUT.
#include "tools/data/DataPrepare.h"
#include "tools/data/PrepareWorker.h"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string_view>
#include <thread>
#include <unordered_map>

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

bool sha256File(const std::string& path, std::string* hex, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (err) *err = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1;
  std::vector<char> buf(1 << 20);
  while (ok && in) {
    in.read(buf.data(), (std::streamsize)buf.size());
    if (in.gcount() > 0) ok = EVP_DigestUpdate(ctx, buf.data(), (size_t)in.gcount()) == 1;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  ok = ok && !in.bad() && EVP_DigestFinal_ex(ctx, md, &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    if (err) *err = path + ": cannot compute its SHA-256 (read error)";
    return false;
  }
  static const char* digits = "0123456789abcdef";
  hex->clear();
  for (unsigned int i = 0; i < len; ++i) {
    hex->push_back(digits[md[i] >> 4]);
    hex->push_back(digits[md[i] & 15]);
  }
  return true;
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

bool isParquet(const std::string& path) { return endsWith(path, ".parquet"); }

/// Whether a file found while recursing into a directory is read as input.
bool acceptedInDirectory(const std::string& name) {
  for (const char* ext : {".txt", ".rst", ".md", ".jsonl"}) {
    if (endsWith(name, ext) || endsWith(name, (std::string(ext) + ".gz").c_str())) return true;
  }
  return isParquet(name);
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
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return fail(err, path + ": cannot open: " + std::strerror(errno));
  // Read into a buffer of the file's size (reused by the caller), then to the end.
  struct stat st {};
  if (fstat(fileno(f), &st) == 0 && st.st_size > 0) out->resize((size_t)st.st_size);
  size_t got = std::fread(out->data(), 1, out->size(), f);
  out->resize(got);
  char buf[1 << 16];
  while (!std::ferror(f) && !std::feof(f)) {
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    out->append(buf, n);
  }
  const bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad) return fail(err, path + ": read error");
  return true;
}

/// CRLF/CR → LF (in place).
void normalizeNewlines(std::string* s) {
  size_t i = s->find('\r');
  if (i == std::string::npos) return;
  char* p = s->data();
  const size_t n = s->size();
  size_t j = i; // p[0, j) is the output so far (never longer than the input read)
  for (; i < n; ++i) {
    const char c = p[i];
    if (c == '\r') {
      p[j++] = '\n';
      if (i + 1 < n && p[i + 1] == '\n') ++i;
    } else {
      p[j++] = c;
    }
  }
  s->resize(j);
}

bool isBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  });
}

/// Largest n <= limit such that s[0, n) ends on a UTF-8 character boundary.
size_t utf8Prefix(std::string_view s, size_t limit) {
  if (limit >= s.size()) return s.size();
  size_t n = limit;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) --n;
  return n;
}

constexpr size_t kChunkBytes = 2048;              ///< target size of one training "sentence"
constexpr int64_t kTrainTextCap = 24ll << 20;     ///< bytes of text the BPE trainer sees at most

/// The sentencepiece training chunks of a document, as (offset, length) ranges of `doc` in
/// order: runs of whole lines (newlines kept) of at most kChunkBytes; a longer line is cut at
/// UTF-8 boundaries; a last run that is only whitespace is dropped.
void chunkRanges(std::string_view doc, std::vector<std::pair<size_t, size_t>>* out) {
  out->clear();
  size_t cur_b = 0, cur_n = 0; // the chunk being filled: doc[cur_b, cur_b + cur_n)
  size_t pos = 0;
  while (pos < doc.size()) {
    const size_t nl = doc.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? doc.size() : nl + 1;
    size_t lb = pos, ln = end - pos; // the line, its newline included
    pos = end;
    if (cur_n + ln > kChunkBytes && cur_n != 0) {
      out->push_back({cur_b, cur_n});
      cur_n = 0;
    }
    while (ln > kChunkBytes) {
      size_t cut = utf8Prefix(doc.substr(lb, ln), kChunkBytes);
      if (cut == 0) cut = kChunkBytes;
      out->push_back({lb, cut});
      lb += cut;
      ln -= cut;
    }
    if (cur_n == 0) cur_b = lb; // (a non-empty chunk always ends where this line starts)
    cur_n += ln;
  }
  if (!isBlank(doc.substr(cur_b, cur_n))) out->push_back({cur_b, cur_n});
}

/// Where a document's text is read back from when it is encoded (docs/prepare.md, "Memory"):
/// prepare keeps an index of the documents, not their text.
enum class DocSource : uint8_t {
  kFile,  ///< the whole file (.txt/.md/.rst and their .gz): read again, BOM dropped, CRLF → LF
  kLine,  ///< a line of an uncompressed .jsonl file: [offset, offset + line_bytes) of the file
  kSpool, ///< [offset, offset + bytes) of the spool (.jsonl.gz lines, .parquet rows)
};

/// One document of the index: where it came from and how to read its text back (about 56
/// bytes; no string per document).
struct Document {
  int64_t offset = 0;     ///< kLine: byte offset of the line in the file; kSpool: in the spool
  int64_t line_bytes = 0; ///< kLine: bytes of the line, without its '\n'
  int64_t bytes = 0;      ///< bytes of the text (newlines normalised, cut at --max-bytes)
  uint64_t hash = 0;      ///< std::hash of the text, checked when it is read back
  int64_t item = -1;      ///< -1: the whole file; else the .jsonl line (1-based) / parquet row
  uint32_t file = 0;      ///< index into Corpus::paths
  uint32_t chunks = 0;    ///< sentencepiece training chunks (chunkRanges; default tokenizer only)
  DocSource source = DocSource::kFile;
  bool parquet = false;   ///< `item` is a parquet row (0-based)
};

uint64_t textHash(std::string_view text) { return std::hash<std::string_view>{}(text); }

/// An unnamed temporary file (O_TMPFILE in the output's temporary directory, so it is gone
/// when closed, even after a kill) holding the text of the documents that cannot be read
/// back cheaply from their input: the lines of a .jsonl.gz (a gzip stream cannot be entered
/// in the middle) and the rows of a .parquet file (read through the Python worker). Appended
/// through a 1 MB buffer while the corpus is read; read back with pread(), from any thread.
class Spool {
public:
  ~Spool() {
    if (fd_ >= 0) ::close(fd_);
  }
  /// Appends `text`; *offset = its byte offset in the spool. Opens the file on first use.
  bool append(std::string_view text, int64_t* offset, std::string* err) {
    if (fd_ < 0 && !open(err)) return false;
    *offset = size_;
    size_ += (int64_t)text.size();
    if (buf_.size() + text.size() > kBuffer && !flush(err)) return false;
    if (text.size() >= kBuffer) return writeAll(text.data(), text.size(), err);
    buf_.append(text);
    return true;
  }
  /// Writes out the buffer (before anything is read back).
  bool flush(std::string* err) {
    if (buf_.empty()) return true;
    const bool ok = writeAll(buf_.data(), buf_.size(), err);
    buf_.clear();
    return ok;
  }
  /// Reads [offset, offset + n) into *out.
  bool read(int64_t offset, int64_t n, std::string* out, std::string* err) const {
    out->resize((size_t)n);
    int64_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, out->data() + done, (size_t)(n - done), offset + done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        return fail(err, where() + ": cannot read " + std::to_string(n) + " bytes at byte offset " +
                             std::to_string(offset) + ": " +
                             (r < 0 ? std::strerror(errno) : "end of file"));
      done += r;
    }
    return true;
  }
  void setDirectory(const fs::path& dir) { dir_ = dir; }
  int64_t bytes() const { return size_; }

private:
  static constexpr size_t kBuffer = 1 << 20;
  std::string where() const { return "the text spool (an unnamed file in " + dir_.string() + ")"; }
  bool open(std::string* err) {
    fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) { // no O_TMPFILE on this file system: a named file, unlinked at once
      std::string name = (dir_ / ".spool-XXXXXX").string();
      fd_ = ::mkostemp(name.data(), O_CLOEXEC);
      if (fd_ >= 0) ::unlink(name.c_str());
    }
    if (fd_ < 0) return fail(err, where() + ": cannot create: " + std::strerror(errno));
    buf_.reserve(kBuffer);
    return true;
  }
  bool writeAll(const char* p, size_t n, std::string* err) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return fail(err, where() + ": write failed: " + std::strerror(errno));
      p += w;
      n -= (size_t)w;
    }
    return true;
  }
  fs::path dir_;
  int fd_ = -1;
  int64_t size_ = 0;
  std::string buf_;
};

struct Corpus {
  std::vector<Document> docs;
  std::vector<std::string> paths; ///< the files read, in order
  int64_t files = 0, skipped_empty = 0, bytes = 0;
  bool truncated = false;     ///< stopped at max_bytes
  bool count_chunks = false;  ///< fill Document::chunks (the sentencepiece sample needs them)
  Spool spool;
  std::vector<std::pair<size_t, size_t>> ranges; ///< scratch of chunkRanges

  /// "file", "file:line" or "file: row R", for messages.
  std::string sourceOf(const Document& d) const {
    const std::string& p = paths[d.file];
    if (d.item < 0) return p;
    return d.parquet ? p + ": row " + std::to_string(d.item) : p + ":" + std::to_string(d.item);
  }
  /// Bytes the index holds (the Document entries and the file names).
  int64_t indexBytes() const {
    int64_t b = (int64_t)(docs.capacity() * sizeof(Document));
    for (const std::string& p : paths) b += (int64_t)(sizeof p + p.capacity());
    return b;
  }
};

/// Adds a document of the file read last (Corpus::paths.back()) to the index, honouring the
/// byte cap: `loc` says where it is read back from (source, offset, line_bytes, item,
/// parquet); its length, hash and chunk count are filled in here, and for DocSource::kSpool
/// the text is appended to the spool. Sets *more to false once the cap is reached. `source`
/// names it in the empty-document warning. False with *err when the spool cannot be written.
bool addDocument(Corpus* c, std::string text, Document loc, const std::string& source,
                 int64_t max_bytes, bool quiet, bool* more, std::string* err) {
  if (isBlank(text)) {
    ++c->skipped_empty;
    if (!quiet) std::fprintf(stderr, "warning: %s: empty document skipped\n", source.c_str());
    return true;
  }
  if (max_bytes > 0 && c->bytes + (int64_t)text.size() > max_bytes) {
    text.resize(utf8Prefix(text, (size_t)(max_bytes - c->bytes)));
    c->truncated = true;
    *more = false;
    if (isBlank(text)) return true;
  }
  loc.file = (uint32_t)(c->paths.size() - 1);
  loc.bytes = (int64_t)text.size();
  loc.hash = textHash(text);
  if (c->count_chunks) {
    chunkRanges(text, &c->ranges);
    loc.chunks = (uint32_t)c->ranges.size();
  }
  if (loc.source == DocSource::kSpool && !c->spool.append(text, &loc.offset, err)) return false;
  c->bytes += loc.bytes;
  c->docs.push_back(loc);
  return true;
}

/// Adds the rows of one parquet batch from the worker (see PrepareWorker.cpp, "parquet").
bool addParquetRows(const std::string& path, const nlohmann::json& reply,
                    const std::string& payload, const DataOptions& o, Corpus* c, bool* more,
                    int64_t* empty_rows, std::string* err) {
  const int64_t rows = reply.value("rows", (int64_t)0);
  const int64_t group = reply.value("row_group", (int64_t)0);
  const int64_t first = reply.value("first_row", (int64_t)0);
  if (payload.size() < (size_t)rows * 4)
    return fail(err, path + ": the Python worker sent a short parquet batch");
  size_t pos = (size_t)rows * 4;
  for (int64_t r = 0; r < rows && *more; ++r) {
    uint32_t len;
    std::memcpy(&len, payload.data() + 4 * r, 4);
    if (len == 0xFFFFFFFFu) { // null
      ++*empty_rows;
      ++c->skipped_empty;
      continue;
    }
    if (pos + len > payload.size())
      return fail(err, path + ": the Python worker sent a short parquet batch");
    std::string text = payload.substr(pos, len);
    pos += len;
    const std::string where = path + ": row " + std::to_string(first + r) + " (row group " +
                              std::to_string(group) + ", column '" + o.text_field + "')";
    if (const int64_t bad = firstInvalidUtf8(text); bad >= 0)
      return fail(err, where + ": invalid UTF-8 at byte offset " + std::to_string(bad) +
                           " of the value");
    normalizeNewlines(&text);
    if (isBlank(text)) {
      ++*empty_rows;
      ++c->skipped_empty;
      continue;
    }
    Document loc;
    loc.source = DocSource::kSpool;
    loc.item = first + r;
    loc.parquet = true;
    if (!addDocument(c, std::move(text), loc, where, o.max_bytes, true, more, err)) return false;
  }
  return true;
}

/// Reads one .parquet file (through the worker, pyarrow): one document per row of the
/// column `o.text_field`; nulls and blank values are skipped. The text goes to the spool.
bool readParquet(const std::string& path, const DataOptions& o, PrepareWorker* worker,
                 Corpus* c, bool* more, std::string* err) {
  ++c->files;
  c->paths.push_back(path);
  if (!worker || !worker->running())
    return fail(err, path + ": reading .parquet needs the Python worker (internal error)");
  if (!worker->send({{"cmd", "parquet"}, {"file", path}, {"column", o.text_field},
                     {"batch_rows", 4096}},
                    "", err))
    return false;
  int64_t empty_rows = 0;
  for (;;) {
    nlohmann::json reply;
    std::string payload;
    if (!worker->receive(&reply, &payload, err)) return false;
    if (reply.value("done", false)) break;
    // Past the byte cap the rest of the stream is still read (and dropped), so that the
    // protocol stays in step.
    if (*more && !addParquetRows(path, reply, payload, o, c, more, &empty_rows, err))
      return false;
  }
  if (empty_rows > 0 && !o.quiet)
    std::fprintf(stderr, "warning: %s: %lld null or empty '%s' values skipped\n", path.c_str(),
                 (long long)empty_rows, o.text_field.c_str());
  return true;
}

/// A file read front to back in 1 MB blocks, line by line ('\n'-separated); .gz is
/// decompressed with zlib. Holds one block and the current line.
class LineReader {
public:
  ~LineReader() {
    if (gz_) gzclose(gz_);
    if (f_) std::fclose(f_);
  }
  bool open(const std::string& path, std::string* err) {
    path_ = path;
    if (endsWith(path, ".gz")) gz_ = gzopen(path.c_str(), "rb");
    else f_ = std::fopen(path.c_str(), "rb");
    if (!gz_ && !f_) return fail(err, path + ": cannot open: " + std::strerror(errno));
    buf_.resize(1 << 20);
    return true;
  }
  /// The next line (without its '\n') into *line and its byte offset (of the uncompressed
  /// data) into *offset. False at the end of the file (*err untouched, *eof true) or on a
  /// read error (*err set).
  bool next(std::string* line, int64_t* offset, bool* eof, std::string* err) {
    line->clear();
    *offset = base_ + (int64_t)pos_;
    *eof = false;
    for (;;) {
      if (pos_ == end_) {
        if (!fill(err)) return false;
        if (end_ == 0) {
          *eof = line->empty();
          return !line->empty();
        }
      }
      const char* s = buf_.data() + pos_;
      const void* nl = std::memchr(s, '\n', end_ - pos_);
      if (nl) {
        const size_t n = (size_t)((const char*)nl - s);
        line->append(s, n);
        pos_ += n + 1;
        return true;
      }
      line->append(s, end_ - pos_);
      pos_ = end_;
    }
  }

private:
  bool fill(std::string* err) {
    base_ += (int64_t)end_;
    pos_ = end_ = 0;
    if (gz_) {
      const int n = gzread(gz_, buf_.data(), (unsigned)buf_.size());
      if (n < 0) {
        int code = 0;
        const std::string msg = gzerror(gz_, &code);
        return fail(err, path_ + ": corrupt gzip data after " + std::to_string(base_) +
                             " uncompressed bytes: " + msg);
      }
      end_ = (size_t)n;
    } else {
      end_ = std::fread(buf_.data(), 1, buf_.size(), f_);
      if (end_ < buf_.size() && std::ferror(f_)) return fail(err, path_ + ": read error");
    }
    return true;
  }
  std::string path_;
  gzFile gz_ = nullptr;
  std::FILE* f_ = nullptr;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  int64_t base_ = 0; ///< offset of buf_[0] in the (uncompressed) file
};

/// The string field `field` of one .jsonl line, or false with *why describing what is wrong
/// (and *column the 1-based column of a JSON syntax error, else 0).
bool jsonlText(const std::string& line, const std::string& field, std::string* text,
               std::string* why, size_t* column) {
  nlohmann::json j;
  *column = 0;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    *column = e.byte;
    *why = e.what();
    return false;
  }
  if (!j.is_object()) return false;
  auto it = j.find(field);
  if (it == j.end() || !it->is_string()) return false;
  *text = std::move(it->get_ref<std::string&>());
  return true;
}

/// Reads one .jsonl / .jsonl.gz file line by line: one document per line (its string field
/// `o.text_field`), located by its byte offset (uncompressed .jsonl: read back from the
/// file) or copied to the spool (.jsonl.gz).
bool readJsonl(const std::string& path, const DataOptions& o, Corpus* c, bool* more,
               std::string* err) {
  LineReader in;
  if (!in.open(path, err)) return false;
  ++c->files;
  c->paths.push_back(path);
  const bool gz = endsWith(path, ".gz");
  const std::string what = gz ? " (uncompressed)" : "";
  const std::string& field = o.text_field;
  std::string line, text, why;
  int64_t raw = 0, line_no = 0, empty_lines = 0, bom = 0;
  bool eof = false;
  while (*more && in.next(&line, &raw, &eof, err)) {
    ++line_no;
    if (line_no == 1 && line.size() >= 3 && (unsigned char)line[0] == 0xEF &&
        (unsigned char)line[1] == 0xBB && (unsigned char)line[2] == 0xBF) {
      bom = 3; // dropped; JSON offsets count from after it, UTF-8 offsets from the file start
      line.erase(0, 3);
      raw += 3;
    }
    if (const int64_t bad = firstInvalidUtf8(line); bad >= 0)
      return fail(err, path + ": invalid UTF-8 at byte offset " + std::to_string(raw + bad) +
                           what);
    if (isBlank(line)) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    const int64_t line_start = raw - bom;
    size_t column = 0;
    if (!jsonlText(line, field, &text, &why, &column)) {
      if (column > 0)
        return fail(err, where + ": malformed JSON at column " + std::to_string(column) +
                             " (byte offset " + std::to_string(line_start + (int64_t)column - 1) +
                             what + "): " + why);
      return fail(err, where + ": expected a JSON object with a string field \"" + field +
                           "\" (line at byte offset " + std::to_string(line_start) + what +
                           "; choose the field with --text-field NAME)");
    }
    normalizeNewlines(&text);
    if (isBlank(text)) {
      ++empty_lines;
      ++c->skipped_empty;
      continue;
    }
    Document loc;
    loc.source = gz ? DocSource::kSpool : DocSource::kLine;
    loc.offset = raw;
    loc.line_bytes = (int64_t)line.size();
    loc.item = line_no;
    if (!addDocument(c, std::move(text), loc, where, o.max_bytes, true, more, err)) return false;
  }
  if (!eof && *more) return false; // a read error (*err set)
  if (empty_lines > 0 && !o.quiet)
    std::fprintf(stderr, "warning: %s: %lld empty \"%s\" documents skipped\n", path.c_str(),
                 (long long)empty_lines, field.c_str());
  return true;
}

/// Reads a whole text file: BOM dropped (after the UTF-8 check of the whole file), CRLF/CR →
/// LF. `what` is " (uncompressed)" for .gz, for the message.
bool readTextFile(const std::string& path, std::string* data, std::string* err) {
  if (!readFile(path, data, err)) return false;
  const std::string what = endsWith(path, ".gz") ? " (uncompressed)" : "";
  if (const int64_t bad = firstInvalidUtf8(*data); bad >= 0)
    return fail(err, path + ": invalid UTF-8 at byte offset " + std::to_string(bad) + what);
  if (data->size() >= 3 && (unsigned char)(*data)[0] == 0xEF &&
      (unsigned char)(*data)[1] == 0xBB && (unsigned char)(*data)[2] == 0xBF)
    data->erase(0, 3);
  normalizeNewlines(data);
  return true;
}

/// Reads one input file into the index. Returns false with *err on a hard error; sets *more
/// to false when the byte cap was reached.
bool readDocuments(const std::string& path, const DataOptions& o, PrepareWorker* worker,
                   Corpus* c, bool* more, std::string* err) {
  if (isParquet(path)) return readParquet(path, o, worker, c, more, err);
  if (isJsonl(path)) return readJsonl(path, o, c, more, err);
  std::string data;
  if (!readTextFile(path, &data, err)) return false;
  ++c->files;
  c->paths.push_back(path);
  return addDocument(c, std::move(data), Document(), path, o.max_bytes, o.quiet, more, err);
}

/// Reads documents' text back from where the index says (DocSource) when they are encoded,
/// and checks that it is the text read the first time (length and hash): a file changed
/// since is an error naming it. One per thread: it keeps the .jsonl files it reads open.
class DocReader {
public:
  DocReader(const Corpus& c, const DataOptions& o) : c_(c), o_(o) {}
  ~DocReader() { closeAll(); }
  DocReader(const DocReader&) = delete;
  DocReader& operator=(const DocReader&) = delete;
  DocReader(DocReader&& r) noexcept : c_(r.c_), o_(r.o_) { fds_.swap(r.fds_); }

  bool read(const Document& d, std::string* text, std::string* err) {
    const std::string& path = c_.paths[d.file];
    switch (d.source) {
    case DocSource::kFile:
      if (!readTextFile(path, text, err)) return fail(err, changed(d) + ": " + *err);
      break;
    case DocSource::kSpool:
      if (!c_.spool.read(d.offset, d.bytes, text, err)) return false;
      break;
    case DocSource::kLine: {
      line_.resize((size_t)d.line_bytes);
      const int fd = fdOf(d.file, err);
      if (fd < 0) return false;
      int64_t done = 0;
      while (done < d.line_bytes) {
        const ssize_t r = ::pread(fd, line_.data() + done, (size_t)(d.line_bytes - done),
                                  d.offset + done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
          return fail(err, changed(d) + " (cannot read " + std::to_string(d.line_bytes) +
                               " bytes at byte offset " + std::to_string(d.offset) + ": " +
                               (r < 0 ? std::strerror(errno) : "end of file") + ")");
        done += r;
      }
      std::string why;
      size_t column;
      if (!jsonlText(line_, o_.text_field, text, &why, &column))
        return fail(err, changed(d) + " (no longer a JSON object with a string field \"" +
                             o_.text_field + "\")");
      normalizeNewlines(text);
      break;
    }
    }
    if ((int64_t)text->size() < d.bytes)
      return fail(err, changed(d) + " (" + std::to_string(d.bytes) + " bytes of text then, " +
                           std::to_string(text->size()) + " now)");
    text->resize((size_t)d.bytes); // a document cut at --max-bytes
    if (textHash(*text) != d.hash) return fail(err, changed(d) + " (its text differs)");
    return true;
  }

private:
  /// "FILE[:LINE]: changed since prepare read it[ (line at byte offset N)]".
  std::string changed(const Document& d) const {
    std::string s = c_.sourceOf(d) + ": changed since prepare read it";
    if (d.source == DocSource::kLine)
      s += " (line at byte offset " + std::to_string(d.offset) + ")";
    return s;
  }
  int fdOf(uint32_t file, std::string* err) {
    auto it = fds_.find(file);
    if (it != fds_.end()) return it->second;
    if (fds_.size() >= 64) closeAll();
    const std::string& path = c_.paths[file];
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      fail(err, path + ": cannot open again to read its documents: " + std::strerror(errno));
      return -1;
    }
    fds_[file] = fd;
    return fd;
  }
  void closeAll() {
    for (auto& [f, fd] : fds_) ::close(fd);
    fds_.clear();
  }
  const Corpus& c_;
  const DataOptions& o_;
  std::unordered_map<uint32_t, int> fds_;
  std::string line_;
};

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

struct UnigramStats {
  double entropy = 0;       ///< nats per token, of the split's own distribution
  double cross_entropy = 0; ///< nats per token under the train distribution, add-one smoothed
};

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

/// This process's resident set now (KiB; /proc/self/statm), 0 if unreadable.
int64_t residentKb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * (int64_t)sysconf(_SC_PAGESIZE) / 1024 : 0;
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


/// The .npy v1.0 header of a 1-D little-endian array of `count` elements of `descr`, padded
/// as NumPy and tgrt::writeNpy pad it (128 bytes for any count up to 10^19).
std::string npyHeader(const char* descr, int64_t count) {
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(count) + ",), }";
  const size_t total = 10 + dict.size() + 1;
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string h = {'\x93', 'N', 'U', 'M', 'P', 'Y', '\x01', '\x00', 0, 0};
  h[8] = (char)(dict.size() & 0xff);
  h[9] = (char)(dict.size() >> 8);
  return h + dict;
}

/// A 1-D .npy file written front to back: a placeholder header, the elements through a
/// buffer, then the real header (same length) once the count is known.
class NpyStream {
public:
  NpyStream(fs::path path, const char* descr, size_t item)
      : path_(std::move(path)), descr_(descr), item_(item) {}
  ~NpyStream() {
    if (f_) std::fclose(f_);
  }
  bool open(std::string* err) {
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) return fail(err, path_.string() + ": cannot create: " + std::strerror(errno));
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    const std::string h = npyHeader(descr_, 0);
    header_bytes_ = h.size();
    return put(h.data(), h.size(), err);
  }
  bool append(const void* data, size_t count, std::string* err) {
    count_ += (int64_t)count;
    return put(data, count * item_, err);
  }
  bool close(std::string* err) {
    const std::string h = npyHeader(descr_, count_);
    if (h.size() != header_bytes_)
      return fail(err, path_.string() + ": .npy header size changed (internal error)");
    bool ok = std::fflush(f_) == 0 && std::fseek(f_, 0, SEEK_SET) == 0 &&
              std::fwrite(h.data(), 1, h.size(), f_) == h.size();
    ok = (std::fclose(f_) == 0) && ok;
    f_ = nullptr;
    if (!ok) return fail(err, path_.string() + ": write failed: " + std::strerror(errno));
    return true;
  }
  int64_t count() const { return count_; }

private:
  bool put(const void* p, size_t n, std::string* err) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      return fail(err, path_.string() + ": write failed: " + std::strerror(errno));
    return true;
  }
  fs::path path_;
  const char* descr_;
  size_t item_;
  std::FILE* f_ = nullptr;
  size_t header_bytes_ = 0;
  int64_t count_ = 0;
};

/// The token output of one split: shards of at most `cap` tokens, written as they fill,
/// "<split>-00000.npy", ...; a split that ends inside its first shard is renamed to
/// "<split>.npy". Also records each document's start offset for "<split>-docs.npy".
class SplitWriter {
public:
  SplitWriter(fs::path dir, std::string split, int64_t cap, bool u16)
      : dir_(std::move(dir)), split_(std::move(split)), cap_(cap), u16_(u16) {}

  /// Appends one document's ids (and the EOS after it, when eos >= 0).
  bool addDocument(const uint32_t* ids, size_t n, int64_t eos, std::string* err) {
    starts_.push_back(total_);
    if (!put(ids, n, err)) return false;
    if (eos >= 0) {
      const uint32_t e = (uint32_t)eos;
      if (!put(&e, 1, err)) return false;
    }
    return true;
  }

  /// Closes the last shard, renames a single shard to <split>.npy and writes the document
  /// starts. Fills `shards` with {"file", "tokens"} objects.
  bool finish(nlohmann::json* shards, std::string* err) {
    if (cur_ && !closeShard(err)) return false;
    if (files_.size() == 1) {
      std::error_code ec;
      const std::string single = split_ + ".npy";
      fs::rename(dir_ / files_[0].first, dir_ / single, ec);
      if (ec) return fail(err, (dir_ / single).string() + ": cannot rename: " + ec.message());
      files_[0].first = single;
    }
    *shards = nlohmann::json::array();
    for (const auto& [f, t] : files_) shards->push_back({{"file", f}, {"tokens", t}});
    NpyStream docs(dir_ / (split_ + "-docs.npy"), "<i8", 8);
    return docs.open(err) && docs.append(starts_.data(), starts_.size(), err) &&
           docs.close(err);
  }
  int64_t tokens() const { return total_; }
  int64_t documents() const { return (int64_t)starts_.size(); }

private:
  bool put(const uint32_t* ids, size_t n, std::string* err) {
    while (n > 0) {
      if (!cur_ || cur_->count() == cap_) {
        if (cur_ && !closeShard(err)) return false;
        char name[64];
        std::snprintf(name, sizeof name, "%s-%05zu.npy", split_.c_str(), files_.size());
        files_.push_back({name, 0});
        cur_ = std::make_unique<NpyStream>(dir_ / name, u16_ ? "<u2" : "<u4", u16_ ? 2 : 4);
        if (!cur_->open(err)) return false;
      }
      const size_t take = (size_t)std::min<int64_t>((int64_t)n, cap_ - cur_->count());
      bool ok;
      if (u16_) {
        buf16_.assign(ids, ids + take);
        ok = cur_->append(buf16_.data(), take, err);
      } else {
        ok = cur_->append(ids, take, err);
      }
      if (!ok) return false;
      ids += take;
      n -= take;
      total_ += (int64_t)take;
    }
    return true;
  }
  bool closeShard(std::string* err) {
    files_.back().second = cur_->count();
    const bool ok = cur_->close(err);
    cur_.reset();
    return ok;
  }

  fs::path dir_;
  std::string split_;
  int64_t cap_;
  bool u16_;
  std::unique_ptr<NpyStream> cur_;
  std::vector<std::pair<std::string, int64_t>> files_;
  std::vector<int64_t> starts_;
  std::vector<uint16_t> buf16_;
  int64_t total_ = 0;
};

/// The progress line of the encoding: text MB done, MB/s, tokens, ETA. On a terminal it is
/// rewritten in place about twice a second; otherwise a line every 10 s.
class Progress {
public:
  Progress(bool quiet, int64_t total_bytes)
      : quiet_(quiet), tty_(isatty(2) != 0), total_(total_bytes),
        t0_(std::chrono::steady_clock::now()), last_(t0_) {}
  void update(const char* split, int64_t bytes, int64_t tokens, bool final = false) {
    done_ += bytes;
    tokens_ += tokens;
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (!final && since < (tty_ ? 0.5 : 10.0)) return;
    last_ = now;
    const double el = std::max(1e-9, std::chrono::duration<double>(now - t0_).count());
    const double rate = (double)done_ / el;
    const double eta = rate > 0 ? (double)(total_ - done_) / rate : 0.0;
    std::fprintf(stderr, "%s[data] encoding %s: %.1f / %.1f MB of text, %.2f MB/s, %.2f M "
                         "tokens, ETA %.0f s%s",
                 tty_ ? "\r" : "", split, done_ / 1e6, total_ / 1e6, rate / 1e6,
                 tokens_ / 1e6, eta, tty_ ? "   " : "\n");
    if (tty_ && final) std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  int64_t bytes() const { return done_; }
  int64_t tokens() const { return tokens_; }

private:
  bool quiet_, tty_;
  int64_t total_, done_ = 0, tokens_ = 0;
  std::chrono::steady_clock::time_point t0_, last_;
};

constexpr int64_t kEncodeBatchBytes = 8ll << 20; ///< text bytes per encoding batch (target)

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

  // 2. The Python worker, where needed (a pretrained tokenizer, .parquet inputs), and the
  // tokenizer file loaded before the corpus is read (a bad one fails fast).
  const bool hf = !o.tokenizer.empty();
  std::vector<std::string> need;
  if (hf) need.push_back("tokenizers");
  if (std::any_of(files.begin(), files.end(), [](const std::string& f) { return isParquet(f); }))
    need.push_back("pyarrow");
  const int threads = o.threads > 0 ? o.threads
                                    : std::max(1, (int)std::thread::hardware_concurrency());
  PrepareWorker worker;
  nlohmann::json hf_info;
  if (!need.empty()) {
    std::string perr;
    const std::string python = findWorkerPython(o.python, &perr);
    if (python.empty()) return fail(err, perr);
    if (!worker.start(python, threads, need, err)) return false;
  }
  if (hf) {
    std::string payload;
    if (!fs::is_regular_file(o.tokenizer))
      return fail(err, o.tokenizer + ": tokenizer file not found");
    if (!worker.call({{"cmd", "load"}, {"file", o.tokenizer}, {"eos_token", o.eos_token}}, "",
                     &hf_info, &payload, err))
      return false;
    note("tokenizer %s: %s, vocab_size %d (added tokens included), eos %s = id %d",
         o.tokenizer.c_str(), hf_info.value("model", std::string("?")).c_str(),
         hf_info.value("vocab_size", 0), hf_info.value("eos_token", std::string()).c_str(),
         hf_info.value("eos_id", -1));
  }

  // 3. Documents.
  // The index of the documents, not their text (docs/prepare.md, "Memory"): each is read
  // back when its batch is encoded.
  const int64_t rss_before_kb = residentKb();
  Corpus corpus;
  corpus.count_chunks = !hf;
  corpus.spool.setDirectory(tmp);
  bool more = true;
  for (const std::string& f : files) {
    if (!more) break;
    if (!readDocuments(f, o, &worker, &corpus, &more, err)) return false;
  }
  if (!corpus.spool.flush(err)) return false;
  if (corpus.docs.empty())
    return fail(err, "no non-empty documents found in the inputs (" +
                         std::to_string(corpus.files) + " files read)");
  if (corpus.docs.size() < 3)
    return fail(err, "only " + std::to_string(corpus.docs.size()) +
                         " document(s) found; train/val/test are split by document, so at "
                         "least 3 are needed (one per file, .jsonl line or .parquet row)");
  note("read %lld documents, %.1f MB from %lld files%s; held: their index (%.1f kB), not "
       "their text%s",
       (long long)corpus.docs.size(), corpus.bytes / 1e6, (long long)corpus.files,
       corpus.truncated ? " (stopped at --max-bytes)" : "", corpus.indexBytes() / 1e3,
       corpus.spool.bytes() > 0
           ? (", " + std::to_string(corpus.spool.bytes()) +
              " bytes of .jsonl.gz/.parquet text spooled to a temporary file")
                 .c_str()
           : "");

  // 4. Shuffle + split.
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

  // 5. The tokenizer: trained on the train split (sentencepiece), or the given one.
  int vocab = 0;
  int64_t eos = -1;
  int64_t sp_bytes = 0;
  nlohmann::json tok_meta;
  sentencepiece::SentencePieceProcessor sp;
  if (hf) {
    vocab = hf_info.value("vocab_size", 0);
    eos = hf_info.value("eos_id", (int64_t)-1);
    if (vocab <= 0 || eos < 0 || eos >= vocab)
      return fail(err, o.tokenizer + ": unusable tokenizer (vocab_size " +
                           std::to_string(vocab) + ", eos id " + std::to_string(eos) + ")");
    std::error_code ec;
    fs::copy_file(o.tokenizer, tmp / "tokenizer.json", ec);
    if (ec) return fail(err, o.tokenizer + ": cannot copy to " + tmp.string() + ": " + ec.message());
    std::string sha;
    if (!sha256File((tmp / "tokenizer.json").string(), &sha, err)) return false;
    tok_meta = {{"type", "hf-tokenizers"},
                {"file", "tokenizer.json"},
                {"sha256", sha},
                {"source", fs::absolute(o.tokenizer).lexically_normal().string()},
                {"model", hf_info.value("model", std::string())},
                {"eos_token", hf_info["eos_token"]},
                {"bos_token", hf_info.value("bos_token", nlohmann::json())},
                {"bos_id", hf_info.value("bos_id", nlohmann::json())}};
  } else {
    std::vector<std::string> chunks;
    int64_t train_bytes = 0;
    for (size_t i = 0; i < n_train; ++i) train_bytes += corpus.docs[order[i]].bytes;
    // Over kTrainTextCap: a deterministic subsample of about kTrainTextCap bytes of chunks
    // (one draw per chunk, in order). The index knows each document's chunk count, so the
    // draws are made first and only the documents with a drawn chunk are read back.
    std::mt19937_64 pick(o.seed ^ 0x5DEECE66Dull);
    const bool subsample = train_bytes > kTrainTextCap;
    const double keep = (double)kTrainTextCap / (double)std::max<int64_t>(1, train_bytes);
    DocReader reader(corpus, o);
    std::string text;
    std::vector<std::pair<size_t, size_t>> ranges;
    std::vector<char> kept;
    for (size_t i = 0; i < n_train; ++i) {
      const Document& d = corpus.docs[order[i]];
      kept.assign(d.chunks, 1);
      bool any = d.chunks > 0;
      if (subsample) {
        any = false;
        for (uint32_t c = 0; c < d.chunks; ++c) {
          kept[c] = (double)(pick() >> 11) * (1.0 / 9007199254740992.0) < keep;
          any = any || kept[c];
        }
      }
      if (!any) continue;
      if (!reader.read(d, &text, err)) return false;
      chunkRanges(text, &ranges);
      if (ranges.size() != d.chunks)
        return fail(err, corpus.sourceOf(d) + ": changed since prepare read it (" +
                             std::to_string(ranges.size()) + " training chunks, not " +
                             std::to_string(d.chunks) + ")");
      for (uint32_t c = 0; c < d.chunks; ++c)
        if (kept[c]) chunks.emplace_back(text, ranges[c].first, ranges[c].second);
    }
    for (const auto& c : chunks) sp_bytes += (int64_t)c.size();
    note("training a BPE tokenizer (vocab %d) on %zu chunks, %.1f MB of the train split",
         o.vocab, chunks.size(), sp_bytes / 1e6);
    sentencepiece::SetRandomGeneratorSeed((unsigned)(o.seed & 0xffffffffu));
    // num_threads stays 2 whatever --threads says: the trained model, and so every id,
    // must not depend on the machine.
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
      std::string why = "cannot train a BPE tokenizer with vocab_size " +
                        std::to_string(o.vocab) + " on the train split (" +
                        std::to_string(n_train) + " documents, " + std::to_string(sp_bytes) +
                        " bytes)";
      if (msg.find("smaller than required_chars") != std::string::npos)
        why += ": the vocabulary must hold the 256 byte-fallback pieces, the special tokens "
               "and every distinct character of the text; use a larger --vocab";
      else if (msg.find("too high") != std::string::npos)
        why += ": the corpus is too small to learn that many merges; use a smaller --vocab or "
               "more text";
      return fail(err, why + ". sentencepiece: " + msg);
    }
    chunks.clear();
    chunks.shrink_to_fit();
    if (const auto st = sp.LoadFromSerializedProto(proto); !st.ok())
      return fail(err, "cannot load the trained tokenizer: " + st.ToString());
    vocab = sp.GetPieceSize();
    eos = sp.eos_id();
    if (!writeText(tmp / "tokenizer.model", proto, err)) return false;
    std::string sha;
    if (!sha256File((tmp / "tokenizer.model").string(), &sha, err)) return false;
    tok_meta = {{"type", "sentencepiece"},
                {"file", "tokenizer.model"},
                {"sha256", sha},
                {"eos_token", sp.IdToPiece((int)eos)},
                {"unk_token", sp.IdToPiece(sp.unk_id())},
                {"bos_token", nullptr}};
    note("tokenizer: %d pieces, eos id %lld", vocab, (long long)eos);
  }

  // 6. Encode every split in ordered batches of whole documents (kEncodeBatchBytes of text):
  // the documents of a batch are read back from their inputs, encoded in parallel
  // (std::threads for sentencepiece, each reading its documents; tokenizers' own thread pool
  // in the worker), their ids appended in document order, EOS after each, and written to the
  // split's shards as they fill. With the worker, batch k+1 is sent before batch k's ids are
  // taken, so that it encodes k+1 while tgc writes k and reads k+2's text (the worker
  // queues requests on a thread of its own; at most two batches are outstanding). Each
  // document's ids depend on its text alone, so neither the thread count nor the batching
  // changes the output.
  const bool u16 = vocab <= 65536;
  int64_t total_bytes = 0;
  for (const Document& d : corpus.docs) total_bytes += d.bytes;
  struct Batch {
    int split;
    size_t begin, end; ///< positions in `order`
    int64_t bytes;     ///< text bytes
  };
  std::vector<Batch> batches;
  for (int s = 0; s < 3; ++s) {
    for (size_t i = split_begin[s]; i < split_begin[s + 1];) {
      size_t j = i;
      int64_t batch_bytes = 0;
      while (j < split_begin[s + 1] && (j == i || batch_bytes < kEncodeBatchBytes))
        batch_bytes += corpus.docs[order[j++]].bytes;
      batches.push_back({s, i, j, batch_bytes});
      i = j;
    }
  }
  Progress progress(o.quiet, total_bytes);
  nlohmann::json splits_meta;
  std::vector<int64_t> counts[3];
  int64_t split_tokens[3] = {0, 0, 0}, split_bytes[3] = {0, 0, 0};
  std::unique_ptr<SplitWriter> writers[3];
  for (int s = 0; s < 3; ++s) {
    counts[s].assign((size_t)vocab, 0);
    writers[s] = std::make_unique<SplitWriter>(tmp, split_names[s], o.shard_tokens, u16);
  }
  std::vector<uint32_t> ids; // one document's ids
  // Appends document `pos` (of `order`, in split s): `ids` then the EOS.
  auto addIds = [&](int s, size_t pos) -> bool {
    for (uint32_t id : ids) {
      if (id >= (uint32_t)vocab)
        return fail(err, corpus.sourceOf(corpus.docs[order[pos]]) + ": the tokenizer gave id " +
                             std::to_string(id) + ", outside [0, vocab_size=" +
                             std::to_string(vocab) + ")");
      ++counts[s][id];
    }
    ++counts[s][(size_t)eos];
    return writers[s]->addDocument(ids.data(), ids.size(), eos, err);
  };
  // After the last batch of split s: its last shard, document starts and meta.
  auto finishSplit = [&](int s) -> bool {
    nlohmann::json shards;
    if (!writers[s]->finish(&shards, err)) return false;
    split_tokens[s] = writers[s]->tokens();
    for (size_t k = split_begin[s]; k < split_begin[s + 1]; ++k)
      split_bytes[s] += corpus.docs[order[k]].bytes;
    splits_meta[split_names[s]] = {{"tokens", writers[s]->tokens()},
                                   {"documents", writers[s]->documents()},
                                   {"bytes", split_bytes[s]},
                                   {"shards", shards},
                                   {"document_starts", std::string(split_names[s]) + "-docs.npy"}};
    writers[s].reset();
    return true;
  };
  if (hf) {
    // Neither a batch's text nor its ids are held whole: the request is written to the
    // pipe document by document as they are read back, the reply's ids read document by
    // document into `ids`.
    DocReader reader(corpus, o);
    std::string text;
    std::vector<uint32_t> lens;
    // Sends batch b: n uint32 text lengths, then the texts.
    auto sendBatch = [&](const Batch& b) -> bool {
      const size_t nb = b.end - b.begin;
      lens.resize(nb);
      for (size_t k = 0; k < nb; ++k) lens[k] = (uint32_t)corpus.docs[order[b.begin + k]].bytes;
      if (!worker.sendHeader({{"cmd", "encode"}, {"n", nb}}, 4 * nb + (uint64_t)b.bytes, err) ||
          !worker.sendPayload(lens.data(), 4 * nb, err))
        return false;
      for (size_t k = b.begin; k < b.end; ++k)
        if (!reader.read(corpus.docs[order[k]], &text, err) ||
            !worker.sendPayload(text.data(), text.size(), err))
          return false;
      return true;
    };
    std::vector<uint32_t> doc_counts;
    if (!batches.empty() && !sendBatch(batches[0])) return false;
    for (size_t b = 0; b < batches.size(); ++b) {
      const Batch& bt = batches[b];
      if (b + 1 < batches.size() && !sendBatch(batches[b + 1])) return false;
      nlohmann::json reply;
      uint64_t reply_bytes = 0;
      if (!worker.receiveHeader(&reply, &reply_bytes, err)) return false;
      const size_t nb = bt.end - bt.begin;
      const int64_t nt = reply.value("tokens", (int64_t)-1);
      if (reply.value("n", (int64_t)-1) != (int64_t)nb || nt < 0 ||
          reply_bytes != 4 * (nb + (uint64_t)nt))
        return fail(err, "the Python worker sent a malformed encode reply");
      doc_counts.resize(nb);
      if (!worker.receivePayload(doc_counts.data(), 4 * nb, err)) return false;
      uint64_t sum = 0;
      for (uint32_t c : doc_counts) sum += c;
      if (sum != (uint64_t)nt) return fail(err, "the Python worker sent a malformed encode reply");
      for (size_t k = 0; k < nb; ++k) {
        ids.resize(doc_counts[k]);
        if (!worker.receivePayload(ids.data(), 4 * ids.size(), err)) return false;
        if (!addIds(bt.split, bt.begin + k)) return false;
      }
      progress.update(split_names[bt.split], bt.bytes, nt + (int64_t)nb);
      if (bt.end == split_begin[bt.split + 1] && !finishSplit(bt.split)) return false;
    }
  } else {
    std::vector<DocReader> readers;
    readers.reserve((size_t)threads);
    for (int t = 0; t < threads; ++t) readers.emplace_back(corpus, o);
    for (const Batch& bt : batches) {
      const size_t nb = bt.end - bt.begin;
      std::vector<std::vector<int>> enc(nb);
      std::vector<std::string> enc_err((size_t)threads);
      std::atomic<size_t> next{0};
      auto work = [&](int t) {
        std::string text;
        for (size_t k; (k = next.fetch_add(1)) < nb;) {
          const Document& d = corpus.docs[order[bt.begin + k]];
          if (!readers[(size_t)t].read(d, &text, &enc_err[(size_t)t])) return;
          if (const auto st = sp.Encode(text, &enc[k]); !st.ok()) {
            enc_err[(size_t)t] = corpus.sourceOf(d) + ": cannot encode: " + st.ToString();
            return;
          }
        }
      };
      std::vector<std::thread> pool;
      const int use = (int)std::min<size_t>((size_t)threads, nb);
      for (int t = 1; t < use; ++t) pool.emplace_back(work, t);
      work(0);
      for (std::thread& t : pool) t.join();
      for (const std::string& e : enc_err)
        if (!e.empty()) return fail(err, e);
      int64_t nt = 0;
      for (size_t k = 0; k < nb; ++k) {
        ids.assign(enc[k].begin(), enc[k].end());
        nt += (int64_t)ids.size();
        std::vector<int>().swap(enc[k]);
        if (!addIds(bt.split, bt.begin + k)) return false;
      }
      progress.update(split_names[bt.split], bt.bytes, nt + (int64_t)nb);
      if (bt.end == split_begin[bt.split + 1] && !finishSplit(bt.split)) return false;
    }
  }
  progress.update("done", 0, 0, /*final=*/true);
  note("encoded: train %lld, val %lld, test %lld tokens (%.1f MB of text in %.1f s, %.2f MB/s, "
       "%d thread%s)",
       (long long)split_tokens[0], (long long)split_tokens[1], (long long)split_tokens[2],
       progress.bytes() / 1e6, progress.seconds(),
       progress.bytes() / 1e6 / std::max(1e-9, progress.seconds()), threads,
       threads == 1 ? "" : "s");
  {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    note("memory: tgc's peak RSS %.1f MiB (%.1f MiB before reading the corpus; the Python "
         "worker's not included)",
         ru.ru_maxrss / 1024.0, rss_before_kb / 1024.0);
  }

  // 7. meta.json.
  nlohmann::json meta;
  meta["format"] = "tgc-tokens";
  meta["format_version"] = 2;
  meta["vocab_size"] = vocab;
  meta["dtype"] = u16 ? "uint16" : "uint32";
  meta["eos_id"] = eos;
  meta["tokenizer"] = tok_meta;
  meta["splits"] = splits_meta;
  meta["shard_tokens"] = o.shard_tokens;
  if (hf) {
    meta["tokenizer_type"] = "hf-tokenizers " + hf_info.value("model", std::string()) +
                             " (pretrained), no special tokens but the EOS after each document";
  } else {
    meta["unk_id"] = sp.unk_id();
    meta["bos_id"] = -1;
    meta["pad_id"] = -1;
    meta["tokenizer_type"] = "sentencepiece bpe, byte_fallback, identity normalization";
    meta["tokenizer_training_bytes"] = sp_bytes;
  }
  meta["seed"] = o.seed;
  meta["train_frac"] = o.train_frac;
  meta["val_frac"] = o.val_frac;
  meta["max_bytes"] = o.max_bytes;
  meta["truncated_at_max_bytes"] = corpus.truncated;
  meta["sources"] = roots;
  if (!excluded.empty()) meta["excluded"] = excluded;
  meta["files"] = corpus.files;
  meta["skipped_empty_documents"] = corpus.skipped_empty;
  if (!o.text_field.empty() && o.text_field != "text") meta["text_field"] = o.text_field;
  nlohmann::json unig;
  for (int s = 0; s < 3; ++s) {
    const std::string k = split_names[s];
    meta["tokens"][k] = split_tokens[s];
    meta["documents"][k] = split_begin[s + 1] - split_begin[s];
    meta["bytes"][k] = split_bytes[s];
    const UnigramStats u = unigram(counts[s], counts[0], split_tokens[0]);
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
  if (o.shard_tokens < 1)
    return fail(err, "--shard-tokens must be at least 1, got " + std::to_string(o.shard_tokens));
  if (o.threads < 0) return fail(err, "--threads must be >= 0 (0: all cores)");
  if (o.text_field.empty()) return fail(err, "--text-field must not be empty");
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
