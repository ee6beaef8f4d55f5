// tg-lower-to-emitc on the Llama family (through `tgc compile --emit=cpp`, whose C++ is the
// lowering's, see lower-to-emitc.mlir): tg.rms_norm / tg.rms_norm_grad -> tgrt_rms_norm_fwd
// / _bwd, tg.rope -> tgrt_rope_scaled (sign 1 forward, -1 for {inverse = true}, in place,
// the Llama 3 scaling as four floats), tg.swiglu / tg.swiglu_grad -> tgrt_swiglu_fwd / _bwd,
// grouped-query tg.attention_qkv / _grad -> tgrt_attention_gqa_fwd / _bwd reading q, k, v
// in place in the packed projection. Pointers are resolved to planned offsets
// (Inputs/resolve_pointers.py); the checks relate them with FileCheck numeric variables.
//
// 1 layer, batch 2, context 8, d_model 64, 4 query heads and 2 kv heads of head_dim 32
// (qkv [2, 8, (4 + 2 x 2) x 32 = 256], attention output [2, 8, 128]), d_ff 48, RoPE theta
// 10000 with the Llama 3 scaling factor 8, low 1, high 4, original context 16.
// RUN: tgc compile %tg_src/examples/tiny-llama.json --set model.n_layers=1 --set model.context=8 \
// RUN:   --set model.d_model=64 --set model.n_heads=4 --set model.n_kv_heads=2 --set model.head_dim=32 \
// RUN:   --set model.d_ff=48 --set model.vocab_size=64 --set training.batch_size=2 \
// RUN:   --set model.rope_scaling.factor=8 --set model.rope_scaling.original_context=16 \
// RUN:   --set training.attention.kernel=flash --emit=cpp -o %t.flash.cpp
// RUN: %python %S/Inputs/resolve_pointers.py < %t.flash.cpp | FileCheck %s
// RUN: c++ -std=c++17 -fsyntax-only -I%tg_src %t.flash.cpp
// bf16-mixed: RMSNorm reads f32 x and gamma and writes bf16 y; RoPE, SwiGLU, attention bf16.
// RUN: tgc compile %tg_src/examples/tiny-llama.json --set model.n_layers=1 --set model.context=8 \
// RUN:   --set model.d_model=64 --set model.n_heads=4 --set model.n_kv_heads=2 --set model.head_dim=32 \
// RUN:   --set model.d_ff=48 --set model.vocab_size=64 --set training.batch_size=2 \
// RUN:   --set model.rope_scaling.factor=8 --set model.rope_scaling.original_context=16 \
// RUN:   --set training.attention.kernel=flash --set training.precision=bf16-mixed --emit=cpp -o %t.bf16.cpp
// RUN: FileCheck %s --check-prefix=BF16 < %t.bf16.cpp
// RUN: c++ -std=c++17 -fsyntax-only -I%tg_src %t.bf16.cpp
// Naive grouped-query attention: no attention kernel, the views' mask over [B Hkv G] = 8
// blocks of 8 x 8, RoPE all the same.
// RUN: tgc compile %tg_src/examples/tiny-llama.json --set model.n_layers=1 --set model.context=8 \
// RUN:   --set model.d_model=64 --set model.n_heads=4 --set model.n_kv_heads=2 --set model.head_dim=32 \
// RUN:   --set model.d_ff=48 --set model.vocab_size=64 --set training.batch_size=2 \
// RUN:   --set model.rope_scaling.factor=8 --set model.rope_scaling.original_context=16 --emit=cpp \
// RUN:   | FileCheck %s --check-prefix=NAIVE --implicit-check-not=tgrt_attention
// Multi-head (n_kv_heads = n_heads) with head_dim 32 != d_model 48 / 2 heads: GPT-2's
// tgrt_attention_fwd / _bwd on the packed [2, 8, 3 x 64] projection, no GQA call; no scaling.
// RUN: tgc compile %tg_src/examples/tiny-llama.json --set model.n_layers=1 --set model.context=8 \
// RUN:   --set model.d_model=48 --set model.n_heads=2 --set model.n_kv_heads=2 --set model.head_dim=32 \
// RUN:   --set model.d_ff=48 --set model.vocab_size=64 --set training.batch_size=2 \
// RUN:   --set training.attention.kernel=flash --emit=cpp \
// RUN:   | %python %S/Inputs/resolve_pointers.py | FileCheck %s --check-prefix=MHA --implicit-check-not=tgrt_attention_gqa

