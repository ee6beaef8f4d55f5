# call7 (seventh session, final): the whole quick kernel check with this session's last
# runtime (the bias sums' first stage as before call3's trial, the new packed = scalar rows).
set -u
source scripts/gpu-lib.sh
gpu_unpack s7c7
timeout 300 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "check rc $?"
grep -a "packed = scalar" $L/check.log | cut -c1-110; grep -a -E "passed|FAIL" $L/check.log | tail -3
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
