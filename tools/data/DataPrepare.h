// DataPrepare.h — `tgc data prepare`: raw text → tokenizer + sharded token arrays.
//
// Reads documents (one per file; one per line of a .jsonl file; one per row of a .parquet
// file) into an index (where each one's text is, not the text: it is read back when it is
// encoded; .jsonl.gz and .parquet text goes to a temporary spool file; docs/prepare.md,
// "Memory"), splits them into train/val/test by document after a seeded shuffle, then either
// trains a byte-fallback sentencepiece BPE tokenizer on the train split (the default) or
// takes a pretrained Hugging Face tokenizer.json (--tokenizer, encoded by the `tokenizers`
// Python package in a worker process, PrepareWorker.h), encodes every split on all cores
// with EOS after each document, and writes (docs/prepare.md):
//   OUT/<split>.npy, or OUT/<split>-00000.npy ... when a split holds more than
//     shard_tokens tokens: 1-D uint16 (vocab_size <= 65536) or uint32 token ids
//   OUT/<split>-docs.npy      int64 start offset (tokens) of each document in the split
//   OUT/tokenizer.model       the sentencepiece model, or OUT/tokenizer.json (a copy)
//   OUT/meta.json             format "tgc-tokens" version 2: shards, sizes, tokenizer
//                             (type, file, sha256), sources and unigram statistics
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
  /// A Hugging Face tokenizers file (tokenizer.json) to encode with instead of training a
  /// sentencepiece tokenizer; `vocab` is then ignored (vocab_size is the tokenizer's,
  /// added tokens included).
  std::string tokenizer;
  /// With `tokenizer`: the token appended after each document. Empty: the eos_token of a
  /// tokenizer_config.json beside the tokenizer file, else the first of <|endoftext|>,
  /// <|end_of_text|>, </s>, <eos>, <|eos|> that the tokenizer has.
  std::string eos_token;
  std::string text_field = "text"; ///< the string field of .jsonl lines / column of .parquet
  int threads = 0;                 ///< encoding threads (0 = all cores); ids never depend on it
  int64_t shard_tokens = 100000000; ///< tokens per shard file at most (>= 1)
  /// The interpreter of the Python worker (needed for `tokenizer` and .parquet inputs).
  /// Empty: $TGC_PYTHON, else the repository's .venv-hf/bin/python, else python3
  /// (findWorkerPython in PrepareWorker.h).
  std::string python;
};

/// Runs the whole preparation. Returns false and sets *err to a message naming the file (and
/// the byte offset, line, or parquet row group and row) for: a missing input, no documents
/// at all, invalid UTF-8, a malformed .jsonl line or one without the text field, an
/// unreadable .parquet file or row group, a missing or non-string parquet column, fewer than
/// 3 documents, a vocab size sentencepiece rejects for this corpus, a tokenizer file that
/// cannot be loaded or has no end-of-document token, a missing Python interpreter or
/// package (naming what to install), an input changed between reading and encoding (its
/// text is read back per batch; "FILE[:LINE]: changed since prepare read it"), or an I/O
/// failure (including the spool file's). Empty documents are skipped with a warning.
bool prepareData(const DataOptions& opts, std::string* err);

/// SHA-256 of a file's bytes as 64 lowercase hex digits (OpenSSL's EVP). False with *err
/// naming the file when it cannot be read.
bool sha256File(const std::string& path, std::string* hex, std::string* err);

/// The newest /usr/share/doc/linux-doc-<version>/Documentation directory, or "" if none.
std::string defaultCorpusDir();

/// Offset (bytes) of the first byte that is not part of valid UTF-8 in `s` (overlong forms,
/// surrogates and code points above U+10FFFF are invalid), or -1 if `s` is valid.
int64_t firstInvalidUtf8(const std::string& s);

} // namespace tgc

#endif // TGC_TOOLS_DATA_DATAPREPARE_H
