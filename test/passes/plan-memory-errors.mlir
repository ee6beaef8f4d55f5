// RUN: tg-opt %s -tg-plan-memory -split-input-file -verify-diagnostics -allow-unregistered-dialect
// A negative collective-library reserve is refused before the module is looked at.
// RUN: not tg-opt %S/Inputs/plan-memory-unplanned.mlir -tg-plan-memory="comm-bytes=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=COMM
// COMM: error: tg-plan-memory: comm-bytes must be >= 0, got -1
// RUN: tg-opt %S/Inputs/plan-memory-unplanned.mlir -tg-print-memory-plan -verify-diagnostics
// RUN: tg-opt %S/Inputs/plan-memory-gradients-errors.mlir -split-input-file -verify-diagnostics \
// RUN:   -tg-plan-memory="gradients=arena"
// A misspelt gradients value is refused, not read as the default:
// RUN: not tg-opt %S/Inputs/plan-memory-gradients-errors.mlir -split-input-file \
// RUN:   -tg-plan-memory="gradients=arenas" 2>&1 | FileCheck %s --check-prefix=SPELL
// SPELL: error: tg-plan-memory: gradients must be persistent, arena or auto, got 'arenas'
// RUN: not tg-opt %S/Inputs/plan-memory-gradients-errors.mlir -split-input-file \
// RUN:   -tg-plan-memory="attention-impl=cudnn9" 2>&1 | FileCheck %s --check-prefix=IMPL
// IMPL: error: tg-plan-memory: attention-impl must be own or cudnn, got 'cudnn9'
// RUN: not tg-opt %S/Inputs/plan-memory-gradients-errors.mlir \
// RUN:   -tg-pipeline="attention-impl=fast" 2>&1 | FileCheck %s --check-prefix=PIPE
// PIPE: tg-pipeline: unknown attention-impl 'fast' (expected auto, own or cudnn)
// Diagnostics of tg-plan-memory (and of tg-print-memory-plan on an unplanned module,
// in Inputs/ because it needs a different pipeline).

// expected-error @+1 {{tg-plan-memory: no @micro_step or @eval_step (run -tg-autodiff first)}}
module {
  func.func @forward(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// Parameters are f32, bf16 or f16 (values, gradients) with float moments.
// expected-error @+1 {{tg-plan-memory: parameter "w" needs a static shape and f32, bf16 or f16 value and moment types, got 'tensor<4xf64>' and moments 'f32'}}
func.func @micro_step(%w: tensor<4xf64> {tg.param = "w"}) -> tensor<4xf64> {
  return %w : tensor<4xf64>
}

// -----

// expected-error @+1 {{tg-plan-memory: parameter "w" needs a static shape and f32, bf16 or f16 value and moment types, got 'tensor<4xbf16>' and moments 'i32'}}
func.func @micro_step(%w: tensor<4xbf16> {tg.param = "w", tg.moment_type = i32}) -> tensor<4xbf16> {
  return %w : tensor<4xbf16>
}

// -----

// A tensor without a known byte size cannot be placed in the arena. tg ops verify
// static f32/bf16/f16/i32 types, so only a foreign op can get here.
func.func @eval_step(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<4xf64> {
  // expected-error @+1 {{'test.op' op result #0 needs a static shape and a known element type to be planned}}
  %y = "test.op"() : () -> tensor<4xf64>
  return %y : tensor<4xf64>
}
