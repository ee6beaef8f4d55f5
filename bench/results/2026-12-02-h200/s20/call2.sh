# call2 (twentieth session): the SwiGLU-backward epilogue with the tile's gate and up rows
# prefetched into L2 before the epilogue warps wait for the tile, and 8 chunks in flight per
# thread (4 in call1). The own GEMM's kernel-check rows, then --bench-gemm's SwiGLU table.
set -u
source scripts/gpu-lib.sh
gpu_unpack s20c2
TGRT_CUDA_SYNC=1 timeout 200 $B/tgrt-cuda-check --quick --gemm > $L/gemm-check.log 2>&1; echo "check rc $?"
grep -E "FAIL|passed" $L/gemm-check.log | tail -6
TGRT_GEMM_BENCH_ONLY=none timeout 300 $B/tgrt-cuda-check --bench-gemm > $L/gemm-bench.log 2>&1; echo "bench rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
sed -n '/^SwiGLU/,$p' $L/gemm-bench.log | grep -v '^tgrt:'
