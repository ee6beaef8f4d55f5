#!/usr/bin/env bash
# Builds (here, no GPU needed) what scripts/gpu-llama.sh runs on the GPU machine:
# runs/llama/llama.tar.xz with the stripped executables and the kernel check. Needs a CUDA
# build (scripts/setup.sh with the toolkit present). Then, with the device tool:
#   run: bash scripts/gpu-llama.sh   carry: runs/llama
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build -j"${JOBS:-2}" bin/tgc bin/tgrt-cuda-check tgrt_cuda tgrt_cpu tgrt_driver
rm -rf runs/llama && mkdir -p runs/llama/llama
c() { # name spec target args...
  local name=$1 spec=$2 target=$3; shift 3
  # ARTS="name ...": build only these executables (tgrt-cuda-check always).
  if [ -n "${ARTS:-}" ]; then case " $ARTS " in *" $name "*) ;; *) return 0 ;; esac; fi
  build/bin/tgc compile "$spec" --target "$target" "$@" -o "runs/llama/llama/$name"
  strip "runs/llama/llama/$name"
}
c smollm2 examples/smollm2-135m.json cuda
c llama1b examples/llama3.2-1b.json cuda
c smollm2-sel examples/smollm2-135m.json cuda --set training.checkpointing=selective
# SmolLM2 untied (lm_head.weight [V, D] since 2026-12-02, its loss fused as a tied head's) and
# the same with the loss unfused (loss_chunk_bytes=0: the whole logits planned, as every
# untied model compiled before): memory and time against torch.compile's untied model.
c smollm2u examples/smollm2-135m.json cuda --set model.tie_embeddings=false
c llama1bu examples/llama3.2-1b.json cuda --set model.tie_embeddings=false
c smollm2u-c0 examples/smollm2-135m.json cuda --set model.tie_embeddings=false --set training.loss_chunk_bytes=0
c llama1b-sel examples/llama3.2-1b.json cuda --set training.checkpointing=selective
# The fused loss in two chunks of 4096 rows (1 GiB of logits) and in one of 8192 (2 GiB)
# instead of four: each chunk after the first re-reads and re-writes the tied head's f32 weight
# gradient (128256 x 2048: 1.05 GB) in its dw GEMM.
c llama1b-c2 examples/llama3.2-1b.json cuda --set training.loss_chunk_bytes=1073741824
c llama1b-c1 examples/llama3.2-1b.json cuda --set training.loss_chunk_bytes=2147483648
# Every gradient slot f32 (training.gradient_dtype f32, what every model compiled to before
# 2026-12-02's eighteenth session): the A/B of the weight gradients in the compute type.
c llama1b-g32 examples/llama3.2-1b.json cuda --set training.gradient_dtype=f32
c smollm2-g32 examples/smollm2-135m.json cuda --set training.gradient_dtype=f32
# The f32 value slots of the bf16-gradient weights (training.master_values f32, what every
# model compiled to before 2026-12-03's twenty-fourth session): the A/B of the split values.
c llama1b-m32 examples/llama3.2-1b.json cuda --set training.master_values=f32
c smollm2-m32 examples/smollm2-135m.json cuda --set training.master_values=f32
# The gradient slots persistent (the layout before training.gradients=auto put them in the
# arena): the A/B of that change's memory and time.
c llama1b-pg examples/llama3.2-1b.json cuda --set training.gradients=persistent
# GPT-2 shapes of issue 22's table (micro-batch 16, 8, 8, 8): the plan against torch.compile's
# peak (bench/torch_gpt2_step.py) in the same call. GPT_SHAPES=0 skips them.
if [ "${GPT_SHAPES:-1}" = 1 ]; then
  c gpt2s examples/gpt2-small.json cuda
  # The fused loss in two chunks of 8192 rows (1 GiB of logits) instead of four: time vs memory.
  c gpt2s-c2 examples/gpt2-small.json cuda --set training.loss_chunk_bytes=1073741824
  c gpt2m examples/gpt2-small.json cuda --set model.n_layers=24 --set model.d_model=1024 \
    --set model.n_heads=16 --set model.d_ff=4096 --set training.batch_size=8
  c gpt2l examples/gpt2-small.json cuda --set model.n_layers=36 --set model.d_model=1280 \
    --set model.n_heads=20 --set model.d_ff=5120 --set training.batch_size=8
  c hd128 examples/gpt2-small.json cuda --set model.n_layers=8 --set model.d_model=1024 \
    --set model.n_heads=8 --set model.d_ff=4096 --set model.vocab_size=32000 \
    --set model.context=2048 --set training.batch_size=8
  # tg-bias-rows off (training.bias_rows, on by default for cuda since 2026-12-01): the qkv
  # and MLP up-projection biases summed apart, as before it.
  c gpt2s-off examples/gpt2-small.json cuda --set training.bias_rows=off
  c hd128-off examples/gpt2-small.json cuda --set model.n_layers=8 --set model.d_model=1024 \
    --set model.n_heads=8 --set model.d_ff=4096 --set model.vocab_size=32000 \
    --set model.context=2048 --set training.batch_size=8 --set training.bias_rows=off
  c gpt2m-off examples/gpt2-small.json cuda --set model.n_layers=24 --set model.d_model=1024 \
    --set model.n_heads=16 --set model.d_ff=4096 --set training.batch_size=8 --set training.bias_rows=off
  c gpt2l-off examples/gpt2-small.json cuda --set model.n_layers=36 --set model.d_model=1280 \
    --set model.n_heads=20 --set model.d_ff=5120 --set training.batch_size=8 --set training.bias_rows=off
  # The same with the fused loss in one chunk (1 GiB of logits: 16384 x 32000 bf16) instead of two.
  c hd128-c1 examples/gpt2-small.json cuda --set model.n_layers=8 --set model.d_model=1024 \
    --set model.n_heads=8 --set model.d_ff=4096 --set model.vocab_size=32000 \
    --set model.context=2048 --set training.batch_size=8 --set training.loss_chunk_bytes=1073741824
