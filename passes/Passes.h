//===- Passes.h - tgc passes and the shared pipeline --------------*- C++ -*-===//
#ifndef TGC_PASSES_PASSES_H
#define TGC_PASSES_PASSES_H

#include "dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace tgc {
struct Spec;
}

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// How far the pipeline goes.
enum class PipelineStage { Forward, Fused, Step, Planned };

/// The one pipeline shared by tgc and tg-opt's tests: fuse attention (kernel=flash),
/// autodiff with the spec's optimizer, plan memory (reserving `workspaceBytes` of
/// backend scratch). -tg-lower-to-emitc (passes/LowerToEmitC.h) lowers the planned module to EmitC.
void buildTrainingPipeline(OpPassManager &pm, const tgc::Spec &spec, PipelineStage until,
                           int64_t workspaceBytes = 0);

/// Backend scratch the runtime needs, bytes: 0 on the CPU; the cuBLASLt workspace on CUDA.
int64_t workspaceBytesFor(llvm::StringRef target);

} // namespace mlir::tg

#endif
