// -tg-emit-cpp on a planned module: every pointer in the C++ is the planned offset of
// its value (P + persistent slot for parameters and inputs, A + tg.offsets for the
// rest). The planned IR and the C++ are checked in one FileCheck run so the offsets
// read from the IR are the ones the C++ must use.
//
// A 1-layer model: vocab 64, context 8, d_model 32, 1 head of 32, d_ff 64, batch 2.
// RUN: tgc compile %tg_src/examples/tiny.json --set model.n_layers=1 --set model.vocab_size=64 \
// RUN:   --set model.context=8 --set model.d_model=32 --set model.n_heads=1 --set model.d_ff=64 \
// RUN:   --set training.batch_size=2 --emit=planned -o %t.mlir
// RUN: tg-opt %t.mlir -tg-emit-cpp -o /dev/null > %t.cpp
// RUN: cat %t.mlir %t.cpp | FileCheck %s
// The pass prints the C++ and leaves the module unchanged.
// RUN: tg-opt %t.mlir -tg-emit-cpp | FileCheck %s --check-prefix=MODULE

// MODULE: extern "C" void tg_eval_step(tgrt_ctx* ctx) {
// MODULE: module attributes {{{.*}}tg.plan = {
// MODULE: func.func @eval_step(
// MODULE: func.func @micro_step(
// MODULE: func.func @optimizer_step(

// ---- The plan (module attribute; dictionary keys print sorted). ----
// Parameter slots: wte (64 x 32 x 4 = 8192 bytes) at 0, then wpe at 8192.
// CHECK: module attributes
// CHECK-SAME: tg.plan = {arena_bytes = [[$ARENA:[0-9]+]] : i64,
// CHECK-SAME: {grad_offset = [[$WTE_G:[0-9]+]] : i64, m_offset = [[$WTE_M:[0-9]+]] : i64, name = "wte", numel = 2048 : i64, offset = 0 : i64, shape = array<i64: 64, 32>, v_offset = [[$WTE_V:[0-9]+]] : i64}
// CHECK-SAME: {grad_offset = [[$WPE_G:[0-9]+]] : i64, {{.*}}, name = "wpe", numel = 256 : i64, offset = 8192 : i64,
// CHECK-SAME: {grad_offset = [[$PROJ_G:[0-9]+]] : i64, m_offset = [[$PROJ_M:[0-9]+]] : i64, name = "layers.0.attn.proj.weight", numel = 1024 : i64, offset = [[$PROJ:[0-9]+]] : i64, shape = array<i64: 32, 32>, v_offset = [[$PROJ_V:[0-9]+]] : i64}
// CHECK-SAME: persistent_bytes = [[$PERSIST:[0-9]+]] : i64, targets_offset = [[$TGT:[0-9]+]] : i64, tokens_offset = [[$TOK:[0-9]+]] : i64, workspace_bytes = 0 : i64}

