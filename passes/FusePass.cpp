//===- FusePass.cpp - tg-fuse: fusions as explicit ops -----------------------===//
//
// See Passes.td. Each rewrite replaces a chain by one op whose semantics are the chain's;
// the memory planner then plans the fused op (its in-place operands come from its
// MemoryOpInterface) and the lowering emits its one runtime call. Nothing later needs to
// know that the op was once a chain: the planner no longer predicts the lowering's
// fusions, and the lowering no longer checks the plan's bytes to decide them.
//
//===----------------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"

#define DEBUG_TYPE "tg-fuse"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSE
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

Type elemOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// A linear layer: a GEMM with one weight [K, N] for every row (rank-2 b) and a plain lhs,
/// which the runtime runs as one GEMM over the flattened rows.
bool linearLayer(MatmulOp mm) {
  return !mm.getTransposeA() && cast<RankedTensorType>(mm.getB().getType()).getRank() == 2 &&
         cast<RankedTensorType>(mm.getA().getType()).getRank() >= 2;
}

/// Whether `v` exists when `at` runs: a block argument, or defined before `at`.
bool readyAt(Value v, Operation *at) {
  Operation *def = v.getDefiningOp();
  return !def || (def->getBlock() == at->getBlock() && def->isBeforeInBlock(at));
}

/// The op right after `op` when it is a T reading `v` as its operand `x`, else null.
template <typename T> T nextReading(Operation *op, Value v) {
  auto n = dyn_cast_or_null<T>(op->getNextNode());
  return n && n->getOperand(0) == v ? n : T();
}

/// Copies the GEMM's discardable attributes (tg.layer, tg.phase, tg.recompute) to the op
/// that replaces it.
void inherit(Operation *fused, MatmulOp mm) {
  for (NamedAttribute a : mm->getDiscardableAttrs())
    fused->setAttr(a.getName(), a.getValue());
}

/// The widening cast's f32 result (a bf16 / f16 value made f32), or null.
bool widensToF32(CastOp c) { return elemOf(c.getResult()).isF32() && !elemOf(c.getX()).isF32(); }

/// The only reader of a linear-layer GEMM's product (linearLayer), or null when `mm` is no
/// linear layer or its product has other readers.
Operation *soleReader(MatmulOp mm) {
  if (!linearLayer(mm) || !mm.getResult().hasOneUse())
    return nullptr;
  return *mm.getResult().getUsers().begin();
}

/// soleReader as an `OpT`: null also when the reader is of another kind.
template <typename OpT> OpT soleReaderOf(MatmulOp mm) {
  return dyn_cast_or_null<OpT>(soleReader(mm));
}

/// matmul -> bias_add -> widening cast -> add(residual), each right after the previous,
/// every value read only by the next: tg.matmul_residual with the bias in f32.
struct BiasResidualChain {
  MatmulOp mm;
  BiasAddOp bias;
  CastOp cast;
  AddOp add;
  Value biasF32;
  CastOp biasCast; ///< the cast making the bias low precision, when its input is biasF32
};

std::optional<BiasResidualChain> matchBiasResidual(MatmulOp mm) {
  BiasResidualChain c{mm, nextReading<BiasAddOp>(mm, mm.getResult()), CastOp(), AddOp(),
                      Value(), CastOp()};
  if (!linearLayer(mm) || !c.bias || !mm.getResult().hasOneUse() ||
      !c.bias.getResult().hasOneUse())
    return std::nullopt;
  c.cast = nextReading<CastOp>(c.bias, c.bias.getResult());
  if (!c.cast || !c.cast.getResult().hasOneUse() || !widensToF32(c.cast))
    return std::nullopt;
  c.add = dyn_cast_or_null<AddOp>(c.cast->getNextNode());
  if (!c.add || c.add.getLhs() == c.add.getRhs() ||
      (c.add.getLhs() != c.cast.getResult() && c.add.getRhs() != c.cast.getResult()))
    return std::nullopt;
  Value res = c.add.getLhs() == c.cast.getResult() ? c.add.getRhs() : c.add.getLhs();
  if (!elemOf(res).isF32())
    return std::nullopt;
  // The bias in f32: the parameter its cast read, or an f32 bias as it is.
  c.biasF32 = c.bias.getBias();
  c.biasCast = c.biasF32.getDefiningOp<CastOp>();
  if (c.biasCast && elemOf(c.biasCast.getX()).isF32())
    c.biasF32 = c.biasCast.getX();
  else if (!elemOf(c.biasF32).isF32())
    return std::nullopt;
  else
    c.biasCast = CastOp();
  if (!readyAt(c.biasF32, mm))
    return std::nullopt;
  return c;
}

