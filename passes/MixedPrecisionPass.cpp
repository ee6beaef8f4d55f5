//===- MixedPrecisionPass.cpp - tg-mixed-precision ----------------------------===//
//
// Rewrites @forward to a precision policy by retyping op results and inserting tg.cast
// where an op wants its operand in another type (autocast, as in PyTorch's
// torch.autocast op lists and Micikevicius et al. 2018, "Mixed Precision Training").
// Each op's rule is the op's own (PrecisionOpInterface, dialect/TgPrecision.cpp lists
// them); the pass hands every forward op a PrecisionRewriter and knows no op kind.
// Casts are made once per (value, type) and placed before the first op that needs them
// (so each weight is cast once per micro-step and the tied wte's bf16 copy serves the
// lm_head in the forward and backward); a cast of a cast that undoes an exact widening
// returns the original value. tg-autodiff runs after this pass: a cast's gradient is a
// cast back, so every gradient has its value's type (f32 for the master weights).
//
// Module attributes written: tg.precision = #tg.precision<policy>; for fp16-mixed tg.loss_scale =
// {init, growth_interval} (dynamic loss scaling, read by tg-autodiff and the lowering).
// Parameters get the argument attribute tg.moment_type (AdamW m, v element type).
//
//===----------------------------------------------------------------------------===//
#include "passes/Passes.h"

#include <cmath>

#define DEBUG_TYPE "tg-mixed-precision"

