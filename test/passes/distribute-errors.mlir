// Diagnostics of tg-distribute and of tg.all_reduce_grads.
// RUN: rm -rf %t && split-file %s %t
// RUN: tg-opt %t/no-step.mlir -tg-distribute=ranks=2 -verify-diagnostics
// RUN: tg-opt %t/twice.mlir -tg-distribute=ranks=2 -verify-diagnostics
// RUN: tg-opt %t/ranks.mlir -tg-distribute=ranks=0 -verify-diagnostics
// RUN: tg-opt %t/ranks.mlir -tg-distribute=ranks=-3 -verify-diagnostics
// RUN: not tg-opt %t/zero.mlir -tg-distribute="ranks=2 zero=2" 2>&1 | FileCheck %s --check-prefix=ZERO2
// RUN: not tg-opt %t/zero.mlir -tg-distribute="ranks=2 zero=5" 2>&1 | FileCheck %s --check-prefix=ZERO5
// ZERO2: error: tg-distribute: zero must be 0 or 1, got 2 (ZeRO-2 and ZeRO-3 are not implemented)
// ZERO5: error: tg-distribute: zero must be 0 or 1, got 5{{$}}
// RUN: tg-opt %t/verifier.mlir -split-input-file -verify-diagnostics
// The pipeline refuses a rank count outside [1, 64] before any pass runs.
// RUN: not tg-opt %t/ranks.mlir -tg-pipeline="ranks=0" 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not tg-opt %t/ranks.mlir -tg-pipeline="ranks=65" 2>&1 | FileCheck %s --check-prefix=PIPELINE65
// PIPELINE: tg-pipeline: ranks must be in [1, 64], got 0
// PIPELINE65: tg-pipeline: ranks must be in [1, 64], got 65

//--- no-step.mlir
// Before tg-autodiff there is no optimizer step to put the all-reduce in.
// expected-error @+1 {{tg-distribute: no func.func @optimizer_step (run it after tg-autodiff)}}
module {
  func.func @forward(%w: tensor<8xf32> {tg.param = "w"}) -> tensor<8xf32> {
    return %w : tensor<8xf32>
  }
}

//--- twice.mlir
// expected-error @+1 {{tg-distribute: the module is already distributed (tg.ranks = 2 : i64); apply the pass once}}
module attributes {tg.ranks = 2 : i64} {
  func.func @optimizer_step(%w: tensor<8xf32> {tg.param = "w"}) {
    tg.all_reduce_grads %w {ranks = 2 : i64} : tensor<8xf32>
    return
  }
}

//--- ranks.mlir
// expected-error @+1 {{tg-distribute: ranks must be >= 1, got}}
module {
  func.func @optimizer_step(%w: tensor<8xf32> {tg.param = "w"}) {
    return
  }
}

//--- verifier.mlir
func.func @one_rank(%w: tensor<8xf32> {tg.param = "w"}) {
  // expected-error @below {{'tg.all_reduce_grads' op ranks must be >= 2 (one rank has nothing to reduce), got 1}}
  tg.all_reduce_grads %w {ranks = 1 : i64} : tensor<8xf32>
  return
}

// -----

func.func @not_a_param(%w: tensor<8xf32> {tg.param = "w"}) {
  %g = tg.gelu %w : (tensor<8xf32>) -> tensor<8xf32>
  // expected-error @below {{'tg.all_reduce_grads' op operand #1 must be a parameter (a function argument with tg.param)}}
  tg.all_reduce_grads %w, %g {ranks = 2 : i64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @input(%w: tensor<8xf32> {tg.param = "w"}, %t: tensor<8xf32> {tg.input = "tokens"}) {
  // expected-error @below {{'tg.all_reduce_grads' op operand #1 must be a parameter (a function argument with tg.param)}}
  tg.all_reduce_grads %w, %t {ranks = 2 : i64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @twice(%w: tensor<8xf32> {tg.param = "w"}) {
  // expected-error @below {{'tg.all_reduce_grads' op operand #1 (parameter "w") is given twice}}
  tg.all_reduce_grads %w, %w {ranks = 2 : i64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @empty() {
  // expected-error @below {{'tg.all_reduce_grads' op needs at least one parameter}}
  "tg.all_reduce_grads"() {ranks = 2 : i64} : () -> ()
  return
}

//--- zero.mlir
module {
  func.func @optimizer_step(%w: tensor<8xf32> {tg.param = "w"}) {
    return
  }
}
