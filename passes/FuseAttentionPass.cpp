//===- FuseAttentionPass.cpp - naive attention -> tg.attention ---------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

#define DEBUG_TYPE "tg-fuse-attention"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The value is produced by an op of type OpT whose result has exactly one use.
template <typename OpT> OpT singleUseDef(Value v) {
  auto op = v.getDefiningOp<OpT>();
  if (!op || !v.hasOneUse())
    return nullptr;
  return op;
}

bool isRank4(Value v) { return cast<RankedTensorType>(v.getType()).getRank() == 4; }

/// matmul(softmax(causal_mask(matmul(q, k^T) * scale)), v) -> tg.attention
struct FuseNaiveAttention : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv, PatternRewriter &rewriter) const override {
    if (pv.getTransposeA() || pv.getTransposeB() || pv.getAlpha().convertToFloat() != 1.0f)
      return rewriter.notifyMatchFailure(pv, "P.V matmul must be plain");
    auto softmax = singleUseDef<SoftmaxOp>(pv.getA());
    if (!softmax)
      return rewriter.notifyMatchFailure(pv, "lhs is not a single-use softmax");
    auto mask = singleUseDef<CausalMaskOp>(softmax.getX());
    if (!mask || !std::isinf(mask.getMaskedValue().convertToFloat()) ||
        mask.getMaskedValue().convertToFloat() > 0)
      return rewriter.notifyMatchFailure(pv, "softmax input is not a -inf causal mask");
    auto qk = singleUseDef<MatmulOp>(mask.getX());
    if (!qk || qk.getTransposeA() || !qk.getTransposeB())
      return rewriter.notifyMatchFailure(pv, "mask input is not q.k^T");
    Value q = qk.getA(), k = qk.getB(), v = pv.getB();
    if (!isRank4(q) || q.getType() != k.getType() || q.getType() != v.getType())
      return rewriter.notifyMatchFailure(pv, "q, k, v must be [B, H, T, hd] of one type");
    auto qt = cast<RankedTensorType>(q.getType());
    auto lseType = RankedTensorType::get(qt.getShape().drop_back(), rewriter.getF32Type());
    auto attn = rewriter.create<AttentionOp>(
        pv.getLoc(), pv.getType(), lseType, q, k, v, rewriter.getBoolAttr(true),
        mask.getWindowAttr(), qk.getAlphaAttr());
    if (Attribute layer = pv->getAttr(kLayerAttr))
      attn->setAttr(kLayerAttr, layer); // the fused op stays in its layer
    rewriter.replaceOp(pv, attn.getOut());
    return success();
  }
};

/// tg.attention whose q, k, v are the heads split and transposed out of one qkv
/// projection ([B, T, 3D] -> split -> reshape [B, T, H, hd] -> transpose [B, H, T, hd];
/// grouped-query: [B, T, (H + 2 Hkv) hd], k and v with Hkv heads) and
/// whose output is transposed back and flattened to [B, T, D] -> tg.attention_qkv on the
/// qkv itself: the runtime reads and writes through strides, the copies disappear.
struct PackAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool isHeadPerm(TransposeOp t) {
    return t && t.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3};
  }

  LogicalResult matchAndRewrite(AttentionOp at, PatternRewriter &rewriter) const override {
    Value out = at.getOut();
    if (!at.getLse().use_empty() || !out.hasOneUse())
      return rewriter.notifyMatchFailure(at, "out must have one use, lse none");
    auto back = dyn_cast<TransposeOp>(*out.getUsers().begin());
    if (!isHeadPerm(back) || !back.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(at, "out is not transposed back to [B, T, H, hd]");
    auto flat = dyn_cast<ReshapeOp>(*back.getResult().getUsers().begin());
    if (!flat || cast<RankedTensorType>(flat.getType()).getRank() != 3)
      return rewriter.notifyMatchFailure(at, "out is not flattened to [B, T, D]");
    SplitOp split;
    SmallVector<Operation *> chain;
    for (unsigned i = 0; i < 3; ++i) {
      auto t = singleUseDef<TransposeOp>(at->getOperand(i));
      if (!isHeadPerm(t))
        return rewriter.notifyMatchFailure(at, "q/k/v is not a head transpose");
      auto r = singleUseDef<ReshapeOp>(t.getX());
      if (!r)
        return rewriter.notifyMatchFailure(at, "q/k/v is not a reshaped piece");
      auto piece = dyn_cast<OpResult>(r.getX());
      auto s = piece ? dyn_cast<SplitOp>(piece.getOwner()) : SplitOp();
      if (!s || piece.getResultNumber() != i || !piece.hasOneUse() || (split && s != split))
        return rewriter.notifyMatchFailure(at, "q, k, v are not pieces 0, 1, 2 of one split");
      split = s;
      chain.push_back(t);
      chain.push_back(r);
    }
    auto whole = cast<RankedTensorType>(split.getX().getType());
    if (split.getNumResults() != 3 || split.getAxis() != 2 || whole.getRank() != 3)
      return rewriter.notifyMatchFailure(at, "not a 3-way split of [B, T, 3D] along its last axis");
    auto q = cast<RankedTensorType>(at.getQ().getType());
    int64_t heads = q.getDimSize(1);
    int64_t kvHeads = cast<RankedTensorType>(at.getK().getType()).getDimSize(1);
    auto lseType = at.getLse().getType();
    rewriter.setInsertionPoint(flat);
    // kv_heads stays 0 (absent) for multi-head attention: GPT-2's IR is unchanged.
    auto packed = rewriter.create<AttentionQKVOp>(
        at.getLoc(), flat.getType(), lseType, split.getX(), rewriter.getI64IntegerAttr(heads),
        at.getCausalAttr(), at.getWindowAttr(), at.getScaleAttr(),
        rewriter.getI64IntegerAttr(kvHeads == heads ? 0 : kvHeads));
    if (Attribute layer = at->getAttr(kLayerAttr))
      packed->setAttr(kLayerAttr, layer);
    rewriter.replaceOp(flat, packed.getOut());
    rewriter.eraseOp(back);
    rewriter.eraseOp(at);
    for (Operation *op : chain)
      rewriter.eraseOp(op);
    rewriter.eraseOp(split);
    return success();
  }
};

