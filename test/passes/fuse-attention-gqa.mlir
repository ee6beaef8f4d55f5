// RUN: tg-opt %s -tg-fuse-attention -split-input-file | FileCheck %s
// RUN: tg-opt %s -tg-fuse-attention=packed=false -split-input-file | FileCheck %s --check-prefix=UNPACKED
// tg-fuse-attention on grouped-query attention as the frontend builds it (MLIRGen.cpp,
// attention; `tgc compile examples/tiny-llama.json --emit=mlir`): the packed projection
// [B, T, (H + 2 Hkv) hd] after tg.rope is split into q [B, T, H hd] and k, v [B, T, Hkv hd],
// each viewed as heads; q [B, H, T, hd] is viewed as [B, Hkv, G T, hd] (G = H / Hkv) so
// that q.k^T and P.v are batched over [B, Hkv] against k, v [B, Hkv, T, hd] (never
// repeated); the scores are viewed as [B, Hkv, G, T, T] for mask and softmax and back; P.v
// is viewed as [B, H, T, hd], transposed back and flattened. The chain becomes
// tg.attention(q, k, v) with k, v of Hkv heads, and then (packed, the default)
// tg.attention_qkv {kv_heads = Hkv} on the rotated projection itself.

// Grouped-query: B = 3, T = 6, H = 4 query heads, Hkv = 2 kv heads (G = 2), hd = 4.
// CHECK-LABEL: func.func @gqa
// CHECK:      %[[ROPE:.*]] = tg.rope %{{.*}} {heads = 4 : i64, kv_heads = 2 : i64,
// CHECK-NEXT: %[[OUT:.*]], %{{.*}} = tg.attention_qkv %[[ROPE]] {heads = 4 : i64, kv_heads = 2 : i64, scale = 5.000000e-01 : f32, tg.layer = 0 : i64} : (tensor<3x6x32xf32>) -> (tensor<3x6x16xf32>, tensor<3x4x6xf32>)
// CHECK-NEXT: %[[Y:.*]] = tg.matmul %[[OUT]], %arg1
// CHECK-NEXT: return %[[Y]]
// UNPACKED-LABEL: func.func @gqa
// UNPACKED:      %[[S:.*]]:3 = tg.split
// UNPACKED-NEXT: %[[Q0:.*]] = tg.reshape %[[S]]#0 {{.*}} -> tensor<3x6x4x4xf32>
// UNPACKED-NEXT: %[[Q:.*]] = tg.transpose %[[Q0]] {{.*}} -> tensor<3x4x6x4xf32>
// UNPACKED-NEXT: %[[K0:.*]] = tg.reshape %[[S]]#1 {{.*}} -> tensor<3x6x2x4xf32>
// UNPACKED-NEXT: %[[K:.*]] = tg.transpose %[[K0]] {{.*}} -> tensor<3x2x6x4xf32>
// UNPACKED-NEXT: %[[V0:.*]] = tg.reshape %[[S]]#2 {{.*}} -> tensor<3x6x2x4xf32>
// UNPACKED-NEXT: %[[V:.*]] = tg.transpose %[[V0]] {{.*}} -> tensor<3x2x6x4xf32>
// The grouped views, q.k^T, mask, softmax and P.v are gone: one tg.attention reads k and
// v with their 2 heads.
// UNPACKED-NEXT: %[[O:.*]], %{{.*}} = tg.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f32, tg.layer = 0 : i64} : (tensor<3x4x6x4xf32>, tensor<3x2x6x4xf32>, tensor<3x2x6x4xf32>) -> (tensor<3x4x6x4xf32>, tensor<3x4x6xf32>)
// UNPACKED-NEXT: %[[OT:.*]] = tg.transpose %[[O]] {{.*}} -> tensor<3x6x4x4xf32>
// UNPACKED-NEXT: tg.reshape %[[OT]] {{.*}} -> tensor<3x6x16xf32>
// UNPACKED-NEXT: tg.matmul
// UNPACKED-NEXT: return
func.func @gqa(%x: tensor<3x6x32xf32>, %wo: tensor<16x16xf32>) -> tensor<3x6x16xf32> {
  %2 = tg.rope %x {heads = 4 : i64, kv_heads = 2 : i64, scaling = array<f32: 0.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03>, tg.layer = 0 : i64, theta = 1.000000e+04 : f32} : (tensor<3x6x32xf32>) -> tensor<3x6x32xf32>
  %3:3 = tg.split %2 {axis = 2 : i64, tg.layer = 0 : i64} : (tensor<3x6x32xf32>) -> (tensor<3x6x16xf32>, tensor<3x6x8xf32>, tensor<3x6x8xf32>)
  %4 = tg.reshape %3#0 {tg.layer = 0 : i64} : (tensor<3x6x16xf32>) -> tensor<3x6x4x4xf32>
  %5 = tg.transpose %4 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x6x4x4xf32>) -> tensor<3x4x6x4xf32>
  %6 = tg.reshape %3#1 {tg.layer = 0 : i64} : (tensor<3x6x8xf32>) -> tensor<3x6x2x4xf32>
  %7 = tg.transpose %6 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x6x2x4xf32>) -> tensor<3x2x6x4xf32>
  %8 = tg.reshape %3#2 {tg.layer = 0 : i64} : (tensor<3x6x8xf32>) -> tensor<3x6x2x4xf32>
  %9 = tg.transpose %8 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x6x2x4xf32>) -> tensor<3x2x6x4xf32>
  %10 = tg.reshape %5 {tg.layer = 0 : i64} : (tensor<3x4x6x4xf32>) -> tensor<3x2x12x4xf32>
  %11 = tg.matmul %10, %7 {alpha = 5.000000e-01 : f32, tg.layer = 0 : i64, transpose_b = true} : (tensor<3x2x12x4xf32>, tensor<3x2x6x4xf32>) -> tensor<3x2x12x6xf32>
  %12 = tg.reshape %11 {tg.layer = 0 : i64} : (tensor<3x2x12x6xf32>) -> tensor<3x2x2x6x6xf32>
  %13 = tg.causal_mask %12 {tg.layer = 0 : i64} : (tensor<3x2x2x6x6xf32>) -> tensor<3x2x2x6x6xf32>
  %14 = tg.softmax %13 {tg.layer = 0 : i64} : (tensor<3x2x2x6x6xf32>) -> tensor<3x2x2x6x6xf32>
  %15 = tg.reshape %14 {tg.layer = 0 : i64} : (tensor<3x2x2x6x6xf32>) -> tensor<3x2x12x6xf32>
  %16 = tg.matmul %15, %9 {tg.layer = 0 : i64} : (tensor<3x2x12x6xf32>, tensor<3x2x6x4xf32>) -> tensor<3x2x12x4xf32>
  %17 = tg.reshape %16 {tg.layer = 0 : i64} : (tensor<3x2x12x4xf32>) -> tensor<3x4x6x4xf32>
  %18 = tg.transpose %17 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x4x6x4xf32>) -> tensor<3x6x4x4xf32>
  %19 = tg.reshape %18 {tg.layer = 0 : i64} : (tensor<3x6x4x4xf32>) -> tensor<3x6x16xf32>
  %20 = tg.matmul %19, %wo {tg.layer = 0 : i64} : (tensor<3x6x16xf32>, tensor<16x16xf32>) -> tensor<3x6x16xf32>
  return %20 : tensor<3x6x16xf32>
}

