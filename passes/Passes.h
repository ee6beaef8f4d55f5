//===- Passes.h - tgc passes and the shared pipeline --------------*- C++ -*-===//
#ifndef TGC_PASSES_PASSES_H
#define TGC_PASSES_PASSES_H

#include "dialect/TgDialect.h"
#include "dialect/TgEnumOptions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The ranked tensor type of a tg value (every tg op operand and result is one; the op
/// verifiers guarantee it before a pass runs). Shared by the passes.
inline RankedTensorType rt(Value v) { return cast<RankedTensorType>(v.getType()); }

/// v itself or, when v is a tg.reshape, the value it views (one level, as the lowering's
/// fusions match a weight GEMM's operands). Shared by the passes.
inline Value throughReshape(Value v) {
  if (auto r = v.getDefiningOp<ReshapeOp>())
    return r.getX();
  return v;
}

/// The residual stream's gradient after a norm's backward (tg.layer_norm_grad,
/// tg.rms_norm_grad), as the lowering fuses it into one tgrt_*_norm_bwd_acc call: the add
/// right after the norm that sums the norm's input gradient `dx` (read by nothing else) into
/// the stream's gradient (the add's other operand, of dx's type), and the cast of that sum
/// right after the add (the next GEMM's low-precision input), which the same call writes.
/// Structure only: the lowering also needs the add in place (its result in its other
/// operand's buffer) and the cast's buffer free from the norm on; tg-plan-memory gives the
/// cast the norm's dy buffer when dy dies at the norm (analyzeLiveness). Shared by the
/// planner and the lowering.
struct ResidualGradSink {
  AddOp add; ///< null when the norm's dx does not go into such an add
  CastOp low; ///< null when no cast of the sum follows the add
};
inline ResidualGradSink residualGradSinkOf(Operation *norm, Value dx) {
  auto add = dyn_cast_or_null<AddOp>(norm->getNextNode());
  if (!add || !dx.hasOneUse() || add.getLhs() == add.getRhs() ||
      (add.getLhs() != dx && add.getRhs() != dx))
    return {};
  Value dres = add.getLhs() == dx ? add.getRhs() : add.getLhs();
  if (rt(dres).getElementType() != rt(dx).getElementType())
    return {};
  CastOp low = dyn_cast_or_null<CastOp>(add->getNextNode());
  if (low && low.getX() != add.getResult())
    low = CastOp();
  return {add, low};
}

/// How far the pipeline goes.
enum class PipelineStage { Forward, Fused, Step, Planned };

