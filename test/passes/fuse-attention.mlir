// RUN: tg-opt %s -tg-fuse-attention -split-input-file | FileCheck %s
// (No -mlir-pass-statistics check of num-fused: the system LLVM 19 is built without
// LLVM_ENABLE_STATS, so every statistic report is empty, even -cse's.)

// Plain causal attention: the whole chain becomes one tg.attention (window 0, the
// scale taken from the q.k^T matmul's alpha).
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:.*]]: tensor<2x2x4x8xf32>, %[[K:.*]]: tensor<2x2x4x8xf32>, %[[V:.*]]: tensor<2x2x4x8xf32>)
// CHECK: %[[O:.*]], %{{.*}} = tg.attention %[[Q]], %[[K]], %[[V]] {scale = 3.535500e-01 : f32}
// CHECK-SAME: -> (tensor<2x2x4x8xf32>, tensor<2x2x4xf32>)
// CHECK-NOT: tg.matmul
// CHECK-NOT: tg.causal_mask
// CHECK-NOT: tg.softmax
// CHECK: return %[[O]]
func.func @causal(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.35355 : f32} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %m = tg.causal_mask %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tg.softmax %m : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// Sliding window: the mask's window is carried over.
// CHECK-LABEL: func.func @window
// CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32, window = 4 : i64}
// CHECK-NOT: tg.softmax
func.func @window(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.125 : f32} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x8xf32>
  %m = tg.causal_mask %s {window = 4 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = tg.softmax %m : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// The probabilities have a second use: fusing would lose them, so nothing changes.
// CHECK-LABEL: func.func @softmax_second_use
// CHECK-NOT: tg.attention
// CHECK: tg.matmul {{.*}}transpose_b = true
// CHECK: tg.causal_mask
// CHECK: %[[P:.*]] = tg.softmax
// CHECK: %[[O:.*]] = tg.matmul %[[P]], %{{.*}} :
// CHECK: return %[[O]], %[[P]]
func.func @softmax_second_use(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) {
  %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.5 : f32} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = tg.causal_mask %s : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = tg.softmax %m : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o, %p : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
}

// -----

// A mask that fills with 0.0 instead of -inf is not causal attention.
// CHECK-LABEL: func.func @mask_zero
// CHECK-NOT: tg.attention
// CHECK: tg.causal_mask %{{.*}} {masked_value = 0.000000e+00 : f32}
// CHECK: tg.softmax
// CHECK: tg.matmul
func.func @mask_zero(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.5 : f32} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = tg.causal_mask %s {masked_value = 0.0 : f32} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = tg.softmax %m : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}

// -----

// q.k without transpose_b is not q.k^T.
// CHECK-LABEL: func.func @no_transpose_b
// CHECK-NOT: tg.attention
// CHECK: tg.matmul %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f32} :
// CHECK: tg.causal_mask
// CHECK: tg.softmax
// CHECK: tg.matmul
func.func @no_transpose_b(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %s = tg.matmul %q, %k {alpha = 0.5 : f32} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = tg.causal_mask %s : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = tg.softmax %m : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}

// -----

// Rank-3 q (no head axis): tg.attention wants [B, H, T, hd], so nothing changes.
// CHECK-LABEL: func.func @rank3
// CHECK-NOT: tg.attention
// CHECK: tg.matmul {{.*}}transpose_b = true
// CHECK: tg.causal_mask
// CHECK: tg.softmax
// CHECK: tg.matmul
func.func @rank3(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.5 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %m = tg.causal_mask %s : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = tg.softmax %m : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
