// RUN: tg-opt %s -tg-autodiff="grad-accum=4" -split-input-file | FileCheck %s
// RUN: tg-opt %s -tg-autodiff="decay-embeddings=true weight-decay=0.05 grad-clip=0.5" \
// RUN:   -split-input-file | FileCheck %s --check-prefix=DECAY

// Embedding -> layer norm -> matmul -> logits through the tied embedding table ->
// cross entropy. wte is used twice (lookup and logits), so its gradient is a sum.

// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: tg.param = "wte"
// CHECK: tg.embedding {{.*}}tg.phase = "forward"
// CHECK: tg.cross_entropy
// CHECK-NOT: tg.fill
// CHECK-NOT: _grad
// CHECK: return

// CHECK-LABEL: func.func @micro_step
// CHECK-SAME: (%[[WTE:[^:]+]]: tensor<16x8xf32> {tg.param = "wte"}, %[[G:[^:]+]]: tensor<8xf32> {tg.param = "ln.g"}, %[[B:[^:]+]]: tensor<8xf32> {tg.param = "ln.b"}, %[[W:[^:]+]]: tensor<8x8xf32> {tg.param = "fc.w"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {tg.input = "tokens"}, %[[TGT:[^:]+]]: tensor<2x4xi32> {tg.input = "targets"})
// Forward, unchanged.
// CHECK: %[[X:.*]] = tg.embedding %[[WTE]], %[[TOK]] {tg.phase = "forward"}
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = tg.layer_norm %[[X]], %[[G]], %[[B]] {tg.phase = "forward"}
// CHECK: %[[H:.*]] = tg.matmul %[[Y]], %[[W]] {tg.phase = "forward"}
// CHECK: %[[LOGITS:.*]] = tg.matmul %[[H]], %[[WTE]] {tg.phase = "forward", transpose_b = true}
// CHECK: %[[LOSS:.*]] = tg.cross_entropy %[[LOGITS]], %[[TGT]] {tg.phase = "forward"}
// Seed 1/grad_accum = 1/4.
// CHECK: %[[SEED:.*]] = tg.fill {tg.phase = "backward", value = 2.500000e-01 : f32} : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = tg.cross_entropy_grad %[[LOGITS]], %[[TGT]], %[[SEED]] {tg.phase = "backward"}
// logits = h . wte^T:  dh = dlogits . wte,  dwte = dlogits^T . h (flattened to 2-D).
// CHECK-DAG: %[[DH:.*]] = tg.matmul %[[DLOGITS]], %[[WTE]] {tg.phase = "backward"} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK-DAG: %[[H2:.*]] = tg.reshape %[[H]] {{.*}} -> tensor<8x8xf32>
// CHECK-DAG: %[[DL2:.*]] = tg.reshape %[[DLOGITS]] {{.*}} -> tensor<8x16xf32>
// CHECK: %[[DWTE1:.*]] = tg.matmul %[[DL2]], %[[H2]] {tg.phase = "backward", transpose_a = true} : (tensor<8x16xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
// h = y . w:  dy = dh . w^T,  dw = y^T . dh.
// CHECK-DAG: %[[DY:.*]] = tg.matmul %[[DH]], %[[W]] {tg.phase = "backward", transpose_b = true}
// CHECK-DAG: %[[Y2:.*]] = tg.reshape %[[Y]]
// CHECK-DAG: %[[DH2:.*]] = tg.reshape %[[DH]]
// CHECK: %[[DW:.*]] = tg.matmul %[[Y2]], %[[DH2]] {tg.phase = "backward", transpose_a = true} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = tg.layer_norm_grad %[[DY]], %[[X]], %[[G]], %[[MEAN]], %[[RSTD]] {tg.phase = "backward"}
// CHECK: %[[DWTE2:.*]] = tg.embedding_grad %[[TOK]], %[[DX]] {tg.phase = "backward"}
// Tied weight: the two gradients of wte are summed.
// CHECK: %[[DWTE:.*]] = tg.add %[[DWTE1]], %[[DWTE2]] {tg.phase = "backward"}
// CHECK-DAG: tg.accumulate_grad %[[WTE]], %[[DWTE]] {tg.phase = "backward"} : tensor<16x8xf32>
// CHECK-DAG: tg.accumulate_grad %[[G]], %[[DG]] {tg.phase = "backward"} : tensor<8xf32>
// CHECK-DAG: tg.accumulate_grad %[[B]], %[[DB]] {tg.phase = "backward"} : tensor<8xf32>
// CHECK-DAG: tg.accumulate_grad %[[W]], %[[DW]] {tg.phase = "backward"} : tensor<8x8xf32>
// CHECK: return {{.*}}%[[LOSS]] : tensor<f32>

