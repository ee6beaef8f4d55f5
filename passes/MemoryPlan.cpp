//===- MemoryPlan.cpp - liveness analysis and the plan report ----------------===//
#include "passes/MemoryPlan.h"

#include <map>
#include "passes/MemoryPlanner.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseSet.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace mlir::tg {
using tgc::PlanBuffer;
using tgc::liveBytesPerOp;

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return -1;
  Type e = t.getElementType();
  int64_t width = e.isF32() || e.isInteger(32) ? 4 : (e.isBF16() || e.isF16()) ? 2 : -1;
  return width < 0 ? -1 : width * t.getNumElements();
}

std::string dtypeName(Type e) {
  if (e.isF32())
    return "f32";
  if (e.isBF16())
    return "bf16";
  if (e.isF16())
    return "f16";
  if (e.isInteger(32))
    return "i32";
  return "?";
}

int64_t dtypeBytes(llvm::StringRef d) {
  return d == "f32" || d == "i32" ? 4 : d == "bf16" || d == "f16" ? 2 : 0;
}

static std::string locName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return "?";
}

/// Operands whose buffer result #0 may take over when the operand dies at this op: the
/// runtime kernel is documented (runtime/tgrt.h) to work with output == that input.
/// Returns candidate operand indices, in order of preference.
static SmallVector<unsigned, 2> inPlaceOperands(Operation *op) {
  if (auto mem = dyn_cast<MemoryOpInterface>(op))
    return mem.inPlaceOperands();
  return {};
}

Type markWorkingCopies(ModuleOp module) {
  auto micro = module.lookupSymbol<func::FuncOp>("micro_step");
  if (!micro || micro.isExternal())
    return Type();
  for (BlockArgument arg : micro.getArguments())
    if (micro.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr) &&
        !cast<RankedTensorType>(arg.getType()).getElementType().isF32())
      return Type();
  SmallVector<CastOp> casts;
  Type work;
  bool one = true;
  for (StringRef name : {"micro_step", "eval_step"})
    if (auto f = module.lookupSymbol<func::FuncOp>(name); f && !f.isExternal())
      f.walk([&](CastOp c) {
        auto arg = dyn_cast<BlockArgument>(c.getX());
        if (!arg || !f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
          return;
        Type t = cast<RankedTensorType>(c.getResult().getType()).getElementType();
        one &= !work || work == t;
        work = work ? work : t;
        casts.push_back(c);
      });
  if (!work || !one || !(work.isBF16() || work.isF16()))
    return Type();
  for (CastOp c : casts)
    c->setAttr(kWorkingCopyAttr, UnitAttr::get(module.getContext()));
  return work;
}

llvm::StringSet<> valuesReadOnlyThroughCopies(ModuleOp module) {
  llvm::StringSet<> seen, other;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    for (BlockArgument arg : fn.getArguments()) {
      auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr);
      if (!name)
        continue;
      seen.insert(name.getValue());
      for (Operation *user : arg.getUsers())
        // tg.accumulate_grad, tg.clip_grad_norm and tg.all_reduce_grads name the parameter
        // for its gradient slot; tg.adamw updates it (the lowering's split update);
        // tg.embedding gathers its rows (tgrt_embedding_fwd_split joins the halves).
        if (!isa<AdamWOp, AccumulateGradOp, ClipGradNormOp, AllReduceGradsOp, EmbeddingOp>(user) &&
            !(isa<CastOp>(user) && user->hasAttr(kWorkingCopyAttr)))
          other.insert(name.getValue());
    }
  }
  llvm::StringSet<> out;
  for (const auto &e : seen)
    if (!other.contains(e.getKey()))
      out.insert(e.getKey());
  return out;
}

int64_t ParamSlot::valueSlotBytes() const { return split ? 2 : dtypeBytes(dtype); }

Value layerNormOutput(Operation* op) {
  if (auto l = dyn_cast<LayerNormOp>(op)) return l.getY();
  if (auto l = dyn_cast<AddLayerNormOp>(op)) return l.getY();
  return Value();
}

bool isOnesColumnOutput(Value v) {
  Operation* op = v.getDefiningOp();
  return op && op->hasAttr("tg.ones_column") && layerNormOutput(op) == v;
}

