// RUN: tg-opt %s -tg-mixed-precision="precision=bf16-mixed" -split-input-file | FileCheck %s
// RUN: tg-opt %s -tg-mixed-precision="precision=bf16-mixed" -split-input-file -mlir-print-debuginfo \
// RUN:   | FileCheck %s --check-prefix=LOC
// RUN: tg-opt %s -tg-mixed-precision="precision=fp16-mixed" -split-input-file \
// RUN:   | FileCheck %s --check-prefix=FP16 --implicit-check-not=bf16
// RUN: tg-opt %s -tg-mixed-precision="precision=fp16-mixed loss-scale-init=1024 loss-scale-growth-interval=100" \
// RUN:   -split-input-file | FileCheck %s --check-prefix=SCALE
// RUN: tg-opt %s -tg-mixed-precision="precision=bf16" -split-input-file \
// RUN:   | FileCheck %s --check-prefix=BF16 --implicit-check-not=tg.loss_scale --implicit-check-not=xf16
// RUN: tg-opt %s -tg-mixed-precision="precision=fp32" -split-input-file \
// RUN:   | FileCheck %s --check-prefix=FP32 --implicit-check-not=bf16 --implicit-check-not=xf16 \
// RUN:   --implicit-check-not=tg.loss_scale
// The default policy is bf16-mixed.
// RUN: tg-opt %s -tg-mixed-precision -split-input-file | FileCheck %s
// The autodiff side (casts' gradients, the loss-scaled seed) is in
// mixed-precision-autodiff.mlir; errors in mixed-precision-errors.mlir.

// One GPT block with naive attention and a tied lm_head: embedding, positional
// embedding, layer norm, qkv projection with bias, q.k^T, mask, softmax, p.v, gelu,
// dropout, residual add, logits through wte, cross entropy.
//
// bf16-mixed: the f32 master weights are cast to bf16 once, right before the op that
// first needs them (the bias before the GEMM whose output it is added to); the layer
// norm reads the f32 residual stream and writes bf16 with f32 statistics; the scores
// are widened for mask + softmax and narrowed for p.v; the residual add is f32 (the
// bf16 branch is widened); the loss is f32 from bf16 logits.

