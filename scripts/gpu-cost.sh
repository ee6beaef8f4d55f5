#!/usr/bin/env bash
# On the GPU machine (device tool, carry runs/cost; built by scripts/gpu-cost-artifacts.sh;
# RUNS=runs/advise for scripts/gpu-advise-artifacts.sh's; DEADLINE=S starts no run after S s):
# 1. tgc-calibrate-cuda writes the calibration table ($OUT/calibration.json; QUICK=1 for the
#    small grid; the full grid takes ~330 s on an H100; CALIB=0 skips it), 2. each training executable of runs/cost/configs.txt runs STEPS steps
#    (REPS times, alternating) and its median step time after 3 warm-up steps is recorded in
#    $OUT/measured.json. scripts/cost-compare.py then predicts each configuration here with
#    that table and prints predicted vs measured. Builds nothing.
set -u -o pipefail
RESULT=${OUT:-/tmp/gpu-cost}; mkdir -p "$RESULT"
LOGS=/tmp/gpu-cost-logs; rm -rf "$LOGS"; mkdir -p "$LOGS"
STEPS=${STEPS:-15}; REPS=${REPS:-2}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$LOGS/gpu.txt"
B=/tmp/cost; rm -rf $B; mkdir -p $B
RUNS=${RUNS:-runs/cost}; T0=$(date +%s)
tar -C $B -xJf $RUNS/cost.tar.xz || { echo "no $RUNS/cost.tar.xz"; exit 1; }
B=$B/cost
if [ "${CALIB:-1}" = 1 ]; then
  echo "== 1. calibration"
  q=(); [ "${QUICK:-0}" = 1 ] && q=(--quick)
  start=$(date +%s)
  timeout ${CALIB_S:-360} $B/tgc-calibrate-cuda --out "$RESULT/calibration.json" "${q[@]}" > "$LOGS/calibrate.log" 2>&1
  echo "rc $? in $(( $(date +%s) - start )) s"; tail -5 "$LOGS/calibrate.log"
fi
if [ "${POWER:-0}" = 1 ]; then
  # POWER=1: only the power section (docs/cost-model.md "The power limit"), into a copy of
  # TABLE (default calibration/h200.json), $OUT/power.json: the table to predict this
  # call's steps with (artifacts built with CALIB=1; run with CALIB=0 POWER=1).
  echo "== 1b. power probes"
  timeout 120 $B/tgc-calibrate-cuda --power-only "${TABLE:-calibration/h200.json}" \
    --out "$RESULT/power.json" > "$LOGS/power.log" 2>&1
  echo "rc $?"; grep -E "power:|error" "$LOGS/power.log"
fi
source scripts/gpu-lib.sh  # mkdata
for v in 50304 32000 49152 128256; do mkdata $B/data-$v $v 4000000; done
echo "== 2. step times: $STEPS steps x $REPS alternating repetitions"
for r in $(seq 1 "$REPS"); do
  while read -r name spec rest; do
    if [ -n "${DEADLINE:-}" ] && [ $(( $(date +%s) - T0 )) -gt "$DEADLINE" ]; then
      echo "$name rep $r skipped (DEADLINE ${DEADLINE} s)"; continue
    fi
    case $name in llama*) V=128256 ;; smollm2*) V=49152 ;; *) V=50304 ;; esac
    case "$rest" in *vocab_size=32000*) V=32000 ;; esac
    $B/$name --data $B/data-$V --steps "$STEPS" --eval-every 0 --eval-batches 1 \
      --log "$LOGS/$name-$r.jsonl" > "$LOGS/$name-$r.log" 2>&1
    echo "$name rep $r rc $?"
  done < $RUNS/configs.txt
done
tar -C "$LOGS" -czf "$RESULT/logs.tgz" . 2>/dev/null
python3 - "$LOGS" "$RESULT/measured.json" <<'PY'
import glob, json, statistics, sys
logs, out = sys.argv[1], sys.argv[2]
res = {}
for f in sorted(glob.glob(f"{logs}/*-[0-9].jsonl")):
    name = f.split("/")[-1].rsplit("-", 1)[0]
    rows = [json.loads(l) for l in open(f) if '"ms"' in l and '"eval"' not in l]
    if len(rows) > 3:
        res.setdefault(name, []).append(statistics.median(r["ms"] for r in rows[3:]))
json.dump({k: {"ms": statistics.median(v), "reps": v} for k, v in res.items()}, open(out, "w"), indent=1)
print("\n| config | measured ms/step (median over reps) | reps |")
print("|---|---|---|")
for k, v in res.items():
    print(f"| {k} | {statistics.median(v):.2f} | {', '.join(f'{x:.2f}' for x in v)} |")
PY