// -----

// Multi-query (Hkv = 1, G = 4, hd = 8) with a sliding window of 2: the window and the
// scores' alpha are carried over.
// CHECK-LABEL: func.func @mqa_window
// CHECK-NOT:  tg.split
// CHECK-NOT:  tg.transpose
// CHECK-NOT:  tg.reshape
// CHECK:      %[[O:.*]], %{{.*}} = tg.attention_qkv %arg0 {heads = 4 : i64, kv_heads = 1 : i64, scale = 0.353553385 : f32, tg.layer = 0 : i64, window = 2 : i64} : (tensor<3x6x48xf32>) -> (tensor<3x6x32xf32>, tensor<3x4x6xf32>)
// CHECK-NEXT: %[[Y:.*]] = tg.matmul %[[O]], %arg1
// CHECK-NEXT: return %[[Y]]
// UNPACKED-LABEL: func.func @mqa_window
// UNPACKED-NOT: tg.causal_mask
// UNPACKED-NOT: tg.softmax
// UNPACKED:     tg.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 0.353553385 : f32, tg.layer = 0 : i64, window = 2 : i64} : (tensor<3x4x6x8xf32>, tensor<3x1x6x8xf32>, tensor<3x1x6x8xf32>) -> (tensor<3x4x6x8xf32>, tensor<3x4x6xf32>)
// UNPACKED-NOT: tg.causal_mask
// UNPACKED-NOT: tg.softmax
// UNPACKED-NOT: tg.attention_qkv
// UNPACKED:     return
func.func @mqa_window(%x: tensor<3x6x48xf32>, %wo: tensor<32x32xf32>) -> tensor<3x6x32xf32> {
  %3:3 = tg.split %x {axis = 2 : i64, tg.layer = 0 : i64} : (tensor<3x6x48xf32>) -> (tensor<3x6x32xf32>, tensor<3x6x8xf32>, tensor<3x6x8xf32>)
  %4 = tg.reshape %3#0 {tg.layer = 0 : i64} : (tensor<3x6x32xf32>) -> tensor<3x6x4x8xf32>
  %5 = tg.transpose %4 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x6x4x8xf32>) -> tensor<3x4x6x8xf32>
  %6 = tg.reshape %3#1 {tg.layer = 0 : i64} : (tensor<3x6x8xf32>) -> tensor<3x6x1x8xf32>
  %7 = tg.transpose %6 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x6x1x8xf32>) -> tensor<3x1x6x8xf32>
  %8 = tg.reshape %3#2 {tg.layer = 0 : i64} : (tensor<3x6x8xf32>) -> tensor<3x6x1x8xf32>
  %9 = tg.transpose %8 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x6x1x8xf32>) -> tensor<3x1x6x8xf32>
  %10 = tg.reshape %5 {tg.layer = 0 : i64} : (tensor<3x4x6x8xf32>) -> tensor<3x1x24x8xf32>
  %11 = tg.matmul %10, %7 {alpha = 0.353553385 : f32, tg.layer = 0 : i64, transpose_b = true} : (tensor<3x1x24x8xf32>, tensor<3x1x6x8xf32>) -> tensor<3x1x24x6xf32>
  %12 = tg.reshape %11 {tg.layer = 0 : i64} : (tensor<3x1x24x6xf32>) -> tensor<3x1x4x6x6xf32>
  %13 = tg.causal_mask %12 {tg.layer = 0 : i64, window = 2 : i64} : (tensor<3x1x4x6x6xf32>) -> tensor<3x1x4x6x6xf32>
  %14 = tg.softmax %13 {tg.layer = 0 : i64} : (tensor<3x1x4x6x6xf32>) -> tensor<3x1x4x6x6xf32>
  %15 = tg.reshape %14 {tg.layer = 0 : i64} : (tensor<3x1x4x6x6xf32>) -> tensor<3x1x24x6xf32>
  %16 = tg.matmul %15, %9 {tg.layer = 0 : i64} : (tensor<3x1x24x6xf32>, tensor<3x1x6x8xf32>) -> tensor<3x1x24x8xf32>
  %17 = tg.reshape %16 {tg.layer = 0 : i64} : (tensor<3x1x24x8xf32>) -> tensor<3x4x6x8xf32>
  %18 = tg.transpose %17 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<3x4x6x8xf32>) -> tensor<3x6x4x8xf32>
  %19 = tg.reshape %18 {tg.layer = 0 : i64} : (tensor<3x6x4x8xf32>) -> tensor<3x6x32xf32>
  %20 = tg.matmul %19, %wo {tg.layer = 0 : i64} : (tensor<3x6x32xf32>, tensor<32x32xf32>) -> tensor<3x6x32xf32>
  return %20 : tensor<3x6x32xf32>
}