// ---- The planned micro step. ----
// CHECK-LABEL: func.func @micro_step(
// CHECK-SAME: %[[WTE:arg[0-9]+]]: tensor<64x32xf32> {tg.param = "wte"}
// CHECK-SAME: %[[WPE:arg[0-9]+]]: tensor<8x32xf32> {tg.param = "wpe"}
// CHECK-SAME: %[[PROJW:arg[0-9]+]]: tensor<32x32xf32> {tg.param = "layers.0.attn.proj.weight"}
// CHECK-SAME: %[[TOKS:arg[0-9]+]]: tensor<2x8xi32> {tg.input = "tokens"}
// CHECK-SAME: %[[TGTS:arg[0-9]+]]: tensor<2x8xi32> {tg.input = "targets"}
// CHECK: %[[EMB:[0-9]+]] = tg.embedding %[[WTE]], %[[TOKS]] {tg.offsets = array<i64: [[$EMB:[0-9]+]]>
// CHECK-NEXT: tg.positional_embedding %[[EMB]], %[[WPE]] {tg.offsets = array<i64: [[$POS:[0-9]+]]>
// The three 2 x 8 x 32 pieces of qkv, and the q view/transpose.
// CHECK: %[[SPLIT:[0-9]+]]:3 = tg.split %{{[0-9]+}} {axis = 2 : i64, tg.offsets = array<i64: [[$SQ:[0-9]+]], [[$SK:[0-9]+]], [[$SV:[0-9]+]]>
// CHECK-NEXT: %[[QV:[0-9]+]] = tg.reshape %[[SPLIT]]#0
// CHECK-NEXT: tg.transpose %[[QV]] {perm = array<i64: 0, 2, 1, 3>, tg.offsets = array<i64: [[$QT:[0-9]+]]>
// The head merge: transpose, a reshape view, then the projection reads the transpose.
// CHECK: tg.softmax
// CHECK-NEXT: %[[PV:[0-9]+]] = tg.matmul
// CHECK-NEXT: %[[MERGE:[0-9]+]] = tg.transpose %[[PV]] {perm = array<i64: 0, 2, 1, 3>, tg.offsets = array<i64: [[$MERGE:[0-9]+]]>
// CHECK-NEXT: %[[MV:[0-9]+]] = tg.reshape %[[MERGE]]
// CHECK-NEXT: tg.matmul %[[MV]], %[[PROJW]] {tg.offsets = array<i64: [[$PROJ_OUT:[0-9]+]]>
// Tied head and loss.
// CHECK: %[[LOGITS:[0-9]+]] = tg.matmul %{{.*}}, %[[WTE]] {tg.offsets = array<i64: [[$LOGITS:[0-9]+]]>, tg.phase = "forward", transpose_b = true}
// CHECK-NEXT: %[[LOSS:[0-9]+]] = tg.cross_entropy %[[LOGITS]], %[[TGTS]] {tg.offsets = array<i64: [[$LOSS:[0-9]+]]>
// CHECK-NEXT: %[[ONE:[0-9]+]] = tg.fill {tg.offsets = array<i64: [[$ONE:[0-9]+]]>
// CHECK-NEXT: tg.cross_entropy_grad %[[LOGITS]], %[[TGTS]], %[[ONE]] {tg.offsets = array<i64: [[$DLOGITS:[0-9]+]]>
// wte gets two gradients (embedding + tied head); their sum is accumulated.
// CHECK: %[[DWTE:[0-9]+]] = tg.add %{{[0-9]+}}, %{{[0-9]+}} {tg.offsets = array<i64: [[$DWTE:[0-9]+]]>
// CHECK-NEXT: tg.accumulate_grad %[[WTE]], %[[DWTE]]
// CHECK: return {{.*}}%[[LOSS]] : tensor<f32>

// ---- The C++: the model table repeats the plan. ----
// CHECK-LABEL: static const tgrt_param kParams[] = {
// CHECK-NEXT: {"wte", 2, {64, 32, 1, 1}, 2048, 0, [[$WTE_G]], [[$WTE_M]], [[$WTE_V]], 0, 0.0199999996f, 0},
// CHECK: {"layers.0.attn.proj.weight", 2, {32, 32, 1, 1}, 1024, [[$PROJ]], [[$PROJ_G]], [[$PROJ_M]], [[$PROJ_V]], 0, 0.0141421352f, 1},
// CHECK-LABEL: static const tgrt_model kModel = {
// CHECK: 16, kParams,
// CHECK-NEXT: [[$PERSIST]]LL, [[$ARENA]]LL, 0LL,
// CHECK-NEXT: [[$TOK]]LL, [[$TGT]]LL,
// CHECK-NEXT: 2, 8, 64, 1,

