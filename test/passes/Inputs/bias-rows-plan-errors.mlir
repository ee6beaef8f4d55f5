// tg-plan-memory refuses a tg.bias_rows entry that is not a [weight, bias] pair of
// parameters (bias-rows-errors.mlir runs it).
// expected-error @+1 {{tg-plan-memory: tg.bias_rows names no [weight, bias] pair of parameters: ["w", "nope"]}}
module attributes {tg.bias_rows = [["w", "nope"]]} {
  func.func @micro_step(%w: tensor<4x4xf32> {tg.param = "w"}) -> tensor<4x4xf32> {
    return %w : tensor<4x4xf32>
  }
}