/// matmul whose only reader is bias_add(product, bias), the bias ready at the GEMM; with
/// `gelu` set when a GELU of the sum follows, each op right after the previous.
struct BiasChain {
  MatmulOp mm;
  BiasAddOp bias;
  GeluOp gelu;
};

std::optional<BiasChain> matchBias(MatmulOp mm) {
  auto bias = soleReaderOf<BiasAddOp>(mm);
  if (!bias || bias.getX() != mm.getResult() || !readyAt(bias.getBias(), mm))
    return std::nullopt;
  GeluOp gelu;
  if (mm->getNextNode() == bias.getOperation())
    gelu = nextReading<GeluOp>(bias, bias.getResult());
  return BiasChain{mm, bias, gelu};
}

/// matmul -> [widening cast] -> add(residual) as the GEMM's only readers, ops in that order
/// with nothing between that could read the product: tg.matmul_residual without bias.
struct ResidualChain {
  MatmulOp mm;
  CastOp cast; ///< null when the product is already in the stream's type
  AddOp add;
};

std::optional<ResidualChain> matchResidual(MatmulOp mm) {
  Operation *user = soleReader(mm);
  if (!user)
    return std::nullopt;
  ResidualChain c{mm, dyn_cast<CastOp>(user), AddOp()};
  Value branch = mm.getResult();
  if (c.cast) {
    // Widening only (exact): the fused op computes in f32 and rounds once to the stream.
    if (!widensToF32(c.cast) || !c.cast.getResult().hasOneUse())
      return std::nullopt;
    branch = c.cast.getResult();
    user = *branch.getUsers().begin();
  }
  c.add = dyn_cast<AddOp>(user);
  if (!c.add || c.add.getLhs() == c.add.getRhs() || c.add->getBlock() != mm->getBlock())
    return std::nullopt;
  Value res = c.add.getLhs() == branch ? c.add.getRhs() : c.add.getLhs();
  if (res.getType() != c.add.getResult().getType())
    return std::nullopt;
  return c;
}

/// The MLP's backward through the GELU: a linear-layer GEMM (the gradient of the GELU's
/// output) whose only reader is a GELU gradient, as its dy, whose result a bias gradient
/// reads: tg.matmul_dgelu_bgrad, at the GELU gradient.
struct DgeluChain {
  MatmulOp mm;
  GeluGradOp gelu;
  BiasGradOp bias;
};

std::optional<DgeluChain> matchDgelu(MatmulOp mm) {
  auto gelu = soleReaderOf<GeluGradOp>(mm);
  if (!gelu || gelu.getDy() != mm.getResult() || gelu.getX() == mm.getResult() ||
      gelu->getBlock() != mm->getBlock())
    return std::nullopt;
  BiasGradOp bias;
  for (Operation *u : gelu.getResult().getUsers())
    if (auto bg = dyn_cast<BiasGradOp>(u); bg && !bias)
      bias = bg;
  if (!bias)
    return std::nullopt;
  return DgeluChain{mm, gelu, bias};
}

/// add -> layer_norm of its sum, the norm right after the add (GPT-2's layer norm after
/// each residual add); a widening cast right before the add and read only by it joins
/// (`cast`, else null): the fused op reads its input in its place. -> tg.add_layer_norm.
struct AddNormChain {
  CastOp cast;
  AddOp add;
  LayerNormOp ln;
  Value a, b; ///< what the fused op reads: b is the cast's input when the cast joins
};

/// A widening cast (exact) right before `add` whose only reader is `add`, which reads
/// two different values: the add may read the cast's input instead. Else null.
CastOp castIntoAdd(AddOp add, Value v) {
  auto c = v.getDefiningOp<CastOp>();
  if (!c || c->getNextNode() != add.getOperation() || !widensToF32(c) ||
      !c.getResult().hasOneUse() || add.getLhs() == add.getRhs())
    return CastOp();
  return c;
}