/// Options of the training pipeline. tgc fills them from the spec; tg-opt's
/// `-tg-pipeline="..."` takes the same ones, so a lit test replays what tgc compile runs.
struct TrainingPipelineOptions : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> attention{*this, "attention",
                                llvm::cl::desc("naive | flash (fuse into tg.attention)"),
                                llvm::cl::init("naive")};
  Option<Precision> precision{*this, "precision",
                              llvm::cl::desc("fp32 | bf16-mixed | fp16-mixed | bf16"),
                              llvm::cl::init(Precision::fp32)};
  Option<int64_t> gradAccum{*this, "grad-accum", llvm::cl::desc("micro-batches per step"),
                            llvm::cl::init(1)};
  Option<double> lossScaleInit{*this, "loss-scale-init",
                               llvm::cl::desc("fp16-mixed: initial dynamic loss scale"),
                               llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("fp16-mixed: clean steps before the scale doubles"), llvm::cl::init(2000)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"), llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"), llvm::cl::init(0.95)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"), llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("decoupled weight decay"),
                             llvm::cl::init(0.1)};
  Option<double> gradClip{*this, "grad-clip", llvm::cl::desc("global-norm clip (0: off)"),
                          llvm::cl::init(1.0)};
  Option<bool> decayEmbeddings{*this, "decay-embeddings",
                               llvm::cl::desc("weight decay on embeddings (when the frontend "
                                              "did not mark parameters with tg.decay)"),
                               llvm::cl::init(false)};
  Option<Checkpointing> checkpointing{
      *this, "checkpointing",
      llvm::cl::desc("none | gelu | layer | layer-attn | selective | budget"),
      llvm::cl::init(Checkpointing::none)};
  Option<int64_t> checkpointBudget{*this, "checkpoint-budget",
                                   llvm::cl::desc("checkpointing=budget: arena bytes allowed"),
                                   llvm::cl::init(0)};
  Option<bool> biasRows{*this, "bias-rows",
                        llvm::cl::desc("tg-bias-rows: carry the biases of layer-norm-fed "
                                       "linear layers in their GEMMs (a ones column)"),
                        llvm::cl::init(false)};
  Option<int64_t> lossChunkBytes{*this, "loss-chunk-bytes",
                                 llvm::cl::desc("tg-fuse-loss: bytes of logits per chunk (0: "
                                                "the loss is not fused)"),
                                 llvm::cl::init(512 << 20)};
  Option<int64_t> ranks{*this, "ranks",
                        llvm::cl::desc("data-parallel ranks (> 1: tg-distribute averages "
                                       "gradients before the optimizer)"),
                        llvm::cl::init(1)};
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage with ranks > 1: 0, 1 (AdamW moments "
                                      "sharded by parameter ranges), 2 (+ gradients), 3 (+ "
                                      "values; all sharded evenly)"),
                       llvm::cl::init(0)};
  Option<Offload> offload{*this, "offload",
                          llvm::cl::desc("none | cpu (AdamW moments in pinned host memory, "
                                         "streamed through AdamW)"),
                          llvm::cl::init(Offload::none)};
  Option<std::string> gradients{
      *this, "gradients",
      llvm::cl::desc("auto | persistent | arena: where the gradient slots live "
                     "(tg-plan-memory; auto = arena with grad_accum 1 and one rank)"),
      llvm::cl::init("auto")};
  Option<bool> lowPrecisionGrads{
      *this, "low-precision-grads",
      llvm::cl::desc("tg-plan-memory low-precision-grads: weight gradients written by one "
                     "bf16 / f16 GEMM keep that type (with the gradients in the arena)"),
      llvm::cl::init(true)};
  Option<bool> splitMaster{
      *this, "split-master",
      llvm::cl::desc("tg-plan-memory split-master: under bf16-mixed, the f32 values of the "
                     "weights with bf16 gradient slots held as their working copy plus 2-byte "
                     "low halves (tgrt_adamw_split)"),
      llvm::cl::init(true)};
  Option<bool> splitTables{
      *this, "split-tables",
      llvm::cl::desc("tg-plan-memory split-tables: with split-master, a gathered token-"
                     "embedding table (a tied wte) split too (training.master_values all)"),
      llvm::cl::init(false)};
  Option<std::string> attentionImpl{
      *this, "attention-impl",
      llvm::cl::desc("auto | own | cudnn: bf16 / f16 flash attention by tgc's own kernels or "
                     "cuDNN's fused SDPA (tg-plan-memory; auto = cudnn when the backend has a "
                     "workspace, i.e. CUDA, else own)"),
      llvm::cl::init("auto")};
  Option<int64_t> workspaceBytes{*this, "workspace-bytes",
                                 llvm::cl::desc("backend scratch to reserve, bytes"),
                                 llvm::cl::init(0)};
  Option<int64_t> commBytes{*this, "comm-bytes",
                            llvm::cl::desc("device bytes per rank NCCL allocates itself, "
                                           "reserved in the plan (tg-plan-memory comm-bytes)"),
                            llvm::cl::init(0)};
  Option<std::string> until{*this, "until",
                            llvm::cl::desc("forward | fused | step | planned (last stage)"),
                            llvm::cl::init("planned")};
};

/// The one pipeline shared by tgc and tg-opt (`-tg-pipeline`): fuse attention
/// (attention=flash; first, because it matches the f32 naive chain that casts would
/// break), mixed precision (when not fp32), autodiff, CSE, rematerialization (when
/// checkpointing), tg-distribute (when ranks > 1), plan memory (reserving
/// workspace-bytes of backend scratch). -tg-lower-to-emitc (passes/LowerToEmitC.h) lowers
/// the planned module to EmitC. `until` overrides options.until.
void buildTrainingPipeline(OpPassManager &pm, const TrainingPipelineOptions &options,
                           PipelineStage until);
/// Parses "forward|fused|step|planned"; false for another word.
bool parsePipelineStage(llvm::StringRef word, PipelineStage &stage);
/// Registers `-tg-pipeline` (tg-opt).
void registerTrainingPipeline();

/// Backend scratch the runtime needs, bytes: 0 on the CPU; the cuBLASLt workspace on CUDA.
int64_t workspaceBytesFor(llvm::StringRef target);

/// Device memory per rank that NCCL allocates itself (connection buffers of every channel,
/// its device-side state), which tgc's plan reserves (tg-plan-memory comm-bytes), bytes: 0
/// on the CPU or for one rank. On CUDA with `ranks` > 1: kNcclReserveBytes, from NCCL
/// 2.28.3's footprint per rank on H200s (NVLink, 24 channels, NCCL's default settings with
/// NVLS off) after every kind of collective tgc issues: 864 MiB at 2 ranks and 866 MiB at 4
/// (bench/cuda/nccl_footprint.cu), 874-878 MiB in tgc's own ZeRO-0..3 runs (the
/// communicator's stream and scratch included); the reserve is 896 MiB (docs/distributed.md
/// "NCCL's memory"; bench/results/2026-11-28-h200x2/nccl). Other machines: not measured.
int64_t commBytesFor(llvm::StringRef target, int64_t ranks);

/// NCCL's reserve per rank (commBytesFor): 896 MiB.
inline constexpr int64_t kNcclReserveBytes = 939524096;

} // namespace mlir::tg

#endif
