// tg-distribute: one tg.all_reduce_grads over every parameter at the start of
// @optimizer_step (before the clip, so norm and clipping see the averaged gradient);
// tg.ranks on the module; @micro_step and @eval_step unchanged.
// RUN: tg-opt %s -tg-autodiff -tg-distribute=ranks=2 | FileCheck %s
// RUN: tg-opt %s -tg-autodiff -tg-distribute=ranks=1 | FileCheck %s --check-prefix=ONE
// The pipeline option runs it after autodiff; the plan keeps it; the lowering emits one
// in-place tgrt_all_reduce_mean per run of contiguous gradient slots, before the clip,
// with the guarded non-finite checks of an in-place call around it.
// RUN: tg-opt %s -tg-pipeline="ranks=4 until=step" | FileCheck %s --check-prefix=PIPE
// RUN: tg-opt %s -tg-pipeline="ranks=1 until=step" | FileCheck %s --check-prefix=PIPE1
// (tgc builds the module attributes the lowering needs: a 1-layer tiny model.)
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set training.distributed.ranks=2 --emit=cpp -o - \
// RUN:   | FileCheck %s --check-prefix=CPP
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --emit=cpp -o - | FileCheck %s --check-prefix=CPP1
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set training.grad_accum=2 --set training.distributed.ranks=2 \
// RUN:   --emit=cpp -o - | FileCheck %s --check-prefix=GA2
// ZeRO-1: tg.zero on the module; the plan gives each parameter an owner and packs each
// owner's moments from the start of the m / v blocks (the same offsets on both ranks); the
// optimizer updates each run on its owner and broadcasts the values from it.
// RUN: tg-opt %s -tg-autodiff -tg-distribute="ranks=2 zero=1" | FileCheck %s --check-prefix=ZERO
// RUN: tg-opt %s -tg-autodiff -tg-distribute="ranks=1 zero=1" | FileCheck %s --check-prefix=ZERO1
// RUN: tg-opt %s -tg-pipeline="ranks=2 zero=1" | FileCheck %s --check-prefix=ZPLAN
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set training.distributed.ranks=2 \
// RUN:   --set training.distributed.zero=1 --emit=cpp -o - | FileCheck %s --check-prefix=ZCPP

// ZeRO-2: every accumulation becomes a reduce-scatter right after its gradient; no
// all-reduce. ZeRO-3: and every use of a parameter reads a gather (one per phase / layer group).
// RUN: tg-opt %s -tg-autodiff -tg-distribute="ranks=2 zero=2" | FileCheck %s --check-prefix=Z2
// RUN: tg-opt %s -tg-autodiff -tg-distribute="ranks=2 zero=3" | FileCheck %s --check-prefix=Z3
// RUN: tg-opt %s -tg-pipeline="ranks=2 zero=3" | FileCheck %s --check-prefix=Z3PLAN
// RUN: tg-opt %s -tg-pipeline="ranks=3 zero=2" | FileCheck %s --check-prefix=Z2PLAN
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set training.distributed.ranks=2 \
// RUN:   --set training.distributed.zero=3 --emit=cpp -o - | FileCheck %s --check-prefix=Z3CPP
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --set training.distributed.ranks=2 \
// RUN:   --set training.distributed.zero=2 --emit=cpp -o - | FileCheck %s --check-prefix=Z2CPP

// CHECK: module attributes {{{.*}}tg.ranks = 2 : i64
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: tg.all_reduce_grads
// CHECK-LABEL: func.func @micro_step
// CHECK-NOT: tg.all_reduce_grads
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: (%[[WTE:[^:]+]]: tensor<16x8xf32> {tg.param = "wte"}, %[[G:[^:]+]]: tensor<8xf32> {tg.param = "ln.g"}, %[[W:[^:]+]]: tensor<8x8xf32> {tg.param = "fc.w"})
// CHECK-NEXT: tg.all_reduce_grads %[[WTE]], %[[G]], %[[W]] {ranks = 2 : i64, tg.phase = "optimizer"} : tensor<16x8xf32>, tensor<8xf32>, tensor<8x8xf32>
// CHECK-NEXT: tg.clip_grad_norm %[[WTE]], %[[G]], %[[W]]
// CHECK-NOT: tg.all_reduce_grads
// CHECK: return

// ONE: module attributes {{{.*}}tg.ranks = 1 : i64
// ONE-NOT: tg.all_reduce_grads

