# call4 (tenth session): the cost model's table after the rounding change: the "loss" and
# "rows" groups of tgc-calibrate-cuda (the kernels whose bf16 stores changed) into a copy of
# calibration/h200.json, then 2 alternating repetitions of GPT-2 small and head dim 128 on
# the same machine, the steps the new table's predictions are compared with (tgc plan, here).
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. calibration: loss, then rows, into a copy of calibration/h200.json"
timeout 150 $B/tgc-calibrate-cuda --out $L/h200-loss.json --only loss calibration/h200.json > $L/calibrate-loss.log 2>&1; echo "loss rc $?"
timeout 300 $B/tgc-calibrate-cuda --out $OUT/h200.json --only rows $L/h200-loss.json > $L/calibrate-rows.log 2>&1; echo "rows rc $?"
tail -3 $L/calibrate-loss.log $L/calibrate-rows.log | cut -c1-160
echo "== 2. steps"
export B L
timeout 150 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s hd128" "-"'
echo "steps rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
