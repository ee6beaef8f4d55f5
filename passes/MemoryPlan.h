//===- MemoryPlan.h - liveness analysis and the plan report -------*- C++ -*-===//
//
// Shared by tg-plan-memory (which assigns offsets), tg-print-memory-plan, tgc plan and
// tg-lower-to-emitc (which read them back).
//
// Model: every function of the step (@micro_step, @optimizer_step, @eval_step) is one
// total order of ops. Each tensor result is a buffer live from its defining op to its
// last use (returned values: to the end). tg.reshape results alias their source (the
// source's interval grows to cover the view's uses). Function arguments live in the
// persistent region: parameters with their gradient and AdamW moments, and the token
// inputs. The three functions never run at the same time, so they share one arena.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_MEMORYPLAN_H
#define TGC_PASSES_MEMORYPLAN_H

#include "dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/MemoryPlanner.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <string>
#include <vector>

namespace mlir::tg {

/// Byte alignment of every buffer offset (a GPU-friendly 256 B).
inline constexpr int64_t kBufferAlignment = 256;
/// tg-bias-rows (docs/design-notes.md "Bias rows"): the columns a layer norm's output gains
/// (TGRT_ONES_COLUMNS, runtime/tgrt.h: a 1, then zeros; 64 keeps 2-byte rows 128-byte
/// aligned), the rows of a paired bias in each of its slots (TGRT_BIAS_ROWS: the bias, then
/// zero rows; the weight gradient's GEMM reads that many of the ones columns) and the zero
/// rows among them.
inline constexpr int64_t kOnesColumns = 64;
inline constexpr int64_t kBiasRows = 8;
inline constexpr int64_t kBiasPadRows = kBiasRows - 1;

/// The normalised output y of a layer norm tg-bias-rows can widen: tg.layer_norm's y (result
/// 0) or tg-fuse's tg.add_layer_norm's y (result 1); null for any other op.
Value layerNormOutput(Operation* op);
/// Whether v is the layerNormOutput of an op marked tg.ones_column (tg-bias-rows), which the
/// plan gives rows of d + kOnesColumns elements.
bool isOnesColumnOutput(Value v);

/// One arena buffer of a function.
struct BufferInfo {
  Value value;            ///< the SSA value it holds (views share their source's buffer)
  std::string name;       ///< model place from the location, e.g. "layers.0.mlp.fc#0"
  std::string phase;      ///< forward | backward | optimizer
  std::string dtype;      ///< element type: "f32", "bf16", "f16", "i32"
  int64_t bytes = 0;      ///< numel * element size
  int64_t first = 0, last = 0; ///< op indices (inclusive) in the function's order
  int64_t offset = -1;    ///< arena offset (bytes), -1 before planning
};

/// Buffers of one function, in definition order, plus the op phase of each index.
struct FunctionLiveness {
  std::vector<BufferInfo> buffers;
  std::vector<std::string> opPhase; ///< phase of op i
  llvm::DenseMap<Value, size_t> bufferOf; ///< value (or view) -> index into buffers
};

/// Computes buffers and intervals. Results listed in their op's tg.unplanned (kUnplannedAttr)
/// get none. Errors: a tensor with a dynamic shape or an unknown
/// element type (emits a diagnostic on the op and returns failure).
LogicalResult analyzeLiveness(func::FuncOp fn, FunctionLiveness &out);

/// Mixed precision's working copies: when every parameter of @micro_step is f32 and the
/// tg.cast ops of parameter arguments in @micro_step and @eval_step all produce one 2-byte
/// type, marks those casts with kWorkingCopyAttr (idempotent) and returns that type; else
/// returns null and marks nothing. A marked cast's result is the parameter's persistent
/// low-precision copy (tg-plan-memory lays the copies out after the inputs; AdamW writes
/// them): analyzeLiveness gives it no arena buffer. tg-rematerialize calls it before it
/// plans, so that its budget sees the arena the final plan has.
Type markWorkingCopies(ModuleOp module);

/// Names (tg.param) of the parameters whose value every function of `module` reads only
/// through a working-copy cast (a tg.cast marked tg.working_copy; markWorkingCopies), and
/// otherwise names it only for its gradient (tg.accumulate_grad, tg.clip_grad_norm,
/// tg.all_reduce_grads) or its update (tg.adamw): the step never needs their f32 value, so tg-plan-memory's split-master may hold
/// it as the copy plus low halves (tgrt.h tgrt_param.split). A parameter with any other use
/// in any function (e.g. a tied embedding's gather) is absent.
llvm::StringSet<> valuesReadOnlyThroughCopies(ModuleOp module);

/// The function's buffers as planner input (passes/MemoryPlanner.h), in the same order,
/// with kBufferAlignment and each BufferInfo's offset (-1 before planning).
std::vector<tgc::PlanBuffer> toPlanBuffers(const FunctionLiveness &live);

/// Gradients in the arena (tg-plan-memory `gradients=arena`, the pipeline's default when
/// it applies): nothing carries a gradient from one micro-step to the next (tg.grad_accum =
/// 1) or across ranks (tg.ranks = 1), so each gradient slot needs memory only from the
/// first op of @micro_step that writes it to the end of @optimizer_step, as PyTorch's
/// gradients after `zero_grad(set_to_none=True)`. True when the module has both functions,
/// tg.grad_accum = 1 (the frontend's module attribute; when it is absent, as in a
/// hand-written test module, only with `assumeOneMicroStep`), tg.ranks = 1, no
/// rematerialization budget (tg-rematerialize's budget plans @micro_step alone) and every
/// parameter of @micro_step has a tg.accumulate_grad.
bool gradientsCanLiveInArena(ModuleOp module, bool assumeOneMicroStep);

/// Per parameter name (tg.param): the index, in analyzeLiveness's op order of @micro_step,
/// of the first op that may write the parameter's gradient slot: the defining ops of every
/// value that reaches one of its tg.accumulate_grad through tg.cast and tg.add (the
/// lowering writes a weight-gradient GEMM, a bias or norm gradient or the fused loss
/// straight into the slot; LowerToEmitC.cpp slotSink), and the accumulate itself (a GELU
/// layer's bias gradient is tg-fuse's tg.matmul_dgelu_bgrad, which writes it where it runs;
/// a bias gradient of the residual stream's gradient counts from the layer-norm backward
/// right before the add that updates it, which may sum it: tgrt_layer_norm_bwd_acc_bgrad).
/// Parameters without a tg.accumulate_grad are absent.
llvm::StringMap<int64_t> gradientFirstWrites(func::FuncOp micro);

/// Parameters whose gradient slot can hold the compute type (tg-plan-memory
/// low-precision-grads; ParamSlot::gradDtype), by name (tg.param), with that type: under
/// mixed precision a weight's gradient in @micro_step is a bf16 / f16 GEMM's product that a
/// tg.cast widens to the f32 slot (tg-autodiff's gradient of the working copy's cast), as
/// PyTorch's autocast hands an f32 parameter its bf16 GEMM's gradient. Kept in the GEMM's
/// type, the slot holds exactly the IR's value (the cast widens exactly) in half the bytes,
/// which the GEMM writes, the gradient norm and AdamW read (Llama 3.2 1B: 6 bytes a weight
/// element fewer moved per step). A parameter qualifies when its only tg.accumulate_grad
/// of @micro_step is fed through that cast (its only use) by a rank-2 tg.matmul (its only
/// use) without tg.bias_rows whose B no bias gradient also sums (a tg.bias_grad's dy or a
/// tg.matmul_dgelu_bgrad's dx: the lowering may fuse that bias into the weight's call,
/// which writes both in one type), and its 2-byte slot is a whole number of 256-byte
/// blocks (no padding, so a run of such slots maps element for element onto the values').
llvm::StringMap<Type> lowPrecisionGradients(func::FuncOp micro);

/// Bytes of a ranked tensor type (f32/i32: 4, bf16/f16: 2).
int64_t tensorBytes(Type type);

/// Short name of a tensor element type: "f32", "bf16", "f16", "i32" ("?" otherwise).
std::string dtypeName(Type elementType);
/// Bytes of one element of a dtype name (4 for f32/i32, 2 for bf16/f16, 0 otherwise).
int64_t dtypeBytes(llvm::StringRef dtype);

/// One parameter's slots in the persistent region (bytes).
struct ParamSlot {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel = 0, offset = 0, gradOffset = 0, mOffset = 0, vOffset = 0;
  int64_t workOffset = -1; ///< the low-precision working copy (PlanReport::workDtype), or -1
  /// Split master value (tg-plan-memory split-master; the plan's `split`): the value slot at
  /// offset holds numel 2-byte low halves, the bf16 copy at workOffset the high halves; the
  /// value is still f32 (dtype). valueSlotBytes() gives the slot's element size.
  bool split = false;
  /// Bytes of one element of the value slot: 2 when split, else dtype's.
  int64_t valueSlotBytes() const;
  /// Zero rows of numel elements after the value in each slot (tg-bias-rows' biases: 7),
  /// part of the slot as its alignment padding is.
  int64_t padRows = 0;
  std::string dtype = "f32";      ///< value element type
  /// Gradient slot element type: dtype, or under mixed precision the compute type (bf16 /
  /// f16) when one weight-gradient GEMM writes the whole gradient (the plan's grad_dtype;
  /// tg-plan-memory low-precision-grads, lowPrecisionGradients).
  std::string gradDtype = "f32";
  std::string stateDtype = "f32"; ///< AdamW m, v element type
  std::string init = "normal";    ///< normal | zeros | ones (driver initialisation)
  float initStd = 0.02f;
  bool decay = false;             ///< AdamW weight decay applies
  int64_t owner = -1; ///< ZeRO-1: the rank that holds its moments and updates it; -1 all ranks
  /// ZeRO-2/3: elements of the chunk each rank holds (ceil(numel / ranks)) of the gradient
  /// and moments (ZeRO-3: and the value, working copy); 0 when not sharded.
  int64_t shard = 0;
};

/// The whole plan, read back from a planned module's attributes.
struct PlanReport {
  int64_t persistentBytes = 0, arenaBytes = 0, workspaceBytes = 0;
  /// Device bytes per rank the collective library (NCCL) allocates itself (the plan's
  /// comm_bytes, tg-plan-memory comm-bytes; 0 without): reserved, in totalBytes(), but not
  /// one of tgc's regions (the runtime allocates persistent + arena + workspace).
  int64_t commBytes = 0;
  /// CPU offload (the plan's offload, cpu; none without): the host region's bytes (pinned
  /// host memory holding the AdamW moments; not device memory, not in totalBytes()).
  mlir::tg::Offload offload = mlir::tg::Offload::none;
  int64_t hostBytes = 0;
  int64_t lowerBound = 0;            ///< max live arena bytes at any op of any function
  int64_t paramBytes = 0, gradBytes = 0, optimizerStateBytes = 0, inputBytes = 0;
  /// ZeRO stage of the plan (0: replicated; 1: each rank holds its parameters' AdamW state,
  /// optimizerStateBytes is then one rank's; 2: gradients too, gradBytes one rank's; 3:
  /// values too, paramBytes one rank's) and how many ranks own a range (ZeRO-1).
  int64_t zero = 0, shardRanks = 0;
  int64_t tokensOffset = 0, targetsOffset = 0;
  /// Working copies of the parameter values (mixed precision; tg-plan-memory): their
  /// element type ("" when none), the region's offset and bytes in the persistent region.
  std::string workDtype;
  int64_t workOffset = -1, workBytes = 0;
  mlir::tg::Precision precision = mlir::tg::Precision::fp32; ///< the module's tg.precision
  /// Persistent bytes by (what, dtype), e.g. {"parameters", "f32"} -> bytes, in order.
  std::vector<std::pair<std::string, int64_t>> persistentByDtype;
  /// Peak-independent totals of arena buffer bytes by dtype over @micro_step (activations
  /// and gradients as planned, before reuse), for the report.
  std::vector<std::pair<std::string, int64_t>> arenaByDtype;
  /// Rematerialization (the module's tg.remat; "none" without it): the policy's string form,
  /// for budget with its mix ("budget: 1 layer, 2 selective, 0 none"); FLOPs of one
  /// micro-step as planned, and those spent recomputing.
  std::string rematPolicy = "none";
  int64_t extraFlops = 0, stepFlops = 0, recomputedOps = 0;
  /// Per layer of @micro_step: forward results the backward reads from memory (saved) and
  /// those it reads from recomputed clones, as tensor counts and bytes.
  struct LayerRemat {
    int64_t layer = 0, savedTensors = 0, savedBytes = 0, recomputedTensors = 0,
            recomputedBytes = 0;
  };
  std::vector<LayerRemat> layers;
  /// Peak live arena bytes per phase: forward / backward (micro_step), optimizer.
  int64_t peakForward = 0, peakBackward = 0, peakOptimizer = 0, peakEval = 0;
  std::string heuristic;
  /// The gradient slots are in the arena (gradOffset is an arena offset; the plan's
  /// `gradients = "arena"`), live from their first write in @micro_step to the end of
  /// @optimizer_step; else in the persistent region.
  bool gradsInArena = false;
  /// bf16 / f16 attention runs cuDNN's fused SDPA (the plan's `attention_impl = "cudnn"`,
  /// tg-plan-memory attention-impl=cudnn); the workspace region holds its backward's
  /// workspace. False: tgc's own attention kernels.
  bool cudnnAttention = false;
  std::vector<ParamSlot> params;
  struct Buffer {
    std::string function, name, phase, dtype;
    int64_t bytes, offset, first, last;
  };
  std::vector<Buffer> buffers;
  /// The device bytes one rank needs: tgc's regions plus the collective library's reserve.
  int64_t totalBytes() const {
    return persistentBytes + arenaBytes + workspaceBytes + commBytes;
  }
};

/// Reads the plan from a module that went through tg-plan-memory. Errors: a module
/// without `tg.plan` (emits a diagnostic).
LogicalResult readPlanReport(ModuleOp module, PlanReport &report);

/// Human-readable report: regions, per-phase peaks, lower bound, the `topBuffers`
/// largest buffers (all when < 0).
std::string formatPlanReport(const PlanReport &report, int topBuffers);

/// The full report as JSON text.
std::string planReportJson(const PlanReport &report);

} // namespace mlir::tg

#endif
