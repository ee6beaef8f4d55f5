# call4 (eighteenth session): the final runtime (1b66c88; GPT-2's calls are unchanged by the
# weight-gradient change: every GPT-2 linear layer keeps f32 gradients) at issue 22's other
# H200 rows: head dim 128 against torch.compile (3 alternating repetitions; 0.896 in s17 call5,
# met once).
set -u
source scripts/gpu-lib.sh
gpu_unpack s18c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- torch"'
echo "rc $?"
# (GPT-2 small against llm.c left out: a failed start left too little device time)
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
