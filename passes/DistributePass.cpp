//===- DistributePass.cpp - data parallel: ZeRO-0..3 -------------------------===//
//
// tg-distribute{ranks=N zero=Z}: N ranks each run the same step on their slice of the
// global batch.
//  - Z = 0, 1: the gradients must be averaged before the optimizer reads them: one
//    tg.all_reduce_grads over every parameter at the start of @optimizer_step (before
//    tg.clip_grad_norm, so the global norm and clipping see the averaged gradient). Z = 1
//    also records tg.zero = 1 (tg-plan-memory shards the AdamW moments by whole parameters).
//  - Z = 2: gradients sharded (Rajbhandari et al. 2020, P_os+g): every tg.accumulate_grad
//    of @micro_step becomes a tg.reduce_scatter_grad right after the gradient is computed.
//  - Z = 3: values sharded too (P_os+g+p, PyTorch FSDP): every use of a parameter in
//    @micro_step / @eval_step reads a tg.gather_param inserted before each group of uses
//    (one phase within one layer).
// Records `tg.ranks = N` on the module (the runtime and driver read it) and `tg.zero = Z`.
//
//===----------------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include <map>

namespace mlir::tg {
#define GEN_PASS_DEF_TGDISTRIBUTE
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// tg.layer of an op, -1 when it has none.
int64_t layerOf(Operation *op) {
  auto a = op->getAttrOfType<IntegerAttr>(kLayerAttr);
  return a ? a.getInt() : -1;
}

StringRef phaseOf(Operation *op) {
  auto a = op->getAttrOfType<StringAttr>(kPhaseAttr);
  return a ? a.getValue() : StringRef("forward");
}

/// The tg.param name of a block argument ("" when it is not a parameter).
StringRef paramName(func::FuncOp fn, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &fn.getBody().front())
    return "";
  auto a = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr);
  return a ? a.getValue() : StringRef();
}

struct TgDistributePass : mlir::tg::impl::TgDistributeBase<TgDistributePass> {
  using TgDistributeBase::TgDistributeBase;

  /// Z >= 2: every tg.accumulate_grad becomes a tg.reduce_scatter_grad right after its
  /// gradient is computed (a parameter with several, e.g. tied embeddings, gets one per
  /// gradient: each adds into the shard, and no whole gradient waits for the other).
  LogicalResult scatterGradients(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    llvm::DenseSet<Value> scattered;
    OpBuilder b(fn.getContext());
    for (auto acc : llvm::make_early_inc_range(body.getOps<AccumulateGradOp>())) {
      Value g = acc.getGrad();
      if (Operation *d = g.getDefiningOp())
        b.setInsertionPointAfter(d);
      else
        b.setInsertionPoint(acc);
      auto rs = b.create<ReduceScatterGradOp>(acc.getLoc(), acc.getParam(), g,
                                              b.getI64IntegerAttr(ranks));
      rs->setAttr(kPhaseAttr, b.getStringAttr("backward"));
      if (Operation *d = g.getDefiningOp(); d && d->hasAttr(kLayerAttr))
        rs->setAttr(kLayerAttr, d->getAttr(kLayerAttr));
      scattered.insert(acc.getParam());
      acc.erase();
      ++numScattered;
    }
    for (BlockArgument arg : fn.getArguments())
      if (!paramName(fn, arg).empty() && !scattered.contains(arg))
        return fn.emitError() << "tg-distribute: zero=" << static_cast<int64_t>(zero)
                              << " shards the gradients, but parameter \""
                              << paramName(fn, arg) << "\" has no tg.accumulate_grad in @"
                              << fn.getName();
    return success();
  }

