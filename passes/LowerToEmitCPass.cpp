//===- LowerToEmitCPass.cpp - tg-lower-to-emitc -------------------------------===//
#include "frontend/Spec.h"
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
    ModuleOp module = getOperation();
    auto json = module->getAttrOfType<StringAttr>("tg.spec");
    if (!json) {
      module.emitError() << "tg-lower-to-emitc: module has no tg.spec attribute (build it with tgc)";
      return signalPassFailure();
    }
    tgc::Spec spec;
    tgc::SpecError err;
    if (!tgc::parseSpec(json.str(), {}, spec, err, "tg.spec")) {
      module.emitError() << "tg-lower-to-emitc: tg.spec: " << err.str();
      return signalPassFailure();
    }
    if (failed(tg::lowerToEmitC(module, spec)))
      return signalPassFailure();
  }
};
} // namespace
