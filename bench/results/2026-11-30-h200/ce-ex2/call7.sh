# call7: GPT-2 small (16 x 1024, bf16-mixed) with the cross-entropy on the SFU (runs/llama of
# commit 0510066: the final kernels, same registers) against torch.compile
# (bench/torch_gpt2_step.py --compile --bf16), 3 alternating repetitions of 20 steps.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/cek; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ce-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh; mkdata $B/data-50304 50304 4000000
for r in 1 2 3; do
  $B/gpt2s --data $B/data-50304 --steps 20 --eval-every 0 --eval-batches 1 \
    --log $L/tgc-$r.jsonl > $L/tgc-$r.log 2>&1; echo "tgc rep $r rc $?"
  timeout 150 python3 bench/torch_gpt2_step.py --compile --bf16 --batch 16 --steps 20 \
    > $L/torch-$r.json 2> $L/torch-$r.err; echo "torch.compile rep $r rc $?: $(tail -c 160 $L/torch-$r.json)"
done
python3 - $L <<'PY'
import json, statistics, sys, glob, re
o = sys.argv[1]
t = []
for f in sorted(glob.glob(f"{o}/tgc-*.jsonl")):
    rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l and "eval" not in l]
    t.append(statistics.median(r["ms"] for r in rows[2:]))
c = [json.loads(open(f).read().strip().splitlines()[-1])["ms_per_step"] for f in sorted(glob.glob(f"{o}/torch-*.json"))
     if open(f).read().strip()]
print(f"tgc {statistics.median(t):.2f} ({min(t):.2f}-{max(t):.2f}); torch.compile {statistics.median(c):.2f} ({min(c):.2f}-{max(c):.2f}); ratio {statistics.median(t)/statistics.median(c):.3f}")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
