// RUN: tg-opt %s -tg-fuse-loss=max-logits-bytes=100 -split-input-file | FileCheck %s
// tg-fuse-loss: the output layer, the loss and their gradients (after tg-autodiff) become one
// tg.linear_cross_entropy holding chunk_rows rows of logits at a time. Here 16 rows (2 x 8) of
// 8 f32 logits (32 bytes a row) and max-logits-bytes = 100: chunks of 3 rows. Its scratch:
// 256 + 8 x 16 bytes rounded up to 512, then 3 x 8 x 4 = 96 bytes: 608 bytes = 152 floats.

// CHECK-LABEL: func.func @micro_step
// Nothing of the unfused chain before the fill either (the forward matmul and loss).
// CHECK-NOT: tg.matmul
// CHECK-NOT: tg.cross_entropy
// CHECK-NOT: tg.reshape
// CHECK: %[[ONE:[0-9]+]] = tg.fill
// CHECK-NEXT: %[[LOSS:loss]], %[[DX:dx]], %[[DW:dw]], %scratch = tg.linear_cross_entropy %arg1, %arg0, %arg2, %[[ONE]] {chunk_rows = 3 : i64, tg.phase = "backward"} : (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<152xf32>)
// dw's accumulation moves right after it (its buffer then dies at once).
// CHECK-NEXT: tg.accumulate_grad %arg0, %[[DW]]
// dx goes on to its reader; nothing of the unfused chain is left.
// CHECK-NEXT: tg.gelu %[[DX]]
// CHECK-NOT: tg.matmul
// CHECK-NOT: tg.cross_entropy
// CHECK-NOT: tg.reshape
// CHECK: return %[[LOSS]]
func.func @micro_step(%w: tensor<8x4xf32> {tg.param = "w"}, %x: tensor<2x8x4xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %logits = tg.matmul %x, %w {transpose_b = true} : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  %loss = tg.cross_entropy %logits, %t : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  %one = tg.fill {value = 1.0 : f32, tg.phase = "backward"} : tensor<f32>
  %dl = tg.cross_entropy_grad %logits, %t, %one {tg.phase = "backward"} : (tensor<2x8x8xf32>, tensor<2x8xi32>, tensor<f32>) -> tensor<2x8x8xf32>
  %dx = tg.matmul %dl, %w {tg.phase = "backward"} : (tensor<2x8x8xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32>
  %g = tg.gelu %dx {tg.phase = "backward"} : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %xr = tg.reshape %x {tg.phase = "backward"} : (tensor<2x8x4xf32>) -> tensor<16x4xf32>
  %dlr = tg.reshape %dl {tg.phase = "backward"} : (tensor<2x8x8xf32>) -> tensor<16x8xf32>
  %dw = tg.matmul %dlr, %xr {transpose_a = true, tg.phase = "backward"} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  tg.accumulate_grad %w, %dw {tg.phase = "backward"} : tensor<8x4xf32>
  return %loss : tensor<f32>
}

// -----

// bf16 copy of f32 weights, tied to the embedding: dw (widened to f32) is the op's f32
// result; accumulate_grad(w, add(dw, e)) becomes accumulate_grad(w, dw) right after the op
// and accumulate_grad(w, e) where it was. 16 rows of 8 bf16 logits, 16 bytes a row: chunks
// of 6 rows; scratch 512 + 6 x 8 x 2 = 608 bytes.
// CHECK-LABEL: func.func @micro_step
// CHECK: %[[WB:[0-9]+]] = tg.cast %arg0
// CHECK: %[[LOSS:loss]], %{{.*}}, %[[DW:dw]], %scratch = tg.linear_cross_entropy %arg1, %[[WB]], %arg2, %{{[0-9]+}} {chunk_rows = 6 : i64, tg.phase = "backward"} : (tensor<2x8x4xbf16>, tensor<8x4xbf16>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xbf16>, tensor<8x4xf32>, tensor<152xf32>)
// CHECK-NEXT: tg.accumulate_grad %arg0, %[[DW]]
// CHECK: %[[E:[0-9]+]] = tg.fill {tg.phase = "backward", value = 2.000000e+00 : f32}
// CHECK-NOT: tg.add
// CHECK: tg.accumulate_grad %arg0, %[[E]]
// CHECK: return %[[LOSS]]
func.func @micro_step(%w: tensor<8x4xf32> {tg.param = "w"}, %x: tensor<2x8x4xbf16>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %wb = tg.cast %w : (tensor<8x4xf32>) -> tensor<8x4xbf16>
  %logits = tg.matmul %x, %wb {transpose_b = true} : (tensor<2x8x4xbf16>, tensor<8x4xbf16>) -> tensor<2x8x8xbf16>
  %loss = tg.cross_entropy %logits, %t : (tensor<2x8x8xbf16>, tensor<2x8xi32>) -> tensor<f32>
  %one = tg.fill {value = 1.0 : f32, tg.phase = "backward"} : tensor<f32>
  %dl = tg.cross_entropy_grad %logits, %t, %one {tg.phase = "backward"} : (tensor<2x8x8xbf16>, tensor<2x8xi32>, tensor<f32>) -> tensor<2x8x8xbf16>
  %dx = tg.matmul %dl, %wb {tg.phase = "backward"} : (tensor<2x8x8xbf16>, tensor<8x4xbf16>) -> tensor<2x8x4xbf16>
  %xr = tg.reshape %x {tg.phase = "backward"} : (tensor<2x8x4xbf16>) -> tensor<16x4xbf16>
  %dlr = tg.reshape %dl {tg.phase = "backward"} : (tensor<2x8x8xbf16>) -> tensor<16x8xbf16>
  %dw = tg.matmul %dlr, %xr {transpose_a = true, tg.phase = "backward"} : (tensor<16x8xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  %dwf = tg.cast %dw {tg.phase = "backward"} : (tensor<8x4xbf16>) -> tensor<8x4xf32>
  %e = tg.fill {value = 2.0 : f32, tg.phase = "backward"} : tensor<8x4xf32>
  %sum = tg.add %dwf, %e {tg.phase = "backward"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  tg.accumulate_grad %w, %sum {tg.phase = "backward"} : tensor<8x4xf32>
  return %loss : tensor<f32>
}

// -----

// Not fused: the logits have a third reader (the chain would have to keep them all).
// CHECK-LABEL: func.func @micro_step
// CHECK-NOT: tg.linear_cross_entropy
// CHECK: tg.cross_entropy_grad
func.func @micro_step(%w: tensor<8x4xf32> {tg.param = "w"}, %x: tensor<2x8x4xf32>, %t: tensor<2x8xi32>) -> tensor<2x8x8xf32> {
  %logits = tg.matmul %x, %w {transpose_b = true} : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  %loss = tg.cross_entropy %logits, %t : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  %one = tg.fill {value = 1.0 : f32} : tensor<f32>
  %dl = tg.cross_entropy_grad %logits, %t, %one : (tensor<2x8x8xf32>, tensor<2x8xi32>, tensor<f32>) -> tensor<2x8x8xf32>
  %dx = tg.matmul %dl, %w : (tensor<2x8x8xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32>
  %xr = tg.reshape %x : (tensor<2x8x4xf32>) -> tensor<16x4xf32>
  %dlr = tg.reshape %dl : (tensor<2x8x8xf32>) -> tensor<16x8xf32>
  %dw = tg.matmul %dlr, %xr {transpose_a = true} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  tg.accumulate_grad %w, %dw : tensor<8x4xf32>
  %p = tg.softmax %logits : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %p : tensor<2x8x8xf32>
}

// -----

// Not fused: the loss is read between the forward and its gradient (it could not be
// computed at the gradient).
// CHECK-LABEL: func.func @micro_step
// CHECK-NOT: tg.linear_cross_entropy
// CHECK: tg.cross_entropy_grad
func.func @micro_step(%w: tensor<8x4xf32> {tg.param = "w"}, %x: tensor<2x8x4xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %logits = tg.matmul %x, %w {transpose_b = true} : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  %loss = tg.cross_entropy %logits, %t : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  %twice = tg.add %loss, %loss : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %dl = tg.cross_entropy_grad %logits, %t, %twice : (tensor<2x8x8xf32>, tensor<2x8xi32>, tensor<f32>) -> tensor<2x8x8xf32>
  %dx = tg.matmul %dl, %w : (tensor<2x8x8xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32>
  %xr = tg.reshape %x : (tensor<2x8x4xf32>) -> tensor<16x4xf32>
  %dlr = tg.reshape %dl : (tensor<2x8x8xf32>) -> tensor<16x8xf32>
  %dw = tg.matmul %dlr, %xr {transpose_a = true} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  tg.accumulate_grad %w, %dw : tensor<8x4xf32>
  return %loss : tensor<f32>
}

// -----

// The evaluation's loss (forward only, in @eval_step): one tg.linear_cross_entropy whose dx
// and dw nothing reads (the lowering passes them NULL: the loss only) and whose dloss is a
// tg.fill of 0; chunks of 3 rows as above; ignore_index kept.
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: tg.matmul
// CHECK: %[[ZERO:[0-9]+]] = tg.fill {value = 0.000000e+00 : f32} : tensor<f32>
// CHECK-NEXT: %[[LOSS:loss]], %dx, %dw, %scratch = tg.linear_cross_entropy %arg1, %arg0, %arg2, %[[ZERO]] {chunk_rows = 3 : i64, ignore_index = 7 : i64} : (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<f32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<152xf32>)
// CHECK-NOT: tg.cross_entropy
// CHECK: return %[[LOSS]]
func.func @eval_step(%w: tensor<8x4xf32> {tg.param = "w"}, %x: tensor<2x8x4xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %logits = tg.matmul %x, %w {transpose_b = true} : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  %loss = tg.cross_entropy %logits, %t {ignore_index = 7 : i64} : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An evaluation whose logits something else reads (here: returned) keeps them whole.
// CHECK-LABEL: func.func @eval_step
// CHECK: tg.matmul
// CHECK-NEXT: tg.cross_entropy
// CHECK-NOT: tg.linear_cross_entropy
func.func @eval_step(%w: tensor<8x4xf32> {tg.param = "w"}, %x: tensor<2x8x4xf32>, %t: tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8x8xf32>) {
  %logits = tg.matmul %x, %w {transpose_b = true} : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  %loss = tg.cross_entropy %logits, %t : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %loss, %logits : tensor<f32>, tensor<2x8x8xf32>
}
