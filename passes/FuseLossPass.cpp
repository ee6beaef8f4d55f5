//===- FuseLossPass.cpp - tg-fuse-loss: output layer + loss in chunks of rows ---------===//
//
// After tg-autodiff, the training step's output layer and loss,
//   logits = x w^T;  loss = CE(logits);  dlogits = CE'(logits) dloss;
//   dx = dlogits w;  dw = dlogits^T x  (then, for low-precision copies of f32 weights,
//   widened to f32),
// become one tg.linear_cross_entropy that materialises chunk_rows rows of logits at a
// time: the [rows, V] logits are the largest activation of a GPT step (GPT-2 small, 16 x
// 1024 tokens, vocabulary 50304, bf16: 1.65 GB), and the plan then holds one chunk. The
// idea of fused linear + cross-entropy kernels (Liger Kernel, Hsu et al. 2024, and
// "Cut Your Losses in Large-Vocabulary Language Models", Wijmans et al. 2024), here as an
// op whose working memory is a planned result.
//
// What stays exact: the runtime computes the same per-row logits, losses and dlogits as
// the unfused kernels (the valid-target count is taken over all rows first), dx row by
// row; only dw is a sum over chunks instead of one GEMM over all rows.
//
//===----------------------------------------------------------------------------===//
#include "dialect/ElementBytes.h"
#include "passes/Passes.h"

#define DEBUG_TYPE "tg-fuse-loss"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSELOSS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {



/// The ops of one matched chain (see the file comment).
struct LossChain {
  MatmulOp logits;          ///< x w^T
  CrossEntropyOp loss;      ///< the forward loss
  CrossEntropyGradOp grad;  ///< dlogits
  MatmulOp dx, dw;          ///< dlogits w, dlogits^T x
  ReshapeOp dlogitsView;    ///< dlogits flattened for dw (null when dw reads dlogits)
  CastOp dwCast;            ///< dw widened to f32 (null when dw is used as it is)
};

/// The chain around the loss gradient g, or failure (with the reason, for -debug).
FailureOr<LossChain> match(CrossEntropyGradOp g) {
  LossChain c;
  c.grad = g;
  c.logits = g.getLogits().getDefiningOp<MatmulOp>();
  if (!c.logits || c.logits.getTransposeA() || !c.logits.getTransposeB() ||
      c.logits.getAlpha().convertToFloat() != 1.0f)
    return failure(); // the logits are not x w^T
  Value x = c.logits.getA(), w = c.logits.getB();
  if (rt(w).getRank() != 2 || rt(x).getRank() < 2)
    return failure();
  // The logits are read by the loss and its gradient, nothing else.
  for (Operation *u : g.getLogits().getUsers()) {
    if (u == g.getOperation())
      continue;
    auto f = dyn_cast<CrossEntropyOp>(u);
    if (!f || c.loss || f.getTargets() != g.getTargets() ||
        f.getIgnoreIndex() != g.getIgnoreIndex() || f->getBlock() != g->getBlock() ||
        !f->isBeforeInBlock(g))
      return failure();
    c.loss = f;
  }
  if (!c.loss)
    return failure();
  // Nothing between the forward and the gradient reads the loss (it is computed there).
  for (Operation *op = c.loss->getNextNode(); op && op != g.getOperation(); op = op->getNextNode())
    for (Value v : op->getOperands())
      if (v == c.loss.getLoss())
        return failure();
  // dlogits feeds exactly the two weight-side GEMMs.
  for (Operation *u : g.getResult().getUsers()) {
    if (auto mm = dyn_cast<MatmulOp>(u)) {
      if (mm.getA() == g.getResult() && mm.getB() == w && !mm.getTransposeA() &&
          !mm.getTransposeB() && mm.getAlpha().convertToFloat() == 1.0f && !c.dx) {
        c.dx = mm;
        continue;
      }
      if (mm.getA() == g.getResult() && mm.getTransposeA() && !mm.getTransposeB() && !c.dw &&
          throughReshape(mm.getB()) == x && mm.getAlpha().convertToFloat() == 1.0f) {
        c.dw = mm;
        continue;
      }
      return failure();
    }
    auto r = dyn_cast<ReshapeOp>(u);
    if (!r || c.dlogitsView || !r.getResult().hasOneUse())
      return failure();
    auto mm = dyn_cast<MatmulOp>(*r.getResult().getUsers().begin());
    if (!mm || mm.getA() != r.getResult() || !mm.getTransposeA() || mm.getTransposeB() ||
        throughReshape(mm.getB()) != x || mm.getAlpha().convertToFloat() != 1.0f || c.dw)
      return failure();
    c.dlogitsView = r;
    c.dw = mm;
  }
  if (!c.dx || !c.dw)
    return failure();
  if (rt(c.dw.getResult()).getShape() != rt(w).getShape())
    return failure();
  if (c.dw.getResult().hasOneUse())
    if (auto cast = dyn_cast<CastOp>(*c.dw.getResult().getUsers().begin());
        cast && rt(cast.getResult()).getElementType().isF32())
      c.dwCast = cast;
  // The logits' bytes size the chunks (rewrite): a type without a runtime size is not fused.
  if (!elementBytes(rt(c.logits.getA()).getElementType()))
    return failure();
  return c;
}

