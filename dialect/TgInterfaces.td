//===- TgInterfaces.td - what a tg op knows about itself ----*- tablegen -*-===//
//
// The op is the unit of knowledge (docs/design-notes.md, "Where knowledge lives"): its
// gradient, its precision rule, its cost and its memory behaviour are answered by the op
// through these interfaces; passes ask and never switch over op kinds (MLIR's
// BufferizableOpInterface is the model: One-Shot Bufferize never names an op).
//
//===----------------------------------------------------------------------------===//
#ifndef TG_INTERFACES
#define TG_INTERFACES

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    An op that knows its own adjoint (reverse-mode derivative). tg-autodiff walks the
    forward ops in reverse order and asks each to build the ops computing the gradients
    of its operands from the gradients of its results (Enzyme's AutoDiffOpInterface,
    Toy's ShapeInference style: no switch over op kinds in the pass).
  }];
  let cppNamespace = "::mlir::tg";
  let methods = [
    InterfaceMethod<[{
        Builds the adjoint at the builder's insertion point. `resultGrads[i]` is the
        gradient of result i (same type as the result) or a null Value when result i
        does not reach the loss. Returns one Value per operand: its gradient (same
        type as the operand) or a null Value when the operand is not differentiable
        (token ids) or receives no gradient.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads)>,
  ];
}

def PrecisionOpInterface : OpInterface<"PrecisionOpInterface"> {
  let description = [{
    An op of the forward graph that knows its autocast rule (PyTorch's autocast op lists;
    Micikevicius et al. 2018): given the policy's low type (bf16 / f16; f32 under fp32) and
    wide type (f32 in the mixed policies, bf16 in pure bf16), it retypes its results and
    asks for its operands in the types it computes in, through the PrecisionRewriter
    (dialect/Precision.h) that tg-mixed-precision hands it. An op without this interface
    is refused by the pass.
  }];
  let cppNamespace = "::mlir::tg";
  let methods = [
    InterfaceMethod<[{
        Applies the op's precision rule. Returns failure (after emitting an error on the
        op) when the rule cannot be applied.
      }],
      "::mlir::LogicalResult", "applyPrecision",
      (ins "::mlir::tg::PrecisionRewriter &":$rewriter)>,
  ];
}

def CostOpInterface : OpInterface<"CostOpInterface"> {
  let description = [{
    What running the op costs: floating-point operations (a multiply-add counts 2; a
    pointwise op 1 per output element) and bytes its kernel reads and writes once each
    (the roofline's memory term). tg-rematerialize ranks recomputation by FLOPs; the cost
    model reads both. `keptBySelective`: whether the selective checkpointing policy keeps
    this op's results instead of recomputing them (expensive ops: GEMMs, attention,
    embeddings, the loss; Korthikanti et al. 2022).
  }];
  let cppNamespace = "::mlir::tg";
  let methods = [
    InterfaceMethod<"FLOPs of one execution.", "int64_t", "flops", (ins), [{}], [{
        int64_t n = 0;
        for (::mlir::Value r : $_op->getResults())
          if (auto t = ::llvm::dyn_cast<::mlir::RankedTensorType>(r.getType()))
            n += t.getNumElements();
        return n;
      }]>,
    InterfaceMethod<"Bytes read and written once each (operands + results).", "int64_t",
      "bytesMoved", (ins), [{}], [{
        auto bytes = [](::mlir::Type type) -> int64_t {
          auto t = ::llvm::dyn_cast<::mlir::RankedTensorType>(type);
          return t ? t.getNumElements() * (int64_t)((t.getElementTypeBitWidth() + 7) / 8) : 0;
        };
        int64_t n = 0;
        for (::mlir::Type t : $_op->getOperandTypes()) n += bytes(t);
        for (::mlir::Type t : $_op->getResultTypes()) n += bytes(t);
        return n;
      }]>,
    InterfaceMethod<"Whether checkpointing=selective keeps the results.", "bool",
      "keptBySelective", (ins), [{}], [{ return false; }]>,
  ];
}

def MemoryOpInterface : OpInterface<"MemoryOpInterface"> {
  let description = [{
    How the op's runtime call uses memory, for tg-plan-memory: the operands whose buffer
    result #0 may take over when the operand dies at this op (the kernel is documented in
    runtime/tgrt.h to work with output == that input), in order of preference; and the
    scratch bytes its kernel needs in the workspace region (beside the GEMM library's).
  }];
  let cppNamespace = "::mlir::tg";
  let methods = [
    InterfaceMethod<"Operand indices result #0 may be written over.",
      "::llvm::SmallVector<unsigned, 2>", "inPlaceOperands", (ins), [{}],
      [{ return {}; }]>,
    InterfaceMethod<"Workspace bytes the kernel needs (0: none).", "int64_t",
      "workspaceBytes", (ins), [{}], [{ return 0; }]>,
  ];
}

#endif
