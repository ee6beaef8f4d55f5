#!/usr/bin/env bash
# Runs on the GPU machine from the repo root; builds nothing. Expects (carried):
#   runs/gpt2-cuda   ninja -C build tgrt_cuda &&
#                    build/bin/tgc compile examples/gpt2-small.json --target cuda -o runs/gpt2-cuda
#   runs/data-gpu    tgc data prepare --vocab 8192 --max-bytes 8MiB --out runs/data-gpu
# Trains GPT-2 small for STEPS (default 6) steps with the CUDA backend's per-call profiler
# (TGRT_PROFILE=1, runtime/cuda/Context.cu): once with exact fp32 GEMMs, once with
# TGRT_TF32=1. Step 1 is warm-up and not counted. Prints the two tables last (calls, total
# ms, mean ms, ms per step, share of the event-timed step; then the totals per function).
# Logs go to $OUT (the device tool's output folder) when set, else /tmp/gpu-profile.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-profile}
mkdir -p "$OUT"
STEPS=${STEPS:-6}
BIN=${BIN:-runs/gpt2-cuda}
DATA=${DATA:-runs/data-gpu}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader || true
[ -x "$BIN" ] || { echo "gpu-profile: $BIN missing (see the header of $0)" >&2; exit 2; }

rc=0
for mode in fp32 tf32; do
  tf32=0
  [ "$mode" = tf32 ] && tf32=1
  echo "== $mode: TGRT_PROFILE=1 TGRT_TF32=$tf32 $BIN --steps $STEPS =="
  TGRT_PROFILE=1 TGRT_TF32=$tf32 "$BIN" --data "$DATA" --steps "$STEPS" --eval-every 0 \
    --eval-batches 1 --log "$OUT/profile-$mode.jsonl" >"$OUT/profile-$mode.log" 2>&1
  r=$?
  [ $r -ne 0 ] && { echo "gpu-profile: $mode run failed (exit $r)"; tail -20 "$OUT/profile-$mode.log"; rc=1; }
  # Per-step wall times from the driver's log (ms), for comparison with the event-timed step.
  python3 - "$OUT/profile-$mode.jsonl" <<'PY' || true
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
ms = [r["ms"] for r in rows if "ms" in r and "eval" not in r]
if ms:
    print("driver ms/step:", " ".join(f"{m:.1f}" for m in ms),
          f"| mean after step 1: {sum(ms[1:]) / max(1, len(ms) - 1):.1f}")
PY
done

for mode in fp32 tf32; do
  echo
  echo "==================== profile: $mode ===================="
  # The table starts at the "tgrt profile" line and runs to the end of the log.
  sed -n '/^tgrt profile (TGRT_PROFILE=1)/,$p' "$OUT/profile-$mode.log"
done
exit $rc
