# call6 (ninth session, the final runtime b3675bf: upload and uploadAsync share noteUploaded;
# the refusal message): the prefetch's correctness on CUDA again
# (test/e2e/prefetch.py, CUDA trainer for 1 rank) and the whole quick kernel check.
set -u
source scripts/gpu-lib.sh
gpu_unpack s9c6
mkdir -p $L/pf
timeout 120 python3 test/e2e/prefetch.py --work $L/pf --exe1 $B/pf-r1 --exe2 $B/pf-r2-cpu \
  > $L/prefetch-check.log 2>&1; echo "prefetch check rc $?"; grep -a "prefetch: " $L/prefetch-check.log | cut -c1-120
timeout 280 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "check rc $?"
grep -a -E "passed|FAIL" $L/check.log | tail -2
rm -rf $L/pf
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