namespace mlir::tg {
#define GEN_PASS_DEF_TGMIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

Type elt(Value v) { return rt(v).getElementType(); }

/// Bits of precision of a float type, to pick the wider of two.
unsigned rank(Type t) { return t.isF32() ? 3 : t.isBF16() || t.isF16() ? 2 : 0; }

struct TgMixedPrecisionPass : mlir::tg::impl::TgMixedPrecisionBase<TgMixedPrecisionPass>,
                              PrecisionRewriter {
  using TgMixedPrecisionBase::TgMixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    // The policy is an enum (its option parser refused an unknown one).
    const Precision policy = precision;
    if (Attribute prev = module->getAttr(kPrecisionAttr)) {
      module.emitError() << "tg-mixed-precision: the module already has precision "
                         << prev << " (the pass runs once, before tg-autodiff)";
      return signalPassFailure();
    }
    // Checked before anything is rewritten. The scale is stored as f32: a value past
    // FLT_MAX would become +inf (every step would overflow and be skipped).
    if (policy == Precision::fp16_mixed &&
        (!(lossScaleInit > 0) || !std::isfinite((float)lossScaleInit) ||
         lossScaleGrowthInterval < 1)) {
      module.emitError() << "tg-mixed-precision: loss-scale-init must be > 0 and finite "
                            "in f32, and loss-scale-growth-interval >= 1 (got "
                         << (double)lossScaleInit << " and "
                         << (int64_t)lossScaleGrowthInterval << ")";
      return signalPassFailure();
    }
    // A pass instance may run on several modules: no cast from a previous run is reused.
    casts.clear();
    auto fn = module.lookupSymbol<func::FuncOp>("forward");
    if (!fn || fn.isExternal()) {
      module.emitError() << "tg-mixed-precision: no func.func @forward (run it before "
                            "tg-autodiff, on the frontend's forward graph)";
      return signalPassFailure();
    }
    for (BlockArgument arg : fn.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), kParamNameAttr) && !elt(arg).isF32()) {
        fn.emitError() << "tg-mixed-precision: parameter "
                       << fn.getArgAttr(arg.getArgNumber(), kParamNameAttr)
                       << " must be f32 before the pass, got " << arg.getType();
        return signalPassFailure();
      }

    bool pure = policy == Precision::bf16;
    lowType = policy == Precision::fp16_mixed ? Type(b.getF16Type())
              : policy == Precision::fp32     ? Type(b.getF32Type())
                                              : Type(b.getBF16Type());
    wideType = pure ? lowType : Type(b.getF32Type());
    Type moment = pure ? lowType : Type(b.getF32Type());

    // Pure low precision: the parameters themselves (values, gradients) are low.
    if (pure) {
      SmallVector<Type> inputs(fn.getArgumentTypes());
      for (BlockArgument arg : fn.getArguments())
        if (fn.getArgAttr(arg.getArgNumber(), kParamNameAttr)) {
          arg.setType(RankedTensorType::get(rt(arg).getShape(), lowType));
          inputs[arg.getArgNumber()] = arg.getType();
        }
      fn.setFunctionType(FunctionType::get(ctx, inputs, fn.getResultTypes()));
    }
    // One setAllArgAttrs call: setArgAttr per argument rebuilds the array of every
    // argument's dictionary each time (quadratic in the parameter count).
    SmallVector<DictionaryAttr> argAttrs;
    for (BlockArgument arg : fn.getArguments()) {
      NamedAttrList attrs(fn.getArgAttrDict(arg.getArgNumber()));
      if (attrs.get(kParamNameAttr))
        attrs.set(kMomentTypeAttr, TypeAttr::get(moment));
      argAttrs.push_back(attrs.getDictionary(ctx));
    }
    fn.setAllArgAttrs(argAttrs);

    SmallVector<Operation *> ops;
    for (Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops)
      if (failed(retype(op)))
        return signalPassFailure();
    // The loss stays f32 (tg.cross_entropy's result). Any other returned value that was
    // retyped is cast back to the declared result type, so the signature still holds.
    Operation *ret = fn.getBody().front().getTerminator();
    for (auto [i, t] : llvm::enumerate(fn.getResultTypes()))
      if (auto want = dyn_cast<RankedTensorType>(t);
          want && isa<FloatType>(want.getElementType()) && ret->getOperand(i).getType() != want)
        ret->setOperand(i, as(ret->getOperand(i), want.getElementType(), ret));

    module->setAttr(kPrecisionAttr, PrecisionAttr::get(ctx, policy));
    if (policy == Precision::fp16_mixed) {
      module->setAttr(kLossScaleAttr,
                      b.getDictionaryAttr(
                          {b.getNamedAttr("init", b.getF32FloatAttr((float)lossScaleInit)),
                           b.getNamedAttr("growth_interval",
                                          b.getI64IntegerAttr(lossScaleGrowthInterval))}));
    }
    numCasts = casts.size();
  }

  /// `v` as element type `t`: itself, an existing cast, or a new tg.cast before `user`
  /// (which must come after v's definition).
  Type low() const override { return lowType; }
  Type wide() const override { return wideType; }

  Value as(Value v, Type t, Operation *user) override {
    if (elt(v) == t)
      return v;
    // Undo an exact widening instead of rounding twice.
    if (auto c = v.getDefiningOp<CastOp>(); c && elt(c.getX()) == t && rank(elt(v)) > rank(t))
      return c.getX();
    auto key = std::make_pair(v, t);
    if (Value done = casts.lookup(key))
      return done;
    OpBuilder b(user);
    Location loc = v.getDefiningOp() ? v.getDefiningOp()->getLoc() : user->getLoc();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
        loc = NameLoc::get(StringAttr::get(v.getContext(), name.getValue() + ".cast"));
    }
    Value c = b.create<CastOp>(loc, RankedTensorType::get(rt(v).getShape(), t), v);
    // The cast belongs to the layer of the op that first needs it.
    if (Attribute layer = user->getAttr(kLayerAttr))
      c.getDefiningOp()->setAttr(kLayerAttr, layer);
    casts[key] = c;
    return c;
  }

  /// The op's own rule (PrecisionOpInterface); an op without one is refused.
  LogicalResult retype(Operation *op) {
    if (auto rule = dyn_cast<PrecisionOpInterface>(op))
      return rule.applyPrecision(*this);
    return op->emitOpError() << "tg-mixed-precision: no precision rule for this op "
                                "(the pass runs on the forward graph, before tg-autodiff)";
  }

  Type lowType, wideType;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

} // namespace