/// When `op` is the cast of the residual gradient's sum that the lowering writes inside a
/// norm's backward call (tgrt_layer_norm_bwd_acc*, tgrt_rms_norm_bwd_acc; residualGradSinkOf,
/// Passes.h): that norm's dy, whose buffer the copy may take over (both calls read each
/// element of dy before they write that element of the copy). A null value otherwise.
static Value normDyOfLowCopy(Operation *op) {
  auto cast = dyn_cast<CastOp>(op);
  auto add = cast ? dyn_cast_or_null<AddOp>(op->getPrevNode()) : AddOp();
  Operation *norm = add ? add->getPrevNode() : nullptr;
  auto dyIfLow = [&](auto n) {
    return residualGradSinkOf(n, n.getDx()).low == cast ? n.getDy() : Value();
  };
  if (auto ln = dyn_cast_or_null<LayerNormGradOp>(norm))
    return dyIfLow(ln);
  if (auto rn = dyn_cast_or_null<RmsNormGradOp>(norm))
    return dyIfLow(rn);
  return Value();
}

LogicalResult analyzeLiveness(func::FuncOp fn, FunctionLiveness &out) {
  out = FunctionLiveness();
  Block &body = fn.getBody().front();
  // Position of each op of the body.
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  // Index of the last op of the body reading `v` (-1 when none does).
  auto lastUse = [&](Value v) {
    int64_t last = -1;
    for (Operation *user : v.getUsers()) {
      auto it = position.find(user);
      if (it != position.end())
        last = std::max(last, it->second);
    }
    return last;
  };
  // Last reader over every SSA value sharing each buffer (views, in-place results), and
  // never before the op that defines it: the buffer's `last`.
  std::vector<int64_t> bufferLastUse;
  out.opPhase.reserve(index);
  index = 0;
  for (Operation &op : body) {
    auto phase = op.getAttrOfType<StringAttr>(kPhaseAttr);
    out.opPhase.push_back(phase ? phase.str() : "forward");
    for (OpResult r : op.getResults()) {
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        auto it = out.bufferOf.find(reshape.getX());
        if (it != out.bufferOf.end()) {
          // Copy the id out first: inserting into bufferOf may rehash and move `it`.
          size_t id = it->second;
          out.bufferOf[r] = id; // a view: no new buffer
          bufferLastUse[id] = std::max(bufferLastUse[id], lastUse(r));
        }
        continue;                       // views of arguments live in the persistent region
      }
      if (isa<CastOp>(op) && op.hasAttr(kWorkingCopyAttr))
        continue; // the parameter's persistent working copy: no arena buffer
      if (auto un = op.getAttrOfType<DenseI64ArrayAttr>(kUnplannedAttr);
          un && llvm::is_contained(un.asArrayRef(), (int64_t)r.getResultNumber()))
        continue; // no lowered call uses it (tg-plan-memory drop-unread)
      int64_t bytes = tensorBytes(r.getType());
      // tg-bias-rows: the layer norm's output gains kOnesColumns columns per row.
      if (bytes > 0 && isOnesColumnOutput(r)) {
        const int64_t d = cast<RankedTensorType>(r.getType()).getShape().back();
        bytes = bytes / d * (d + kOnesColumns);
      }
      if (bytes < 0)
        return op.emitOpError() << "result #" << r.getResultNumber()
                                << " needs a static shape and a known element type to be planned";
      // In place: take over an operand's buffer when this op is the last reader of every
      // value living in it (the operand, its views, earlier in-place results).
      // r takes over buffer id (whose values all die by now): its last use extends.
      auto takeOver = [&](size_t id) {
        out.bufferOf[r] = id;
        bufferLastUse[id] = std::max(index, lastUse(r));
        out.buffers[id].name += " > " + locName(op.getLoc()) +
                                (out.opPhase.back() == "backward" ? ".grad" : "");
      };
      bool reused = false;
      if (r.getResultNumber() == 0)
        for (unsigned idx : inPlaceOperands(&op)) {
          Value v = op.getOperand(idx);
          auto it = out.bufferOf.find(v);
          if (it == out.bufferOf.end() || bufferLastUse[it->second] != index ||
              out.buffers[it->second].bytes != bytes ||
              out.buffers[it->second].first == index)
            continue;
          takeOver(it->second); // by value: the insertion in it may move `it`
          reused = true;
          break;
        }
      if (reused)
        continue;
      // The residual gradient's low copy after a norm's backward: the lowering writes it in
      // the norm's call, two ops before the cast, when its buffer is free from the norm on.
      // The norm's dy dying there is such a buffer, of the copy's type and size: taken over,
      // so the fusion holds and the arena does not grow (else, as before, the fusion holds
      // when the cast's own buffer happens to be free of the norm's operands).
      if (Value dy = r.getResultNumber() == 0 ? normDyOfLowCopy(&op) : Value()) {
        auto it = out.bufferOf.find(dy);
        if (it != out.bufferOf.end() && bufferLastUse[it->second] == index - 2 &&
            out.buffers[it->second].bytes == bytes &&
            out.buffers[it->second].first != index - 2 &&
            rt(dy).getElementType() == rt(r).getElementType()) {
          takeOver(it->second);
          continue;
        }
      }
      BufferInfo b;
      b.value = r;
      b.phase = out.opPhase.back();
      b.name = locName(op.getLoc()) + (b.phase == "backward" ? ".grad" : "") +
               (op.getNumResults() > 1 ? "#" + std::to_string(r.getResultNumber()) : "");
      b.bytes = bytes;
      b.dtype = dtypeName(cast<RankedTensorType>(r.getType()).getElementType());
      b.first = b.last = index;
      out.bufferOf[r] = out.buffers.size();
      out.buffers.push_back(std::move(b));
      bufferLastUse.push_back(std::max(index, lastUse(r)));
    }
    ++index;
  }
  // ZeRO-2/3: a tg.reduce_scatter_grad runs asynchronously (the lowering starts it and the
  // next one waits for it first), so its gradient's buffer stays reserved until the next
  // reduce-scatter, or the end of the function (where the lowering waits for the last).
  {
    int64_t next = index - 1; // the terminator: the end of the function
    std::vector<std::pair<int64_t, Value>> scatters;
    int64_t at = 0;
    for (Operation &op : body) {
      if (auto rs = dyn_cast<ReduceScatterGradOp>(op))
        scatters.push_back({at, rs.getGrad()});
      ++at;
    }
    for (auto it = scatters.rbegin(); it != scatters.rend(); ++it) {
      auto buf = out.bufferOf.find(it->second);
      if (buf != out.bufferOf.end())
        bufferLastUse[buf->second] = std::max(bufferLastUse[buf->second], next);
      next = it->first;
    }
  }
  // Every read of a value in a buffer is a use of that value, so the buffer lives until
  // the last of them.
  for (size_t id = 0; id < out.buffers.size(); ++id)
    out.buffers[id].last = bufferLastUse[id];
  return success();
}

