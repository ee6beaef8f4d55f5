// TokenSplit.h — one split of a token dataset (train, val or test) as the training driver
// reads it: either the single file DIR/<split>.npy or, for a sharded dataset (DIR/meta.json
// has a "splits" object, docs/data.md), the concatenation of that split's shards, each a
// memory-mapped TokenFile (Npy.h). The rest of the driver sees one array of tokens().
//
// Units: offsets, sizes and counts are in tokens (elements); byte offsets are from the start
// of the file they name. Plain C++; never links MLIR.
#ifndef TGRT_DRIVER_TOKENSPLIT_H
#define TGRT_DRIVER_TOKENSPLIT_H

#include "runtime/driver/Npy.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tgrt {

/// One split of a sharded dataset's index: meta.json "splits.<name>".
struct SplitIndex {
  /// One entry of "shards": a 1-D .npy file (path relative to DIR) and its element count.
  struct Shard {
    std::string file;
    int64_t tokens = 0;
  };
  int64_t tokens = 0;         ///< "tokens": the sum of the shards' tokens
  std::vector<Shard> shards;  ///< "shards", in order: the split is their concatenation
};

/// What meta.json says about the token files (format_version 2, docs/data.md).
struct DataIndex {
  bool sharded = false;          ///< meta.json has a "splits" object
  NpyDtype dtype = NpyDtype::U16; ///< "dtype": "uint16" (<u2) or "uint32" (<u4) (sharded only)
  /// The splits the index lists: "train" and "val" always (sharded), "test" when present;
  /// other names are kept as well (the driver reads only these three).
  std::map<std::string, SplitIndex> splits;
};

/// Parses the data index in `text`, the contents of `meta_path` (DIR/meta.json). Without a
/// "splits" key, sets out->sharded = false and returns true (the single-file layout: the
/// driver reads DIR/<split>.npy). With one, checks its structure: "dtype" is "uint16" or
/// "uint32"; "format_version", when present, is an integer <= 2; "splits" is an object with
/// "train" and "val" (and optionally "test" or others), each an object with a non-negative
/// integer "tokens" and a "shards" array of objects {"file": a non-empty relative path,
/// "tokens": a non-negative integer} whose tokens sum to the split's "tokens". Other fields
/// (documents, document_starts, tokenizer, eos_id, sources, ...) are ignored. On failure
/// returns false and sets *err to "<meta_path>: <JSON path>: <what was expected>", e.g.
/// "DIR/meta.json: splits.train.shards[2].file: expected a string, found 3", or for text
/// that is no JSON "<meta_path>: malformed JSON at byte offset N: ...". Reads no shard.
bool parseDataIndex(const std::string& meta_path, const std::string& text, DataIndex* out,
                    std::string* err);

/// A split of 1..n memory-mapped token files read as one array of tokens() tokens: the
/// concatenation of its files in order. Opening costs, per file, a header parse and an mmap,
/// whatever the files' sizes; nothing is read from the data at open (no scan), so start-up
/// time and host memory do not depend on the data size. Ids are checked when read
/// (copyWindow), as TokenFile::read checks them. Move-only; not copyable (each data-parallel
/// rank opens its own TokenSplit; the mappings share the page cache's pages).
class TokenSplit {
public:
  TokenSplit() = default;
  TokenSplit(TokenSplit&&) noexcept = default;
  TokenSplit& operator=(TokenSplit&&) noexcept = default;
  TokenSplit(const TokenSplit&) = delete;
  TokenSplit& operator=(const TokenSplit&) = delete;

  /// Opens the single file `path` (DIR/<split>.npy) as a split of one shard; the errors of
  /// TokenFile::open (naming the file and the byte offset). `vocab_size`: the bound ids are
  /// checked against when read (<= 0: only that they fit a non-negative int32).
  bool openFile(const std::string& path, int64_t vocab_size, std::string* err);

  /// Opens the shards of split `name` listed in `index` (parsed by parseDataIndex from
  /// `meta_path`), their paths relative to `dir`. Each shard must open as TokenFile::open
  /// requires (exists, a valid 1-D .npy of token ids, exactly as long as its header says),
  /// its dtype must be `dtype` (the index's) and its element count the index's "tokens" for
  /// it. On failure returns false, leaves this split closed and sets *err naming the shard
  /// file, the index entry and a byte offset, e.g.
  ///   "DIR/train-00003.npy: 1000 tokens in the file, 2000 in DIR/meta.json
  ///    (splits.train.shards[3].tokens) (at byte offset 128)"
  ///   "DIR/train-00001.npy: dtype '<u4' in the file, 'uint16' ('<u2') in DIR/meta.json
  ///    (dtype) (at byte offset 20)"
  ///   "DIR/train-00002.npy: cannot open: No such file or directory (listed in
  ///    DIR/meta.json as splits.train.shards[2].file)".
  bool openShards(const std::string& dir, const std::string& meta_path, const std::string& name,
                  const SplitIndex& index, NpyDtype dtype, int64_t vocab_size, std::string* err);

  /// Unmaps every shard (tokens() becomes 0).
  void close();
  /// Advises the kernel how every shard's pages will be read (a hint; never fails).
  void advise(TokenFile::Access access) const;

  bool isOpen() const { return !files_.empty(); }
  /// Number of tokens: the sum of the shards' sizes.
  int64_t tokens() const { return starts_.empty() ? 0 : starts_.back(); }
  /// Number of shard files (1 for a single-file split).
  size_t shardCount() const { return files_.size(); }
  /// Shard i (0 <= i < shardCount()), starting at token shardStart(i) of the split.
  const TokenFile& shard(size_t i) const { return files_[i]; }
  int64_t shardStart(size_t i) const { return starts_[i]; }
  /// For messages: the file's path (a split of one file or one shard), or
  /// "<meta_path> (splits.<name>: N shards)".
  const std::string& describe() const { return describe_; }

  /// Copies tokens [offset, offset + n) of the split into dst[0, n) as int32, checking each
  /// id; a range that straddles shard boundaries is copied from each shard in turn. Returns
  /// false and sets *err (dst partly written) when an id is outside [0, vocab_size): the
  /// message names the shard file, the index within that shard and its byte offset
  /// ("DIR/train-00001.npy: token id X at index I is outside [0, vocab_size=V) (at byte
  /// offset O)"), or when the range is not inside [0, tokens()) (a caller's bug).
  bool copyWindow(int64_t offset, int64_t n, int32_t* dst, std::string* err) const;

private:
  std::vector<TokenFile> files_;
  std::vector<int64_t> starts_; ///< starts_[i]: first token of shard i; back(): tokens()
  std::string describe_;
};

} // namespace tgrt

#endif // TGRT_DRIVER_TOKENSPLIT_H
