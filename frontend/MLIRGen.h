//===- MLIRGen.h - spec -> tg forward graph -----------------------*- C++ -*-===//
#ifndef TGC_FRONTEND_MLIRGEN_H
#define TGC_FRONTEND_MLIRGEN_H

#include "frontend/Spec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tgc {

/// Builds `func.func @forward(params..., %tokens, %targets) -> tensor<f32>` (the mean
/// token cross-entropy, nats) for the GPT-style decoder described by `spec`, with naive
/// attention as primitive ops (matmul, causal_mask, softmax, matmul). Parameters come in
/// modelParameters() order and carry `tg.param = "<name>"`; tokens and targets are
/// tensor<B x T x i32> with `tg.input`. Every op's location names its place in the model
/// (e.g. "layers.3.attn.qkv"). The module carries the spec as `tg.spec` (JSON string)
/// and the batch, context and grad_accum as attributes. Element type: f32.
mlir::OwningOpRef<mlir::ModuleOp> buildForwardModule(mlir::MLIRContext &ctx, const Spec &spec);

} // namespace tgc

#endif
