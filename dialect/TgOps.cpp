//===- TgOps.cpp - tg op verifiers ------------------------------------------===//
//
// Every op checks ranks, static shapes and element types of its operands and
// results; diagnostics name the operand and both shapes.
//
//===----------------------------------------------------------------------------===//
#include "dialect/TgDialect.h"
#include "dialect/ElementBytes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

RankedTensorType rt(Value v) { return cast<RankedTensorType>(v.getType()); }

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(shape, os, "x");
  os << "]";
  return s;
}

/// Every tg tensor must have a static shape: the memory planner sizes buffers from it.
LogicalResult verifyStatic(Operation *op) {
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && !t.hasStaticShape())
      return op->emitOpError() << "operand #" << i << " must have a static shape";
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && !t.hasStaticShape())
      return op->emitOpError() << "result #" << i << " must have a static shape";
  return success();
}

/// verifyStatic(op), then `x` of rank >= 1 (the ops that work along the last dimension: layer
/// and RMS norm and their gradients, bias add): x's type. Failure after an error otherwise.
FailureOr<RankedTensorType> featureInput(Operation *op, Value x) {
  if (failed(verifyStatic(op)))
    return failure();
  RankedTensorType t = rt(x);
  if (t.getRank() < 1) {
    op->emitOpError() << "x must have rank >= 1";
    return failure();
  }
  return t;
}

LogicalResult expectShape(Operation *op, StringRef what, Value v, ArrayRef<int64_t> shape) {
  if (rt(v).getShape() != shape)
    return op->emitOpError() << what << " must have shape " << shapeStr(shape) << ", got "
                             << shapeStr(rt(v).getShape());
  return success();
}

LogicalResult expectSameType(Operation *op, StringRef what, Value v, Type expected) {
  if (v.getType() != expected)
    return op->emitOpError() << what << " must have type " << expected << ", got "
                             << v.getType();
  return success();
}

LogicalResult expectRank(Operation *op, StringRef what, Value v, int64_t rank) {
  if (rt(v).getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got rank "
                             << rt(v).getRank();
  return success();
}

LogicalResult expectElementType(Operation *op, StringRef what, Value v, Type elt) {
  if (rt(v).getElementType() != elt)
    return op->emitOpError() << what << " must have element type " << elt << ", got "
                             << rt(v).getElementType();
  return success();
}

SmallVector<int64_t> dropLast(ArrayRef<int64_t> s) { return SmallVector<int64_t>(s.drop_back()); }

/// An operand that names a parameter must be a function argument.
LogicalResult expectParam(Operation *op, StringRef what, Value v) {
  if (!isa<BlockArgument>(v))
    return op->emitOpError() << what << " must be a function argument (a parameter)";
  return success();
}

} // namespace

#define GET_OP_CLASSES
#include "dialect/TgOps.cpp.inc"

//===------------------------------------------------------------- forward --===//

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyStatic(*this)) || failed(expectRank(*this, "table", getTable(), 2)))
    return failure();
  SmallVector<int64_t> shape(rt(getIds()).getShape());
  shape.push_back(rt(getTable()).getDimSize(1));
  if (failed(expectShape(*this, "result", getResult(), shape)))
    return failure();
  return expectElementType(*this, "result", getResult(), rt(getTable()).getElementType());
}

LogicalResult PositionalEmbeddingOp::verify() {
  if (failed(verifyStatic(*this)) || failed(expectRank(*this, "x", getX(), 3)) ||
      failed(expectRank(*this, "wpe", getWpe(), 2)))
    return failure();
  auto x = rt(getX()), wpe = rt(getWpe());
  if (x.getDimSize(2) != wpe.getDimSize(1))
    return emitOpError() << "wpe width " << wpe.getDimSize(1) << " must equal d_model "
                         << x.getDimSize(2);
  if (x.getDimSize(1) > wpe.getDimSize(0))
    return emitOpError() << "sequence length " << x.getDimSize(1)
                         << " exceeds the positional table's " << wpe.getDimSize(0) << " rows";
  if (x.getElementType() != wpe.getElementType())
    return emitOpError() << "x and wpe must have the same element type";
  return expectSameType(*this, "result", getResult(), x);
}

