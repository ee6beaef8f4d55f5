// RUN: tg-opt %s -tg-mixed-precision="precision=fp16-mixed" -tg-autodiff | FileCheck %s
// RUN: tg-opt %s -tg-mixed-precision="precision=bf16-mixed" -tg-autodiff="grad-accum=4" \
// RUN:   | FileCheck %s --check-prefix=BF16MIX
// RUN: tg-opt %s -tg-mixed-precision="precision=bf16" -tg-autodiff \
// RUN:   | FileCheck %s --check-prefix=PURE
// tg-autodiff after tg-mixed-precision: a tg.cast's gradient is the cast back, so every
// f32 master weight receives an f32 gradient (from the f16/bf16 matmul gradients) at
// tg.accumulate_grad; fp16-mixed seeds the backward with the loss-scaled fill.

// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: tg.fill
// CHECK: return

// CHECK-LABEL: func.func @micro_step
// CHECK-SAME: (%[[WTE:[^:]+]]: tensor<16x8xf32> {tg.moment_type = f32, tg.param = "wte"}, %[[G:[^:]+]]: tensor<8xf32> {tg.moment_type = f32, tg.param = "ln.g"}, %[[B:[^:]+]]: tensor<8xf32> {tg.moment_type = f32, tg.param = "ln.b"}, %[[W:[^:]+]]: tensor<8x24xf32> {tg.moment_type = f32, tg.param = "fc.w"}, %[[BIAS:[^:]+]]: tensor<24xf32> {tg.moment_type = f32, tg.param = "fc.b"}, %[[W2:[^:]+]]: tensor<24x8xf32> {tg.moment_type = f32, tg.param = "proj.w"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {tg.input = "tokens"}, %[[TGT:[^:]+]]: tensor<2x4xi32> {tg.input = "targets"})
// CHECK: %[[X:.*]] = tg.embedding %[[WTE]], %[[TOK]] {tg.phase = "forward"}
// CHECK: %[[Y:[^ ,]+]], %[[MEAN:[^ ,]+]], %[[RSTD:[^ ,]+]] = tg.layer_norm %[[X]], %[[G]], %[[B]] {tg.phase = "forward"} : {{.*}} -> (tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: %[[WC:.*]] = tg.cast %[[W]] {tg.phase = "forward"} : (tensor<8x24xf32>) -> tensor<8x24xf16>
// CHECK: %[[BC:.*]] = tg.cast %[[BIAS]] {tg.phase = "forward"} : (tensor<24xf32>) -> tensor<24xf16>
// CHECK: %[[W2C:.*]] = tg.cast %[[W2]] {tg.phase = "forward"} : (tensor<24x8xf32>) -> tensor<24x8xf16>
// CHECK: %[[WTEC:.*]] = tg.cast %[[WTE]] {tg.phase = "forward"} : (tensor<16x8xf32>) -> tensor<16x8xf16>
// CHECK: %[[LOGITS:.*]] = tg.matmul %{{.*}}, %[[WTEC]] {tg.phase = "forward", transpose_b = true} : (tensor<2x4x8xf16>, tensor<16x8xf16>) -> tensor<2x4x16xf16>
// CHECK: %[[LOSS:.*]] = tg.cross_entropy %[[LOGITS]], %[[TGT]] {tg.phase = "forward"} : (tensor<2x4x16xf16>, tensor<2x4xi32>) -> tensor<f32>
// The seed is 1/grad_accum times the runtime's loss scale.
// CHECK: %[[SEED:.*]] = tg.fill {loss_scaled, tg.phase = "backward", value = 1.000000e+00 : f32} : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = tg.cross_entropy_grad %[[LOGITS]], %[[TGT]], %[[SEED]] {tg.phase = "backward"} : (tensor<2x4x16xf16>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf16>
// The lm_head's gradient of the f16 copy of wte, cast back to f32.
// CHECK: %[[DWTE16:.*]] = tg.matmul {{.*}} {tg.phase = "backward", transpose_a = true} : (tensor<8x16xf16>, tensor<8x8xf16>) -> tensor<16x8xf16>
// CHECK: %[[DWTE1:.*]] = tg.cast %[[DWTE16]] {tg.phase = "backward"} : (tensor<16x8xf16>) -> tensor<16x8xf32>
// CHECK-DAG: %[[DW2_16:.*]] = tg.matmul {{.*}} -> tensor<24x8xf16>
// CHECK-DAG: %[[DW2:.*]] = tg.cast %[[DW2_16]] {tg.phase = "backward"} : (tensor<24x8xf16>) -> tensor<24x8xf32>
// CHECK-DAG: %[[DBIAS16:.*]] = tg.bias_grad {{.*}} : (tensor<2x4x24xf16>) -> tensor<24xf16>
// CHECK-DAG: %[[DBIAS:.*]] = tg.cast %[[DBIAS16]] {tg.phase = "backward"} : (tensor<24xf16>) -> tensor<24xf32>
// CHECK-DAG: %[[DW16:.*]] = tg.matmul {{.*}} -> tensor<8x24xf16>
// CHECK-DAG: %[[DW:.*]] = tg.cast %[[DW16]] {tg.phase = "backward"} : (tensor<8x24xf16>) -> tensor<8x24xf32>
// The layer norm's gradient reads the f16 dy and the f32 x: dx, dgamma, dbeta are f32.
// CHECK: %[[DX:[^ ,]+]], %[[DG:[^ ,]+]], %[[DB:[^ ,]+]] = tg.layer_norm_grad %{{.*}}, %[[X]], %[[G]], %[[MEAN]], %[[RSTD]] {tg.phase = "backward"} : (tensor<2x4x8xf16>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: %[[DXSUM:.*]] = tg.add %{{.*}}, %[[DX]] {tg.phase = "backward"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DWTE2:.*]] = tg.embedding_grad %[[TOK]], %[[DXSUM]] {tg.phase = "backward"} : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
// The tied table: both gradients f32, summed.
// CHECK: %[[DWTE:.*]] = tg.add %[[DWTE1]], %[[DWTE2]] {tg.phase = "backward"} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
// CHECK-DAG: tg.accumulate_grad %[[WTE]], %[[DWTE]] {tg.phase = "backward"} : tensor<16x8xf32>
// CHECK-DAG: tg.accumulate_grad %[[G]], %[[DG]] {tg.phase = "backward"} : tensor<8xf32>
// CHECK-DAG: tg.accumulate_grad %[[B]], %[[DB]] {tg.phase = "backward"} : tensor<8xf32>
// CHECK-DAG: tg.accumulate_grad %[[W]], %[[DW]] {tg.phase = "backward"} : tensor<8x24xf32>
// CHECK-DAG: tg.accumulate_grad %[[BIAS]], %[[DBIAS]] {tg.phase = "backward"} : tensor<24xf32>
// CHECK-DAG: tg.accumulate_grad %[[W2]], %[[DW2]] {tg.phase = "backward"} : tensor<24x8xf32>
// CHECK: return {{.*}}%[[LOSS]] : tensor<f32>

