#!/usr/bin/env bash
# Builds (here, no GPU needed) what scripts/gpu-session.sh and scripts/gpu-run.sh carry to
# the GPU machine, under runs/ (64 MiB in all): the GPT-2 small training executable, the
# gradient-check libraries, the gzipped kernel check, and 8 MiB of tokenized kernel docs.
set -euo pipefail
cd "$(dirname "$0")/.."
TGC=build/bin/tgc
ninja -C build -j"${JOBS:-2}" >/dev/null
mkdir -p runs
$TGC compile examples/gpt2-small.json --target cuda -o runs/gpt2-cuda
$TGC compile examples/gpt2-small.json --set training.batch_size=2 --emit=lib --target cuda \
  -o runs/gpt2-grad.so
$TGC compile examples/tiny.json --set model.n_heads=2 --set training.attention.kernel=flash \
  --target cuda --emit=lib -o runs/tiny-cuda.so
# Mixed precision (scripts/gpu-mixed.sh): GPT-2 small per precision, gradient libraries.
for p in bf16-mixed:bf16m fp16-mixed:fp16m bf16:bf16 fp32:fp32; do
  $TGC compile examples/gpt2-small.json --set training.precision=${p%%:*} --target cuda \
    -o runs/gpt2-${p##*:}
  $TGC compile examples/tiny.json --set model.n_heads=2 --set training.attention.kernel=flash \
    --set training.precision=${p%%:*} --target cuda --emit=lib -o runs/tiny-${p##*:}-cuda.so
done
$TGC compile examples/gpt2-small.json --set training.precision=bf16-mixed --set training.batch_size=2 \
  --emit=lib --target cuda -o runs/gpt2-bf16m-grad.so
gzip -c build/bin/tgrt-cuda-check > runs/tgrt-cuda-check.gz
[ -f runs/data-gpu/meta.json ] || $TGC data prepare --input /usr/share/doc/linux-doc-*/Documentation \
  --vocab 8192 --max-bytes 8MiB --out runs/data-gpu
du -sh runs
