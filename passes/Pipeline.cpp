//===- Pipeline.cpp - the tgc pass pipeline ----------------------------------===//
#include "passes/Passes.h"
#include "frontend/Spec.h"

#include "mlir/Transforms/Passes.h"

namespace mlir::tg {

void buildTrainingPipeline(OpPassManager &pm, const tgc::Spec &spec, PipelineStage until,
                           int64_t workspaceBytes) {
  if (until == PipelineStage::Forward)
    return;
  if (spec.training.attention.kernel == "flash")
    pm.addPass(createTgFuseAttention());
  if (until == PipelineStage::Fused)
    return;
  const tgc::OptimizerSpec &o = spec.training.optimizer;
  TgAutodiffOptions ad;
  ad.gradAccum = spec.training.grad_accum;
  ad.beta1 = o.beta1;
  ad.beta2 = o.beta2;
  ad.eps = o.eps;
  ad.weightDecay = o.weight_decay;
  ad.gradClip = o.grad_clip;
  ad.decayEmbeddings = o.decay_embeddings;
  pm.addPass(createTgAutodiff(ad));
  pm.addPass(createCSEPass());
  if (until == PipelineStage::Step)
    return;
  TgPlanMemoryOptions plan;
  plan.workspaceBytes = workspaceBytes;
  pm.addPass(createTgPlanMemory(plan));
  if (until == PipelineStage::Planned)
    return;
}

int64_t workspaceBytesFor(llvm::StringRef target) {
  return target == "cuda" ? (int64_t)32 << 20 : 0;
}

} // namespace mlir::tg
