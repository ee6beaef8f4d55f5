//===- TgDialect.cpp - tg dialect registration ------------------------------===//
#include "dialect/TgDialect.h"

using namespace mlir;
using namespace mlir::tg;

#include "dialect/TgOpsDialect.cpp.inc"
#include "dialect/TgInterfaces.cpp.inc"

void TgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/TgOps.cpp.inc"
      >();
}