  /// Z = 3: every read of a parameter (or of its working copy) goes through a
  /// tg.gather_param. Uses are grouped in block order: a group ends where the phase
  /// changes or an op of another layer lies between two uses.
  void gatherParameters(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    std::vector<Operation *> ops;
    llvm::DenseMap<Operation *, int64_t> position;
    for (Operation &op : body) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
    OpBuilder b(fn.getContext());
    auto gatherUses = [&](Value source, StringRef name) {
      SmallVector<Operation *> users;
      for (Operation *u : source.getUsers()) {
        if (isa<CastOp>(u) && u->hasAttr(kWorkingCopyAttr))
          continue; // the working copy itself is sharded the same way
        if (isa<ReduceScatterGradOp, AccumulateGradOp>(u))
          continue; // names the parameter's gradient slot, reads no value
        if (position.count(u) && !llvm::is_contained(users, u))
          users.push_back(u);
      }
      llvm::sort(users, [&](Operation *x, Operation *y) {
        return position.lookup(x) < position.lookup(y);
      });
      size_t start = 0;
      for (size_t i = 1; i <= users.size(); ++i) {
        bool split = i == users.size();
        if (!split) {
          Operation *prev = users[i - 1], *next = users[i];
          int64_t layer = layerOf(users[start]);
          split = phaseOf(next) != phaseOf(users[start]) || layerOf(next) != layer;
          for (int64_t k = position.lookup(prev) + 1; !split && k < position.lookup(next); ++k)
            split = ops[k]->hasAttr(kLayerAttr) && layerOf(ops[k]) != layer;
        }
        if (!split)
          continue;
        Operation *first = users[start];
        b.setInsertionPoint(first);
        auto g = b.create<GatherParamOp>(NameLoc::get(b.getStringAttr(name + ".gather")),
                                         source.getType(), source, b.getI64IntegerAttr(ranks));
        g->setAttr(kPhaseAttr, b.getStringAttr(phaseOf(first)));
        if (first->hasAttr(kLayerAttr))
          g->setAttr(kLayerAttr, first->getAttr(kLayerAttr));
        for (size_t k = start; k < i; ++k)
          users[k]->replaceUsesOfWith(source, g.getResult());
        ++numGathered;
        start = i;
      }
    };
    for (BlockArgument arg : fn.getArguments()) {
      StringRef name = paramName(fn, arg);
      if (name.empty())
        continue;
      gatherUses(arg, name);
      for (Operation *u : llvm::to_vector(arg.getUsers()))
        if (isa<CastOp>(u) && u->hasAttr(kWorkingCopyAttr))
          gatherUses(u->getResult(0), name);
    }
  }

  /// Z = 3, FSDP's prefetch: the gathers of each group (one phase of one layer; a gather
  /// outside the layers is a group of its own) move together to the group's first gather,
  /// then each group but the first moves to right after the first op that reads the
  /// previous group's parameters, where the lowering waits for that group: so a layer's
  /// parameters are gathered while the layer before it computes (two groups whole at a time;
  /// the plan sees it). The working-copy casts the gathers read move up with them (they
  /// emit no code).
  void prefetchGathers(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    SmallVector<SmallVector<GatherParamOp>> groups;
    std::map<std::pair<std::string, int64_t>, size_t> index;
    for (auto g : body.getOps<GatherParamOp>()) {
      int64_t layer = layerOf(g);
      if (layer < 0) {
        groups.push_back({g});
        continue;
      }
      auto [it, fresh] = index.try_emplace({phaseOf(g).str(), layer}, groups.size());
      if (fresh)
        groups.emplace_back();
      groups[it->second].push_back(g);
    }
    // Puts g right after `after` (or before `before`), its working-copy cast ahead of it.
    auto place = [](GatherParamOp g, Operation *after) {
      g->moveAfter(after);
      if (auto c = g.getSource().getDefiningOp<CastOp>(); c && g->isBeforeInBlock(c))
        c->moveBefore(g);
    };
    for (auto &grp : groups)
      for (size_t i = 1; i < grp.size(); ++i)
        place(grp[i], grp[i - 1]);
    for (size_t k = 1; k < groups.size(); ++k) {
      Operation *firstUser = nullptr;
      for (GatherParamOp g : groups[k - 1])
        for (Operation *u : g.getResult().getUsers())
          if (!firstUser || u->isBeforeInBlock(firstUser))
            firstUser = u;
      if (!firstUser || !firstUser->isBeforeInBlock(groups[k].front()))
        continue; // nothing to gain
      Operation *at = firstUser;
      for (GatherParamOp g : groups[k]) {
        place(g, at);
        at = g;
      }
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 1) {
      module.emitError() << "tg-distribute: ranks must be >= 1, got " << ranks;
      return signalPassFailure();
    }
    if (zero < 0 || zero > 3) {
      module.emitError() << "tg-distribute: zero must be 0, 1, 2 or 3, got "
                         << static_cast<int64_t>(zero);
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
    if (zero >= 1)
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
    if (zero >= 2) {
      auto micro = module.lookupSymbol<func::FuncOp>("micro_step");
      if (!micro || micro.isExternal()) {
        module.emitError() << "tg-distribute: zero=" << static_cast<int64_t>(zero)
                           << " needs func.func @micro_step (run it after tg-autodiff)";
        return signalPassFailure();
      }
      if (failed(scatterGradients(micro)))
        return signalPassFailure();
      if (zero == 3) {
        markWorkingCopies(module); // the copies are sharded like the values
        for (StringRef name : {"micro_step", "eval_step"})
          if (auto f = module.lookupSymbol<func::FuncOp>(name); f && !f.isExternal()) {
            gatherParameters(f);
            prefetchGathers(f);
          }
      }
      return;
    }
    b.setInsertionPointToStart(&entry);
    auto op = b.create<AllReduceGradsOp>(NameLoc::get(b.getStringAttr("optimizer.all_reduce")),
                                         params, b.getI64IntegerAttr(ranks));
    op->setAttr("tg.phase", b.getStringAttr("optimizer"));
    ++numReduced;
  }
};

} // namespace
