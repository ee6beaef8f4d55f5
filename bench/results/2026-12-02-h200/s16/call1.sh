# call1 (sixteenth session): the plans without never-written gradient buffers (tg-plan-memory
# drop-unread) and untied heads with the fused loss, on the GPU.
# 1. steps, 2 alternating repetitions: GPT-2 small default / selective / budget:4GiB, head dim
#    128, Llama 3.2 1B (plans 154.5 MB / 1.05 GB smaller; the same calls: ms and losses as
#    s15's), SmolLM2-135M untied with the fused loss (smollm2u) and unfused (smollm2u-c0,
#    loss_chunk_bytes=0: every untied model before), and torch.compile's untied SmolLM2;
# 2. plan against used memory for every executable.
set -u
source scripts/gpu-lib.sh
gpu_unpack s16c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. steps"
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s gpt2s-sel gpt2s-budget4g hd128 smollm2u smollm2u-c0 llama1b" "-"'
echo "steps rc $?"
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "smollm2u" "torch"'
echo "torch rc $?"
echo "== 2. plan against used"
grep -h "tgrt: cuda memory on" $L/tgc-*-1.log | cut -c1-200
grep -h "peak_bytes" $L/torch-*.json | head -4 | cut -c1-300
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
