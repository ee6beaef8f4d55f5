//===- RematerializePass.cpp - tg-rematerialize --------------------------------===//
//
// Activation checkpointing as a rewrite of @micro_step (after tg-autodiff and CSE):
// forward ops of a transformer layer (tg.layer = i) are cloned just before the first
// backward op that reads their results, and the backward reads the clones, so the
// originals die at their last forward use (Chen et al. 2016, "Training Deep Nets with
// Sublinear Memory Cost"; Korthikanti et al. 2022 for the selective variant).
//
// Policies (per layer; layers are the only unit, identified by tg.layer):
//   none       nothing is recomputed.
//   selective  keep the GEMM and attention outputs (matmul, its fused bias add, attention's
//              out and logsumexp); recompute the cheap large ones from them: layer-norm
//              outputs and statistics, GELU, activation casts, residual adds, head
//              split / transposes, dropout (its mask regenerates from the counter-based RNG),
//              naive attention's mask and softmax.
//   gelu       keep everything but the GELU outputs (the MLP's widest activation, d_ff per
//              token); recompute each from its kept input just before the backward reads it
//              (the fc2 weight gradient). What torch.compile's partitioner does by default;
//              one elementwise op per layer.
//   (all)      the low-precision copies of the weights (casts of parameters) are kept.
//   layer      keep only what the layer reads from outside (its input, the residual stream,
//              and the parameters); recompute every forward op of the layer
//              (torch.utils.checkpoint per block).
//   layer-attn layer, but keep the fused attention's output and logsumexp (B T d + B H T
//              values per layer): its backward reads them, so the flash forward, the
//              layer's most expensive op after the GEMMs, is not run twice.
//   budget     per-layer mix of the three with the fewest extra FLOPs whose planned arena of
//              @micro_step (the real planner, passes/MemoryPlanner.h) fits budget-bytes;
//              refused, with the smallest achievable arena, when none fits.
//
// Clones carry tg.recompute (CSE does not merge them back: their attributes differ), the
// phase "backward" and their layer. The pass records tg.remat = {policy (a
// #tg.checkpointing<...>), extra_flops, step_flops, recomputed_ops, and for budget mix =
// "N layer, N selective, N none"} on the module. FLOPs: a matmul 2 m n k per batch entry,
// attention 4 b h t_q t_k hd over the visible (causal / windowed) pairs, every other op
// one FLOP per output element.
//
//===----------------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/MemoryPlanner.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassRegistry.h"

#include <limits>
#include <map>
#include <mutex>
#include <set>

#define DEBUG_TYPE "tg-rematerialize"

namespace mlir::tg {
#define GEN_PASS_DEF_TGREMATERIALIZE
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {


/// FLOPs of one op: its own count (CostOpInterface, dialect/TgOpKnowledge.cpp), else one
/// per result element (the optimizer and collective ops).
int64_t opFlops(Operation *op) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.flops();
  int64_t n = 0;
  for (Value r : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(r.getType()))
      n += t.getNumElements();
  return n;
}

int64_t functionFlops(func::FuncOp fn) {
  int64_t total = 0;
  fn.walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "tg")
      total += opFlops(op);
  });
  return total;
}

enum class Mode { None = 0, Selective = 1, Layer = 2, Gelu = 3, LayerAttn = 4 };
using ModeMap = std::map<int64_t, Mode>;

/// A cast of a parameter (the low-precision weight copy of mixed precision): never
/// recomputed. It is small (parameters, not activations) and recomputing it would repeat a
/// full read of the master weights for nothing.
bool isParameterCast(Operation *op) {
  auto c = dyn_cast<CastOp>(op);
  return c && isa<BlockArgument>(c.getX());
}

/// Whether selective rematerialization keeps `op`'s results (the expensive ones): the op
/// says (CostOpInterface::keptBySelective).
bool keptBySelective(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost && cost.keptBySelective();
}

/// Layer of an op, or -1.
int64_t layerOf(Operation *op) {
  auto a = op->getAttrOfType<IntegerAttr>(kLayerAttr);
  return a ? a.getInt() : -1;
}

bool isForward(Operation *op) {
  auto p = op->getAttrOfType<StringAttr>(kPhaseAttr);
  return !p || p.getValue() == "forward";
}

struct Stats {
  int64_t extraFlops = 0, recomputedOps = 0;
};

