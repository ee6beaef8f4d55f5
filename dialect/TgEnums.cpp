//===- TgEnums.cpp - symbolize / stringify of the tg enums -------------------===//
//
// The generated definitions (dialect/TgEnums.td). LLVM headers only: this object is linked
// into the dialect and, without MLIR, into the spec parser's users (tgc_enums,
// dialect/CMakeLists.txt).
//
//===----------------------------------------------------------------------------===//
#include "dialect/TgEnums.h"

#include "llvm/ADT/StringSwitch.h"

#include "dialect/TgEnums.cpp.inc"
