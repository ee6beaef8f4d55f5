//===- Passes.td - tgc passes -------------------------------*- tablegen -*-===//
#ifndef TG_PASSES
#define TG_PASSES

include "mlir/Pass/PassBase.td"

def TgFuseAttention : Pass<"tg-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Fuse naive attention into tg.attention (flash / sliding-window)";
  let description = [{
    Rewrites the naive attention chain
    ```mlir
    %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.125 : f32}
    %m = tg.causal_mask %s {window = 128 : i64}
    %p = tg.softmax %m
    %o = tg.matmul %p, %v
    ```
    into `%o, %lse = tg.attention %q, %k, %v {causal = true, window = 128, scale = 0.125}`
    when the intermediate values have no other use and the mask fills with -inf.
    The tgc pipeline runs it when the spec says `training.attention.kernel = "flash"`.
    With `packed` (default), an attention whose q, k, v are the heads split and
    transposed out of one [B, T, 3D] projection and whose output is transposed back and
    flattened becomes `tg.attention_qkv` on the projection itself (no copies).
  }];
  let dependentDialects = ["mlir::tg::TgDialect"];
  let options = [
    Option<"packed", "packed", "bool", "true",
           "also fold the head split / transposes into tg.attention_qkv">,
  ];
  let statistics = [Statistic<"numFused", "num-fused", "Attention chains fused">];
}

def TgFuseLoss : Pass<"tg-fuse-loss", "mlir::ModuleOp"> {
  let summary = "Fuse the output layer, the loss and their gradients into chunks of rows";
  let description = [{
    After tg-autodiff, rewrites @micro_step's
    ```mlir
    %logits = tg.matmul %x, %w {transpose_b = true}
    %loss = tg.cross_entropy %logits, %targets
    %dlogits = tg.cross_entropy_grad %logits, %targets, %dloss
    %dx = tg.matmul %dlogits, %w
    %dw = tg.matmul (reshape %dlogits), (reshape %x) {transpose_a = true}  (then tg.cast to f32)
    ```
    into one `tg.linear_cross_entropy` that computes the logits `chunk_rows` rows at a time
    (the largest count whose logits fit max-logits-bytes), so the plan holds [chunk_rows, V]
    logits instead of [rows, V] (GPT-2 small, 16 x 1024 tokens, bf16: 1.65 GB -> 4 chunks of
    4096 rows, 412 MB).
    The idea of fused linear + cross-entropy kernels (e.g. Liger Kernel, Hsu et al. 2024),
    here as a planned op. The loss, dlogits and dx are the unfused ops' values row for row;
    dw sums the chunks' products. Chains that do not match (another reader of the logits or
    of dlogits, a loss read between the forward and its gradient) stay as they are. The tgc
    pipeline runs it after autodiff and CSE, before rematerialization.
    @eval_step's `loss = tg.cross_entropy(x w^T)` (logits read by nothing else) becomes a
    `tg.linear_cross_entropy` too, with a `tg.fill` of 0 as dloss and dx, dw read by nothing:
    the lowering passes them NULL and the runtime computes the loss only, in the same chunks
    (under checkpointing the evaluation's whole logits were the plan's peak).
  }];
  let dependentDialects = ["mlir::tg::TgDialect"];
  let options = [
    Option<"maxLogitsBytes", "max-logits-bytes", "int64_t", "536870912",
           "bytes of logits one chunk may hold (> 0); the rows are split evenly over the "
           "fewest chunks that fit">,
  ];
  let statistics = [Statistic<"numFused", "num-fused", "Loss chains fused">];
}