/// Applies per-layer modes to @micro_step. Returns the extra FLOPs and clone count.
Stats applyModes(func::FuncOp fn, const std::map<int64_t, Mode> &modes) {
  Stats st;
  Block &body = fn.getBody().front();
  MLIRContext *ctx = fn.getContext();
  // Layers in the order their backward starts (the last layer first).
  std::map<int64_t, SmallVector<Operation *>> fwd;
  for (Operation &op : body)
    if (isForward(&op) && layerOf(&op) >= 0)
      fwd[layerOf(&op)].push_back(&op);
  for (auto &[layer, ops] : fwd) {
    auto it = modes.find(layer);
    Mode mode = it == modes.end() ? Mode::None : it->second;
    if (mode == Mode::None)
      continue;
    // Ops to recompute: every forward op of the layer (layer), or the cheap ones whose
    // operands come from outside the layer, kept results, or other recomputed ops.
    // What the forward of another layer (or the head) reads from this one — the layer's
    // output, the next layer's input — is the checkpoint: kept, never recomputed.
    llvm::SmallPtrSet<Operation *, 32> recompute;
    for (Operation *op : ops) {
      bool readElsewhere = llvm::any_of(op->getUsers(), [&](Operation *u) {
        return isForward(u) && layerOf(u) != layer;
      });
      bool cheap = mode == Mode::Gelu        ? isa<GeluOp, SwigluOp>(op)
                   : mode == Mode::Layer     ? true
                   : mode == Mode::LayerAttn ? !isa<AttentionOp, AttentionQKVOp>(op)
                                             : !keptBySelective(op);
      if (!readElsewhere && !isParameterCast(op) && cheap)
        recompute.insert(op);
    }
    // Values of recomputed ops that the backward reads, and the first such reader.
    Operation *first = nullptr;
    for (Operation *op : ops) {
      if (!recompute.contains(op))
        continue;
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!isForward(user) && (!first || user->isBeforeInBlock(first)))
            first = user;
    }
    if (!first)
      continue;
    OpBuilder b(first);
    IRMapping map;
    SmallVector<Operation *> clones;
    for (Operation *op : ops) {
      if (!recompute.contains(op))
        continue;
      Operation *c = b.clone(*op, map);
      c->setAttr(kRecomputeAttr, UnitAttr::get(ctx));
      c->setAttr(kPhaseAttr, StringAttr::get(ctx, "backward"));
      c->removeAttr("tg.offsets");
      clones.push_back(c);
    }
    // The backward reads the clones.
    for (auto [op, c] : llvm::zip(llvm::make_filter_range(
                                      ops, [&](Operation *o) { return recompute.contains(o); }),
                                  clones))
      for (auto [r, rc] : llvm::zip(op->getResults(), c->getResults()))
        r.replaceUsesWithIf(rc, [&](OpOperand &use) {
          Operation *u = use.getOwner();
          return !isForward(u) && !u->hasAttr(kRecomputeAttr);
        });
    // Clones nothing reads (recomputed only to feed other clones that are unused).
    for (Operation *c : llvm::reverse(clones)) {
      if (c->use_empty()) {
        c->erase();
        continue;
      }
      st.extraFlops += opFlops(c);
      ++st.recomputedOps;
    }
  }
  return st;
}

/// Planned arena bytes of @micro_step (the real planner on the current IR). With
/// `fitsBytes` >= 0 only whether the arena is <= fitsBytes is asked for: the answer is then
/// <= fitsBytes exactly when the planned arena is, but may be another number (the planner
/// stops once it knows; tgc::PlanOptions::fitsBytes).
FailureOr<int64_t> plannedArena(func::FuncOp fn, int64_t fitsBytes = -1) {
  FunctionLiveness live;
  if (failed(analyzeLiveness(fn, live)))
    return failure();
  std::vector<tgc::PlanBuffer> buffers = toPlanBuffers(live);
  tgc::PlanOptions options;
  options.fitsBytes = fitsBytes;
  return tgc::planArena(buffers, options).arenaBytes;
}

/// "1 layer", "N layers".
std::string layersWord(size_t n) { return std::to_string(n) + (n == 1 ? " layer" : " layers"); }

