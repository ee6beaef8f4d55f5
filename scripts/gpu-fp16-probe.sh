#!/usr/bin/env bash
# Why is fp16-mixed slower than bf16-mixed on Llama 3.2 1B at large micro-batches when the
# calibrated kernels are not (docs/cost-model.md, "`tgc advise` against the H200")? One
# device call, builds nothing. Carry runs/fp16probe (made here by the lines below):
#   mkdir -p runs/fp16probe && for p in bf16-mixed fp16-mixed; do build/bin/tgc compile \
#     examples/llama3.2-1b.json --target cuda --set training.precision=$p \
#     --set training.batch_size=${B:-16} -o runs/fp16probe/$p; strip runs/fp16probe/$p; xz -9 runs/fp16probe/$p; done
# Runs the two executables alternately (REPS, STEPS each, TGRT_PROFILE=1) while nvidia-smi
# samples the SM / memory clocks, power, temperature and the clock-event reasons every
# 100 ms; prints per run the median step, the mean SM clock and power while it ran, and the
# calls whose mean time differs most between the precisions.
set -u -o pipefail
RESULT=${OUT:-/tmp/fp16probe}; mkdir -p "$RESULT"
L=/tmp/fp16probe-logs; rm -rf $L; mkdir -p $L
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
STEPS=${STEPS:-12}; REPS=${REPS:-2}
source scripts/gpu-lib.sh
mkdata /tmp/data-128256 128256 4000000
declare -A EXE
for p in bf16-mixed fp16-mixed; do EXE[$p]=$(unpack fp16probe/$p); done
q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$q --format=csv,noheader -lms 100 > $L/smi.csv 2> $L/smi.err &
smi=$!
sleep 1
for r in $(seq 1 "$REPS"); do
  for p in bf16-mixed fp16-mixed; do
    echo "start $p-$r $(date +%s.%N)" >> $L/marks.txt
    TGRT_PROFILE=1 ${EXE[$p]} --data /tmp/data-128256 --steps "$STEPS" --eval-every 0 \
      --eval-batches 1 --log $L/$p-$r.jsonl > $L/$p-$r.log 2>&1
    echo "rc $p-$r $?"
    echo "end $p-$r $(date +%s.%N)" >> $L/marks.txt
  done
done
kill $smi
tar -C $L -czf "$RESULT/logs.tgz" .
python3 - $L <<'PY'
import datetime, json, re, statistics, sys
L = sys.argv[1]
marks = {}
for line in open(f"{L}/marks.txt"):
    k, name, t = line.split(); marks.setdefault(name, {})[k] = float(t)
rows = []
for line in open(f"{L}/smi.csv"):
    f = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        rows.append((t, float(f[1].split()[0]), float(f[2].split()[0]), float(f[3].split()[0]), float(f[4]), f[5]))
    except Exception: pass
def prof(name):
    out, on = {}, False
    for line in open(f"{L}/{name}.log"):
        if line.startswith("tgrt profile"): on = True; continue
        m = re.match(r"(tgrt_\S+ .*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line) if on else None
        if m: out[m.group(1).strip()] = float(m.group(4))
    return out
print("| run | ms/step median | SM MHz mean (min) | mem MHz | W mean (max) | temp C | reasons seen |")
print("|---|---|---|---|---|---|---|")
for name, m in marks.items():
    js = [json.loads(l) for l in open(f"{L}/{name}.jsonl") if '"ms"' in l and '"eval"' not in l]
    ms = statistics.median(r["ms"] for r in js[2:]) if len(js) > 2 else float("nan")
    # the second half of the run: the steps, not the start-up
    mid = m["start"] + (m["end"] - m["start"]) * 0.5
    s = [r for r in rows if mid <= r[0] <= m["end"]]
    if not s: print(f"| {name} | {ms:.2f} | - | - | - | - | - |"); continue
    print(f"| {name} | {ms:.2f} | {statistics.mean(r[1] for r in s):.0f} ({min(r[1] for r in s):.0f}) | "
          f"{statistics.mean(r[2] for r in s):.0f} | {statistics.mean(r[3] for r in s):.0f} ({max(r[3] for r in s):.0f}) | "
          f"{max(r[4] for r in s):.0f} | {' '.join(sorted(set(r[5] for r in s)))} |")
a, b = prof("bf16-mixed-1"), prof("fp16-mixed-1")
d = sorted(((b[k] - a[k], k) for k in a if k in b), reverse=True)
print("\ncalls, mean ms: bf16-mixed -> fp16-mixed (rep 1), largest differences")
for diff, k in d[:12]: print(f"  {k[:60]:60s} {a[k]:8.4f} -> {b[k]:8.4f}  ({100*diff/a[k]:+.1f}%)")
PY
