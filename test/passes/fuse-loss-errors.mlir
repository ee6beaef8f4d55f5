// RUN: tg-opt %s -split-input-file -verify-diagnostics
// RUN: not tg-opt %S/fuse-loss.mlir -split-input-file -tg-fuse-loss=max-logits-bytes=0 2>&1 | FileCheck %s --check-prefix=OPT
// tg-fuse-loss's own diagnostic (a chunk must hold some logits), and the verifier of the op
// it builds, tg.linear_cross_entropy, on forms the pass never makes.

// OPT: error: tg-fuse-loss: max-logits-bytes must be > 0, got 0

func.func @chunk_zero(%x: tensor<2x8x4xf32>, %w: tensor<8x4xf32>, %t: tensor<2x8xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{'tg.linear_cross_entropy' op chunk_rows must be in [1, 16], got 0}}
  %l, %dx, %dw, %sc = tg.linear_cross_entropy %x, %w, %t, %s {chunk_rows = 0 : i64} : (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<152xf32>)
  return
}

// -----

func.func @scratch_too_small(%x: tensor<2x8x4xf32>, %w: tensor<8x4xf32>, %t: tensor<2x8xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{'tg.linear_cross_entropy' op scratch must be f32 [160] (640 bytes), got [152]}}
  %l, %dx, %dw, %sc = tg.linear_cross_entropy %x, %w, %t, %s {chunk_rows = 4 : i64} : (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<152xf32>)
  return
}

// -----

func.func @w_width(%x: tensor<2x8x4xf32>, %w: tensor<8x5xf32>, %t: tensor<2x8xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{'tg.linear_cross_entropy' op w must be [V, 4], got [8x5]}}
  %l, %dx, %dw, %sc = tg.linear_cross_entropy %x, %w, %t, %s {chunk_rows = 4 : i64} : (tensor<2x8x4xf32>, tensor<8x5xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xf32>, tensor<8x5xf32>, tensor<200xf32>)
  return
}

// -----

func.func @dw_type(%x: tensor<2x8x4xbf16>, %w: tensor<8x4xbf16>, %t: tensor<2x8xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{'tg.linear_cross_entropy' op dw must have w's shape and w's element type or f32}}
  %l, %dx, %dw, %sc = tg.linear_cross_entropy %x, %w, %t, %s {chunk_rows = 4 : i64} : (tensor<2x8x4xbf16>, tensor<8x4xbf16>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xbf16>, tensor<8x4xf16>, tensor<200xf32>)
  return
}

// -----

func.func @targets_shape(%x: tensor<2x8x4xf32>, %w: tensor<8x4xf32>, %t: tensor<16xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{'tg.linear_cross_entropy' op targets must have shape [2x8], got [16]}}
  %l, %dx, %dw, %sc = tg.linear_cross_entropy %x, %w, %t, %s {chunk_rows = 4 : i64} : (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<16xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<200xf32>)
  return
}
