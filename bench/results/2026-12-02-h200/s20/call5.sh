# call5 (twentieth session): the final runtime (SwiGLU's sigmoid with the hardware exponential
# and reciprocal, runtime/cuda/Swiglu.cuh; the own GEMM's SwiGLU-backward epilogue, unused by
# the steps). "-base" executables: the same emitted code linked with the runtime whose
# sigmoidF is the precise expf and division (the A/B is that function alone).
# 1. the whole quick kernel check; 2. Llama 3.2 1B against its -base twin and torch.compile,
#    3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s20c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -cE "swiglu.*PASS" $L/check.log
echo "== 2. steps"
export B L
timeout 380 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b llama1b-base" "- torch"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
