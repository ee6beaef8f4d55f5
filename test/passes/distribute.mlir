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
// CPP: {{^}}  2{{$}}
// CPP-NEXT: };
// CPP: void tg_optimizer_step(
// CPP: if ({{.*}}) {
// CPP-NEXT: tgrt_check_inputs(
// CPP-NEXT: }
// All 16 gradient slots are contiguous: one call over 10912 elements plus the alignment
// padding between slots (zero on every rank).
// CPP-NEXT: float* [[G:v[0-9]+]] = (float*) ({{v[0-9]+}} + 44800);
// CPP-NEXT: tgrt_all_reduce_mean({{v[0-9]+}}, "optimizer.all_reduce.wte..layers.0.mlp.proj.weight (16 tensors)", TGRT_F32, [[G]], 11200);
// CPP-NEXT: if ({{.*}}) {
// CPP-NEXT: tgrt_check_op(
// CPP-NOT: tgrt_all_reduce_mean
// CPP: tgrt_grad_norm_sq(
// CPP-NOT: tgrt_all_reduce_mean

// CPP1: static const tgrt_model kModel = {
// CPP1: 16, kParams,
// CPP1: {{^}}  1{{$}}
// CPP1-NEXT: };
// CPP1-NOT: tgrt_all_reduce_mean

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
