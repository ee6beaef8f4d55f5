// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="gradients=arena" -tg-print-memory-plan -o /dev/null | FileCheck %s
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="gradients=arena" | FileCheck %s --check-prefix=IR
// `auto` needs the frontend's tg.grad_accum = 1 on the module: without it the gradients
// stay persistent (the layout of plan-memory.mlir).
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="gradients=auto" -tg-print-memory-plan -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=AUTO
// The lowering zeroes each slot in the arena right before its first write, AdamW no longer
// zeroes them, and the model table says where they are.
// tgc's default (training.gradients auto) on a 1-layer model with grad_accum 1:
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --emit=cpp -o - | FileCheck %s --check-prefix=EMIT
// The spec refuses arena where the slots carry gradients across micro-steps:
// d_model 64: the layer norms' f32 [64] slots are 256 bytes, whole; untied embeddings: the
// embedding backward is wte's only write (see LNW below).
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=64 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set model.tie_embeddings=false --emit=cpp -o - \
// RUN:   | FileCheck %s --check-prefix=LNW
// RUN: not tgc compile %tg_src/examples/tiny.json --set training.grad_accum=2 \
// RUN:   --set training.gradients=arena --emit=planned -o - 2>&1 | FileCheck %s --check-prefix=SPEC
// SPEC: training.gradients: "arena" needs one micro-step per optimizer step and one rank (grad_accum is 2, distributed.ranks 1)
// With two micro-steps the slots carry gradients across them (persistent): every weight
// and bias gradient is added into its slot, which the optimizer step zeroes.
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set training.grad_accum=2 --emit=cpp -o - \
// RUN:   | FileCheck %s --check-prefix=ACC2
// ACC2-LABEL: void tg_micro_step(
// ACC2-NOT: tgrt_matmul_wgrad
// ACC2: tgrt_bias_grad_acc({{v[0-9]+}}, "layers.0.mlp.proj.bias",
// ACC2: tgrt_matmul_acc({{v[0-9]+}}, "layers.0.mlp.proj",
// ACC2-NOT: tgrt_matmul_wgrad
// ACC2-LABEL: void tg_optimizer_step(

// The module of plan-memory.mlir (embedding -> gelu -> head GEMM -> cross entropy, V = 16,
// D = 8, B x T = 2 x 4) with its gradients in the arena (tg-plan-memory gradients=arena).
// Persistent: values 2 x 512 + m, v 4 x 512 + inputs 512 = 3584 (4608 less the 1024 bytes
// of gradient slots).
// CHECK:      memory plan (bytes), precision fp32
// CHECK-NEXT:   persistent 3584
// CHECK-NEXT:     parameters f32 1024
// CHECK-NEXT:     AdamW m, v f32 2048
// CHECK-NEXT:     inputs (tokens, targets) i32 512
// The persistent plan's peak is at op 10 (the dw GEMM): 1796 bytes; head.w's gradient slot
// (512 B) is written there too, wte's only at op 13 (the embedding gradient), after the
// logits and dlogits died: 1796 + 512 = 2308, and the arena packs exactly into it.
// CHECK-NEXT:   arena 2308
// CHECK-NEXT:     (gradients in the arena, 1024 bytes: each live from its first write in the backward to the optimizer step)
// CHECK-NEXT:   workspace 0
// CHECK-NEXT:   total 5892
// CHECK-NEXT: peak live arena bytes per phase
// CHECK-NEXT:   forward 1028
// CHECK-NEXT:   backward 2308
// The optimizer step: both slots (1024) and clip_grad_norm's tensor<2xf32>.
// CHECK-NEXT:   optimizer 1032
// CHECK-NEXT:   eval (forward only) 768
// CHECK-NEXT:   lower bound (max live) 2308
// CHECK-NEXT:   arena / lower bound = 1.0000 (heuristic: {{.*}})
// The slots keep one contiguous layout from arena offset 0 (wte, then head.w) and are live
// from their first write to the end of @micro_step (op 16), and through @optimizer_step.
// CHECK-DAG:  micro_step wte.gradient: offset = 0, size = 512, live = [13, 16], backward
// CHECK-DAG:  micro_step head.w.gradient: offset = 512, size = 512, live = [10, 16], backward
// CHECK-DAG:  optimizer_step wte.gradient: offset = 0, size = 512, live = [0, 3], optimizer
// CHECK-DAG:  optimizer_step head.w.gradient: offset = 512, size = 512, live = [0, 3], optimizer
// No other buffer of the two functions meets a slot in time and memory: the clip scalar
// sits above the slots.
// CHECK-DAG:  optimizer_step optimizer.clip: offset = 1024, size = 8, live = [0, 2], optimizer

// IR: module attributes {tg.plan = {arena_bytes = 2308 : i64, gradients = "arena"
// IR-SAME: grad_offset = 0 : i64, m_offset = 1024 : i64, name = "wte"
// IR-SAME: grad_offset = 512 : i64, m_offset = 1536 : i64, name = "head.w"
// IR-SAME: persistent_bytes = 3584 : i64
// Both functions of the shared timeline get the one arena size.
// IR-LABEL: func.func @micro_step
// IR-SAME: attributes {tg.arena_bytes = 2308 : i64}
// IR-LABEL: func.func @optimizer_step
// IR-SAME: attributes {tg.arena_bytes = 2308 : i64}

// AUTO: persistent 4608
// AUTO-NEXT: parameters f32 1024
// AUTO-NEXT: gradients f32 1024

