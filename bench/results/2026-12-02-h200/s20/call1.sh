# call1 (twentieth session): SwiGLU's backward in the own GEMM's epilogue (GemmEpilogue::
# SwigluBwd, the epilogue-warpgroup schedules). 1) the own GEMM's rows of the kernel check
# (new: the fused dx bit-equal to the own GEMM + tgrt_swiglu_bwd, and against the CPU);
# 2) --bench-gemm at Llama 3.2 1B's shapes (first table) and the fused dgrad against
# cuBLASLt + tgrt_swiglu_bwd (second table).
set -u
source scripts/gpu-lib.sh
gpu_unpack s20c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
TGRT_CUDA_SYNC=1 timeout 200 $B/tgrt-cuda-check --gemm > $L/gemm-check.log 2>&1; echo "check rc $?"
grep -E "FAIL|passed" $L/gemm-check.log | tail -6
grep -c "swiglu_bwd.*PASS" $L/gemm-check.log
TGRT_GEMM_BENCH_ONLY=Llama timeout 300 $B/tgrt-cuda-check --bench-gemm > $L/gemm-bench.log 2>&1; echo "bench rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
sed -n '/^own GEMM/,$p' $L/gemm-bench.log | grep -v '^tgrt:'