LogicalResult AddOp::verify() {
  if (failed(verifyStatic(*this)) ||
      failed(expectSameType(*this, "rhs", getRhs(), getLhs().getType())))
    return failure();
  return expectSameType(*this, "result", getResult(), getLhs().getType());
}

LogicalResult LayerNormOp::verify() {
  FailureOr<RankedTensorType> xt = featureInput(*this, getX());
  if (failed(xt))
    return failure();
  RankedTensorType x = *xt;
  int64_t d = x.getShape().back();
  if (failed(expectShape(*this, "gamma", getGamma(), {d})) ||
      failed(expectShape(*this, "beta", getBeta(), {d})) ||
      failed(expectShape(*this, "y", getY(), x.getShape())) ||
      failed(expectElementType(*this, "beta", getBeta(), rt(getGamma()).getElementType())) ||
      failed(expectShape(*this, "mean", getMean(), dropLast(x.getShape()))) ||
      failed(expectShape(*this, "rstd", getRstd(), dropLast(x.getShape()))))
    return failure();
  if (getEps().convertToFloat() <= 0.0f)
    return emitOpError() << "eps must be positive";
  return success();
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto a = rt(getA()), b = rt(getB());
  if (a.getRank() < 2)
    return emitOpError() << "a must have rank >= 2, got rank " << a.getRank();
  if (b.getRank() != 2 && b.getRank() != a.getRank())
    return emitOpError() << "b must have rank 2 or the rank of a (" << a.getRank()
                         << "), got rank " << b.getRank();
  if (a.getElementType() != b.getElementType())
    return emitOpError() << "a and b must have the same element type";
  int64_t ar = a.getRank(), br = b.getRank();
  int64_t m = getTransposeA() ? a.getDimSize(ar - 1) : a.getDimSize(ar - 2);
  int64_t ka = getTransposeA() ? a.getDimSize(ar - 2) : a.getDimSize(ar - 1);
  int64_t kb = getTransposeB() ? b.getDimSize(br - 1) : b.getDimSize(br - 2);
  int64_t n = getTransposeB() ? b.getDimSize(br - 2) : b.getDimSize(br - 1);
  if (ka != kb)
    return emitOpError() << "contraction dims differ: a has " << ka << ", b has " << kb;
  if (br == ar && a.getShape().drop_back(2) != b.getShape().drop_back(2))
    return emitOpError() << "batch dims differ: a " << shapeStr(a.getShape().drop_back(2))
                         << ", b " << shapeStr(b.getShape().drop_back(2));
  SmallVector<int64_t> shape(a.getShape().drop_back(2));
  shape.push_back(m);
  shape.push_back(n);
  if (failed(expectShape(*this, "result", getResult(), shape)))
    return failure();
  return expectElementType(*this, "result", getResult(), a.getElementType());
}

LogicalResult BiasAddOp::verify() {
  FailureOr<RankedTensorType> xt = featureInput(*this, getX());
  if (failed(xt))
    return failure();
  RankedTensorType x = *xt;
  if (failed(expectShape(*this, "bias", getBias(), {x.getShape().back()})) ||
      failed(expectElementType(*this, "bias", getBias(), x.getElementType())))
    return failure();
  return expectSameType(*this, "result", getResult(), x);
}

LogicalResult GeluOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return expectSameType(*this, "result", getResult(), getX().getType());
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  float rate = getRate().convertToFloat();
  if (!(rate >= 0.0f && rate < 1.0f))
    return emitOpError() << "rate must be in [0, 1), got " << rate;
  return expectSameType(*this, "result", getResult(), getX().getType());
}

LogicalResult ReshapeOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto x = rt(getX()), r = rt(getResult());
  if (x.getNumElements() != r.getNumElements())
    return emitOpError() << "cannot reshape " << shapeStr(x.getShape()) << " ("
                         << x.getNumElements() << " elements) to " << shapeStr(r.getShape())
                         << " (" << r.getNumElements() << " elements)";
  return expectElementType(*this, "result", getResult(), x.getElementType());
}