// PIPE: module attributes {{{.*}}tg.ranks = 4 : i64
// PIPE: func.func @optimizer_step
// PIPE-NEXT: tg.all_reduce_grads {{.*}} {ranks = 4 : i64
// PIPE-NEXT: tg.clip_grad_norm

// PIPE1-NOT: tg.ranks
// PIPE1-NOT: tg.all_reduce_grads

// CPP: static const tgrt_model kModel = {
// CPP: 16, kParams,
// CPP: {{^}}  2, 0, 0LL{{$}}
// CPP-NEXT: };
// The all-reduce overlaps the backward: one bucket per layer (its two runs of contiguous
// slots: the undecayed vectors, the decayed matrices) started right after the layer's last
// gradient write (the first layer norm's backward), then wte, wpe and ln_f's own buckets
// after their (unfused) accumulations; with grad_accum 1 every micro-step is the last.
// CPP: void tg_micro_step(
// CPP: tgrt_layer_norm_bwd_acc_slots({{v[0-9]+}}, "layers.0.ln1"
// CPP-NEXT: if ({{v[0-9]+}}) {
// CPP-NEXT: tgrt_check_op(
// CPP-NEXT: }
// CPP-NEXT: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.layers.0.ln1.weight..layers.0.mlp.proj.bias (8 tensors)", TGRT_F32, {{v[0-9]+}}, 544, 1);
// CPP-NEXT: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.layers.0.attn.qkv.weight..layers.0.mlp.proj.weight (4 tensors)", TGRT_F32, {{v[0-9]+}}, 8192, 1);
// CPP: tgrt_embedding_bwd_acc({{v[0-9]+}}, "wte"
// CPP-NOT: tgrt_accumulate({{v[0-9]+}}, "wte"
// CPP: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.wte", TGRT_F32, {{v[0-9]+}}, 2048, 1);
// CPP: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.wpe", TGRT_F32, {{v[0-9]+}}, 256, 1);
// CPP: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.ln_f.weight", TGRT_F32, {{v[0-9]+}}, 32, 1);
// CPP: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.ln_f.bias", TGRT_F32, {{v[0-9]+}}, 32, 1);
// CPP-NOT: tgrt_all_reduce_mean_start
// The optimizer waits for them before the norm; nothing is left to all-reduce there.
// CPP: void tg_optimizer_step(
// CPP-NOT: tgrt_all_reduce_mean
// CPP: tgrt_all_reduce_wait({{v[0-9]+}}, "optimizer.all_reduce");
// CPP-NOT: tgrt_all_reduce_mean
// CPP: tgrt_grad_norm_sq(
// CPP-NOT: tgrt_all_reduce_mean
// With grad_accum 2 the starts pass it (they act on the last micro-batch only).
// GA2: tgrt_all_reduce_mean_start({{v[0-9]+}}, "backward.all_reduce.layers.0.ln1.weight..layers.0.mlp.proj.bias (8 tensors)", TGRT_F32, {{v[0-9]+}}, 544, 2);

// ZERO: module attributes {{{.*}}tg.ranks = 2 : i64, tg.zero = 1 : i64
// ZERO1-NOT: tg.zero

// The three parameters' moments (128, 8 and 64 f32 values in 256-byte slots: 512 + 256 +
// 256 bytes) are cut by their midpoints: wte (rank 0), ln.g and fc.w (rank 1); each rank's
// block holds the larger share, 512 bytes, so v starts 512 bytes after m, and ln.g's moments
// take wte's offsets (on another rank).
// ZPLAN: tg.plan = {
// ZPLAN-SAME: {dtype = "f32", grad_offset = {{[0-9]+}} : i64, m_offset = [[#M:]] : i64, name = "wte", numel = 128 : i64, offset = 0 : i64, owner = 0 : i64, shape = array<i64: 16, 8>, state_dtype = "f32",
// ZPLAN-SAME: v_offset = [[#M+512]] : i64}
// ZPLAN-SAME: {dtype = "f32", grad_offset = {{[0-9]+}} : i64, m_offset = [[#M]] : i64, name = "ln.g", numel = 8 : i64, offset = {{[0-9]+}} : i64, owner = 1 : i64, shape = array<i64: 8>, state_dtype = "f32", v_offset = [[#M+512]] : i64}
// ZPLAN-SAME: name = "fc.w", numel = 64 : i64, offset = {{[0-9]+}} : i64, owner = 1 : i64
// ZPLAN-SAME: zero = 1 : i64

