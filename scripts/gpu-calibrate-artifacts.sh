#!/usr/bin/env bash
# Builds (here, no GPU needed) what scripts/gpu-calibrate.sh runs on the GPU machine:
# runs/calibrate/calibrate.tar.xz with the stripped CUDA calibration executable
# (tgc-calibrate-cuda, tools/calibrate) and two compiled steps whose measured time the
# cost model's prediction is compared with (GPT-2 small and Llama 3.2 1B, bf16-mixed, the
# examples' micro-batches). Needs a CUDA build. Then, with the device tool:
#   run: bash scripts/gpu-calibrate.sh   carry: runs/calibrate
# and here: cp <files_at>/h100.json calibration/h100.json, then
#   build/bin/tgc plan examples/gpt2-small.json        (uses calibration/h100.json)
# against the measured medians the script printed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ninja -C "$BUILD" -j"${JOBS:-2}" bin/tgc bin/tgc-calibrate-cuda tgrt_cuda tgrt_driver
rm -rf runs/calibrate && mkdir -p runs/calibrate/calibrate
c() { # name spec args...
  local name=$1 spec=$2; shift 2
  "$BUILD/bin/tgc" compile "$spec" --target cuda "$@" -o "runs/calibrate/calibrate/$name"
  strip "runs/calibrate/calibrate/$name"
}
c gpt2s examples/gpt2-small.json
c llama1b examples/llama3.2-1b.json
cp "$BUILD/bin/tgc-calibrate-cuda" runs/calibrate/calibrate/ && strip runs/calibrate/calibrate/tgc-calibrate-cuda
tar -C runs/calibrate -cf - calibrate | xz -9 -T2 > runs/calibrate/calibrate.tar.xz
rm -rf runs/calibrate/calibrate
ls -la runs/calibrate