LogicalResult TransposeOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto x = rt(getX());
  ArrayRef<int64_t> perm = getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return emitOpError() << "perm has " << perm.size() << " entries for rank " << x.getRank();
  if (x.getRank() > 4)
    return emitOpError() << "supports rank <= 4, got rank " << x.getRank();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)perm.size() || seen[p])
      return emitOpError() << "perm must be a permutation of 0.." << perm.size() - 1;
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  if (failed(expectShape(*this, "result", getResult(), shape)))
    return failure();
  return expectElementType(*this, "result", getResult(), x.getElementType());
}

/// Shared by split and concat: `whole` is cut along `axis` into `parts`.
static LogicalResult verifyPieces(Operation *op, Value whole, ValueRange parts, int64_t axis,
                                  StringRef partName) {
  auto w = rt(whole);
  if (axis < 0 || axis >= w.getRank())
    return op->emitOpError() << "axis " << axis << " out of range for rank " << w.getRank();
  if (parts.empty())
    return op->emitOpError() << "needs at least one " << partName;
  int64_t total = 0;
  for (auto [i, p] : llvm::enumerate(parts)) {
    auto t = rt(p);
    if (t.getRank() != w.getRank() || t.getElementType() != w.getElementType())
      return op->emitOpError() << partName << " #" << i << " must have rank " << w.getRank()
                               << " and element type " << w.getElementType();
    for (int64_t d = 0; d < w.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != w.getDimSize(d))
        return op->emitOpError() << partName << " #" << i << " differs from "
                                 << shapeStr(w.getShape()) << " outside axis " << axis;
    total += t.getDimSize(axis);
  }
  if (total != w.getDimSize(axis))
    return op->emitOpError() << "sizes along axis " << axis << " add up to " << total
                             << ", expected " << w.getDimSize(axis);
  return success();
}

LogicalResult SplitOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return verifyPieces(*this, getX(), getResults(), (int64_t)getAxis(), "result");
}

LogicalResult ConcatOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return verifyPieces(*this, getResult(), getInputs(), (int64_t)getAxis(), "input");
}

LogicalResult CausalMaskOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  if (rt(getX()).getRank() < 2)
    return emitOpError() << "x must have rank >= 2 ([..., Tq, Tk])";
  if ((int64_t)getWindow() < 0)
    return emitOpError() << "window must be >= 0, got " << (int64_t)getWindow();
  return expectSameType(*this, "result", getResult(), getX().getType());
}

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return expectSameType(*this, "result", getResult(), getX().getType());
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto l = rt(getLogits());
  if (l.getRank() < 2)
    return emitOpError() << "logits must have rank >= 2 ([..., V])";
  if (failed(expectShape(*this, "targets", getTargets(), dropLast(l.getShape()))) ||
      failed(expectShape(*this, "loss", getLoss(), {})))
    return failure();
  if ((int64_t)getIgnoreIndex() < -1 || (int64_t)getIgnoreIndex() >= l.getShape().back())
    return emitOpError() << "ignore_index must be -1 or a token id, got " << (int64_t)getIgnoreIndex();
  return success();
}

/// Shared by attention and its gradient: q, k, v [B, H, T, hd] of one type.
static LogicalResult verifyQKV(Operation *op, Value q, Value k, Value v, int64_t window) {
  if (failed(expectRank(op, "q", q, 4)))
    return failure();
  // Grouped-query attention: k and v may have fewer heads (dim 1), a divisor of q's.
  auto qt = rt(q), kt = dyn_cast<RankedTensorType>(k.getType());
  bool gqa = kt && kt.getRank() == 4 && kt.getElementType() == qt.getElementType() &&
             kt.getDimSize(0) == qt.getDimSize(0) && kt.getDimSize(2) == qt.getDimSize(2) &&
             kt.getDimSize(3) == qt.getDimSize(3) && kt.getDimSize(1) > 0 &&
             qt.getDimSize(1) % kt.getDimSize(1) == 0;
  if (failed(expectSameType(op, "k", k, gqa ? kt : q.getType())) ||
      failed(expectSameType(op, "v", v, k.getType())))
    return failure();
  if (window < 0)
    return op->emitOpError() << "window must be >= 0, got " << window;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyStatic(*this)) ||
      failed(verifyQKV(*this, getQ(), getK(), getV(), (int64_t)getWindow())) ||
      failed(expectSameType(*this, "out", getOut(), getQ().getType())))
    return failure();
  if ((int64_t)getWindow() > 0 && !getCausal())
    return emitOpError() << "a sliding window needs causal = true";
  return expectShape(*this, "lse", getLse(), dropLast(rt(getQ()).getShape()));
}

