# call3 (fourteenth session): the runtime as it lands (f25eda1: one stream, TGRT_CE_OVERLAP
# removed) and the budget search that plans its candidates after tg-fuse / tg-bias-rows.
# 1. the quick kernel check; 2. GPT-2 small default against checkpointing budget:4GiB
# (11 layers selective + 1 none, planned arena 4179493380 bytes <= 4294967296), 2 alternating
# repetitions: plan against device memory used, last losses (recomputation is bit-identical).
set -u
source scripts/gpu-lib.sh
gpu_unpack s14c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the quick kernel check"
timeout 100 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -3
echo "== 2. steps"
export B L
timeout 150 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s gpt2s-budget4g" "-"'
echo "steps rc $?"
grep -h "tgrt: cuda memory on" $L/tgc-*.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