def TgMixedPrecision : Pass<"tg-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Apply a precision policy (bf16/fp16 mixed, pure bf16) to @forward";
  let description = [{
    Runs on the frontend's `@forward`, before tg-autodiff. Retypes every op by the
    autocast-like policy documented in docs/spec.md ("Precision") and inserts `tg.cast`
    where an op wants an operand in another type: matmuls and attention in the low type
    with f32 accumulation, layer norm statistics, softmax, cross-entropy's loss and the
    residual stream in f32 (mixed policies), parameters f32 (master weights) cast once per
    micro-step. `precision=bf16` retypes the parameters themselves (and marks their AdamW
    moments bf16). `fp16-mixed` also records dynamic loss scaling as `tg.loss_scale`.
    ```mlir
    %w = tg.cast %qkv_w : (tensor<64x192xf32>) -> tensor<64x192xbf16>
    %h = tg.layer_norm %x, %g, %b : (tensor<2x16x64xf32>, ...) -> (tensor<2x16x64xbf16>, ...)
    %y = tg.matmul %h, %w : (tensor<2x16x64xbf16>, tensor<64x192xbf16>) -> tensor<2x16x192xbf16>
    ```
    Errors: an unknown policy, a second application, parameters that are not f32, an op
    without a precision rule.
  }];
  let dependentDialects = ["mlir::tg::TgDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"precision", "precision", "::mlir::tg::Precision",
           "::mlir::tg::Precision::bf16_mixed",
           "fp32 | bf16-mixed | fp16-mixed | bf16 (dialect/TgEnums.td)">,
    Option<"lossScaleInit", "loss-scale-init", "double", "65536.0",
           "fp16-mixed: initial dynamic loss scale">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t", "2000",
           "fp16-mixed: clean steps before the scale doubles">,
  ];
  let statistics = [Statistic<"numCasts", "num-casts", "tg.cast ops inserted">];
}

def TgAutodiff : Pass<"tg-autodiff", "mlir::ModuleOp"> {
  let summary = "Build the training step from @forward (reverse mode + AdamW)";
  let description = [{
    From `func.func @forward(params..., tokens, targets) -> loss` builds:
    - `@micro_step`: forward, then backward in reverse op order (each op's
      GradientOpInterface builds its adjoint; gradients of values used more than once
      are summed; tied embeddings get the sum of both uses), then
      `tg.accumulate_grad` for every parameter; returns the loss. The loss gradient is
      seeded with 1/grad_accum so accumulated gradients are the mean over micro-batches.
    - `@optimizer_step`: `tg.clip_grad_norm` over all parameters, then `tg.adamw` per
      parameter (decoupled weight decay on matrices only unless decay-embeddings).
    - `@eval_step`: the forward pass alone, dropout removed (evaluation is deterministic).
    Every op gets `tg.phase` = "forward" | "backward" | "optimizer".
  }];
  let dependentDialects = ["mlir::tg::TgDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"gradAccum", "grad-accum", "int64_t", "1", "micro-batches per optimizer step">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1", "decoupled weight decay">,
    Option<"gradClip", "grad-clip", "double", "1.0", "global-norm clip (0: off)">,
    Option<"decayEmbeddings", "decay-embeddings", "bool", "false",
           "apply weight decay to embeddings too">,
  ];
}

