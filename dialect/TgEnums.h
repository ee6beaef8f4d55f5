//===- TgEnums.h - the training policies as enums (plain C++) -----*- C++ -*-===//
//
// Precision, Checkpointing and Offload, generated from dialect/TgEnums.td: the enum
// classes and symbolizeX / stringifyX (the string form of a case is the spelling of the
// spec and of tg-opt's options). Needs LLVM's headers only, no MLIR library: the spec
// parser (frontend/Spec.cpp, also compiled into the runtime driver and the fuzz harness)
// validates through it. dialect/TgDialect.h adds the attributes (#tg.precision<...>) and
// dialect/TgEnumOptions.h the pass options' parsers.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TGENUMS_H
#define TGC_DIALECT_TGENUMS_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMapInfo.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dialect/TgEnums.h.inc"

namespace mlir::tg {

/// Every case of a tg enum, in declaration order (TgEnums.td numbers the cases densely from
/// 0, so the first value without a string form ends them).
template <typename E>
std::vector<E> enumCases() {
  std::vector<E> out;
  for (uint32_t i = 0;; ++i) {
    E e = static_cast<E>(i);
    if (stringifyEnum(e).empty())
      return out;
    out.push_back(e);
  }
}

/// The string forms of every case: {"fp32", "bf16-mixed", ...}.
template <typename E>
std::vector<std::string> enumSpellings() {
  std::vector<std::string> out;
  for (E e : enumCases<E>())
    out.push_back(stringifyEnum(e).str());
  return out;
}

/// "fp32, bf16-mixed, fp16-mixed, bf16": the allowed values for an error message.
template <typename E>
std::string enumSpellingList() {
  std::string s;
  for (const std::string &w : enumSpellings<E>())
    s += (s.empty() ? "" : ", ") + w;
  return s;
}

} // namespace mlir::tg

#endif