// CHECK-LABEL: module attributes {tg.precision = #tg.precision<"bf16-mixed">} {
// CHECK-NEXT: func.func @forward(%[[WTE:[^:]+]]: tensor<16x8xf32> {tg.moment_type = f32, tg.param = "wte"}, %[[WPE:[^:]+]]: tensor<4x8xf32> {tg.moment_type = f32, tg.param = "wpe"}, %[[G:[^:]+]]: tensor<8xf32> {tg.moment_type = f32, tg.param = "ln.g"}, %[[B:[^:]+]]: tensor<8xf32> {tg.moment_type = f32, tg.param = "ln.b"}, %[[W:[^:]+]]: tensor<8x24xf32> {tg.moment_type = f32, tg.param = "qkv.w"}, %[[BIAS:[^:]+]]: tensor<24xf32> {tg.moment_type = f32, tg.param = "qkv.b"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {tg.input = "tokens"}, %[[TGT:[^:]+]]: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
// CHECK-NEXT: %[[E:.*]] = tg.embedding %[[WTE]], %[[TOK]] : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[X:.*]] = tg.positional_embedding %[[E]], %[[WPE]] : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[Y:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = tg.layer_norm %[[X]], %[[G]], %[[B]] : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT: %[[WC:.*]] = tg.cast %[[W]] : (tensor<8x24xf32>) -> tensor<8x24xbf16>
// CHECK-NEXT: %[[BC:.*]] = tg.cast %[[BIAS]] : (tensor<24xf32>) -> tensor<24xbf16>
// CHECK-NEXT: %[[QKV:.*]] = tg.matmul %[[Y]], %[[WC]] : (tensor<2x4x8xbf16>, tensor<8x24xbf16>) -> tensor<2x4x24xbf16>
// CHECK-NEXT: %[[QKVB:.*]] = tg.bias_add %[[QKV]], %[[BC]] : (tensor<2x4x24xbf16>, tensor<24xbf16>) -> tensor<2x4x24xbf16>
// CHECK-NEXT: %[[SPLIT:.*]]:3 = tg.split %[[QKVB]] {axis = 2 : i64} : (tensor<2x4x24xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>)
// CHECK-NEXT: tg.reshape %[[SPLIT]]#0 : (tensor<2x4x8xbf16>) -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[QH:.*]] = tg.transpose {{.*}} : (tensor<2x4x2x4xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: tg.reshape %[[SPLIT]]#1 : (tensor<2x4x8xbf16>) -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[KH:.*]] = tg.transpose {{.*}} : (tensor<2x4x2x4xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: tg.reshape %[[SPLIT]]#2 : (tensor<2x4x8xbf16>) -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[VH:.*]] = tg.transpose {{.*}} : (tensor<2x4x2x4xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[S:.*]] = tg.matmul %[[QH]], %[[KH]] {alpha = 5.000000e-01 : f32, transpose_b = true} : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[SF:.*]] = tg.cast %[[S]] : (tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[M:.*]] = tg.causal_mask %[[SF]] : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[P:.*]] = tg.softmax %[[M]] : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[PB:.*]] = tg.cast %[[P]] : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[O:.*]] = tg.matmul %[[PB]], %[[VH]] : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[OT:.*]] = tg.transpose %[[O]] {{.*}} : (tensor<2x2x4x4xbf16>) -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[A:.*]] = tg.reshape %[[OT]] : (tensor<2x4x2x4xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[GE:.*]] = tg.gelu %[[A]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[D:.*]] = tg.dropout %[[GE]] {rate = 1.000000e-01 : f32, seed = 3 : i64} : (tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[DF:.*]] = tg.cast %[[D]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tg.add %[[X]], %[[DF]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[RB:.*]] = tg.cast %[[R]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// The tied table: read in f32 by tg.embedding, cast once for the lm_head.
// CHECK-NEXT: %[[WTEC:.*]] = tg.cast %[[WTE]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK-NEXT: %[[LOGITS:.*]] = tg.matmul %[[RB]], %[[WTEC]] {transpose_b = true} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[LOSS:.*]] = tg.cross_entropy %[[LOGITS]], %[[TGT]] : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>

// A parameter's cast is named after it (tgc's diagnostics and memory plan show it).
// LOC: tg.cast %arg4 : (tensor<8x24xf32>) -> tensor<8x24xbf16> loc(#[[QW:loc[0-9]+]])
// LOC: tg.cast %arg5 : (tensor<24xf32>) -> tensor<24xbf16> loc(#[[QB:loc[0-9]+]])
// LOC: tg.cast %arg0 : (tensor<16x8xf32>) -> tensor<16x8xbf16> loc(#[[WC:loc[0-9]+]])
// LOC-DAG: #[[QW]] = loc("qkv.w.cast")
// LOC-DAG: #[[QB]] = loc("qkv.b.cast")
// LOC-DAG: #[[WC]] = loc("wte.cast")

// fp16-mixed: the same placement in f16, plus dynamic loss scaling (defaults).
// FP16: module attributes {tg.loss_scale = {growth_interval = 2000 : i64, init = 6.553600e+04 : f32}, tg.precision = #tg.precision<"fp16-mixed">} {
// FP16-NEXT: func.func @forward(%{{[^:]+}}: tensor<16x8xf32> {tg.moment_type = f32, tg.param = "wte"},
// FP16: tg.layer_norm {{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// FP16-NEXT: tg.cast %{{.*}} : (tensor<8x24xf32>) -> tensor<8x24xf16>
// FP16-NEXT: tg.cast %{{.*}} : (tensor<24xf32>) -> tensor<24xf16>
// FP16-NEXT: tg.matmul {{.*}} : (tensor<2x4x8xf16>, tensor<8x24xf16>) -> tensor<2x4x24xf16>
// FP16: tg.cast {{.*}} : (tensor<2x2x4x4xf16>) -> tensor<2x2x4x4xf32>
// FP16-NEXT: tg.causal_mask {{.*}} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
// FP16-NEXT: tg.softmax {{.*}} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
// FP16: tg.add {{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// FP16: tg.cross_entropy {{.*}} : (tensor<2x4x16xf16>, tensor<2x4xi32>) -> tensor<f32>