// CHECK-LABEL: extern "C" void tg_micro_step(tgrt_ctx* ctx) {
// CHECK:      tgrt_rms_norm_fwd(ctx, "layers.0.ln1", TGRT_F32, (float*)(A + [[#X0:]]), TGRT_F32, (float*)(P + [[#G1:]]), TGRT_F32, (float*)(A + [[#Y1:]]), (float*)(A + [[#R1:]]), 16, 64, 9.999999740e-06f);
// CHECK-NEXT: tgrt_matmul(ctx, "layers.0.attn.qkv", TGRT_F32, (float*)(A + [[#Y1]]), (float*)(P + [[#WQKV:]]), (float*)(A + [[#QKV:]]), 1, 16, 256, 64,
// In place on the projection: batch 2, t 8, heads 4, kv_heads 2, hd 32, theta, scaling, sign 1.
// CHECK-NEXT: tgrt_rope_scaled(ctx, "layers.0.attn.rope", TGRT_F32, (float*)(A + [[#QKV]]), (float*)(A + [[#QKV]]), 2, 8, 4, 2, 32, 1.000000000e+04f, 8.000000000e+00f, 1.000000000e+00f, 4.000000000e+00f, 1.600000000e+01f, 1);
// q, k, v at 0, 4 x 32 and (4 + 2) x 32 floats into each token's 256: q and kv strides
// (t W, hd, W) = (2048, 32, 256), out [2, 8, 128] strides (1024, 32, 128), causal, window 0,
// scale 1/sqrt(32).
// CHECK-NEXT: tgrt_attention_gqa_fwd(ctx, "layers.0.attn.pv", TGRT_F32, (float*)(A + [[#QKV]]), (float*)(A + [[#QKV+512]]), (float*)(A + [[#QKV+768]]), (float*)(A + [[#OUT:]]), (float*)(A + [[#LSE:]]), 2, 4, 2, 8, 32, 2048, 32, 256, 2048, 32, 256, 1024, 32, 128, 1, 0, 1.767766920e-01f);
// tg-fuse's tg.matmul_residual: the output projection straight into the residual stream
// (no bias: NULL), x1 = x0 + out . W (x0 stays: RMSNorm's backward reads it).
// CHECK-NEXT: tgrt_matmul_bias_residual(ctx, "layers.0.attn.proj", TGRT_F32, (float*)(A + [[#OUT]]), (float*)(P + {{[0-9]+}}), TGRT_F32, NULL, (float*)(A + [[#X0]]), (float*)(A + [[#X1:]]), 16, 64, 128, 0, 0,
// CHECK:      tgrt_rms_norm_fwd(ctx, "layers.0.ln2", TGRT_F32, (float*)(A + [[#X1]]), TGRT_F32, (float*)(P + [[#G2:]]), TGRT_F32, (float*)(A + [[#Y2:]]), (float*)(A + [[#R2:]]), 16, 64,
// CHECK-NEXT: tgrt_matmul(ctx, "layers.0.mlp.fc", TGRT_F32, (float*)(A + [[#Y2]]), (float*)(P + {{[0-9]+}}), (float*)(A + [[#FC:]]), 1, 16, 96, 64,
// 16 rows of gate | up [96] -> [48].
// CHECK-NEXT: tgrt_swiglu_fwd(ctx, "layers.0.mlp.swiglu", TGRT_F32, (float*)(A + [[#FC]]), (float*)(A + [[#SW:]]), 16, 48);
// CHECK-NEXT: tgrt_matmul_bias_residual(ctx, "layers.0.mlp.proj", TGRT_F32, (float*)(A + [[#SW]]), (float*)(P + {{[0-9]+}}), TGRT_F32, NULL, (float*)(A + [[#X1]]), (float*)(A + [[#X2:]]), 16, 64, 48, 0, 0,
// CHECK:      tgrt_rms_norm_fwd(ctx, "ln_f", TGRT_F32, (float*)(A + [[#X2]]), TGRT_F32, (float*)(P + [[#GF:]]), TGRT_F32, (float*)(A + {{[0-9]+}}), (float*)(A + [[#RF:]]), 16, 64,
// The fused loss is the first write of the tied table's slot (the embedding's backward adds
// later): it writes the slot, which is not zeroed first.
// CHECK-NOT:  zero_grad.wte
// CHECK:      tgrt_linear_cross_entropy_store(
// The backward: dy, the forward's x, gamma and rstd -> dx, dgamma. The gradient slots are
// in the arena (grad_accum 1); each norm's dgamma is its slot's only write, so the call
// writes the slot (no tgrt_zero before it, no tgrt_accumulate after it).
// CHECK-NEXT: tgrt_rms_norm_bwd(ctx, "ln_f", TGRT_F32, (float*)(A + {{[0-9]+}}), TGRT_F32, (float*)(A + [[#X2]]), TGRT_F32, (float*)(P + [[#GF]]), (float*)(A + [[#RF]]), (float*)(A + [[#DRES:]]), (float*)(A + {{[0-9]+}}), 16, 64);
// CHECK-NOT:  zero_grad.ln
// CHECK-NOT:  tgrt_accumulate
// CHECK:      tgrt_matmul(ctx, "layers.0.mlp.proj", TGRT_F32, (float*)(A + {{[0-9]+}}), (float*)(P + {{[0-9]+}}), (float*)(A + [[#DSW:]]), 1, 16, 48, 64,
// CHECK:      tgrt_swiglu_bwd(ctx, "layers.0.mlp.swiglu", TGRT_F32, (float*)(A + [[#FC]]), (float*)(A + [[#DSW]]), (float*)(A + [[#DFC:]]), 16, 48);
// CHECK-NEXT: tgrt_matmul(ctx, "layers.0.mlp.fc", TGRT_F32, (float*)(A + [[#DFC]]),
// The residual stream's gradient (ln_f's dx) takes each block norm's dx in the same call
// (tgrt_rms_norm_bwd_acc: dres += dx, in place; fp32: no low copy), not a tgrt_add after it.
// CHECK:      tgrt_rms_norm_bwd_acc(ctx, "layers.0.ln2", TGRT_F32, (float*)(A + {{[0-9]+}}), TGRT_F32, (float*)(A + [[#X1]]), TGRT_F32, (float*)(P + [[#G2]]), (float*)(A + [[#R2]]), (float*)(A + [[#DRES]]), TGRT_F32, NULL, (float*)(A + {{[0-9]+}}), 16, 64);
// CHECK-NEXT: tgrt_matmul(ctx, "layers.0.attn.proj", TGRT_F32, (float*)(A + [[#DRES]]),
// dq, dk, dv written into one packed dqkv (the same offsets 0, 512, 768 bytes), then rotated
// back in place (sign -1) and fed to the qkv projection's gradient.
// CHECK:      tgrt_attention_gqa_bwd(ctx, "layers.0.attn.pv", TGRT_F32, (float*)(A + [[#QKV]]), (float*)(A + [[#QKV+512]]), (float*)(A + [[#QKV+768]]), (float*)(A + [[#OUT]]), (float*)(A + [[#LSE]]), (float*)(A + {{[0-9]+}}), (float*)(A + [[#DQKV:]]),
// CHECK-SAME: (float*)(A + [[#DQKV+512]]), (float*)(A + [[#DQKV+768]]), 2, 4, 2, 8, 32, 2048, 32, 256, 2048, 32, 256, 1024, 32, 128, 1, 0, 1.767766920e-01f);
// CHECK-NEXT: tgrt_rope_scaled(ctx, "layers.0.attn.rope", TGRT_F32, (float*)(A + [[#DQKV]]), (float*)(A + [[#DQKV]]), 2, 8, 4, 2, 32, 1.000000000e+04f, 8.000000000e+00f, 1.000000000e+00f, 4.000000000e+00f, 1.600000000e+01f, -1);
// CHECK-NEXT: tgrt_matmul(ctx, "layers.0.attn.qkv", TGRT_F32, (float*)(A + [[#DQKV]]), (float*)(P + [[#WQKV]]), (float*)(A + [[#DY1:]]), 1, 16, 64, 256,
// CHECK:      tgrt_rms_norm_bwd_acc(ctx, "layers.0.ln1", TGRT_F32, (float*)(A + [[#DY1]]), TGRT_F32, (float*)(A + [[#X0]]), TGRT_F32, (float*)(P + [[#G1]]), (float*)(A + [[#R1]]), (float*)(A + [[#DRES]]), TGRT_F32, NULL,
// CHECK-NEXT: tgrt_embedding_bwd_acc(ctx, "wte", TGRT_F32, (int32_t*)(P + {{[0-9]+}}), (float*)(A + [[#DRES]]),
// CHECK-LABEL: extern "C" void tg_optimizer_step(
// CHECK-LABEL: extern "C" void tg_eval_step(
// CHECK:      tgrt_rope_scaled(ctx, "layers.0.attn.rope", TGRT_F32, {{.*}}, 1);
// CHECK-NEXT: tgrt_attention_gqa_fwd(ctx, "layers.0.attn.pv", TGRT_F32,
// CHECK:      tgrt_swiglu_fwd(

