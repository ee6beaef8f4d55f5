//===- MixedPrecisionPass.cpp - tg-mixed-precision ----------------------------===//
//
// Rewrites @forward to a precision policy by retyping op results and inserting tg.cast
// where an op wants its operand in another type (autocast, as in PyTorch's
// torch.autocast op lists and Micikevicius et al. 2018, "Mixed Precision Training").
// The policy, op by op (low = bf16 or f16, wide = f32 in the mixed policies, bf16 in
// "bf16"):
//   tg.matmul, tg.attention     operands cast to low, result low (fp32 accumulation in the
//                               kernels); attention's lse stays f32
//   tg.layer_norm               reads x as it is (f32 residual stream), gamma/beta as the
//                               parameters are, computes in f32, writes y in low
//   tg.bias_add, tg.concat      follow their first operand (bias cast to it)
//   tg.gelu, dropout, views     follow their operand
//   tg.causal_mask, tg.softmax  wide (naive attention's probabilities in f32)
//   tg.add                      the wider of its operands (residual stream: f32)
//   tg.embedding, positional    the table's type (f32 master weights in the mixed policies)
//   tg.cross_entropy            reads logits in their (low) type; loss f32
// Casts are made once per (value, type) and placed before the first op that needs them
// (so each weight is cast once per micro-step and the tied wte's bf16 copy serves the
// lm_head in the forward and backward); a cast of a cast that undoes an exact widening
// returns the original value. tg-autodiff runs after this pass: a cast's gradient is a
// cast back, so every gradient has its value's type (f32 for the master weights).
//
// Module attributes written: tg.precision = "<policy>"; for fp16-mixed tg.loss_scale =
// {init, growth_interval} (dynamic loss scaling, read by tg-autodiff and the lowering).
// Parameters get the argument attribute tg.moment_type (AdamW m, v element type).
//
//===----------------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

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

struct TgMixedPrecisionPass : mlir::tg::impl::TgMixedPrecisionBase<TgMixedPrecisionPass> {
  using TgMixedPrecisionBase::TgMixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    if (precision != "fp32" && precision != "bf16-mixed" && precision != "fp16-mixed" &&
        precision != "bf16") {
      module.emitError() << "tg-mixed-precision: unknown precision '" << precision
                         << "' (expected fp32, bf16-mixed, fp16-mixed or bf16)";
      return signalPassFailure();
    }
    if (auto prev = module->getAttrOfType<StringAttr>(kPrecisionAttr)) {
      module.emitError() << "tg-mixed-precision: the module already has precision "
                         << prev << " (the pass runs once, before tg-autodiff)";
      return signalPassFailure();
    }
    // Checked before anything is rewritten. The scale is stored as f32: a value past
    // FLT_MAX would become +inf (every step would overflow and be skipped).
    if (precision == "fp16-mixed" &&
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

    bool pure = precision == "bf16";
    low = precision == "fp16-mixed" ? Type(b.getF16Type())
          : precision == "fp32"     ? Type(b.getF32Type())
                                    : Type(b.getBF16Type());
    wide = pure ? low : Type(b.getF32Type());
    Type moment = pure ? low : Type(b.getF32Type());

    // Pure low precision: the parameters themselves (values, gradients) are low.
    if (pure) {
      SmallVector<Type> inputs(fn.getArgumentTypes());
      for (BlockArgument arg : fn.getArguments())
        if (fn.getArgAttr(arg.getArgNumber(), kParamNameAttr)) {
          arg.setType(RankedTensorType::get(rt(arg).getShape(), low));
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

    module->setAttr(kPrecisionAttr, b.getStringAttr(precision));
    if (precision == "fp16-mixed") {
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
  Value as(Value v, Type t, Operation *user) {
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

  void setOperand(Operation *op, unsigned i, Type t) {
    op->setOperand(i, as(op->getOperand(i), t, op));
  }
  void setResult(Operation *op, unsigned i, Type t) {
    Value r = op->getResult(i);
    r.setType(RankedTensorType::get(rt(r).getShape(), t));
  }
  /// Every float operand and result to `t` (results that are f32 by definition excepted).
  void all(Operation *op, Type t) {
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (isa<FloatType>(elt(op->getOperand(i))))
        setOperand(op, i, t);
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      setResult(op, i, t);
  }

  LogicalResult retype(Operation *op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case<MatmulOp>([&](auto) {
          all(op, low);
          return success();
        })
        .Case<AttentionQKVOp>([&](AttentionQKVOp a) {
          setOperand(op, 0, low);
          setResult(op, 0, low); // lse stays f32
          return success();
        })
        .Case<AttentionOp>([&](AttentionOp a) {
          for (unsigned i = 0; i < 3; ++i)
            setOperand(op, i, low);
          setResult(op, 0, low); // lse stays f32
          return success();
        })
        .Case<LayerNormOp>([&](LayerNormOp ln) {
          if (elt(ln.getBeta()) != elt(ln.getGamma()))
            setOperand(op, 2, elt(ln.getGamma()));
          setResult(op, 0, low); // mean, rstd stay f32
          return success();
        })
        .Case<BiasAddOp>([&](BiasAddOp ba) {
          // The bias cast goes before the GEMM that makes x, so that the lowering can
          // fuse GEMM + bias (the bias epilogue reads the bias at the GEMM).
          // Only where the bias is already defined there (a parameter, or a value made
          // before the GEMM); otherwise at the bias_add.
          Type t = elt(ba.getX());
          Operation *at = ba.getX().getDefiningOp() ? ba.getX().getDefiningOp() : op;
          if (Operation *def = ba.getBias().getDefiningOp();
              def && at != op && (def->getBlock() != at->getBlock() || !def->isBeforeInBlock(at)))
            at = op;
          op->setOperand(1, as(ba.getBias(), t, at));
          setResult(op, 0, t);
          return success();
        })
        .Case<ConcatOp>([&](auto) {
          all(op, elt(op->getOperand(0)));
          return success();
        })
        .Case<GeluOp, DropoutOp, ReshapeOp, TransposeOp, SplitOp>([&](auto) {
          for (unsigned i = 0; i < op->getNumResults(); ++i)
            setResult(op, i, elt(op->getOperand(0)));
          return success();
        })
        .Case<CausalMaskOp, SoftmaxOp>([&](auto) {
          all(op, wide);
          return success();
        })
        .Case<AddOp>([&](AddOp a) {
          Type l = elt(a.getLhs()), r = elt(a.getRhs());
          all(op, rank(l) >= rank(r) ? l : r);
          return success();
        })
        .Case<EmbeddingOp>([&](EmbeddingOp e) {
          setResult(op, 0, elt(e.getTable()));
          return success();
        })
        .Case<PositionalEmbeddingOp>([&](PositionalEmbeddingOp p) {
          all(op, elt(p.getWpe()));
          return success();
        })
        .Case<CrossEntropyOp, CastOp>([&](auto) { return success(); })
        .Default([&](Operation *) {
          return op->emitOpError() << "tg-mixed-precision: no precision rule for this op "
                                      "(the pass runs on the forward graph, before tg-autodiff)";
        });
  }

  Type low, wide;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

} // namespace
