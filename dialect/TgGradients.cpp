//===- TgGradients.cpp - GradientOpInterface of every differentiable op ------===//
//
// Each op builds its own adjoint (reverse-mode derivative). Null result gradients
// mean "does not reach the loss"; null operand gradients mean "none".
//
//===----------------------------------------------------------------------------===//
#include "dialect/TgDialect.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

RankedTensorType rt(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Builds tg.matmul with its result type inferred from the operands.
Value buildMatmul(OpBuilder &b, Location loc, Value a, Value bb, bool ta, bool tb,
                  float alpha) {
  auto at = rt(a), bt = rt(bb);
  int64_t ar = at.getRank(), br = bt.getRank();
  int64_t m = ta ? at.getDimSize(ar - 1) : at.getDimSize(ar - 2);
  int64_t n = tb ? bt.getDimSize(br - 2) : bt.getDimSize(br - 1);
  SmallVector<int64_t> shape(at.getShape().drop_back(2));
  shape.push_back(m);
  shape.push_back(n);
  auto type = RankedTensorType::get(shape, at.getElementType());
  return b.create<MatmulOp>(loc, type, a, bb, b.getBoolAttr(ta), b.getBoolAttr(tb),
                            b.getF32FloatAttr(alpha));
}

/// Collapses all leading dims: [d0, ..., dn-2, dn-1] -> [d0*...*dn-2, dn-1].
Value flatten2d(OpBuilder &b, Location loc, Value v) {
  auto t = rt(v);
  int64_t cols = t.getShape().back();
  auto type = RankedTensorType::get({t.getNumElements() / cols, cols}, t.getElementType());
  return b.create<ReshapeOp>(loc, type, v);
}

Value zerosLike(OpBuilder &b, Location loc, Value like) {
  return b.create<FillOp>(loc, like.getType(), b.getF32FloatAttr(0.0f), UnitAttr());
}

} // namespace

SmallVector<Value> EmbeddingOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value()};
  Value dt = b.create<EmbeddingGradOp>(getLoc(), getTable().getType(), getIds(), g[0]);
  return {dt, Value()};
}

SmallVector<Value> PositionalEmbeddingOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value()};
  Value dw = b.create<PositionalEmbeddingGradOp>(getLoc(), getWpe().getType(), g[0]);
  return {g[0], dw};
}

SmallVector<Value> AttentionQKVOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()}; // only lse reaches the loss: impossible for attention's users
  Value d = b.create<AttentionQKVGradOp>(getLoc(), getQkv().getType(), getQkv(), getOut(),
                                         getLse(), g[0], getHeadsAttr(), getCausalAttr(),
                                         getWindowAttr(), getScaleAttr(), getKvHeadsAttr());
  return {d};
}

SmallVector<Value> CastOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  return {b.create<CastOp>(getLoc(), getX().getType(), g[0]).getResult()};
}

SmallVector<Value> AddOp::buildGradient(OpBuilder &, ValueRange g) { return {g[0], g[0]}; }

SmallVector<Value> LayerNormOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value(), Value()};
  auto grad = b.create<LayerNormGradOp>(getLoc(), getX().getType(), getGamma().getType(),
                                        getBeta().getType(), g[0], getX(), getGamma(),
                                        getMean(), getRstd());
  return {grad.getDx(), grad.getDgamma(), grad.getDbeta()};
}

SmallVector<Value> MatmulOp::buildGradient(OpBuilder &b, ValueRange g) {
  Value dc = g[0];
  if (!dc)
    return {Value(), Value()};
  Location loc = getLoc();
  bool ta = getTransposeA(), tb = getTransposeB();
  float alpha = getAlpha().convertToFloat();
  Value a = getA(), bb = getB();
  bool broadcastB = rt(bb).getRank() == 2 && rt(a).getRank() > 2;
  if (broadcastB && ta) {
    emitOpError() << "gradient of a transposed batched lhs with a shared rhs is not supported";
    return {};
  }
  // dA = alpha * dC op(B)^T   (transposed back when A was transposed)
  Value da = ta ? buildMatmul(b, loc, bb, dc, tb, true, alpha)
                : buildMatmul(b, loc, dc, bb, false, !tb, alpha);
  // dB = alpha * op(A)^T dC   (summed over the batch when B is shared)
  Value db;
  if (broadcastB) {
    Value a2 = flatten2d(b, loc, a), dc2 = flatten2d(b, loc, dc);
    db = tb ? buildMatmul(b, loc, dc2, a2, true, false, alpha)
            : buildMatmul(b, loc, a2, dc2, true, false, alpha);
  } else {
    db = tb ? buildMatmul(b, loc, dc, a, true, ta, alpha)
            : buildMatmul(b, loc, a, dc, !ta, false, alpha);
  }
  return {da, db};
}

