//===- PlanMemoryPass.cpp - static memory planning ---------------------------===//
#include "passes/LowerToEmitC.h"
#include "passes/MemoryPlan.h"
#include "passes/MemoryPlanner.h"
#include "passes/Passes.h"

#define DEBUG_TYPE "tg-plan-memory"

namespace mlir::tg {
#define GEN_PASS_DEF_TGPLANMEMORY
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;
using tgc::PlanBuffer;
using tgc::PlanResult;
using tgc::planArena;
using tgc::verifyPlan;

namespace {

int64_t alignUp(int64_t x) { return (x + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

struct TgPlanMemoryPass : mlir::tg::impl::TgPlanMemoryBase<TgPlanMemoryPass> {
  using TgPlanMemoryBase::TgPlanMemoryBase;

  /// The workspace region: `base` (the option: the cuBLASLt scratch; 0 = a backend without
  /// one, then 0) raised to the largest single scratch need of an op of the module, which
  /// each op states (MemoryOpInterface::workspaceBytes, dialect/TgOpKnowledge.cpp, after
  /// runtime/cuda/CudaRuntime.h). Rounded up to 256 bytes.
  static int64_t workspaceFor(ModuleOp module, int64_t base) {
    if (base <= 0)
      return 0;
    int64_t need = base;
    module.walk([&](MemoryOpInterface op) { need = std::max(need, op.workspaceBytes()); });
    return (need + 255) / 256 * 256;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(module.getContext());
    if (commBytes < 0) {
      module.emitError() << "tg-plan-memory: comm-bytes must be >= 0, got "
                         << static_cast<int64_t>(commBytes);
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("micro_step");
    if (!fn)
      fn = module.lookupSymbol<func::FuncOp>("eval_step");
    if (!fn) {
      module.emitError() << "tg-plan-memory: no @micro_step or @eval_step (run -tg-autodiff first)";
      return signalPassFailure();
    }
    // Persistent region: all values, all gradients, all first moments, all second
    // moments, then the inputs. Every slot 256-byte aligned. Values and gradients have the
    // parameter's type (f32 master weights, or bf16 in the pure policy); the moments have
    // the tg.moment_type of the argument (f32 when absent).
    struct Param {
      StringAttr name;
      RankedTensorType type;
      Type momentType;
      int64_t bytes, momentBytes;
      DictionaryAttr argAttrs;
    };
    SmallVector<Param> params;
    SmallVector<std::pair<StringAttr, RankedTensorType>> inputs;
    for (BlockArgument arg : fn.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr)) {
        Type moment = b.getF32Type();
        if (auto m = fn.getArgAttrOfType<TypeAttr>(arg.getArgNumber(), kMomentTypeAttr))
          moment = m.getValue();
        auto momentTensor = RankedTensorType::get(type.getShape(), moment);
        if (tensorBytes(type) < 0 || !isa<FloatType>(type.getElementType()) ||
            tensorBytes(momentTensor) < 0 || !isa<FloatType>(moment)) {
          fn.emitError() << "tg-plan-memory: parameter " << name
                         << " needs a static shape and f32, bf16 or f16 value and moment types, got "
                         << type << " and moments " << moment;
          return signalPassFailure();
        }
        params.push_back({name, type, moment, tensorBytes(type), tensorBytes(momentTensor),
                          fn.getArgAttrDict(arg.getArgNumber())});
      } else if (auto in = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kInputAttr)) {
        inputs.push_back({in, type});
      }
    }
    // Within each slot group the parameters AdamW does not decay come first, then those
    // it decays (stable otherwise), so that the optimizer runs over two contiguous ranges
    // (the lowering merges AdamW / grad-norm calls over contiguous slots).
    SmallVector<size_t> order;
    for (size_t i = 0; i < params.size(); ++i)
      order.push_back(i);
    auto decays = [&](size_t i) {
      return params[i].argAttrs && params[i].argAttrs.get(kDecayAttr) != nullptr;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t c) { return !decays(a) && decays(c); });
    // tg-bias-rows' pairs: each bias right after its weight in every slot group, its slots
    // 1 + kBiasPadRows rows of n (the zero rows the forward GEMM reads after the bias row
    // and the weight gradient writes), so [W; b; 0] is one [d + 8, n] matrix everywhere.
    SmallVector<int64_t> padRows(params.size(), 0);
    SmallVector<bool> rowsWeight(params.size(), false); // a weight whose bias rows follow it
    if (auto pairs = module->getAttrOfType<ArrayAttr>("tg.bias_rows")) {
      llvm::StringMap<size_t> byName;
      for (auto [i, p] : llvm::enumerate(params))
        byName[p.name.getValue()] = i;
      llvm::DenseMap<size_t, size_t> biasAfter; // weight index -> bias index
      for (Attribute a : pairs) {
        auto pair = dyn_cast<ArrayAttr>(a);
        auto w = pair && pair.size() == 2 ? dyn_cast<StringAttr>(pair[0]) : StringAttr();
        auto bi = pair && pair.size() == 2 ? dyn_cast<StringAttr>(pair[1]) : StringAttr();
        if (!w || !bi || !byName.count(w.getValue()) || !byName.count(bi.getValue())) {
          module.emitError() << "tg-plan-memory: tg.bias_rows names no [weight, bias] pair of "
                                "parameters: "
                             << a;
          return signalPassFailure();
        }
        biasAfter[byName[w.getValue()]] = byName[bi.getValue()];
        padRows[byName[bi.getValue()]] = kBiasPadRows;
        rowsWeight[byName[w.getValue()]] = true;
      }
      SmallVector<size_t> paired;
      for (size_t i : order) {
        if (padRows[i])
          continue;
        paired.push_back(i);
        if (auto it = biasAfter.find(i); it != biasAfter.end())
          paired.push_back(it->second);
      }
      order = std::move(paired);
    }
    // ZeRO-1 (tg.zero = 1 with tg.ranks = N > 1): the parameters, in slot order, are cut
    // into N contiguous ranges of about equal moment bytes (whole parameters; a range may be
    // empty); rank r holds the moments of range r only. Each rank's m (and v) block is the
    // size of the largest range and holds its range in slot order, so a parameter's m_offset
    // is the same number on every rank but only its owner's memory holds its moments.
    int64_t ranks = 1, zero = 0;
    if (auto a = module->getAttrOfType<IntegerAttr>(kRanksAttr))
      ranks = a.getInt();
    if (auto a = module->getAttrOfType<IntegerAttr>(kZeroAttr))
      zero = a.getInt();
    const bool sharded = zero == 1 && ranks > 1;
    // ZeRO-2/3 (tg.zero >= 2): every tensor is cut evenly, chunk = ceil(numel / N) elements
    // per rank (rank r holds elements [r*chunk, (r+1)*chunk), the last ranks' tails padded
    // with zeros); the gradient and moment slots (and under ZeRO-3 the value slots) are one
    // chunk, at offsets that are the same on every rank.
    const bool even = zero >= 2 && ranks > 1;
    SmallVector<int64_t> chunk(params.size(), 0);
    if (even)
      for (auto [i, p] : llvm::enumerate(params))
        chunk[i] = (p.type.getNumElements() + ranks - 1) / ranks;
    // low-precision-grads: the gradient slot's element type where it is not the value's
    // (null elsewhere; set below, once the gradients are known to live in the arena).
    SmallVector<Type> gradType(params.size());
    // split-master (below): the value slot holds 2-byte low halves.
    SmallVector<bool> split(params.size(), false);
    auto slotBytes = [&](size_t i, int slot) {
      const Param &p = params[i];
      const int64_t bytes = (slot == 1 && gradType[i]) || (slot == 0 && split[i])
                                ? 2 * p.type.getNumElements() // bf16 / f16, low halves
                            : slot < 2                   ? p.bytes
                                                         : p.momentBytes;
      int64_t full = bytes * (1 + padRows[i]);
      if (!even || (slot == 0 && zero < 3))
        return full;
      return chunk[i] * (full / p.type.getNumElements());
    };
    SmallVector<int64_t> owner(params.size(), -1);
    if (sharded) {
      int64_t total = 0, acc = 0;
      for (size_t i : order)
        total += alignUp(params[i].momentBytes);
      for (size_t i : order) {
        int64_t size = alignUp(params[i].momentBytes);
        // The range whose share of the total holds this parameter's midpoint.
        owner[i] = std::min<int64_t>(ranks - 1, total ? (2 * acc + size) * ranks / (2 * total) : 0);
        acc += size;
      }
    }
    // CPU offload (offload=cpu; ZeRO-Offload, Ren et al. 2021): the AdamW moments go to the
    // host region (pinned host memory) instead; their offsets are into that region. (An
    // enum: its option parser refused an unknown value.)
    const bool toHost = offload == Offload::cpu;
    // Gradients in the arena (MemoryPlan.h gradientsCanLiveInArena): the gradient slots keep
    // their layout (one contiguous run, so the optimizer's calls still merge over runs), at
    // arena offsets from 0, each pinned there for its own lifetime only; the other buffers
    // are planned around them below.
    if (gradients != "persistent" && gradients != "arena" && gradients != "auto") {
      module.emitError() << "tg-plan-memory: gradients must be persistent, arena or auto, got '"
                         << gradients << "'";
      return signalPassFailure();
    }
    // cuDNN's SDPA (attention-impl=cudnn) where the module has bf16 / f16 attention: the
    // module says so (tg.attention_impl, read by the attention ops' workspaceBytes and by the
    // lowering through the plan's attention_impl); fp32 attention always runs the own kernels,
    // so a module without low-precision attention keeps no mark (and its plan is unchanged).
    if (attentionImpl != "own" && attentionImpl != "cudnn") {
      module.emitError() << "tg-plan-memory: attention-impl must be own or cudnn, got '"
                         << attentionImpl << "'";
      return signalPassFailure();
    }
    bool cudnnAttention = false;
    if (attentionImpl == "cudnn")
      module.walk([&](Operation *op) {
        if (!isa<AttentionOp, AttentionQKVOp, AttentionGradOp, AttentionQKVGradOp>(op))
          return;
        Type e = getElementTypeOrSelf(op->getOperand(0).getType());
        cudnnAttention |= e.isBF16() || e.isF16();
      });
    if (cudnnAttention)
      module->setAttr("tg.attention_impl", b.getStringAttr("cudnn"));
    else
      module->removeAttr("tg.attention_impl");
    bool gradsInArena = false;
    if (gradients != "persistent") {
      gradsInArena = gradientsCanLiveInArena(module, /*assumeOneMicroStep=*/gradients == "arena");
      if (!gradsInArena && gradients == "arena") {
        module.emitError() << "tg-plan-memory: gradients=arena needs @micro_step and "
                              "@optimizer_step, tg.grad_accum = 1 (or absent), tg.ranks = 1, no "
                              "checkpointing budget and a tg.accumulate_grad for every "
                              "parameter (use gradients=auto or persistent)";
        return signalPassFailure();
      }
    }
    // Weight gradients in the compute type (low-precision-grads; MemoryPlan.h
    // lowPrecisionGradients): only with the slots in the arena (one micro-step, one rank:
    // nothing accumulates into them across micro-steps or reduces them across ranks) and the
    // moments on the device. Those parameters go last (stable), so that their slots form
    // runs of one gradient type that the optimizer's calls merge.
    if (lowPrecisionGrads && gradsInArena && !toHost && !sharded && !even) {
      if (auto micro = module.lookupSymbol<func::FuncOp>("micro_step")) {
        llvm::StringMap<Type> low = lowPrecisionGradients(micro);
        for (auto [i, p] : llvm::enumerate(params))
          if (auto it = low.find(p.name.getValue());
              it != low.end() && p.type.getElementType().isF32() && !padRows[i])
            gradType[i] = it->second;
        std::stable_partition(order.begin(), order.end(),
                              [&](size_t i) { return !gradType[i]; });
      }
    }
    // Working copies (mixed precision; below): marked before the layout, which the split
    // master values change.
    Type workType = markWorkingCopies(module);
    // Split master values (split-master; tgrt.h tgrt_param.split): under bf16-mixed, a
    // weight whose value the step reads only through its working copy (and AdamW, or the
    // embedding gather, which joins the halves) keeps the f32 value as that bf16 copy (the
    // high halves) plus 2-byte low halves in its value slot, 2 bytes a value instead of 4.
    // Its gradient slot is bf16, or f32 for a gathered table (tgrt_adamw_split takes both);
    // not a bias-rows pair (the weight and its bias rows are one slot); the moments on the
    // device and not sharded (the split update has no offloaded or ZeRO form). They go last
    // (stable): the values region is [f32 values][low halves], which the stale-weights cast
    // then covers only in its first part.
    // Only the values (and so their copies) move: the gradients and moments keep `order`,
    // whose gradient slots the arena places (moving a tied wte's f32 gradient slot last cost
    // lab-4l-256 under layer checkpointing 10% of arena). A run of AdamW covers parameters
    // whose slots are alike in every region (LowerToEmitC sameLayout).
    SmallVector<size_t> valueOrder(order.begin(), order.end());
    if (splitMaster && workType && workType.isBF16() && !toHost && !sharded && !even) {
      llvm::StringSet<> copiedOnly = valuesReadOnlyThroughCopies(module);
      // split-tables (training.master_values all): f32 gradient slots too, for token-
      // embedding tables (a tied wte) only. Not the default: Llama 3.2 1B's plan 525 MB
      // smaller, its step 0.75% slower on an H200 (docs/results.md 2026-12-03, twenty-fifth
      // session). Other f32-gradient weights (GPT-2's projections) stay f32.
      llvm::StringSet<> gathered;
      if (splitTables)
        module.walk([&](EmbeddingOp e) {
          if (auto arg = dyn_cast<BlockArgument>(e.getTable()))
            if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
              if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
                gathered.insert(name.getValue());
        });
      for (auto [i, p] : llvm::enumerate(params))
        split[i] = (gradType[i] ? gradType[i].isBF16() : gathered.contains(p.name.getValue())) &&
                   p.type.getElementType().isF32() && !padRows[i] && !rowsWeight[i] &&
                   copiedOnly.contains(p.name.getValue());
      std::stable_partition(valueOrder.begin(), valueOrder.end(),
                            [&](size_t i) { return !split[i]; });
    }
    int64_t cursor = 0, hostCursor = 0, gradCursor = 0, valuesEnd = 0, splitStart = -1;
    SmallVector<int64_t> offs[4];
    for (int slot = 0; slot < 4; ++slot) {
      offs[slot].assign(params.size(), 0);
      int64_t &cur = slot == 1 && gradsInArena ? gradCursor
                     : slot >= 2 && toHost     ? hostCursor
                                               : cursor;
      if (slot >= 2 && sharded) {
        int64_t base = cur, end = cur;
        SmallVector<int64_t> at(ranks, base);
        for (size_t i : order) {
          offs[slot][i] = at[owner[i]];
          at[owner[i]] = alignUp(at[owner[i]] + params[i].momentBytes);
          end = std::max(end, at[owner[i]]);
        }
        cur = end;
        continue;
      }
      for (size_t i : slot == 0 ? valueOrder : order) {
        offs[slot][i] = cur;
        if (slot == 0 && split[i] && splitStart < 0)
          splitStart = cur;
        cur = alignUp(cur + slotBytes(i, slot));
      }
      if (slot == 0)
        valuesEnd = cur;
    }

    SmallVector<NamedAttribute> plan;
    if (sharded || even)
      plan.push_back(b.getNamedAttr("zero", b.getI64IntegerAttr(zero)));
    if (toHost) {
      plan.push_back(b.getNamedAttr("offload", OffloadAttr::get(b.getContext(), offload)));
      plan.push_back(b.getNamedAttr("host_bytes", b.getI64IntegerAttr(hostCursor)));
    }
    int64_t inputStart = cursor;
    for (auto &[name, type] : inputs) {
      plan.push_back(b.getNamedAttr((name.getValue() + "_offset").str(), b.getI64IntegerAttr(cursor)));
      cursor = alignUp(cursor + tensorBytes(type));
    }
    plan.push_back(b.getNamedAttr("input_bytes", b.getI64IntegerAttr(cursor - inputStart)));
    // Working copies (mixed precision): when every parameter is f32 and the step functions
    // cast parameters to one 2-byte type, that copy of every value lives in the persistent
    // region (after the inputs), written by AdamW with the update and refreshed by the
    // emitted code when the host wrote the values (tgrt_take_weights_stale), instead of one
    // tg.cast per parameter and micro-step into the arena. The region mirrors the values at
    // half the size (copy offset = work_offset + value offset / 2), so a run of contiguous
    // values maps to a run of contiguous copies. markWorkingCopies marks the casts.
    // With split master values the mirror holds for the f32 values [0, splitStart); the
    // copies of the split ones follow at the same stride as their low halves (copy offset =
    // work_offset + splitStart / 2 + (low-half offset - splitStart)).
    int64_t workBase = -1;
    const int64_t f32End = splitStart >= 0 ? splitStart : valuesEnd;
    auto copyOffset = [&](size_t i) {
      return split[i] ? workBase + f32End / 2 + (offs[0][i] - f32End) : workBase + offs[0][i] / 2;
    };
    if (workType && !params.empty()) {
      workBase = cursor;
      cursor = alignUp(cursor + f32End / 2 + (valuesEnd - f32End));
      plan.push_back(b.getNamedAttr("work_dtype", b.getStringAttr(dtypeName(workType))));
      plan.push_back(b.getNamedAttr("work_offset", b.getI64IntegerAttr(workBase)));
      plan.push_back(b.getNamedAttr("work_bytes", b.getI64IntegerAttr(cursor - workBase)));
    }
    int64_t persistent = cursor;

    SmallVector<Attribute> paramAttrs;
    // Attribute names made once: at 1000 layers there are 12,000 parameters.
    auto id = [&](StringRef text) { return b.getStringAttr(text); };
    StringAttr kName = id("name"), kDtype = id("dtype"), kStateDtype = id("state_dtype"),
               kShape = id("shape"), kNumel = id("numel"), kOffset = id("offset"),
               kGradOffset = id("grad_offset"), kMOffset = id("m_offset"),
               kVOffset = id("v_offset"), kInit = id("init"), kInitStd = id("init_std"),
               kDecay = id("decay"), kWorkOffset = id("work_offset");
    for (auto [i, p] : llvm::enumerate(params)) {
      SmallVector<NamedAttribute, 12> slot = {
          {kName, p.name},
          {kDtype, b.getStringAttr(dtypeName(p.type.getElementType()))},
          {kStateDtype, b.getStringAttr(dtypeName(p.momentType))},
          {kShape, b.getDenseI64ArrayAttr(p.type.getShape())},
          {kNumel, b.getI64IntegerAttr(p.type.getNumElements())},
          {kOffset, b.getI64IntegerAttr(offs[0][i])},
          {kGradOffset, b.getI64IntegerAttr(offs[1][i])},
          {kMOffset, b.getI64IntegerAttr(offs[2][i])},
          {kVOffset, b.getI64IntegerAttr(offs[3][i])},
      };
      if (workBase >= 0)
        slot.push_back({kWorkOffset, b.getI64IntegerAttr(copyOffset(i))});
      if (split[i])
        slot.push_back({id("split"), b.getUnitAttr()});
      if (owner[i] >= 0)
        slot.push_back({id("owner"), b.getI64IntegerAttr(owner[i])});
      if (padRows[i])
        slot.push_back({id("pad_rows"), b.getI64IntegerAttr(padRows[i])});
      if (gradType[i])
        slot.push_back({id("grad_dtype"), b.getStringAttr(dtypeName(gradType[i]))});
      if (even)
        slot.push_back({id("shard"), b.getI64IntegerAttr(chunk[i])});
      // The initialisation and decay role the frontend put on the argument travel with
      // the slot, so the lowering's parameter table needs nothing else.
      if (p.argAttrs) {
        if (auto a = p.argAttrs.get(kInitAttr))
          slot.push_back({kInit, a});
        if (auto a = p.argAttrs.get(kInitStdAttr))
          slot.push_back({kInitStd, a});
        if (p.argAttrs.get(kDecayAttr))
          slot.push_back({kDecay, b.getUnitAttr()});
      }
      paramAttrs.push_back(b.getDictionaryAttr(slot));
    }

    // Arena: one plan per step function; they never overlap in time, so the arena is the
    // largest of them. With the gradients in the arena, @micro_step and @optimizer_step are
    // planned as one timeline (the optimizer's ops after the micro-step's), with each
    // gradient slot pinned at its offset from its first write to the optimizer's end.
    int64_t arena = 0;
    std::string heuristic;
    StringAttr offsetsName = b.getStringAttr("tg.offsets");
    // Writes one offset per result (views take their source's); `base` is the index of the
    // function's first buffer in `buffers`.
    auto writeOffsets = [&](func::FuncOp f, const FunctionLiveness &live,
                            const std::vector<PlanBuffer> &buffers, size_t base) {
      SmallVector<int64_t> offsets;
      for (Operation &op : f.getBody().front()) {
        if (op.getNumResults() == 0)
          continue;
        offsets.clear();
        for (Value r : op.getResults()) {
          auto it = live.bufferOf.find(r);
          offsets.push_back(it == live.bufferOf.end() ? -1 : buffers[base + it->second].offset);
        }
        op.setDiscardableAttr(offsetsName, b.getDenseI64ArrayAttr(offsets));
      }
    };
    auto plan1 = [&](SmallVector<func::FuncOp, 2> fns) -> LogicalResult {
      SmallVector<FunctionLiveness, 2> lives(fns.size());
      std::vector<PlanBuffer> buffers;
      SmallVector<size_t, 2> bases;
      int64_t time = 0;
      for (auto [f, live] : llvm::zip(fns, lives)) {
        if (failed(analyzeLiveness(f, live)))
          return failure();
        bases.push_back(buffers.size());
        for (PlanBuffer pb : toPlanBuffers(live)) {
          pb.first += time;
          pb.last += time;
          buffers.push_back(pb);
        }
        time += (int64_t)live.opPhase.size();
      }
      const size_t own = buffers.size();
      if (fns.size() == 2) { // @micro_step, @optimizer_step: the gradients
        llvm::StringMap<int64_t> writes = gradientFirstWrites(fns[0]);
        for (auto [i, p] : llvm::enumerate(params)) {
          PlanBuffer g;
          g.bytes = alignUp(slotBytes(i, 1)); // with its padding, which the lowering zeroes
          g.alignment = kBufferAlignment;
          g.first = writes.lookup(p.name.getValue());
          g.last = time - 1;
          g.fixedOffset = offs[1][i];
          buffers.push_back(g);
        }
      }
      PlanResult result = planArena(buffers);
      std::string why;
      if (!verifyPlan(buffers, &why))
        return fns[0].emitError() << "tg-plan-memory: internal error, overlapping plan: " << why;
      numBuffers += own;
      for (auto [f, live, base] : llvm::zip(fns, lives, bases)) {
        writeOffsets(f, live, buffers, base);
        f->setAttr("tg.arena_bytes", b.getI64IntegerAttr(result.arenaBytes));
      }
      if (result.arenaBytes >= arena) {
        arena = result.arenaBytes;
        heuristic = result.heuristic;
      }
      return success();
    };
    auto micro = module.lookupSymbol<func::FuncOp>("micro_step");
    auto opt = module.lookupSymbol<func::FuncOp>("optimizer_step");
    auto planArenas = [&]() -> LogicalResult {
      arena = 0;
      heuristic.clear();
      for (auto f : module.getOps<func::FuncOp>()) {
        if (f.isExternal() || (gradsInArena && f == opt)) continue;
        SmallVector<func::FuncOp, 2> fns = {f};
        if (gradsInArena && f == micro) fns.push_back(opt);
        if (failed(plan1(fns))) return failure();
      }
      return success();
    };
    if (failed(planArenas())) return signalPassFailure();
    const size_t fixedAttrs = plan.size();
    auto finishPlan = [&]() {
      plan.truncate(fixedAttrs);
      plan.push_back(b.getNamedAttr("persistent_bytes", b.getI64IntegerAttr(persistent)));
      plan.push_back(b.getNamedAttr("arena_bytes", b.getI64IntegerAttr(arena)));
      plan.push_back(b.getNamedAttr("workspace_bytes",
                                    b.getI64IntegerAttr(workspaceFor(module, workspaceBytes))));
      if (commBytes > 0)
        plan.push_back(b.getNamedAttr("comm_bytes", b.getI64IntegerAttr(commBytes)));
      plan.push_back(b.getNamedAttr("heuristic", b.getStringAttr(heuristic)));
      if (gradsInArena) plan.push_back(b.getNamedAttr("gradients", b.getStringAttr("arena")));
      if (cudnnAttention)
        plan.push_back(b.getNamedAttr("attention_impl", b.getStringAttr("cudnn")));
      plan.push_back(b.getNamedAttr("params", b.getArrayAttr(paramAttrs)));
      module->setAttr("tg.plan", b.getDictionaryAttr(plan));
    };
    finishPlan();
    if (!dropUnread || !micro) return;
    // drop-unread: lower a clone, leave out every buffer none of whose values a call uses,
    // plan again. The trace's diagnostics are not this pass's: a module the lowering
    // refuses keeps the plan above, and the lowering itself reports why.
    llvm::DenseSet<Value> read;
    {
      ScopedDiagnosticHandler quiet(module.getContext(), [](Diagnostic&) { return success(); });
      if (failed(traceReadResults(module, read))) return;
    }
    int64_t dropped = 0;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal()) continue;
      FunctionLiveness live;
      if (failed(analyzeLiveness(f, live))) return signalPassFailure();
      std::vector<bool> used(live.buffers.size(), false);
      for (auto& [v, id] : live.bufferOf)
        if (read.contains(v)) used[id] = true;
      llvm::DenseMap<Operation*, SmallVector<int64_t, 2>> unplanned;
      for (auto& [v, id] : live.bufferOf) {
        auto r = dyn_cast<OpResult>(v);
        if (used[id] || !r || isa<ReshapeOp>(r.getOwner())) continue; // a view follows its source
        unplanned[r.getOwner()].push_back(r.getResultNumber());
      }
      for (auto& [op, results] : unplanned) {
        llvm::sort(results);
        op->setDiscardableAttr(kUnplannedAttr, b.getDenseI64ArrayAttr(results));
        dropped += (int64_t)results.size();
      }
    }
    numUnplanned += dropped;
    if (dropped == 0) return;
    numBuffers = 0;
    if (failed(planArenas())) return signalPassFailure();
    finishPlan();
  }
};

} // namespace
