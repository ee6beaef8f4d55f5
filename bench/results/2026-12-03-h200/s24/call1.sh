# s24 call1 (twenty-fourth session): split master values in the plan, the default.
# 1. the whole quick kernel check (the "adamw split" rows now test tgrt_adamw_split against
# tgrt_adamw_wc_g and the CPU reference); 2. Llama 3.2 1B with the split values (default)
# against training.master_values=f32 (llama1b-m32), 2 alternating repetitions: step time and
# the plan against the GPU's bytes.
set -u
source scripts/gpu-lib.sh
gpu_unpack s24c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel check"
timeout 250 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|adamw split|passed" $L/check.log | cut -c1-150 | tail -14
echo "== 2. steps"
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; for r in 1 2; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b llama1b-m32" "-"; done'
echo "rc $?"
grep -h "plan .*bytes\|beside the plan\|^energy:" $L/tgc-llama1b*-1.log | cut -c1-220 | head -8
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
