#!/usr/bin/env bash
# Builds (here, no GPU needed) what scripts/gpu-cost.sh runs on the GPU machine: the CUDA
# calibration executable (tgc-calibrate-cuda) and the training executables of the cost
# model's check (issue 23: predicted vs measured step time), in runs/cost/cost.tar.xz, and
# runs/cost/configs.txt (name and tgc --set arguments of each, read back by
# scripts/cost-compare.py to predict each configuration with the H100 table). Then, with the
# device tool:  run: bash scripts/gpu-cost.sh   carry: runs/cost
# CONFIGS="name ..." builds only those of the list; CALIB=0 leaves the calibration executable
# out (run with CALIB=0 too). SET=2 builds a second list of 16 configurations (no calibration executable; run it with
# CALIB=0 bash scripts/gpu-cost.sh): the carry limit (64 MiB) holds ~15 executables.
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build -j"${JOBS:-2}" bin/tgc bin/tgc-calibrate-cuda tgrt_cuda tgrt_cpu tgrt_driver
rm -rf runs/cost && mkdir -p runs/cost/cost
: > runs/cost/configs.txt
c() { # name spec args...
  local name=$1 spec=$2; shift 2
  # CONFIGS="name ...": only these (the device tool carries at most 64 MiB with the repo).
  if [ -n "${CONFIGS:-}" ]; then case " $CONFIGS " in *" $name "*) ;; *) return 0 ;; esac; fi
  build/bin/tgc compile "$spec" --target cuda "$@" -o "runs/cost/cost/$name" > /dev/null
  strip "runs/cost/cost/$name"
  echo "$name $spec $*" >> runs/cost/configs.txt
}
G=examples/gpt2-small.json
MED=(--set model.n_layers=24 --set model.d_model=1024 --set model.n_heads=16 --set model.d_ff=4096)
HD128=(--set model.n_layers=8 --set model.d_model=1024 --set model.n_heads=8 --set model.d_ff=4096
       --set model.vocab_size=32000 --set model.context=2048)
if [ "${SET:-1}" = 1 ]; then
c gpt2s $G
c gpt2s-gelu $G --set training.checkpointing=gelu
c gpt2s-sel $G --set training.checkpointing=selective
c gpt2s-layer $G --set training.checkpointing=layer
c gpt2s-fp16 $G --set training.precision=fp16-mixed
c gpt2s-b8 $G --set training.batch_size=8
c gpt2s-b32 $G --set training.batch_size=32
c gpt2s-fp32 $G --set training.precision=fp32 --set training.batch_size=8
c gpt2m $G "${MED[@]}" --set training.batch_size=8
c gpt2m-layer $G "${MED[@]}" --set training.batch_size=8 --set training.checkpointing=layer
c hd128 $G "${HD128[@]}" --set training.batch_size=8
c smollm2 examples/smollm2-135m.json
c smollm2-layer examples/smollm2-135m.json --set training.checkpointing=layer
c llama1b examples/llama3.2-1b.json
c llama1b-sel examples/llama3.2-1b.json --set training.checkpointing=selective
else  # SET=2: 16 more configurations for the accuracy check (measured in another call)
LARGE=(--set model.n_layers=36 --set model.d_model=1280 --set model.n_heads=20 --set model.d_ff=5120)
c gpt2s-la $G --set training.checkpointing=layer-attn
c gpt2s-b4 $G --set training.batch_size=4
c gpt2s-bf16 $G --set training.precision=bf16
c gpt2s-ga2 $G --set training.batch_size=8 --set training.grad_accum=2
c gpt2s-own $G --set training.attention.impl=own
c gpt2s-budget $G --set training.checkpointing=budget:4GiB
c gpt2s-fp32-b16 $G --set training.precision=fp32
c gpt2m-sel $G "${MED[@]}" --set training.batch_size=8 --set training.checkpointing=selective
c gpt2m-b16 $G "${MED[@]}" --set training.batch_size=16
c gpt2l $G "${LARGE[@]}" --set training.batch_size=8
c hd128-layer $G "${HD128[@]}" --set training.batch_size=8 --set training.checkpointing=layer
c hd128-b4 $G "${HD128[@]}" --set training.batch_size=4
c smollm2-sel examples/smollm2-135m.json --set training.checkpointing=selective
c smollm2-b4 examples/smollm2-135m.json --set training.batch_size=4
c llama1b-layer examples/llama3.2-1b.json --set training.checkpointing=layer
c llama1b-b2 examples/llama3.2-1b.json --set training.batch_size=2
fi
[ "${SET:-1}" = 1 ] && [ "${CALIB:-1}" = 1 ] && cp build/bin/tgc-calibrate-cuda runs/cost/cost/ && strip runs/cost/cost/tgc-calibrate-cuda
tar -C runs/cost -cf - cost | xz -9 -T2 > runs/cost/cost.tar.xz
rm -rf runs/cost/cost
ls -la runs/cost
