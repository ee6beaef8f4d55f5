// RUN: tg-opt %s -tg-fuse -split-input-file | FileCheck %s
// RUN: tgc compile %tg_src/examples/tiny.json --set training.precision=bf16-mixed \
// RUN:   --set training.checkpointing=selective --emit=planned -o - | FileCheck %s --check-prefix=SEL
// RUN: tgc compile %tg_src/examples/tiny.json --set training.precision=fp32 \
// RUN:   --set training.checkpointing=none --emit=planned -o - | FileCheck %s --check-prefix=NONE
// tg-fuse: a linear layer (shared [K, N] weight) whose only reader is the residual add,
// directly (one type) or through a widening cast (mixed precision), becomes one
// tg.matmul_residual in the add's place, named as the GEMM and in its layer and phase;
// with a bias (GPT-2 under mixed precision: matmul -> bias_add -> widening cast -> add) the
// bias joins it in f32. matmul -> bias_add [-> gelu] becomes tg.matmul_bias(_gelu) at the
// GEMM. [widening cast ->] add -> layer_norm of the sum becomes tg.add_layer_norm where the
// sum needs a buffer of its own (no addend dies at the add). The backward's GEMM ->
// gelu_grad (+ bias_grad) becomes tg.matmul_dgelu_bgrad.

