//===- AutodiffPass.cpp - @forward -> @micro_step / @optimizer_step ----------===//
//
// Reverse-mode automatic differentiation over the straight-line forward function:
// walk its ops backwards and let each op's GradientOpInterface build its adjoint
// (Griewank & Walther, "Evaluating Derivatives", ch. 3). A value used k times
// receives the sum of its k incoming gradients (tied embeddings included).
//
//===----------------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "tg-autodiff"

namespace mlir::tg {
#define GEN_PASS_DEF_TGAUTODIFF
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

void setPhase(Operation *op, StringRef phase) {
  op->setAttr(kPhaseAttr, StringAttr::get(op->getContext(), phase));
}

/// True for parameters that get AdamW's decoupled weight decay: matrices, except the
/// embedding tables unless asked (GPT-2 / nanoGPT convention).
bool decays(StringRef name, RankedTensorType type, bool decayEmbeddings) {
  if (type.getRank() < 2)
    return false;
  if ((name == "wte" || name == "wpe") && !decayEmbeddings)
    return false;
  return true;
}

struct TgAutodiffPass : mlir::tg::impl::TgAutodiffBase<TgAutodiffPass> {
  using TgAutodiffBase::TgAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError() << "tg-autodiff: no func.func @forward to differentiate";
      return signalPassFailure();
    }
    if (!forward.getBody().hasOneBlock() || forward.getNumResults() != 1 ||
        cast<RankedTensorType>(forward.getResultTypes()[0]).getRank() != 0) {
      forward.emitError() << "tg-autodiff: @forward must be one block returning a scalar loss";
      return signalPassFailure();
    }
    if (gradAccum < 1) {
      forward.emitError() << "tg-autodiff: grad-accum must be >= 1, got " << (int64_t)gradAccum;
      return signalPassFailure();
    }
    for (Operation &op : forward.getBody().front())
      setPhase(&op, "forward");

    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(forward);
    auto micro = cast<func::FuncOp>(b.clone(*forward));
    micro.setSymName("micro_step");
    if (failed(buildBackward(micro)))
      return signalPassFailure();
    b.setInsertionPointAfter(micro);
    buildOptimizer(b, forward);
    forward.setSymName("eval_step");
    // Evaluation runs the model deterministically: dropout is the identity there.
    SmallVector<DropoutOp> dropouts;
    forward.walk([&](DropoutOp op) { dropouts.push_back(op); });
    for (DropoutOp op : dropouts) {
      op.getResult().replaceAllUsesWith(op.getX());
      op.erase();
    }
  }

  /// Appends the backward pass and the gradient accumulation to `fn`.
  LogicalResult buildBackward(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator())
      forwardOps.push_back(&op);

    OpBuilder b(ret);
    Value loss = ret.getOperand(0);
    llvm::DenseMap<Value, Value> grads;
    // fp16-mixed (tg.loss_scale): the seed is multiplied by the runtime's loss scale.
    bool lossScaled = (bool)fn->getParentOfType<ModuleOp>()->getAttr(kLossScaleAttr);
    auto seed = b.create<FillOp>(loss.getLoc(), loss.getType(),
                                 b.getF32FloatAttr(1.0f / (float)gradAccum),
                                 lossScaled ? b.getUnitAttr() : UnitAttr());
    setPhase(seed, "backward");
    grads[loss] = seed;

    auto addGrad = [&](Value target, Value g, Location loc) {
      auto [it, inserted] = grads.try_emplace(target, g);
      if (!inserted) {
        auto sum = b.create<AddOp>(loc, g.getType(), it->second, g);
        setPhase(sum, "backward");
        it->second = sum;
      }
    };

    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(grads.lookup(r));
        any |= (bool)resultGrads.back();
      }
      if (!any)
        continue;
      auto iface = dyn_cast<GradientOpInterface>(op);
      if (!iface)
        return op->emitOpError() << "is on the path to the loss but has no gradient "
                                    "(does not implement GradientOpInterface)";
      Block::iterator before = b.getInsertionPoint();
      --before;
      SmallVector<Value> operandGrads = iface.buildGradient(b, resultGrads);
      if (operandGrads.size() != op->getNumOperands())
        return op->emitOpError() << "failed to build its gradient";
      Attribute layer = op->getAttr(kLayerAttr);
      for (Operation *it = before->getNextNode(); it && it != ret; it = it->getNextNode()) {
        if (!it->hasAttr(kPhaseAttr))
          setPhase(it, "backward");
        if (layer && !it->hasAttr(kLayerAttr))
          it->setAttr(kLayerAttr, layer);
      }
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g)
          addGrad(operand, g, op->getLoc());
    }

    for (BlockArgument arg : fn.getArguments()) {
      if (!fn.getArgAttr(arg.getArgNumber(), kParamNameAttr))
        continue;
      Value g = grads.lookup(arg);
      if (!g)
        continue; // unused parameter: its gradient stays zero
      auto acc = b.create<AccumulateGradOp>(g.getLoc(), arg, g);
      setPhase(acc, "backward");
    }
    return success();
  }

  /// Builds @optimizer_step(params...): global-norm clip, then AdamW per parameter.
  void buildOptimizer(OpBuilder &b, func::FuncOp forward) {
    SmallVector<Type> types;
    SmallVector<StringAttr> names;
    SmallVector<DictionaryAttr> argAttrs;
    SmallVector<bool> decayFlags;
    // The frontend marks which parameters decay (tg.decay); a module without any mark
    // (hand-written IR) uses the rule.
    bool anyMarks = false;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      anyMarks |= forward.getArgAttr(i, kDecayAttr) != nullptr;
    for (BlockArgument arg : forward.getArguments())
      if (auto name = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr)) {
        types.push_back(arg.getType());
        names.push_back(name);
        argAttrs.push_back(forward.getArgAttrDict(arg.getArgNumber()));
        bool marked = forward.getArgAttr(arg.getArgNumber(), kDecayAttr) != nullptr;
        decayFlags.push_back(anyMarks ? marked
                                      : decays(name.getValue(),
                                               cast<RankedTensorType>(arg.getType()),
                                               decayEmbeddings));
      }
    Location loc = NameLoc::get(b.getStringAttr("optimizer"));
    auto fn = b.create<func::FuncOp>(loc, "optimizer_step", b.getFunctionType(types, {}));
    Block *entry = fn.addEntryBlock();
    fn.setAllArgAttrs(argAttrs); // at once: per-argument calls are quadratic
    OpBuilder ob = OpBuilder::atBlockBegin(entry);
    auto clip = ob.create<ClipGradNormOp>(
        NameLoc::get(ob.getStringAttr("optimizer.clip")),
        RankedTensorType::get({2}, ob.getF32Type()), entry->getArguments(),
        ob.getF32FloatAttr((float)gradClip));
    setPhase(clip, "optimizer");
    for (auto [arg, name, decay] : llvm::zip(entry->getArguments(), names, decayFlags)) {
      float wd = decay ? (float)weightDecay : 0.0f;
      auto step = ob.create<AdamWOp>(
          NameLoc::get(ob.getStringAttr("optimizer." + name.getValue())), arg, clip,
          ob.getF32FloatAttr((float)beta1), ob.getF32FloatAttr((float)beta2),
          ob.getF32FloatAttr((float)eps), ob.getF32FloatAttr(wd));
      setPhase(step, "optimizer");
    }
    ob.create<func::ReturnOp>(loc);
  }
};

} // namespace