// Each slot is zeroed right before its first writer unless that writer writes it whole:
// the fused output layer and loss is wte's first writer (the embedding's backward adds
// later) and writes it (tgrt_linear_cross_entropy_store: its first chunk's dW GEMM does not
// read the slot), so wte is not zeroed; none in the optimizer step, and the model table's
// last field (grads_in_arena) is 1.
// EMIT: static const tgrt_model kModel = {
// EMIT: {{^}}  1, 0, 0LL,{{$}}
// EMIT-NEXT: {{^}}  1{{$}}
// EMIT-LABEL: void tg_micro_step(
// EMIT-NOT: zero_grad.wte
// EMIT: tgrt_linear_cross_entropy_store({{.*}}, TGRT_F32, [[WG:v[0-9]+]], {{v[0-9]+}}, 16, 32, 64, 16, -1);
// EMIT-NOT: zero_grad.wte
// A weight whose slot has one write in the step (its dW GEMM) is written by that GEMM
// (tgrt_matmul_wgrad), not zeroed and added to; the layer's bias gradient is the column
// sum of the GEMM's B (dy), written by the same call; no bias-gradient call is left. A
// slot the call does not cover whole is still zeroed first and added into: here the f32
// [32] biases and layer-norm parameters (128 bytes in a 256-byte slot whose padding the
// optimizer reads as zeros); at d_model 64 (LNW) the layer norm's backward writes its
// dgamma and dbeta slots, not zeroed.
// EMIT-NOT: zero_grad.layers.0.mlp.{{proj|fc}}.weight
// EMIT: tgrt_matmul_wgrad({{v[0-9]+}}, "layers.0.mlp.proj", TGRT_F32, {{v[0-9]+}}, [[DY:v[0-9]+]], TGRT_F32, {{v[0-9]+}}, 64, 32, 16, 1, 0, 1.000000000e+00f, [[PB:v[0-9]+]]);
// EMIT-NOT: zero_grad.layers.0.mlp.{{proj|fc}}.weight
// EMIT: tgrt_matmul_dgelu_bgrad({{v[0-9]+}}, "layers.0.mlp.proj", TGRT_F32, [[DY]], {{v[0-9]+}}, {{v[0-9]+}}, [[DPRE:v[0-9]+]], NULL,
// EMIT-NOT: zero_grad.layers.0.mlp.{{proj|fc}}.weight
// EMIT: tgrt_matmul_wgrad({{v[0-9]+}}, "layers.0.mlp.fc", TGRT_F32, {{v[0-9]+}}, [[DPRE]], TGRT_F32, {{v[0-9]+}}, 32, 64, 16, 1, 0, 1.000000000e+00f, {{v[0-9]+}});
// The attention projection's bias gradient is the column sum of the residual stream's
// gradient that ln2's backward updates: the same call sums it into the bias slot
// (tgrt_layer_norm_bwd_acc_bgrad; the [32] f32 slot is not covered whole, so zeroed first,
// at the layer norm: its first writer), and the projection's dW GEMM writes no bias (NULL).
// EMIT: tgrt_zero({{v[0-9]+}}, "zero_grad.layers.0.attn.proj.bias", [[AB:v[0-9]+]], 256);
// EMIT: tgrt_zero({{v[0-9]+}}, "zero_grad.layers.0.ln2.weight",
// EMIT-NOT: tgrt_bias_grad
// EMIT: tgrt_layer_norm_bwd_acc_bgrad({{v[0-9]+}}, "layers.0.ln2", {{.*}}, TGRT_F32, NULL, {{v[0-9]+}}, {{v[0-9]+}}, TGRT_F32, [[AB]], 16, 32);
// EMIT: tgrt_matmul_wgrad({{v[0-9]+}}, "layers.0.attn.proj", {{.*}}, 1.000000000e+00f, NULL);
// EMIT-NOT: tgrt_bias_grad
// EMIT: tgrt_matmul_wgrad({{v[0-9]+}}, "layers.0.attn.qkv",
// EMIT-NOT: tgrt_bias_grad
// The embedding's gradient is added into wte's slot after the loss's (tied), rows of the
// batch's tokens only: no table-sized buffer, no accumulate.
// EMIT: tgrt_embedding_bwd_acc({{v[0-9]+}}, "wte", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, [[WG]], 16, 32, 64);
// EMIT-NOT: tgrt_accumulate({{v[0-9]+}}, "wte"
// EMIT-LABEL: void tg_optimizer_step(
// EMIT-NOT: tgrt_zero({{.*}}"optimizer.wte
// EMIT: tgrt_adamw(
// EMIT-NOT: tgrt_zero({{.*}}"optimizer.
// EMIT-LABEL: void tg_eval_step(
// LNW-LABEL: void tg_micro_step(
// LNW-NOT: zero_grad.{{layers.0.ln|wte}}
// LNW: tgrt_layer_norm_bwd_acc_bgrad({{v[0-9]+}}, "layers.0.ln2",
// LNW-NOT: zero_grad.{{layers.0.ln|wte}}
// LNW: tgrt_layer_norm_bwd_acc({{v[0-9]+}}, "layers.0.ln1",
// LNW-NOT: zero_grad.wte
// LNW: tgrt_embedding_bwd({{v[0-9]+}}, "wte", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, 16, 64, 64);
// LNW-NOT: tgrt_accumulate({{v[0-9]+}}, "{{layers.0.ln|wte}}
// LNW-LABEL: void tg_optimizer_step(
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %w: tensor<8x16xf32> {tg.param = "head.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32> loc("embed")
  %y = tg.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("gelu")
  %y2 = tg.reshape %y : (tensor<2x4x8xf32>) -> tensor<8x8xf32> loc("flat")
  %l2 = tg.matmul %y2, %w : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> loc("head")
  %l = tg.reshape %l2 : (tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("unflat")
  %loss = tg.cross_entropy %l, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
