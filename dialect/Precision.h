//===- Precision.h - what an op's precision rule may ask of the pass -*- C++ -*-===//
//
// tg-mixed-precision hands a PrecisionRewriter to each forward op's
// PrecisionOpInterface::applyPrecision (dialect/TgPrecision.cpp holds the rules).
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_DIALECT_PRECISION_H
#define TGC_DIALECT_PRECISION_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"

namespace mlir::tg {

/// The policy's types and the edits a rule may make.
class PrecisionRewriter {
public:
  virtual ~PrecisionRewriter() = default;
  /// Compute type of the policy: bf16 (bf16-mixed, bf16), f16 (fp16-mixed), f32 (fp32).
  virtual Type low() const = 0;
  /// Type of the precision-sensitive ops: f32 in the mixed policies, bf16 in pure bf16.
  virtual Type wide() const = 0;
  /// `v` as element type `t`: itself, an existing cast, or a new tg.cast placed before
  /// `at` (shared per (value, type), so each weight is cast once per step).
  virtual Value as(Value v, Type t, Operation *at) = 0;
  /// Operand `i` of `op` as element type `t` (a cast before `op` when needed).
  void setOperand(Operation *op, unsigned i, Type t) {
    op->setOperand(i, as(op->getOperand(i), t, op));
  }
  /// Result `i` of `op` retyped to element type `t` (same shape).
  static void setResult(Operation *op, unsigned i, Type t);
  /// Every float operand and every result of `op` to `t`.
  void all(Operation *op, Type t);
  /// The element type of `v`, and the wider of two float types (f32 > bf16 = f16).
  static Type elementType(Value v);
  static Type wider(Type a, Type b);
};

} // namespace mlir::tg

#endif
