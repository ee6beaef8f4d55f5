#!/usr/bin/env bash
# The main job on the small embedded default: install + build (first time), tokenize a slice
# of the default corpus (Linux kernel docs, Debian's linux-doc), compile the default spec and
# train it, printing progress and the final validation/test perplexity.
# Uses the GPU (--target cuda) when nvidia-smi sees one and the CUDA runtime was built.
#   scripts/run.sh [extra driver args, e.g. --steps 500]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/tgc ] || bash scripts/setup.sh
TARGET=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 \
   && [ -f build/runtime/cuda/libtgrt_cuda.a ]; then TARGET=cuda; fi
mkdir -p runs
[ -f runs/data-default/train.npy ] || \
  build/bin/tgc data prepare --vocab 2048 --max-bytes 4MiB --out runs/data-default
build/bin/tgc summary | tail -1
build/bin/tgc plan --target "$TARGET" | head -16
build/bin/tgc compile --target "$TARGET" -o runs/train-default
exec runs/train-default --data runs/data-default --steps 600 --eval-every 200 --eval-batches 20 \
  --log runs/train-default.jsonl "$@"