std::vector<PlanBuffer> toPlanBuffers(const FunctionLiveness &live) {
  std::vector<PlanBuffer> out;
  out.reserve(live.buffers.size());
  for (const BufferInfo &b : live.buffers) {
    PlanBuffer p;
    p.bytes = b.bytes;
    p.alignment = kBufferAlignment;
    p.first = b.first;
    p.last = b.last;
    p.offset = b.offset;
    out.push_back(p);
  }
  return out;
}

bool gradientsCanLiveInArena(ModuleOp module, bool assumeOneMicroStep) {
  auto micro = module.lookupSymbol<func::FuncOp>("micro_step");
  auto opt = module.lookupSymbol<func::FuncOp>("optimizer_step");
  if (!micro || !opt || micro.isExternal() || opt.isExternal())
    return false;
  auto intAttr = [&](StringRef name, int64_t absent) {
    auto a = module->getAttrOfType<IntegerAttr>(name);
    return a ? a.getInt() : absent;
  };
  if (intAttr("tg.grad_accum", assumeOneMicroStep ? 1 : 0) != 1 || intAttr(kRanksAttr, 1) != 1)
    return false;
  if (auto rm = module->getAttrOfType<DictionaryAttr>("tg.remat"))
    if (auto p = rm.getAs<CheckpointingAttr>("policy"); p && p.getValue() == Checkpointing::budget)
      return false;
  llvm::StringMap<int64_t> writes = gradientFirstWrites(micro);
  for (BlockArgument arg : micro.getArguments())
    if (auto name = micro.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
      if (!writes.count(name.getValue()))
        return false;
  return true;
}

llvm::StringMap<Type> lowPrecisionGradients(func::FuncOp micro) {
  llvm::DenseSet<Value> biasSummed; // the values a bias gradient sums over rows
  micro.walk([&](BiasGradOp o) { biasSummed.insert(throughReshape(o.getDy())); });
  micro.walk([&](MatmulDgeluBgradOp o) { biasSummed.insert(throughReshape(o.getDx())); });
  llvm::DenseMap<Value, int> accumulations;
  micro.walk([&](AccumulateGradOp a) { ++accumulations[a.getParam()]; });
  llvm::StringMap<Type> out;
  micro.walk([&](AccumulateGradOp acc) {
    auto arg = dyn_cast<BlockArgument>(acc.getParam());
    if (!arg || arg.getOwner()->getParentOp() != micro.getOperation() ||
        accumulations.lookup(acc.getParam()) != 1)
      return;
    auto name = micro.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr);
    auto cast = acc.getGrad().getDefiningOp<CastOp>();
    if (!name || !cast || !cast.getResult().hasOneUse() ||
        !rt(cast.getResult()).getElementType().isF32())
      return;
    auto mm = cast.getX().getDefiningOp<MatmulOp>();
    if (!mm || !mm.getResult().hasOneUse() || mm->hasAttr("tg.bias_rows") ||
        rt(mm.getA()).getRank() != 2 || rt(mm.getB()).getRank() != 2 ||
        biasSummed.contains(throughReshape(mm.getB())))
      return;
    Type e = rt(mm.getResult()).getElementType();
    if (!e.isBF16() && !e.isF16())
      return;
    if (rt(acc.getGrad()).getNumElements() * 2 % kBufferAlignment != 0)
      return;
    out[name.getValue()] = e;
  });
  return out;
}

