//===- TgEnumOptions.h - pass options of tg enum type -------------*- C++ -*-===//
//
// llvm::cl parsers for the tg enums, so that a pass option (Passes.td) or a pipeline
// option (passes/Passes.h) is typed by the enum: the value on tg-opt's command line is
// read through the generated symbolize function, and an unknown one is an error at the
// option that lists the enum's cases (TgEnums.td), e.g.
//   for the --precision option: 'fp8' is not one of fp32, bf16-mixed, fp16-mixed, bf16
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TGENUMOPTIONS_H
#define TGC_DIALECT_TGENUMOPTIONS_H

#include "dialect/TgEnums.h"
#include "llvm/Support/CommandLine.h"

namespace mlir::tg {
/// The parser of an option of tg enum type E.
template <typename E>
class EnumOptionParser : public llvm::cl::basic_parser<E> {
public:
  EnumOptionParser(llvm::cl::Option &o) : llvm::cl::basic_parser<E>(o) {}

  bool parse(llvm::cl::Option &o, llvm::StringRef, llvm::StringRef arg, E &value) {
    if (std::optional<E> e = symbolizeEnum<E>(arg)) {
      value = *e;
      return false;
    }
    return o.error("'" + arg + "' is not one of " + enumSpellingList<E>());
  }
  llvm::StringRef getValueName() const override { return "value"; }
  void printOptionDiff(const llvm::cl::Option &o, E value, llvm::cl::OptionValue<E> def,
                       size_t globalWidth) const {
    this->printOptionName(o, globalWidth);
    llvm::outs() << "= " << stringifyEnum(value);
    if (def.hasValue())
      llvm::outs() << " (default: " << stringifyEnum(def.getValue()) << ")";
    llvm::outs() << "\n";
  }
  /// Pass pipelines print an option's value with it (--dump-pass-pipeline, reproducers).
  static void print(llvm::raw_ostream &os, const E &value) { os << stringifyEnum(value); }
};
} // namespace mlir::tg

namespace llvm::cl {
template <>
class parser<mlir::tg::Precision> : public mlir::tg::EnumOptionParser<mlir::tg::Precision> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::tg::Checkpointing>
    : public mlir::tg::EnumOptionParser<mlir::tg::Checkpointing> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::tg::Offload> : public mlir::tg::EnumOptionParser<mlir::tg::Offload> {
public:
  using EnumOptionParser::EnumOptionParser;
};
} // namespace llvm::cl

#endif
