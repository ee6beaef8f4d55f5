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
// The lowering table (one runtime call per tg op; matmul + its only bias_add become one
// `tgrt_matmul_bias`) lives in LowerToEmitC.cpp; the runtime ABI it targets is tgrt.h.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_LOWERTOEMITC_H
#define TGC_PASSES_LOWERTOEMITC_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tg {

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
/// runtime kernel, a runtime call whose argument count disagrees with the checks' access
/// table (kernelAccess in LowerToEmitC.cpp, kept in step with tgrt.h).
LogicalResult lowerToEmitC(ModuleOp module);

/// Lowers a clone of `module` with lowerToEmitC and prints it with
/// mlir::emitc::translateToCpp to `os`. `module` itself is left unchanged.
LogicalResult emitTrainingCpp(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif
