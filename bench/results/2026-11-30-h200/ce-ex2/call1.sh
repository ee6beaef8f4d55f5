# call1: the 16-bit cross-entropy on the SFU's ex2 (TGRT_CE_FAST=4 default, 2, 0 = expf).
# 1. the cross-entropy rows of --bench-kernels, 3 rounds; 2. Nsight Compute --set full on the
# bf16 fwd_bwd kernel at 16384 x 50304 in place, variants 4 and 0 (per-SASS stall samples);
# 3. GPT-2 small steps, default vs TGRT_CE_FAST=0, 3 alternating repetitions (gpu-llama.sh).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/cek; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ce-logs; rm -rf $L; mkdir -p $L
echo "== 1. cross-entropy kernels (ms, GB/s of the minimal bytes)"
for r in 1 2 3; do
  TGRT_KERNEL_BENCH_ONLY=cross_entropy_ timeout 120 $B/tgrt-cuda-check --bench-kernels > $L/bench-$r.log 2>&1
  echo "-- round $r (rc $?)"; grep -E "bf16" $L/bench-$r.log | grep -E "50304|50257" | cut -c1-100
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in 4 0; do
  echo "== 2. ncu, TGRT_CE_FAST=$v"
  TGRT_CE_FAST=$v TGRT_KERNEL_BENCH_ONLY="fwd_bwd 16384 x 50304 (in place) bf16" timeout 200 $NCU \
    --clock-control none -k "regex:cross_entropy_bwd_kernel" -c 1 --set full --import-source no \
    -o $L/ce-$v $B/tgrt-cuda-check --bench-kernels > $L/ncu-run-$v.log 2>&1
  echo "ncu rc $?"
  $NCU -i $L/ce-$v.ncu-rep --page details > $L/details-$v.txt 2>&1
  $NCU -i $L/ce-$v.ncu-rep --page source --csv --print-source sass > $L/sass-$v.csv 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|L2 Hit Rate|Executed Ipc Active|No Eligible" $L/details-$v.txt | head -14
  rm -f $L/ce-$v.ncu-rep
done
echo "== 3. GPT-2 small steps (20 steps, median after 2), default vs TGRT_CE_FAST=0"
source scripts/gpu-lib.sh; mkdata $B/data-50304 50304 4000000
for r in 1 2 3; do for v in 4 0; do
  TGRT_CE_FAST=$v $B/gpt2s --data $B/data-50304 --steps 20 --eval-every 0 --eval-batches 1 \
    --log $L/tgc-$v-$r.jsonl > $L/tgc-$v-$r.log 2>&1; echo "gpt2s CE_FAST=$v rep $r rc $?"
done; done
python3 - $L <<'PY'
import json, statistics, sys, glob
o = sys.argv[1]
for v in ("4", "0"):
    meds, losses = [], []
    for f in sorted(glob.glob(f"{o}/tgc-{v}-*.jsonl")):
        rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l and "eval" not in l]
        meds.append(statistics.median(r["ms"] for r in rows[2:])); losses.append(rows[-1]["loss"])
    print(f"TGRT_CE_FAST={v}: ms/step median {statistics.median(meds):.2f} (min {min(meds):.2f} max {max(meds):.2f}) reps {len(meds)}; last loss {losses}")
PY
cd $L && tar -cJf $OUT/ce-logs.tar.xz . && ls -la $OUT