struct TgRematerializePass : mlir::tg::impl::TgRematerializeBase<TgRematerializePass> {
  using TgRematerializeBase::TgRematerializeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(module.getContext());
    // Bad options fail before the module is looked at (as tg-mixed-precision's do); the
    // policy is an enum (its option parser refused an unknown one).
    const Checkpointing kind = policy;
    if (kind == Checkpointing::budget && budgetBytes <= 0) {
      module.emitError() << "tg-rematerialize: policy budget needs budget-bytes > 0";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("micro_step");
    if (!fn || fn.isExternal()) {
      module.emitError() << "tg-rematerialize: no func.func @micro_step (run it after tg-autodiff)";
      return signalPassFailure();
    }
    if (module->hasAttr("tg.remat")) {
      module.emitError() << "tg-rematerialize: the module is already rematerialized";
      return signalPassFailure();
    }
    // The parameters' working copies are persistent in the final plan: marked first, so
    // that every arena this pass plans is the one tg-plan-memory will plan.
    markWorkingCopies(module);
    std::set<int64_t> layers;
    fn.walk([&](Operation *op) {
      if (layerOf(op) >= 0)
        layers.insert(layerOf(op));
    });
    if (kind != Checkpointing::none && layers.empty()) {
      fn.emitError() << "tg-rematerialize: no op carries tg.layer (build the module with the "
                        "tgc frontend): nothing to checkpoint";
      return signalPassFailure();
    }
    int64_t stepFlops = functionFlops(fn);
    std::map<int64_t, Mode> modes;
    if (kind == Checkpointing::budget) {
      auto chosen = chooseForBudget(fn, layers);
      if (failed(chosen))
        return signalPassFailure();
      modes = std::move(*chosen);
    } else {
      Mode m = kind == Checkpointing::layer        ? Mode::Layer
               : kind == Checkpointing::layer_attn ? Mode::LayerAttn
               : kind == Checkpointing::selective  ? Mode::Selective
               : kind == Checkpointing::gelu       ? Mode::Gelu
                                                   : Mode::None;
      for (int64_t l : layers)
        modes[l] = m;
    }
    Stats st = applyModes(fn, modes);
    SmallVector<NamedAttribute> remat = {
        b.getNamedAttr("policy", CheckpointingAttr::get(b.getContext(), kind)),
        b.getNamedAttr("extra_flops", b.getI64IntegerAttr(st.extraFlops)),
        b.getNamedAttr("step_flops", b.getI64IntegerAttr(stepFlops)),
        b.getNamedAttr("recomputed_ops", b.getI64IntegerAttr(st.recomputedOps)),
    };
    // The budget's choice, for the memory report ("budget: 0 layer, 1 selective, 1 none").
    if (kind == Checkpointing::budget) {
      int counts[3] = {0, 0, 0};
      for (auto &[l, m] : modes)
        ++counts[(int)m];
      remat.push_back(b.getNamedAttr(
          "mix", b.getStringAttr(std::to_string(counts[2]) + " layer, " +
                                 std::to_string(counts[1]) + " selective, " +
                                 std::to_string(counts[0]) + " none")));
    }
    module->setAttr("tg.remat", b.getDictionaryAttr(remat));
    numRecomputed = st.recomputedOps;
  }

  /// The arena tg-plan-memory would plan with `modes`: on a copy of the module (nested in
  /// it while it exists, for runPipeline), @micro_step rewritten by `modes`, then `tail`
  /// (plan-after) run; the largest planned arena of its step functions (they share the
  /// arena). With `fitsBytes` >= 0 @micro_step's is only asked whether it is <= fitsBytes
  /// (plannedArena). When the tail ends in tg-plan-memory (tg-pipeline's plan-after does,
  /// with drop-unread: the arena without the gradients written straight into their slots),
  /// the arena that planned. Fails where the tail or the planner does (they say why).
  FailureOr<int64_t> candidateArena(func::FuncOp fn, const ModeMap& modes, OpPassManager& tail,
                                    int64_t fitsBytes) {
    ModuleOp module = getOperation();
    SmallVector<Operation*> ops;
    for (Operation& op : *module.getBody()) ops.push_back(&op);
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto copy = b.create<ModuleOp>(module.getLoc());
    copy->setDiscardableAttrs(module->getDiscardableAttrDictionary());
    b.setInsertionPointToStart(copy.getBody());
    IRMapping map;
    for (Operation* op : ops) b.clone(*op, map);
    auto step = copy.lookupSymbol<func::FuncOp>(fn.getSymName());
    applyModes(step, modes);
    FailureOr<int64_t> arena = 0;
    if (!tail.empty() && failed(runPipeline(tail, copy))) arena = failure();
    // A tail that ends in tg-plan-memory (tg-pipeline's) planned the copy already: its arena.
    if (auto plan = copy->getAttrOfType<DictionaryAttr>("tg.plan"); plan && succeeded(arena)) {
      auto bytes = plan.getAs<IntegerAttr>("arena_bytes");
      arena = bytes ? FailureOr<int64_t>(bytes.getInt()) : FailureOr<int64_t>(failure());
      copy->erase();
      return arena;
    }
    for (auto f : copy.getOps<func::FuncOp>()) {
      if (failed(arena) || f.isExternal()) continue;
      FailureOr<int64_t> a = plannedArena(f, f == step ? fitsBytes : -1);
      arena = failed(a) ? a : FailureOr<int64_t>(std::max(*arena, *a));
    }
    copy->erase();
    return arena;
  }

