#!/usr/bin/env bash
# The GPU's clocks and power while training steps run (device tool, carry runs/llama from
# scripts/gpu-llama-artifacts.sh; builds nothing): why compute-bound calls run slower inside
# a step than in `tgc calibrate`'s 3 ms bursts (docs/cost-model.md "Predicted against
# measured"). For each executable of EXES (default "gpt2s smollm2 llama1b"): nvidia-smi
# samples SM clock, memory clock, power, temperature and the active clock-event reasons every
# 50 ms while it trains STEPS steps; a table last: median / min SM clock and median power over
# the samples taken while the steps ran (the first 3 s dropped: start-up and GEMM tuning).
set -u -o pipefail
RESULT=${OUT:-/tmp/gpu-clocks}; mkdir -p "$RESULT"
LOGS=/tmp/gpu-clocks-logs; rm -rf "$LOGS"; mkdir -p "$LOGS"
STEPS=${STEPS:-60}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv | tee "$LOGS/gpu.txt"
B=/tmp/clk; rm -rf $B; mkdir -p $B
tar -C $B -xJf runs/llama/llama.tar.xz || { echo "no runs/llama/llama.tar.xz"; exit 1; }
B=$B/llama
source scripts/gpu-lib.sh  # mkdata
R=clocks_event_reasons.active  # older drivers: clocks_throttle_reasons.active
nvidia-smi --query-gpu=$R --format=csv > /dev/null 2>&1 || R=clocks_throttle_reasons.active
for e in ${EXES:-gpt2s smollm2 llama1b}; do
  case $e in smollm2*) v=49152 ;; llama*) v=128256 ;; hd128*) v=32000 ;; *) v=50304 ;; esac
  [ -d $B/data-$v ] || mkdata $B/data-$v $v 4000000
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,$R \
    --format=csv,noheader,nounits -lms 50 > "$LOGS/smi-$e.csv" 2>&1 &
  smi=$!
  $B/$e --data $B/data-$v --steps "$STEPS" --eval-every 0 --eval-batches 1 --log "$LOGS/$e.jsonl" \
    > "$LOGS/$e.log" 2>&1
  echo "$e rc $?"
  kill $smi; wait $smi 2>/dev/null
done
tar -C "$LOGS" -czf "$RESULT/logs.tgz" .
python3 - "$LOGS" ${EXES:-gpt2s smollm2 llama1b} <<'PY'
import json, statistics, sys
logs, exes = sys.argv[1], sys.argv[2:]
print("\n| run | ms/step (median, steps 4-) | SM clock MHz median (min) | memory clock MHz | power W median (max) | samples | clock-event reasons seen |")
print("|---|---|---|---|---|---|---|")
for e in exes:
    rows = [l.split(", ") for l in open(f"{logs}/smi-{e}.csv") if l.count(",") >= 5]
    rows = rows[60:]  # the first 3 s: start-up, data, GEMM tuning
    try: sm = [float(r[1]) for r in rows]; mem = [float(r[2]) for r in rows]; pw = [float(r[3]) for r in rows]
    except ValueError: print(f"| {e} | unreadable samples |"); continue
    busy = [i for i, s in enumerate(sm) if s > 500] or list(range(len(sm)))
    steps = [json.loads(l) for l in open(f"{logs}/{e}.jsonl") if '"ms"' in l and '"eval"' not in l]
    ms = statistics.median(s["ms"] for s in steps[3:]) if len(steps) > 3 else float("nan")
    reasons = sorted({r[5].strip() for r in rows})
    f = lambda v: statistics.median(v[i] for i in busy)
    print(f"| {e} | {ms:.2f} | {f(sm):.0f} ({min(sm[i] for i in busy):.0f}) | {f(mem):.0f} | {f(pw):.0f} ({max(pw[i] for i in busy):.0f}) | {len(busy)} | {' '.join(reasons)[:60]} |")
PY
