// RUN: tg-opt %s -tg-autodiff -tg-plan-memory -tg-print-memory-plan -o /dev/null | FileCheck %s
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="workspace-bytes=2097152" -tg-print-memory-plan -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=WS
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="workspace-bytes=1024" -tg-print-memory-plan -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=WSMIN
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory | FileCheck %s --check-prefix=IR
// The collective library's reserve (comm-bytes; tgc: NCCL's buffers at > 1 rank on CUDA):
// in the plan as comm_bytes, a row of the report and in the total, the regions unchanged.
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="comm-bytes=1000" -tg-print-memory-plan -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COMM
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory="comm-bytes=1000" | FileCheck %s --check-prefix=COMMIR
// Reshapes are views: no "flat" / "unflat" buffer anywhere in the report. A prefix of its
// own scans the whole report after its first line (a CHECK-NOT next to the CHECK-DAG group
// below would only search between two neighbouring matches).
// RUN: tg-opt %s -tg-autodiff -tg-plan-memory -tg-print-memory-plan -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=VIEW

// embedding -> gelu -> reshape -> matmul -> reshape -> cross entropy.
// V = 16, D = 8, B x T = 2 x 4.
//
// Persistent region, every slot rounded up to 256 B:
//   wte [16, 8] f32 = 512 B, head.w [8, 16] f32 = 512 B; value, grad, m, v slots:
//   4 x (512 + 512) = 4096; tokens, targets [2, 4] i32 = 32 B -> 256 each: 4096 + 512 = 4608.
// CHECK:      memory plan (bytes), precision fp32
// CHECK-NEXT:   persistent 4608
// CHECK-NEXT:     parameters f32 1024
// CHECK-NEXT:     gradients f32 1024
// CHECK-NEXT:     AdamW m, v f32 2048
// CHECK-NEXT:     inputs (tokens, targets) i32 512
//
// @micro_step (op index: 0 embed, 1 gelu, 2 reshape, 3 head, 4 reshape, 5 loss, 6 seed,
// 7 ce_grad, 8 reshape, 9 dx matmul, 10 dw matmul, 11 reshape, 12 gelu_grad,
// 13 embedding_grad, 14-15 accumulate_grad, 16 return).
// Max live is at op 10: embed 256 + gelu 256 + loss 4 + dlogits (in the logits' buffer) 512
// + dx 256 + dw 512
// = 1796, and the chain packs exactly into it: arena == lower bound.
// CHECK-NEXT:   arena 1796
// CHECK-NEXT:   workspace 0
// CHECK-NEXT:   total 6404
// CHECK-NEXT: peak live arena bytes per phase
// Forward peak at op 5: embed 256 + gelu 256 + logits 512 + loss 4.
// CHECK-NEXT:   forward 1028
// CHECK-NEXT:   backward 1796
// clip_grad_norm's tensor<2xf32>.
// CHECK-NEXT:   optimizer 8
// @eval_step at op 3: gelu 256 + logits 512.
// CHECK-NEXT:   eval (forward only) 768
// CHECK-NEXT:   lower bound (max live) 1796
// CHECK-NEXT:   arena / lower bound = 1.0000 (heuristic: {{.*}})
// The eight @micro_step buffers listed below, summed before the arena overlaps them:
// 3 x 512 + 3 x 256 + 2 x 4 = 2312.
// CHECK-NEXT: micro-step arena buffers by dtype (sum of sizes, before reuse)
// CHECK-NEXT:   f32 2312
// CHECK-NEXT: {{^}}buffers{{$}}
// In place: cross_entropy_grad (op 7) is the logits' last reader, so dlogits takes over
// the logits buffer, which then lives until the dw matmul (op 10).
// CHECK-DAG:   micro_step head > loss.grad: offset = {{[0-9]+}}, size = 512, live = [3, 10], forward
// CHECK-DAG:   micro_step head.grad: offset = {{[0-9]+}}, size = 512, live = [10, 15], backward
// CHECK-DAG:   micro_step embed: offset = {{[0-9]+}}, size = 256, live = [0, 12], forward
// CHECK-DAG:   micro_step gelu: offset = {{[0-9]+}}, size = 256, live = [1, 10], forward
// gelu_grad (op 12) writes over dx, its incoming gradient, which it reads last.
// CHECK-DAG:   micro_step head.grad > gelu.grad: offset = {{[0-9]+}}, size = 256, live = [9, 13], backward
// CHECK-DAG:   micro_step embed.grad: offset = {{[0-9]+}}, size = 512, live = [13, 14], backward
// CHECK-DAG:   micro_step loss: offset = {{[0-9]+}}, size = 4, live = [5, 16], forward
// CHECK-DAG:   micro_step loss.grad: offset = {{[0-9]+}}, size = 4, live = [6, 7], backward
// CHECK-DAG:   eval_step embed: offset = {{[0-9]+}}, size = 256, live = [0, 1], forward
// CHECK-DAG:   eval_step gelu: offset = {{[0-9]+}}, size = 256, live = [1, 3], forward
// CHECK-DAG:   eval_step head: offset = {{[0-9]+}}, size = 512, live = [3, 5], forward
// CHECK-DAG:   eval_step loss: offset = {{[0-9]+}}, size = 4, live = [5, 6], forward
// CHECK-DAG:   optimizer_step optimizer.clip: offset = 0, size = 8, live = [0, 2], optimizer