LogicalResult CastOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return expectShape(*this, "result", getResult(), rt(getX()).getShape());
}

/// True when every value of `narrow` is exactly representable in `wide`.
static bool holdsEvery(Type wide, Type narrow) {
  return wide == narrow || (wide.isF32() && (narrow.isBF16() || narrow.isF16()));
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getResult().getType())
    return getX();
  if (auto inner = getX().getDefiningOp<CastOp>())
    if (inner.getX().getType() == getResult().getType() &&
        holdsEvery(rt(inner.getResult()).getElementType(), rt(inner.getX()).getElementType()))
      return inner.getX();
  return {};
}

/// Shared by attention_qkv and its gradient: qkv [B, T, 3 H hd], out [B, T, H hd],
/// lse [B, H, T].
static LogicalResult verifyPacked(Operation *op, Value qkv, Value out, Value lse,
                                  int64_t heads, int64_t window, bool causal,
                                  int64_t kvHeads = 0) {
  if (failed(expectRank(op, "qkv", qkv, 3)))
    return failure();
  auto t = rt(qkv);
  int64_t B = t.getDimSize(0), T = t.getDimSize(1), three = t.getDimSize(2);
  if (heads <= 0)
    return op->emitOpError() << "heads must be > 0, got " << heads;
  if (kvHeads < 0 || (kvHeads > 0 && heads % kvHeads != 0))
    return op->emitOpError() << "kv_heads " << kvHeads << " must divide heads " << heads;
  // [B, T, (H + 2 Hkv) hd]; multi-head (kv_heads 0 or H) is [B, T, 3 H hd].
  const bool grouped = kvHeads > 0 && kvHeads != heads;
  const int64_t slots = heads + 2 * (grouped ? kvHeads : heads);
  if (three % slots != 0) {
    if (grouped)
      return op->emitOpError() << "qkv's last dim " << three << " must be (heads " << heads
                               << " + 2 x kv_heads " << kvHeads << ") x head dim";
    return op->emitOpError() << "qkv's last dim " << three << " must be 3 x heads (" << heads
                             << ") x head dim";
  }
  if (window < 0)
    return op->emitOpError() << "window must be >= 0, got " << window;
  if (window > 0 && !causal)
    return op->emitOpError() << "a sliding window needs causal = true";
  if (failed(expectShape(op, "out", out, {B, T, three / slots * heads})) ||
      failed(expectElementType(op, "out", out, t.getElementType())))
    return failure();
  return expectShape(op, "lse", lse, {B, heads, T});
}

LogicalResult AttentionQKVOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return verifyPacked(*this, getQkv(), getOut(), getLse(), (int64_t)getHeads(),
                      (int64_t)getWindow(), getCausal(), (int64_t)getKvHeads());
}

LogicalResult RmsNormOp::verify() {
  FailureOr<RankedTensorType> xt = featureInput(*this, getX());
  if (failed(xt))
    return failure();
  RankedTensorType x = *xt;
  int64_t d = x.getShape().back();
  if (failed(expectShape(*this, "gamma", getGamma(), {d})) ||
      failed(expectShape(*this, "y", getY(), x.getShape())) ||
      failed(expectShape(*this, "rstd", getRstd(), dropLast(x.getShape()))))
    return failure();
  if (!(getEps().convertToFloat() > 0))
    return emitOpError() << "eps must be > 0";
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(verifyStatic(*this)) || failed(expectRank(*this, "x", getX(), 3)) ||
      failed(expectSameType(*this, "result", getResult(), getX().getType())))
    return failure();
  int64_t heads = getHeads(), kv = getKvHeads(), w = rt(getX()).getDimSize(2);
  if (heads <= 0 || kv <= 0 || heads % kv != 0)
    return emitOpError() << "kv_heads " << kv << " must be > 0 and divide heads " << heads;
  int64_t slots = heads + 2 * kv;
  if (w % slots != 0 || (w / slots) % 2 != 0)
    return emitOpError() << "x's last dim " << w << " must be (heads " << heads
                         << " + 2 x kv_heads " << kv << ") x an even head dim";
  if (!(getTheta().convertToFloat() > 1.0f))
    return emitOpError() << "theta must be > 1";
  if (getScaling().size() != 4)
    return emitOpError() << "scaling must have 4 values (factor, low_freq_factor, "
                            "high_freq_factor, original_context), got "
                         << getScaling().size();
  return success();
}

