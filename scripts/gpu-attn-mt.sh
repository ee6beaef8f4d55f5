#!/usr/bin/env bash
# Attention with 1 or 2 m-tiles per warp (TGRT_ATTN_MT, runtime/cuda/AttentionBf16.cu) on the
# GPU machine, one device call; builds nothing. Carried (scripts/gpu-artifacts.sh perf TAG):
# runs/gpt2-bf16m-TAG.xz, runs/tgrt-cuda-check-TAG.gz, runs/data-gpu.
#   1. the kernel check with TGRT_ATTN_MT=2 (every kernel against the CPU; MT=1 is the default)
#   2. the attention timings (bh 192, t 1024, hd 64) with MT=1 and MT=2
#   3. GPT-2 small bf16-mixed B=16: STEPS steps with MT=1, then MT=2 (median ms, losses), a
#      per-call profile with MT=2
#   4. torch.compile bf16 at the same shape
# A short table last. Env: TAG (required), STEPS (30), TORCH (1).
set -u -o pipefail
TAG=${TAG:?TAG of the carried artifacts}
OUT=${OUT:-/tmp/gpu-attn-mt}; mkdir -p "$OUT"
STEPS=${STEPS:-30}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
source "$(dirname "$0")/gpu-lib.sh"

check=$(unpack "tgrt-cuda-check-$TAG")
echo "== 1. kernel check, TGRT_ATTN_MT=2"
TGRT_ATTN_MT=2 TGRT_CUDA_SYNC=1 "$check" --quick --no-bench > "$OUT/check-mt2.log" 2>&1
echo "rc $?"; grep -E "FAIL|passed" "$OUT/check-mt2.log" | tail -5
echo "== 2. attention timings"
for mt in 1 2; do
  TGRT_ATTN_MT=$mt "$check" --bench-only > "$OUT/bench-mt$mt.log" 2>&1
  echo "-- MT=$mt"; grep -A5 "bf16 tensor cores (median" "$OUT/bench-mt$mt.log"
done

exe=$(unpack "gpt2-bf16m-$TAG")
run() { # name steps env...
  local name=$1 steps=$2; shift 2
  env "$@" "$exe" --data runs/data-gpu --steps "$steps" --eval-every 0 --eval-batches 1 \
    --log "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
  echo "-- $name rc $?"; grep -E "error|refus" "$OUT/$name.log" | head -3; tail -1 "$OUT/$name.log"
}
echo "== 3. GPT-2 small bf16-mixed, B=16"
run "tgc-mt1" "$STEPS" TGRT_ATTN_MT=1
run "tgc-mt2" "$STEPS" TGRT_ATTN_MT=2
run "tgc-mt2-profile" 6 TGRT_ATTN_MT=2 TGRT_PROFILE=1
grep -A30 "tgrt profile" "$OUT/tgc-mt2-profile.log" | head -32

if [ "${TORCH:-1}" = 1 ]; then
  echo "== 4. torch.compile bf16, B=16"
  python3 bench/torch_gpt2_step.py --batch 16 --bf16 --compile > "$OUT/torch-compile-bf16.json" \
    2> "$OUT/torch-compile-bf16.err"
  cat "$OUT/torch-compile-bf16.json"
fi

step_table "$OUT"
