# call4 (twentieth session): the SwiGLU-backward epilogue with 4 (cc-u4, call3's code) and 8
# (cc-u8) chunks in flight per epilogue thread, both with sigmoidF's hardware exponential and
# the L2 prefetch; tgrt-cuda-check binaries built here and carried in runs/s20/bins.tar.xz.
# Only cc-u8 travels (the working tree limit); cc-u4 is call3's binary. The own GEMM's quick rows
# with cc-u8, then its SwiGLU table twice.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/s20c4-bin; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/s20/bins.tar.xz
L=/tmp/s20c4-logs; rm -rf $L; mkdir -p $L
TGRT_CUDA_SYNC=1 timeout 200 $B/cc-u8 --quick --gemm > $L/gemm-check-u8.log 2>&1; echo "check u8 rc $?"
grep -E "FAIL|passed" $L/gemm-check-u8.log | tail -4
for r in 1 2; do
  for v in u8; do
    TGRT_GEMM_BENCH_ONLY=none timeout 200 $B/cc-$v --bench-gemm > $L/bench-$v-$r.log 2>&1
    echo "== $v round $r (rc $?)"; sed -n '/^SwiGLU/,$p' $L/bench-$v-$r.log | grep -v '^tgrt:' | tail -2
  done
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