// CHECK-LABEL: func.func @mixed
// CHECK-SAME:  (%[[H:.*]]: tensor<2x4x8xbf16>, %[[W:.*]]: tensor<8x16xbf16>, %[[X:.*]]: tensor<2x4x16xf32>)
// CHECK-NEXT:  %[[Y:.*]] = tg.matmul_residual %[[H]], %[[W]], %[[X]] {tg.layer = 3 : i64, tg.phase = "forward"} : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NOT:   tg.matmul
// CHECK-NOT:   tg.cast
// CHECK-NOT:   tg.add
// CHECK:       return %[[Y]]
func.func @mixed(%h: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %x: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %p = tg.matmul %h, %w {tg.layer = 3 : i64, tg.phase = "forward"} : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %c = tg.cast %p : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
  %y = tg.add %x, %c : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// fp32, the product on the add's left, and two layers in a row: the second layer's
// residual is the first fused op's result.
// CHECK-LABEL: func.func @chain
// CHECK:       %[[Y1:.*]] = tg.matmul_residual %{{.*}}, %{{.*}}, %arg2 {transpose_b = true}
// CHECK-NEXT:  %[[Y2:.*]] = tg.matmul_residual %[[Y1]], %{{.*}}, %[[Y1]] :
// CHECK-NEXT:  return %[[Y2]]
func.func @chain(%h: tensor<4x8xf32>, %w: tensor<16x8xf32>, %x: tensor<4x16xf32>, %w2: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %p = tg.matmul %h, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y = tg.add %p, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %p2 = tg.matmul %y, %w2 : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %y2 = tg.add %y, %p2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y2 : tensor<4x16xf32>
}

// -----

// Left alone (as residual chains): a second reader of the product; a bias between without a
// widening cast (fp32: the bias add then becomes tg.matmul_bias and the add stays); a
// narrowing cast; a batched rhs (attention's P.V); x + x.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT:   tg.matmul_residual
// CHECK:       tg.matmul_bias %{{.*}} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:  tg.add
// CHECK-NOT:   tg.matmul_residual
// CHECK:       return
func.func @not_fused(%h: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %x: tensor<4x16xf32>,
                     %hb: tensor<4x8xbf16>, %wb: tensor<8x16xbf16>, %xb: tensor<4x16xbf16>,
                     %p4: tensor<1x2x4x4xf32>, %v4: tensor<1x2x4x4xf32>, %r4: tensor<1x2x4x4xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xbf16>, tensor<1x2x4x4xf32>, tensor<4x16xf32>) {
  %p = tg.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = tg.add %x, %p : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = tg.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %qb = tg.bias_add %q, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y1 = tg.add %x, %qb : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = tg.matmul %hb, %wb : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %rc = tg.cast %r : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %rn = tg.cast %rc : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  %y2 = tg.add %xb, %rn : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %o = tg.matmul %p4, %v4 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y3 = tg.add %r4, %o : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s = tg.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y4 = tg.add %s, %s : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y, %p, %y1, %y2, %y3, %y4 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xbf16>, tensor<1x2x4x4xf32>, tensor<4x16xf32>
}

// -----

// GPT-2's projections under mixed precision: GEMM, bias, widening cast and residual add in
// a row -> one tg.matmul_residual reading the f32 bias parameter; the bias's own cast had
// no other reader and goes too.
// CHECK-LABEL: func.func @bias_residual
// CHECK-SAME:  (%[[H:.*]]: tensor<2x4x8xbf16>, %[[W:.*]]: tensor<8x16xbf16>, %[[B:.*]]: tensor<16xf32>, %[[X:.*]]: tensor<2x4x16xf32>)
// CHECK-NEXT:  %[[Y:.*]] = tg.matmul_residual %[[H]], %[[W]], %[[X]], %[[B]] {tg.layer = 1 : i64} : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:  return %[[Y]]
func.func @bias_residual(%h: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>, %x: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %bl = tg.cast %b : (tensor<16xf32>) -> tensor<16xbf16>
  %p = tg.matmul %h, %w {tg.layer = 1 : i64} : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %pb = tg.bias_add %p, %bl : (tensor<2x4x16xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
  %c = tg.cast %pb : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
  %y = tg.add %x, %c : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// The MLP's up-projection: GEMM, bias and GELU in a row -> tg.matmul_bias_gelu at the GEMM;
// its pre-activation replaces the bias add's result (what the GELU gradient reads).
// CHECK-LABEL: func.func @bias_gelu
// CHECK-NEXT:  %[[PRE:.*]], %[[Y:.*]] = tg.matmul_bias_gelu %arg0, %arg1, %arg2 {tg.phase = "forward", transpose_b = true} : (tensor<4x8xbf16>, tensor<32x8xbf16>, tensor<32xbf16>) -> (tensor<4x32xbf16>, tensor<4x32xbf16>)
// CHECK-NEXT:  %[[D:.*]] = tg.gelu_grad %[[PRE]], %[[Y]]
// CHECK-NEXT:  return %[[Y]], %[[D]]
func.func @bias_gelu(%h: tensor<4x8xbf16>, %w: tensor<32x8xbf16>, %b: tensor<32xbf16>) -> (tensor<4x32xbf16>, tensor<4x32xbf16>) {
  %p = tg.matmul %h, %w {transpose_b = true, tg.phase = "forward"} : (tensor<4x8xbf16>, tensor<32x8xbf16>) -> tensor<4x32xbf16>
  %pre = tg.bias_add %p, %b : (tensor<4x32xbf16>, tensor<32xbf16>) -> tensor<4x32xbf16>
  %y = tg.gelu %pre : (tensor<4x32xbf16>) -> tensor<4x32xbf16>
  %d = tg.gelu_grad %pre, %y : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>
  return %y, %d : tensor<4x32xbf16>, tensor<4x32xbf16>
}

// -----

// Bias epilogue only: the GELU is not right after the bias add; and a bias computed after
// the GEMM is not ready when the GEMM runs (left as it is).
// CHECK-LABEL: func.func @bias_only
// CHECK:       %[[Y:.*]] = tg.matmul_bias %arg0, %arg1, %arg2 :
// CHECK-NEXT:  tg.add
// CHECK-NEXT:  tg.gelu %[[Y]]
// CHECK:       tg.matmul %arg0, %arg1
// CHECK-NEXT:  tg.cast %arg3
// CHECK-NEXT:  tg.bias_add
func.func @bias_only(%h: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %b16: tensor<16xbf16>, %x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %p = tg.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %pb = tg.bias_add %p, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %z = tg.add %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = tg.gelu %pb : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = tg.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %bl = tg.cast %b16 : (tensor<16xbf16>) -> tensor<16xf32>
  %qb = tg.bias_add %q, %bl : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y, %z, %qb : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The residual add and the layer norm of its sum (GPT-2 under mixed precision with the
// projection's output kept, checkpointing=selective): the widening cast right before the
// add joins, its bf16 input read in place; the stream x is read later, so the sum needs a
// buffer of its own anyway -> one tg.add_layer_norm at the add, with the add's name,
// layer and phase. The cast as the add's lhs: the stream is still a, the branch b.
// CHECK-LABEL: func.func @add_norm
// CHECK-SAME:  (%[[H:.*]]: tensor<2x4x8xbf16>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT:  %[[X:.*]] = tg.fill
// CHECK-NEXT:  %[[S:.*]], %[[Y:.*]], %[[M:.*]], %[[R:.*]] = tg.add_layer_norm %[[X]], %[[H]], %[[G]], %[[B]] {eps = 5.000000e-01 : f32, tg.layer = 2 : i64, tg.phase = "forward"} : (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT:  return %[[S]], %[[Y]], %[[M]], %[[R]], %[[X]]
func.func @add_norm(%h: tensor<2x4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>) {
  %x = tg.fill {value = 1.0 : f32} : tensor<2x4x8xf32>
  %c = tg.cast %h {tg.layer = 2 : i64} : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
  %s = tg.add %c, %x {tg.layer = 2 : i64, tg.phase = "forward"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("layers.2.attn.residual")
  %y, %m, %r = tg.layer_norm %s, %g, %b {eps = 0.5 : f32, tg.layer = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>) loc("layers.2.ln2")
  return %s, %y, %m, %r, %x : tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>
}

// -----

// One type (fp32, both addends read later: selective keeps the GEMM's output): fused with
// no cast; the next chain's stream is the first one's sum (read later too).
// CHECK-LABEL: func.func @add_norm_f32
// CHECK:       %[[S:.*]], %{{.*}}, %{{.*}}, %{{.*}} = tg.add_layer_norm %[[X:.*]], %[[P:.*]], %arg0, %arg1 :
// CHECK-NEXT:  %[[S2:.*]], %{{.*}}, %{{.*}}, %{{.*}} = tg.add_layer_norm %[[S]], %[[P]], %arg0, %arg1 :
// CHECK-NOT:   tg.add
// CHECK-NOT:   tg.layer_norm
// CHECK:       return
func.func @add_norm_f32(%g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %x = tg.fill {value = 1.0 : f32} : tensor<4x8xf32>
  %p = tg.fill {value = 2.0 : f32} : tensor<4x8xf32>
  %s = tg.add %x, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y, %m, %r = tg.layer_norm %s, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %s2 = tg.add %s, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2, %m2, %r2 = tg.layer_norm %s2, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %x, %p, %y, %s, %s2, %y2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Left alone: the stream dies at the add (the planner writes the sum over it in place,
// which saves a buffer and which the fused kernel cannot do); the layer norm not right
// after the add; the layer norm of something else; the cast not right before the add (it
// stays, its result dies at the add and the sum is written over it).
// CHECK-LABEL: func.func @add_norm_not_fused
// CHECK-NOT:   tg.add_layer_norm
// CHECK:       return
func.func @add_norm_not_fused(%h: tensor<4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %x = tg.fill {value = 1.0 : f32} : tensor<4x8xf32>
  %c = tg.cast %h : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %s = tg.add %x, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y, %m, %r = tg.layer_norm %s, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>)
  %x1 = tg.fill {value = 1.0 : f32} : tensor<4x8xf32>
  %s1 = tg.add %s, %x1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = tg.fill {value = 3.0 : f32} : tensor<4x8xf32>
  %y1, %m1, %r1 = tg.layer_norm %s1, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %s2 = tg.add %s1, %x1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2, %m2, %r2 = tg.layer_norm %x1, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %c3 = tg.cast %h : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %w = tg.fill {value = 4.0 : f32} : tensor<4x8xf32>
  %s3 = tg.add %s2, %c3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3, %m3, %r3 = tg.layer_norm %s3, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y, %y1, %y2, %y3, %w, %s2 : tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The MLP's backward through the GELU: the gradient GEMM of the down-projection, read only
// by the GELU gradient, whose result a bias gradient reads -> tg.matmul_dgelu_bgrad at the
// GELU gradient (after the op between: the GEMM's product needs no buffer across it), in
// the GEMM's layer and phase; its location is the chain's, fused
// (lower-to-emitc-fusion.mlir reads the names).
// CHECK-LABEL: func.func @dgelu
// CHECK-NEXT:  %[[Z:.*]] = tg.fill
// CHECK-NEXT:  %[[DX:.*]], %[[DB:.*]] = tg.matmul_dgelu_bgrad %arg0, %arg1, %arg2 {tg.layer = 3 : i64, tg.phase = "backward", transpose_b = true} : (tensor<4x8xbf16>, tensor<32x8xbf16>, tensor<4x32xbf16>) -> (tensor<4x32xbf16>, tensor<32xbf16>)
// CHECK-NEXT:  return %[[DX]], %[[DB]], %[[Z]]
func.func @dgelu(%dy: tensor<4x8xbf16>, %w: tensor<32x8xbf16>, %pre: tensor<4x32xbf16>) -> (tensor<4x32xbf16>, tensor<32xbf16>, tensor<4xf32>) {
  %g = tg.matmul %dy, %w {transpose_b = true, tg.layer = 3 : i64, tg.phase = "backward"} : (tensor<4x8xbf16>, tensor<32x8xbf16>) -> tensor<4x32xbf16> loc("layers.3.mlp.proj")
  %z = tg.fill {value = 0.0 : f32} : tensor<4xf32>
  %dx = tg.gelu_grad %pre, %g : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16> loc("layers.3.mlp.gelu")
  %db = tg.bias_grad %dx : (tensor<4x32xbf16>) -> tensor<32xbf16> loc("layers.3.mlp.fc.bias")
  return %dx, %db, %z : tensor<4x32xbf16>, tensor<32xbf16>, tensor<4xf32>
}

// -----

// The pre-activation computed after the GEMM (recomputed under layer checkpointing): the
// fused op, at the GELU gradient, reads it.
// CHECK-LABEL: func.func @dgelu_late
// CHECK-NEXT:  %[[PRE:.*]] = tg.gelu %arg2
// CHECK-NEXT:  %{{.*}}, %{{.*}} = tg.matmul_dgelu_bgrad %arg0, %arg1, %[[PRE]] :
// CHECK-NEXT:  return
func.func @dgelu_late(%dy: tensor<4x8xf32>, %w: tensor<8x32xf32>, %h: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<32xf32>) {
  %g = tg.matmul %dy, %w : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %pre = tg.gelu %h : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %dx = tg.gelu_grad %pre, %g : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %db = tg.bias_grad %dx : (tensor<4x32xf32>) -> tensor<32xf32>
  return %dx, %db : tensor<4x32xf32>, tensor<32xf32>
}

// -----

// Left alone: no bias gradient of the GELU gradient; the GEMM read by something else too;
// the GEMM's product as the GELU gradient's x, not its dy; a batched rhs.
// CHECK-LABEL: func.func @dgelu_not_fused
// CHECK-NOT:   tg.matmul_dgelu_bgrad
// CHECK:       return
func.func @dgelu_not_fused(%dy: tensor<4x8xf32>, %w: tensor<8x32xf32>, %pre: tensor<4x32xf32>,
                           %dyb: tensor<2x4x8xf32>, %wb: tensor<2x8x32xf32>, %preb: tensor<2x4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) {
  %g = tg.matmul %dy, %w : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %dx = tg.gelu_grad %pre, %g : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %g1 = tg.matmul %dy, %w : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %dx1 = tg.gelu_grad %pre, %g1 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %db1 = tg.bias_grad %dx1 : (tensor<4x32xf32>) -> tensor<32xf32>
  %s = tg.add %g1, %g1 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %g2 = tg.matmul %dy, %w : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %dx2 = tg.gelu_grad %g2, %pre : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %db2 = tg.bias_grad %dx2 : (tensor<4x32xf32>) -> tensor<32xf32>
  %g3 = tg.matmul %dyb, %wb : (tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x4x32xf32>
  %dx3 = tg.gelu_grad %preb, %g3 : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %db3 = tg.bias_grad %dx3 : (tensor<2x4x32xf32>) -> tensor<32xf32>
  return %dx, %s, %db1, %dx2, %db2, %db3 : tensor<4x32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>
}

// In the pipeline: checkpointing=selective keeps the attention projection's output and the
// stream (both read by the recomputation), so the attention block's residual add (under
// mixed precision the projection is bf16, widened) and ln2 are one tg.add_layer_norm per
// layer, in the forward and in the recomputation; the eval step has the projection's
// residual epilogue instead (tg.matmul_residual). Without checkpointing (fp32) every
// residual add writes its sum over an addend that dies there: no fusion.
// SEL-LABEL:  func.func @eval_step
// SEL-NOT:    tg.add_layer_norm
// SEL-LABEL:  func.func @micro_step
// SEL-COUNT-2: tg.add_layer_norm {{.*}}(tensor<8x64x64xf32>, tensor<8x64x64xbf16>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64x64xf32>, tensor<8x64x64xbf16>, tensor<8x64xf32>, tensor<8x64xf32>)
// SEL:        tg.add_layer_norm {{.*}}tg.recompute
// SEL:        tg.add_layer_norm {{.*}}tg.recompute
// SEL-NOT:    tg.add_layer_norm
// SEL-LABEL:  func.func @optimizer_step
// NONE-NOT:   tg.add_layer_norm
// NONE:       tg.add
// NONE-NEXT:  tg.layer_norm
// NONE-NOT:   tg.add_layer_norm