llvm::StringMap<int64_t> gradientFirstWrites(func::FuncOp micro) {
  llvm::StringMap<int64_t> out;
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : micro.getBody().front())
    position[&op] = index++;
  for (Operation &op : micro.getBody().front()) {
    auto acc = dyn_cast<AccumulateGradOp>(op);
    if (!acc)
      continue;
    auto arg = dyn_cast<BlockArgument>(acc.getParam());
    auto name = arg ? micro.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr)
                    : StringAttr();
    if (!name)
      continue;
    int64_t first = position.lookup(&op);
    SmallVector<Value> work = {acc.getGrad()};
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      first = std::min(first, position.lookup(def));
      if (isa<CastOp, AddOp>(def))
        for (Value v : def->getOperands())
          work.push_back(v);
      // A bias gradient of the residual stream's gradient may be summed by the layer-norm
      // backward that updates it (tgrt_layer_norm_bwd_acc_bgrad): [cast ->] add of the
      // layer norm's dx, the add right after the layer norm.
      if (auto bias = dyn_cast<BiasGradOp>(def)) {
        Operation *src = bias.getDy().getDefiningOp();
        if (auto cast = dyn_cast_or_null<CastOp>(src))
          src = cast.getX().getDefiningOp();
        if (auto add = dyn_cast_or_null<AddOp>(src))
          if (auto ln = dyn_cast_or_null<LayerNormGradOp>(add->getPrevNode()))
            if (add.getLhs() == ln.getDx() || add.getRhs() == ln.getDx())
              first = std::min(first, position.lookup(ln));
      }
    }
    auto [it, fresh] = out.try_emplace(name.getValue(), first);
    if (!fresh)
      it->second = std::min(it->second, first);
  }
  return out;
}

static int64_t getI64(DictionaryAttr d, StringRef key) {
  auto a = d ? d.getAs<IntegerAttr>(key) : IntegerAttr();
  return a ? a.getInt() : 0;
}

