//===- TgPrecision.cpp - PrecisionOpInterface of every forward op ------------===//
//
// Each forward op's autocast rule (PyTorch's autocast op lists; Micikevicius et al. 2018,
// "Mixed Precision Training"). `low` is bf16 / f16 (f32 under fp32), `wide` f32 in the
// mixed policies and bf16 in pure bf16:
//   GEMMs and attention     operands cast to low, results low (fp32 accumulation in the
//                           kernels); attention's lse stays f32
//   layer norm, RMSNorm     read x as it is (f32 residual stream) and the parameters as
//                           they are, compute in f32, write y in low; statistics stay f32
//   bias_add, concat        follow their first operand (bias cast to it)
//   gelu, swiglu, rope,
//   dropout, views          follow their operand
//   causal_mask, softmax    wide (naive attention's probabilities in f32)
//   add                     the wider of its operands (residual stream: f32)
//   embeddings              the table's type (f32 master weights in the mixed policies)
//   cross_entropy, cast     as they are (logits read in their low type; loss f32)
// tg-mixed-precision (passes/MixedPrecisionPass.cpp) asks each op; it knows no op.
//
//===----------------------------------------------------------------------------===//
#include "dialect/TgDialect.h"

using namespace mlir;
using namespace mlir::tg;

//===-------------------------------------------------------- the rewriter --===//

Type PrecisionRewriter::elementType(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Bits of precision of a float type, to pick the wider of two.
static unsigned widthRank(Type t) { return t.isF32() ? 3 : t.isBF16() || t.isF16() ? 2 : 0; }

Type PrecisionRewriter::wider(Type a, Type b) { return widthRank(a) >= widthRank(b) ? a : b; }

void PrecisionRewriter::setResult(Operation *op, unsigned i, Type t) {
  Value r = op->getResult(i);
  r.setType(RankedTensorType::get(cast<RankedTensorType>(r.getType()).getShape(), t));
}

void PrecisionRewriter::all(Operation *op, Type t) {
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (isa<FloatType>(elementType(op->getOperand(i))))
      setOperand(op, i, t);
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    setResult(op, i, t);
}

namespace {
using R = PrecisionRewriter;

/// Every result follows operand 0's element type.
LogicalResult followOperand(Operation *op) {
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    R::setResult(op, i, R::elementType(op->getOperand(0)));
  return success();
}
} // namespace

//===------------------------------------------------------------- the rules --===//

LogicalResult MatmulOp::applyPrecision(R &r) {
  r.all(*this, r.low());
  return success();
}

LogicalResult AttentionQKVOp::applyPrecision(R &r) {
  r.setOperand(*this, 0, r.low());
  R::setResult(*this, 0, r.low()); // lse stays f32
  return success();
}

LogicalResult AttentionOp::applyPrecision(R &r) {
  for (unsigned i = 0; i < 3; ++i)
    r.setOperand(*this, i, r.low());
  R::setResult(*this, 0, r.low()); // lse stays f32
  return success();
}

LogicalResult LayerNormOp::applyPrecision(R &r) {
  if (R::elementType(getBeta()) != R::elementType(getGamma()))
    r.setOperand(*this, 2, R::elementType(getGamma()));
  R::setResult(*this, 0, r.low()); // mean, rstd stay f32
  return success();
}

LogicalResult RmsNormOp::applyPrecision(R &r) {
  R::setResult(*this, 0, r.low()); // rstd stays f32
  return success();
}

LogicalResult BiasAddOp::applyPrecision(R &r) {
  // The bias cast goes before the GEMM that makes x, so that the lowering can fuse GEMM +
  // bias (the bias epilogue reads the bias at the GEMM). Only where the bias is already
  // defined there (a parameter, or a value made before the GEMM); otherwise at the bias_add.
  Operation *op = *this;
  Type t = R::elementType(getX());
  Operation *at = getX().getDefiningOp() ? getX().getDefiningOp() : op;
  if (Operation *def = getBias().getDefiningOp();
      def && at != op && (def->getBlock() != at->getBlock() || !def->isBeforeInBlock(at)))
    at = op;
  op->setOperand(1, r.as(getBias(), t, at));
  R::setResult(op, 0, t);
  return success();
}

LogicalResult ConcatOp::applyPrecision(R &r) {
  r.all(*this, R::elementType(getOperation()->getOperand(0)));
  return success();
}

LogicalResult GeluOp::applyPrecision(R &) { return followOperand(*this); }
LogicalResult SwigluOp::applyPrecision(R &) { return followOperand(*this); }
LogicalResult RopeOp::applyPrecision(R &) { return followOperand(*this); }
LogicalResult DropoutOp::applyPrecision(R &) { return followOperand(*this); }
LogicalResult ReshapeOp::applyPrecision(R &) { return followOperand(*this); }
LogicalResult TransposeOp::applyPrecision(R &) { return followOperand(*this); }
LogicalResult SplitOp::applyPrecision(R &) { return followOperand(*this); }

LogicalResult CausalMaskOp::applyPrecision(R &r) {
  r.all(*this, r.wide());
  return success();
}

LogicalResult SoftmaxOp::applyPrecision(R &r) {
  r.all(*this, r.wide());
  return success();
}

LogicalResult AddOp::applyPrecision(R &r) {
  r.all(*this, R::wider(R::elementType(getLhs()), R::elementType(getRhs())));
  return success();
}

LogicalResult EmbeddingOp::applyPrecision(R &) {
  R::setResult(*this, 0, R::elementType(getTable()));
  return success();
}

LogicalResult PositionalEmbeddingOp::applyPrecision(R &r) {
  r.all(*this, R::elementType(getWpe()));
  return success();
}

LogicalResult CrossEntropyOp::applyPrecision(R &) { return success(); }
LogicalResult CastOp::applyPrecision(R &) { return success(); }
