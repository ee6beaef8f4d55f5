//===- FusePass.cpp - tg-fuse: fusions as explicit ops -----------------------===//
//
// See Passes.td. Each rewrite replaces a chain by one op whose semantics are the chain's;
// the memory planner then plans the fused op (its in-place operands come from its
// MemoryOpInterface) and the lowering emits its one runtime call. Nothing later needs to
// know that the op was once a chain.
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

/// matmul (shared [K, N] weight, no batch of its own, lhs not transposed) -> [cast to a
/// wider type] -> add(residual) as the GEMM's only readers, ops in that order with nothing
/// between that could read the product: the matmul_residual that replaces the add.
/// Bias-free layers only (a bias add in between is the lowering's epilogue today).
struct ResidualChain {
  MatmulOp mm;
  CastOp cast; ///< null when the product is already in the stream's type
  AddOp add;
  Value res;
};

std::optional<ResidualChain> matchResidual(MatmulOp mm) {
  if (mm.getTransposeA() || cast<RankedTensorType>(mm.getB().getType()).getRank() != 2 ||
      cast<RankedTensorType>(mm.getA().getType()).getRank() < 2 || !mm.getResult().hasOneUse())
    return std::nullopt;
  Operation *user = *mm.getResult().getUsers().begin();
  ResidualChain c{mm, dyn_cast<CastOp>(user), AddOp(), Value()};
  Value branch = mm.getResult();
  if (c.cast) {
    // Widening only (exact): the fused op computes in f32 and rounds once to the stream.
    Type from = elemOf(c.cast.getX()), to = elemOf(c.cast.getResult());
    if (!to.isF32() || from.isF32() || !c.cast.getResult().hasOneUse())
      return std::nullopt;
    branch = c.cast.getResult();
    user = *branch.getUsers().begin();
  }
  c.add = dyn_cast<AddOp>(user);
  if (!c.add || c.add.getLhs() == c.add.getRhs() ||
      c.add->getBlock() != mm->getBlock())
    return std::nullopt;
  c.res = c.add.getLhs() == branch ? c.add.getRhs() : c.add.getLhs();
  if (c.res.getType() != c.add.getResult().getType())
    return std::nullopt;
  return c;
}

struct TgFusePass : mlir::tg::impl::TgFuseBase<TgFusePass> {
  using TgFuseBase::TgFuseBase;

  void runOnOperation() override {
    SmallVector<ResidualChain> chains;
    getOperation().walk([&](MatmulOp mm) {
      if (auto c = matchResidual(mm))
        chains.push_back(*c);
    });
    for (ResidualChain &c : chains) {
      // The residual again from the add's operands: an earlier rewrite may have replaced
      // it (the stream's previous add is the previous chain's).
      Value branch = c.cast ? c.cast.getResult() : c.mm.getResult();
      c.res = c.add.getLhs() == branch ? c.add.getRhs() : c.add.getLhs();
      // The fused op runs where the add ran: the residual (defined before the add) and the
      // GEMM's operands (defined before the GEMM) all exist there.
      OpBuilder b(c.add);
      // Named as the GEMM (its projection: "layers.3.attn.proj"), which it mostly is.
      auto fused = b.create<MatmulResidualOp>(
          c.mm.getLoc(), c.add.getResult().getType(), c.mm.getA(), c.mm.getB(), c.res,
          c.mm.getTransposeBAttr(), c.mm.getAlphaAttr());
      for (NamedAttribute a : c.mm->getDiscardableAttrs()) // tg.layer, tg.phase, tg.recompute
        fused->setAttr(a.getName(), a.getValue());
      c.add.getResult().replaceAllUsesWith(fused.getOut());
      c.add.erase();
      if (c.cast)
        c.cast.erase();
      c.mm.erase();
      ++numResidual;
    }
  }
};

} // namespace
