// RUN: tg-opt %s -split-input-file -verify-diagnostics
// The verifiers of the Llama family's ops (tg.rms_norm, tg.rms_norm_grad, tg.rope,
// tg.swiglu, tg.swiglu_grad) and of grouped-query tg.attention / tg.attention_grad /
// tg.attention_qkv {kv_heads}: one malformed use per case.

func.func @rms_norm_rank0(%x: tensor<f32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.rms_norm' op x must have rank >= 1}}
  %y, %r = tg.rms_norm %x, %g : (tensor<f32>, tensor<8xf32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @rms_norm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @below {{'tg.rms_norm' op gamma must have shape [8], got [4]}}
  %y, %r = tg.rms_norm %x, %g : (tensor<2x8xf32>, tensor<4xf32>) -> (tensor<2x8xf32>, tensor<2xf32>)
  return
}

// -----

func.func @rms_norm_y(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.rms_norm' op y must have shape [2x8], got [2x4]}}
  %y, %r = tg.rms_norm %x, %g : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @rms_norm_rstd(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.rms_norm' op rstd must have shape [2x3], got [2]}}
  %y, %r = tg.rms_norm %x, %g : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2xf32>)
  return
}

// -----

func.func @rms_norm_rstd_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{result #1 must be ranked tensor of 32-bit float values}}
  %y, %r = tg.rms_norm %x, %g : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xbf16>, tensor<2xbf16>)
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'tg.rms_norm' op eps must be > 0}}
  %y, %r = tg.rms_norm %x, %g {eps = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2xf32>)
  return
}

// -----

