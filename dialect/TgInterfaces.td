//===- TgInterfaces.td - GradientOpInterface ----------------*- tablegen -*-===//
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

#endif