fi
# The default checkpointing "auto" on an H200 (calibration/h200.json's memory_bytes): GPT-2 small
# at micro-batch 448, where none's plan (148.5 GiB) does not fit; auto's choice, gelu (the
# next fastest predicted) and none (refused at start) side by side.
B448=(--calibration calibration/h200.json --set training.batch_size=448)
c gpt2s-b448 examples/gpt2-small.json cuda "${B448[@]}"
c gpt2s-b448-gelu examples/gpt2-small.json cuda "${B448[@]}" --set training.checkpointing=gelu
c gpt2s-b448-none examples/gpt2-small.json cuda "${B448[@]}" --set training.checkpointing=none
# `layer` at the largest micro-batch `tgc plan --max-batch` gives for the H200 (2071 since the
# evaluation's loss is fused too, 2026-12-02; 1370 before: the eval step's whole logits were
# the arena's peak) and one more, which the runtime must refuse at start.
c gpt2s-layer-b2071 examples/gpt2-small.json cuda --calibration calibration/h200.json --set training.batch_size=2071 --set training.checkpointing=layer
c gpt2s-layer-b2072 examples/gpt2-small.json cuda --calibration calibration/h200.json --set training.batch_size=2072 --set training.checkpointing=layer
# checkpointing budget:4GiB at GPT-2 small (the search plans its candidates after tg-fuse and
# tg-bias-rows since 2026-12-02: 11 layers selective + 1 none, arena 4179493380 bytes): the
# planned bytes against the device's, the loss against the default's.
c gpt2s-budget4g examples/gpt2-small.json cuda --set training.checkpointing=budget:4GiB
# selective and layer checkpointing with bias rows on the recomputed layer norms (since
# 2026-12-02, fifteenth session) and off (what those policies compiled to before: no layer
# kept its bias rows under them).
c gpt2s-sel examples/gpt2-small.json cuda --set training.checkpointing=selective
c gpt2s-sel-off examples/gpt2-small.json cuda --set training.checkpointing=selective --set training.bias_rows=off
c gpt2s-layer examples/gpt2-small.json cuda --set training.checkpointing=layer
c gpt2s-layer-off examples/gpt2-small.json cuda --set training.checkpointing=layer --set training.bias_rows=off
# `tgc plan --max-batch` with the H200's table (no --memory): 419 at none. Its boundary on the GPU.
c gpt2s-b419 examples/gpt2-small.json cuda --calibration calibration/h200.json --set training.batch_size=419 --set training.checkpointing=none
c gpt2s-b420 examples/gpt2-small.json cuda --calibration calibration/h200.json --set training.batch_size=420 --set training.checkpointing=none
# The final evaluation over every window on CUDA (test/e2e/eval-windows.test's shapes): micro-
# batches 2 and 5, with and without a real ignore_index, against the CPU backend.
EVW=(--set model.n_layers=1 --set model.vocab_size=512 --set model.context=16 --set model.d_model=32
     --set model.n_heads=2 --set model.d_ff=64)
