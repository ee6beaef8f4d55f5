// tg-plan-memory attention-impl=cudnn: bf16 / f16 attention runs cuDNN's fused SDPA, so the
// module is marked (tg.attention_impl, the plan's attention_impl) and the workspace region
// holds cuDNN's backward workspace (dialect/TgOpKnowledge.cpp cudnnSdpaBackwardBytes:
// rows * 4 * (hd + 1), + rows * hd * 4 when grouped-query, + 256, with rows = B H T).
// The step IR comes from tgc (one layer, micro-batch 8, context 512, 4 heads of hd 64).
// RUN: tgc compile %tg_src/examples/tiny.json --set model.d_model=256 --set model.context=512 \
// RUN:   --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.attention.kernel=flash --emit=step -o %t.mha.mlir
// RUN: tg-opt %t.mha.mlir -tg-plan-memory="workspace-bytes=1024 attention-impl=own" \
// RUN:   -tg-print-memory-plan -o %t.own.mlir | FileCheck %s --check-prefix=OWN
// RUN: FileCheck %s --check-prefix=OWNIR < %t.own.mlir
// RUN: tg-opt %t.mha.mlir -tg-plan-memory="workspace-bytes=1024 attention-impl=cudnn" \
// RUN:   -tg-print-memory-plan -o %t.cudnn.mlir | FileCheck %s --check-prefix=MHA
// RUN: FileCheck %s --check-prefix=IR < %t.cudnn.mlir
// Own kernels: the largest own need (the embedding gradient's sort, 1.5 MiB), no mark.
// OWN: workspace 1572864
// OWNIR-NOT: attention_impl
// Multi-head: rows 8 x 4 x 512 = 16384; 16384 x 4 x 65 + 256 = 4260096.
// MHA: workspace 4260096
// IR: module attributes {{{.*}}tg.attention_impl = "cudnn"
// IR-SAME: attention_impl = "cudnn"
//
// Grouped-query (4 query / 2 kv heads): + 16384 x 64 x 4 = 8454400.
// RUN: tgc compile %tg_src/examples/tiny-llama.json --set model.d_model=256 \
// RUN:   --set model.context=512 --set model.n_layers=1 --set training.precision=bf16-mixed \
// RUN:   --set training.attention.kernel=flash --emit=step -o %t.gqa.mlir
// RUN: tg-opt %t.gqa.mlir -tg-plan-memory="workspace-bytes=1024 attention-impl=cudnn" \
// RUN:   -tg-print-memory-plan -o /dev/null | FileCheck %s --check-prefix=GQA
// GQA: workspace 8454400
//
// fp32 attention always runs the own kernels: no mark, the own workspace.
// RUN: tgc compile %tg_src/examples/tiny.json --set model.d_model=256 --set model.context=512 \
// RUN:   --set model.n_layers=1 --set training.attention.kernel=flash --emit=step -o %t.f32.mlir
// RUN: tg-opt %t.f32.mlir -tg-plan-memory="workspace-bytes=1024 attention-impl=cudnn" \
// RUN:   -tg-print-memory-plan -o %t.f32p.mlir | FileCheck %s --check-prefix=F32
// RUN: FileCheck %s --check-prefix=OWNIR < %t.f32p.mlir
// F32: workspace 1572864
