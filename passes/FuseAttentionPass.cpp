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

struct TgFuseAttentionPass : mlir::tg::impl::TgFuseAttentionBase<TgFuseAttentionPass> {
  using TgFuseAttentionBase::TgFuseAttentionBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    set.add<FuseNaiveAttention>(ctx);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    int64_t before = 0, after = 0;
    getOperation().walk([&](AttentionOp) { ++before; });
    if (failed(applyPatternsAndFoldGreedily(getOperation(), patterns)))
      return signalPassFailure();
    getOperation().walk([&](AttentionOp) { ++after; });
    numFused += after - before;
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
