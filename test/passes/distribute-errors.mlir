// Diagnostics of tg-distribute and of tg.all_reduce_grads.
// RUN: rm -rf %t && split-file %s %t
// RUN: tg-opt %t/no-step.mlir -tg-distribute=ranks=2 -verify-diagnostics
// RUN: tg-opt %t/twice.mlir -tg-distribute=ranks=2 -verify-diagnostics
// RUN: tg-opt %t/ranks.mlir -tg-distribute=ranks=0 -verify-diagnostics
// RUN: tg-opt %t/ranks.mlir -tg-distribute=ranks=-3 -verify-diagnostics
// RUN: not tg-opt %t/zero.mlir -tg-distribute="ranks=2 zero=5" 2>&1 | FileCheck %s --check-prefix=ZERO5
// RUN: not tg-opt %t/zero.mlir -tg-distribute="ranks=2 zero=-1" 2>&1 | FileCheck %s --check-prefix=ZEROM
// ZERO5: error: tg-distribute: zero must be 0, 1, 2 or 3, got 5{{$}}
// ZEROM: error: tg-distribute: zero must be 0, 1, 2 or 3, got -1{{$}}
// ZeRO-2/3 need the micro-step, and a gradient for every parameter.
// RUN: tg-opt %t/zero.mlir -tg-distribute="ranks=2 zero=2" -verify-diagnostics
// RUN: tg-opt %t/no-grad.mlir -tg-distribute="ranks=2 zero=3" -verify-diagnostics
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

// -----

func.func @scatter_one_rank(%w: tensor<8xf32> {tg.param = "w"}) {
  // expected-error @below {{'tg.reduce_scatter_grad' op ranks must be >= 2 (one rank has nothing to scatter), got 1}}
  tg.reduce_scatter_grad %w, %w {ranks = 1 : i64} : tensor<8xf32>
  return
}

// -----

func.func @scatter_not_a_param(%w: tensor<8xf32> {tg.param = "w"}) {
  %g = tg.gelu %w : (tensor<8xf32>) -> tensor<8xf32>
  // expected-error @below {{'tg.reduce_scatter_grad' op param must be a function argument (a parameter)}}
  tg.reduce_scatter_grad %g, %w {ranks = 2 : i64} : tensor<8xf32>
  return
}

// -----

func.func @gather_one_rank(%w: tensor<8xf32> {tg.param = "w"}) -> tensor<8xf32> {
  // expected-error @below {{'tg.gather_param' op ranks must be >= 2 (one rank holds every parameter whole), got 1}}
  %x = tg.gather_param %w {ranks = 1 : i64} : tensor<8xf32> -> tensor<8xf32>
  return %x : tensor<8xf32>
}

// -----

func.func @gather_not_a_param(%w: tensor<8xf32> {tg.param = "w"}) -> tensor<8xf32> {
  %g = tg.gelu %w : (tensor<8xf32>) -> tensor<8xf32>
  // expected-error @below {{'tg.gather_param' op source must be a function argument (a parameter)}}
  %x = tg.gather_param %g {ranks = 2 : i64} : tensor<8xf32> -> tensor<8xf32>
  return %x : tensor<8xf32>
}

// -----

func.func @gather_unmarked_cast(%w: tensor<8xf32> {tg.param = "w"}) -> tensor<8xbf16> {
  %c = tg.cast %w : (tensor<8xf32>) -> tensor<8xbf16>
  // expected-error @below {{'tg.gather_param' op source must be a parameter or its working copy (a tg.cast marked tg.working_copy); this tg.cast is not marked}}
  %x = tg.gather_param %c {ranks = 2 : i64} : tensor<8xbf16> -> tensor<8xbf16>
  return %x : tensor<8xbf16>
}

// -----

func.func @gather_type(%w: tensor<8xf32> {tg.param = "w"}) -> tensor<4xf32> {
  // expected-error @below {{'tg.gather_param' op result}}
  %x = tg.gather_param %w {ranks = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
  return %x : tensor<4xf32>
}

//--- zero.mlir
// expected-error @+1 {{tg-distribute: zero=2 needs func.func @micro_step (run it after tg-autodiff)}}
module {
  func.func @optimizer_step(%w: tensor<8xf32> {tg.param = "w"}) {
    return
  }
}

//--- no-grad.mlir
module {
  // expected-error @+1 {{tg-distribute: zero=3 shards the gradients, but parameter "frozen" has no tg.accumulate_grad in @micro_step}}
  func.func @micro_step(%w: tensor<8xf32> {tg.param = "w"}, %f: tensor<8xf32> {tg.param = "frozen"}) -> tensor<8xf32> {
    tg.accumulate_grad %w, %w : tensor<8xf32>
    return %f : tensor<8xf32>
  }
  func.func @optimizer_step(%w: tensor<8xf32> {tg.param = "w"}, %f: tensor<8xf32> {tg.param = "frozen"}) {
    return
  }
}