  /// The per-layer modes with the fewest extra FLOPs whose planned arena fits. Candidates,
  /// in increasing recomputation: the first s layers selective (s = 0..L), then all
  /// selective with the first f layers fully recomputed (f = 1..L). Each is applied to a
  /// clone of @micro_step and planned with the real planner.
  FailureOr<ModeMap> chooseForBudget(func::FuncOp fn,
                                                     const std::set<int64_t> &layers) {
    std::vector<int64_t> ls(layers.begin(), layers.end());
    std::vector<std::map<int64_t, Mode>> candidates;
    for (size_t s = 0; s <= ls.size(); ++s) {
      std::map<int64_t, Mode> m;
      for (size_t i = 0; i < ls.size(); ++i)
        m[ls[i]] = i < s ? Mode::Selective : Mode::None;
      candidates.push_back(m);
    }
    for (size_t f = 1; f <= ls.size(); ++f) {
      std::map<int64_t, Mode> m;
      for (size_t i = 0; i < ls.size(); ++i)
        m[ls[i]] = i < f ? Mode::Layer : Mode::Selective;
      candidates.push_back(m);
    }
    // plan-after: the passes the pipeline runs between this pass and tg-plan-memory.
    OpPassManager tail(ModuleOp::getOperationName());
    {
      // The pipeline is parsed by pass name: tgc registers no passes of its own (tg-opt
      // does); registering the same passes again is a no-op.
      static std::once_flag registered;
      std::call_once(registered, [] { registerTgPasses(); });
      std::string why;
      llvm::raw_string_ostream os(why);
      if (failed(parsePassPipeline(planAfter, tail, os))) {
        // The parser's first line (the rest repeats the text with a caret under it).
        fn->getParentOfType<ModuleOp>().emitError()
            << "tg-rematerialize: plan-after '" << planAfter
            << "' is no pass pipeline: " << StringRef(why).split('\n').first;
        return failure();
      }
    }
    // Extra FLOPs never decrease along the candidates (each adds recomputation), so the
    // fewest-FLOPs candidate that fits is the first one that fits. Its arena does not
    // increase along them either in every case measured (2026-11-28: GPT-2 small, SmolLM2,
    // Llama 3.2 1B at micro-batches 1, 8 and 16, 357 candidates, one bump of 0.15%), so the
    // first fitting one is found by bisection: ~log2(2L + 1) + 2 planner runs instead of
    // 2L + 1. Where a bump breaks the order, the mix chosen may recompute more than
    // necessary; it still fits the budget.
    // `fitsOnly`: only whether the arena is <= budgetBytes matters (the number returned is
    // then on the same side of the budget as the planned arena, not necessarily equal).
    auto arenaOf = [&](size_t c, bool fitsOnly = false) -> FailureOr<int64_t> {
      return candidateArena(fn, candidates[c], tail, fitsOnly ? (int64_t)budgetBytes : -1);
    };
    const size_t last = candidates.size() - 1;
    FailureOr<int64_t> smallest = arenaOf(last, /*fitsOnly=*/true);
    if (failed(smallest))
      return failure();
    if (*smallest > budgetBytes && failed(smallest = arenaOf(last))) // named below: exact
      return failure();
    if (*smallest > budgetBytes) {
      // The arenas mostly shrink along the candidates, but not always: a fully recomputed
      // layer's clones (its layer norms with their ones columns, its GEMMs' outputs) are live
      // together in the backward, and at small shapes that peak is above all-selective's
      // (test/passes/rematerialize-plan-after.test). So before refusing, every candidate is
      // planned: the first that fits (the fewest FLOPs) is taken, else the first with the
      // smallest arena is named.
      size_t best = 0;
      int64_t bestArena = std::numeric_limits<int64_t>::max();
      for (size_t c = 0; c <= last; ++c) {
        FailureOr<int64_t> a = c == last ? smallest : arenaOf(c);
        if (failed(a))
          return failure();
        if (*a <= budgetBytes) return FailureOr<ModeMap>(candidates[c]);
        if (*a < bestArena) { // the first candidate with the smallest arena
          bestArena = *a;
          best = c;
        }
      }
      fn.emitError() << "tg-rematerialize: no checkpointing fits a budget of "
                     << (int64_t)budgetBytes << " bytes of arena; the smallest planned arena is "
                     << bestArena << " bytes ("
                     << (best <= ls.size() ? layersWord(best) + " selective"
                                           : "all selective, " + layersWord(best - ls.size()) +
                                                 " fully recomputed")
                     << "): raise the budget, lower the micro-batch "
                        "(training.batch_size) and raise training.grad_accum, or use a lower "
                        "precision";
      return failure();
    }
    // Invariant: candidate hi fits; candidate lo does not (lo = -1: none known).
    int64_t lo = -1, hi = (int64_t)last;
    while (hi - lo > 1) {
      int64_t mid = lo < 0 ? 0 : (lo + hi) / 2; // the cheapest candidate is tried first
      FailureOr<int64_t> arena = arenaOf((size_t)mid, /*fitsOnly=*/true);
      if (failed(arena))
        return failure();
      (*arena <= budgetBytes ? hi : lo) = mid;
    }
    return FailureOr<ModeMap>(candidates[hi]);
  }
};

} // namespace
