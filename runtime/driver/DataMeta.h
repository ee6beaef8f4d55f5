// DataMeta.h — checking a data directory's meta.json (written by `tgc data prepare`) against
// the model before training. Plain C++; never links MLIR.
#ifndef TGRT_DRIVER_DATAMETA_H
#define TGRT_DRIVER_DATAMETA_H

#include <cstdint>
#include <string>

namespace tgrt {

/// Checks `text`, the contents of the meta.json file `path`, for a model with `model_vocab`
/// tokens. The file must hold one JSON object; its "vocab_size", when present, must be an
/// integer in [1, model_vocab] (token ids are checked against the model's vocab_size either
/// way). Other fields are ignored. On failure returns false and sets *err to
/// "<path>: <byte offset or field>: <what was expected>". Never throws.
bool checkDataMeta(const std::string& path, const std::string& text, int64_t model_vocab,
                   std::string* err);

} // namespace tgrt

#endif // TGRT_DRIVER_DATAMETA_H
