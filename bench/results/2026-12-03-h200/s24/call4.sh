# s24 call4 (twenty-fourth session): does the split's saved memory traffic buy clock under
# the 700 W limit? Llama 3.2 1B split (llama1b, the default) and f32 values (llama1b-m32),
# 2 alternating repetitions of 40 steps each with nvidia-smi sampling the SM clock and the
# power every 50 ms; per run the median SM clock and power over the samples drawing > 500 W
# (the steps; start-up and the end draw less), and the run's median ms/step (steps 3-40).
set -u
source scripts/gpu-lib.sh
gpu_unpack s24c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
for r in 1 2; do for m in llama1b llama1b-m32; do
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $L/smi-$m-$r.csv 2>&1 &
  P=$!
  timeout 120 $B/$m --data $B/data-128256 --steps 40 --eval-every 0 --eval-batches 1 --log $L/steps-$m-$r.jsonl > $L/run-$m-$r.log 2>&1
  kill $P; sleep 1
done; done
python3 - $L <<'PY'
import json, statistics, sys
L = sys.argv[1]
print("| run | ms/step median (steps 3-40) | in-step samples | SM clock median MHz | power median W | energy line |")
print("|---|---|---|---|---|---|")
for r in (1, 2):
    for m in ("llama1b", "llama1b-m32"):
        rows = [json.loads(l) for l in open(f"{L}/steps-{m}-{r}.jsonl") if l.startswith("{") and '"ms"' in l]
        ms = statistics.median(x["ms"] for x in rows[2:])
        s = [l.split(", ") for l in open(f"{L}/smi-{m}-{r}.csv") if l.count(",") >= 3]
        s = [(int(x[1].split()[0]), float(x[2].split()[0])) for x in s
             if x[1].split()[0].isdigit() and x[2].split()[0].replace(".", "").isdigit()]
        hot = [x for x in s if x[1] > 500]
        e = [l.strip() for l in open(f"{L}/run-{m}-{r}.log") if l.startswith("energy:")]
        print(f"| {m} rep {r} | {ms:.2f} | {len(hot)} | {statistics.median(c for c, _ in hot):.0f} | "
              f"{statistics.median(p for _, p in hot):.0f} | {e[0][:60] if e else '-'} |")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