// BF16-LABEL: extern "C" void tg_micro_step(
// BF16:      tgrt_rms_norm_fwd(v{{[0-9]+}}, "layers.0.ln1", TGRT_F32, v{{[0-9]+}}, TGRT_F32, v{{[0-9]+}}, TGRT_BF16,
// BF16:      tgrt_rope_scaled(v{{[0-9]+}}, "layers.0.attn.rope", TGRT_BF16, [[QKV:v[0-9]+]], [[QKV]], 2, 8, 4, 2, 32, {{.*}}, 1);
// BF16:      tgrt_attention_gqa_fwd(v{{[0-9]+}}, "layers.0.attn.pv", TGRT_BF16, [[QKV]], v{{[0-9]+}}, v{{[0-9]+}}, v{{[0-9]+}}, v{{[0-9]+}}, 2, 4, 2, 8, 32,
// BF16:      tgrt_swiglu_fwd(v{{[0-9]+}}, "layers.0.mlp.swiglu", TGRT_BF16, [[FC:v[0-9]+]], v{{[0-9]+}}, 16, 48);
// The backward's dy is bf16, x and gamma f32.
// BF16:      tgrt_rms_norm_bwd(v{{[0-9]+}}, "ln_f", TGRT_BF16, v{{[0-9]+}}, TGRT_F32, v{{[0-9]+}}, TGRT_F32,
// BF16:      tgrt_swiglu_bwd(v{{[0-9]+}}, "layers.0.mlp.swiglu", TGRT_BF16, [[FC]], v{{[0-9]+}}, v{{[0-9]+}}, 16, 48);
// The block norms' backward adds into the f32 stream gradient (bf16 dy, f32 x and gamma).
// BF16:      tgrt_rms_norm_bwd_acc(v{{[0-9]+}}, "layers.0.ln2", TGRT_BF16, v{{[0-9]+}}, TGRT_F32, v{{[0-9]+}}, TGRT_F32, v{{[0-9]+}}, v{{[0-9]+}}, [[RES:v[0-9]+]],
// BF16:      tgrt_attention_gqa_bwd(v{{[0-9]+}}, "layers.0.attn.pv", TGRT_BF16, [[QKV]],
// BF16:      tgrt_rope_scaled(v{{[0-9]+}}, "layers.0.attn.rope", TGRT_BF16, [[D:v[0-9]+]], [[D]], {{.*}}, -1);