struct TgFuseLossPass : mlir::tg::impl::TgFuseLossBase<TgFuseLossPass> {
  using TgFuseLossBase::TgFuseLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (maxLogitsBytes <= 0) {
      module.emitError() << "tg-fuse-loss: max-logits-bytes must be > 0, got "
                         << (int64_t)maxLogitsBytes;
      return signalPassFailure();
    }
    // The evaluation step's loss (forward only) in chunks too: its [rows, V] logits were the
    // arena's largest buffer under checkpointing (GPT-2 small x 448, layer: 46 GB of 47).
    if (auto eval = module.lookupSymbol<func::FuncOp>("eval_step")) {
      SmallVector<CrossEntropyOp> losses;
      eval.walk([&](CrossEntropyOp l) { losses.push_back(l); });
      for (CrossEntropyOp l : losses)
        if (fuseLossOnly(l))
          ++numFused;
    }
    auto fn = module.lookupSymbol<func::FuncOp>("micro_step");
    if (!fn)
      return; // nothing more to fuse (an eval-only module)
    SmallVector<CrossEntropyGradOp> grads;
    fn.walk([&](CrossEntropyGradOp g) { grads.push_back(g); });
    for (CrossEntropyGradOp g : grads) {
      FailureOr<LossChain> m = match(g);
      if (failed(m))
        continue;
      rewrite(*m);
      ++numFused;
    }
  }

  /// dw's accumulation into its parameter's gradient moved right after the op (autodiff
  /// puts every accumulation at the end of the step, which would keep dw's buffer, 154 MB
  /// for GPT-2's tied embedding in f32, live through the whole backward). A tied
  /// embedding's `accumulate_grad(p, add(dw, e))` becomes `accumulate_grad(p, dw)` here and
  /// `accumulate_grad(p, e)` where it was: the same sum in the slot.
  void accumulateEarly(LinearCrossEntropyOp op) {
    Value dw = op.getDw();
    if (!dw.hasOneUse())
      return;
    Operation *user = *dw.getUsers().begin();
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    if (auto acc = dyn_cast<AccumulateGradOp>(user)) {
      acc->moveAfter(op);
      return;
    }
    auto add = dyn_cast<AddOp>(user);
    if (!add || add.getLhs() == add.getRhs() || !add.getResult().hasOneUse())
      return;
    auto acc = dyn_cast<AccumulateGradOp>(*add.getResult().getUsers().begin());
    if (!acc)
      return;
    Value other = add.getLhs() == dw ? add.getRhs() : add.getLhs();
    auto early = b.create<AccumulateGradOp>(acc.getLoc(), acc.getParam(), dw);
    early->setAttrs(acc->getAttrs());
    acc.getGradMutable().assign(other);
    add.erase();
  }

  /// For x [..., D] (rows = the leading dims' product) and logits [rows, V] of x's element
  /// type: the chunk's rows and the scratch result's f32 elements. The fewest chunks whose logits fit maxLogitsBytes, then
  /// rows split evenly among them (no short last chunk: every chunk's GEMMs run at the same,
  /// large, shape). In training each chunk re-reads and re-writes dw (f32 for GPT-2's tied
  /// embedding: 2 x 154 MB), so fewer chunks cost less time and more memory.
  struct Chunking {
    int64_t chunk, scratch; ///< rows per chunk; the scratch result's f32 elements
  };
  Chunking chunking(Value x, Value w) {
    auto xt = rt(x);
    int64_t rows = 1;
    for (int64_t d : xt.getShape().drop_back())
      rows *= d;
    int64_t vocab = rt(w).getDimSize(0);
    int64_t es = *elementBytes(xt.getElementType()); // the callers checked it has a size
    int64_t maxRows = std::max<int64_t>(1, std::min<int64_t>(rows, maxLogitsBytes / (vocab * es)));
    int64_t chunks = (rows + maxRows - 1) / maxRows;
    int64_t chunk = (rows + chunks - 1) / chunks;
    return {chunk, (LinearCrossEntropyOp::scratchBytes(rows, vocab, chunk, es) + 3) / 4};
  }

  /// An evaluation's `loss = CE(x w^T)` whose logits nothing else reads -> one
  /// tg.linear_cross_entropy whose dx and dw nothing reads (the lowering passes them NULL:
  /// the loss only, tgrt_linear_cross_entropy) and whose dloss is a tg.fill of 0. False when
  /// the pattern does not hold.
  bool fuseLossOnly(CrossEntropyOp l) {
    auto mm = l.getLogits().getDefiningOp<MatmulOp>();
    if (!mm || mm.getTransposeA() || !mm.getTransposeB() ||
        mm.getAlpha().convertToFloat() != 1.0f || !l.getLogits().hasOneUse())
      return false;
    Value x = mm.getA(), w = mm.getB();
    if (rt(w).getRank() != 2 || rt(x).getRank() < 2 || !elementBytes(rt(x).getElementType()))
      return false;
    Chunking c = chunking(x, w);
    OpBuilder b(l);
    auto f32 = b.getF32Type();
    Value zero = b.create<FillOp>(l.getLoc(), RankedTensorType::get({}, f32),
                                  b.getF32FloatAttr(0.0f), UnitAttr());
    auto op = b.create<LinearCrossEntropyOp>(
        l.getLoc(),
        TypeRange{l.getLoss().getType(), x.getType(), w.getType(),
                  RankedTensorType::get({c.scratch}, f32)},
        x, w, l.getTargets(), zero, b.getI64IntegerAttr(c.chunk),
        b.getI64IntegerAttr(l.getIgnoreIndex()));
    for (Operation *o : {zero.getDefiningOp(), op.getOperation()})
      for (StringRef a : {StringRef(kPhaseAttr), StringRef(kLayerAttr)})
        if (Attribute v = l->getAttr(a))
          o->setAttr(a, v);
    l.getLoss().replaceAllUsesWith(op.getLoss());
    l.erase();
    mm.erase();
    return true;
  }

  void rewrite(LossChain &c) {
    Value x = c.logits.getA(), w = c.logits.getB();
    auto [chunk, scratch] = chunking(x, w);
    Value dwOut = c.dwCast ? c.dwCast.getResult() : c.dw.getResult();
    OpBuilder b(c.grad);
    auto f32 = b.getF32Type();
    auto op = b.create<LinearCrossEntropyOp>(
        c.grad.getLoc(),
        TypeRange{c.loss.getLoss().getType(), c.dx.getResult().getType(), dwOut.getType(),
                  RankedTensorType::get({scratch}, f32)},
        x, w, c.grad.getTargets(), c.grad.getDloss(), b.getI64IntegerAttr(chunk),
        b.getI64IntegerAttr(c.grad.getIgnoreIndex()));
    if (auto phase = c.grad->getAttr(kPhaseAttr))
      op->setAttr(kPhaseAttr, phase);
    c.loss.getLoss().replaceAllUsesWith(op.getLoss());
    c.dx.getResult().replaceAllUsesWith(op.getDx());
    dwOut.replaceAllUsesWith(op.getDw());
    accumulateEarly(op);
    // Erase users before definitions; the view of x goes when nothing else reads it.
    ReshapeOp xView = c.dw.getB().getDefiningOp<ReshapeOp>();
    if (c.dwCast)
      c.dwCast.erase();
    c.dw.erase();
    if (c.dlogitsView)
      c.dlogitsView.erase();
    if (xView && xView.getResult().use_empty())
      xView.erase();
    c.dx.erase();
    c.grad.erase();
    c.loss.erase();
    c.logits.erase();
  }
};

} // namespace
