# call9 (tenth session): the whole quick kernel check after the review mend (packF16 shared
# by pack16 and the f16 attention kernels; pack16's NaN dispatch also under the emulator).
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c9
timeout 300 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
