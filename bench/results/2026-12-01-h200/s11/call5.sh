# call5 (eleventh session): the GPT-2 medium and large shapes of issue 22's table (micro-batch
# 8 x 1024) with bias rows by default (a1cf578's executables; "-off" = training.bias_rows=off)
# against torch.compile; 3 alternating repetitions for the medium shape, 2 for the large.
set -u
source scripts/gpu-lib.sh
gpu_unpack s11c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 260 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2m gpt2m-off" "- torch"'
echo "gpt2m rc $?"
timeout 270 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2l gpt2l-off" "- torch"'
echo "gpt2l rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