LogicalResult readPlanReport(ModuleOp module, PlanReport &r) {
  auto plan = module->getAttrOfType<DictionaryAttr>("tg.plan");
  if (!plan)
    return module.emitError() << "module has no memory plan (run -tg-plan-memory first)";
  r = PlanReport();
  r.persistentBytes = getI64(plan, "persistent_bytes");
  r.arenaBytes = getI64(plan, "arena_bytes");
  r.workspaceBytes = getI64(plan, "workspace_bytes");
  r.commBytes = getI64(plan, "comm_bytes");
  r.hostBytes = getI64(plan, "host_bytes");
  if (auto o = plan.getAs<OffloadAttr>("offload"))
    r.offload = o.getValue();
  r.tokensOffset = getI64(plan, "tokens_offset");
  r.targetsOffset = getI64(plan, "targets_offset");
  r.inputBytes = getI64(plan, "input_bytes");
  if (auto w = plan.getAs<StringAttr>("work_dtype")) {
    r.workDtype = w.str();
    r.workOffset = getI64(plan, "work_offset");
    r.workBytes = getI64(plan, "work_bytes");
  }
  if (auto h = plan.getAs<StringAttr>("heuristic"))
    r.heuristic = h.str();
  if (auto g = plan.getAs<StringAttr>("gradients"))
    r.gradsInArena = g.getValue() == "arena";
  if (auto a = plan.getAs<StringAttr>("attention_impl"))
    r.cudnnAttention = a.getValue() == "cudnn";
  // An attribute of another kind (e.g. the string form "bf16-mixed" of hand-written IR
  // from before the enums) is refused, never read as the default fp32.
  if (Attribute a = module->getAttr(kPrecisionAttr)) {
    auto p = dyn_cast<PrecisionAttr>(a);
    if (!p)
      return module.emitError() << "module attribute " << kPrecisionAttr << " must be a "
                                << "#tg.precision<...> attribute (e.g. #tg.precision<\"bf16-mixed\">), got "
                                << a;
    r.precision = p.getValue();
  }
  if (Attribute a = plan.get("offload"); a && !isa<OffloadAttr>(a))
    return module.emitError() << "tg.plan's offload must be a #tg.offload<...> attribute "
                              << "(e.g. #tg.offload<cpu>), got " << a;
  if (auto params = plan.getAs<ArrayAttr>("params"))
    for (Attribute a : params) {
      auto d = cast<DictionaryAttr>(a);
      ParamSlot s;
      s.name = d.getAs<StringAttr>("name").str();
      for (int64_t x : cast<DenseI64ArrayAttr>(d.get("shape")).asArrayRef())
        s.shape.push_back(x);
      s.numel = getI64(d, "numel");
      s.offset = getI64(d, "offset");
      s.gradOffset = getI64(d, "grad_offset");
      s.mOffset = getI64(d, "m_offset");
      s.vOffset = getI64(d, "v_offset");
      if (d.get("work_offset"))
        s.workOffset = getI64(d, "work_offset");
      s.split = (bool)d.get("split");
      if (s.split && s.workOffset < 0)
        return module.emitError() << "tg.plan: parameter " << s.name
                                  << " is split but has no work_offset";
      s.padRows = getI64(d, "pad_rows");
      if (auto t = d.getAs<StringAttr>("dtype"))
        s.dtype = t.str();
      s.gradDtype = s.dtype;
      if (auto t = d.getAs<StringAttr>("grad_dtype"))
        s.gradDtype = t.str();
      if (auto t = d.getAs<StringAttr>("state_dtype"))
        s.stateDtype = t.str();
      if (auto t = d.getAs<StringAttr>("init"))
        s.init = t.str();
      if (auto t = d.getAs<FloatAttr>("init_std"))
        s.initStd = (float)t.getValueAsDouble();
      s.decay = (bool)d.get("decay");
      if (d.get("owner"))
        s.owner = getI64(d, "owner");
      s.shard = getI64(d, "shard");
      r.params.push_back(std::move(s));
    }
  r.zero = getI64(plan, "zero");
  // Elements of one parameter's value, gradient and moments that one rank holds.
  auto heldValue = [&](const ParamSlot &s) { return s.shard && r.zero >= 3 ? s.shard : s.numel; };
  auto heldGrad = [&](const ParamSlot &s) { return s.shard ? s.shard : s.numel; };
  for (const ParamSlot &s : r.params) {
    r.paramBytes += s.valueSlotBytes() * heldValue(s);
    r.gradBytes += dtypeBytes(s.gradDtype) * heldGrad(s);
    r.optimizerStateBytes += 2 * dtypeBytes(s.stateDtype) * heldGrad(s);
  }
  const bool even = r.zero >= 2 && !r.params.empty() && r.params.front().shard > 0;
  auto addTo = [](std::vector<std::pair<std::string, int64_t>> &v, const std::string &k,
                  int64_t bytes) {
    for (auto &e : v)
      if (e.first == k) {
        e.second += bytes;
        return;
      }
    v.push_back({k, bytes});
  };
  // ZeRO-1: a rank holds the moments of the parameters it owns; the block every rank
  // reserves is the largest range's (the plan is the same on every rank).
  std::map<int64_t, std::map<std::string, int64_t>> ownedMoments; // owner -> dtype -> bytes
  const std::string chunk = even ? " (ZeRO-" + std::to_string(r.zero) + ": one rank's chunk)" : "";
  // The value rows first (f32 values, then split ones' low halves), then the others.
  for (const ParamSlot &s : r.params)
    addTo(r.persistentByDtype,
          s.split ? "parameters split, low halves"
                  : "parameters " + s.dtype + (r.zero >= 3 ? chunk : ""),
          s.valueSlotBytes() * heldValue(s));
  for (const ParamSlot &s : r.params) {
    if (!r.gradsInArena)
      addTo(r.persistentByDtype, "gradients " + s.gradDtype + chunk,
            dtypeBytes(s.gradDtype) * heldGrad(s));
    // Offloaded moments are in the host region, reported apart (not persistent).
    if (s.owner < 0 && r.hostBytes == 0)
      addTo(r.persistentByDtype, "AdamW m, v " + s.stateDtype + chunk,
            2 * dtypeBytes(s.stateDtype) * heldGrad(s));
    else if (s.owner >= 0)
      ownedMoments[s.owner][s.stateDtype] += 2 * dtypeBytes(s.stateDtype) * s.numel;
  }
  if (!ownedMoments.empty()) {
    std::map<std::string, int64_t> largest;
    for (auto &[owner, byType] : ownedMoments)
      for (auto &[dtype, bytes] : byType)
        largest[dtype] = std::max(largest[dtype], bytes);
    r.optimizerStateBytes = 0;
    for (auto &[dtype, bytes] : largest) {
      if (r.hostBytes == 0)
        addTo(r.persistentByDtype, "AdamW m, v " + dtype + " (ZeRO-1: largest rank's share)",
              bytes);
      r.optimizerStateBytes += bytes;
    }
    r.shardRanks = (int64_t)ownedMoments.size();
  }
  if (!r.workDtype.empty())
    addTo(r.persistentByDtype, "working copies " + r.workDtype + (r.zero >= 3 ? chunk : ""),
          r.workBytes);

  if (auto rm = module->getAttrOfType<DictionaryAttr>("tg.remat")) {
    if (auto p = rm.getAs<CheckpointingAttr>("policy"))
      r.rematPolicy = stringifyCheckpointing(p.getValue()).str();
    if (auto mix = rm.getAs<StringAttr>("mix"))
      r.rematPolicy += ": " + mix.str();
    r.extraFlops = getI64(rm, "extra_flops");
    r.stepFlops = getI64(rm, "step_flops");
    r.recomputedOps = getI64(rm, "recomputed_ops");
  }
  if (auto micro = module.lookupSymbol<func::FuncOp>("micro_step"); micro && !micro.isExternal()) {
    std::map<int64_t, PlanReport::LayerRemat> per;
    auto isBackward = [](Operation *op) {
      auto ph = op->getAttrOfType<StringAttr>(kPhaseAttr);
      return ph && ph.getValue() == "backward";
    };
    for (Operation &op : micro.getBody().front()) {
      auto layer = op.getAttrOfType<IntegerAttr>(kLayerAttr);
      if (!layer)
        continue;
      bool clone = op.hasAttr(kRecomputeAttr);
      if (!clone && isBackward(&op))
        continue; // an adjoint op
      PlanReport::LayerRemat &l = per[layer.getInt()];
      l.layer = layer.getInt();
      for (Value v : op.getResults()) {
        if (isa<ReshapeOp>(op))
          continue; // a view: its source is counted
        bool readByBackward = llvm::any_of(v.getUsers(), [&](Operation *u) {
          return isBackward(u) && !u->hasAttr(kRecomputeAttr);
        });
        if (!readByBackward)
          continue;
        int64_t bytes = std::max<int64_t>(tensorBytes(v.getType()), 0);
        if (clone) {
          ++l.recomputedTensors;
          l.recomputedBytes += bytes;
        } else {
          ++l.savedTensors;
          l.savedBytes += bytes;
        }
      }
    }
    for (auto &[k, l] : per)
      r.layers.push_back(l);
  }

  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    FunctionLiveness live;
    if (failed(analyzeLiveness(fn, live)))
      return failure();
    for (BufferInfo &b : live.buffers) {
      Operation *def = b.value.getDefiningOp();
      auto offsets = def->getAttrOfType<DenseI64ArrayAttr>("tg.offsets");
      unsigned idx = cast<OpResult>(b.value).getResultNumber();
      b.offset = offsets && idx < offsets.size() ? offsets[idx] : -1;
      r.buffers.push_back({fn.getSymName().str(), b.name, b.phase, b.dtype, b.bytes, b.offset,
                           b.first, b.last});
      if (fn.getSymName() == "micro_step")
        addTo(r.arenaByDtype, b.dtype, b.bytes);
    }
    std::vector<PlanBuffer> pb = toPlanBuffers(live);
    // Gradients in the arena: each slot from its first write in @micro_step to the end of
    // the function, and through the whole of @optimizer_step.
    if (r.gradsInArena && (fn.getSymName() == "micro_step" || fn.getSymName() == "optimizer_step")) {
      const int64_t end = (int64_t)live.opPhase.size() - 1;
      llvm::StringMap<int64_t> writes;
      if (fn.getSymName() == "micro_step")
        writes = gradientFirstWrites(fn);
      for (const ParamSlot &s : r.params) {
        PlanBuffer g;
        g.bytes = (dtypeBytes(s.gradDtype) * s.numel * (1 + s.padRows) + kBufferAlignment - 1) /
                  kBufferAlignment * kBufferAlignment; // the slot with its padding

        g.offset = s.gradOffset;
        g.first = fn.getSymName() == "micro_step" ? writes.lookup(s.name) : 0;
        g.last = end;
        pb.push_back(g);
        r.buffers.push_back({fn.getSymName().str(), s.name + ".gradient",
                             fn.getSymName() == "micro_step" ? "backward" : "optimizer",
                             s.gradDtype, g.bytes, g.offset, g.first, g.last});
      }
    }
    std::vector<int64_t> live_bytes = liveBytesPerOp(pb, (int64_t)live.opPhase.size());
    for (size_t i = 0; i < live_bytes.size(); ++i) {
      int64_t v = live_bytes[i];
      r.lowerBound = std::max(r.lowerBound, v);
      const std::string &ph = live.opPhase[i];
      if (fn.getSymName() == "eval_step")
        r.peakEval = std::max(r.peakEval, v);
      else if (ph == "optimizer")
        r.peakOptimizer = std::max(r.peakOptimizer, v);
      else if (ph == "backward")
        r.peakBackward = std::max(r.peakBackward, v);
      else
        r.peakForward = std::max(r.peakForward, v);
    }
  }
  return success();
}

