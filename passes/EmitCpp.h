//===- EmitCpp.h - planned tg module -> C++ calling the runtime ABI -*- C++ -*-===//
//
// Emits one C++ translation unit for a module planned by tg-plan-memory: the
// `tgrt_model` table (parameters, region sizes, optimizer settings) and the functions
// tg_micro_step / tg_optimizer_step / tg_eval_step, each a straight-line sequence of
// runtime calls (runtime/tgrt.h) on `region base + planned offset` pointers.
//
// Why not EmitC + translateToCpp: every tg op becomes one opaque runtime call whose
// arguments are pointer arithmetic on region bases and integer/float constants; MLIR 19's
// EmitC has no lvalues and no bf16, so the EmitC route would spell all of it as opaque
// strings anyway. Printing the calls directly keeps one place that knows the ABI (see
// docs/design-notes.md).
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_EMITCPP_H
#define TGC_PASSES_EMITCPP_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace tgc {
struct Spec;
}

namespace mlir::tg {

/// Writes the C++ source for `module` (planned) to `os`. Errors: an op without a planned
/// offset, an op the runtime has no kernel for, a non-f32 tensor (the runtime is fp32);
/// each is reported on the op with its model location.
LogicalResult emitTrainingCpp(ModuleOp module, const tgc::Spec &spec, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif
