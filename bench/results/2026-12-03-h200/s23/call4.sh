# s23 call4 (twenty-third session): the final commit's kernels and the split AdamW's step.
# 1. the whole quick kernel check (with the "adamw split" rows); 2. Llama 3.2 1B, default
# against TGRT_ADAMW_SPLIT=1, 4 alternating repetitions (torch.compile left out: call3 has it
# on the same runtime, 132.83 ms).
set -u
source scripts/gpu-lib.sh
gpu_unpack s23c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel check"
timeout 250 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|adamw split|power sample|passed" $L/check.log | cut -c1-150 | tail -12
echo "== 2. steps"
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 320 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3 4; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "- TGRT_ADAMW_SPLIT=1"; done'
echo "rc $?"
grep -h "^energy:\|beside the plan" $L/tgc-llama1b-*.log | cut -c1-200 | head -6
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
