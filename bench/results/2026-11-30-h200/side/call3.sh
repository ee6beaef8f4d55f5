# call3: tgc against torch.compile (bench/torch_llama_step.py, a fresh batch per step) at
# Llama 3.2 1B (examples/llama3.2-1b.json, micro-batch 4 x 2048), 3 alternating repetitions of
# 20 steps; the same executables as call2.
set -u
source scripts/gpu-lib.sh
gpu_unpack side3
export B L
timeout 540 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b" "- torch"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