// NAIVE-LABEL: extern "C" void tg_micro_step(
// NAIVE:      tgrt_rope_scaled({{.*}}, 2, 8, 4, 2, 32, 1.000000000e+04f, 8.000000000e+00f, 1.000000000e+00f, 4.000000000e+00f, 1.600000000e+01f, 1);
// NAIVE:      tgrt_causal_mask({{.*}}, "layers.0.attn.mask", TGRT_F32, {{.*}}, 8, 8, 8, 0, -INFINITY);
// NAIVE:      tgrt_softmax_fwd(
// NAIVE:      tgrt_swiglu_fwd(
// NAIVE:      tgrt_swiglu_bwd(
// NAIVE:      tgrt_softmax_bwd(
// NAIVE:      tgrt_rope_scaled({{.*}}, 2, 8, 4, 2, 32, 1.000000000e+04f, 8.000000000e+00f, 1.000000000e+00f, 4.000000000e+00f, 1.600000000e+01f, -1);

// MHA-LABEL: extern "C" void tg_micro_step(
// MHA:      tgrt_rope_scaled(ctx, "layers.0.attn.rope", TGRT_F32, (float*)(A + [[#QKV:]]),
// MHA-SAME: (float*)(A + [[#QKV]]), 2, 8, 2, 2, 32, 1.000000000e+04f, 0.0e+00f, 1.000000000e+00f, 4.000000000e+00f, 8.192000000e+03f, 1);
// MHA-NEXT: tgrt_attention_fwd(ctx, "layers.0.attn.pv", TGRT_F32, (float*)(A + [[#QKV]]), (float*)(A + [[#QKV+256]]), (float*)(A + [[#QKV+512]]), (float*)(A + {{[0-9]+}}), (float*)(A + {{[0-9]+}}), 2, 2, 8, 32, 1536, 32, 192, 512, 32, 64, 1, 0, 1.767766920e-01f);
// MHA:      tgrt_attention_bwd(ctx, "layers.0.attn.pv", TGRT_F32, (float*)(A + [[#QKV]]),
// MHA-NEXT: tgrt_rope_scaled({{.*}}, -1);
