//===- LowerToEmitCPass.cpp - tg-lower-to-emitc -------------------------------===//
#include "passes/LowerToEmitC.h"
#include "passes/Passes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGLOWERTOEMITC
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {
struct TgLowerToEmitCPass : mlir::tg::impl::TgLowerToEmitCBase<TgLowerToEmitCPass> {
  void runOnOperation() override {
    if (failed(tg::lowerToEmitC(getOperation())))
      return signalPassFailure();
  }
};
} // namespace