def TgDistribute : Pass<"tg-distribute", "mlir::ModuleOp"> {
  let summary = "Data parallel (ZeRO-0..3): average (or reduce-scatter) gradients, shard state and parameters";
  let description = [{
    Runs after tg-autodiff. With `ranks` > 1, inserts one `tg.all_reduce_grads` over every
    parameter at the start of `@optimizer_step`, before `tg.clip_grad_norm`, so the
    global norm, clipping and AdamW all see the gradient averaged over the ranks:
    ```mlir
    func.func @optimizer_step(%wte: tensor<256x64xf32> {tg.param = "wte"}, ...) {
      tg.all_reduce_grads %wte, ... {ranks = 2 : i64} : tensor<256x64xf32>, ...
      %clip = tg.clip_grad_norm %wte, ...
    ```
    Records `tg.ranks = N : i64` on the module (any N >= 1; with 1 nothing else changes).
    Each rank computes the mean gradient over its own micro-batches (the loss seed is
    1/grad_accum), so the mean over ranks is the mean over all N x grad_accum
    micro-batches: N ranks with micro-batch b match one rank with micro-batch N*b.
    With `zero=1` (ZeRO-1; Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward
    Training Trillion Parameter Models", stage P_os) it also records `tg.zero = 1`:
    tg-plan-memory then gives each rank the AdamW moments of one contiguous range of the
    parameters only (owner = rank; ranges balanced by bytes, whole parameters, as PyTorch's
    ZeroRedundancyOptimizer), and the lowering runs each range's AdamW on its owner and
    broadcasts the updated values (and working copies) from it. Gradients stay whole
    (all-reduced), so the global norm and clipping are unchanged.
    With `zero=2` (stage P_os+g) the gradients are sharded too: every tensor is cut into N
    chunks of c = ceil(n / N) elements (as PyTorch FSDP's flat shards; rank r holds chunk
    r), and each `tg.accumulate_grad` of @micro_step becomes a `tg.reduce_scatter_grad`
    placed right after its gradient is computed (a parameter with several accumulations,
    e.g. tied embeddings, gets one per gradient); no `tg.all_reduce_grads` is
    inserted. The lowering then reduces the squared norm over the ranks, runs AdamW on
    this rank's chunk and all-gathers the updated values. With `zero=3` (stage
    P_os+g+p) the values are sharded as well: in @micro_step and @eval_step every use of a
    parameter (or of its working copy under mixed precision) reads a `tg.gather_param`
    inserted before the first use of each group of uses, a group being the uses of one
    phase (forward / backward) within one layer, so a layer's parameters are whole only
    while that layer runs; each group is started right after the first use of the group
    before it (prefetch: the gather of layer l+1 overlaps layer l).
    Errors: ranks < 1, zero not in 0..3, no @optimizer_step, the module already carries
    tg.ranks (applied twice), a parameter without any gradient under zero >= 2.
  }];
  let dependentDialects = ["mlir::tg::TgDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1", "data-parallel ranks">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage: 0 (replicated), 1 (AdamW moments sharded by parameter ranges), "
           "2 (+ gradients sharded), 3 (+ parameters sharded)">,
  ];
  let statistics = [Statistic<"numReduced", "num-reduced", "tg.all_reduce_grads inserted">,
                    Statistic<"numScattered", "num-scattered", "tg.reduce_scatter_grad inserted">,
                    Statistic<"numGathered", "num-gathered", "tg.gather_param inserted">];
}

def TgRematerialize : Pass<"tg-rematerialize", "mlir::ModuleOp"> {
  let summary = "Activation checkpointing: recompute forward ops of a layer before its backward";
  let description = [{
    Runs on @micro_step after tg-autodiff and CSE. Per transformer layer (ops carrying
    `tg.layer`), clones forward ops just before the first backward op that reads them and
    makes the backward read the clones (marked `tg.recompute`), so the originals die at
    their last forward use. Policies: `none`; `selective` (keep GEMM / attention outputs,
    recompute layer norms, GELU, casts, head transposes, dropout, softmax); `layer` (keep
    only the layer's input: torch.utils.checkpoint per block); `budget` (the per-layer mix
    with the fewest extra FLOPs whose arena, planned by the real planner, fits
    `budget-bytes`; each candidate is planned on a copy of the module after the passes of
    `plan-after`, the ones the pipeline runs before tg-plan-memory, so that the arena
    searched is the one planned). The layer's output (the next layer's input) is always kept.
    Records `tg.remat = {policy = #tg.checkpointing<...>, extra_flops, step_flops,
    recomputed_ops}` on the module (budget adds `mix = "N layer, N selective, N none"`).
    Errors: unknown policy (at the option), no @micro_step, no tg.layer in the IR, a budget nothing fits
    (with the smallest achievable arena), a `plan-after` that does not parse or fails.
  }];
  let dependentDialects = ["mlir::tg::TgDialect"];
  let options = [
    Option<"policy", "policy", "::mlir::tg::Checkpointing", "::mlir::tg::Checkpointing::none",
           "none | gelu | layer | layer-attn | selective | budget (dialect/TgEnums.td)">,
    Option<"budgetBytes", "budget-bytes", "int64_t", "0",
           "policy=budget: the largest planned arena allowed, bytes">,
    Option<"planAfter", "plan-after", "std::string", "\"\"",
           "policy=budget: the passes that run between this pass and tg-plan-memory, as a "
           "textual pipeline on builtin.module (e.g. {tg-fuse,tg-bias-rows}); each "
           "candidate is planned after them, on a copy of the module">,
  ];
  let statistics = [Statistic<"numRecomputed", "num-recomputed", "ops recomputed">];
}

