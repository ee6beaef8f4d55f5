// RUN: tg-opt %s -split-input-file -verify-diagnostics
// Every tg op's verifier: one malformed use per case.

func.func @embedding_rank(%t: tensor<16xf32>, %ids: tensor<2x4xi32>) {
  // expected-error @below {{'tg.embedding' op table must have rank 2, got rank 1}}
  %x = tg.embedding %t, %ids : (tensor<16xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @embedding_shape(%t: tensor<16x8xf32>, %ids: tensor<2x4xi32>) {
  // expected-error @below {{'tg.embedding' op result must have shape [2x4x8], got [2x4x9]}}
  %x = tg.embedding %t, %ids : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x9xf32>
  return
}

// -----

func.func @dynamic(%t: tensor<16x8xf32>, %ids: tensor<?x4xi32>) {
  // expected-error @below {{'tg.embedding' op operand #1 must have a static shape}}
  %x = tg.embedding %t, %ids : (tensor<16x8xf32>, tensor<?x4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @ids_type(%t: tensor<16x8xf32>, %ids: tensor<2x4xf32>) {
  // expected-error @below {{operand #1 must be ranked tensor of 32-bit signless integer values}}
  %x = tg.embedding %t, %ids : (tensor<16x8xf32>, tensor<2x4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @positional_long(%x: tensor<2x8x4xf32>, %wpe: tensor<4x4xf32>) {
  // expected-error @below {{'tg.positional_embedding' op sequence length 8 exceeds the positional table's 4 rows}}
  %y = tg.positional_embedding %x, %wpe : (tensor<2x8x4xf32>, tensor<4x4xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @positional_width(%x: tensor<2x4x4xf32>, %wpe: tensor<4x8xf32>) {
  // expected-error @below {{'tg.positional_embedding' op wpe width 8 must equal d_model 4}}
  %y = tg.positional_embedding %x, %wpe : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @add_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @below {{'tg.add' op rhs must have type 'tensor<4xf32>', got 'tensor<4xbf16>'}}
  %c = tg.add %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @below {{'tg.layer_norm' op gamma must have shape [8], got [4]}}
  %y, %m, %r = tg.layer_norm %x, %g, %g : (tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x8xf32>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @layer_norm_stats(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.layer_norm' op mean must have shape [2], got [8]}}
  %y, %m, %r = tg.layer_norm %x, %g, %g : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>)
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.layer_norm' op eps must be positive}}
  %y, %m, %r = tg.layer_norm %x, %g, %g {eps = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @matmul_k(%a: tensor<2x3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @below {{'tg.matmul' op contraction dims differ: a has 4, b has 5}}
  %c = tg.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x6xf32>) {
  // expected-error @below {{'tg.matmul' op batch dims differ: a [2], b [3]}}
  %c = tg.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<3x4xf32>, %b: tensor<6x4xf32>) {
  // expected-error @below {{'tg.matmul' op result must have shape [3x6], got [3x4]}}
  %c = tg.matmul %a, %b {transpose_b = true} : (tensor<3x4xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @below {{'tg.matmul' op a must have rank >= 2, got rank 1}}
  %c = tg.matmul %a, %b : (tensor<4xf32>, tensor<4x6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @bias(%x: tensor<2x8xf32>, %b: tensor<4xf32>) {
  // expected-error @below {{'tg.bias_add' op bias must have shape [8], got [4]}}
  %y = tg.bias_add %x, %b : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @gelu(%x: tensor<2x8xf32>) {
  // expected-error @below {{'tg.gelu' op result must have type 'tensor<2x8xf32>', got 'tensor<2x8xf16>'}}
  %y = tg.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf16>
  return
}

// -----

func.func @dropout(%x: tensor<2x8xf32>) {
  // expected-error @below {{'tg.dropout' op rate must be in [0, 1), got 1}}
  %y = tg.dropout %x {rate = 1.0 : f32, seed = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @reshape(%x: tensor<2x8xf32>) {
  // expected-error @below {{'tg.reshape' op cannot reshape [2x8] (16 elements) to [3x5] (15 elements)}}
  %y = tg.reshape %x : (tensor<2x8xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @below {{'tg.transpose' op perm must be a permutation of 0..2}}
  %y = tg.transpose %x {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  return
}

// -----

func.func @transpose_shape(%x: tensor<2x3x4xf32>) {
  // expected-error @below {{'tg.transpose' op result must have shape [2x4x3], got [2x3x4]}}
  %y = tg.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<2x12xf32>) {
  // expected-error @below {{'tg.split' op sizes along axis 1 add up to 8, expected 12}}
  %a, %b = tg.split %x {axis = 1 : i64} : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @split_axis(%x: tensor<2x12xf32>) {
  // expected-error @below {{'tg.split' op axis 2 out of range for rank 2}}
  %a, %b = tg.split %x {axis = 2 : i64} : (tensor<2x12xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>)
  return
}

// -----

func.func @concat_shape(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @below {{'tg.concat' op input #1 differs from [2x8] outside axis 1}}
  %c = tg.concat %a, %b {axis = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @mask_window(%x: tensor<4x4xf32>) {
  // expected-error @below {{'tg.causal_mask' op window must be >= 0, got -1}}
  %y = tg.causal_mask %x {window = -1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @mask_rank(%x: tensor<4xf32>) {
  // expected-error @below {{'tg.causal_mask' op x must have rank >= 2 ([..., Tq, Tk])}}
  %y = tg.causal_mask %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @softmax(%x: tensor<4x4xf32>) {
  // expected-error @below {{'tg.softmax' op result must have type 'tensor<4x4xf32>', got 'tensor<4x5xf32>'}}
  %y = tg.softmax %x : (tensor<4x4xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @ce_targets(%l: tensor<2x4x16xf32>, %t: tensor<2x5xi32>) {
  // expected-error @below {{'tg.cross_entropy' op targets must have shape [2x4], got [2x5]}}
  %loss = tg.cross_entropy %l, %t : (tensor<2x4x16xf32>, tensor<2x5xi32>) -> tensor<f32>
  return
}

// -----

func.func @ce_ignore(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>) {
  // expected-error @below {{'tg.cross_entropy' op ignore_index must be -1 or a token id, got 16}}
  %loss = tg.cross_entropy %l, %t {ignore_index = 16 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}

// -----

func.func @ce_loss(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>) {
  // expected-error @below {{'tg.cross_entropy' op loss must have shape [], got [1]}}
  %loss = tg.cross_entropy %l, %t : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<1x2x4x8xf32>) {
  // expected-error @below {{'tg.attention' op a sliding window needs causal = true}}
  %o, %l = tg.attention %q, %q, %q {causal = false, window = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_lse(%q: tensor<1x2x4x8xf32>) {
  // expected-error @below {{'tg.attention' op lse must have shape [1x2x4], got [1x2x8]}}
  %o, %l = tg.attention %q, %q, %q {scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @attention_kv(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x4xf32>) {
  // expected-error @below {{'tg.attention' op k must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x2x4x4xf32>'}}
  %o, %l = tg.attention %q, %k, %q {scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @embedding_grad(%ids: tensor<2x4xi32>, %d: tensor<2x4x8xf32>) {
  // expected-error @below {{'tg.embedding_grad' op dout must have shape [2x4x4], got [2x4x8]}}
  %g = tg.embedding_grad %ids, %d : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @positional_grad(%d: tensor<2x8x4xf32>) {
  // expected-error @below {{'tg.positional_embedding_grad' op result [4x4] does not fit dout [2x8x4]}}
  %g = tg.positional_embedding_grad %d : (tensor<2x8x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @layer_norm_grad(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %s: tensor<2xf32>) {
  // expected-error @below {{'tg.layer_norm_grad' op dgamma must have type 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %dx, %dg, %db = tg.layer_norm_grad %x, %x, %g, %s, %s : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

func.func @bias_grad(%d: tensor<2x8xf32>) {
  // expected-error @below {{'tg.bias_grad' op result must have shape [8], got [2]}}
  %g = tg.bias_grad %d : (tensor<2x8xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @gelu_grad(%x: tensor<2x8xf32>, %d: tensor<2x4xf32>) {
  // expected-error @below {{'tg.gelu_grad' op dy must have type 'tensor<2x8xf32>', got 'tensor<2x4xf32>'}}
  %g = tg.gelu_grad %x, %d : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @softmax_grad(%y: tensor<2x8xf32>, %d: tensor<2x4xf32>) {
  // expected-error @below {{'tg.softmax_grad' op dy must have type 'tensor<2x8xf32>', got 'tensor<2x4xf32>'}}
  %g = tg.softmax_grad %y, %d : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @ce_grad(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>, %d: tensor<1xf32>) {
  // expected-error @below {{'tg.cross_entropy_grad' op dloss must have shape [], got [1]}}
  %g = tg.cross_entropy_grad %l, %t, %d : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<1xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @attention_grad(%q: tensor<1x2x4x8xf32>, %l: tensor<1x2x4xf32>, %d: tensor<1x2x4x4xf32>) {
  // expected-error @below {{'tg.attention_grad' op dout must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x2x4x4xf32>'}}
  %dq, %dk, %dv = tg.attention_grad %q, %q, %q, %q, %l, %d {scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @fill(%x: tensor<?xf32>) {
  // expected-error @below {{'tg.fill' op result #0 must have a static shape}}
  %f = tg.fill {value = 0.0 : f32} : tensor<?xf32>
  return
}

// -----

func.func @accumulate(%w: tensor<8xf32>) {
  %g = tg.gelu %w : (tensor<8xf32>) -> tensor<8xf32>
  // expected-error @below {{'tg.accumulate_grad' op param must be a function argument (a parameter)}}
  tg.accumulate_grad %g, %w : tensor<8xf32>
  return
}

// -----

func.func @clip(%w: tensor<8xf32>) {
  // expected-error @below {{'tg.clip_grad_norm' op max_norm must be >= 0}}
  %c = tg.clip_grad_norm %w {max_norm = -1.0 : f32} : (tensor<8xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @adamw(%w: tensor<8xf32>, %c: tensor<2xf32>) {
  // expected-error @below {{'tg.adamw' op betas must be in [0, 1)}}
  tg.adamw %w, %c {beta1 = 1.0 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<8xf32>, tensor<2xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2x8xf32>) {
  // expected-error @below {{'tg.cast' op result must have shape [2x8], got [8x2]}}
  %y = tg.cast %x : (tensor<2x8xf32>) -> tensor<8x2xbf16>
  return
}

// -----

// Same number of elements is not enough: a cast is not a reshape.
func.func @cast_rank(%x: tensor<2x8xf32>) {
  // expected-error @below {{'tg.cast' op result must have shape [2x8], got [16]}}
  %y = tg.cast %x : (tensor<2x8xf32>) -> tensor<16xbf16>
  return
}

// -----

func.func @cast_int(%x: tensor<2x8xf32>) {
  // expected-error @below {{'tg.cast' op result #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<2x8xi32>'}}
  %y = tg.cast %x : (tensor<2x8xf32>) -> tensor<2x8xi32>
  return
}

// -----

func.func @cast_f64(%x: tensor<2x8xf64>) {
  // expected-error @below {{'tg.cast' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<2x8xf64>'}}
  %y = tg.cast %x : (tensor<2x8xf64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @cast_dynamic(%x: tensor<?x8xf32>) {
  // expected-error @below {{'tg.cast' op operand #0 must have a static shape}}
  %y = tg.cast %x : (tensor<?x8xf32>) -> tensor<2x8xbf16>
  return
}

// -----

// y may differ from x in element type, gamma and beta may not differ from each other.
func.func @layer_norm_beta_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error @below {{'tg.layer_norm' op beta must have element type 'f32', got 'bf16'}}
  %y, %m, %r = tg.layer_norm %x, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>) -> (tensor<2x8xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

// The statistics are always f32.
func.func @layer_norm_stats_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.layer_norm' op result #1 must be ranked tensor of 32-bit float values, but got 'tensor<2xbf16>'}}
  %y, %m, %r = tg.layer_norm %x, %g, %g : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xbf16>, tensor<2xbf16>, tensor<2xf32>)
  return
}
