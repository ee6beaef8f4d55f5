# call8: the head-dim-128 shape (8 layers, d 1024, 8 heads, V 32000, 8 x 2048, bf16-mixed) with the cross-entropy on the SFU (runs/llama of
# commit 0510066: the final kernels, same registers) against torch.compile
# (bench/torch_gpt2_step.py --compile --bf16), 3 alternating repetitions of 20 steps.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/cek; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ce-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh; mkdata $B/data-32000 32000 4000000
for r in 1 2 3; do
  $B/hd128 --data $B/data-32000 --steps 20 --eval-every 0 --eval-batches 1 \
    --log $L/tgc-$r.jsonl > $L/tgc-$r.log 2>&1; echo "tgc rep $r rc $?"
  timeout 150 python3 bench/torch_gpt2_step.py --compile --bf16 --batch 8 --layers 8 --d-model 1024 --heads 8 --d-ff 4096 --vocab 32000 --context 2048 --steps 20 \
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
