# call7 (ninth session): as call2 with 3 alternating repetitions (the issue's rule for a "faster"): the default training.checkpointing "auto" confirmed by the GPU.
# GPT-2 small at micro-batch 448 compiled here with --calibration calibration/h200.json
# (memory_bytes 150108446720): none's plan (148.5 GiB) does not fit, auto chose
# budget:145861430016 (134.98 GiB, predicted 765.3 ms a step), gelu (119.01 GiB) is the next
# fastest predicted (772.4 ms). Both trained, 3 alternating repetitions of 10 steps; none
# must be refused at start, not crash. Also the memory figures themselves (nvidia-smi's
# memory.total, cudaMemGetInfo's total through torch).
set -u
source scripts/gpu-lib.sh
gpu_unpack s9c7
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader
python3 -c "import torch; f, t = torch.cuda.mem_get_info(); print('cudaMemGetInfo total', t, 'free', f)"
mkdata $B/data-50304 50304 12000000
for r in 1 2 3; do for m in gpt2s-b448 gpt2s-b448-gelu; do
  timeout 120 $B/$m --data $B/data-50304 --steps 10 --eval-every 0 --eval-batches 1 \
    --log $L/tgc-$m-$r.jsonl > $L/tgc-$m-$r.log 2>&1; echo "$m rep $r rc $?"
done; done
timeout 60 $B/gpt2s-b448-none --data $B/data-50304 --steps 2 --eval-every 0 --eval-batches 1 \
  > $L/none.log 2>&1; echo "none rc $?"; grep -a -i -E "error|refus|fit" $L/none.log | head -3 | cut -c1-400
python3 - $L <<'PY'
import json, re, statistics, sys, glob
o = sys.argv[1]
print("\n| run | ms/step median of steps 3-10 (per rep) | plan bytes | process bytes (NVML, end) | last loss |")
print("|---|---|---|---|---|")
for m in ("gpt2s-b448", "gpt2s-b448-gelu"):
    for f in sorted(glob.glob(f"{o}/tgc-{m}-[0-9].jsonl")):
        rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l and "eval" not in l]
        log = open(f[:-6] + ".log").read()
        plan = re.search(r"plan (\d+) bytes", log); nv = re.findall(r"process memory at the end of the run .*?: (\d+) bytes", log)
        ms = statistics.median(r["ms"] for r in rows[2:]) if len(rows) > 2 else float("nan")
        print(f"| {f.split('/')[-1][:-6]} | {ms:.1f} | {plan[1] if plan else '-'} | {nv[-1] if nv else '-'} | {rows[-1]['loss'] if rows else '-'} |")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
