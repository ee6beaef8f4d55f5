// Diagnostics of tg-rematerialize. The cases need different pass options, so split-file
// cuts this file into parts (`//--- NAME`); each part runs with -verify-diagnostics
// (and -split-input-file where it holds several modules).
// RUN: rm -rf %t && split-file %s %t
//
// Structural errors, whatever the policy (other than none):
// RUN: tg-opt %t/structure.mlir -tg-rematerialize=policy=layer -split-input-file -verify-diagnostics
// RUN: tg-opt %t/structure.mlir -tg-rematerialize=policy=selective -split-input-file -verify-diagnostics
// RUN: tg-opt %t/structure.mlir -tg-rematerialize="policy=budget budget-bytes=1" -split-input-file -verify-diagnostics
//
// Bad options:
// RUN: not tg-opt %t/unknown-policy.mlir -tg-rematerialize=policy=Layer 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: for the --policy option: 'Layer' is not one of none, gelu, layer, layer-attn, selective, budget
// RUN: tg-opt %t/budget-zero.mlir -tg-rematerialize="policy=budget budget-bytes=0" -verify-diagnostics
// RUN: tg-opt %t/budget-zero.mlir -tg-rematerialize="policy=budget budget-bytes=-4096" -verify-diagnostics
// plan-after must parse as a pass pipeline (checked when the budget search starts).
// RUN: not tg-opt %t/budget.mlir -tg-autodiff -cse -tg-rematerialize="policy=budget budget-bytes=8452 plan-after=tg-fuze" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PLANAFTER
// PLANAFTER: error: tg-rematerialize: plan-after 'tg-fuze' is no pass pipeline: {{.*}}'tg-fuze' does not refer to a registered pass or pass pipeline{{$}}
// The pipeline refuses an unknown word before any pass runs.
// RUN: not tg-opt %t/unknown-policy.mlir -tg-pipeline="checkpointing=Layer" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: for the --checkpointing option: 'Layer' is not one of none, gelu, layer, layer-attn, selective, budget
//
// A budget nothing fits names the smallest arena any candidate reaches: 8452 bytes for
// budget.mlir (one byte less is refused, exactly that many is accepted and planned).
// RUN: tg-opt %t/budget.mlir -tg-autodiff -cse -tg-rematerialize="policy=budget budget-bytes=8451" -verify-diagnostics
// RUN: tg-opt %t/budget.mlir -tg-autodiff -cse -tg-rematerialize="policy=budget budget-bytes=8452" \
// RUN:   -tg-plan-memory | FileCheck %s --check-prefix=FITS
// FITS: module attributes {tg.plan = {arena_bytes = 8452 : i64
// FITS-SAME: tg.remat = {extra_flops = 336 : i64, mix = "0 layer, 1 selective, 1 none", policy = #tg.checkpointing<budget>, recomputed_ops = 2 : i64

//--- structure.mlir

// Before tg-autodiff there is nothing to checkpoint.
// expected-error @+1 {{tg-rematerialize: no func.func @micro_step (run it after tg-autodiff)}}
module {
  func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = tg.gelu %x {tg.layer = 0 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// A declaration is not a micro-step either.
// expected-error @+1 {{tg-rematerialize: no func.func @micro_step (run it after tg-autodiff)}}
module {
  func.func private @micro_step(tensor<2x8xf32>) -> tensor<2x8xf32>
}

// -----

// The pass runs once: a module that already records tg.remat is refused.
// expected-error @+1 {{tg-rematerialize: the module is already rematerialized}}
module attributes {tg.remat = {extra_flops = 0 : i64, policy = #tg.checkpointing<none>, recomputed_ops = 0 : i64, step_flops = 16 : i64}} {
  func.func @micro_step(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = tg.gelu %x {tg.layer = 0 : i64, tg.phase = "forward"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// No op carries tg.layer (hand-written IR, not from the tgc frontend): no layer to
// checkpoint.
module {
  // expected-error @+1 {{tg-rematerialize: no op carries tg.layer (build the module with the tgc frontend): nothing to checkpoint}}
  func.func @micro_step(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = tg.gelu %x {tg.phase = "forward"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %g = tg.gelu_grad %x, %y {tg.phase = "backward"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    return %g : tensor<2x8xf32>
  }
}

//--- unknown-policy.mlir

// Bad options are reported at the option, before the module is read (this one has no
// @micro_step). Policies are case-sensitive.
module {
  func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = tg.gelu %x {tg.layer = 0 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

//--- budget-zero.mlir

// Reported before the module is looked at (this @micro_step has no tg.layer either).
// expected-error @+1 {{tg-rematerialize: policy budget needs budget-bytes > 0}}
module {
  func.func @micro_step(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = tg.gelu %x {tg.phase = "forward"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

//--- budget.mlir

// Two layers (layer norm -> GEMM -> GELU -> GEMM -> residual add), B x T = 2 x 4, D = 8,
// F = 32, f32. Arenas: no recomputation 9220, layer 0 selective 8452, both selective or
// both recomputed 8452: the smallest is 8452 (the first candidate to reach it).
// The error is reported at @micro_step, which tg-autodiff builds at @forward's location.
// expected-error @below {{tg-rematerialize: no checkpointing fits a budget of 8451 bytes of arena; the smallest planned arena is 8452 bytes (1 layer selective): raise the budget, lower the micro-batch (training.batch_size) and raise training.grad_accum, or use a lower precision}}
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"},
                   %g0: tensor<8xf32> {tg.param = "l0.ln.g"}, %b0: tensor<8xf32> {tg.param = "l0.ln.b"},
                   %w0: tensor<8x32xf32> {tg.param = "l0.fc.w"}, %v0: tensor<32x8xf32> {tg.param = "l0.proj.w"},
                   %g1: tensor<8xf32> {tg.param = "l1.ln.g"}, %b1: tensor<8xf32> {tg.param = "l1.ln.b"},
                   %w1: tensor<8x32xf32> {tg.param = "l1.fc.w"}, %v1: tensor<32x8xf32> {tg.param = "l1.proj.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x0 = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %y0, %m0, %r0 = tg.layer_norm %x0, %g0, %b0 {tg.layer = 0 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %h0 = tg.matmul %y0, %w0 {tg.layer = 0 : i64} : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %a0 = tg.gelu %h0 {tg.layer = 0 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %p0 = tg.matmul %a0, %v0 {tg.layer = 0 : i64} : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32>
  %x1 = tg.add %x0, %p0 {tg.layer = 0 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y1, %m1, %r1 = tg.layer_norm %x1, %g1, %b1 {tg.layer = 1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %h1 = tg.matmul %y1, %w1 {tg.layer = 1 : i64} : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %a1 = tg.gelu %h1 {tg.layer = 1 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %p1 = tg.matmul %a1, %v1 {tg.layer = 1 : i64} : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32>
  %x2 = tg.add %x1, %p1 {tg.layer = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = tg.matmul %x2, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %l, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
