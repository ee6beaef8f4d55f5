# call4 (sixteenth session): Llama 3.2 1B untied (lm_head [V, D], the loss fused; the plan
# without never-written gradient buffers) against torch.compile's untied model
# (bench/torch_llama_step.py --untied), 3 alternating repetitions (call3 had 2): ms, plan / used / peak.
set -u
source scripts/gpu-lib.sh
gpu_unpack s16c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 560 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1bu" "- torch"'
echo "steps rc $?"
grep -h "tgrt: cuda memory on" $L/tgc-*.log | cut -c1-200
grep -h "peak_bytes" $L/torch-*.json | cut -c1-300
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
