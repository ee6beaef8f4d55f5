// RUN: tg-opt %s -tg-mixed-precision -split-input-file -verify-diagnostics
// RUN: tg-opt %s -tg-mixed-precision="precision=fp16-mixed" -split-input-file -verify-diagnostics
//
// Bad options fail before the module is looked at (so every split reports them):
// RUN: not tg-opt %s -tg-mixed-precision="precision=fp8" -split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tg-opt %s -tg-mixed-precision="precision=fp16-mixed loss-scale-init=0" -split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SCALE0
// RUN: not tg-opt %s -tg-mixed-precision="precision=fp16-mixed loss-scale-init=-4" -split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SCALENEG
// 1e39 is finite as a double but +inf as the f32 that tg.loss_scale stores.
// RUN: not tg-opt %s -tg-mixed-precision="precision=fp16-mixed loss-scale-init=1e39" -split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SCALEINF
// RUN: not tg-opt %s -tg-mixed-precision="precision=fp16-mixed loss-scale-growth-interval=0" -split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=GROWTH0
// The loss-scale options only concern fp16-mixed: with bf16-mixed they are ignored and
// each split gives exactly the diagnostics expected below.
// RUN: tg-opt %s -tg-mixed-precision="precision=bf16-mixed loss-scale-init=0" -split-input-file \
// RUN:   -verify-diagnostics

// UNKNOWN: for the --precision option: 'fp8' is not one of fp32, bf16-mixed, fp16-mixed, bf16
// SCALE0: error: tg-mixed-precision: loss-scale-init must be > 0 and finite in f32, and loss-scale-growth-interval >= 1 (got 0.000000e+00 and 2000)
// SCALENEG: error: tg-mixed-precision: loss-scale-init must be > 0 {{.*}} (got -4.000000e+00 and 2000)
// SCALEINF: error: tg-mixed-precision: loss-scale-init must be > 0 {{.*}} (got 1.000000e+39 and 2000)
// GROWTH0: error: tg-mixed-precision: loss-scale-init must be > 0 {{.*}} (got 6.553600e+04 and 0)

// The pass runs once: a module that already has a precision is refused.
// expected-error @below {{tg-mixed-precision: the module already has precision #tg.precision<"bf16-mixed"> (the pass runs once, before tg-autodiff)}}
module attributes {tg.precision = #tg.precision<"bf16-mixed">} {
  func.func @forward(%w: tensor<8x8xf32> {tg.param = "fc.w"}, %x: tensor<2x8xf32>,
                     %targets: tensor<2xi32> {tg.input = "targets"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %loss = tg.cross_entropy %h, %targets : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// No @forward (e.g. run after tg-autodiff renamed it to @eval_step).
// expected-error @below {{tg-mixed-precision: no func.func @forward (run it before tg-autodiff, on the frontend's forward graph)}}
module {
  func.func @eval_step(%w: tensor<8x8xf32> {tg.param = "fc.w"}) -> tensor<8x8xf32> {
    return %w : tensor<8x8xf32>
  }
}

// -----

// A declaration of @forward has no body to rewrite.
// expected-error @below {{tg-mixed-precision: no func.func @forward}}
module {
  func.func private @forward(tensor<8x8xf32> {tg.param = "fc.w"}) -> tensor<f32>
}

// -----

// Parameters are f32 master weights before the pass.
module {
  // expected-error @below {{tg-mixed-precision: parameter "fc.w" must be f32 before the pass, got 'tensor<8x8xbf16>'}}
  func.func @forward(%w: tensor<8x8xbf16> {tg.param = "fc.w"}, %x: tensor<2x8xbf16>,
                     %targets: tensor<2xi32> {tg.input = "targets"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
    %loss = tg.cross_entropy %h, %targets : (tensor<2x8xbf16>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An optimizer op has no precision rule (the pass runs before tg-autodiff).
module {
  func.func @forward(%w: tensor<8x8xf32> {tg.param = "fc.w"}, %x: tensor<2x8xf32>,
                     %targets: tensor<2xi32> {tg.input = "targets"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    // expected-error @below {{'tg.accumulate_grad' op tg-mixed-precision: no precision rule for this op (the pass runs on the forward graph, before tg-autodiff)}}
    tg.accumulate_grad %w, %w : tensor<8x8xf32>
    %loss = tg.cross_entropy %h, %targets : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Nor has a backward op.
module {
  func.func @forward(%w: tensor<8x8xf32> {tg.param = "fc.w"}, %x: tensor<2x8xf32>,
                     %targets: tensor<2xi32> {tg.input = "targets"}) -> tensor<f32> {
    // expected-error @below {{'tg.fill' op tg-mixed-precision: no precision rule for this op}}
    %z = tg.fill {value = 0.0 : f32} : tensor<2x8xf32>
    %h = tg.matmul %z, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %loss = tg.cross_entropy %h, %targets : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Nor an op of another dialect.
module {
  func.func private @helper(tensor<2x8xf32>) -> tensor<2x8xf32>
  func.func @forward(%w: tensor<8x8xf32> {tg.param = "fc.w"}, %x: tensor<2x8xf32>,
                     %targets: tensor<2xi32> {tg.input = "targets"}) -> tensor<f32> {
    // expected-error @below {{'func.call' op tg-mixed-precision: no precision rule for this op}}
    %y = func.call @helper(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %h = tg.matmul %y, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %loss = tg.cross_entropy %h, %targets : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A valid module: no diagnostic (and the pass output verifies).
module {
  func.func @forward(%w: tensor<8x8xf32> {tg.param = "fc.w"}, %x: tensor<2x8xf32>,
                     %targets: tensor<2xi32> {tg.input = "targets"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %loss = tg.cross_entropy %h, %targets : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