// VIEW: memory plan (bytes)
// VIEW-NOT: flat

// COMM:      arena 1796
// COMM-NEXT:   workspace 0
// COMM-NEXT:   NCCL reserve (NCCL's own) 1000
// COMM-NEXT:   total 7404
// COMMIR: module attributes {tg.plan = {arena_bytes = 1796 : i64, comm_bytes = 1000 : i64,
// WS:   workspace 2097152
// WS-NEXT:   total 2103556
// The option is a floor: an op's own scratch need raises it (the embedding backward's sort
// and chunk sums, 24 * 8 tokens + 1 MiB + 8 * d 8 * 1 chunk, rounded up to 256 bytes).
// WSMIN:   workspace 1048832

// IR: module attributes {tg.plan = {arena_bytes = 1796 : i64, heuristic = {{.*}}, input_bytes = 512 : i64,
// IR-SAME: params = [{dtype = "f32", grad_offset = 1024 : i64, m_offset = 2048 : i64, name = "wte", numel = 128 : i64, offset = 0 : i64, shape = array<i64: 16, 8>, state_dtype = "f32", v_offset = 3072 : i64},
// IR-SAME: {dtype = "f32", grad_offset = 1536 : i64, m_offset = 2560 : i64, name = "head.w", numel = 128 : i64, offset = 512 : i64, shape = array<i64: 8, 16>, state_dtype = "f32", v_offset = 3584 : i64}]
// IR-SAME: persistent_bytes = 4608 : i64
// IR-SAME: targets_offset = 4352 : i64, tokens_offset = 4096 : i64, workspace_bytes = 0 : i64}}
// IR-LABEL: func.func @eval_step
// IR-SAME: attributes {tg.arena_bytes = 768 : i64}
// IR-LABEL: func.func @micro_step
// IR-SAME: attributes {tg.arena_bytes = 1796 : i64}
// A reshape takes its source's offset.
// IR: %[[G:.*]] = tg.gelu %{{.*}} {tg.offsets = array<i64: [[OFF:[0-9]+]]>
// IR-NEXT: tg.reshape %[[G]] {tg.offsets = array<i64: [[OFF]]>
// IR-LABEL: func.func @optimizer_step
// IR-SAME: attributes {tg.arena_bytes = 8 : i64}
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"}, %w: tensor<8x16xf32> {tg.param = "head.w"},
                   %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32> loc("embed")
  %y = tg.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("gelu")
  %y2 = tg.reshape %y : (tensor<2x4x8xf32>) -> tensor<8x8xf32> loc("flat")
  %l2 = tg.matmul %y2, %w : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> loc("head")
  %l = tg.reshape %l2 : (tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("unflat")
  %loss = tg.cross_entropy %l, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
