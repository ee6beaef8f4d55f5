# s23 call1 (twenty-third session; s22 call5 as written, then the whole quick kernel check): why cuDNN's attention takes 0.708-0.730 / 0.217-0.226 ms per
# layer in Llama 3.2 1B's step against 0.610 / 0.196 alone, and why steps 8-9 and 16-17 run
# 8-18 ms slower in every run on every host (s21, s22 logs).
# 1. tgrt-cuda-check --cudnn with the "cudnn-cold" rows (L2 flushed before each call);
# 2. the plans cuDNN's tuning times inside the step (TGRT_ATTN_TUNE_LOG=1, 4 steps);
# 3. 40 steps with nvidia-smi sampling the SM clock, power and throttle reasons every 50 ms
#    beside them, with and without the CUDA graph.
set -u
source scripts/gpu-lib.sh
gpu_unpack s23c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. cuDNN attention, warm and cold"
timeout 75 $B/tgrt-cuda-check --quick --cudnn > $L/cudnn.log 2>&1; echo "rc $?"
grep -E "^Llama" $L/cudnn.log | cut -c1-110
[ -d "$B/data-128256" ] || mkdata "$B/data-128256" 128256 4000000
echo "== 2. cuDNN plans timed in the step"
TGRT_ATTN_TUNE_LOG=1 timeout 60 $B/llama1b --data $B/data-128256 --steps 4 --eval-every 0 --eval-batches 1 > $L/tune-log.log 2>&1
grep -E "cuDNN attention .*plan" $L/tune-log.log | cut -c1-220 | head -24
echo "== 3. clocks beside the steps"
for g in 1; do  # (the run without the graph left out: the session's last device time)
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $L/smi-graph$g.csv 2>&1 &
  P=$!
  date +%s.%N > $L/start-graph$g.txt
  TGRT_CUDA_GRAPH=$g timeout 90 $B/llama1b --data $B/data-128256 --steps 40 --eval-every 0 --eval-batches 1 --log $L/steps-graph$g.jsonl > $L/run-graph$g.log 2>&1
  date +%s.%N > $L/end-graph$g.txt
  kill $P
  python3 -c "
import json,sys
r=[json.loads(l) for l in open('$L/steps-graph$g.jsonl') if l.startswith('{') and '\"ms\"' in l]
print('graph $g ms:', ' '.join(f'{x[\"ms\"]:.0f}' for x in r[1:]))"
done
python3 - $L <<'PY'
import sys, collections
L = sys.argv[1]
for g in (1,):
    rows = [l.split(", ") for l in open(f"{L}/smi-graph{g}.csv") if l.count(",") >= 5]
    clk = [int(r[1].split()[0]) for r in rows if r[1].split()[0].isdigit()]
    pw = [float(r[3].split()[0]) for r in rows if r[3].split()[0].replace('.', '').isdigit()]
    thr = collections.Counter(r[5].strip() for r in rows)
    print(f"graph {g}: {len(rows)} samples, SM clock min {min(clk)} max {max(clk)} MHz, power max {max(pw):.0f} W, throttle reasons {dict(thr.most_common(4))}")
PY
echo "== 4. the whole quick kernel check on this commit's kernels"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
tail -3 $L/check.log
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