/// SwiGLU's x [..., 2F] (gate | up): the shape of its output [..., F] in `half`.
static LogicalResult swigluHalf(Operation *op, Value x, SmallVector<int64_t> &half) {
  if (failed(verifyStatic(op)))
    return failure();
  auto t = rt(x);
  if (t.getRank() < 1 || t.getShape().back() % 2 != 0)
    return op->emitOpError() << "x's last dim must be even (gate | up)";
  half.assign(t.getShape().begin(), t.getShape().end());
  half.back() /= 2;
  return success();
}

LogicalResult SwigluOp::verify() {
  SmallVector<int64_t> shape;
  if (failed(swigluHalf(*this, getX(), shape)) ||
      failed(expectShape(*this, "result", getResult(), shape)))
    return failure();
  return expectElementType(*this, "result", getResult(), rt(getX()).getElementType());
}

//===------------------------------------------------------------ backward --===//

LogicalResult FillOp::verify() { return verifyStatic(*this); }

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyStatic(*this)) || failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  SmallVector<int64_t> shape(rt(getIds()).getShape());
  shape.push_back(rt(getResult()).getDimSize(1));
  return expectShape(*this, "dout", getDout(), shape);
}

LogicalResult PositionalEmbeddingGradOp::verify() {
  if (failed(verifyStatic(*this)) || failed(expectRank(*this, "dout", getDout(), 3)) ||
      failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  auto d = rt(getDout()), r = rt(getResult());
  if (r.getDimSize(1) != d.getDimSize(2) || r.getDimSize(0) < d.getDimSize(1))
    return emitOpError() << "result " << shapeStr(r.getShape()) << " does not fit dout "
                         << shapeStr(d.getShape());
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  FailureOr<RankedTensorType> xt = featureInput(*this, getX());
  if (failed(xt))
    return failure();
  RankedTensorType x = *xt;
  return failure(failed(expectShape(*this, "dy", getDy(), x.getShape())) ||
                 failed(expectShape(*this, "gamma", getGamma(), {x.getShape().back()})) ||
                 failed(expectShape(*this, "mean", getMean(), dropLast(x.getShape()))) ||
                 failed(expectShape(*this, "rstd", getRstd(), dropLast(x.getShape()))) ||
                 failed(expectSameType(*this, "dx", getDx(), x)) ||
                 failed(expectSameType(*this, "dgamma", getDgamma(), getGamma().getType())) ||
                 failed(expectSameType(*this, "dbeta", getDbeta(), getGamma().getType())));
}

LogicalResult BiasGradOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto dy = rt(getDy());
  if (dy.getRank() < 1)
    return emitOpError() << "dy must have rank >= 1";
  return expectShape(*this, "result", getResult(), {dy.getShape().back()});
}

LogicalResult GeluGradOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return failure(failed(expectSameType(*this, "dy", getDy(), getX().getType())) ||
                 failed(expectSameType(*this, "result", getResult(), getX().getType())));
}

LogicalResult SoftmaxGradOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  return failure(failed(expectSameType(*this, "dy", getDy(), getY().getType())) ||
                 failed(expectSameType(*this, "result", getResult(), getY().getType())));
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto l = rt(getLogits());
  if (l.getRank() < 2)
    return emitOpError() << "logits must have rank >= 2 ([..., V])";
  return failure(failed(expectShape(*this, "targets", getTargets(), dropLast(l.getShape()))) ||
                 failed(expectShape(*this, "dloss", getDloss(), {})) ||
                 failed(expectSameType(*this, "result", getResult(), l)));
}

