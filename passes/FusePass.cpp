//===- FusePass.cpp - tg-fuse: fusions as explicit ops -----------------------===//
//
// See Passes.td. Each rewrite replaces a chain by one op whose semantics are the chain's;
// the memory planner then plans the fused op (its in-place operands come from its
// MemoryOpInterface) and the lowering emits its one runtime call. Nothing later needs to
// know that the op was once a chain: the planner no longer predicts the lowering's
// fusions, and the lowering no longer checks the plan's bytes to decide them.
//
//===----------------------------------------------------------------------------===//
#include "passes/Passes.h"

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
  if (!linearLayer(mm) || !mm.getResult().hasOneUse())
    return std::nullopt;
  auto bias = dyn_cast<BiasAddOp>(*mm.getResult().getUsers().begin());
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
  if (!linearLayer(mm) || !mm.getResult().hasOneUse())
    return std::nullopt;
  Operation *user = *mm.getResult().getUsers().begin();
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
    }
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
