#!/usr/bin/env bash
# The technique comparison on the GPU machine, one device call; builds nothing. Run from the
# repo root after `scripts/gpu-artifacts.sh experiment MATRIX NAME` (here) made
# runs/NAME.tar.xz and the call carried runs/:
#   scripts/gpu-experiment.sh NAME [tools/experiment/run.py options, e.g. --no-pytorch, --only a,b]
# RUN_TIMEOUT=SEC stops the runner after SEC seconds (what finished is kept and packed);
# within one device call a second invocation with the same NAME continues where the first
# stopped (the directory stays unpacked in /tmp/exp; run.py skips recorded rows).
# Unpacks the compiled configurations, runs tools/experiment/run.py on them (tgc rows and,
# unless --no-pytorch, the PyTorch rows of bench/torch_train.py) with the carried tokens
# runs/data-gpu, then packs the directory (results.jsonl, results.md, logs, plots) into
# $OUT/NAME-results.tar.gz (the device tool returns at most 8 files). Prints results.md last.
set -u -o pipefail
NAME=${1:?name}; shift
OUT=${OUT:-/tmp/gpu-experiment}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
WORK=/tmp/exp; mkdir -p "$WORK"
if [ ! -d "$WORK/$NAME" ]; then
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" \
    "runs/$NAME.tar.xz" | tar -C "$WORK" -xf - || { echo "cannot unpack runs/$NAME.tar.xz"; exit 1; }
fi
timeout "${RUN_TIMEOUT:-0}" python3 tools/experiment/run.py "$WORK/$NAME" --data runs/data-gpu "$@" 2>&1 | tee "$OUT/$NAME-run.log" | grep -v '^\[' | tail -40
rc=$?
tar -C "$WORK" --exclude=train -czf "$OUT/$NAME-results.tar.gz" "$NAME"
echo "rc $rc"
cat "$WORK/$NAME/results.md" 2>/dev/null