static std::string human(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double b = (double)bytes;
  if (b >= (1LL << 30))
    os << llvm::format("%.2f GiB", b / (1LL << 30));
  else if (b >= (1LL << 20))
    os << llvm::format("%.2f MiB", b / (1LL << 20));
  else if (b >= 1024)
    os << llvm::format("%.1f KiB", b / 1024);
  else
    os << bytes << " B";
  return s;
}

std::string formatPlanReport(const PlanReport &r, int topBuffers) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto row = [&](StringRef label, int64_t bytes) {
    os << "  " << llvm::left_justify(label, 30) << llvm::right_justify(std::to_string(bytes), 14)
       << "  " << human(bytes) << "\n";
  };
  os << "memory plan (bytes), precision " << stringifyPrecision(r.precision) << "\n";
  row("persistent", r.persistentBytes);
  for (const auto &[what, bytes] : r.persistentByDtype)
    row("  " + what, bytes);
  row("  inputs (tokens, targets) i32", r.inputBytes);
  row("arena", r.arenaBytes);
  if (r.gradsInArena)
    os << "    (gradients in the arena, " << r.gradBytes
       << " bytes: each live from its first write in the backward to the optimizer step)\n";
  // Weight gradients kept in the compute type (grad_dtype; low-precision-grads).
  std::map<std::string, std::pair<int64_t, int64_t>> low; // dtype -> (weights, elements)
  for (const ParamSlot &p : r.params)
    if (p.gradDtype != p.dtype) {
      ++low[p.gradDtype].first;
      low[p.gradDtype].second += p.numel;
    }
  for (const auto &[dtype, n] : low)
    os << "    (" << n.first << " weights' gradients in " << dtype << ", the compute type: "
       << n.second << " elements, " << dtypeBytes(dtype) * n.second
       << " bytes; training.gradient_dtype)\n";
  {
    int64_t n = 0, elems = 0;
    for (const ParamSlot &p : r.params)
      if (p.split) {
        ++n;
        elems += p.numel;
      }
    if (n > 0)
      os << "    (" << n << " weights' f32 values split: " << elems
         << " elements as their bf16 working copies plus " << 2 * elems
         << " bytes of low halves; training.master_values)\n";
  }
  row("workspace", r.workspaceBytes);
  if (r.commBytes > 0)
    row("NCCL reserve (NCCL's own)", r.commBytes);
  row("total", r.totalBytes());
  if (r.hostBytes > 0)
    row("host, offload=" + stringifyOffload(r.offload).str() + " (m, v)", r.hostBytes);
  os << "peak live arena bytes per phase\n";
  row("forward", r.peakForward);
  row("backward", r.peakBackward);
  row("optimizer", r.peakOptimizer);
  row("eval (forward only)", r.peakEval);
  row("lower bound (max live)", r.lowerBound);
  if (r.lowerBound > 0)
    os << "  arena / lower bound = "
       << llvm::format("%.4f", (double)r.arenaBytes / (double)r.lowerBound)
       << " (heuristic: " << r.heuristic << ")\n";
  if (r.rematPolicy != "none" || r.stepFlops > 0) {
    os << "rematerialization: " << r.rematPolicy << ", " << r.recomputedOps
       << " ops recomputed, extra FLOPs " << r.extraFlops;
    if (r.stepFlops > 0)
      os << llvm::format(" (%.1f%% of the micro-step's %.3g)",
                         100.0 * (double)r.extraFlops / (double)r.stepFlops, (double)r.stepFlops);
    os << "\n";
  }
  if (!r.layers.empty()) {
    os << "per layer, forward results the backward reads: saved / recomputed\n";
    for (const auto &l : r.layers)
      os << "  layer " << llvm::left_justify(std::to_string(l.layer), 4) << "saved "
         << llvm::right_justify(std::to_string(l.savedTensors), 3) << " tensors "
         << llvm::right_justify(human(l.savedBytes), 11) << "   recomputed "
         << llvm::right_justify(std::to_string(l.recomputedTensors), 3) << " tensors "
         << llvm::right_justify(human(l.recomputedBytes), 11) << "\n";
  }
  if (!r.arenaByDtype.empty()) {
    os << "micro-step arena buffers by dtype (sum of sizes, before reuse)\n";
    for (const auto &[dtype, bytes] : r.arenaByDtype)
      row(dtype, bytes);
  }
  std::vector<const PlanReport::Buffer *> sorted;
  for (const auto &b : r.buffers)
    sorted.push_back(&b);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](auto *a, auto *b) { return a->bytes > b->bytes; });
  size_t n = topBuffers < 0 ? sorted.size() : std::min<size_t>(topBuffers, sorted.size());
  if (n > 0) {
    os << (topBuffers < 0 ? "buffers\n" : "largest buffers\n");
    for (size_t i = 0; i < n; ++i) {
      const auto *b = sorted[i];
      os << "  " << b->function << " " << b->name << ": offset = " << b->offset
         << ", size = " << b->bytes << ", live = [" << b->first << ", " << b->last << "], "
         << b->phase << ", " << b->dtype << "\n";
    }
  }
  return s;
}

