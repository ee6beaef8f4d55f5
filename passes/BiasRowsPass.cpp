//===- BiasRowsPass.cpp - tg-bias-rows: a linear layer's bias inside its GEMMs ----------===//
//
// A linear layer h = y W + b whose input y is a layer norm's output: its weight gradient
// dW = y^T dh has the tokens as k, the same k as the bias gradient db = 1^T dh (the column
// sums of dh). With y extended by a column of ones (and zero columns up to
// TGRT_ONES_COLUMNS = 64, runtime/tgrt.h, so that 2-byte rows stay 128-byte aligned) and W
// followed in memory by b and zero rows,
//   [y 1 0]^T dh = [dW; db; 0]            (the weight gradient: M = d + 8, over y's first
//                                          d + 8 columns, rows d + 64 apart),
// (and [y 1 0] [W; b; 0] = y W + b, which the forward does not use: it reads y's first d
// columns with the bias in its epilogue; K = d + 8 cost a 13th k tile at d 768), so the
// bias gradient costs no read of dh of its own (GPT-2 small: 0.07 ms a layer of
// column sums over [16384, 2304] and [16384, 3072], about 0.8 ms of a 29.4 ms step on an
// H200, docs/results.md). The ones-column trick is the usual "bias as an extra input"
// identity of linear models; docs/design-notes.md "Bias rows" says what it changes.
//
// Runs after tg-fuse, before tg-plan-memory, on @micro_step. For each layer norm
// (tg.layer_norm, or tg-fuse's tg.add_layer_norm) whose output y is read only by
//   - at most one tg.matmul_bias or tg.matmul_bias_gelu (A = y, not transposed; B the weight
//     W [d, n] and its bias b [n], both parameters or both their casts), and
//   - reshapes read only by the weight gradient: a tg.matmul with transpose_a of the
//     reshape and dh, whose result goes (through at most one cast) only into W's one
//     tg.accumulate_grad,
// where W and b are named by that forward GEMM or, for a layer norm tg-rematerialize
// recomputed for the backward alone (selective checkpointing: the clone feeds only the weight
// gradient), by the GEMM on the output of the forward layer norm it copies (same op, same
// operands), and whose bias b has one tg.accumulate_grad fed (through at most one cast) by a
// tg.bias_grad of dh or a tg.matmul_dgelu_bgrad's db beside dh, computed before the weight
// gradient, it marks:
//   - the layer norm `tg.ones_column` (the plan gives y [.., d + 64]; tgrt_layer_norm_fwd_ones,
//     tgrt_add_layer_norm_fwd_ones),
//   - the forward GEMM on y, if any, and the weight gradient `tg.bias_rows` (the lowering runs
//     the forward on y's first d columns, rows d + 64 apart, and the weight gradient with
//     M = d + 8 into W's and b's slots, with no separate bias gradient); a selective clone's
//     forward layer norm and GEMM stay as they are (rows d apart),
// and records the pairs on the module, `tg.bias_rows = [[W name, b name], ...]`, which
// tg-plan-memory reads to place b right after W in every slot (values, gradients, moments,
// working copies) with its slot grown to 8 rows of n (the zero rows the weight gradient
// writes), and the lowering runs AdamW over such a run with the biases as no-decay islands.
// Only where the step has one micro-step per optimizer step (tg.grad_accum 1, the weight
// gradient writing its slot), one rank, parameters whose slots are 256-byte multiples, d and
// n multiples of 8, and (mixed precision) working copies of the parameters; anything else is
// left as it is. Errors: a module already marked.
//
//===----------------------------------------------------------------------------===//
#include "dialect/ElementBytes.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGBIASROWS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// v's only user, or null.
Operation *onlyUser(Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; }