LogicalResult LinearCrossEntropyOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto x = rt(getX()), w = rt(getW());
  if (x.getRank() < 2)
    return emitOpError() << "x must have rank >= 2 ([..., D])";
  if (w.getRank() != 2 || w.getDimSize(1) != x.getShape().back())
    return emitOpError() << "w must be [V, " << x.getShape().back() << "], got "
                         << shapeStr(w.getShape());
  if (w.getElementType() != x.getElementType())
    return emitOpError() << "w must have x's element type";
  int64_t rows = 1;
  for (int64_t d : dropLast(x.getShape()))
    rows *= d;
  int64_t chunk = (int64_t)getChunkRows();
  if (chunk < 1 || chunk > rows)
    return emitOpError() << "chunk_rows must be in [1, " << rows << "], got " << chunk;
  auto dw = rt(getDw());
  if (dw.getShape() != w.getShape() ||
      (dw.getElementType() != w.getElementType() && !dw.getElementType().isF32()))
    return emitOpError() << "dw must have w's shape and w's element type or f32";
  std::optional<int64_t> es = elementBytes(x.getElementType());
  if (!es) // Tg_FloatTensor admits none such; checked, not assumed
    return emitOpError() << "x's element type " << x.getElementType()
                         << " has no runtime element size";
  int64_t need = scratchBytes(rows, w.getDimSize(0), chunk, *es);
  auto sc = rt(getScratch());
  if (sc.getRank() != 1 || sc.getDimSize(0) * 4 < need)
    return emitOpError() << "scratch must be f32 [" << (need + 3) / 4 << "] (" << need
                         << " bytes), got " << shapeStr(sc.getShape());
  return failure(failed(expectShape(*this, "targets", getTargets(), dropLast(x.getShape()))) ||
                 failed(expectShape(*this, "dloss", getDloss(), {})) ||
                 failed(expectShape(*this, "loss", getLoss(), {})) ||
                 failed(expectSameType(*this, "dx", getDx(), x)));
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyStatic(*this)) ||
      failed(verifyQKV(*this, getQ(), getK(), getV(), (int64_t)getWindow())))
    return failure();
  Type t = getQ().getType();
  return failure(failed(expectSameType(*this, "out", getOut(), t)) ||
                 failed(expectSameType(*this, "dout", getDout(), t)) ||
                 failed(expectShape(*this, "lse", getLse(), dropLast(rt(getQ()).getShape()))) ||
                 failed(expectSameType(*this, "dq", getDq(), t)) ||
                 failed(expectSameType(*this, "dk", getDk(), getK().getType())) ||
                 failed(expectSameType(*this, "dv", getDv(), getV().getType())));
}

LogicalResult AttentionQKVGradOp::verify() {
  if (failed(verifyStatic(*this)) ||
      failed(verifyPacked(*this, getQkv(), getOut(), getLse(), (int64_t)getHeads(),
                          (int64_t)getWindow(), getCausal(), (int64_t)getKvHeads())) ||
      failed(expectSameType(*this, "dout", getDout(), getOut().getType())))
    return failure();
  return expectSameType(*this, "dqkv", getDqkv(), getQkv().getType());
}

LogicalResult RmsNormGradOp::verify() {
  FailureOr<RankedTensorType> xt = featureInput(*this, getX());
  if (failed(xt))
    return failure();
  RankedTensorType x = *xt;
  int64_t d = x.getShape().back();
  return failure(failed(expectShape(*this, "dy", getDy(), x.getShape())) ||
                 failed(expectShape(*this, "gamma", getGamma(), {d})) ||
                 failed(expectShape(*this, "rstd", getRstd(), dropLast(x.getShape()))) ||
                 failed(expectSameType(*this, "dx", getDx(), getX().getType())) ||
                 failed(expectSameType(*this, "dgamma", getDgamma(), getGamma().getType())));
}

LogicalResult SwigluGradOp::verify() {
  SmallVector<int64_t> shape;
  if (failed(swigluHalf(*this, getX(), shape)))
    return failure();
  return failure(failed(expectShape(*this, "dy", getDy(), shape)) ||
                 failed(expectSameType(*this, "result", getResult(), getX().getType())));
}

