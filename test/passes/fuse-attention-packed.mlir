// tg-fuse-attention's packed form: an attention whose q, k, v are the heads split and
// transposed out of one [B, T, 3D] projection, and whose output is transposed back and
// flattened, becomes tg.attention_qkv on the projection itself (no split, no transposes).
// RUN: tg-opt %s -tg-fuse-attention | FileCheck %s
// RUN: tg-opt %s -tg-fuse-attention=packed=false | FileCheck %s --check-prefix=UNPACKED
// The gradient and the whole step: one tg.attention_qkv_grad writes dqkv in the packed layout.
// RUN: tg-opt %s -tg-fuse-attention -tg-autodiff | FileCheck %s --check-prefix=GRAD
// Mixed precision keeps it one op: bf16 qkv and out, f32 lse.
// RUN: tg-opt %s -tg-fuse-attention -tg-mixed-precision=precision=bf16-mixed | FileCheck %s --check-prefix=BF16

// B = 2, T = 8, H = 2, hd = 16, D = 32.
func.func @forward(%x: tensor<2x8x32xf32>, %w: tensor<32x96xf32> {tg.param = "w"},
                   %wo: tensor<32x32xf32> {tg.param = "wo"},
                   %t: tensor<2x8xi32> {tg.input = "targets"}) -> tensor<f32> {
  %qkv = tg.matmul %x, %w : (tensor<2x8x32xf32>, tensor<32x96xf32>) -> tensor<2x8x96xf32>
  %s:3 = tg.split %qkv {axis = 2 : i64} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %q0 = tg.reshape %s#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tg.transpose %q0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k0 = tg.reshape %s#1 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %k = tg.transpose %k0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v0 = tg.reshape %s#2 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %v = tg.transpose %v0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %sc = tg.matmul %q, %k {transpose_b = true, alpha = 0.25 : f32} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x8xf32>
  %m = tg.causal_mask %sc {window = 3 : i64} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %p = tg.softmax %m : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %o = tg.matmul %p, %v : (tensor<2x2x8x8xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x8x16xf32>
  %ot = tg.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %of = tg.reshape %ot : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  %y = tg.matmul %of, %wo : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %l = tg.cross_entropy %y, %t : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @forward
// CHECK:      %[[QKV:.*]] = tg.matmul %arg0, %arg1
// CHECK-NEXT: %[[OUT:.*]], %{{.*}} = tg.attention_qkv %[[QKV]] {heads = 2 : i64, scale = 2.500000e-01 : f32, window = 3 : i64} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x2x8xf32>)
// CHECK-NEXT: tg.matmul %[[OUT]], %arg2
// CHECK-NOT:  tg.split
// CHECK-NOT:  tg.transpose

// UNPACKED: tg.split
// UNPACKED: tg.attention %
// UNPACKED-NOT: tg.attention_qkv

// GRAD-LABEL: func.func @micro_step
// GRAD:     %[[QKV:.*]] = tg.matmul
// GRAD:     %[[OUT:.*]], %[[LSE:.*]] = tg.attention_qkv %[[QKV]]
// GRAD:     tg.attention_qkv_grad %[[QKV]], %[[OUT]], %[[LSE]], %{{.*}} {heads = 2 : i64, {{.*}}window = 3 : i64} : (tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<2x2x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
// GRAD-NOT: tg.transpose

// BF16: tg.attention_qkv %{{.*}} : (tensor<2x8x96xbf16>) -> (tensor<2x8x32xbf16>, tensor<2x2x8xf32>)