/// The parameter argument v is, or that v casts (a tg.cast of a parameter); null otherwise.
/// `cast` is set when v is a cast.
BlockArgument paramOf(func::FuncOp fn, Value v, bool &cast) {
  cast = false;
  if (auto c = v.getDefiningOp<CastOp>()) {
    cast = true;
    v = c.getX();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
    return BlockArgument();
  return arg;
}

/// Each parameter's one tg.accumulate_grad in fn (null when it has several), from one walk.
llvm::DenseMap<Value, AccumulateGradOp> onlyAccumulations(func::FuncOp fn) {
  llvm::DenseMap<Value, AccumulateGradOp> out;
  llvm::DenseSet<Value> several;
  fn.walk([&](AccumulateGradOp a) {
    if (!out.try_emplace(a.getParam(), a).second)
      several.insert(a.getParam());
  });
  for (Value p : several)
    out[p] = AccumulateGradOp();
  return out;
}

/// The accumulation v flows into: v's only reader, or a cast whose only reader it is.
AccumulateGradOp sinkOf(Value v) {
  Operation *u = onlyUser(v);
  if (auto c = dyn_cast_or_null<CastOp>(u))
    u = onlyUser(c.getResult());
  return dyn_cast_or_null<AccumulateGradOp>(u);
}

/// Whether t's bytes at minElemBytes per element are a multiple of 256 (a slot boundary).
bool slotAligned(RankedTensorType t, int64_t minElemBytes) {
  return t.getNumElements() * minElemBytes % 256 == 0;
}

struct TgBiasRowsPass : mlir::tg::impl::TgBiasRowsBase<TgBiasRowsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr("tg.bias_rows")) {
      module.emitError() << "tg-bias-rows: the module is already marked (tg.bias_rows)";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("micro_step");
    if (!fn || fn.isExternal())
      return;
    auto intAttr = [&](StringRef name, int64_t absent) {
      auto a = module->getAttrOfType<IntegerAttr>(name);
      return a ? a.getInt() : absent;
    };
    if (intAttr("tg.grad_accum", 0) != 1 || intAttr(kRanksAttr, 1) != 1 ||
        intAttr(kZeroAttr, 0) != 0)
      return;
    // Under mixed precision the weight and bias the GEMM reads must be their persistent
    // working copies (adjacent like the values); tg-plan-memory marks the same casts.
    const bool workingCopies = (bool)markWorkingCopies(module);
    llvm::DenseMap<Operation *, int64_t> position;
    int64_t index = 0;
    for (Operation &op : fn.getBody().front())
      position[&op] = index++;
    const llvm::DenseMap<Value, AccumulateGradOp> accumulations = onlyAccumulations(fn);
    Builder b(module.getContext());
    SmallVector<Attribute> pairs;
    llvm::DenseSet<Value> pairedParams;
    // The layer norms in block order: tg.layer_norm and tg-fuse's tg.add_layer_norm (the
    // attention block's residual add in front, kept apart from the projection's GEMM under
    // selective checkpointing), with the recomputed copies tg-rematerialize made of them.
    SmallVector<Operation*> norms;
    for (Operation& op : fn.getBody().front())
      if (layerNormOutput(&op)) norms.push_back(&op);
    // The forward GEMM (tg.matmul_bias / _gelu) whose A is y, when it is y's only such reader.
    auto forwardGemmOf = [](Value y) -> Operation* {
      Operation* fwd = nullptr;
      for (Operation* u : y.getUsers())
        if (isa<MatmulBiasOp, MatmulBiasGeluOp>(u) && u->getOperand(0) == y) {
          if (fwd) return nullptr;
          fwd = u;
        }
      return fwd;
    };
    // The forward layer norm a recomputed one copies: same op, same operands, not recomputed.
    auto originalOf = [&](Operation* clone) -> Operation* {
      for (Operation* op : norms)
        if (op != clone && !op->hasAttr(kRecomputeAttr) && op->getName() == clone->getName() &&
            op->getOperands() == clone->getOperands())
          return op;
      return nullptr;
    };
    for (Operation* ln : norms) {
      Value y = layerNormOutput(ln);
      auto yt = cast<RankedTensorType>(y.getType());
      const int64_t d = yt.getDimSize(yt.getRank() - 1);
      if (yt.getRank() < 2 || d % 8 != 0) continue;
      // y's readers: at most the forward GEMM and the weight gradient's reshape.
      Operation *fwd = nullptr;
      SmallVector<MatmulOp, 1> wgrads;
      bool otherReader = false;
      for (Operation *u : y.getUsers()) {
        if (isa<MatmulBiasOp, MatmulBiasGeluOp>(u) && !fwd && u->getOperand(0) == y) {
          fwd = u;
          continue;
        }
        auto r = dyn_cast<ReshapeOp>(u);
        auto g = r ? dyn_cast_or_null<MatmulOp>(onlyUser(r.getResult())) : MatmulOp();
        if (!g || g.getA() != r.getResult() || !g.getTransposeA() || g.getTransposeB() ||
            g.getAlpha().convertToFloat() != 1.0f ||
            cast<RankedTensorType>(r.getResult().getType()).getRank() != 2) {
          otherReader = true;
          break;
        }
        wgrads.push_back(g);
      }
      if (otherReader || wgrads.size() != 1) continue;
      MatmulOp g = wgrads.front();
      // The GEMM that names W and b: y's own reader (no checkpointing, or a layer recomputed
      // whole, whose GEMM is recomputed too), or, for a layer norm recomputed for the
      // backward alone (selective), the forward's GEMM on the original's output, which
      // keeps its plain [.., d] rows.
      Operation* named = fwd;
      if (!named) {
        Operation* original = ln->hasAttr(kRecomputeAttr) ? originalOf(ln) : nullptr;
        if (!original) continue;
        named = forwardGemmOf(layerNormOutput(original));
        if (!named) continue;
      }
      bool transB = false;
      Value wv, bv;
      if (auto o = dyn_cast<MatmulBiasOp>(named)) {
        transB = o.getTransposeB();
        wv = o.getB();
        bv = o.getBias();
      } else {
        auto o2 = cast<MatmulBiasGeluOp>(named);
        transB = o2.getTransposeB();
        wv = o2.getB();
        bv = o2.getBias();
      }
      if (transB) continue;
      bool wCast = false, bCast = false;
      BlockArgument w = paramOf(fn, wv, wCast), bias = paramOf(fn, bv, bCast);
      if (!w || !bias || wCast != bCast || (wCast && !workingCopies) ||
          pairedParams.contains(w) || pairedParams.contains(bias))
        continue;
      auto wt = cast<RankedTensorType>(w.getType()), bt = cast<RankedTensorType>(bias.getType());
      if (wt.getRank() != 2 || bt.getRank() != 1 || wt.getDimSize(0) != d ||
          wt.getDimSize(1) != bt.getDimSize(0) || wt.getElementType() != bt.getElementType())
        continue;
      const int64_t n = wt.getDimSize(1);
      // Every slot of W (values, gradients, moments: 2 to 4 bytes an element) a multiple of
      // 256 bytes, so b's slot starts where W's ends.
      if (n % 8 != 0 || !slotAligned(wt, 2)) continue;
      // The weight gradient goes only into W's slot; b's gradient is dh's column sum.
      AccumulateGradOp wAcc = accumulations.lookup(w), bAcc = accumulations.lookup(bias);
      if (!wAcc || !bAcc || sinkOf(g.getResult()) != wAcc) continue;
      Value dh = g.getB();
      if (auto r = dh.getDefiningOp<ReshapeOp>())
        dh = r.getX();
      Operation *bSource = nullptr;
      for (Operation *u : dh.getUsers()) {
        if (auto bg = dyn_cast<BiasGradOp>(u); bg && sinkOf(bg.getResult()) == bAcc)
          bSource = u;
      }
      if (auto dg = dh.getDefiningOp<MatmulDgeluBgradOp>();
          dg && dg.getDx() == dh && sinkOf(dg.getDb()) == bAcc)
        bSource = dg;
      if (!bSource || position.lookup(bSource) > position.lookup(g)) continue;
      auto wName = fn.getArgAttrOfType<StringAttr>(w.getArgNumber(), kParamNameAttr);
      auto bName = fn.getArgAttrOfType<StringAttr>(bias.getArgNumber(), kParamNameAttr);
      ln->setAttr("tg.ones_column", b.getUnitAttr());
      if (fwd) fwd->setAttr("tg.bias_rows", b.getUnitAttr());
      g->setAttr("tg.bias_rows", b.getUnitAttr());
      pairs.push_back(b.getArrayAttr({wName, bName}));
      pairedParams.insert(w);
      pairedParams.insert(bias);
      ++numPaired;
    }
    if (!pairs.empty())
      module->setAttr("tg.bias_rows", b.getArrayAttr(pairs));
  }
};

} // namespace
