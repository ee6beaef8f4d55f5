#!/usr/bin/env bash
# Step-time work on the GPU machine (issue 7), one device call; builds nothing. Run from the
# repo root after `scripts/gpu-artifacts.sh perf [TAG]` built (here) and the call carried:
#   runs/gpt2-bf16m[-TAG].xz ...      GPT-2 small bf16-mixed executables (micro-batch 16)
#   runs/tgrt-cuda-check[-TAG].gz    kernel checks (current and, when carried, older builds)
#   runs/data-gpu                    tokenized data
# For every kernel-check binary: the quick check against the CPU backend (TGRT_CUDA_SYNC=1)
# and the GPT-2-shape kernel timings (--bench-only). For every GPT-2 executable: STEPS steps
# (median ms/step, plan vs used memory), and a per-call profile (TGRT_PROFILE=1) of the first.
# Then torch.compile bf16 at the same shape, with its kernels' time per step
# (bench/torch_gpt2_step.py --profile). A short table last.
#   STEPS (30)  EXES ("all carried gpt2-* executables")  TORCH (1)  CHECKS (1)  PROFILE (1)
#   VARIANTS ("")  "name:VAR=value[,VAR=value] ...": the first executable again per variant,
#                  with those environment variables (e.g. det:TGRT_ATTN_DETERMINISTIC=1)
# Logs go to $OUT (the device tool's output folder).
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-perf}; mkdir -p "$OUT"
STEPS=${STEPS:-30}
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
source "$(dirname "$0")/gpu-lib.sh"

if [ "${CHECKS:-1}" = 1 ]; then
  for f in runs/tgrt-cuda-check*.gz; do
    [ -f "$f" ] || continue
    tag=$(basename "$f" .gz); bin=$(unpack "${f%.gz}")
    echo "== $tag: quick check"
    TGRT_CUDA_SYNC=1 "$bin" --quick --no-bench > "$OUT/$tag-check.log" 2>&1
    echo "rc $?"; grep -E "FAIL|passed" "$OUT/$tag-check.log" | tail -5
    echo "== $tag: kernel timings"
    "$bin" --bench-only > "$OUT/$tag-bench.log" 2>&1
    grep -A60 "kernel timing" "$OUT/$tag-bench.log" | grep -vE "^$" | head -60
  done
fi

run() { # name exe steps [env...]
  local name=$1 bin; bin=$(unpack "$2"); local steps=$3; shift 3
  [ -n "$bin" ] || { echo "(no $2)"; return; }
  echo "-- $name"
  env "$@" "$bin" --data runs/data-gpu --steps "$steps" --eval-every 0 --eval-batches 1 \
    --log "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
  echo "rc $?"; grep -E "error|refus" "$OUT/$name.log" | head -3; tail -1 "$OUT/$name.log"
}
# (executables only: gradient libraries runs/gpt2-*.so.xz are not steps to time)
EXES=${EXES:-$(ls runs/gpt2-*.xz 2>/dev/null | grep -v '\.so\.xz$' | xargs -n1 basename 2>/dev/null | sed 's/\.xz$//')}
first=${PROFILE:-1}
for e in $EXES; do
  run "tgc-${e#gpt2-}" "$e" "$STEPS"
  if [ $first = 1 ]; then
    run "tgc-${e#gpt2-}-profile" "$e" 6 TGRT_PROFILE=1
    grep -B2 -A45 "tgrt profile" "$OUT/tgc-${e#gpt2-}-profile.log" | head -50
    first=0
  fi
done
first_exe=$(echo $EXES | awk '{print $1}')
for v in ${VARIANTS:-}; do
  [ -n "$first_exe" ] || break
  run "tgc-${first_exe#gpt2-}-${v%%:*}" "$first_exe" "$STEPS" $(echo "${v#*:}" | tr ',' ' ')
done

if [ "${TORCH:-1}" = 1 ]; then
  echo "== torch.compile bf16, B=16"
  python3 bench/torch_gpt2_step.py --batch 16 --bf16 --compile --profile "$OUT/torch-profile.txt" \
    > "$OUT/torch-compile-bf16.json" 2> "$OUT/torch-compile-bf16.err"
  cat "$OUT/torch-compile-bf16.json"; head -40 "$OUT/torch-profile.txt"
fi

step_table "$OUT"
