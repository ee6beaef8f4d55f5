// RUN: tg-opt %s -tg-autodiff -split-input-file -verify-diagnostics
// RUN: tg-opt %S/Inputs/autodiff-grad-accum-0.mlir -tg-autodiff="grad-accum=0" -verify-diagnostics
// Diagnostics of tg-autodiff (the grad-accum=0 case lives in Inputs/ because pass
// options apply to the whole file).

// expected-error @+1 {{tg-autodiff: no func.func @forward to differentiate}}
module {
  func.func @loss(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-autodiff: @forward must be one block returning a scalar loss}}
func.func @forward(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<4xf32> {
  %y = tg.gelu %w : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{tg-autodiff: @forward must be one block returning a scalar loss}}
func.func @forward(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32>, tensor<f32>) {
  %t = tg.fill {value = 0.0 : f32} : tensor<f32>
  return %t, %t : tensor<f32>, tensor<f32>
}

// -----

// A backward-only op used in the forward pass: it reaches the loss but has no adjoint.
func.func @forward(%w: tensor<2x2x4x4xf32> {tg.param = "w"}, %ids: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  // expected-error @+1 {{'tg.softmax_grad' op is on the path to the loss but has no gradient (does not implement GradientOpInterface)}}
  %s = tg.softmax_grad %w, %w : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %r = tg.reshape %s : (tensor<2x2x4x4xf32>) -> tensor<2x4x8xf32>
  %loss = tg.cross_entropy %r, %ids : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
