// DataPrepare.h — `tgc data prepare`: raw text → sentencepiece BPE tokenizer + token arrays.
//
// Reads documents (one per file; one per line of a .jsonl file), splits them into
// train/val/test by document after a seeded shuffle, trains a byte-fallback BPE tokenizer on
// the train split only, encodes every split with EOS after each document, and writes
//   OUT/train.npy, OUT/val.npy, OUT/test.npy   1-D uint16 (vocab <= 65535) or uint32 token ids
//   OUT/tokenizer.model                        the sentencepiece model
//   OUT/meta.json                              sizes, sources and unigram statistics
// Everything is written into OUT.tmp-<pid> and renamed into place at the end, so a failure
// leaves nothing half-written. Plain C++; never links MLIR.
#ifndef TGC_TOOLS_DATA_DATAPREPARE_H
#define TGC_TOOLS_DATA_DATAPREPARE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// Options of `tgc data prepare`.
struct DataOptions {
  /// Files or directories. Directories are searched recursively (in sorted order) for
  /// .txt .rst .md .jsonl files and their .gz variants; files given by name are read whatever
  /// their extension (.jsonl / .jsonl.gz as JSON lines with a "text" field, the rest as text).
  /// Empty: the newest /usr/share/doc/linux-doc-*/Documentation (see defaultCorpusDir()),
  /// without its translations/ subdirectory (English text only).
  std::vector<std::string> inputs;
  int vocab = 2048;        ///< tokenizer vocabulary size (tokens), incl. 256 byte pieces
  std::string out;         ///< output directory (replaced if it is a previous data directory)
  double train_frac = 0.8; ///< fraction of documents in train
  double val_frac = 0.1;   ///< fraction in val; test gets the rest (each split >= 1 document)
  uint64_t seed = 1234;    ///< document shuffle seed (also sentencepiece's RNG seed)
  int64_t max_bytes = 0;   ///< cap on total input text bytes (0 = no cap)
  bool quiet = false;      ///< no progress messages on stderr
};

/// Runs the whole preparation. Returns false and sets *err to a message naming the file (and
/// the byte offset or line) for: a missing input, no documents at all, invalid UTF-8, a
/// malformed .jsonl line, fewer than 3 documents, a vocab size sentencepiece rejects for this
/// corpus, or an I/O failure. Empty documents are skipped with a warning.
bool prepareData(const DataOptions& opts, std::string* err);

/// The newest /usr/share/doc/linux-doc-<version>/Documentation directory, or "" if none.
std::string defaultCorpusDir();

/// Offset (bytes) of the first byte that is not part of valid UTF-8 in `s` (overlong forms,
/// surrogates and code points above U+10FFFF are invalid), or -1 if `s` is valid.
int64_t firstInvalidUtf8(const std::string& s);

} // namespace tgc

#endif // TGC_TOOLS_DATA_DATAPREPARE_H
