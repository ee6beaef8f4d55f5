# call3 (twentieth session): SwiGLU with the hardware exponential and reciprocal (Swiglu.cuh
# sigmoidF, shared by tgrt_swiglu_fwd / _bwd and the epilogue; the L2 prefetch of call2, 4 chunks
# in flight. The Llama kernels' and the own GEMM's kernel-check rows, then --bench-gemm's tables.
set -u
source scripts/gpu-lib.sh
gpu_unpack s20c3
TGRT_CUDA_SYNC=1 timeout 200 $B/tgrt-cuda-check --quick --gemm > $L/gemm-check.log 2>&1; echo "check rc $?"
grep -E "FAIL|passed" $L/gemm-check.log | tail -6
timeout 200 $B/tgrt-cuda-check --quick --llama --no-bench > $L/llama-check.log 2>&1; echo "llama check rc $?"
grep -E "FAIL|passed" $L/llama-check.log | tail -6; grep -i swiglu $L/llama-check.log | tail -4
TGRT_GEMM_BENCH_ONLY=Llama timeout 300 $B/tgrt-cuda-check --bench-gemm > $L/gemm-bench.log 2>&1; echo "bench rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
sed -n '/^SwiGLU/,$p' $L/gemm-bench.log | grep -v '^tgrt:'