std::optional<AddNormChain> matchAddNorm(AddOp add) {
  auto ln = dyn_cast_or_null<LayerNormOp>(add->getNextNode());
  if (!ln || ln.getX() != add.getResult())
    return std::nullopt;
  AddNormChain c{CastOp(), add, ln, add.getLhs(), add.getRhs()};
  if (castIntoAdd(add, c.a) && !castIntoAdd(add, c.b))
    std::swap(c.a, c.b);
  if ((c.cast = castIntoAdd(add, c.b)))
    c.b = c.cast.getX();
  return c;
}

/// Whether the planner writes the add's sum over one of the values the fused op would
/// read (an addend that dies at the add: AddOp's in-place operands). The fused kernel
/// cannot (it reads a and b through restrict pointers while it writes the sum), and the
/// in-place add saves a buffer of the stream's size, so that add stays as it is. The sum
/// taking the buffer of a joining cast's result is no conflict: that result is never
/// written once the cast joins.
bool sumInPlace(const FunctionLiveness &live, AddNormChain c) {
  auto sum = live.bufferOf.find(c.add.getResult());
  if (sum == live.bufferOf.end())
    return true; // not planned: leave it alone
  for (Value v : {c.a, c.b})
    if (auto it = live.bufferOf.find(v); it != live.bufferOf.end() && it->second == sum->second)
      return true;
  return false;
}

struct TgFusePass : mlir::tg::impl::TgFuseBase<TgFusePass> {
  using TgFuseBase::TgFuseBase;