c evw2-cpu examples/tiny.json cpu "${EVW[@]}" --set training.batch_size=2
c evw2 examples/tiny.json cuda "${EVW[@]}" --set training.batch_size=2
c evw5 examples/tiny.json cuda "${EVW[@]}" --set training.batch_size=5
c evwi2-cpu examples/tiny.json cpu "${EVW[@]}" --set training.batch_size=2 --set training.ignore_index=7
c evwi5 examples/tiny.json cuda "${EVW[@]}" --set training.batch_size=5 --set training.ignore_index=7
c tiny examples/tiny-llama.json cuda --set training.attention.kernel=flash
# Checkpointing under a memory budget on CUDA (plan against used, step time) and the sharded
# token format with true epochs (test/e2e/data_shards.py with a CUDA trainer for 1 rank; the
# 2-rank trainer stays on the CPU: the check is the driver's data path, not NCCL).
c llama1b-budget examples/llama3.2-1b.json cuda --set training.checkpointing=budget:6GiB
c shards-r1 examples/tiny.json cuda "${EVW[@]}" --set training.batch_size=2
c shards-r2-cpu examples/tiny.json cpu "${EVW[@]}" --set training.batch_size=2 --set training.distributed.ranks=2
c tiny-cpu examples/tiny-llama.json cpu --set training.attention.kernel=flash
# The driver's batch prefetch on CUDA (test/e2e/prefetch.py with a CUDA trainer for 1 rank;
# the 2-rank trainer on the CPU): grad_accum 2, so a micro-batch is staged inside the step too.
c pf-r1 examples/tiny.json cuda "${EVW[@]}" --set training.batch_size=2 --set training.grad_accum=2
c pf-r2-cpu examples/tiny.json cpu "${EVW[@]}" --set training.batch_size=2 --set training.grad_accum=2 --set training.distributed.ranks=2
# BASE="DIR": executables of an earlier build (DIR/NAME, e.g. an unpacked earlier llama.tar.xz)
# carried as NAME-base, the before of an A/B in the same call.
for e in ${BASE_NAMES:-gpt2s llama1b}; do
  [ -n "${BASE:-}" ] && [ -x "$BASE/$e" ] && cp "$BASE/$e" "runs/llama/llama/$e-base"
done
cp build/bin/tgrt-cuda-check runs/llama/llama/ && strip runs/llama/llama/tgrt-cuda-check
# CALIBRATE=1: the cost model's calibration executable too (scripts/gpu-llama.sh CALIBRATE=1
# writes $OUT/calibration.json with it; docs/cost-model.md "tgc calibrate").
if [ "${CALIBRATE:-0}" = 1 ]; then
  ninja -C build -j"${JOBS:-2}" bin/tgc-calibrate-cuda
  cp build/bin/tgc-calibrate-cuda runs/llama/llama/ && strip runs/llama/llama/tgc-calibrate-cuda
fi
# Sorted (an executable beside its -base twin) and one 256 MiB window: the executables share
# most of their bytes (the runtime), but xz -9's 64 MiB window lost the matches between files
# of 33-58 MB (77 MB for six files; 32 MB so, under the device tool's 64 MiB carry).
(cd runs/llama && tar -cf - $(find llama -type f | sort)) | xz -T1 --lzma2=preset=9,dict=256MiB > runs/llama/llama.tar.xz
rm -rf runs/llama/llama
ls -la runs/llama
