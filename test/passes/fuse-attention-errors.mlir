// RUN: tg-opt %s -tg-fuse-attention -split-input-file -verify-diagnostics | FileCheck %s
// tg-fuse-attention emits no diagnostics of its own. This file checks (1) that the
// verifier, which runs on the pass's input and output, rejects tg.attention forms the
// pass can never build (it always sets causal = true and copies a window >= 0), and
// (2) that a fused chain comes out as valid IR (no diagnostics expected).

func.func @window_without_causal(%q: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'tg.attention' op a sliding window needs causal = true}}
  %o, %lse = tg.attention %q, %q, %q {causal = false, window = 2 : i64, scale = 0.5 : f32} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4xf32>)
  return %o : tensor<1x1x4x4xf32>
}

// -----

func.func @negative_window(%q: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'tg.attention' op window must be >= 0, got -1}}
  %o, %lse = tg.attention %q, %q, %q {window = -1 : i64, scale = 0.5 : f32} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4xf32>)
  return %o : tensor<1x1x4x4xf32>
}

// -----

// The pass fuses this chain; the resulting tg.attention verifies (no diagnostics).
// CHECK-LABEL: func.func @fused_is_valid
// CHECK: tg.attention {{.*}} {scale = 5.000000e-01 : f32, window = 3 : i64}
func.func @fused_is_valid(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %s = tg.matmul %q, %k {transpose_b = true, alpha = 0.5 : f32} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x8xf32>
  %m = tg.causal_mask %s {window = 3 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = tg.softmax %m : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