  void runOnOperation() override {
    SmallVector<MatmulOp> gemms;
    getOperation().walk([&](MatmulOp mm) { gemms.push_back(mm); });
    // In program order: a chain's residual may be the previous chain's fused result, which
    // replaced that chain's add before this chain is rewritten.
    for (MatmulOp mm : gemms) {
      if (auto c = matchBiasResidual(mm))
        rewrite(*c);
      else if (auto c = matchBias(mm))
        rewrite(*c);
      else if (auto c = matchResidual(mm))
        rewrite(*c);
      else if (auto c = matchDgelu(mm))
        rewrite(*c);
    }
    // Then the residual adds that remain (their GEMM could not take them) with the layer
    // norm of their sum, decided on the liveness of the IR as it now is (the GEMM fusions
    // above change which values die where).
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      SmallVector<AddOp> adds;
      fn.walk([&](AddOp add) {
        if (matchAddNorm(add))
          adds.push_back(add);
      });
      if (adds.empty())
        continue;
      FunctionLiveness live;
      {
        // An IR the planner cannot plan (it says why itself later): no fusion here.
        ScopedDiagnosticHandler quiet(&getContext(), [](Diagnostic &) { return success(); });
        if (failed(analyzeLiveness(fn, live)))
          continue;
      }
      // Decided for every chain before any rewrite (a chain's residual may be an earlier
      // chain's sum, which the rewrite replaces). Each rewrite leaves the other chains'
      // liveness as it was: the sum keeps a buffer of its own, the cast's input is read one
      // op later and by nothing else.
      llvm::erase_if(adds, [&](AddOp add) { return sumInPlace(live, *matchAddNorm(add)); });
      for (AddOp add : adds) {
        AddNormChain c = *matchAddNorm(add);
        rewrite(c);
      }
    }
  }

  void rewrite(DgeluChain &c) {
    // At the GELU gradient: the pre-activation exists there (it may be recomputed after the
    // GEMM), and the GEMM's product, 4x the size of its operand under GPT-2's d_ff, never
    // needs a buffer across the ops between (the weight gradient's GEMM, a recomputation).
    Value pre = c.gelu.getX();
    OpBuilder b(c.gelu);
    // The chain's locations: the call is named as the GEMM, the bias gradient's sum into its
    // slot (LowerToEmitC.cpp) as the bias gradient.
    Location loc = FusedLoc::get(&getContext(), {c.mm.getLoc(), c.gelu.getLoc(), c.bias.getLoc()});
    auto fused = b.create<MatmulDgeluBgradOp>(
        loc, c.gelu.getResult().getType(), c.bias.getResult().getType(), c.mm.getA(),
        c.mm.getB(), pre, c.mm.getTransposeBAttr(), c.mm.getAlphaAttr());
    inherit(fused, c.mm);
    c.bias.getResult().replaceAllUsesWith(fused.getDb());
    c.bias.erase();
    c.gelu.getResult().replaceAllUsesWith(fused.getDx());
    c.gelu.erase();
    c.mm.erase();
    ++numDgelu;
  }

  void rewrite(AddNormChain &c) {
    OpBuilder b(c.add);
    auto fused = b.create<AddLayerNormOp>(
        c.add.getLoc(),
        TypeRange{c.add.getResult().getType(), c.ln.getY().getType(), c.ln.getMean().getType(),
                  c.ln.getRstd().getType()},
        c.a, c.b, c.ln.getGamma(), c.ln.getBeta(), c.ln.getEpsAttr());
    // The add's name, layer, phase and recompute marks (the call is the add's).
    for (NamedAttribute a : c.add->getDiscardableAttrs())
      fused->setAttr(a.getName(), a.getValue());
    c.ln.getY().replaceAllUsesWith(fused.getY());
    c.ln.getMean().replaceAllUsesWith(fused.getMean());
    c.ln.getRstd().replaceAllUsesWith(fused.getRstd());
    c.ln.erase();
    c.add.getResult().replaceAllUsesWith(fused.getSum());
    c.add.erase();
    if (c.cast)
      c.cast.erase();
    ++numAddNorm;
  }

  /// The residual operand of `add`, the other being `branch`.
  static Value residualOf(AddOp add, Value branch) {
    return add.getLhs() == branch ? add.getRhs() : add.getLhs();
  }

  void rewrite(BiasResidualChain &c) {
    // At the add: the residual (defined before the add) and the GEMM's operands exist.
    OpBuilder b(c.add);
    auto fused = b.create<MatmulResidualOp>(
        c.mm.getLoc(), c.add.getResult().getType(), c.mm.getA(), c.mm.getB(),
        residualOf(c.add, c.cast.getResult()), c.biasF32, c.mm.getTransposeBAttr(),
        c.mm.getAlphaAttr());
    inherit(fused, c.mm);
    c.add.getResult().replaceAllUsesWith(fused.getOut());
    c.add.erase();
    c.cast.erase();
    c.bias.erase();
    c.mm.erase();
    if (c.biasCast && c.biasCast.getResult().use_empty())
      c.biasCast.erase();
    ++numResidual;
  }

  void rewrite(BiasChain &c) {
    // At the GEMM: the bias is ready there, and every reader of the bias add (or GELU) comes
    // after it.
    OpBuilder b(c.mm);
    if (c.gelu) {
      auto t = c.bias.getResult().getType();
      auto fused = b.create<MatmulBiasGeluOp>(c.mm.getLoc(), t, t, c.mm.getA(), c.mm.getB(),
                                              c.bias.getBias(), c.mm.getTransposeBAttr(),
                                              c.mm.getAlphaAttr());
      inherit(fused, c.mm);
      c.gelu.getResult().replaceAllUsesWith(fused.getOut());
      c.bias.getResult().replaceAllUsesWith(fused.getPre());
      c.gelu.erase();
      ++numBiasGelu;
    } else {
      auto fused = b.create<MatmulBiasOp>(c.mm.getLoc(), c.bias.getResult().getType(),
                                          c.mm.getA(), c.mm.getB(), c.bias.getBias(),
                                          c.mm.getTransposeBAttr(), c.mm.getAlphaAttr());
      inherit(fused, c.mm);
      c.bias.getResult().replaceAllUsesWith(fused.getOut());
      ++numBias;
    }
    c.bias.erase();
    c.mm.erase();
  }

  void rewrite(ResidualChain &c) {
    Value branch = c.cast ? c.cast.getResult() : c.mm.getResult();
    OpBuilder b(c.add);
    auto fused = b.create<MatmulResidualOp>(
        c.mm.getLoc(), c.add.getResult().getType(), c.mm.getA(), c.mm.getB(),
        residualOf(c.add, branch), Value(), c.mm.getTransposeBAttr(), c.mm.getAlphaAttr());
    inherit(fused, c.mm);
    c.add.getResult().replaceAllUsesWith(fused.getOut());
    c.add.erase();
    if (c.cast)
      c.cast.erase();
    c.mm.erase();
    ++numResidual;
  }
};

} // namespace
