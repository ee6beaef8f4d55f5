//===- TgDialect.h - the tg dialect -------------------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TGDIALECT_H
#define TGC_DIALECT_TGDIALECT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallVector.h"
#include <cmath>

#include "dialect/Precision.h"
#include "dialect/TgEnums.h"
#include "dialect/TgOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/TgAttrs.h.inc"
#include "dialect/TgInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/TgOps.h.inc"

namespace mlir::tg {
/// Name of the discardable attribute tg-autodiff puts on every op of a training step:
/// "forward", "backward" or "optimizer". The memory report groups peaks by it.
inline constexpr llvm::StringLiteral kPhaseAttr = "tg.phase";
/// Name of the discardable attribute on function arguments naming a parameter.
inline constexpr llvm::StringLiteral kParamNameAttr = "tg.param";
/// Discardable unit attribute tg-plan-memory puts on a tg.cast of a parameter argument whose
/// result is the parameter's persistent low-precision working copy (written by AdamW, see
/// tg.plan's work_offset): the lowering emits no cast and reads the copy's slot.
inline constexpr llvm::StringLiteral kWorkingCopyAttr = "tg.working_copy";
/// Discardable DenseI64ArrayAttr tg-plan-memory (drop-unread) puts on an op: the numbers
/// of its results that no lowered call uses (a gradient written straight into its slot,
/// LowerToEmitC.h traceReadResults); analyzeLiveness gives them no arena buffer.
inline constexpr llvm::StringLiteral kUnplannedAttr = "tg.unplanned";
/// Name of the discardable attribute on function arguments marking token inputs
/// ("tokens" or "targets").
inline constexpr llvm::StringLiteral kInputAttr = "tg.input";
/// Argument attribute (TypeAttr) of a parameter: the element type of its AdamW moments
/// (tg-mixed-precision; f32 when absent).
inline constexpr llvm::StringLiteral kMomentTypeAttr = "tg.moment_type";
/// Argument attributes of a parameter set by the frontend: initialisation ("normal",
/// "zeros", "ones"), its standard deviation (F32Attr), and whether AdamW decays it (unit).
inline constexpr llvm::StringLiteral kInitAttr = "tg.init";
inline constexpr llvm::StringLiteral kInitStdAttr = "tg.init_std";
inline constexpr llvm::StringLiteral kDecayAttr = "tg.decay";
/// Discardable attribute (i64) on every op that belongs to transformer layer i: set by
/// the frontend on the layer's forward ops, carried by tg-mixed-precision to the casts it
/// inserts for them and by tg-autodiff to the ops of their adjoints. Rematerialization
/// groups ops by it (never by location strings).
inline constexpr llvm::StringLiteral kLayerAttr = "tg.layer";
/// Unit attribute on ops cloned by tg-rematerialize (recomputed in the backward). It also
/// keeps CSE from merging a clone back into its original (their attributes differ).
inline constexpr llvm::StringLiteral kRecomputeAttr = "tg.recompute";
/// Module attribute: the precision policy applied by tg-mixed-precision, a PrecisionAttr
/// (#tg.precision<"bf16-mixed">; TgEnums.td); absent means fp32.
inline constexpr llvm::StringLiteral kPrecisionAttr = "tg.precision";
/// Module attribute: dynamic loss scaling {init : f32, growth_interval : i64} (fp16-mixed).
inline constexpr llvm::StringLiteral kLossScaleAttr = "tg.loss_scale";
/// Module attribute: the optimizer and schedule the driver runs, a dictionary {lr, min_lr,
/// beta1, beta2, eps, weight_decay, grad_clip : f32, warmup_steps, decay, seed : i64}
/// (decay: 0 none, 1 cosine, 2 linear), written by the frontend.
inline constexpr llvm::StringLiteral kOptimizerAttr = "tg.optimizer";
/// Module attribute (i64) written by tg-distribute: the data-parallel rank count.
inline constexpr llvm::StringLiteral kRanksAttr = "tg.ranks";
/// Module attribute: the ZeRO stage (1: AdamW moments sharded by parameter ranges;
/// tg-distribute sets it, tg-plan-memory and the lowering read it). Absent: 0.
inline constexpr llvm::StringLiteral kZeroAttr = "tg.zero";
} // namespace mlir::tg

#endif
