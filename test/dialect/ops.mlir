// RUN: tg-opt %s | tg-opt | FileCheck %s
// Round trip of every tg op (parse, print, parse again).

// CHECK-LABEL: func.func @forward_ops
func.func @forward_ops(%wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>, %ids: tensor<2x4xi32>,
                       %g: tensor<8xf32>, %w: tensor<8x24xf32>, %bias: tensor<24xf32>)
    -> tensor<f32> {
  // CHECK: tg.embedding %{{.*}}, %{{.*}} : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %x = tg.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  // CHECK: tg.positional_embedding
  %p = tg.positional_embedding %x, %wpe : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: tg.layer_norm {{.*}} {eps = {{.*}}E-7 : f32}
  %y, %mean, %rstd = tg.layer_norm %p, %g, %g {eps = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  // CHECK: tg.matmul
  %qkv = tg.matmul %y, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  // CHECK: tg.bias_add
  %qkvb = tg.bias_add %qkv, %bias : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  // CHECK: tg.split {{.*}} {axis = 2 : i64}
  %q, %k, %v = tg.split %qkvb {axis = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  // CHECK: tg.concat
  %c = tg.concat %q, %k, %v {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  // CHECK: tg.reshape
  %q4 = tg.reshape %q : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  // CHECK: tg.transpose {{.*}} {perm = array<i64: 0, 2, 1, 3>}
  %qh = tg.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  // CHECK: tg.matmul {{.*}} {alpha = 5.000000e-01 : f32, transpose_b = true}
  %s = tg.matmul %qh, %qh {transpose_b = true, alpha = 0.5 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  // CHECK: tg.causal_mask {{.*}} {window = 2 : i64}
  %m = tg.causal_mask %s {window = 2 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  // CHECK: tg.softmax
  %sm = tg.softmax %m : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  // CHECK: tg.attention {{.*}} {scale = 5.000000e-01 : f32, window = 2 : i64}
  %o, %lse = tg.attention %qh, %qh, %qh {window = 2 : i64, scale = 0.5 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4xf32>)
  // CHECK: tg.gelu
  %ge = tg.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: tg.dropout {{.*}} {rate = 1.000000e-01 : f32, seed = 7 : i64}
  %d = tg.dropout %ge {rate = 0.1 : f32, seed = 7 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: tg.add
  %a = tg.add %d, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = tg.matmul %a, %wte {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: tg.cross_entropy {{.*}} {ignore_index = 0 : i64}
  %loss = tg.cross_entropy %logits, %ids {ignore_index = 0 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @backward_ops
func.func @backward_ops(%wte: tensor<16x8xf32>, %ids: tensor<2x4xi32>, %x: tensor<2x4x8xf32>,
                        %g: tensor<8xf32>, %st: tensor<2x4xf32>, %h: tensor<2x2x4x4xf32>,
                        %lse: tensor<2x2x4xf32>, %logits: tensor<2x4x16xf32>) {
  // CHECK: tg.fill {value = 1.000000e+00 : f32} : tensor<f32>
  %one = tg.fill {value = 1.0 : f32} : tensor<f32>
  // CHECK: tg.fill {loss_scaled, value = 2.500000e-01 : f32} : tensor<f32>
  %seed = tg.fill {value = 0.25 : f32, loss_scaled} : tensor<f32>
  // CHECK: tg.embedding_grad
  %de = tg.embedding_grad %ids, %x : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  // CHECK: tg.positional_embedding_grad
  %dp = tg.positional_embedding_grad %x : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
  // CHECK: tg.layer_norm_grad
  %dx, %dg, %db = tg.layer_norm_grad %x, %x, %g, %st, %st : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: tg.bias_grad
  %dbias = tg.bias_grad %x : (tensor<2x4x8xf32>) -> tensor<8xf32>
  // CHECK: tg.gelu_grad
  %dgelu = tg.gelu_grad %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: tg.softmax_grad
  %dsm = tg.softmax_grad %h, %h : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  // CHECK: tg.cross_entropy_grad
  %dl = tg.cross_entropy_grad %logits, %ids, %one : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  // CHECK: tg.attention_grad {{.*}} {scale = 2.500000e-01 : f32}
  %dq, %dk, %dv = tg.attention_grad %h, %h, %h, %h, %lse, %h {scale = 0.25 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>)
  return
}

// CHECK-LABEL: func.func @optimizer_ops
func.func @optimizer_ops(%w: tensor<8x8xf32>, %b: tensor<8xf32>) {
  // CHECK: tg.accumulate_grad %{{.*}}, %{{.*}} : tensor<8xf32>
  tg.accumulate_grad %b, %b : tensor<8xf32>
  // CHECK: tg.clip_grad_norm {{.*}} {max_norm = 1.000000e+00 : f32}
  %clip = tg.clip_grad_norm %w, %b {max_norm = 1.0 : f32} : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<2xf32>
  // CHECK: tg.adamw
  tg.adamw %w, %clip {beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.1 : f32} : tensor<8x8xf32>, tensor<2xf32>
  return
}

// Mixed precision: tg.cast between the float types, layer norm with a bf16/f16 y from
// an f32 x (f32 statistics), matmul and attention in bf16, cross entropy of bf16 logits.
// CHECK-LABEL: func.func @mixed_precision_ops
func.func @mixed_precision_ops(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x8xf32>,
                               %ids: tensor<2x4xi32>) -> tensor<f32> {
  // CHECK: tg.cast %{{.*}} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
  %wb = tg.cast %w : (tensor<8x8xf32>) -> tensor<8x8xbf16>
  // CHECK: tg.cast %{{.*}} : (tensor<8x8xf32>) -> tensor<8x8xf16>
  %wh = tg.cast %w : (tensor<8x8xf32>) -> tensor<8x8xf16>
  // CHECK: tg.cast %{{.*}} : (tensor<8x8xf16>) -> tensor<8x8xbf16>
  %hb = tg.cast %wh : (tensor<8x8xf16>) -> tensor<8x8xbf16>
  // CHECK: tg.layer_norm {{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
  %y, %mean, %rstd = tg.layer_norm %x, %g, %g : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
  // CHECK: tg.layer_norm {{.*}} -> (tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<2x4xf32>)
  %yh, %mh, %rh = tg.layer_norm %x, %g, %g : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<2x4xf32>)
  // CHECK: tg.matmul {{.*}} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
  %h = tg.matmul %y, %wb : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
  %h4 = tg.reshape %h : (tensor<2x4x8xbf16>) -> tensor<2x4x2x4xbf16>
  %q = tg.transpose %h4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xbf16>) -> tensor<2x2x4x4xbf16>
  // CHECK: tg.attention {{.*}} : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> (tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>)
  %o, %lse = tg.attention %q, %q, %q {scale = 0.5 : f32} : (tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) -> (tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>)
  // CHECK: tg.cross_entropy {{.*}} : (tensor<2x4x8xbf16>, tensor<2x4xi32>) -> tensor<f32>
  %loss = tg.cross_entropy %h, %ids : (tensor<2x4x8xbf16>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
