// One Llama block as the frontend builds it (`tgc compile examples/tiny-llama.json
// --emit=mlir` with n_layers 1, vocab 20, context 6, d_model 16, n_heads 4, n_kv_heads 2,
// d_ff 12, batch 2; locations and init attributes dropped): RMSNorm, the packed qkv
// projection [16, (4 + 2 x 2) x 4], RoPE, grouped-query naive attention (q viewed as
// [B, Hkv, G T, hd], the scores as [B, Hkv, G, T, T]), output projection, residual,
// RMSNorm, fc [16, 2 x 12] (gate | up), SwiGLU, proj, residual, final RMSNorm, tied lm_head,
// cross entropy. Input of the tests *-llama.mlir in test/passes.
func.func @forward(%arg0: tensor<20x16xf32> {tg.param = "wte"}, %arg1: tensor<16xf32> {tg.param = "layers.0.ln1.weight"}, %arg2: tensor<16x32xf32> {tg.decay, tg.param = "layers.0.attn.qkv.weight"}, %arg3: tensor<16x16xf32> {tg.decay, tg.param = "layers.0.attn.proj.weight"}, %arg4: tensor<16xf32> {tg.param = "layers.0.ln2.weight"}, %arg5: tensor<16x24xf32> {tg.decay, tg.param = "layers.0.mlp.fc.weight"}, %arg6: tensor<12x16xf32> {tg.decay, tg.param = "layers.0.mlp.proj.weight"}, %arg7: tensor<16xf32> {tg.param = "ln_f.weight"}, %arg8: tensor<2x6xi32> {tg.input = "tokens"}, %arg9: tensor<2x6xi32> {tg.input = "targets"}) -> tensor<f32> {
  %0 = tg.embedding %arg0, %arg8 : (tensor<20x16xf32>, tensor<2x6xi32>) -> tensor<2x6x16xf32>
  %y, %rstd = tg.rms_norm %0, %arg1 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xf32>, tensor<2x6xf32>)
  %1 = tg.matmul %y, %arg2 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<16x32xf32>) -> tensor<2x6x32xf32>
  %2 = tg.rope %1 {heads = 4 : i64, kv_heads = 2 : i64, scaling = array<f32: 3.200000e+01, 1.000000e+00, 4.000000e+00, 8.192000e+03>, tg.layer = 0 : i64, theta = 5.000000e+05 : f32} : (tensor<2x6x32xf32>) -> tensor<2x6x32xf32>
  %3:3 = tg.split %2 {axis = 2 : i64, tg.layer = 0 : i64} : (tensor<2x6x32xf32>) -> (tensor<2x6x16xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>)
  %4 = tg.reshape %3#0 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>) -> tensor<2x6x4x4xf32>
  %5 = tg.transpose %4 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<2x6x4x4xf32>) -> tensor<2x4x6x4xf32>
  %6 = tg.reshape %3#1 {tg.layer = 0 : i64} : (tensor<2x6x8xf32>) -> tensor<2x6x2x4xf32>
  %7 = tg.transpose %6 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<2x6x2x4xf32>) -> tensor<2x2x6x4xf32>
  %8 = tg.reshape %3#2 {tg.layer = 0 : i64} : (tensor<2x6x8xf32>) -> tensor<2x6x2x4xf32>
  %9 = tg.transpose %8 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<2x6x2x4xf32>) -> tensor<2x2x6x4xf32>
  %10 = tg.reshape %5 {tg.layer = 0 : i64} : (tensor<2x4x6x4xf32>) -> tensor<2x2x12x4xf32>
  %11 = tg.matmul %10, %7 {alpha = 5.000000e-01 : f32, tg.layer = 0 : i64, transpose_b = true} : (tensor<2x2x12x4xf32>, tensor<2x2x6x4xf32>) -> tensor<2x2x12x6xf32>
  %12 = tg.reshape %11 {tg.layer = 0 : i64} : (tensor<2x2x12x6xf32>) -> tensor<2x2x2x6x6xf32>
  %13 = tg.causal_mask %12 {tg.layer = 0 : i64} : (tensor<2x2x2x6x6xf32>) -> tensor<2x2x2x6x6xf32>
  %14 = tg.softmax %13 {tg.layer = 0 : i64} : (tensor<2x2x2x6x6xf32>) -> tensor<2x2x2x6x6xf32>
  %15 = tg.reshape %14 {tg.layer = 0 : i64} : (tensor<2x2x2x6x6xf32>) -> tensor<2x2x12x6xf32>
  %16 = tg.matmul %15, %9 {tg.layer = 0 : i64} : (tensor<2x2x12x6xf32>, tensor<2x2x6x4xf32>) -> tensor<2x2x12x4xf32>
  %17 = tg.reshape %16 {tg.layer = 0 : i64} : (tensor<2x2x12x4xf32>) -> tensor<2x4x6x4xf32>
  %18 = tg.transpose %17 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<2x4x6x4xf32>) -> tensor<2x6x4x4xf32>
  %19 = tg.reshape %18 {tg.layer = 0 : i64} : (tensor<2x6x4x4xf32>) -> tensor<2x6x16xf32>
  %20 = tg.matmul %19, %arg3 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
  %21 = tg.add %0, %20 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
  %y_0, %rstd_1 = tg.rms_norm %21, %arg4 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xf32>, tensor<2x6xf32>)
  %22 = tg.matmul %y_0, %arg5 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<16x24xf32>) -> tensor<2x6x24xf32>
  %23 = tg.swiglu %22 {tg.layer = 0 : i64} : (tensor<2x6x24xf32>) -> tensor<2x6x12xf32>
  %24 = tg.matmul %23, %arg6 {tg.layer = 0 : i64} : (tensor<2x6x12xf32>, tensor<12x16xf32>) -> tensor<2x6x16xf32>
  %25 = tg.add %21, %24 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
  %y_2, %rstd_3 = tg.rms_norm %25, %arg7 : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xf32>, tensor<2x6xf32>)
  %26 = tg.matmul %y_2, %arg0 {transpose_b = true} : (tensor<2x6x16xf32>, tensor<20x16xf32>) -> tensor<2x6x20xf32>
  %27 = tg.cross_entropy %26, %arg9 : (tensor<2x6x20xf32>, tensor<2x6xi32>) -> tensor<f32>
  return %27 : tensor<f32>
}
