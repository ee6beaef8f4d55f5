//===- TgDialect.h - the tg dialect -------------------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TGDIALECT_H
#define TGC_DIALECT_TGDIALECT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallVector.h"
#include <cmath>

#include "dialect/TgOpsDialect.h.inc"
#include "dialect/TgInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/TgOps.h.inc"

namespace mlir::tg {
/// Name of the discardable attribute tg-autodiff puts on every op of a training step:
/// "forward", "backward" or "optimizer". The memory report groups peaks by it.
inline constexpr llvm::StringLiteral kPhaseAttr = "tg.phase";
/// Name of the discardable attribute on function arguments naming a parameter.
inline constexpr llvm::StringLiteral kParamNameAttr = "tg.param";
/// Name of the discardable attribute on function arguments marking token inputs
/// ("tokens" or "targets").
inline constexpr llvm::StringLiteral kInputAttr = "tg.input";
} // namespace mlir::tg

#endif