// Decay on fc.w only: rank-1 params and the embedding table get weight_decay 0.
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: (%[[OWTE:[^:]+]]: tensor<16x8xf32> {tg.param = "wte"}, %[[OG:[^:]+]]: tensor<8xf32> {tg.param = "ln.g"}, %[[OB:[^:]+]]: tensor<8xf32> {tg.param = "ln.b"}, %[[OW:[^:]+]]: tensor<8x8xf32> {tg.param = "fc.w"})
// CHECK: %[[CLIP:.*]] = tg.clip_grad_norm %[[OWTE]], %[[OG]], %[[OB]], %[[OW]] {max_norm = 1.000000e+00 : f32, tg.phase = "optimizer"}
// CHECK-DAG: tg.adamw %[[OWTE]], %[[CLIP]] {{{.*}}weight_decay = 0.000000e+00 : f32}
// CHECK-DAG: tg.adamw %[[OG]], %[[CLIP]] {{{.*}}weight_decay = 0.000000e+00 : f32}
// CHECK-DAG: tg.adamw %[[OB]], %[[CLIP]] {{{.*}}weight_decay = 0.000000e+00 : f32}
// CHECK-DAG: tg.adamw %[[OW]], %[[CLIP]] {beta1 = 0.899999976 : f32, beta2 = 0.949999988 : f32, eps = 9.99999993E-9 : f32, tg.phase = "optimizer", weight_decay = 1.000000e-01 : f32}

// DECAY-LABEL: func.func @optimizer_step
// DECAY: %[[CLIP:.*]] = tg.clip_grad_norm {{.*}} {max_norm = 5.000000e-01 : f32
// DECAY-DAG: tg.adamw %{{.*}}, %[[CLIP]] {{{.*}}weight_decay = 5.000000e-02 : f32} : tensor<16x8xf32>
// DECAY-DAG: tg.adamw %{{.*}}, %[[CLIP]] {{{.*}}weight_decay = 0.000000e+00 : f32} : tensor<8xf32>
// DECAY-DAG: tg.adamw %{{.*}}, %[[CLIP]] {{{.*}}weight_decay = 5.000000e-02 : f32} : tensor<8x8xf32>
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %g: tensor<8xf32> {tg.param = "ln.g"},
                   %b: tensor<8xf32> {tg.param = "ln.b"}, %w: tensor<8x8xf32> {tg.param = "fc.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %y, %mean, %rstd = tg.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %h = tg.matmul %y, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %logits = tg.matmul %h, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Fused attention with q = k = v: tg.attention_grad gets the saved output and lse, and
// the three input gradients are summed. The logits matmul has alpha = 0.5, which both
// gradient matmuls keep.

// CHECK-LABEL: func.func @eval_step
// CHECK-LABEL: func.func @micro_step
// CHECK: %[[H:.*]] = tg.transpose
// CHECK: %[[O:.*]], %[[LSE:.*]] = tg.attention %[[H]], %[[H]], %[[H]] {scale = 5.000000e-01 : f32, tg.phase = "forward", window = 2 : i64}
// CHECK: %[[SEED:.*]] = tg.fill {tg.phase = "backward", value = 2.500000e-01 : f32}
// CHECK: tg.matmul {{.*}}{alpha = 5.000000e-01 : f32, tg.phase = "backward"}
// CHECK: tg.matmul {{.*}}{alpha = 5.000000e-01 : f32, tg.phase = "backward", transpose_a = true}
// CHECK: %[[DO:.*]] = tg.transpose
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tg.attention_grad %[[H]], %[[H]], %[[H]], %[[O]], %[[LSE]], %[[DO]] {scale = 5.000000e-01 : f32, tg.phase = "backward", window = 2 : i64}
// CHECK: %[[S1:.*]] = tg.add %[[DQ]], %[[DK]]
// CHECK: %[[S2:.*]] = tg.add %[[S1]], %[[DV]]
// CHECK: tg.transpose %[[S2]]
// CHECK: tg.embedding_grad
// CHECK: tg.add
// CHECK: tg.accumulate_grad
// CHECK-LABEL: func.func @optimizer_step
// CHECK: tg.adamw {{.*}}weight_decay = 0.000000e+00 : f32} : tensor<16x8xf32>

// With decay-embeddings=true the table decays too.
// DECAY-LABEL: func.func @optimizer_step
// DECAY: tg.adamw {{.*}}weight_decay = 5.000000e-02 : f32} : tensor<16x8xf32>
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %x4 = tg.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %h = tg.transpose %x4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %o, %lse = tg.attention %h, %h, %h {window = 2 : i64, scale = 0.5 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4xf32>)
  %ot = tg.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %y = tg.reshape %ot : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %logits = tg.matmul %y, %wte {transpose_b = true, alpha = 0.5 : f32} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