/// The linear layers tg-fuse makes (matmul_residual, matmul_bias, matmul_bias_gelu): a
/// [..., M, K] and b [K, N] (or [N, K] with transpose_b) of one element type; `shape` is set
/// to the product's shape [..., M, N]. Errors name the operand.
static LogicalResult verifyLinear(Operation *op, Value aV, Value bV, bool transposeB,
                                  SmallVectorImpl<int64_t> &shape) {
  if (failed(verifyStatic(op)) || failed(expectRank(op, "b", bV, 2)))
    return failure();
  auto a = rt(aV), b = rt(bV);
  if (a.getRank() < 2)
    return op->emitOpError() << "a must have rank >= 2, got rank " << a.getRank();
  if (a.getElementType() != b.getElementType())
    return op->emitOpError() << "a and b must have one element type, got "
                             << a.getElementType() << " and " << b.getElementType();
  int64_t k = b.getDimSize(transposeB ? 1 : 0), n = b.getDimSize(transposeB ? 0 : 1);
  if (a.getShape().back() != k)
    return op->emitOpError() << "a's last dim " << a.getShape().back() << " must equal b's K "
                             << k;
  shape.assign(a.getShape().begin(), a.getShape().end());
  shape.back() = n;
  return success();
}

/// A bias operand: [N] of `elem` (the element type the op's epilogue reads it in).
static LogicalResult expectBias(Operation *op, Value bias, int64_t n, Type elem,
                                StringRef what = "bias") {
  return expectSameType(op, what, bias, RankedTensorType::get({n}, elem));
}

LogicalResult MatmulResidualOp::verify() {
  SmallVector<int64_t> shape;
  if (failed(verifyLinear(*this, getA(), getB(), getTransposeB(), shape)) ||
      failed(expectSameType(*this, "out", getOut(), getRes().getType())) ||
      failed(expectShape(*this, "res", getRes(), shape)))
    return failure();
  // The epilogue adds the bias in f32 (tgrt_matmul_bias_residual reads an f32 bias).
  if (Value bias = getBias())
    return expectBias(*this, bias, shape.back(), Float32Type::get(getContext()));
  return success();
}

LogicalResult MatmulBiasOp::verify() {
  SmallVector<int64_t> shape;
  if (failed(verifyLinear(*this, getA(), getB(), getTransposeB(), shape)) ||
      failed(expectBias(*this, getBias(), shape.back(), rt(getA()).getElementType())))
    return failure();
  return expectSameType(*this, "out", getOut(),
                    RankedTensorType::get(shape, rt(getA()).getElementType()));
}

LogicalResult AddLayerNormOp::verify() {
  if (failed(verifyStatic(*this)))
    return failure();
  auto a = rt(getA()), b = rt(getB());
  if (a.getRank() < 1)
    return emitOpError() << "a must have rank >= 1";
  if (failed(expectSameType(*this, "sum", getSum(), a)) ||
      failed(expectShape(*this, "b", getB(), a.getShape())))
    return failure();
  // b in a's type, or a narrower branch widened into an f32 stream (exact).
  if (b.getElementType() != a.getElementType() && !a.getElementType().isF32())
    return emitOpError() << "b must have element type " << a.getElementType()
                         << " (a's; a narrower b only into an f32 sum), got "
                         << b.getElementType();
  int64_t d = a.getShape().back();
  if (failed(expectShape(*this, "gamma", getGamma(), {d})) ||
      failed(expectShape(*this, "beta", getBeta(), {d})) ||
      failed(expectElementType(*this, "beta", getBeta(), rt(getGamma()).getElementType())) ||
      failed(expectShape(*this, "y", getY(), a.getShape())) ||
      failed(expectShape(*this, "mean", getMean(), dropLast(a.getShape()))) ||
      failed(expectShape(*this, "rstd", getRstd(), dropLast(a.getShape()))))
    return failure();
  if (getEps().convertToFloat() <= 0.0f)
    return emitOpError() << "eps must be positive";
  return success();
}