// SCALE: module attributes {tg.loss_scale = {growth_interval = 100 : i64, init = 1.024000e+03 : f32}, tg.precision = #tg.precision<"fp16-mixed">} {

// Pure bf16: the parameters themselves (and their AdamW moments) are bf16, so no cast
// at all; only the layer norm statistics and the loss stay f32 (softmax is bf16 too).
// BF16: module attributes {tg.precision = #tg.precision<bf16>} {
// BF16-NEXT: func.func @forward(%{{[^:]+}}: tensor<16x8xbf16> {tg.moment_type = bf16, tg.param = "wte"}, %{{[^:]+}}: tensor<4x8xbf16> {tg.moment_type = bf16, tg.param = "wpe"}, %{{[^:]+}}: tensor<8xbf16> {tg.moment_type = bf16, tg.param = "ln.g"}, %{{[^:]+}}: tensor<8xbf16> {tg.moment_type = bf16, tg.param = "ln.b"}, %{{[^:]+}}: tensor<8x24xbf16> {tg.moment_type = bf16, tg.param = "qkv.w"}, %{{[^:]+}}: tensor<24xbf16> {tg.moment_type = bf16, tg.param = "qkv.b"}, %{{[^:]+}}: tensor<2x4xi32> {tg.input = "tokens"}, %{{[^:]+}}: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
// BF16-NOT: tg.cast
// BF16: tg.embedding {{.*}} : (tensor<16x8xbf16>, tensor<2x4xi32>) -> tensor<2x4x8xbf16>
// BF16-NEXT: tg.positional_embedding {{.*}} : (tensor<2x4x8xbf16>, tensor<4x8xbf16>) -> tensor<2x4x8xbf16>
// BF16-NEXT: tg.layer_norm {{.*}} : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// BF16-NEXT: tg.matmul {{.*}} : (tensor<2x4x8xbf16>, tensor<8x24xbf16>) -> tensor<2x4x24xbf16>
// BF16-NEXT: tg.bias_add {{.*}} : (tensor<2x4x24xbf16>, tensor<24xbf16>) -> tensor<2x4x24xbf16>
// BF16-NOT: tg.cast
// BF16: tg.causal_mask {{.*}} : (tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>
// BF16-NEXT: tg.softmax {{.*}} : (tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>
// BF16-NOT: tg.cast
// BF16: tg.add {{.*}} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// BF16-NEXT: tg.matmul {{.*}} {transpose_b = true} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
// BF16-NEXT: tg.cross_entropy {{.*}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
// BF16-NEXT: return

