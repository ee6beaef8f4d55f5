# call8 (tenth session): the whole quick kernel check on the final runtime (79d4294's: the
# rounding change and the cross-entropy's variant rule at half of L2).
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c8
timeout 300 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