std::string planReportJson(const PlanReport &r) {
  llvm::json::Array params, buffers;
  for (const ParamSlot &p : r.params) {
    llvm::json::Array shape;
    for (int64_t d : p.shape)
      shape.push_back(d);
    params.push_back(llvm::json::Object{{"name", p.name},
                                        {"shape", std::move(shape)},
                                        {"numel", p.numel},
                                        {"offset", p.offset},
                                        {"grad_offset", p.gradOffset},
                                        {"m_offset", p.mOffset},
                                        {"v_offset", p.vOffset},
                                        {"work_offset", p.workOffset},
                                        {"dtype", p.dtype},
                                        {"grad_dtype", p.gradDtype},
                                        {"state_dtype", p.stateDtype}});
    if (p.split)
      params.back().getAsObject()->insert({"split", true});
    if (p.padRows > 0)
      params.back().getAsObject()->insert({"pad_rows", p.padRows});
    if (p.shard > 0)
      params.back().getAsObject()->insert({"shard", p.shard});
  }
  for (const auto &b : r.buffers)
    buffers.push_back(llvm::json::Object{{"function", b.function},
                                         {"name", b.name},
                                         {"phase", b.phase},
                                         {"dtype", b.dtype},
                                         {"bytes", b.bytes},
                                         {"offset", b.offset},
                                         {"first", b.first},
                                         {"last", b.last}});
  llvm::json::Object root{
      {"persistent_bytes", r.persistentBytes},
      {"arena_bytes", r.arenaBytes},
      {"workspace_bytes", r.workspaceBytes},
      {"comm_bytes", r.commBytes},
      {"host_bytes", r.hostBytes},
      {"offload", stringifyOffload(r.offload)},
      {"total_bytes", r.totalBytes()},
      {"lower_bound_bytes", r.lowerBound},
      {"heuristic", r.heuristic},
      {"precision", stringifyPrecision(r.precision)},
      {"param_bytes", r.paramBytes},
      {"grad_bytes", r.gradBytes},
      {"gradients", r.gradsInArena ? "arena" : "persistent"},
      {"optimizer_state_bytes", r.optimizerStateBytes},
      {"input_bytes", r.inputBytes},
      {"work_dtype", r.workDtype},
      {"work_bytes", r.workBytes},
      {"peak_forward_bytes", r.peakForward},
      {"peak_backward_bytes", r.peakBackward},
      {"peak_optimizer_bytes", r.peakOptimizer},
      {"peak_eval_bytes", r.peakEval},
      {"remat_policy", r.rematPolicy},
      {"extra_flops", r.extraFlops},
      {"step_flops", r.stepFlops},
      {"recomputed_ops", r.recomputedOps},
      {"layers", [&] {
         llvm::json::Array a;
         for (const auto &l : r.layers)
           a.push_back(llvm::json::Object{{"layer", l.layer},
                                          {"saved_tensors", l.savedTensors},
                                          {"saved_bytes", l.savedBytes},
                                          {"recomputed_tensors", l.recomputedTensors},
                                          {"recomputed_bytes", l.recomputedBytes}});
         return a;
       }()},
      {"params", std::move(params)},
      {"buffers", std::move(buffers)}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}

} // namespace mlir::tg