LogicalResult MatmulDgeluBgradOp::verify() {
  SmallVector<int64_t> shape;
  if (failed(verifyLinear(*this, getA(), getB(), getTransposeB(), shape)))
    return failure();
  auto want = RankedTensorType::get(shape, rt(getA()).getElementType());
  if (failed(expectSameType(*this, "pre", getPre(), want)) ||
      failed(expectSameType(*this, "dx", getDx(), want)))
    return failure();
  return expectBias(*this, getDb(), shape.back(), rt(getA()).getElementType(), "db");
}

LogicalResult MatmulBiasGeluOp::verify() {
  SmallVector<int64_t> shape;
  if (failed(verifyLinear(*this, getA(), getB(), getTransposeB(), shape)) ||
      failed(expectBias(*this, getBias(), shape.back(), rt(getA()).getElementType())))
    return failure();
  auto want = RankedTensorType::get(shape, rt(getA()).getElementType());
  return failure(failed(expectSameType(*this, "pre", getPre(), want)) ||
                 failed(expectSameType(*this, "out", getOut(), want)));
}

//===----------------------------------------------------------- optimizer --===//

LogicalResult AccumulateGradOp::verify() {
  if (failed(expectParam(*this, "param", getParam())))
    return failure();
  return expectSameType(*this, "grad", getGrad(), getParam().getType());
}

LogicalResult ClipGradNormOp::verify() {
  for (Value p : getParams())
    if (failed(expectParam(*this, "every operand", p)))
      return failure();
  if (getMaxNorm().convertToFloat() < 0.0f)
    return emitOpError() << "max_norm must be >= 0";
  return expectShape(*this, "result", getResult(), {2});
}

LogicalResult AllReduceGradsOp::verify() {
  if (getParams().empty())
    return emitOpError() << "needs at least one parameter";
  if (getRanks() < 2)
    return emitOpError() << "ranks must be >= 2 (one rank has nothing to reduce), got "
                         << getRanks();
  llvm::SmallPtrSet<void *, 16> seen;
  for (auto [i, p] : llvm::enumerate(getParams())) {
    auto arg = dyn_cast<BlockArgument>(p);
    auto fn = arg ? dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()) : nullptr;
    if (!arg || !fn || !fn.getArgAttr(arg.getArgNumber(), kParamNameAttr))
      return emitOpError() << "operand #" << i
                           << " must be a parameter (a function argument with tg.param)";
    if (!seen.insert(p.getAsOpaquePointer()).second)
      return emitOpError() << "operand #" << i << " (parameter "
                           << fn.getArgAttr(arg.getArgNumber(), kParamNameAttr)
                           << ") is given twice";
  }
  return success();
}

LogicalResult ReduceScatterGradOp::verify() {
  if (failed(expectParam(*this, "param", getParam())))
    return failure();
  if (getRanks() < 2)
    return emitOpError() << "ranks must be >= 2 (one rank has nothing to scatter), got "
                         << getRanks();
  return expectSameType(*this, "grad", getGrad(), getParam().getType());
}

LogicalResult GatherParamOp::verify() {
  if (getRanks() < 2)
    return emitOpError() << "ranks must be >= 2 (one rank holds every parameter whole), got "
                         << getRanks();
  Value src = getSource();
  if (auto cast = src.getDefiningOp<CastOp>()) {
    if (!cast->hasAttr(kWorkingCopyAttr))
      return emitOpError() << "source must be a parameter or its working copy (a tg.cast "
                              "marked tg.working_copy); this tg.cast is not marked";
    src = cast.getX();
  }
  if (failed(expectParam(*this, "source", src)))
    return failure();
  return expectSameType(*this, "result", getResult(), getSource().getType());
}

LogicalResult AdamWOp::verify() {
  if (failed(expectParam(*this, "param", getParam())) ||
      failed(expectShape(*this, "clip", getClip(), {2})))
    return failure();
  float b1 = getBeta1().convertToFloat(), b2 = getBeta2().convertToFloat();
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
    return emitOpError() << "betas must be in [0, 1)";
  if (!(getEps().convertToFloat() > 0))
    return emitOpError() << "eps must be positive";
  if (getWeightDecay().convertToFloat() < 0)
    return emitOpError() << "weight_decay must be >= 0";
  return success();
}
