# s23 call2 (twenty-third session): the energy per step, measured. The trainer's new energy
# line (NVML's counter over steps 3-60, tgrt_power_sample) for Llama 3.2 1B and GPT-2 small
# against `tgc plan --calibration calibration/h200.json`'s predicted energy (86.97 J for
# Llama, computed off the GPU), and torch.compile's power beside its steps (nvidia-smi every
# 50 ms: its median power at the limit x its median step). Also the kernel check's new row
# "power sample (NVML)" (the check is stopped after its context rows).
set -u
source scripts/gpu-lib.sh
gpu_unpack s23c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the check's power row"
timeout 40 $B/tgrt-cuda-check --quick --no-bench > $L/check-head.log 2>&1
grep -E "power sample|upload/download" $L/check-head.log
mkdata "$B/data-128256" 128256 4000000
mkdata "$B/data-50304" 50304 4000000
smi() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > "$1" 2>&1 & SMI=$!; }
echo "== 2. tgc: 60 steps each"
for m in llama1b gpt2s; do
  V=128256; [ $m = gpt2s ] && V=50304
  smi $L/smi-tgc-$m.csv
  timeout 120 $B/$m --data $B/data-$V --steps 60 --eval-every 0 --eval-batches 1 --log $L/tgc-$m.jsonl > $L/tgc-$m.log 2>&1
  kill $SMI
  grep -E "^energy:" $L/tgc-$m.log || { echo "$m: no energy line"; tail -5 $L/tgc-$m.log; }
done
echo "== 3. torch.compile with nvidia-smi beside it"
smi $L/smi-torch-llama1b.csv
timeout 300 python3 bench/torch_llama_step.py --spec examples/llama3.2-1b.json --batch 4 --steps 60 > $L/torch-llama1b.json 2> $L/torch-llama1b.err
kill $SMI
smi $L/smi-torch-gpt2s.csv
timeout 240 python3 bench/torch_gpt2_step.py --compile --bf16 --steps 60 > $L/torch-gpt2s.json 2> $L/torch-gpt2s.err
kill $SMI
python3 - $L <<'PY'
import json, statistics, sys
L = sys.argv[1]
def capped(f):
    rows = [l.strip().split(", ") for l in open(f) if l.count(",") >= 3]
    cap = [r for r in rows if r[3].endswith("4")]
    pw = [float(r[2].split()[0]) for r in cap]
    mhz = [int(r[1].split()[0]) for r in cap]
    return (statistics.median(pw), statistics.median(mhz), len(cap), len(rows)) if cap else (0, 0, 0, len(rows))
print("\n| system | model | ms/step (median) | J/step | W | SM MHz (median) | how |")
print("|---|---|---|---|---|---|---|")
for m in ("llama1b", "gpt2s"):
    recs = [json.loads(l) for l in open(f"{L}/tgc-{m}.jsonl") if l.startswith("{")]
    ms = statistics.median(r["ms"] for r in recs if "ms" in r and r.get("step", 0) > 2)
    e = [r for r in recs if r.get("power") == "steps"]
    if e: print(f"| tgc | {m} | {ms:.2f} | {e[0]['energy_j_per_step']:.2f} | {e[0]['watts']:.0f} | {e[0]['sm_mhz_median']:.0f} | NVML energy counter, steps {e[0]['first_step']}-{e[0]['last_step']} |")
    try:
        t = json.loads(open(f"{L}/torch-{m}.json").read().splitlines()[-1]); tms = t.get("ms_per_step", t.get("ms"))
        w, mhz, n, tot = capped(f"{L}/smi-torch-{m}.csv")
        print(f"| torch.compile | {m} | {tms:.2f} | {w * tms / 1e3:.2f} | {w:.0f} | {mhz:.0f} | nvidia-smi median power at the limit ({n} of {tot} samples) x median step |")
    except Exception as ex: print(f"| torch.compile | {m} | failed: {ex} | | | | |")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