// -----

// The grouped probabilities have a second use (returned): fusing would lose them, so the
// grouped chain stays as it is (in both modes).
// CHECK-LABEL: func.func @gqa_softmax_second_use
// CHECK-NOT:  tg.attention
// CHECK:      tg.matmul {{.*}}transpose_b = true
// CHECK:      tg.causal_mask
// CHECK:      %[[P:.*]] = tg.softmax
// CHECK:      tg.matmul
// CHECK:      return {{.*}}, %[[P]]
// UNPACKED-LABEL: func.func @gqa_softmax_second_use
// UNPACKED-NOT: tg.attention
// UNPACKED:     tg.softmax
// UNPACKED:     return
func.func @gqa_softmax_second_use(%q: tensor<1x4x6x4xf32>, %k: tensor<1x2x6x4xf32>, %v: tensor<1x2x6x4xf32>) -> (tensor<1x4x6x4xf32>, tensor<1x2x2x6x6xf32>) {
  %10 = tg.reshape %q : (tensor<1x4x6x4xf32>) -> tensor<1x2x12x4xf32>
  %11 = tg.matmul %10, %k {alpha = 5.000000e-01 : f32, transpose_b = true} : (tensor<1x2x12x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x12x6xf32>
  %12 = tg.reshape %11 : (tensor<1x2x12x6xf32>) -> tensor<1x2x2x6x6xf32>
  %13 = tg.causal_mask %12 : (tensor<1x2x2x6x6xf32>) -> tensor<1x2x2x6x6xf32>
  %14 = tg.softmax %13 : (tensor<1x2x2x6x6xf32>) -> tensor<1x2x2x6x6xf32>
  %15 = tg.reshape %14 : (tensor<1x2x2x6x6xf32>) -> tensor<1x2x12x6xf32>
  %16 = tg.matmul %15, %v : (tensor<1x2x12x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x12x4xf32>
  %17 = tg.reshape %16 : (tensor<1x2x12x4xf32>) -> tensor<1x4x6x4xf32>
  return %17, %14 : tensor<1x4x6x4xf32>, tensor<1x2x2x6x6xf32>
}

// -----

// A grouped mask that fills with 0.0 instead of -inf is not causal attention.
// CHECK-LABEL: func.func @gqa_mask_zero
// CHECK-NOT:  tg.attention
// CHECK:      tg.causal_mask %{{.*}} {masked_value = 0.000000e+00 : f32}
// CHECK:      tg.softmax
// UNPACKED-LABEL: func.func @gqa_mask_zero
// UNPACKED-NOT: tg.attention
// UNPACKED:     tg.softmax
func.func @gqa_mask_zero(%q: tensor<1x4x6x4xf32>, %k: tensor<1x2x6x4xf32>, %v: tensor<1x2x6x4xf32>) -> tensor<1x4x6x4xf32> {
  %10 = tg.reshape %q : (tensor<1x4x6x4xf32>) -> tensor<1x2x12x4xf32>
  %11 = tg.matmul %10, %k {alpha = 5.000000e-01 : f32, transpose_b = true} : (tensor<1x2x12x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x12x6xf32>
  %12 = tg.reshape %11 : (tensor<1x2x12x6xf32>) -> tensor<1x2x2x6x6xf32>
  %13 = tg.causal_mask %12 {masked_value = 0.0 : f32} : (tensor<1x2x2x6x6xf32>) -> tensor<1x2x2x6x6xf32>
  %14 = tg.softmax %13 : (tensor<1x2x2x6x6xf32>) -> tensor<1x2x2x6x6xf32>
  %15 = tg.reshape %14 : (tensor<1x2x2x6x6xf32>) -> tensor<1x2x12x6xf32>
  %16 = tg.matmul %15, %v : (tensor<1x2x12x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x12x4xf32>
  %17 = tg.reshape %16 : (tensor<1x2x12x4xf32>) -> tensor<1x4x6x4xf32>
  return %17 : tensor<1x4x6x4xf32>
}

// -----

// Views that do not group the query heads per kv head ([1, 1, 2, 4, 4] scores from a
// [1, 1, 16, 2] product): not attention, left alone.
// CHECK-LABEL: func.func @gqa_bad_view
// CHECK-NOT:  tg.attention
// CHECK:      tg.softmax
// UNPACKED-LABEL: func.func @gqa_bad_view
// UNPACKED-NOT: tg.attention
// UNPACKED:     tg.softmax
func.func @gqa_bad_view(%q: tensor<1x8x2x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %a = tg.reshape %q : (tensor<1x8x2x4xf32>) -> tensor<1x1x16x4xf32>
  %s = tg.matmul %a, %k {alpha = 0.5 : f32, transpose_b = true} : (tensor<1x1x16x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x16x2xf32>
  %sv = tg.reshape %s : (tensor<1x1x16x2xf32>) -> tensor<1x1x2x4x4xf32>
  %m = tg.causal_mask %sv : (tensor<1x1x2x4x4xf32>) -> tensor<1x1x2x4x4xf32>
  %p = tg.softmax %m : (tensor<1x1x2x4x4xf32>) -> tensor<1x1x2x4x4xf32>
  %pv = tg.reshape %p : (tensor<1x1x2x4x4xf32>) -> tensor<1x1x16x2xf32>
  %o = tg.matmul %pv, %v : (tensor<1x1x16x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x16x4xf32>
  %r = tg.reshape %o : (tensor<1x1x16x4xf32>) -> tensor<1x8x2x4xf32>
  return %r : tensor<1x8x2x4xf32>
}
