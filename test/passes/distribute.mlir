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
// CPP: {{^}}  2, 0{{$}}
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

// ZCPP: {"wte", {{.*}}, TGRT_F32, TGRT_F32, 0},
// ZCPP: {"layers.0.mlp.fc.weight", {{.*}}, TGRT_F32, TGRT_F32, 1},
// ZCPP: static const tgrt_model kModel = {
// ZCPP: {{^}}  2, 1{{$}}
// ZCPP: void tg_optimizer_step(
// ZCPP: tgrt_all_reduce_mean(
// ZCPP: tgrt_adamw_owned({{v[0-9]+}}, "optimizer.wte..ln_f.bias ({{[0-9]+}} tensors)", TGRT_F32, [[P0:v[0-9]+]], {{.*}}, 0);
// ZCPP: tgrt_broadcast({{v[0-9]+}}, "optimizer.wte..ln_f.bias ({{[0-9]+}} tensors)", TGRT_F32, [[P0]], {{[0-9]+}}, 0);
// ZCPP: tgrt_adamw_owned({{.*}}, 1);
// ZCPP: tgrt_broadcast({{.*}}, 1);
// ZCPP-NOT: tgrt_adamw(

// CPP1: static const tgrt_model kModel = {
// CPP1: 16, kParams,
// CPP1: {{^}}  1, 0{{$}}
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
