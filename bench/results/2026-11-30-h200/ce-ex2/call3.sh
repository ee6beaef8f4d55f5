# call3: the 16-bit cross-entropy variants with streaming second passes (TGRT_CE_FAST=6 / 7 =
# 4 / 5 with ld.global.cs + st.global.cs), against 4 (default), 5 and 0 (expf): 1. the
# kernels, 3 rounds; 2. Nsight Compute on variant 6; 3. steps of GPT-2 small, hd 128 and
# Llama 3.2 1B, 3 alternating repetitions of variants 4, 6 and 0; 4. the whole quick check.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/cek; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ce-logs; rm -rf $L; mkdir -p $L
echo "== 1. cross-entropy kernels (ms, GB/s of the minimal bytes)"
for r in 1 2 3; do
  TGRT_KERNEL_BENCH_ONLY=cross_entropy_ timeout 120 $B/tgrt-cuda-check --bench-kernels > $L/bench-$r.log 2>&1
  echo "-- round $r (rc $?)"; grep -E "bf16" $L/bench-$r.log | grep -E "50304" | cut -c1-100
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in "v6"; do
  f="fwd_bwd 16384 x 50304 (in place)${v:+ $v} bf16"; tag=${v// /-}; tag=${tag:-default}
  echo "== 2. ncu: $f"
  TGRT_KERNEL_BENCH_ONLY="$f" timeout 200 $NCU --clock-control none -k "regex:cross_entropy_bwd_kernel" \
    -c 1 --set full -o $L/ce-$tag $B/tgrt-cuda-check --bench-kernels > $L/ncu-run-$tag.log 2>&1
  echo "ncu rc $?"
  $NCU -i $L/ce-$tag.ncu-rep --page details > $L/details-$tag.txt 2>&1
  grep -E "cross_entropy_bwd_kernel<|Duration|DRAM Throughput|Issue Slots Busy|L2 Hit Rate|Registers Per|Achieved Occupancy|Local Memory Spilling Req" $L/details-$tag.txt | cut -c1-110 | head -9
  rm -f $L/ce-$tag.ncu-rep
done
echo "== 3. steps (20 steps, median after 2), 3 alternating repetitions"
source scripts/gpu-lib.sh
mkdata $B/data-50304 50304 4000000; mkdata $B/data-32000 32000 4000000; mkdata $B/data-128256 128256 4000000
for r in 1 2 3; do for m in gpt2s hd128 llama1b; do for v in 4 6 0; do
  case $m in gpt2s) d=50304 ;; hd128) d=32000 ;; llama1b) d=128256 ;; esac
  TGRT_CE_FAST=$v $B/$m --data $B/data-$d --steps 20 --eval-every 0 --eval-batches 1 \
    --log $L/tgc-$m-$v-$r.jsonl > $L/tgc-$m-$v-$r.log 2>&1 || echo "$m $v rep $r failed"
done; done; done
echo "== 4. the whole quick kernel check"
TGRT_CUDA_SYNC=1 timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check.log | tail -6
grep -E "cross_entropy.*bf16" $L/check.log | head -30 | cut -c1-110
python3 - $L <<'PY'
import json, statistics, sys, glob, re
o = sys.argv[1]
print("\n| model | TGRT_CE_FAST | ms/step median (min-max of 3 reps) | last loss per rep | plan / used GiB |")
print("|---|---|---|---|---|")
for m in ("gpt2s", "hd128", "llama1b"):
    for v in ("4", "6", "0"):
        meds, losses, mem = [], [], "-"
        for f in sorted(glob.glob(f"{o}/tgc-{m}-{v}-*.jsonl")):
            rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l and "eval" not in l]
            if len(rows) < 3: continue
            meds.append(statistics.median(r["ms"] for r in rows[2:])); losses.append(round(rows[-1]["loss"], 5))
            g = re.search(r"plan (\d+) bytes.*used (\d+) bytes", open(f[:-6] + ".log").read())
            if g: mem = f"{int(g[1])/2**30:.2f} / {int(g[2])/2**30:.2f}"
        if meds:
            print(f"| {m} | {v} | {statistics.median(meds):.2f} ({min(meds):.2f}-{max(meds):.2f}) | {losses} | {mem} |")
PY
cd $L && tar -cJf $OUT/ce-logs.tar.xz . && ls -la $OUT