func.func @rms_norm_grad_dy(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>, %g: tensor<8xf32>, %r: tensor<2xf32>) {
  // expected-error @below {{'tg.rms_norm_grad' op dy must have shape [2x8], got [2x4]}}
  %dx, %dg = tg.rms_norm_grad %dy, %x, %g, %r : (tensor<2x4xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_rstd(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %r: tensor<8xf32>) {
  // expected-error @below {{'tg.rms_norm_grad' op rstd must have shape [2], got [8]}}
  %dx, %dg = tg.rms_norm_grad %x, %x, %g, %r : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_dx(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %r: tensor<2xf32>) {
  // expected-error @below {{'tg.rms_norm_grad' op dx must have type 'tensor<2x8xf32>', got 'tensor<2x8xbf16>'}}
  %dx, %dg = tg.rms_norm_grad %x, %x, %g, %r : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>) -> (tensor<2x8xbf16>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_dgamma(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %r: tensor<2xf32>) {
  // expected-error @below {{'tg.rms_norm_grad' op dgamma must have type 'tensor<8xf32>', got 'tensor<2x8xf32>'}}
  %dx, %dg = tg.rms_norm_grad %x, %x, %g, %r : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @rope_rank(%x: tensor<4x32xf32>) {
  // expected-error @below {{'tg.rope' op x must have rank 3, got rank 2}}
  %r = tg.rope %x {heads = 2 : i64, kv_heads = 1 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<2x4x32xf32>) {
  // expected-error @below {{'tg.rope' op result must have type 'tensor<2x4x32xf32>', got 'tensor<2x4x32xbf16>'}}
  %r = tg.rope %x {heads = 2 : i64, kv_heads = 1 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x32xf32>) -> tensor<2x4x32xbf16>
  return
}

// -----

func.func @rope_kv_heads_divide(%x: tensor<2x4x40xf32>) {
  // expected-error @below {{'tg.rope' op kv_heads 2 must be > 0 and divide heads 3}}
  %r = tg.rope %x {heads = 3 : i64, kv_heads = 2 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x40xf32>) -> tensor<2x4x40xf32>
  return
}

// -----

func.func @rope_kv_heads_zero(%x: tensor<2x4x32xf32>) {
  // expected-error @below {{'tg.rope' op kv_heads 0 must be > 0 and divide heads 4}}
  %r = tg.rope %x {heads = 4 : i64, kv_heads = 0 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

// 4 + 2 x 2 = 8 head slots do not divide 36.
func.func @rope_width(%x: tensor<2x4x36xf32>) {
  // expected-error @below {{'tg.rope' op x's last dim 36 must be (heads 4 + 2 x kv_heads 2) x an even head dim}}
  %r = tg.rope %x {heads = 4 : i64, kv_heads = 2 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x36xf32>) -> tensor<2x4x36xf32>
  return
}

// -----

// (2 + 2 x 1) slots of head dim 3: odd, the pairs (i, i + hd/2) do not exist.
func.func @rope_odd_head_dim(%x: tensor<2x4x12xf32>) {
  // expected-error @below {{'tg.rope' op x's last dim 12 must be (heads 2 + 2 x kv_heads 1) x an even head dim}}
  %r = tg.rope %x {heads = 2 : i64, kv_heads = 1 : i64, theta = 10000.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @rope_theta(%x: tensor<2x4x32xf32>) {
  // expected-error @below {{'tg.rope' op theta must be > 1}}
  %r = tg.rope %x {heads = 2 : i64, kv_heads = 1 : i64, theta = 1.0 : f32, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

func.func @rope_scaling(%x: tensor<2x4x32xf32>) {
  // expected-error @below {{'tg.rope' op scaling must have 4 values (factor, low_freq_factor, high_freq_factor, original_context), got 3}}
  %r = tg.rope %x {heads = 2 : i64, kv_heads = 1 : i64, theta = 10000.0 : f32, scaling = array<f32: 8.0, 1.0, 4.0>} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

func.func @swiglu_odd(%x: tensor<2x4x7xf32>) {
  // expected-error @below {{'tg.swiglu' op x's last dim must be even (gate | up)}}
  %y = tg.swiglu %x : (tensor<2x4x7xf32>) -> tensor<2x4x3xf32>
  return
}

// -----

func.func @swiglu_shape(%x: tensor<2x4x8xf32>) {
  // expected-error @below {{'tg.swiglu' op result must have shape [2x4x4], got [2x4x8]}}
  %y = tg.swiglu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @swiglu_type(%x: tensor<2x4x8xf32>) {
  // expected-error @below {{'tg.swiglu' op result must have element type 'f32', got 'bf16'}}
  %y = tg.swiglu %x : (tensor<2x4x8xf32>) -> tensor<2x4x4xbf16>
  return
}

// -----

func.func @swiglu_grad_odd(%x: tensor<2x7xf32>, %dy: tensor<2x3xf32>) {
  // expected-error @below {{'tg.swiglu_grad' op x's last dim must be even (gate | up)}}
  %dx = tg.swiglu_grad %x, %dy : (tensor<2x7xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
  return
}

// -----

func.func @swiglu_grad_dy(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @below {{'tg.swiglu_grad' op dy must have shape [2x4], got [2x8]}}
  %dx = tg.swiglu_grad %x, %dy : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @swiglu_grad_result(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>) {
  // expected-error @below {{'tg.swiglu_grad' op result must have type 'tensor<2x8xf32>', got 'tensor<2x4xf32>'}}
  %dx = tg.swiglu_grad %x, %dy : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// k with 3 heads cannot serve 4 query heads (3 does not divide 4): k must then be q's type.
func.func @attention_kv_heads_divide(%q: tensor<1x4x4x8xf32>, %k: tensor<1x3x4x8xf32>) {
  // expected-error @below {{'tg.attention' op k must have type 'tensor<1x4x4x8xf32>', got 'tensor<1x3x4x8xf32>'}}
  %o, %l = tg.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<1x4x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  return
}

// -----

// k's heads divide q's, but its sequence length differs.
func.func @attention_kv_length(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x8x8xf32>) {
  // expected-error @below {{'tg.attention' op k must have type 'tensor<1x4x4x8xf32>', got 'tensor<1x2x8x8xf32>'}}
  %o, %l = tg.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  return
}

// -----

// v must have k's type (the same kv heads).
func.func @attention_v_heads(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x1x4x8xf32>) {
  // expected-error @below {{'tg.attention' op v must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x1x4x8xf32>'}}
  %o, %l = tg.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4xf32>)
  return
}

// -----

// The output has q's heads, not k's.
func.func @attention_out_heads(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @below {{'tg.attention' op out must have type 'tensor<1x4x4x8xf32>', got 'tensor<1x2x4x8xf32>'}}
  %o, %l = tg.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x4x4xf32>)
  return
}

// -----

// dk has k's (kv) heads: the sum over each group of query heads.
func.func @attention_grad_dk(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %lse: tensor<1x4x4xf32>) {
  // expected-error @below {{'tg.attention_grad' op dk must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x4x4x8xf32>'}}
  %dq, %dk, %dv = tg.attention_grad %q, %k, %k, %q, %lse, %q {scale = 1.0 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_qkv_kv_heads_divide(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op kv_heads 3 must divide heads 4}}
  %o, %l = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = 3 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @attention_qkv_kv_heads_negative(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op kv_heads -2 must divide heads 4}}
  %o, %l = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = -2 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  return
}

// -----

// 4 + 2 x 2 = 8 head slots do not divide 60.
func.func @attention_qkv_width(%qkv: tensor<1x4x60xf32>) {
  // expected-error @below {{'tg.attention_qkv' op qkv's last dim 60 must be (heads 4 + 2 x kv_heads 2) x head dim}}
  %o, %l = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x4x60xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  return
}

// -----

// [1, 4, 64] with 4 query and 2 kv heads: head dim 8, out [1, 4, 4 x 8]; a multi-head
// reading (64 / 3) would be wrong.
func.func @attention_qkv_out(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op out must have shape [1x4x32], got [1x4x16]}}
  %o, %l = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @attention_qkv_lse(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op lse must have shape [1x4x4], got [1x2x4]}}
  %o, %l = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_qkv_gqa_window(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op a sliding window needs causal = true}}
  %o, %l = tg.attention_qkv %qkv {heads = 4 : i64, kv_heads = 2 : i64, causal = false, window = 2 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @attention_qkv_grad_dqkv(%qkv: tensor<1x4x64xf32>, %o: tensor<1x4x32xf32>, %lse: tensor<1x4x4xf32>) {
  // expected-error @below {{'tg.attention_qkv_grad' op dqkv must have type 'tensor<1x4x64xf32>', got 'tensor<1x4x96xf32>'}}
  %d = tg.attention_qkv_grad %qkv, %o, %lse, %o {heads = 4 : i64, kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x4xf32>, tensor<1x4x32xf32>) -> tensor<1x4x96xf32>
  return
}

// -----

func.func @attention_qkv_grad_out(%qkv: tensor<1x4x64xf32>, %o: tensor<1x4x64xf32>, %lse: tensor<1x4x4xf32>) {
  // expected-error @below {{'tg.attention_qkv_grad' op out must have shape [1x4x32], got [1x4x64]}}
  %d = tg.attention_qkv_grad %qkv, %o, %lse, %o {heads = 4 : i64, kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x4xf32>, tensor<1x4x64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @rms_norm_grad_rank0(%x: tensor<f32>, %g: tensor<8xf32>, %r: tensor<f32>) {
  // expected-error @below {{'tg.rms_norm_grad' op x must have rank >= 1}}
  %dx, %dg = tg.rms_norm_grad %x, %x, %g, %r : (tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<f32>) -> (tensor<f32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_qkv_negative_heads(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op heads must be > 0, got -2}}
  %o, %l = tg.attention_qkv %qkv {heads = -2 : i64, kv_heads = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @attention_qkv_zero_heads(%qkv: tensor<1x4x64xf32>) {
  // expected-error @below {{'tg.attention_qkv' op heads must be > 0, got 0}}
  %o, %l = tg.attention_qkv %qkv {heads = 0 : i64, kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<1x4x64xf32>) -> (tensor<1x4x0xf32>, tensor<1x0x4xf32>)
  return
}
