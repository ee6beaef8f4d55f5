//===- Pipeline.cpp - the tgc pass pipeline ----------------------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

namespace mlir::tg {

namespace {

/// The passes between tg-rematerialize and tg-plan-memory: tg-distribute (ranks > 1), and
/// unless `until` is Step, tg-fuse and tg-bias-rows.
void addStepTail(OpPassManager& pm, const TrainingPipelineOptions& o, PipelineStage until) {
  // Data parallelism: only @optimizer_step changes (an all-reduce of the gradients at its
  // start), so its place among the step passes does not matter; the plan sees it.
  if (o.ranks > 1) {
    TgDistributeOptions dist;
    dist.ranks = o.ranks;
    dist.zero = o.zero;
    pm.addPass(createTgDistribute(dist));
  }
  if (until == PipelineStage::Step) return;
  // Fusions as ops, on the step as it will run (after recomputation and distribution).
  pm.addPass(createTgFuse());
  if (o.biasRows) pm.addPass(createTgBiasRows());
}

/// tg-plan-memory as the pipeline runs it.
TgPlanMemoryOptions planMemoryOptions(const TrainingPipelineOptions& o) {
  TgPlanMemoryOptions plan;
  plan.workspaceBytes = o.workspaceBytes;
  plan.commBytes = o.commBytes;
  plan.offload = o.offload;
  plan.gradients = o.gradients;
  plan.lowPrecisionGrads = o.lowPrecisionGrads;
  plan.splitMaster = o.splitMaster;
  plan.splitTables = o.splitTables;
  plan.dropUnread = true; // no arena bytes for gradients written straight into their slots
  // auto: cuDNN's SDPA on CUDA (faster at every shape measured, docs/results.md 2026-11-27
  // night; the runtime runs its own kernels where libcudnn is missing or refuses a shape),
  // the own kernels on a backend without a workspace (the CPU).
  const std::string impl = o.attentionImpl;
  plan.attentionImpl = impl == "auto" ? (o.workspaceBytes > 0 ? "cudnn" : "own") : impl;
  return plan;
}

} // namespace

void buildTrainingPipeline(OpPassManager &pm, const TrainingPipelineOptions &o,
                           PipelineStage until) {
  if (until == PipelineStage::Forward)
    return;
  // Fusion first (DESIGN.md's order): it matches the f32 naive chain; the precision pass
  // then retypes tg.attention as one op (low-precision q, k, v, out; f32 lse).
  if (o.attention == "flash")
    pm.addPass(createTgFuseAttention());
  if (o.precision != Precision::fp32) {
    TgMixedPrecisionOptions mp;
    mp.precision = o.precision;
    mp.lossScaleInit = o.lossScaleInit;
    mp.lossScaleGrowthInterval = o.lossScaleGrowthInterval;
    pm.addPass(createTgMixedPrecision(mp));
  }
  if (until == PipelineStage::Fused)
    return;
  TgAutodiffOptions ad;
  ad.gradAccum = o.gradAccum;
  ad.beta1 = o.beta1;
  ad.beta2 = o.beta2;
  ad.eps = o.eps;
  ad.weightDecay = o.weightDecay;
  ad.gradClip = o.gradClip;
  ad.decayEmbeddings = o.decayEmbeddings;
  pm.addPass(createTgAutodiff(ad));
  pm.addPass(createCSEPass());
  // The output layer and the loss in chunks of rows: before rematerialization, whose
  // budget policy plans the step as it will run.
  if (o.lossChunkBytes > 0) {
    TgFuseLossOptions fl;
    fl.maxLogitsBytes = o.lossChunkBytes;
    pm.addPass(createTgFuseLoss(fl));
  }
  // Rematerialization after CSE (the clones it makes carry tg.recompute, so a later CSE
  // would not merge them back either).
  if (o.checkpointing != Checkpointing::none) {
    TgRematerializeOptions rm;
    rm.policy = o.checkpointing;
    rm.budgetBytes = o.checkpointBudget;
    // The budget search plans each candidate after the passes that run before
    // tg-plan-memory (the layer norms' ones columns alone grow the arena, docs/design-notes.md
    // "Bias rows"), so the arena it bounds is the one planned.
    if (o.checkpointing == Checkpointing::budget) {
      OpPassManager tail(ModuleOp::getOperationName());
      addStepTail(tail, o, PipelineStage::Planned);
      // And tg-plan-memory itself (its arena without the gradients written straight into
      // their slots, drop-unread); a budget plan keeps its gradients persistent.
      TgPlanMemoryOptions plan = planMemoryOptions(o);
      plan.gradients = "persistent";
      tail.addPass(createTgPlanMemory(plan));
      llvm::raw_string_ostream os(rm.planAfter);
      llvm::interleave(
          tail.getPasses(), os, [&](Pass& p) { p.printAsTextualPipeline(os); }, ",");
    }
    pm.addPass(createTgRematerialize(rm));
  }
  addStepTail(pm, o, until);
  pm.addPass(createTgPlanMemory(planMemoryOptions(o)));
}

bool parsePipelineStage(llvm::StringRef word, PipelineStage &stage) {
  if (word == "forward")
    stage = PipelineStage::Forward;
  else if (word == "fused")
    stage = PipelineStage::Fused;
  else if (word == "step")
    stage = PipelineStage::Step;
  else if (word == "planned")
    stage = PipelineStage::Planned;
  else
    return false;
  return true;
}

void registerTrainingPipeline() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "tg-pipeline",
      "tgc's training pipeline (mixed precision, attention fusion, autodiff, CSE, memory "
      "plan) with the options tgc compile derives from a spec",
      [](OpPassManager &pm, const TrainingPipelineOptions &o) {
        // A misspelt word must not silently mean the default (tgc validates the spec;
        // tg-opt's options come from the command line).
        auto refuse = [](StringRef what, StringRef got, StringRef expected) {
          llvm::errs() << "tg-pipeline: unknown " << what << " '" << got << "' (expected "
                       << expected << ")\n";
          std::exit(1);
        };
        PipelineStage stage = PipelineStage::Planned;
        if (!parsePipelineStage(o.until, stage))
          refuse("until", o.until, "forward, fused, step or planned");
        if (o.attention != "naive" && o.attention != "flash")
          refuse("attention", o.attention, "naive or flash");
        // precision, checkpointing and offload are read by their enums' parsers
        // (dialect/TgEnumOptions.h), which refuse an unknown value.
        if (o.gradients != "auto" && o.gradients != "persistent" && o.gradients != "arena")
          refuse("gradients", o.gradients, "auto, persistent or arena");
        if (o.attentionImpl != "auto" && o.attentionImpl != "own" && o.attentionImpl != "cudnn")
          refuse("attention-impl", o.attentionImpl, "auto, own or cudnn");
        if (o.ranks < 1 || o.ranks > 64) {
          llvm::errs() << "tg-pipeline: ranks must be in [1, 64], got " << o.ranks << "\n";
          std::exit(1);
        }
        buildTrainingPipeline(pm, o, stage);
      });
}

int64_t workspaceBytesFor(llvm::StringRef target) {
  return target == "cuda" ? (int64_t)32 << 20 : 0;
}

int64_t commBytesFor(llvm::StringRef target, int64_t ranks) {
  return target == "cuda" && ranks > 1 ? kNcclReserveBytes : 0;
}

} // namespace mlir::tg