// fp32: nothing is retyped and nothing is cast; only the attributes are written.
// FP32: module attributes {tg.precision = #tg.precision<fp32>} {
// FP32-NEXT: func.func @forward(%{{[^:]+}}: tensor<16x8xf32> {tg.moment_type = f32, tg.param = "wte"},
// FP32-NOT: tg.cast
// FP32: tg.layer_norm {{.*}} -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// FP32-NOT: tg.cast
// FP32: tg.cross_entropy {{.*}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
// FP32-NEXT: return
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %wpe: tensor<4x8xf32> {tg.param = "wpe"},
                   %g: tensor<8xf32> {tg.param = "ln.g"}, %b: tensor<8xf32> {tg.param = "ln.b"},
                   %w: tensor<8x24xf32> {tg.param = "qkv.w"}, %bias: tensor<24xf32> {tg.param = "qkv.b"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %e = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %x = tg.positional_embedding %e, %wpe : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %y, %mean, %rstd = tg.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %qkv = tg.matmul %y, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %qkvb = tg.bias_add %qkv, %bias : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = tg.split %qkvb {axis = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %q4 = tg.reshape %q : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qh = tg.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %k4 = tg.reshape %k : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kh = tg.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = tg.reshape %v : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vh = tg.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %s = tg.matmul %qh, %kh {transpose_b = true, alpha = 0.5 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %m = tg.causal_mask %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tg.softmax %m : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tg.matmul %p, %vh : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = tg.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %att = tg.reshape %ot : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %gl = tg.gelu %att : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %d = tg.dropout %gl {rate = 0.1 : f32, seed = 3 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = tg.add %x, %d : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = tg.matmul %r, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// One cast per (value, type): fc.w feeds two matmuls and is cast once, before the
// first; the embedding output feeds two matmuls and is cast once. The input's
// tg.cast %h2 (f32 -> f32 before the pass) becomes a widening of the bf16 %h2; the
// matmul that reads it takes %h2 itself (no bf16 -> f32 -> bf16 round trip) and reuses
// fc.w's cast. The add of two bf16 values stays bf16, and the layer norm reads it as
// it is.

// CHECK-LABEL: module attributes {tg.precision = #tg.precision<"bf16-mixed">} {
// CHECK-NEXT: func.func @forward(%[[WTE:[^:]+]]: tensor<16x8xf32> {{.*}}, %[[W:[^:]+]]: tensor<8x8xf32> {tg.moment_type = f32, tg.param = "fc.w"}, %[[W2:[^:]+]]: tensor<8x8xf32> {tg.moment_type = f32, tg.param = "fc2.w"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {tg.input = "tokens"}, %[[TGT:[^:]+]]: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
// CHECK-NEXT: %[[X:.*]] = tg.embedding %[[WTE]], %[[TOK]] : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[XB:.*]] = tg.cast %[[X]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WC:.*]] = tg.cast %[[W]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK-NEXT: %[[H1:.*]] = tg.matmul %[[XB]], %[[WC]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[W2C:.*]] = tg.cast %[[W2]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK-NEXT: %[[H2:.*]] = tg.matmul %[[XB]], %[[W2C]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: tg.cast %[[H2]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[H3:.*]] = tg.matmul %[[H2]], %[[WC]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[S:.*]] = tg.add %[[H1]], %[[H3]] : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[Y:[^ ,]+]], {{.*}} = tg.layer_norm %[[S]], {{.*}} : (tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT: %[[WTEC:.*]] = tg.cast %[[WTE]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK-NEXT: tg.matmul %[[Y]], %[[WTEC]] {transpose_b = true}
// CHECK-NEXT: tg.cross_entropy
// CHECK-NEXT: return
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %g: tensor<8xf32> {tg.param = "ln.g"},
                   %b: tensor<8xf32> {tg.param = "ln.b"},
                   %w: tensor<8x8xf32> {tg.param = "fc.w"}, %w2: tensor<8x8xf32> {tg.param = "fc2.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %h1 = tg.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h2 = tg.matmul %x, %w2 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %hf = tg.cast %h2 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h3 = tg.matmul %hf, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = tg.add %h1, %h3 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y, %mean, %rstd = tg.layer_norm %s, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %logits = tg.matmul %y, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Fused attention (what tg-fuse-attention builds): q, k, v and out in the low type, lse
// f32. The first attention reads the f32 embedding (one cast serves q, k and v); the
// second reads a layer norm's bf16 output (no cast). tg.concat follows its first
// operand: the f32 residual is cast to bf16 for it.

// CHECK-LABEL: module attributes {tg.precision = #tg.precision<"bf16-mixed">} {
// CHECK: %[[X:.*]] = tg.embedding
// CHECK: %[[H:.*]] = tg.transpose {{.*}} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[HB:.*]] = tg.cast %[[H]] : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[O:[^ ,]+]], %{{[^ ,]+}} = tg.attention %[[HB]], %[[HB]], %[[HB]] {scale = 5.000000e-01 : f32, window = 2 : i64} : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> (tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>)
// CHECK-NEXT: tg.transpose %[[O]] {{.*}} -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[A:.*]] = tg.reshape {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[AF:.*]] = tg.cast %[[A]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tg.add %[[X]], %[[AF]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[Y:[^ ,]+]], {{.*}} = tg.layer_norm %[[R]], {{.*}} -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT: tg.reshape %[[Y]] : (tensor<2x4x8xbf16>) -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[YH:.*]] = tg.transpose {{.*}} : (tensor<2x4x2x4xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: tg.attention %[[YH]], %[[YH]], %[[YH]] {scale = 5.000000e-01 : f32} : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> (tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>)
// CHECK-NEXT: tg.transpose
// CHECK-NEXT: %[[A2:.*]] = tg.reshape {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[RB:.*]] = tg.cast %[[R]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[C:.*]] = tg.concat %[[A2]], %[[RB]] {axis = 2 : i64} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: tg.cross_entropy %[[C]], {{.*}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>

// FP16: tg.attention {{.*}} : (tensor<2x2x4x4xf16>, tensor<2x2x4x4xf16>, tensor<2x2x4x4xf16>) -> (tensor<2x2x4x4xf16>, tensor<2x2x4xf32>)
// BF16: tg.attention {{.*}} : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> (tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>)
// FP32: tg.attention {{.*}} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4xf32>)
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %g: tensor<8xf32> {tg.param = "ln.g"}, %b: tensor<8xf32> {tg.param = "ln.b"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %x4 = tg.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %h = tg.transpose %x4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %o, %lse = tg.attention %h, %h, %h {window = 2 : i64, scale = 0.5 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4xf32>)
  %ot = tg.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %a = tg.reshape %ot : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %r = tg.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y, %mean, %rstd = tg.layer_norm %r, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %y4 = tg.reshape %y : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %yh = tg.transpose %y4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %o2, %lse2 = tg.attention %yh, %yh, %yh {scale = 0.5 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4xf32>)
  %ot2 = tg.transpose %o2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %a2 = tg.reshape %ot2 : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %c = tg.concat %a2, %r {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %c, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Regressions. (1) A bias computed after the GEMM (here a reshape of a parameter): its
// cast goes after its definition, before the bias_add (it used to be put before the
// GEMM, above the reshape: "operand #0 does not dominate this use"). (2) A returned
// value other than the loss keeps the declared f32 result type: it is cast back (the
// bf16 value used to reach func.return: "type of return operand 1 doesn't match").

// CHECK-LABEL: module attributes {tg.precision = #tg.precision<"bf16-mixed">} {
// CHECK-NEXT: func.func @forward(%[[W:[^:]+]]: tensor<8x16xf32> {tg.moment_type = f32, tg.param = "fc.w"}, %[[B2:[^:]+]]: tensor<2x8xf32> {tg.moment_type = f32, tg.param = "fc.b"}, %[[X:[^:]+]]: tensor<2x4x8xf32>, %[[TGT:[^:]+]]: tensor<2x4xi32> {tg.input = "targets"}) -> (tensor<f32>, tensor<2x4x16xf32>) {
// CHECK-NEXT: %[[XB:.*]] = tg.cast %[[X]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WC:.*]] = tg.cast %[[W]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK-NEXT: %[[H:.*]] = tg.matmul %[[XB]], %[[WC]] : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[B:.*]] = tg.reshape %[[B2]] : (tensor<2x8xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[BC:.*]] = tg.cast %[[B]] : (tensor<16xf32>) -> tensor<16xbf16>
// CHECK-NEXT: %[[Y:.*]] = tg.bias_add %[[H]], %[[BC]] : (tensor<2x4x16xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[LOSS:.*]] = tg.cross_entropy %[[Y]], %[[TGT]] : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NEXT: %[[YF:.*]] = tg.cast %[[Y]] : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[LOSS]], %[[YF]] : tensor<f32>, tensor<2x4x16xf32>
func.func @forward(%w: tensor<8x16xf32> {tg.param = "fc.w"}, %b2: tensor<2x8xf32> {tg.param = "fc.b"},
                   %x: tensor<2x4x8xf32>, %targets: tensor<2x4xi32> {tg.input = "targets"})
    -> (tensor<f32>, tensor<2x4x16xf32>) {
  %h = tg.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %b = tg.reshape %b2 : (tensor<2x8xf32>) -> tensor<16xf32>
  %y = tg.bias_add %h, %b : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %y, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss, %y : tensor<f32>, tensor<2x4x16xf32>
}
