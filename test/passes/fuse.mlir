// RUN: tg-opt %s -tg-fuse -split-input-file | FileCheck %s
// tg-fuse: a linear layer (shared [K, N] weight) whose only reader is the residual add,
// directly (one type) or through a widening cast (mixed precision), becomes one
// tg.matmul_residual in the add's place, named as the GEMM and in its layer and phase;
// with a bias (GPT-2 under mixed precision: matmul -> bias_add -> widening cast -> add) the
// bias joins it in f32. matmul -> bias_add [-> gelu] becomes tg.matmul_bias(_gelu) at the
// GEMM.

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
