//===- PrintMemoryPlanPass.cpp - print the plan for FileCheck ----------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGPRINTMEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {
struct TgPrintMemoryPlanPass
    : mlir::tg::impl::TgPrintMemoryPlanBase<TgPrintMemoryPlanPass> {
  void runOnOperation() override {
    PlanReport report;
    if (failed(readPlanReport(getOperation(), report)))
      return signalPassFailure();
    llvm::outs() << formatPlanReport(report, /*topBuffers=*/-1);
    llvm::outs().flush();
    markAllAnalysesPreserved();
  }
};
} // namespace
