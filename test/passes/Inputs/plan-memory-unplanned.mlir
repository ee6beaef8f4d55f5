// Input of plan-memory-errors.mlir: tg-print-memory-plan without tg-plan-memory first.
// expected-error @+1 {{module has no memory plan (run -tg-plan-memory first)}}
module {
  func.func @eval_step(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}
