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
  build/bin/tgc compile "$spec" --target "$target" "$@" -o "runs/llama/llama/$name"
  strip "runs/llama/llama/$name"
}
c smollm2 examples/smollm2-135m.json cuda
c llama1b examples/llama3.2-1b.json cuda
c smollm2-sel examples/smollm2-135m.json cuda --set training.checkpointing=selective
c llama1b-sel examples/llama3.2-1b.json cuda --set training.checkpointing=selective
c tiny examples/tiny-llama.json cuda --set training.attention.kernel=flash
c tiny-cpu examples/tiny-llama.json cpu --set training.attention.kernel=flash
cp build/bin/tgrt-cuda-check runs/llama/llama/ && strip runs/llama/llama/tgrt-cuda-check
tar -C runs/llama -cf - llama | xz -9 -T2 > runs/llama/llama.tar.xz
rm -rf runs/llama/llama
ls -la runs/llama