def TgFuse : Pass<"tg-fuse", "mlir::ModuleOp"> {
  let summary = "Rewrite fusable chains of the training step into explicit fused ops";
  let description = [{
    Runs after autodiff, rematerialization and distribution, right before tg-plan-memory:
    each fusion becomes an op of the IR (docs/design-notes.md, "Fusion is IR"), which the
    planner plans and the lowering emits like any other; neither re-derives the decision.
    The rewrites, each on `tg.matmul` with a weight [K, N] shared by every row (rank-2 b,
    lhs not transposed), first match first:
    - matmul -> bias_add -> widening cast -> add with the f32 residual stream, each op
      right after the previous (GPT-2 under mixed precision) -> `tg.matmul_residual` with
      its bias (read in f32: the parameter the bias's cast read; that cast is erased when
      the bias add was its only reader);
    - matmul -> bias_add -> gelu, each right after the previous -> `tg.matmul_bias_gelu`
      (pre-activation and GELU output; cuBLASLt's GELU_AUX_BIAS epilogue);
    - matmul whose only reader is a bias_add -> `tg.matmul_bias` (the BIAS epilogue);
    - matmul whose only reader is `tg.add` with the residual stream, directly or through a
      widening `tg.cast` -> `tg.matmul_residual` without bias (C = residual, beta 1);
    - matmul whose only reader is `tg.gelu_grad` (as its dy), whose result a `tg.bias_grad`
      reads -> `tg.matmul_dgelu_bgrad` (dx and the bias gradient; cuBLASLt's DGELU
      epilogue), at the GELU gradient; its location is the chain's (GEMM, GELU gradient,
      bias gradient) fused.
    The bias must exist when the GEMM runs (a parameter, or computed before it); the fused
    op takes the GEMM's name, layer, phase and recompute marks. Then, on the adds that
    remain:
    - [widening cast ->] add -> layer_norm of the sum, each right after the previous, the
      cast read only by the add -> `tg.add_layer_norm` (the cast's input read in place),
      where the add's sum needs a buffer of its own: not where an addend dies at the add
      (the planner then writes the sum over it in place, which the fused kernel cannot).
      It takes the add's name, layer, phase and recompute marks.
    In every function.
  }];
  let dependentDialects = ["mlir::tg::TgDialect"];
  let statistics = [
    Statistic<"numResidual", "num-residual", "GEMMs fused into the residual add">,
    Statistic<"numBias", "num-bias", "GEMMs fused with their bias add">,
    Statistic<"numBiasGelu", "num-bias-gelu", "GEMMs fused with their bias add and GELU">,
    Statistic<"numAddNorm", "num-add-norm", "adds fused with the layer norm of their sum">,
    Statistic<"numDgelu", "num-dgelu", "GEMMs fused with the GELU and bias gradients after them">,
  ];
}

def TgBiasRows : Pass<"tg-bias-rows", "mlir::ModuleOp"> {
  let summary = "Carry a linear layer's bias and bias gradient inside its GEMMs (ones column)";
  let description = [{
    Runs after tg-fuse, before tg-plan-memory, on @micro_step. A linear layer whose input y
    is a layer norm's output read only by its forward GEMM (tg.matmul_bias or
    tg.matmul_bias_gelu) and its weight gradient (tg.matmul with transpose_a into the
    weight's one accumulation), and whose bias gradient is dh's column sum
    (tg.bias_grad or tg.matmul_dgelu_bgrad) computed before that weight gradient, gets
    ```mlir
    %y, %mean, %rstd = tg.layer_norm %x, %g, %b {tg.ones_column}   // y planned [.., d + 64]
    %h = tg.matmul_bias %y, %w, %bias {tg.bias_rows}               // K = d + 8
    %dw = tg.matmul %yr, %dhr {transpose_a = true, tg.bias_rows}   // M = d + 8: dW, db
    ```
    and the module `tg.bias_rows = [["layers.0.attn.qkv.weight", "layers.0.attn.qkv.bias"]]`:
    tg-plan-memory places each bias right after its weight, its slot 8 rows of n (the zero
    rows), and the lowering runs the layer norm with a ones column
    (tgrt_layer_norm_fwd_ones), the forward GEMM over y's first d columns (rows d + 8
    apart, tgrt_matmul_bias_lda / _gelu_lda), and the weight gradient over [y 1 0] into W's
    and b's slots at once ([dW; db; 0]), with no column sums of dh. Under checkpointing
    the recomputed layer norm that feeds the weight gradient gets the ones column (a
    tg.add_layer_norm one through tgrt_add_layer_norm_fwd_ones); under `selective` the
    forward's layer norm and GEMM keep their plain rows, and the pair is named by the GEMM
    on the output of the forward layer norm the clone copies. Only with
    tg.grad_accum 1, one rank, no ZeRO, d and n multiples of 8, W's slots 256-byte
    multiples, and under mixed precision persistent working copies. The tgc pipeline runs
    it when `training.bias_rows` is on (its default `auto`: for --target cuda). Errors: a
    module already marked.
  }];
  let dependentDialects = ["mlir::tg::TgDialect"];
  let statistics = [Statistic<"numPaired", "num-paired", "linear layers given bias rows">];
}

