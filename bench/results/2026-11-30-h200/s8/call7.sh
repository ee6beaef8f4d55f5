# call7 (eighth session, final): as call6 with the check's tuning-cache and capture rows on
# contexts of their own without TGRT_GEMM_STEP_TUNE (CudaCheck.cpp contextWithout). The whole
# quick kernel check with the session's last runtime
# (f85b333: the prefetch's uploadAsync, TGRT_ATTN's parser, the GEMM step tuning), by default
# and with TGRT_GEMM_STEP_TUNE=1 (every GEMM of the check then runs the step tuning's
# candidates in turn, each result against the CPU reference).
set -u
source scripts/gpu-lib.sh
gpu_unpack s8c7
timeout 280 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "check rc $?"
grep -a -E "passed|FAIL" $L/check.log | tail -2
TGRT_GEMM_STEP_TUNE=1 TGRT_GEMM_TUNE_CACHE= timeout 280 $B/tgrt-cuda-check --quick --no-bench \
  > $L/check-step-tune.log 2>&1; echo "check (step tune) rc $?"
grep -a -E "passed|FAIL|GEMM tuning in the step" $L/check-step-tune.log | tail -3 | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
