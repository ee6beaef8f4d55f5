// RUN: tg-opt %s | tg-opt | FileCheck %s
// Round trip (parse, print, parse again) of the Llama family's ops: tg.rms_norm, tg.rope,
// tg.swiglu, their gradients, grouped-query tg.attention / tg.attention_grad (k and v with
// fewer heads than q) and tg.attention_qkv / tg.attention_qkv_grad {kv_heads}.

// CHECK-LABEL: func.func @llama_forward_ops
func.func @llama_forward_ops(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %qkv: tensor<2x4x32xf32>,
                             %f: tensor<2x4x12xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tg.rms_norm %{{.*}}, %{{.*}} {eps = 9.99999997E-7 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  %y, %rstd = tg.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  // The default eps (1e-5) is not printed.
  // CHECK: tg.rms_norm %{{[^ ]*}}, %{{[^ ]*}} : (tensor<2x4x8xf32>, tensor<8xf32>)
  %y2, %rstd2 = tg.rms_norm %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  // [B, T, (H + 2 Hkv) hd] = [2, 4, (2 + 2) x 8]: 2 query heads, 1 kv head, head dim 8.
  // CHECK: tg.rope %{{.*}} {heads = 2 : i64, kv_heads = 1 : i64, scaling = array<f32: 0.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03>, theta = 1.000000e+04 : f32} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %r = tg.rope %qkv {heads = 2 : i64, kv_heads = 1 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  // CHECK: tg.rope %{{.*}} {heads = 2 : i64, inverse = true, kv_heads = 1 : i64, scaling = array<f32: 3.200000e+01, 1.000000e+00, 4.000000e+00, 8.192000e+03>, theta = 5.000000e+05 : f32}
  %r2 = tg.rope %qkv {heads = 2 : i64, kv_heads = 1 : i64, theta = 500000.0 : f32, scaling = array<f32: 32.0, 1.0, 4.0, 8192.0>, inverse = true} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  // CHECK: tg.swiglu %{{.*}} : (tensor<2x4x12xf32>) -> tensor<2x4x6xf32>
  %s = tg.swiglu %f : (tensor<2x4x12xf32>) -> tensor<2x4x6xf32>
  return
}

// Grouped-query attention: q [B, H, T, hd] = [1, 4, 4, 8], k and v [1, 2, 4, 8] (2 kv
// heads); multi-query with 1 kv head; the packed form on [B, T, (4 + 2 x 2) x 8].
// CHECK-LABEL: func.func @grouped_query_attention
func.func @grouped_query_attention(%q: tensor<1x4x4x8xf32>, %kv: tensor<1x2x4x8xf32>,
                                   %kv1: tensor<1x1x4x8xf32>, %lse: tensor<1x4x4xf32>,
                                   %qkv: tensor<1x4x64xf32>, %o: tensor<1x4x32xf32>) {
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f32, window = 2 : i64} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  %a, %l = tg.attention %q, %kv, %kv {window = 2 : i64, scale = 0.5 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  // CHECK: tg.attention {{.*}} : (tensor<1x4x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  %a1, %l1 = tg.attention %q, %kv1, %kv1 {scale = 0.5 : f32} : (tensor<1x4x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  // CHECK: tg.attention_grad {{.*}} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  %dq, %dk, %dv = tg.attention_grad %q, %kv, %kv, %a, %lse, %a {scale = 0.5 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  // CHECK: tg.attention_qkv %{{.*}} {heads = 4 : i64, kv_heads = 2 : i64, scale = 5.000000e-01 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  %po, %pl = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  // CHECK: tg.attention_qkv_grad {{.*}} {heads = 4 : i64, kv_heads = 2 : i64, scale = 5.000000e-01 : f32, window = 3 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x4xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  %dqkv = tg.attention_qkv_grad %qkv, %o, %lse, %o {heads = 4 : i64, kv_heads = 2 : i64, window = 3 : i64, scale = 0.5 : f32} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x4xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  return
}

// CHECK-LABEL: func.func @llama_backward_ops
func.func @llama_backward_ops(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %rstd: tensor<2x4xf32>,
                              %f: tensor<2x4x12xf32>, %df: tensor<2x4x6xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tg.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %dx, %dg = tg.rms_norm_grad %x, %x, %g, %rstd : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  // CHECK: tg.swiglu_grad %{{.*}}, %{{.*}} : (tensor<2x4x12xf32>, tensor<2x4x6xf32>) -> tensor<2x4x12xf32>
  %dx2 = tg.swiglu_grad %f, %df : (tensor<2x4x12xf32>, tensor<2x4x6xf32>) -> tensor<2x4x12xf32>
  return
}

// Mixed precision: RMSNorm with a bf16 y from an f32 x (f32 rstd) and its gradient with a
// bf16 dy; RoPE and SwiGLU (and SwiGLU's gradient) in bf16; GQA attention in bf16.
// CHECK-LABEL: func.func @llama_mixed_precision_ops
func.func @llama_mixed_precision_ops(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %qkv: tensor<2x4x32xbf16>,
                                     %f: tensor<2x4x12xbf16>, %df: tensor<2x4x6xbf16>,
                                     %q: tensor<1x4x4x8xbf16>, %kv: tensor<1x2x4x8xbf16>) {
  // CHECK: tg.rms_norm {{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
  %y, %rstd = tg.rms_norm %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
  // CHECK: tg.rms_norm_grad {{.*}} : (tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %dx, %dg = tg.rms_norm_grad %y, %x, %g, %rstd : (tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  // CHECK: tg.rope {{.*}} : (tensor<2x4x32xbf16>) -> tensor<2x4x32xbf16>
  %r = tg.rope %qkv {heads = 2 : i64, kv_heads = 1 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x32xbf16>) -> tensor<2x4x32xbf16>
  // CHECK: tg.swiglu {{.*}} : (tensor<2x4x12xbf16>) -> tensor<2x4x6xbf16>
  %s = tg.swiglu %f : (tensor<2x4x12xbf16>) -> tensor<2x4x6xbf16>
  // CHECK: tg.swiglu_grad {{.*}} : (tensor<2x4x12xbf16>, tensor<2x4x6xbf16>) -> tensor<2x4x12xbf16>
  %ds = tg.swiglu_grad %f, %df : (tensor<2x4x12xbf16>, tensor<2x4x6xbf16>) -> tensor<2x4x12xbf16>
  // CHECK: tg.attention {{.*}} : (tensor<1x4x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>) -> (tensor<1x4x4x8xbf16>, tensor<1x4x4xf32>)
  %a, %l = tg.attention %q, %kv, %kv {scale = 0.5 : f32} : (tensor<1x4x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>) -> (tensor<1x4x4x8xbf16>, tensor<1x4x4xf32>)
  return
}
