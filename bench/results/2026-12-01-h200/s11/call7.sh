# call7 (eleventh session): the whole quick kernel check after the review mend (the islands
# error text shared in runtime/AdamwIslands.h).
set -u
source scripts/gpu-lib.sh
gpu_unpack s11c7
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 300 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "adamw_islands|layer_norm_fwd_ones y " $L/check.log | head -10 | cut -c1-140
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