// The optimizer sees f32 parameters with f32 moments.
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: tensor<16x8xf32> {tg.moment_type = f32, tg.param = "wte"}
// CHECK: tg.adamw {{.*}} : tensor<8x24xf32>, tensor<2xf32>

// bf16-mixed: no loss scaling, the seed is the plain 1/grad_accum.
// BF16MIX-LABEL: func.func @micro_step
// BF16MIX: tg.fill {tg.phase = "backward", value = 2.500000e-01 : f32} : tensor<f32>
// BF16MIX: tg.cast {{.*}} : (tensor<8x24xbf16>) -> tensor<8x24xf32>
// BF16MIX: tg.accumulate_grad {{.*}} : tensor<8x24xf32>

// Pure bf16: the parameters are bf16 and so are their gradients; no cast anywhere: not in
// @eval_step, nor in @micro_step before, between or after its accumulates, nor in
// @optimizer_step (each PURE-NOT covers the text up to the next match or label).
// PURE-LABEL: func.func @eval_step
// PURE-SAME: tensor<16x8xbf16>
// PURE-NOT: tg.cast
// PURE: tg.cross_entropy
// PURE-NOT: tg.cast
// PURE-LABEL: func.func @micro_step
// PURE-NOT: tg.cast
// PURE: tg.fill {tg.phase = "backward", value = 1.000000e+00 : f32} : tensor<f32>
// PURE-NOT: tg.cast
// PURE: tg.accumulate_grad {{.*}} : tensor<16x8xbf16>
// PURE-NOT: tg.cast
// PURE: tg.accumulate_grad {{.*}} : tensor<8x24xbf16>
// PURE-NOT: tg.cast
// PURE: tg.accumulate_grad {{.*}} : tensor<24xbf16>
// PURE-NOT: tg.cast
// PURE-LABEL: func.func @optimizer_step
// PURE-SAME: tensor<16x8xbf16> {tg.moment_type = bf16, tg.param = "wte"}
// PURE-NOT: tg.cast
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %g: tensor<8xf32> {tg.param = "ln.g"},
                   %b: tensor<8xf32> {tg.param = "ln.b"},
                   %w: tensor<8x24xf32> {tg.param = "fc.w"}, %bias: tensor<24xf32> {tg.param = "fc.b"},
                   %w2: tensor<24x8xf32> {tg.param = "proj.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %y, %mean, %rstd = tg.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %h = tg.matmul %y, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %hb = tg.bias_add %h, %bias : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %a = tg.gelu %hb : (tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  %p = tg.matmul %a, %w2 : (tensor<2x4x24xf32>, tensor<24x8xf32>) -> tensor<2x4x8xf32>
  %r = tg.add %x, %p : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = tg.matmul %r, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
