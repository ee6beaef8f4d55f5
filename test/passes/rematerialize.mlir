// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=layer | FileCheck %s --check-prefix=LAYER
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=selective | FileCheck %s --check-prefix=SEL
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=none | FileCheck %s --check-prefix=NONE
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=gelu | FileCheck %s --check-prefix=GELU
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=layer-attn | FileCheck %s --check-prefix=LATTN
// Whole-output negative checks (a prefix with only -NOT lines scans the whole output):
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=layer | FileCheck %s --check-prefix=KEPT
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=selective \
// RUN:   | FileCheck %s --check-prefixes=KEPT,SELKEPT
// Clones differ from their originals (tg.phase, tg.recompute): a later CSE keeps all 24.
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=layer -cse | grep -c "tg.recompute}" \
// RUN:   | FileCheck %s --check-prefix=CSE
// Budget (the real planner on each candidate): 6943 is one byte under the arena of the
// module without recomputation (6944 here, with the f32 weights' bf16 copies persistent,
// as tg-plan-memory plans them): the cheapest candidate that fits makes layer 0 selective
// and leaves layer 1 alone.
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize="policy=budget budget-bytes=6943" -tg-plan-memory \
// RUN:   | FileCheck %s --check-prefix=BUDGET
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize="policy=budget budget-bytes=6944" \
// RUN:   | FileCheck %s --check-prefix=BUDGETALL
// Through the planner: recomputation lowers the forward peak (fewer saved activations)
// and never raises the backward peak (in this small module the backward's peak is at the
// weight gradients, the same under every policy, once the weights' bf16 copies are
// persistent rather than arena buffers).
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=none -tg-plan-memory -tg-print-memory-plan -o /dev/null > %t.none
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=selective -tg-plan-memory -tg-print-memory-plan -o /dev/null > %t.sel
// RUN: tg-opt %s -tg-autodiff -cse -tg-rematerialize=policy=layer -tg-plan-memory -tg-print-memory-plan -o /dev/null > %t.layer
// RUN: %python -c "import re, sys; \
// RUN:   peak = lambda f, ph: int(re.search(r'^  ' + ph + r' +([0-9]+)', open(f).read(), re.M).group(1)); \
// RUN:   fw = [peak(f, 'forward') for f in sys.argv[1:]]; bw = [peak(f, 'backward') for f in sys.argv[1:]]; \
// RUN:   print('forward peaks (none, selective, layer)', fw, 'backward peaks', bw); \
// RUN:   assert fw[2] < fw[1] < fw[0], fw; \
// RUN:   assert bw[2] <= bw[0] and bw[1] <= bw[0] and bw[2] <= bw[1], bw" %t.none %t.sel %t.layer

// Two transformer-like layers (ops tagged tg.layer = 0 / 1 as the tgc frontend does),
// between an embedding and a head (ln_f, tied lm_head, loss) that belong to no layer.
// Layer i: layer norm (f32 in, bf16 out) -> bf16 copies of the qkv weight and bias ->
// GEMM + bias -> head split (reshape + transpose) -> fused attention (q = k = v) ->
// head merge (transpose + reshape) -> GELU -> bf16 copy of the fc weight -> GEMM -> cast
// to f32 -> residual add (the layer output, which the next layer or ln_f reads).
// B = 1, T = 4, D = 8, H = 2, hd = 4.
//
// extra_flops by hand (a matmul 2 m n k per batch entry, attention 4 b h hd x visible
// pairs (causal, T = 4: 1+2+3+4 = 10), every other op one per output element):
//   layer norm  y 32 + mean 4 + rstd 4       =   40
//   qkv GEMM 2 x (1*4*8) x 8                 =  512
//   bias add 32, reshape 32, transpose 32    =   96
//   attention 4 x 1*2 x 4 x 10               =  320
//   transpose 32, reshape 32, gelu 32        =   96
// The casts of parameters (the bf16 weight copies qkv.w, qkv.b, fc.w) are never cloned:
// they are kept, as the parameters are.
// policy=layer clones those 9 ops per layer (not the fc GEMM and its f32 cast, which only
// the kept residual add reads, nor the add): 2 x 1064 = 2128 FLOPs, 18 ops.
// policy=selective keeps the GEMM, GEMM + bias and attention outputs and clones the layer
// norm, the four head transposes / reshapes and the GELU (40 + 4 x 32 + 32 = 200 per
// layer): 2 x 200 = 400 FLOPs, 12 ops.
// policy=layer-attn clones the same ops as layer but the attention (kept with its logsumexp):
// 2 x (1064 - 320) = 1488 FLOPs, 16 ops.
// policy=gelu clones only the GELU (32 per layer): 2 x 32 = 64 FLOPs, 2 ops; the clone feeds
// the fc weight gradient, and gelu_grad still reads the kept GELU input.
// step_flops is the micro-step before recomputation (the same under every policy), 14074
// (summed op by op with the same rules over the -tg-autodiff -cse output).

