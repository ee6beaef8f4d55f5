# call5 (fifteenth session): after the review mends (the lowering's bias-rows helpers, the
# planner's ones-column test in one place): 1. the quick kernel check; 2. GPT-2 small default,
# selective and budget:4GiB, 2 alternating repetitions: times, plans and last losses against
# call1's.
set -u
source scripts/gpu-lib.sh
gpu_unpack s15c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the quick kernel check"
timeout 100 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -3
echo "== 2. steps"
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s gpt2s-sel gpt2s-budget4g" "-"'
echo "steps rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
