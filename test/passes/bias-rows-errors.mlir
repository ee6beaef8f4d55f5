// RUN: tg-opt %s -tg-bias-rows -split-input-file -verify-diagnostics
// RUN: tg-opt %S/Inputs/bias-rows-plan-errors.mlir -tg-plan-memory -verify-diagnostics
// Diagnostics of tg-bias-rows and of what tg-plan-memory reads from it.

// A module marked once is not marked again (the pairs would be laid out twice).
// expected-error @+1 {{tg-bias-rows: the module is already marked (tg.bias_rows)}}
module attributes {tg.bias_rows = []} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}
