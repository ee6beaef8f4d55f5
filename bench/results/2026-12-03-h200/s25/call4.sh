# s25 call4: 1. the whole quick kernel check on this runtime (new rows: GEMM tuning at the
# power limit, TGRT_GEMM_AUTOTUNE=3); 2. Llama 3.2 1B by default against torch.compile, 3
# alternating repetitions of 20 steps (call3 measured 0.900x on another host).
set -u
source scripts/gpu-lib.sh
gpu_unpack s25c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel check"
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|power-limit|passed" $L/check.log | cut -c1-150 | tail -8
cp $L/check.log $OUT/ 2>/dev/null; xz -9 $OUT/check.log
echo "== 2. steps"
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 340 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b" "- torch"; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
