// Diagnostics of tg-plan-memory's gradients option (run from plan-memory-errors.mlir).

// gradients=arena with two micro-steps per optimizer step: the slots carry gradients from
// one micro-step to the next, so they cannot live in the arena.
// expected-error @+1 {{tg-plan-memory: gradients=arena needs @micro_step and @optimizer_step, tg.grad_accum = 1 (or absent), tg.ranks = 1, no checkpointing budget and a tg.accumulate_grad for every parameter (use gradients=auto or persistent)}}
module attributes {tg.grad_accum = 2 : i64} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}, %g: tensor<4xf32>) {
    tg.accumulate_grad %w, %g : tensor<4xf32>
    return
  }
  func.func @optimizer_step(%w: tensor<4xf32> {tg.param = "w"}) {
    return
  }
}

// -----

// A parameter nothing writes a gradient of (no tg.accumulate_grad of "v").
// expected-error @+1 {{tg-plan-memory: gradients=arena needs}}
module {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}, %v: tensor<4xf32> {tg.param = "v"},
                        %g: tensor<4xf32>) {
    tg.accumulate_grad %w, %g : tensor<4xf32>
    return
  }
  func.func @optimizer_step(%w: tensor<4xf32> {tg.param = "w"}, %v: tensor<4xf32> {tg.param = "v"}) {
    return
  }
}