func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte"},
                   %g0: tensor<8xf32> {tg.param = "l0.ln.g"}, %b0: tensor<8xf32> {tg.param = "l0.ln.b"},
                   %w0: tensor<8x8xf32> {tg.param = "l0.qkv.w"}, %c0: tensor<8xf32> {tg.param = "l0.qkv.b"},
                   %v0: tensor<8x8xf32> {tg.param = "l0.fc.w"},
                   %g1: tensor<8xf32> {tg.param = "l1.ln.g"}, %b1: tensor<8xf32> {tg.param = "l1.ln.b"},
                   %w1: tensor<8x8xf32> {tg.param = "l1.qkv.w"}, %c1: tensor<8xf32> {tg.param = "l1.qkv.b"},
                   %v1: tensor<8x8xf32> {tg.param = "l1.fc.w"},
                   %gf: tensor<8xf32> {tg.param = "ln_f.g"}, %bf: tensor<8xf32> {tg.param = "ln_f.b"},
                   %tokens: tensor<1x4xi32> {tg.input = "tokens"},
                   %targets: tensor<1x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x0 = tg.embedding %wte, %tokens : (tensor<16x8xf32>, tensor<1x4xi32>) -> tensor<1x4x8xf32> loc("embed")
  // Layer 0.
  %y0, %m0, %r0 = tg.layer_norm %x0, %g0, %b0 {tg.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<1x4x8xbf16>, tensor<1x4xf32>, tensor<1x4xf32>) loc("l0.ln")
  %w0c = tg.cast %w0 {tg.layer = 0 : i64} : (tensor<8x8xf32>) -> tensor<8x8xbf16> loc("l0.qkv.w.bf16")
  %c0c = tg.cast %c0 {tg.layer = 0 : i64} : (tensor<8xf32>) -> tensor<8xbf16> loc("l0.qkv.b.bf16")
  %h0 = tg.matmul %y0, %w0c {tg.layer = 0 : i64} : (tensor<1x4x8xbf16>, tensor<8x8xbf16>) -> tensor<1x4x8xbf16> loc("l0.qkv")
  %hb0 = tg.bias_add %h0, %c0c {tg.layer = 0 : i64} : (tensor<1x4x8xbf16>, tensor<8xbf16>) -> tensor<1x4x8xbf16> loc("l0.qkv.bias")
  %hr0 = tg.reshape %hb0 {tg.layer = 0 : i64} : (tensor<1x4x8xbf16>) -> tensor<1x4x2x4xbf16> loc("l0.heads")
  %q0 = tg.transpose %hr0 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<1x4x2x4xbf16>) -> tensor<1x2x4x4xbf16> loc("l0.q")
  %o0, %lse0 = tg.attention %q0, %q0, %q0 {scale = 5.000000e-01 : f32, tg.layer = 0 : i64} : (tensor<1x2x4x4xbf16>, tensor<1x2x4x4xbf16>, tensor<1x2x4x4xbf16>) -> (tensor<1x2x4x4xbf16>, tensor<1x2x4xf32>) loc("l0.attn")
  %ot0 = tg.transpose %o0 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64} : (tensor<1x2x4x4xbf16>) -> tensor<1x4x2x4xbf16> loc("l0.merge")
  %or0 = tg.reshape %ot0 {tg.layer = 0 : i64} : (tensor<1x4x2x4xbf16>) -> tensor<1x4x8xbf16> loc("l0.merge.flat")
  %a0 = tg.gelu %or0 {tg.layer = 0 : i64} : (tensor<1x4x8xbf16>) -> tensor<1x4x8xbf16> loc("l0.gelu")
  %v0c = tg.cast %v0 {tg.layer = 0 : i64} : (tensor<8x8xf32>) -> tensor<8x8xbf16> loc("l0.fc.w.bf16")
  %f0 = tg.matmul %a0, %v0c {tg.layer = 0 : i64} : (tensor<1x4x8xbf16>, tensor<8x8xbf16>) -> tensor<1x4x8xbf16> loc("l0.fc")
  %f0c = tg.cast %f0 {tg.layer = 0 : i64} : (tensor<1x4x8xbf16>) -> tensor<1x4x8xf32> loc("l0.fc.f32")
  %x1 = tg.add %x0, %f0c {tg.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("l0.out")
  // Layer 1.
  %y1, %m1, %r1 = tg.layer_norm %x1, %g1, %b1 {tg.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<1x4x8xbf16>, tensor<1x4xf32>, tensor<1x4xf32>) loc("l1.ln")
  %w1c = tg.cast %w1 {tg.layer = 1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xbf16> loc("l1.qkv.w.bf16")
  %c1c = tg.cast %c1 {tg.layer = 1 : i64} : (tensor<8xf32>) -> tensor<8xbf16> loc("l1.qkv.b.bf16")
  %h1 = tg.matmul %y1, %w1c {tg.layer = 1 : i64} : (tensor<1x4x8xbf16>, tensor<8x8xbf16>) -> tensor<1x4x8xbf16> loc("l1.qkv")
  %hb1 = tg.bias_add %h1, %c1c {tg.layer = 1 : i64} : (tensor<1x4x8xbf16>, tensor<8xbf16>) -> tensor<1x4x8xbf16> loc("l1.qkv.bias")
  %hr1 = tg.reshape %hb1 {tg.layer = 1 : i64} : (tensor<1x4x8xbf16>) -> tensor<1x4x2x4xbf16> loc("l1.heads")
  %q1 = tg.transpose %hr1 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64} : (tensor<1x4x2x4xbf16>) -> tensor<1x2x4x4xbf16> loc("l1.q")
  %o1, %lse1 = tg.attention %q1, %q1, %q1 {scale = 5.000000e-01 : f32, tg.layer = 1 : i64} : (tensor<1x2x4x4xbf16>, tensor<1x2x4x4xbf16>, tensor<1x2x4x4xbf16>) -> (tensor<1x2x4x4xbf16>, tensor<1x2x4xf32>) loc("l1.attn")
  %ot1 = tg.transpose %o1 {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64} : (tensor<1x2x4x4xbf16>) -> tensor<1x4x2x4xbf16> loc("l1.merge")
  %or1 = tg.reshape %ot1 {tg.layer = 1 : i64} : (tensor<1x4x2x4xbf16>) -> tensor<1x4x8xbf16> loc("l1.merge.flat")
  %a1 = tg.gelu %or1 {tg.layer = 1 : i64} : (tensor<1x4x8xbf16>) -> tensor<1x4x8xbf16> loc("l1.gelu")
  %v1c = tg.cast %v1 {tg.layer = 1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xbf16> loc("l1.fc.w.bf16")
  %f1 = tg.matmul %a1, %v1c {tg.layer = 1 : i64} : (tensor<1x4x8xbf16>, tensor<8x8xbf16>) -> tensor<1x4x8xbf16> loc("l1.fc")
  %f1c = tg.cast %f1 {tg.layer = 1 : i64} : (tensor<1x4x8xbf16>) -> tensor<1x4x8xf32> loc("l1.fc.f32")
  %x2 = tg.add %x1, %f1c {tg.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32> loc("l1.out")
  // Head.
  %yf, %mf, %rf = tg.layer_norm %x2, %gf, %bf : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) loc("ln_f")
  %l = tg.matmul %yf, %wte {transpose_b = true} : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32> loc("lm_head")
  %loss = tg.cross_entropy %l, %targets : (tensor<1x4x16xf32>, tensor<1x4xi32>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}

// ----------------------------------------------------------------- policy=layer --

// LATTN: module attributes {tg.remat = {extra_flops = 1488 : i64, policy = #tg.checkpointing<"layer-attn">, recomputed_ops = 16 : i64, step_flops = 14074 : i64}}
// LATTN-LABEL: func.func @micro_step
// LATTN: tg.layer_norm {{.*}}tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LATTN-NOT: tg.attention {{.*}}tg.recompute
// LATTN: tg.attention_grad
// LATTN: tg.layer_norm {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// LATTN-NOT: tg.attention {{.*}}tg.recompute
// LATTN: return

// LAYER: module attributes {tg.remat = {extra_flops = 2128 : i64, policy = #tg.checkpointing<layer>, recomputed_ops = 18 : i64, step_flops = 14074 : i64}}
// LAYER-LABEL: func.func @micro_step
// LAYER-SAME: %[[WTE:[^:]+]]: tensor<16x8xf32> {tg.param = "wte"}
// LAYER-SAME: %[[G0:[^:]+]]: tensor<8xf32> {tg.param = "l0.ln.g"}, %[[B0:[^:]+]]: tensor<8xf32> {tg.param = "l0.ln.b"}
// LAYER-SAME: %[[W0:[^:]+]]: tensor<8x8xf32> {tg.param = "l0.qkv.w"}, %[[C0:[^:]+]]: tensor<8xf32> {tg.param = "l0.qkv.b"}, %[[V0:[^:]+]]: tensor<8x8xf32> {tg.param = "l0.fc.w"}
// LAYER-SAME: %[[G1:[^:]+]]: tensor<8xf32> {tg.param = "l1.ln.g"}, %[[B1:[^:]+]]: tensor<8xf32> {tg.param = "l1.ln.b"}
// LAYER-SAME: %[[W1:[^:]+]]: tensor<8x8xf32> {tg.param = "l1.qkv.w"}, %[[C1:[^:]+]]: tensor<8xf32> {tg.param = "l1.qkv.b"}, %[[V1:[^:]+]]: tensor<8x8xf32> {tg.param = "l1.fc.w"}
// The forward is unchanged: the originals stay, in the forward phase.
// LAYER: %[[X0:[^ ]+]] = tg.embedding %[[WTE]], %{{[^ ]+}} {tg.phase = "forward"}
// LAYER: %[[Q0:[^ ]+]] = tg.transpose %{{[^ ]+}} {perm = array<i64: 0, 2, 1, 3>, tg.layer = 0 : i64, tg.phase = "forward"}
// LAYER-NEXT: tg.attention %[[Q0]], %[[Q0]], %[[Q0]] {scale = 5.000000e-01 : f32, tg.layer = 0 : i64, tg.phase = "forward"}
// LAYER: %[[X1:[^ ]+]] = tg.add %[[X0]], %{{[^ ]+}} {tg.layer = 0 : i64, tg.phase = "forward"}
// LAYER: %[[Q1:[^ ]+]] = tg.transpose %{{[^ ]+}} {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64, tg.phase = "forward"}
// LAYER-NEXT: tg.attention %[[Q1]], %[[Q1]], %[[Q1]] {scale = 5.000000e-01 : f32, tg.layer = 1 : i64, tg.phase = "forward"}
// LAYER: %[[X2:[^ ]+]] = tg.add %[[X1]], %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "forward"}
// LAYER-NEXT: tg.layer_norm %[[X2]], {{.*}} {tg.phase = "forward"}
// LAYER: tg.cross_entropy_grad
// Layer 1's backward starts with the cast of the incoming gradient and fc's
// dA = dF . fc.w^T, which reads the kept bf16 weight copy (parameter casts are never
// recomputed); the first op reading a recomputed value is the reshape of the GELU output
// for fc's dW. Right before it: the clones, in forward order, reading the checkpoint X1
// (layer 0's output), the parameters and the kept weight copies.
// LAYER: %[[DF1:[^ ]+]] = tg.cast %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "backward"} : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
// LAYER-NEXT: tg.matmul %[[DF1]], %[[CV1:[^ ]+]] {tg.layer = 1 : i64, tg.phase = "backward", transpose_b = true}
// LAYER-NEXT: %[[CY1:[^,]+]], %[[CM1:[^,]+]], %[[CR1:[^ ]+]] = tg.layer_norm %[[X1]], %[[G1]], %[[B1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CH1:[^ ]+]] = tg.matmul %[[CY1]], %[[CW1:[^ ]+]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CHB1:[^ ]+]] = tg.bias_add %[[CH1]], %[[CC1:[^ ]+]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CHR1:[^ ]+]] = tg.reshape %[[CHB1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CQ1:[^ ]+]] = tg.transpose %[[CHR1]] {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CO1:[^,]+]], %[[CL1:[^ ]+]] = tg.attention %[[CQ1]], %[[CQ1]], %[[CQ1]] {scale = 5.000000e-01 : f32, tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[COT1:[^ ]+]] = tg.transpose %[[CO1]] {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CGI1:[^ ]+]] = tg.reshape %[[COT1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: %[[CA1:[^ ]+]] = tg.gelu %[[CGI1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// The backward reads the clones, never the originals.
// LAYER-NEXT: tg.reshape %[[CA1]] {tg.layer = 1 : i64, tg.phase = "backward"}
// LAYER: tg.gelu_grad %[[CGI1]], %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "backward"}
// LAYER: tg.attention_grad %[[CQ1]], %[[CQ1]], %[[CQ1]], %[[CO1]], %[[CL1]], %{{[^ ]+}} {scale = 5.000000e-01 : f32, tg.layer = 1 : i64, tg.phase = "backward"}
// LAYER: tg.matmul %{{[^ ]+}}, %[[CW1]] {tg.layer = 1 : i64, tg.phase = "backward", transpose_b = true}
// LAYER-NEXT: tg.reshape %[[CY1]] {tg.layer = 1 : i64, tg.phase = "backward"}
// LAYER: tg.layer_norm_grad %{{[^ ]+}}, %[[X1]], %[[G1]], %[[CM1]], %[[CR1]] {tg.layer = 1 : i64, tg.phase = "backward"}
// Layer 0 likewise, from its input X0 (the embedding, which is not recomputed).
// LAYER: %[[DF0:[^ ]+]] = tg.cast %{{[^ ]+}} {tg.layer = 0 : i64, tg.phase = "backward"} : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
// LAYER-NEXT: tg.matmul %[[DF0]], %[[CV0:[^ ]+]] {tg.layer = 0 : i64, tg.phase = "backward", transpose_b = true}
// LAYER-NEXT: %[[CY0:[^,]+]], %[[CM0:[^,]+]], %[[CR0:[^ ]+]] = tg.layer_norm %[[X0]], %[[G0]], %[[B0]] {tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: tg.matmul %[[CY0]], %[[CW0:[^ ]+]] {tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: tg.bias_add %{{[^ ]+}}, %[[CC0:[^ ]+]] {tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// LAYER-NEXT: tg.reshape {{.*}}tg.recompute
// LAYER-NEXT: %[[CQ0:[^ ]+]] = tg.transpose {{.*}}tg.recompute
// LAYER-NEXT: %[[CO0:[^,]+]], %[[CL0:[^ ]+]] = tg.attention %[[CQ0]], %[[CQ0]], %[[CQ0]] {{.*}}tg.recompute
// LAYER-NEXT: tg.transpose %[[CO0]] {{.*}}tg.recompute
// LAYER-NEXT: %[[CGI0:[^ ]+]] = tg.reshape {{.*}}tg.recompute
// LAYER-NEXT: %[[CA0:[^ ]+]] = tg.gelu %[[CGI0]] {{.*}}tg.recompute
// LAYER-NEXT: tg.reshape %[[CA0]] {tg.layer = 0 : i64, tg.phase = "backward"}
// LAYER: tg.gelu_grad %[[CGI0]],
// LAYER: tg.attention_grad %[[CQ0]], %[[CQ0]], %[[CQ0]], %[[CO0]], %[[CL0]],
// LAYER: tg.layer_norm_grad %{{[^ ]+}}, %[[X0]], %[[G0]], %[[CM0]], %[[CR0]] {tg.layer = 0 : i64, tg.phase = "backward"}
// LAYER: tg.embedding_grad
// LAYER-LABEL: func.func @optimizer_step

// Nothing outside the layers is cloned: the embedding, ln_f, the head and the loss carry
// no tg.layer, so a clone of any of them would print `{tg.phase = "backward",
// tg.recompute` (attributes are sorted; theirs sort after tg.). Nor is a layer output:
// the residual adds are what the next layer (or ln_f) reads, the checkpoints.
// KEPT-NOT: {{[{]}}tg.phase = "backward", tg.recompute
// KEPT-NOT: tg.embedding {{.*}}tg.recompute
// KEPT-NOT: tg.cross_entropy {{.*}}tg.recompute
// KEPT-NOT: tg.add {{.*}}tg.recompute

// ------------------------------------------------------------- policy=selective --

// GELU: module attributes {tg.remat = {extra_flops = 64 : i64, policy = #tg.checkpointing<gelu>, recomputed_ops = 2 : i64, step_flops = 14074 : i64}}
// GELU-LABEL: func.func @micro_step
// GELU: %[[GI1:[^ ]+]] = tg.reshape %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "forward"} : (tensor<1x4x2x4xbf16>) -> tensor<1x4x8xbf16>
// GELU-NEXT: tg.gelu %[[GI1]] {tg.layer = 1 : i64, tg.phase = "forward"}
// GELU: %[[CA1:[^ ]+]] = tg.gelu %[[GI1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// GELU-NEXT: %[[CR1:[^ ]+]] = tg.reshape %[[CA1]] {tg.layer = 1 : i64, tg.phase = "backward"}
// GELU: tg.matmul %[[CR1]], %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "backward", transpose_a = true}
// GELU: tg.gelu_grad %[[GI1]],
// GELU: tg.gelu {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// GELU-NOT: tg.recompute
// GELU: func.func @optimizer_step
// SEL: module attributes {tg.remat = {extra_flops = 400 : i64, policy = #tg.checkpointing<selective>, recomputed_ops = 12 : i64, step_flops = 14074 : i64}}
// SEL-LABEL: func.func @micro_step
// SEL-SAME: %[[G1:[^:]+]]: tensor<8xf32> {tg.param = "l1.ln.g"}, %[[B1:[^:]+]]: tensor<8xf32> {tg.param = "l1.ln.b"}
// SEL-SAME: %[[W1:[^:]+]]: tensor<8x8xf32> {tg.param = "l1.qkv.w"}, %[[C1:[^:]+]]: tensor<8xf32> {tg.param = "l1.qkv.b"}, %[[V1:[^:]+]]: tensor<8x8xf32> {tg.param = "l1.fc.w"}
// SEL: %[[X1:[^ ]+]] = tg.add {{.*}} {tg.layer = 0 : i64, tg.phase = "forward"}
// SEL: %[[HB1:[^ ]+]] = tg.bias_add %{{[^ ]+}}, %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "forward"}
// SEL: %[[O1:[^,]+]], %[[L1:[^ ]+]] = tg.attention {{.*}}tg.layer = 1 : i64, tg.phase = "forward"}
// Clones right before the first backward reader; GEMM, GEMM + bias and attention outputs
// are read from memory: the head split is recomputed from the kept bias add HB1, the
// head merge from the kept attention output O1.
// SEL: %[[DF1:[^ ]+]] = tg.cast %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "backward"} : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
// SEL-NEXT: tg.matmul %[[DF1]], %[[CV1:[^ ]+]] {tg.layer = 1 : i64, tg.phase = "backward", transpose_b = true}
// SEL-NEXT: %[[CY1:[^,]+]], %[[CM1:[^,]+]], %[[CR1:[^ ]+]] = tg.layer_norm %[[X1]], %[[G1]], %[[B1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: %[[CHR1:[^ ]+]] = tg.reshape %[[HB1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: %[[CQ1:[^ ]+]] = tg.transpose %[[CHR1]] {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: %[[COT1:[^ ]+]] = tg.transpose %[[O1]] {perm = array<i64: 0, 2, 1, 3>, tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: %[[CGI1:[^ ]+]] = tg.reshape %[[COT1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: %[[CA1:[^ ]+]] = tg.gelu %[[CGI1]] {tg.layer = 1 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.reshape %[[CA1]] {tg.layer = 1 : i64, tg.phase = "backward"}
// SEL: tg.gelu_grad %[[CGI1]],
// attention_grad: recomputed q, the attention's own out and logsumexp.
// SEL: tg.attention_grad %[[CQ1]], %[[CQ1]], %[[CQ1]], %[[O1]], %[[L1]], %{{[^ ]+}} {scale = 5.000000e-01 : f32, tg.layer = 1 : i64, tg.phase = "backward"}
// SEL: tg.matmul %{{[^ ]+}}, %{{[^ ]+}} {tg.layer = 1 : i64, tg.phase = "backward", transpose_b = true}
// SEL-NEXT: tg.reshape %[[CY1]]
// SEL: tg.layer_norm_grad %{{[^ ]+}}, %[[X1]], %[[G1]], %[[CM1]], %[[CR1]] {tg.layer = 1 : i64, tg.phase = "backward"}
// Layer 0: the same six clones (the bf16 weight copies are read from memory, not recast).
// SEL: tg.cast %{{[^ ]+}} {tg.layer = 0 : i64, tg.phase = "backward"} : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
// SEL-NEXT: tg.matmul {{.*}}{tg.layer = 0 : i64, tg.phase = "backward", transpose_b = true}
// SEL-NEXT: tg.layer_norm {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.reshape {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.transpose {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.transpose {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.reshape {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.gelu {{.*}}tg.layer = 0 : i64, tg.phase = "backward", tg.recompute}
// SEL-NEXT: tg.reshape {{.*}}{tg.layer = 0 : i64, tg.phase = "backward"}
// SEL-LABEL: func.func @optimizer_step

// The expensive outputs are never recomputed under selective.
// SELKEPT-NOT: tg.matmul {{.*}}tg.recompute
// SELKEPT-NOT: tg.bias_add {{.*}}tg.recompute
// SELKEPT-NOT: tg.attention {{.*}}tg.recompute

// ------------------------------------------------------------------ policy=none --

// NONE: module attributes {tg.remat = {extra_flops = 0 : i64, policy = #tg.checkpointing<none>, recomputed_ops = 0 : i64, step_flops = 14074 : i64}}
// NONE-NOT: tg.recompute

// CSE: {{^}}18{{$}}

// ---------------------------------------------------------------- policy=budget --

// The planned arena, 5664 bytes, fits.
// BUDGET: module attributes {tg.plan = {arena_bytes = 5664 : i64
// BUDGET-SAME: tg.remat = {extra_flops = 200 : i64, mix = "0 layer, 1 selective, 1 none", policy = #tg.checkpointing<budget>, recomputed_ops = 6 : i64, step_flops = 14074 : i64}
// BUDGET-LABEL: func.func @micro_step
// BUDGET-SAME: tg.arena_bytes = 5664 : i64
// Layer 0 (whose activations live longest) is the selective one; layer 1 keeps everything.
// (-tg-plan-memory adds tg.offsets between tg.layer and tg.phase.)
// BUDGET-NOT: tg.layer = 1 : i64, {{[^}]*}}tg.recompute
// BUDGET-COUNT-6: tg.layer = 0 : i64, {{[^}]*}}tg.phase = "backward", tg.recompute
// BUDGET-NOT: tg.recompute
// BUDGET-LABEL: func.func @optimizer_step
// With the no-recomputation arena as the budget, nothing is recomputed.
// BUDGETALL: module attributes {tg.remat = {extra_flops = 0 : i64, mix = "0 layer, 0 selective, 2 none", policy = #tg.checkpointing<budget>, recomputed_ops = 0 : i64, step_flops = 14074 : i64}}
// BUDGETALL-NOT: tg.recompute
