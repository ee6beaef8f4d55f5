// DataMeta.cpp — see DataMeta.h.
#include "runtime/driver/DataMeta.h"

#include <nlohmann/json.hpp>

namespace tgrt {

bool checkDataMeta(const std::string& path, const std::string& text, int64_t model_vocab,
                   std::string* err) {
  auto fail = [&](const std::string& msg) {
    if (err) *err = path + ": " + msg;
    return false;
  };
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return fail("malformed JSON at byte offset " +
                std::to_string(e.byte > 0 ? e.byte - 1 : 0) + ": expected one JSON object (" +
                e.what() + ")");
  } catch (const nlohmann::json::exception& e) {
    // A number too large for a double: out_of_range.406 "number overflow parsing '<literal>'"
    // has no position; locate the literal.
    const std::string what = e.what();
    const size_t b = what.find('\''), end = b == std::string::npos ? b : what.find('\'', b + 1);
    const size_t idx = end == std::string::npos ? 0 : text.find(what.substr(b + 1, end - b - 1));
    return fail("malformed JSON at byte offset " +
                std::to_string(idx == std::string::npos ? 0 : idx) +
                ": expected one JSON object (" + what + ")");
  }
  if (!meta.is_object())
    return fail("(root): expected a JSON object, found " + std::string(meta.type_name()));
  const auto it = meta.find("vocab_size");
  if (it == meta.end()) return true;
  if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX) ||
      it->get<int64_t>() < 1)
    return fail("vocab_size: expected a positive integer, found " + it->dump());
  const int64_t v = it->get<int64_t>();
  if (v > model_vocab)
    return fail("vocab_size: the data's vocab_size " + std::to_string(v) +
                " exceeds the model's vocab_size " + std::to_string(model_vocab) +
                " (prepare the data with --vocab " + std::to_string(model_vocab) +
                " or change the spec)");
  return true;
}

} // namespace tgrt
