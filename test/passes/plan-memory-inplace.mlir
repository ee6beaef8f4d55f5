// RUN: tg-opt %s -tg-autodiff -tg-plan-memory -tg-print-memory-plan -o /dev/null | FileCheck %s
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory -tg-print-memory-plan -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=SHARED
// In-place reuse: an op whose runtime kernel may write over an input takes over that
// input's buffer when it is the input's last reader (cross_entropy_grad over the logits,
// bias_add over the matmul result, gelu_grad over its incoming gradient).
//
// x = wte[tokens]: [2,4,8] f32 = 256 B; logits = x @ w: [2,4,16] = 512 B.

func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %w: tensor<8x16xf32> {tg.param = "w"},
                   %b: tensor<16xf32> {tg.param = "b"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32> loc("emb")
  %g = tg.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("gelu")
  %l = tg.matmul %g, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("head")
  %lb = tg.bias_add %l, %b : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32> loc("head.bias")
  %loss = tg.cross_entropy %lb, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}

// The matmul result, its bias-added value and the logits gradient share one 512 B buffer:
// head > head.bias (forward, in place) > loss.grad (cross_entropy_grad over the logits).
// CHECK-DAG: micro_step head > head.bias > loss.grad: offset = {{[0-9]+}}, size = 512, live = [2, 11], forward
// The eval function has no backward, so the bias add alone reuses the matmul buffer.
// CHECK-DAG: eval_step head > head.bias: offset = {{[0-9]+}}, size = 512, live = [2, 4], forward
// gelu_grad writes over the gradient flowing into it (the matmul's dA).
// CHECK-DAG: micro_step head.grad > gelu.grad: offset = {{[0-9]+}}, size = 256
// No separate buffer is left for the bias-added logits or the logits gradient, anywhere
// in the buffer list (a prefix of its own: after the CHECK-DAG group above, a CHECK-NOT
// would only search the lines after its last match).
// SHARED: {{^}}buffers{{$}}
// SHARED-NOT: {{^  micro_step (head.bias|loss.grad): offset = [0-9]+, size = 512}}
