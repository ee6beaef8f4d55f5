//===- LowerToEmitC.h - planned tg module -> EmitC -> C++ --------*- C++ -*-===//
//
// The last stage of the pipeline. A module planned by tg-plan-memory is rewritten into the
// EmitC dialect, and mlir::emitc::translateToCpp prints it as one C++ translation unit:
//
//   - `emitc.include`s of runtime/tgrt.h, <cmath>, <cstdint>;
//   - `emitc.global static const @kParams` (one `tgrt_param` per parameter: name, shape,
//     persistent-region offsets of value / gradient / AdamW m / v, initialisation) and
//     `@kModel` (`tgrt_model`: region sizes in bytes, micro-batch, context, vocab,
//     grad_accum, optimizer settings), and `tg_model_info()` returning &kModel;
//   - `emitc.func @tg_micro_step / @tg_optimizer_step / @tg_eval_step (tgrt_ctx*)`, each a
//     straight-line sequence of `emitc.call_opaque "tgrt_*"` (runtime/tgrt.h) whose pointer
//     operands are `(T*)(region base + planned byte offset)` expressions (T = float,
//     uint16_t for bf16/f16, int32_t), preceded by their TGRT_* element types, and whose
//     scalars (sizes in elements, flags, fp32 constants) are call attributes;
//   - the non-finite checks (the driver's --find-nonfinite; runtime/tgrt.h): each step
//     function reads `bool dbg = tgrt_check_enabled(ctx)` once and follows every call that
//     writes a tensor with `if (dbg) { tgrt_check_op(ctx, &kCheckSites[i]); }` (in-place
//     calls also precede it with `tgrt_check_inputs`); `emitc.global static const
//     @kCheckTensors / @kCheckSites` describe each call's location, op, phase, outputs and
//     inputs (region, offset, shape, dtype).
//
// The lowering table (one runtime call per tg op; tg-fuse's fused ops, e.g. tg.matmul_bias,
// are one call each; the backward fusions the lowering still makes itself are listed in
// docs/design-notes.md) lives in LowerToEmitC.cpp; the runtime ABI it targets is tgrt.h,
// whose kernels and their access strings are listed in runtime/tgrt_kernels.def.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_LOWERTOEMITC_H
#define TGC_PASSES_LOWERTOEMITC_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::tg {

/// One runtime call of the lowered step functions, in emission order: what the cost model
/// (passes/CostModel.h) prices. Sizes in bytes; FLOPs as CostOpInterface counts them.
struct RuntimeCall {
  std::string function; ///< "micro_step", "optimizer_step" or "eval_step"
  std::string kernel;   ///< the tgrt_* function (runtime/tgrt.h)
  std::string location; ///< the call's location text ("layers.3.attn.qkv")
  std::string phase;    ///< forward, backward, optimizer or eval
  std::string op;       ///< the tg op it lowers ("tg.matmul")
  /// FLOPs of the ops the call computes: its op and every op fused into it (CostOpInterface
  /// flops), on the first call a lowered op emits (0 on the others: the zeroing of a
  /// gradient slot before it, a bias gradient accumulated into its slot after a
  /// tgrt_matmul_dgelu_bgrad).
  int64_t flops = 0;
  int64_t bytesRead = 0;    ///< tensor arguments it reads ('R' and 'M' in its access string)
  int64_t bytesWritten = 0; ///< tensor arguments it writes ('W' and 'M')
  std::vector<int64_t> ints; ///< its integer arguments in order (sizes in elements, flags)
  /// Positions (among the arguments after (ctx, loc), as the kernel's access string in
  /// runtime/tgrt_kernels.def counts them) of tensor arguments passed NULL: an optional
  /// output not computed, e.g. the bias gradient `dbias` of a tgrt_matmul_wgrad or a
  /// tgrt_matmul_dgelu_bgrad (CostModel.h kernelParamIndex(kernel, "dbias")).
  std::vector<int> nullArgs;
  std::string dtype;         ///< its first TGRT_* dtype argument, "" if none
};

/// Rewrites the planned `module` in place into the EmitC dialect (see the file comment):
/// the func.func ops @micro_step / @optimizer_step / @eval_step and the module's tg.plan /
/// tg.* attributes are replaced by EmitC globals and functions. Everything the tables need
/// is read from the IR: the model name, sizes and spec text (tg.name, tg.batch_size,
/// tg.context, tg.vocab_size, tg.grad_accum, tg.spec), the optimizer settings
/// (tg.optimizer), the precision and loss scaling (tg.precision, tg.loss_scale), and each
/// parameter's dtypes, initialisation and decay (the plan's params).
///
/// Errors (reported on the op, whose location names its place in the model; the module is
/// then left partly rewritten and must be discarded): a module without a plan, a missing
/// step function, a missing module attribute, a value without a planned offset, a tensor
/// whose element type the runtime does not have (f32, bf16, f16, i32 ids), an op with no
/// runtime kernel, a runtime call whose argument count disagrees with its access string
/// (runtime/tgrt_kernels.def, the kernel list tgrt.h declares the kernels from).
/// `calls`, when given, receives every runtime call of the three step functions in order
/// (RuntimeCall).
LogicalResult lowerToEmitC(ModuleOp module, std::vector<RuntimeCall> *calls = nullptr);

/// The runtime calls lowerToEmitC would emit for `module` (lowered on a clone; `module` is
/// left unchanged). Fails with lowerToEmitC's errors.
LogicalResult traceRuntimeCalls(ModuleOp module, std::vector<RuntimeCall> &calls);

/// The arena results of `module` whose planned offsets (tg.offsets) the lowered calls
/// use, in `read` (lowered on a clone; `module` is left unchanged). A planned result not
/// in it has a buffer no call writes or reads: a gradient the lowering writes straight into
/// its parameter's gradient slot (a weight-gradient GEMM, a bias or norm gradient, the
/// fused loss's dw) and the casts and adds on its way there, which tg-plan-memory
/// (`drop-unread`) then leaves out of the arena. Fails with lowerToEmitC's errors.
LogicalResult traceReadResults(ModuleOp module, llvm::DenseSet<Value>& read);

/// Lowers a clone of `module` with lowerToEmitC and prints it with
/// mlir::emitc::translateToCpp to `os`. `module` itself is left unchanged.
LogicalResult emitTrainingCpp(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif
