// tg-bias-rows (training.bias_rows): a layer-norm-fed linear layer's bias carried in its
// GEMMs. tgc's pipeline on examples/tiny.json (d 64, d_ff 256, 8 x 64 tokens), one layer.
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --emit=planned -o - | FileCheck %s
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --emit=cpp -o - | FileCheck %s --check-prefix=CPP
// Off by default, and left alone where the weight gradient does not write its slot once
// (grad_accum 2) or the layer norm is recomputed for the backward (selective checkpointing):
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --emit=planned -o - \
// RUN:   | FileCheck %s --check-prefix=OFF
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.bias_rows=on \
// RUN:   --set training.grad_accum=2 --emit=planned -o - | FileCheck %s --check-prefix=OFF
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.bias_rows=on \
// RUN:   --set training.checkpointing=selective --emit=planned -o - | FileCheck %s --check-prefix=OFF
// fp32 (no working copies: the GEMMs read the values themselves):
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=fp32 \
// RUN:   --set training.bias_rows=on --emit=cpp -o - | FileCheck %s --check-prefix=F32

// The pairs, the layer norms with a ones column, the GEMMs that carry the bias:
// CHECK: tg.bias_rows = {{\[\["layers.0.attn.qkv.weight", "layers.0.attn.qkv.bias"\], \["layers.0.mlp.fc.weight", "layers.0.mlp.fc.bias"\]\]}}
// Each bias's slots (after its weight's: the CPP lines below read them through the GEMMs)
// hold 8 rows of n: the bias, then 7 zero rows.
// CHECK: name = "layers.0.attn.qkv.bias", numel = 192 : i64, offset = {{[0-9]+}} : i64, pad_rows = 7 : i64
// CHECK: name = "layers.0.mlp.fc.bias", numel = 256 : i64, offset = {{[0-9]+}} : i64, pad_rows = 7 : i64
// CHECK: tg.layer_norm {{.*}}tg.ones_column
// CHECK-NEXT: tg.cast
// CHECK-NEXT: tg.cast
// CHECK-NEXT: tg.matmul_bias %y, {{.*}}tg.bias_rows
// CHECK: tg.layer_norm {{.*}}tg.ones_column
// CHECK: tg.matmul_bias_gelu {{.*}}tg.bias_rows
// CHECK: tg.matmul {{.*}}tg.bias_rows{{.*}}transpose_a = true
// CHECK: tg.matmul {{.*}}tg.bias_rows{{.*}}transpose_a = true

// The layer norms write y [512, 128] (64 + 64 ones columns); the forward GEMMs read its
// first 64 columns (rows 128 apart) with the bias in their epilogue; the weight gradients
// read its first 72 columns (M = 72, the same pitch) into the weight's and bias's slots at
// once, with no bias-gradient pointer; nothing else writes those bias gradients. AdamW: one call over the decayed run with the biases as islands of no decay
// (base 12288 = the qkv weight, one period: the rest of the run, [0, 1536) the qkv bias
// with its zero rows, [22016, +2048) the MLP bias), one over the no-decay group.
// CPP: tgrt_layer_norm_fwd_ones(v1, "layers.0.ln1", TGRT_F32, {{.*}}, 512, 64,
// CPP: tgrt_matmul_bias_lda(v1, "layers.0.attn.qkv", TGRT_BF16, {{.*}}, 512, 192, 64, 128, 0,
// CPP: tgrt_layer_norm_fwd_ones(v1, "layers.0.ln2", TGRT_F32, {{.*}}, 512, 64,
// CPP: tgrt_matmul_bias_gelu_lda(v1, "layers.0.mlp.fc", TGRT_BF16, {{.*}}, 512, 256, 64, 128, 0,
// CPP: tgrt_matmul_dgelu_bgrad(v1, "layers.0.mlp.proj", TGRT_BF16, {{.*}}, NULL, 512, 256, 64,
// CPP: tgrt_matmul_wgrad_lda(v1, "layers.0.mlp.fc", TGRT_BF16, {{.*}}, TGRT_F32, {{.*}}, 72, 256, 512, 128, 0, {{.*}});
// CPP: tgrt_matmul_wgrad_lda(v1, "layers.0.attn.qkv", TGRT_BF16, {{.*}}, TGRT_F32, {{.*}}, 72, 192, 512, 128, 0, {{.*}});
// CPP-NOT: tgrt_bias_grad{{.*}}"layers.0.attn.qkv
// CPP-NOT: tgrt_bias_grad{{.*}}"layers.0.mlp.fc
// CPP: tgrt_adamw_islands(v1, "optimizer.layers.0.attn.qkv.weight..layers.0.mlp.proj.weight (6 tensors)", TGRT_F32, {{.*}}, 1.000000010e-01f, v5, TGRT_BF16, v{{[0-9]+}}, 12288, 40448, 1, 0, 1536, 22016, 2048);
// CPP: tgrt_adamw_wc(v1, "optimizer.wte..ln_f.bias
// The evaluation step keeps the plain layer norm and GEMM.
// CPP: tg_eval_step
// CPP: tgrt_layer_norm_fwd(v1, "layers.0.ln1",
// CPP: tgrt_matmul_bias(v1, "layers.0.attn.qkv", TGRT_BF16, {{.*}}, 512, 192, 64, 0, 0,

// OFF-NOT: tg.ones_column
// OFF-NOT: pad_rows

// F32: tgrt_layer_norm_fwd_ones(v1, "layers.0.ln1", TGRT_F32, {{.*}}, TGRT_F32,
// F32: tgrt_matmul_bias_lda(v1, "layers.0.attn.qkv", TGRT_F32, {{.*}}, 512, 192, 64, 128, 0,
// F32: tgrt_matmul_wgrad_lda(v1, "layers.0.attn.qkv", TGRT_F32, {{.*}}, 72, 192, 512, 128, 0, {{.*}});
