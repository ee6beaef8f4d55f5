// Input of autodiff-errors.mlir, run with -tg-autodiff="grad-accum=0".
// expected-error @+1 {{tg-autodiff: grad-accum must be >= 1, got 0}}
func.func @forward(%w: tensor<2x4x16xf32> {tg.param = "w"}, %ids: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %loss = tg.cross_entropy %w, %ids : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
