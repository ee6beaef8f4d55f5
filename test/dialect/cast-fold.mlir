// RUN: tg-opt %s -canonicalize -split-input-file | FileCheck %s
// Folds of tg.cast (TgOps.cpp): a cast to its own type is its input, and a cast back
// through a type that holds every value of the original (bf16 -> f32 -> bf16,
// f16 -> f32 -> f16) is the original. Round trips that round are kept.

// CHECK-LABEL: func.func @widen_narrow_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xbf16>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]] : tensor<2x8xbf16>
func.func @widen_narrow_bf16(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  %w = tg.cast %x : (tensor<2x8xbf16>) -> tensor<2x8xf32>
  %n = tg.cast %w : (tensor<2x8xf32>) -> tensor<2x8xbf16>
  return %n : tensor<2x8xbf16>
}

// -----

// CHECK-LABEL: func.func @widen_narrow_f16
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf16>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]] : tensor<2x8xf16>
func.func @widen_narrow_f16(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %w = tg.cast %x : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %n = tg.cast %w : (tensor<2x8xf32>) -> tensor<2x8xf16>
  return %n : tensor<2x8xf16>
}

// -----

// CHECK-LABEL: func.func @identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[Y:.*]]: tensor<4xbf16>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]], %[[Y]] : tensor<2x8xf32>, tensor<4xbf16>
func.func @identity(%x: tensor<2x8xf32>, %y: tensor<4xbf16>) -> (tensor<2x8xf32>, tensor<4xbf16>) {
  %a = tg.cast %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = tg.cast %y : (tensor<4xbf16>) -> tensor<4xbf16>
  return %a, %b : tensor<2x8xf32>, tensor<4xbf16>
}

// -----

// f32 -> bf16 -> f32 rounds: both casts stay.
// CHECK-LABEL: func.func @narrow_widen_kept
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[N:.*]] = tg.cast %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xbf16>
// CHECK-NEXT: %[[W:.*]] = tg.cast %[[N]] : (tensor<2x8xbf16>) -> tensor<2x8xf32>
// CHECK-NEXT: return %[[W]] : tensor<2x8xf32>
func.func @narrow_widen_kept(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %n = tg.cast %x : (tensor<2x8xf32>) -> tensor<2x8xbf16>
  %w = tg.cast %n : (tensor<2x8xbf16>) -> tensor<2x8xf32>
  return %w : tensor<2x8xf32>
}

// -----

// bf16 -> f16 -> bf16 (f16 lacks bf16's range) and f16 -> bf16 -> f16 (bf16 lacks f16's
// mantissa) both round: kept.
// CHECK-LABEL: func.func @low_low_kept
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>, %[[Y:.*]]: tensor<4xf16>)
// CHECK-NEXT: %[[A:.*]] = tg.cast %[[X]] : (tensor<4xbf16>) -> tensor<4xf16>
// CHECK-NEXT: %[[B:.*]] = tg.cast %[[A]] : (tensor<4xf16>) -> tensor<4xbf16>
// CHECK-NEXT: %[[C:.*]] = tg.cast %[[Y]] : (tensor<4xf16>) -> tensor<4xbf16>
// CHECK-NEXT: %[[D:.*]] = tg.cast %[[C]] : (tensor<4xbf16>) -> tensor<4xf16>
// CHECK-NEXT: return %[[B]], %[[D]]
func.func @low_low_kept(%x: tensor<4xbf16>, %y: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xf16>) {
  %a = tg.cast %x : (tensor<4xbf16>) -> tensor<4xf16>
  %b = tg.cast %a : (tensor<4xf16>) -> tensor<4xbf16>
  %c = tg.cast %y : (tensor<4xf16>) -> tensor<4xbf16>
  %d = tg.cast %c : (tensor<4xbf16>) -> tensor<4xf16>
  return %b, %d : tensor<4xbf16>, tensor<4xf16>
}

// -----

// bf16 -> f32 -> f16 is not a round trip (different end type): kept.
// CHECK-LABEL: func.func @widen_to_other
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NEXT: %[[W:.*]] = tg.cast %[[X]] : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK-NEXT: %[[H:.*]] = tg.cast %[[W]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT: return %[[H]]
func.func @widen_to_other(%x: tensor<4xbf16>) -> tensor<4xf16> {
  %w = tg.cast %x : (tensor<4xbf16>) -> tensor<4xf32>
  %h = tg.cast %w : (tensor<4xf32>) -> tensor<4xf16>
  return %h : tensor<4xf16>
}

// -----

// f32 -> bf16 -> f32 -> bf16: the last two undo each other, leaving the one rounding;
// the widened value still has its other use.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[N:.*]] = tg.cast %[[X]] : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT: %[[W:.*]] = tg.cast %[[N]] : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK-NEXT: return %[[N]], %[[W]] : tensor<4xbf16>, tensor<4xf32>
func.func @chain(%x: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %n = tg.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  %w = tg.cast %n : (tensor<4xbf16>) -> tensor<4xf32>
  %n2 = tg.cast %w : (tensor<4xf32>) -> tensor<4xbf16>
  return %n2, %w : tensor<4xbf16>, tensor<4xf32>
}

// -----

// A cast is pure: an unused one is erased.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: tg.cast
// CHECK: return
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = tg.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  return %x : tensor<4xf32>
}