// CHECK-LABEL: extern "C" void tg_micro_step(tgrt_ctx* ctx) {
// wte is the parameter at P + 0; the ids are the tokens input slot; the result goes to
// the arena at the embedding's planned offset. 2 x 8 = 16 ids, d_model 32, vocab 64.
// CHECK: tgrt_embedding_fwd(ctx, "wte", (float*)(P + 0), (int32_t*)(P + [[$TOK]]), (float*)(A + [[$EMB]]), 16LL, 32LL, 64LL);
// CHECK-NEXT: tgrt_positional_fwd(ctx, "wpe", (float*)(A + [[$EMB]]), (float*)(P + 8192), (float*)(A + [[$POS]]), 2LL, 8LL, 32LL);
// split: 16 rows of 96 floats into three 16 x 32 pieces at float columns 0, 32, 64.
// CHECK: tgrt_copy2d(ctx, "layers.0.attn.split", ((float*)(A + [[QKV:[0-9]+]]) + 0), 96LL, (float*)(A + [[$SQ]]), 32LL, 16LL, 32LL);
// CHECK-NEXT: tgrt_copy2d(ctx, "layers.0.attn.split", ((float*)(A + [[QKV]]) + 32), 96LL, (float*)(A + [[$SK]]), 32LL, 16LL, 32LL);
// CHECK-NEXT: tgrt_copy2d(ctx, "layers.0.attn.split", ((float*)(A + [[QKV]]) + 64), 96LL, (float*)(A + [[$SV]]), 32LL, 16LL, 32LL);
// The reshape to 2 x 8 x 1 x 32 emits nothing: the transpose reads the split output.
// CHECK-NEXT: tgrt_transpose4(ctx, "layers.0.attn.q", (float*)(A + [[$SQ]]), (float*)(A + [[$QT]]), 2LL, 8LL, 1LL, 32LL, 0, 2, 1, 3);
// CHECK-NEXT: tgrt_transpose4(ctx, "layers.0.attn.k", (float*)(A + [[$SK]]),
// CHECK-NEXT: tgrt_transpose4(ctx, "layers.0.attn.v", (float*)(A + [[$SV]]),
// CHECK: tgrt_transpose4(ctx, "layers.0.attn.merge", (float*)(A + {{[0-9]+}}), (float*)(A + [[$MERGE]]), 2LL, 1LL, 8LL, 32LL, 0, 2, 1, 3);
// The merge reshape is a view too: the projection (16 x 32 @ 32 x 32, one GEMM over
// the folded batch) reads the transpose output. Its bias add is the GEMM's only reader, so
// both are one call with the bias epilogue, writing the bias add's buffer, which is the
// GEMM's own (in place).
// CHECK-NEXT: tgrt_matmul_bias(ctx, "layers.0.attn.proj", (float*)(A + [[$MERGE]]), (float*)(P + [[$PROJ]]), (float*)(P + {{[0-9]+}}), (float*)(A + [[$PROJ_OUT]]), 16LL, 32LL, 32LL, 0, 0, 1.0f);
// CHECK-NOT: tgrt_bias_add(ctx, "layers.0.attn.proj.bias"
// CHECK: tgrt_matmul(ctx, "lm_head", (float*)(A + {{[0-9]+}}), (float*)(P + 0), (float*)(A + [[$LOGITS]]), 1LL, 16LL, 64LL, 32LL, 0, 1,
// CHECK-NEXT: tgrt_cross_entropy_fwd(ctx, "loss", (float*)(A + [[$LOGITS]]), (int32_t*)(P + [[$TGT]]), (float*)(A + [[$LOSS]]), 16LL, 64LL, -1LL);
// CHECK-NEXT: tgrt_fill(ctx, "loss", (float*)(A + [[$ONE]]), 1LL, 1.0f);
// CHECK-NEXT: tgrt_cross_entropy_bwd(ctx, "loss", (float*)(A + [[$LOGITS]]), (int32_t*)(P + [[$TGT]]), (float*)(A + [[$ONE]]), (float*)(A + [[$DLOGITS]]), 16LL, 64LL, -1LL);
// The gradient of a parameter goes to its persistent grad slot.
// CHECK: tgrt_add(ctx, "wte", {{.*}}, (float*)(A + [[$DWTE]]), 2048LL);
// CHECK-NEXT: tgrt_accumulate(ctx, "wte", (float*)(P + [[$WTE_G]]), (float*)(A + [[$DWTE]]), 2048LL);
// CHECK-NEXT: tgrt_accumulate(ctx, "wpe", (float*)(P + [[$WPE_G]]), {{.*}}, 256LL);
// CHECK: tgrt_report_loss(ctx, "loss", (float*)(A + [[$LOSS]]));
// CHECK-NEXT: }

// CHECK-LABEL: extern "C" void tg_optimizer_step(tgrt_ctx* ctx) {
// CHECK: tgrt_adamw(ctx, "optimizer.wte", (float*)(P + 0), (float*)(P + [[$WTE_G]]), (float*)(P + [[$WTE_M]]), (float*)(P + [[$WTE_V]]), 2048LL,
// 2048 x 4 bytes.
// CHECK-NEXT: tgrt_zero(ctx, "optimizer.wte", (float*)(P + [[$WTE_G]]), 8192LL);
// CHECK: tgrt_adamw(ctx, "optimizer.layers.0.attn.proj.weight", (float*)(P + [[$PROJ]]), (float*)(P + [[$PROJ_G]]), (float*)(P + [[$PROJ_M]]), (float*)(P + [[$PROJ_V]]), 1024LL,
// CHECK-NEXT: tgrt_zero(ctx, "optimizer.layers.0.attn.proj.weight", (float*)(P + [[$PROJ_G]]), 4096LL);

// CHECK-LABEL: extern "C" void tg_eval_step(tgrt_ctx* ctx) {
// CHECK: tgrt_embedding_fwd(ctx, "wte", (float*)(P + 0), (int32_t*)(P + [[$TOK]]),
