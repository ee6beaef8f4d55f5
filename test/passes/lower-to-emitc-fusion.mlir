// RUN: tg-opt %s -tg-lower-to-emitc -split-input-file | mlir-translate --mlir-to-cpp | FileCheck %s
// The fused ops of tg-fuse lower to one runtime call each, on the buffers the plan gave
// their results (tg-fuse decides the fusion, the planner keeps the results apart from the
// operands like any op's: the lowering checks no bytes; test/passes/fuse.mlir and
// plan-memory-inplace.mlir test those halves); and the lowering's own remaining fusion of
// a loss with its gradient into one tgrt_cross_entropy_fwd_bwd. Hand-written plans.

// tg.matmul_bias_gelu: x [4 x 8] at arena 0, pre at 256, the GELU output at 512.
// CHECK-LABEL: void tg_micro_step(
// CHECK: tgrt_matmul_bias_gelu({{v[0-9]+}}, "mlp.fc", TGRT_F32, [[X:v[0-9]+]], [[W:v[0-9]+]], [[B:v[0-9]+]], [[PRE:v[0-9]+]], [[OUT:v[0-9]+]], 4, 16, 8, 0, 0, 1.000000000e+00f);
// CHECK-NOT: tgrt_gelu_fwd
// CHECK-NOT: tgrt_bias_add
// CHECK: return;
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 768 : i64, persistent_bytes = 1024 : i64, params = [{name = "w", shape = array<i64: 8, 16>, numel = 128 : i64, offset = 0 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}, {name = "b", shape = array<i64: 16>, numel = 16 : i64, offset = 512 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}]}} {
  func.func @micro_step(%w: tensor<8x16xf32> {tg.param = "w"}, %b: tensor<16xf32> {tg.param = "b"}) {
    %x = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xf32> loc("x")
    %pre, %y = tg.matmul_bias_gelu %x, %w, %b {tg.offsets = array<i64: 256, 512>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) loc("mlp.fc")
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// tg.matmul_bias with a transposed weight [16 x 8]: one tgrt_matmul_bias (trans_b 1).
// CHECK-LABEL: void tg_micro_step(
// CHECK: tgrt_matmul_bias({{v[0-9]+}}, "mlp.fc", TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, 4, 16, 8, 0, 1, 1.000000000e+00f);
// CHECK-NOT: tgrt_bias_add
// CHECK: return;
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 768 : i64, persistent_bytes = 1024 : i64, params = [{name = "w", shape = array<i64: 8, 16>, numel = 128 : i64, offset = 0 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}, {name = "b", shape = array<i64: 16>, numel = 16 : i64, offset = 512 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}]}} {
  func.func @micro_step(%w: tensor<16x8xf32> {tg.param = "w"}, %b: tensor<16xf32> {tg.param = "b"}) {
    %x = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xf32> loc("x")
    %y = tg.matmul_bias %x, %w, %b {transpose_b = true, tg.offsets = array<i64: 256>} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("mlp.fc")
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// A training step's loss and its gradient (nothing between them reads the loss): one
// tgrt_cross_entropy_fwd_bwd at the gradient, after the seed's fill; the loss's buffer is
// written there. Logits [4 x 8] at arena 0 (in place: the gradient's buffer is the same),
// loss at 128, seed at 192; targets [4] i32 at persistent 1024.
// CHECK-LABEL: void tg_micro_step(
// CHECK-NOT: tgrt_cross_entropy_fwd(
// CHECK: tgrt_fill({{v[0-9]+}}, "loss", TGRT_F32, [[SEED:v[0-9]+]], 1, 1.000000000e+00f);
// CHECK: tgrt_cross_entropy_fwd_bwd({{v[0-9]+}}, "loss", TGRT_F32, [[Z:v[0-9]+]], [[T:v[0-9]+]], [[L:v[0-9]+]], [[SEED]], [[DZ:v[0-9]+]], 4, 8, -1);
// CHECK-NOT: tgrt_cross_entropy_bwd(
// CHECK: return;
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 256 : i64, persistent_bytes = 1040 : i64, tokens_offset = 1024 : i64, targets_offset = 1024 : i64, params = []}} {
  func.func @micro_step(%t: tensor<4xi32> {tg.input = "targets"}) {
    %z = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xf32> loc("lm_head")
    %l = tg.cross_entropy %z, %t {tg.offsets = array<i64: 128>} : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<f32> loc("loss")
    %s = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 192>} : tensor<f32> loc("loss")
    %dz = tg.cross_entropy_grad %z, %t, %s {tg.offsets = array<i64: 0>} : (tensor<4x8xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x8xf32> loc("loss")
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// An op between the loss and its gradient reads the loss: two calls, the loss first.
// CHECK-LABEL: void tg_micro_step(
// CHECK: tgrt_cross_entropy_fwd({{v[0-9]+}}, "loss", TGRT_F32,
// CHECK: tgrt_add({{v[0-9]+}}, "twice", TGRT_F32,
// CHECK: tgrt_cross_entropy_bwd({{v[0-9]+}}, "loss", TGRT_F32,
// CHECK-NOT: tgrt_cross_entropy_fwd_bwd
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 256 : i64, persistent_bytes = 1040 : i64, tokens_offset = 1024 : i64, targets_offset = 1024 : i64, params = []}} {
  func.func @micro_step(%t: tensor<4xi32> {tg.input = "targets"}) {
    %z = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xf32> loc("lm_head")
    %l = tg.cross_entropy %z, %t {tg.offsets = array<i64: 128>} : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<f32> loc("loss")
    %l2 = tg.add %l, %l {tg.offsets = array<i64: 224>} : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("twice")
    %s = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 192>} : tensor<f32> loc("loss")
    %dz = tg.cross_entropy_grad %z, %t, %s {tg.offsets = array<i64: 0>} : (tensor<4x8xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x8xf32> loc("loss")
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// tg.matmul_residual with its f32 bias (GPT-2's projections under mixed precision): one
// tgrt_matmul_bias_residual, the stream (res, arena 128) as C, the sum where planned (896),
// the bias read in f32 from its parameter (persistent 512).
// CHECK-LABEL: void tg_micro_step(
// CHECK: tgrt_fill({{v[0-9]+}}, "res", TGRT_F32,
// CHECK: tgrt_cast({{v[0-9]+}}, "w.cast", TGRT_F32,
// CHECK: tgrt_matmul_bias_residual({{v[0-9]+}}, "proj", TGRT_BF16, {{v[0-9]+}}, {{v[0-9]+}}, TGRT_F32, [[BIAS:v[0-9]+]], {{v[0-9]+}}, {{v[0-9]+}}, 4, 16, 8, 0, 0, 1.000000000e+00f);
// CHECK-NOT: tgrt_bias_add
// CHECK-NOT: tgrt_add
// CHECK: return;
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 1152 : i64, persistent_bytes = 1024 : i64, params = [{name = "w", shape = array<i64: 8, 16>, numel = 128 : i64, offset = 0 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}, {name = "b", shape = array<i64: 16>, numel = 16 : i64, offset = 512 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}]}} {
  func.func @micro_step(%w: tensor<8x16xf32> {tg.param = "w"}, %b: tensor<16xf32> {tg.param = "b"}) {
    %x = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xbf16> loc("x")
    %res = tg.fill {value = 2.0 : f32, tg.offsets = array<i64: 128>} : tensor<4x16xf32> loc("res")
    %wc = tg.cast %w {tg.offsets = array<i64: 384>} : (tensor<8x16xf32>) -> tensor<8x16xbf16> loc("w.cast")
    %y = tg.matmul_residual %x, %wc, %res, %b {tg.offsets = array<i64: 896>} : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("proj")
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// tg.add_layer_norm (tg-fuse's residual add + layer norm of its sum, the widening cast of
// the bf16 branch read in place): one tgrt_add_layer_norm_fwd on the planned buffers, the
// stream x at arena 0, the bf16 branch at 128, the sum at 256, y (bf16) at 384, mean and
// rstd at 448 and 512; gamma and beta f32 from their parameters.
// CHECK-LABEL: void tg_micro_step(
// CHECK: tgrt_add_layer_norm_fwd({{v[0-9]+}}, "attn.residual", TGRT_F32, {{v[0-9]+}}, TGRT_BF16, {{v[0-9]+}}, {{v[0-9]+}}, TGRT_F32, {{v[0-9]+}}, {{v[0-9]+}}, TGRT_BF16, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, 4, 8, 5.000000000e-01f);
// CHECK-NOT: tgrt_add
// CHECK-NOT: tgrt_layer_norm_fwd
// CHECK: return;
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 768 : i64, persistent_bytes = 512 : i64, params = [{name = "g", shape = array<i64: 8>, numel = 8 : i64, offset = 0 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}, {name = "b", shape = array<i64: 8>, numel = 8 : i64, offset = 256 : i64, grad_offset = 0 : i64, m_offset = 0 : i64, v_offset = 0 : i64}]}} {
  func.func @micro_step(%g: tensor<8xf32> {tg.param = "g"}, %b: tensor<8xf32> {tg.param = "b"}) {
    %x = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xf32> loc("x")
    %h = tg.fill {value = 2.0 : f32, tg.offsets = array<i64: 128>} : tensor<4x8xbf16> loc("h")
    %s, %y, %m, %r = tg.add_layer_norm %x, %h, %g, %b {eps = 0.5 : f32, tg.offsets = array<i64: 256, 384, 448, 512>} : (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>) loc("attn.residual")
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// tg.matmul_dgelu_bgrad (tg-fuse's GEMM + GELU gradient + bias gradient), twice: dy [4 x 8]
// at arena 0, pre [4 x 32] at 128, dx at 640 and 1152. The first one's bias gradient is
// read only by its parameter's accumulation: the call writes no db (NULL) and dx's column
// sums go into the slot (persistent 2048) right after, named as the bias gradient (the
// last name of the op's fused location); the second one writes db (arena 1664).
// CHECK-LABEL: void tg_micro_step(
// CHECK: tgrt_matmul_dgelu_bgrad({{v[0-9]+}}, "mlp.proj", TGRT_F32, [[DY:v[0-9]+]], [[W:v[0-9]+]], [[PRE:v[0-9]+]], [[DX:v[0-9]+]], NULL, 4, 32, 8, 0, 1, 1.000000000e+00f);
// CHECK-NOT: tgrt_{{[a-z_]+}}({{v[0-9]+}}, "
// CHECK: tgrt_bias_grad_acc({{v[0-9]+}}, "mlp.fc.bias", TGRT_F32, [[DX]], TGRT_F32, {{v[0-9]+}}, 4, 32);
// CHECK-NOT: tgrt_{{[a-z_]+}}({{v[0-9]+}}, "
// CHECK: tgrt_matmul_dgelu_bgrad({{v[0-9]+}}, "mlp2.proj", TGRT_F32, [[DY]], [[W]], [[PRE]], {{v[0-9]+}}, [[DB:v[0-9]+]], 4, 32, 8, 0, 1, 1.000000000e+00f);
// CHECK-NOT: tgrt_gelu_bwd
// CHECK-NOT: tgrt_bias_grad
// CHECK-NOT: tgrt_accumulate
// CHECK: return;
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 1792 : i64, persistent_bytes = 2304 : i64, params = [{name = "w", shape = array<i64: 32, 8>, numel = 256 : i64, offset = 0 : i64, grad_offset = 1024 : i64, m_offset = 0 : i64, v_offset = 0 : i64}, {name = "b", shape = array<i64: 32>, numel = 32 : i64, offset = 1536 : i64, grad_offset = 2048 : i64, m_offset = 0 : i64, v_offset = 0 : i64}]}} {
  func.func @micro_step(%w: tensor<32x8xf32> {tg.param = "w"}, %b: tensor<32xf32> {tg.param = "b"}) {
    %dy = tg.fill {value = 1.0 : f32, tg.offsets = array<i64: 0>} : tensor<4x8xf32> loc("dy")
    %pre = tg.fill {value = 2.0 : f32, tg.offsets = array<i64: 128>} : tensor<4x32xf32> loc("pre")
    %dx, %db = tg.matmul_dgelu_bgrad %dy, %w, %pre {transpose_b = true, tg.offsets = array<i64: 640, 1664>} : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<32xf32>) loc(fused["mlp.proj", "mlp.gelu", "mlp.fc.bias"])
    tg.accumulate_grad %b, %db : tensor<32xf32>
    %dx2, %db2 = tg.matmul_dgelu_bgrad %dy, %w, %pre {transpose_b = true, tg.offsets = array<i64: 1152, 1664>} : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<32xf32>) loc(fused["mlp2.proj", "mlp2.gelu", "mlp2.fc.bias"])
    return
  }
  func.func @optimizer_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}
