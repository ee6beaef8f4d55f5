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
//     operands are `(float*)(region base + planned byte offset)` expressions and whose
//     scalars (sizes in elements, flags, fp32 constants) are call attributes.
//
// The lowering table (one runtime call per tg op; matmul + its only bias_add become one
// `tgrt_matmul_bias`) lives in LowerToEmitC.cpp; the runtime ABI it targets is tgrt.h.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_LOWERTOEMITC_H
#define TGC_PASSES_LOWERTOEMITC_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace tgc {
struct Spec;
}

namespace mlir::tg {

/// Rewrites the planned `module` in place into the EmitC dialect (see the file comment):
/// the func.func ops @micro_step / @optimizer_step / @eval_step and the module's tg.plan /
/// tg.* attributes are replaced by EmitC globals and functions. `spec` supplies the
/// model name, the spec text embedded in the binary and the optimizer settings.
///
/// Errors (reported on the op, whose location names its place in the model; the module is
/// then left partly rewritten and must be discarded): a module without a plan, a missing
/// step function, a value without a planned offset, a non-f32 tensor (the runtime computes
/// in fp32), an op with no runtime kernel.
LogicalResult lowerToEmitC(ModuleOp module, const tgc::Spec &spec);

/// Lowers a clone of `module` with lowerToEmitC and prints it with
/// mlir::emitc::translateToCpp to `os`. `module` itself is left unchanged.
LogicalResult emitTrainingCpp(ModuleOp module, const tgc::Spec &spec, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif
