//===- TgDialect.cpp - tg dialect registration ------------------------------===//
#include "dialect/TgDialect.h"

using namespace mlir;
using namespace mlir::tg;

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "dialect/TgOpsDialect.cpp.inc"
#include "dialect/TgInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/TgAttrs.cpp.inc"

void TgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/TgOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/TgAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------------===//
// The enum attributes: `<` the case's string form `>`, a keyword where it is one
// (#tg.offload<cpu>), else quoted (#tg.precision<"bf16-mixed">).
//===----------------------------------------------------------------------------===//

namespace {
template <typename AttrT>
Attribute parseEnumAttr(AsmParser &parser) {
  using E = decltype(std::declval<AttrT>().getValue());
  if (parser.parseLess())
    return {};
  SMLoc loc = parser.getCurrentLocation();
  std::string word;
  if (parser.parseKeywordOrString(&word))
    return {};
  std::optional<E> value = symbolizeEnum<E>(word);
  if (!value) {
    parser.emitError(loc) << "unknown " << AttrT::getMnemonic() << " '" << word
                          << "' (expected one of " << enumSpellingList<E>() << ")";
    return {};
  }
  if (parser.parseGreater())
    return {};
  return AttrT::get(parser.getContext(), *value);
}

template <typename AttrT>
void printEnumAttr(AttrT attr, AsmPrinter &printer) {
  printer << "<";
  printer.printKeywordOrString(stringifyEnum(attr.getValue()));
  printer << ">";
}
} // namespace

Attribute PrecisionAttr::parse(AsmParser &parser, Type) {
  return parseEnumAttr<PrecisionAttr>(parser);
}
void PrecisionAttr::print(AsmPrinter &printer) const { printEnumAttr(*this, printer); }
Attribute CheckpointingAttr::parse(AsmParser &parser, Type) {
  return parseEnumAttr<CheckpointingAttr>(parser);
}
void CheckpointingAttr::print(AsmPrinter &printer) const { printEnumAttr(*this, printer); }
Attribute OffloadAttr::parse(AsmParser &parser, Type) {
  return parseEnumAttr<OffloadAttr>(parser);
}
void OffloadAttr::print(AsmPrinter &printer) const { printEnumAttr(*this, printer); }