SmallVector<Value> BiasAddOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value()};
  Value db = b.create<BiasGradOp>(getLoc(), getBias().getType(), g[0]);
  return {g[0], db};
}

SmallVector<Value> GeluOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  return {b.create<GeluGradOp>(getLoc(), getX().getType(), getX(), g[0]).getResult()};
}

SmallVector<Value> DropoutOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  // Same seed, step and micro-batch: the mask is regenerated, so dx = mask * dy / (1-rate).
  return {b.create<DropoutOp>(getLoc(), g[0].getType(), g[0], getRateAttr(), getSeedAttr())
              .getResult()};
}

SmallVector<Value> ReshapeOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  return {b.create<ReshapeOp>(getLoc(), getX().getType(), g[0]).getResult()};
}

SmallVector<Value> TransposeOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return {b.create<TransposeOp>(getLoc(), getX().getType(), g[0],
                                b.getDenseI64ArrayAttr(inverse))
              .getResult()};
}

SmallVector<Value> SplitOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (llvm::all_of(g, [](Value v) { return !v; }))
    return {Value()};
  SmallVector<Value> parts;
  for (auto [i, r] : llvm::enumerate(getResults()))
    parts.push_back(g[i] ? g[i] : zerosLike(b, getLoc(), r));
  return {b.create<ConcatOp>(getLoc(), getX().getType(), parts, getAxisAttr()).getResult()};
}

SmallVector<Value> ConcatOp::buildGradient(OpBuilder &b, ValueRange g) {
  SmallVector<Value> out(getInputs().size());
  if (!g[0])
    return out;
  auto split = b.create<SplitOp>(getLoc(), getInputs().getTypes(), g[0], getAxisAttr());
  for (auto [i, r] : llvm::enumerate(split.getResults()))
    out[i] = r;
  return out;
}

SmallVector<Value> CausalMaskOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  // Masked entries were constants: their gradient is zero.
  return {b.create<CausalMaskOp>(getLoc(), g[0].getType(), g[0], getWindowAttr(),
                                 b.getF32FloatAttr(0.0f))
              .getResult()};
}

SmallVector<Value> SoftmaxOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  return {b.create<SoftmaxGradOp>(getLoc(), getX().getType(), getResult(), g[0]).getResult()};
}

SmallVector<Value> CrossEntropyOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value()};
  Value dl = b.create<CrossEntropyGradOp>(getLoc(), getLogits().getType(), getLogits(),
                                          getTargets(), g[0], getIgnoreIndexAttr());
  return {dl, Value()};
}

SmallVector<Value> AttentionOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value(), Value()};
  auto grad = b.create<AttentionGradOp>(getLoc(), getQ().getType(), getK().getType(),
                                        getV().getType(), getQ(), getK(), getV(), getOut(),
                                        getLse(), g[0], getCausalAttr(), getWindowAttr(),
                                        getScaleAttr());
  return {grad.getDq(), grad.getDk(), grad.getDv()};
}

SmallVector<Value> RmsNormOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value(), Value()};
  auto grad = b.create<RmsNormGradOp>(getLoc(), getX().getType(), getGamma().getType(), g[0],
                                      getX(), getGamma(), getRstd());
  return {grad.getDx(), grad.getDgamma()};
}

SmallVector<Value> RopeOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  // The rotation is orthogonal: its adjoint rotates back (the same op, inverse flipped).
  return {b.create<RopeOp>(getLoc(), g[0].getType(), g[0], getHeadsAttr(), getKvHeadsAttr(),
                           getThetaAttr(), getScalingAttr(), b.getBoolAttr(!getInverse()))
              .getResult()};
}

SmallVector<Value> SwigluOp::buildGradient(OpBuilder &b, ValueRange g) {
  if (!g[0])
    return {Value()};
  return {b.create<SwigluGradOp>(getLoc(), getX().getType(), getX(), g[0]).getResult()};
}
