//===- tg-opt.cpp - mlir-opt for the tg dialect and tgc's passes ------------===//
#include "dialect/TgDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::tg::TgDialect, mlir::func::FuncDialect, mlir::emitc::EmitCDialect>();
  mlir::tg::registerTgPasses();
  mlir::tg::registerTrainingPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tg optimizer driver\n", registry));
}
