#!/usr/bin/env bash
# One device call's worth of checks, from the repository root on the GPU machine; builds
# nothing. Carried (built here with scripts/gpu-artifacts.sh): runs/tgrt-cuda-check.gz,
# runs/gpt2-grad.so, runs/tiny-cuda.so. Runs
#   1. tgrt-cuda-check --no-bench (every CUDA kernel against the CPU reference),
#   2. scripts/gpu-grad-check.sh (tiny and GPT-2 small gradients / AdamW vs float64 PyTorch),
# and prints a two-line summary last. Training and timings: scripts/gpu-run.sh.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-session}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gunzip -c runs/tgrt-cuda-check.gz > /tmp/tgrt-cuda-check && chmod +x /tmp/tgrt-cuda-check
echo "== kernel check"
TGRT_CUDA_SYNC=1 /tmp/tgrt-cuda-check --no-bench > "$OUT/cuda-check.log" 2>&1
rc_check=$?
grep -E "^tgrt-cuda-check:|FAIL|passed|matmul_bias|gelu" "$OUT/cuda-check.log"
echo "== gradient check"
env -u LD_LIBRARY_PATH OUT="$OUT" scripts/gpu-grad-check.sh runs/gpt2-grad.so runs/tiny-cuda.so
rc_grad=$?
echo
echo "kernel check: $(grep -E '[0-9]+ passed, [0-9]+ failed' "$OUT/cuda-check.log" | tail -1) (rc $rc_check)"
echo "gradient check: rc $rc_grad"
[ $rc_check -eq 0 ] && [ $rc_grad -eq 0 ]
