# call3 (eighteenth session): call2's executables (weight gradients in the compute type, the
# default) against torch.compile: Llama 3.2 1B, 3 alternating repetitions (issue 22's 0.9x
# row), then SmolLM2-135M, 2.
set -u
source scripts/gpu-lib.sh
gpu_unpack s18c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 340 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b" "- torch"'
echo "rc $?"
timeout 180 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "smollm2" "- torch"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
