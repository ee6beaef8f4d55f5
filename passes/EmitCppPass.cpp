//===- EmitCppPass.cpp - print the emitted C++ of a planned module -----------===//
#include "frontend/Spec.h"
#include "passes/EmitCpp.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGEMITCPP
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {
struct TgEmitCppPass : mlir::tg::impl::TgEmitCppBase<TgEmitCppPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto json = module->getAttrOfType<StringAttr>("tg.spec");
    if (!json) {
      module.emitError() << "tg-emit-cpp: module has no tg.spec attribute (build it with tgc)";
      return signalPassFailure();
    }
    tgc::Spec spec;
    tgc::SpecError err;
    if (!tgc::parseSpec(json.str(), {}, spec, err, "tg.spec")) {
      module.emitError() << "tg-emit-cpp: tg.spec: " << err.str();
      return signalPassFailure();
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    if (failed(tg::emitTrainingCpp(module, spec, os)))
      return signalPassFailure();
    llvm::outs() << text;
    llvm::outs().flush();
    markAllAnalysesPreserved();
  }
};
} // namespace
