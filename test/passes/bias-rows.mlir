// tg-bias-rows (training.bias_rows): a layer-norm-fed linear layer's bias carried in its
// GEMMs. tgc's pipeline on examples/tiny.json (d 64, d_ff 256, 8 x 64 tokens), one layer.
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --emit=planned -o - | FileCheck %s
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --emit=cpp -o - | FileCheck %s --check-prefix=CPP
// Off by default (for the CPU), and left alone where the weight gradient does not write its
// slot once (grad_accum 2):
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --emit=planned -o - \
// RUN:   | FileCheck %s --check-prefix=OFF
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.bias_rows=on \
// RUN:   --set training.grad_accum=2 --emit=planned -o - | FileCheck %s --check-prefix=OFF
// Under checkpointing the recomputed layer norms that feed the weight gradients get the ones
// column (selective: a tg.layer_norm and tg-fuse's tg.add_layer_norm; layer: the GEMMs are
// recomputed too and read it):
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --set training.checkpointing=selective --emit=planned -o - \
// RUN:   | FileCheck %s --check-prefix=SEL
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --set training.checkpointing=selective --emit=cpp -o - \
// RUN:   | FileCheck %s --check-prefix=SELCPP
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --set training.checkpointing=layer --emit=planned -o - \
// RUN:   | FileCheck %s --check-prefix=LAYER
// Persistent gradient slots (training.gradients=persistent; a checkpointing budget keeps them
// so too): the weight gradients add into the weight's and bias's slots:
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.bias_rows=on --set training.gradients=persistent --emit=cpp -o - \
// RUN:   | FileCheck %s --check-prefix=PERSIST
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

// selective: both pairs; the forward's layer norms and GEMMs keep their plain rows (no ones
// column, no tg.bias_rows); the recomputed ones carry the column and the weight gradients
// read it.
// SEL: tg.bias_rows = {{\[\["layers.0.attn.qkv.weight", "layers.0.attn.qkv.bias"\], \["layers.0.mlp.fc.weight", "layers.0.mlp.fc.bias"\]\]}}
// SEL-LABEL: func.func @micro_step
// SEL: tg.layer_norm %{{[0-9]+}}, %arg2, %arg3 {tg.layer = 0 : i64, tg.offsets = {{[^}]*}}, tg.phase = "forward"}
// SEL: tg.matmul_bias %y, {{.*}}tg.phase = "forward"}
// SEL: tg.add_layer_norm {{.*}}tg.phase = "forward"}
// SEL: tg.matmul_bias_gelu %y_0, {{.*}}tg.phase = "forward"}
// SEL: tg.layer_norm {{.*}}tg.ones_column, tg.phase = "backward", tg.recompute}
// SEL: tg.add_layer_norm {{.*}}tg.ones_column, tg.phase = "backward", tg.recompute}
// SEL: tg.matmul {{.*}}tg.bias_rows{{.*}}transpose_a = true
// SEL: tg.matmul {{.*}}tg.bias_rows{{.*}}transpose_a = true

// The forward: the plain calls; the recomputation: the ones-column forms (y rows 128 apart),
// and the weight gradients with M = 72 over them; no separate sums for those two biases.
// SELCPP-LABEL: tg_micro_step
// SELCPP: tgrt_layer_norm_fwd(v1, "layers.0.ln1", TGRT_F32, {{.*}}, 512, 64,
// SELCPP: tgrt_matmul_bias(v1, "layers.0.attn.qkv", TGRT_BF16, {{.*}}, 512, 192, 64, 0, 0,
// SELCPP: tgrt_add_layer_norm_fwd(v1, "layers.0.attn.residual",
// SELCPP: tgrt_matmul_bias_gelu(v1, "layers.0.mlp.fc", TGRT_BF16, {{.*}}, 512, 256, 64, 0, 0,
// SELCPP: tgrt_layer_norm_fwd_ones(v1, "layers.0.ln1", TGRT_F32, {{.*}}, 512, 64,
// SELCPP: tgrt_add_layer_norm_fwd_ones(v1, "layers.0.attn.residual", TGRT_F32, {{.*}}, 512, 64,
// SELCPP: tgrt_matmul_wgrad_lda(v1, "layers.0.mlp.fc", TGRT_BF16, {{.*}}, TGRT_F32, {{.*}}, 72, 256, 512, 128, 0, {{.*}});
// SELCPP: tgrt_matmul_wgrad_lda(v1, "layers.0.attn.qkv", TGRT_BF16, {{.*}}, TGRT_F32, {{.*}}, 72, 192, 512, 128, 0, {{.*}});
// SELCPP-NOT: tgrt_bias_grad{{.*}}"layers.0.attn.qkv
// SELCPP-NOT: tgrt_bias_grad{{.*}}"layers.0.mlp.fc
// SELCPP: tg_eval_step

// layer: the recomputed GEMMs read the recomputed layer norms' ones-column output.
// LAYER: tg.bias_rows = {{\[\["layers.0.attn.qkv.weight", "layers.0.attn.qkv.bias"\], \["layers.0.mlp.fc.weight", "layers.0.mlp.fc.bias"\]\]}}
// LAYER-LABEL: func.func @micro_step
// LAYER-NOT: tg.ones_column, tg.phase = "forward"
// LAYER: tg.layer_norm {{.*}}tg.ones_column, tg.phase = "backward", tg.recompute}
// LAYER: tg.matmul_bias {{.*}}tg.bias_rows, tg.layer = 0 : i64, {{.*}}tg.phase = "backward", tg.recompute}
// LAYER: tg.matmul {{.*}}tg.bias_rows{{.*}}transpose_a = true

// PERSIST-LABEL: tg_micro_step
// PERSIST: tgrt_matmul_acc_lda(v1, "layers.0.mlp.fc", TGRT_BF16, {{.*}}, TGRT_F32, {{.*}}, 72, 256, 512, 128, 0, {{.*}});
// PERSIST: tgrt_matmul_acc_lda(v1, "layers.0.attn.qkv", TGRT_BF16, {{.*}}, TGRT_F32, {{.*}}, 72, 192, 512, 128, 0, {{.*}});
// PERSIST-NOT: tgrt_bias_grad{{.*}}"layers.0.attn.qkv
// PERSIST-NOT: tgrt_bias_grad{{.*}}"layers.0.mlp.fc
// PERSIST: tg_eval_step