def TgPlanMemory : Pass<"tg-plan-memory", "mlir::ModuleOp"> {
  let summary = "Plan all device memory statically: persistent region, arena, workspace";
  let description = [{
    Lays out the persistent region (each parameter's value, gradient and AdamW moments,
    then the token inputs), computes the liveness interval of every transient tensor in
    each step function (views alias their source), and packs them into one arena by
    best-fit over several visit orders (passes/MemoryPlanner.h), keeping the smallest.
    Writes `tg.offsets` (arena byte offset per result) on every op, `tg.arena_bytes` on
    each function and a `tg.plan` dictionary on the module:
    ```mlir
    module attributes {tg.plan = {arena_bytes = 1048576 : i64, persistent_bytes = ...,
                                  params = [ {name = "wte", offset = 0 : i64, ...} ], ...}}
    ```
    With `drop-unread` (the tgc pipeline's setting) the module is then lowered once on a
    clone (LowerToEmitC.h traceReadResults) to learn which planned results no emitted
    call uses: gradients the lowering writes straight into their parameter's gradient
    slot (weight-gradient GEMMs, bias and norm gradients, the fused loss's dw, an
    embedding's backward) and the casts and adds on their way there. Their ops get
    `tg.unplanned` (the result numbers) and the arena is planned again without them
    (GPT-2 small: the loss's never-written f32 dw, 154 MB, sat at the backward's peak).
    A module the lowering refuses keeps the first plan (the lowering reports it later).
  }];
  let dependentDialects = ["mlir::tg::TgDialect"];
  let options = [
    Option<"workspaceBytes", "workspace-bytes", "int64_t", "0",
           "backend scratch to reserve (cuBLASLt workspace), bytes">,
    Option<"offload", "offload", "::mlir::tg::Offload", "::mlir::tg::Offload::none",
           "none | cpu: the AdamW moments go to a host region (pinned memory; host_bytes) "
           "instead of the persistent one (the runtime streams them through AdamW)">,
    Option<"gradients", "gradients", "std::string", "\"persistent\"",
           "persistent | arena | auto: where the gradient slots live. arena: in the arena, "
           "each from its first write in @micro_step to the end of @optimizer_step (needs "
           "grad_accum 1, one rank, no checkpointing budget; MemoryPlan.h "
           "gradientsCanLiveInArena); auto: arena when that holds, else persistent">,
    Option<"commBytes", "comm-bytes", "int64_t", "0",
           "device bytes per rank that the collective library (NCCL) allocates itself, "
           "reserved in the plan: comm_bytes in tg.plan, counted in the total, not "
           "allocated by tgc (tgc derives it with commBytesFor, Passes.h)">,
    Option<"attentionImpl", "attention-impl", "std::string", "\"own\"",
           "own | cudnn: the runtime's implementation of bf16 / f16 flash attention. cudnn: "
           "writes tg.attention_impl = cudnn on the module (the lowering sets "
           "tgrt_model.attention_impl) and the workspace region holds cuDNN's SDPA backward "
           "workspace (dialect/TgOpKnowledge.cpp)">,
    Option<"dropUnread", "drop-unread", "bool", "false",
           "plan again without the results no lowered call uses (tg.unplanned; see the "
           "description)">,
    Option<"lowPrecisionGrads", "low-precision-grads", "bool", "false",
           "with the gradients in the arena: a weight whose whole gradient one bf16 / f16 "
           "GEMM writes (MemoryPlan.h lowPrecisionGradients) gets a gradient slot of that "
           "type (grad_dtype in the plan's params; PyTorch autocast's gradient, half the "
           "bytes)">,
    Option<"splitMaster", "split-master", "bool", "false",
           "under bf16-mixed, a weight with a bf16 gradient slot (low-precision-grads) whose "
           "value the step reads only through its working copy and AdamW keeps its f32 "
           "value split: the value slot holds 2-byte low halves and the working copy the "
           "high halves (tgrt.h tgrt_param.split; the plan's params get `split`), 2 bytes a "
           "value fewer and tgrt_adamw_split's 26 bytes a value instead of 28">,
    Option<"splitTables", "split-tables", "bool", "false",
           "with split-master: a token-embedding table (a tied wte) whose value the step "
           "reads only through its working copy and the gather splits too, with its f32 "
           "gradient slot (tgrt_embedding_fwd_split joins the halves; Llama 3.2 1B: 525 MB "
           "less, its step 0.75% slower on an H200, docs/results.md 2026-12-03)">,
  ];
  let statistics = [
    Statistic<"numBuffers", "num-buffers", "Arena buffers planned">,
    Statistic<"numUnplanned", "num-unplanned", "Results left out of the arena (drop-unread)">,
  ];
}

def TgPrintMemoryPlan : Pass<"tg-print-memory-plan", "mlir::ModuleOp"> {
  let summary = "Print the memory plan (test only)";
  let description = [{
    Prints the report of a planned module to stdout: region sizes, per-phase peaks,
    the lower bound and every buffer as `offset = N, size = M, live = [a, b]`.
  }];
}

def TgLowerToEmitC : Pass<"tg-lower-to-emitc", "mlir::ModuleOp"> {
  let summary = "Lower a planned module to EmitC: the step as runtime calls";
  let description = [{
    Rewrites the module planned by -tg-plan-memory into the EmitC dialect, which
    `mlir::emitc::translateToCpp` prints as the C++ that `tgc compile --emit=cpp` writes
    (`mlir-translate --mlir-to-cpp` prints it too): includes, the `tgrt_param` table and
    `tgrt_model` (`emitc.global`s with the planned persistent offsets and region sizes),
    and `emitc.func @tg_micro_step / @tg_optimizer_step / @tg_eval_step(tgrt_ctx*)`, each
    a straight-line sequence of `emitc.call_opaque "tgrt_*"` (runtime/tgrt.h) on
    `(float*)(region base + planned byte offset)` pointers:
    ```mlir
    %3 = emitc.expression : !emitc.ptr<f32> { ... emitc.add %A, %c ... emitc.cast ... }
    emitc.call_opaque "tgrt_matmul"(%ctx, %3, ...) {args = [0 : index, #emitc.opaque<"\22layers.0.attn.qkv\22">, 1 : index, ...]}
    ```
    One tg op becomes one call (tg-fuse made the GEMM epilogues ops of their own:
    tg.matmul_bias -> `tgrt_matmul_bias`); the backward fusions still made here (add +
    layer norm, layer-norm backward into the residual gradient, GEMM + dGELU + bias
    gradient, gradient-slot sinks) join ops into one call where the plan allows it.
    Every call that writes a tensor is followed by `emitc.if %dbg { tgrt_check_op(ctx,
    &kCheckSites[i]) }`, %dbg = `tgrt_check_enabled(ctx)` read once per function (the
    non-finite checks of `--find-nonfinite`; tables `kCheckTensors`, `kCheckSites`).
    The spec (model name, optimizer settings, initialisation) is read from the module's
    `tg.spec` attribute. Errors name the op and its model location: no planned offset,
    a non-f32 tensor, an op without a runtime kernel, a missing step function.
  }];
  let dependentDialects = ["mlir::emitc::EmitCDialect"];
}
#endif
