//===- DistributePass.cpp - data parallel (ZeRO-0): average gradients --------===//
//
// tg-distribute{ranks=N}: with N > 1 ranks each running the same step on its slice of
// the global batch, the gradients must be averaged before the optimizer reads them.
// Inserts one tg.all_reduce_grads over every parameter of @optimizer_step at its start
// (before tg.clip_grad_norm, so the global norm and clipping see the averaged gradient)
// and records `tg.ranks = N` on the module (the runtime and driver read it).
//
//===----------------------------------------------------------------------------===//
#include "passes/Passes.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGDISTRIBUTE
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TgDistributePass : mlir::tg::impl::TgDistributeBase<TgDistributePass> {
  using TgDistributeBase::TgDistributeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 1) {
      module.emitError() << "tg-distribute: ranks must be >= 1, got " << ranks;
      return signalPassFailure();
    }
    if (zero != 0 && zero != 1) {
      module.emitError() << "tg-distribute: zero must be 0 or 1, got " << static_cast<int64_t>(zero)
                         << (zero == 2 || zero == 3 ? " (ZeRO-2 and ZeRO-3 are not implemented)"
                                                    : "");
      return signalPassFailure();
    }
    if (module->hasAttr(kRanksAttr)) {
      module.emitError() << "tg-distribute: the module is already distributed ("
                         << kRanksAttr << " = " << module->getAttr(kRanksAttr)
                         << "); apply the pass once";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("optimizer_step");
    if (!fn || fn.isExternal()) {
      module.emitError()
          << "tg-distribute: no func.func @optimizer_step (run it after tg-autodiff)";
      return signalPassFailure();
    }
    OpBuilder b(module.getContext());
    module->setAttr(kRanksAttr, b.getI64IntegerAttr(ranks));
    if (ranks == 1)
      return;
    if (zero == 1)
      module->setAttr(kZeroAttr, b.getI64IntegerAttr(zero));
    Block &entry = fn.getBody().front();
    SmallVector<Value> params;
    for (BlockArgument arg : entry.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), kParamNameAttr))
        params.push_back(arg);
    if (params.empty()) {
      fn.emitError() << "tg-distribute: @optimizer_step has no parameter (no argument "
                        "carries tg.param)";
      return signalPassFailure();
    }
    b.setInsertionPointToStart(&entry);
    auto op = b.create<AllReduceGradsOp>(NameLoc::get(b.getStringAttr("optimizer.all_reduce")),
                                         params, b.getI64IntegerAttr(ranks));
    op->setAttr("tg.phase", b.getStringAttr("optimizer"));
    ++numReduced;
  }
};

} // namespace