/// Grouped-query attention as the frontend builds it (MLIRGen.cpp, attention): q
/// [B, H, T, hd] viewed as [B, Hkv, G T, hd], scores [B, Hkv, G T, T] viewed as
/// [B, Hkv, G, T, T] for mask and softmax and back, P.V [B, Hkv, G T, hd] viewed as
/// [B, H, T, hd]  ->  tg.attention(q, k, v) with k, v [B, Hkv, T, hd] (read in place by
/// the kernel: query head h uses kv head h / G).
struct FuseGroupedAttention : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp back, PatternRewriter &rewriter) const override {
    auto pv = singleUseDef<MatmulOp>(back.getX());
    if (!pv || pv.getTransposeA() || pv.getTransposeB() ||
        pv.getAlpha().convertToFloat() != 1.0f || !isRank4(back.getResult()))
      return rewriter.notifyMatchFailure(back, "not a view of a plain P.V product");
    auto pview = singleUseDef<ReshapeOp>(pv.getA());
    auto softmax = pview ? singleUseDef<SoftmaxOp>(pview.getX()) : SoftmaxOp();
    auto mask = softmax ? singleUseDef<CausalMaskOp>(softmax.getX()) : CausalMaskOp();
    if (!mask || !std::isinf(mask.getMaskedValue().convertToFloat()) ||
        mask.getMaskedValue().convertToFloat() > 0)
      return rewriter.notifyMatchFailure(back, "P is not a view of softmax(-inf causal mask)");
    auto sview = singleUseDef<ReshapeOp>(mask.getX());
    auto qk = sview ? singleUseDef<MatmulOp>(sview.getX()) : MatmulOp();
    if (!qk || qk.getTransposeA() || !qk.getTransposeB())
      return rewriter.notifyMatchFailure(back, "the scores are not a view of q.k^T");
    auto qview = singleUseDef<ReshapeOp>(qk.getA());
    if (!qview)
      return rewriter.notifyMatchFailure(back, "q is not a grouped view");
    Value q = qview.getX(), k = qk.getB(), v = pv.getB();
    auto qt = cast<RankedTensorType>(q.getType()), kt = cast<RankedTensorType>(k.getType());
    if (!isRank4(q) || q.getType() != back.getType() || k.getType() != v.getType() ||
        !isRank4(k) || kt.getElementType() != qt.getElementType() ||
        kt.getDimSize(0) != qt.getDimSize(0) || kt.getDimSize(2) != qt.getDimSize(2) ||
        kt.getDimSize(3) != qt.getDimSize(3) || qt.getDimSize(1) % kt.getDimSize(1) != 0)
      return rewriter.notifyMatchFailure(back, "q [B, H, T, hd], k and v [B, Hkv, T, hd]");
    // Every view must be the grouping one: q [B, Hkv, G T, hd], scores [B, Hkv, G T, T]
    // seen as [B, Hkv, G, T, T] for mask and softmax, P.V [B, Hkv, G T, hd].
    int64_t B = qt.getDimSize(0), H = qt.getDimSize(1), T = qt.getDimSize(2),
            hd = qt.getDimSize(3), Hkv = kt.getDimSize(1), G = H / Hkv;
    auto shapeIs = [](Value x, ArrayRef<int64_t> s) {
      return cast<RankedTensorType>(x.getType()).getShape() == s;
    };
    if (!shapeIs(qview.getResult(), {B, Hkv, G * T, hd}) ||
        !shapeIs(qk.getResult(), {B, Hkv, G * T, T}) ||
        !shapeIs(sview.getResult(), {B, Hkv, G, T, T}) ||
        !shapeIs(pview.getResult(), {B, Hkv, G * T, T}) ||
        !shapeIs(pv.getResult(), {B, Hkv, G * T, hd}))
      return rewriter.notifyMatchFailure(back, "the views do not group G query heads per kv head");
    auto lseType = RankedTensorType::get(qt.getShape().drop_back(), rewriter.getF32Type());
    auto attn = rewriter.create<AttentionOp>(back.getLoc(), back.getType(), lseType, q, k, v,
                                             rewriter.getBoolAttr(true), mask.getWindowAttr(),
                                             qk.getAlphaAttr());
    if (Attribute layer = back->getAttr(kLayerAttr))
      attn->setAttr(kLayerAttr, layer);
    rewriter.replaceOp(back, attn.getOut());
    return success();
  }
};

struct TgFuseAttentionPass : mlir::tg::impl::TgFuseAttentionBase<TgFuseAttentionPass> {
  using TgFuseAttentionBase::TgFuseAttentionBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    set.add<FuseNaiveAttention, FuseGroupedAttention>(ctx);
    if (packed)
      set.add<PackAttention>(ctx);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    int64_t before = 0, after = 0;
    getOperation().walk([&](AttentionOp) { ++before; });
    if (failed(applyPatternsAndFoldGreedily(getOperation(), patterns)))
      return signalPassFailure();
    getOperation().walk([&](AttentionOp) { ++after; });
    getOperation().walk([&](AttentionQKVOp) { ++after; });
    numFused += after - before;
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