// ZCPP: {"wte", {{.*}}, TGRT_F32, TGRT_F32, 0, 0, TGRT_F32, -1, 0},
// ZCPP: {"layers.0.mlp.fc.weight", {{.*}}, TGRT_F32, TGRT_F32, 1, 0, TGRT_F32, -1, 0},
// ZCPP: static const tgrt_model kModel = {
// ZCPP: {{^}}  2, 1, 0LL{{$}}
// ZCPP: void tg_optimizer_step(
// ZCPP: tgrt_all_reduce_wait(
// ZCPP: tgrt_adamw_owned({{v[0-9]+}}, "optimizer.wte..ln_f.bias ({{[0-9]+}} tensors)", TGRT_F32, [[P0:v[0-9]+]], {{.*}}, 0);
// ZCPP: tgrt_broadcast({{v[0-9]+}}, "optimizer.wte..ln_f.bias ({{[0-9]+}} tensors)", TGRT_F32, [[P0]], {{[0-9]+}}, 0);
// ZCPP: tgrt_adamw_owned({{.*}}, 1);
// ZCPP: tgrt_broadcast({{.*}}, 1);
// ZCPP-NOT: tgrt_adamw(

// CPP1: static const tgrt_model kModel = {
// CPP1: 16, kParams,
// One rank: ranks 1, ZeRO 0, no host region, and (grad_accum 1) the gradients in the arena.
// CPP1: {{^}}  1, 0, 0LL,{{$}}
// CPP1-NEXT: {{^}}  1{{$}}
// CPP1-NEXT: };
// CPP1-NOT: tgrt_all_reduce_mean

// Z2: module attributes {{{.*}}tg.ranks = 2 : i64, tg.zero = 2 : i64
// Z2-NOT: tg.gather_param
// Z2-LABEL: func.func @micro_step
// Z2-NOT: tg.accumulate_grad
// Z2: %[[DW:[0-9]+]] = tg.matmul {{.*}}transpose_a = true} : (tensor<8x8xf32>
// Z2-NEXT: tg.reduce_scatter_grad %arg2, %[[DW]] {ranks = 2 : i64, tg.phase = "backward"} : tensor<8x8xf32>
// Z2: tg.bias_grad
// Z2-NEXT: tg.reduce_scatter_grad %arg1
// Z2: tg.reduce_scatter_grad %arg0
// Z2-NOT: tg.accumulate_grad
// Z2-LABEL: func.func @optimizer_step
// Z2-NOT: tg.all_reduce_grads
// Z2: tg.clip_grad_norm

// Z3: module attributes {{{.*}}tg.zero = 3 : i64
// Z3-LABEL: func.func @eval_step
// Z3-NEXT: %[[E:[0-9]+]] = tg.gather_param %arg0 {ranks = 2 : i64, tg.phase = "forward"} : tensor<16x8xf32> -> tensor<16x8xf32>
// Z3-NEXT: tg.embedding %[[E]], %arg3
// Z3-LABEL: func.func @micro_step
// Z3-NEXT: %[[F:[0-9]+]] = tg.gather_param %arg0 {ranks = 2 : i64, tg.phase = "forward"}
// Z3-NEXT: tg.embedding %[[F]], %arg3
// Z3-NEXT: %[[G:[0-9]+]] = tg.gather_param %arg1
// Z3-NEXT: tg.bias_add {{.*}}, %[[G]]
// The backward gathers wte again (the forward's copy is released after the forward), and
// each gather is prefetched: placed right after the first use of the gather before it.
// Z3-NEXT: %[[W:[0-9]+]] = tg.gather_param %arg2 {ranks = 2 : i64, tg.phase = "forward"}
// Z3-NEXT: tg.matmul {{.*}}, %[[W]] {tg.phase = "forward"}
// Z3-NEXT: %[[B:[0-9]+]] = tg.gather_param %arg0 {ranks = 2 : i64, tg.phase = "backward"}
// Z3-NEXT: tg.matmul {{.*}}, %[[F]] {tg.phase = "forward", transpose_b = true}
// Z3: tg.cross_entropy_grad
// Z3-NEXT: tg.matmul {{.*}}, %[[B]] {tg.phase = "backward"}
// Z3-NEXT: tg.gather_param %arg2 {ranks = 2 : i64, tg.phase = "backward"}
// Z3: tg.reduce_scatter_grad %arg2
// Z3-LABEL: func.func @optimizer_step
// Z3-NOT: tg.gather_param
// Z3-NOT: tg.all_reduce_grads

