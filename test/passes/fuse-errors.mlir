// RUN: tg-opt %s -split-input-file -verify-diagnostics
// tg-fuse refuses nothing (a chain that does not match stays as it is, fuse.mlir); these
// are the verifier's diagnostics of the ops it makes: tg.matmul_residual, tg.matmul_bias,
// tg.matmul_bias_gelu, tg.add_layer_norm, tg.matmul_dgelu_bgrad.

func.func @res_shape(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %r: tensor<4x8xf32>) {
  // expected-error @below {{'tg.matmul_residual' op res must have shape [4x16], got [4x8]}}
  %y = tg.matmul_residual %a, %b, %r : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @k_mismatch(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %r: tensor<4x8xf32>) {
  // expected-error @below {{'tg.matmul_residual' op a's last dim 8 must equal b's K 16}}
  %y = tg.matmul_residual %a, %b, %r : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @out_type(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %r: tensor<4x16xf32>) {
  // expected-error @below {{'tg.matmul_residual' op out must have type 'tensor<4x16xf32>', got 'tensor<4x16xbf16>'}}
  %y = tg.matmul_residual %a, %b, %r : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xf32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @mixed_ab(%a: tensor<4x8xbf16>, %b: tensor<8x16xf32>, %r: tensor<4x16xf32>) {
  // expected-error @below {{'tg.matmul_residual' op a and b must have one element type, got 'bf16' and 'f32'}}
  %y = tg.matmul_residual %a, %b, %r : (tensor<4x8xbf16>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @batched_b(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>, %r: tensor<2x4x16xf32>) {
  // expected-error @below {{'tg.matmul_residual' op b must have rank 2, got rank 3}}
  %y = tg.matmul_residual %a, %b, %r : (tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @residual_bias_type(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %r: tensor<4x16xf32>, %bias: tensor<16xbf16>) {
  // expected-error @below {{'tg.matmul_residual' op bias must have type 'tensor<16xf32>', got 'tensor<16xbf16>'}}
  %y = tg.matmul_residual %a, %b, %r, %bias : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xf32>, tensor<16xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @bias_size(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<8xf32>) {
  // expected-error @below {{'tg.matmul_bias' op bias must have type 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %y = tg.matmul_bias %a, %b, %bias : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @bias_out(%a: tensor<2x4x8xf32>, %b: tensor<16x8xf32>, %bias: tensor<16xf32>) {
  // expected-error @below {{'tg.matmul_bias' op out must have type 'tensor<2x4x16xf32>', got 'tensor<4x16xf32>'}}
  %y = tg.matmul_bias %a, %b, %bias {transpose_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @gelu_k(%a: tensor<4x8xbf16>, %b: tensor<16x32xbf16>, %bias: tensor<32xbf16>) {
  // expected-error @below {{'tg.matmul_bias_gelu' op a's last dim 8 must equal b's K 16}}
  %p, %y = tg.matmul_bias_gelu %a, %b, %bias : (tensor<4x8xbf16>, tensor<16x32xbf16>, tensor<32xbf16>) -> (tensor<4x32xbf16>, tensor<4x32xbf16>)
  return
}

// -----

func.func @gelu_pre(%a: tensor<4x8xbf16>, %b: tensor<8x32xbf16>, %bias: tensor<32xbf16>) {
  // expected-error @below {{'tg.matmul_bias_gelu' op pre must have type 'tensor<4x32xbf16>', got 'tensor<4x32xf32>'}}
  %p, %y = tg.matmul_bias_gelu %a, %b, %bias : (tensor<4x8xbf16>, tensor<8x32xbf16>, tensor<32xbf16>) -> (tensor<4x32xf32>, tensor<4x32xbf16>)
  return
}

// -----

func.func @add_norm_narrow(%a: tensor<4x8xbf16>, %b: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.add_layer_norm' op b must have element type 'bf16' (a's; a narrower b only into an f32 sum), got 'f16'}}
  %s, %y, %m, %r = tg.add_layer_norm %a, %b, %g, %g : (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @add_norm_sum(%a: tensor<4x8xf32>, %b: tensor<4x8xbf16>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.add_layer_norm' op sum must have type 'tensor<4x8xf32>', got 'tensor<4x8xbf16>'}}
  %s, %y, %m, %r = tg.add_layer_norm %a, %b, %g, %g : (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @add_norm_b_shape(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.add_layer_norm' op b must have shape [4x8], got [8x4]}}
  %s, %y, %m, %r = tg.add_layer_norm %a, %b, %g, %g : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @add_norm_gamma(%a: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @below {{'tg.add_layer_norm' op gamma must have shape [8], got [4]}}
  %s, %y, %m, %r = tg.add_layer_norm %a, %a, %g, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @add_norm_stats(%a: tensor<2x4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.add_layer_norm' op rstd must have shape [2x4], got [8]}}
  %s, %y, %m, %r = tg.add_layer_norm %a, %a, %g, %g : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<8xf32>)
  return
}

// -----

func.func @add_norm_eps(%a: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.add_layer_norm' op eps must be positive}}
  %s, %y, %m, %r = tg.add_layer_norm %a, %a, %g, %g {eps = 0.0 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @dgelu_pre(%a: tensor<4x8xbf16>, %b: tensor<8x32xbf16>, %pre: tensor<4x32xf32>) {
  // expected-error @below {{'tg.matmul_dgelu_bgrad' op pre must have type 'tensor<4x32xbf16>', got 'tensor<4x32xf32>'}}
  %dx, %db = tg.matmul_dgelu_bgrad %a, %b, %pre : (tensor<4x8xbf16>, tensor<8x32xbf16>, tensor<4x32xf32>) -> (tensor<4x32xbf16>, tensor<32xbf16>)
  return
}

// -----

func.func @dgelu_db(%a: tensor<4x8xf32>, %b: tensor<32x8xf32>, %pre: tensor<4x32xf32>) {
  // expected-error @below {{'tg.matmul_dgelu_bgrad' op db must have type 'tensor<32xf32>', got 'tensor<8xf32>'}}
  %dx, %db = tg.matmul_dgelu_bgrad %a, %b, %pre {transpose_b = true} : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<8xf32>)
  return
}

// -----

func.func @dgelu_k(%a: tensor<4x16xf32>, %b: tensor<8x32xf32>, %pre: tensor<4x32xf32>) {
  // expected-error @below {{'tg.matmul_dgelu_bgrad' op a's last dim 16 must equal b's K 8}}
  %dx, %db = tg.matmul_dgelu_bgrad %a, %b, %pre : (tensor<4x16xf32>, tensor<8x32xf32>, tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<32xf32>)
  return
}
