# call5 (seventeenth session): the final runtime at head dim 128 and SmolLM2-135M against
# torch.compile (issue 22's 0.9x rows), 3 / 2 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- torch"'
echo "rc $?"
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "smollm2" "- torch"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