// Every slot of every parameter is one chunk of ceil(numel / 2): wte 64, ln.g 4, fc.w 32
// elements, in 256-byte slots; no owner.
// Z3PLAN: grad_offset = 768 : i64, m_offset = 1536 : i64, name = "wte", numel = 128 : i64, offset = 0 : i64, shape = array<i64: 16, 8>, shard = 64 : i64, state_dtype = "f32", v_offset = 2304 : i64}
// Z3PLAN-SAME: name = "ln.g", numel = 8 : i64, offset = 256 : i64, shape = array<i64: 8>, shard = 4 : i64
// Z3PLAN-SAME: name = "fc.w", numel = 64 : i64, offset = 512 : i64, shape = array<i64: 8, 8>, shard = 32 : i64
// Z3PLAN-SAME: zero = 3 : i64
// ZeRO-2 on 3 ranks: whole values (512 + 256 + 256 bytes), chunks of 43, 3, 22 elements.
// Z2PLAN: grad_offset = 1024 : i64, m_offset = 1792 : i64, name = "wte", numel = 128 : i64, offset = 0 : i64, shape = array<i64: 16, 8>, shard = 43 : i64
// Z2PLAN-SAME: name = "ln.g", numel = 8 : i64, offset = 512 : i64, shape = array<i64: 8>, shard = 3 : i64
// Z2PLAN-SAME: name = "fc.w", numel = 64 : i64, offset = 768 : i64, shape = array<i64: 8, 8>, shard = 22 : i64
// Z2PLAN-SAME: zero = 2 : i64

// The parameter table carries the chunk (last field); the micro-step gathers before use and
// waits, reduce-scatters each gradient after waiting for the previous one, and waits for the
// last before returning; the optimizer sums the squared norm over the ranks and runs AdamW
// over the contiguous chunks like one rank.
// Z3CPP: {"wte", 2, {64, 32, 1, 1}, 2048, {{.*}}, 1024, TGRT_F32, -1, 0},
// Z3CPP-LABEL: void tg_micro_step(
// Z3CPP: tgrt_all_gather_start({{v[0-9]+}}, "wte.gather", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, 2048, 1024);
// Z3CPP-NEXT: tgrt_all_reduce_wait(
// Z3CPP: tgrt_reduce_scatter_mean_start({{v[0-9]+}}, "wte", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, 2048, 1024);
// Z3CPP: tgrt_embedding_bwd(
// Z3CPP: tgrt_all_reduce_wait({{v[0-9]+}}, "wte");
// Z3CPP-NEXT: tgrt_reduce_scatter_mean_start({{v[0-9]+}}, "wte", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, 2048, 1024);
// Z3CPP-NEXT: tgrt_report_loss(
// Z3CPP-NEXT: tgrt_all_reduce_wait(
// Z3CPP-NEXT: return;
// Z3CPP-LABEL: void tg_optimizer_step(
// Z3CPP-NOT: tgrt_all_reduce_mean
// Z3CPP: tgrt_grad_norm_sq(
// Z3CPP: tgrt_all_reduce_sum_f32({{v[0-9]+}}, "optimizer.clip", {{v[0-9]+}}, 1);
// Z3CPP: tgrt_clip_scale(
// Z3CPP-NOT: _chunk(
// Z3CPP: tgrt_adamw(
// Z3CPP-LABEL: void tg_eval_step(
// Z3CPP: tgrt_all_gather_start(

// ZeRO-2: AdamW over this rank's chunk of each whole value, then the in-place all-gather.
// Z2CPP-NOT: tgrt_all_gather_start
// Z2CPP-LABEL: void tg_optimizer_step(
// Z2CPP: tgrt_adamw_chunk({{v[0-9]+}}, "optimizer.wte", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, 2048, 1024,
// Z2CPP: tgrt_zero({{v[0-9]+}}, "optimizer.wte", {{v[0-9]+}}, 4096);
// Z2CPP: tgrt_all_gather_start({{v[0-9]+}}, "optimizer.wte", TGRT_F32, nullptr, {{v[0-9]+}}, 2048, 1024);
// Z2CPP: tgrt_all_reduce_wait({{v[0-9]+}}, "optimizer.all_gather");
// Z2CPP-LABEL: void tg_eval_step(
// Z2CPP-NOT: tgrt_all_gather_start

func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %g: tensor<8xf32> {tg.param = "ln.g"},
                   %w: tensor<8x8xf32> {tg.param = "fc.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %y = tg.bias_add %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %h = tg.matmul %y, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %logits = tg.matmul %h, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
