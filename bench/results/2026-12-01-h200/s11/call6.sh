# call6 (eleventh session): the whole quick kernel check on the final runtime (a1cf578: the
# AdamW islands' check and membership test in runtime/AdamwIslands.h), call5's artifacts.
set -u
source scripts/gpu-lib.sh
gpu_unpack s11c6
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 300 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "adamw_islands|layer_norm_fwd_ones y " $L/check.log | head -10 | cut -c1-140
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
