# call4 (nineteenth session): the whole quick kernel check with the final runtime (ad2b0d5:
# checkLowCopy, the norms' one check of their low copy), after call1's at 79d3937.
set -u
source scripts/gpu-lib.sh
gpu_unpack s19c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -cE "dy's buffer.*PASS" $L/check.log
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
