# call2 (seventeenth session): TGRT_ADAMW_MATH=f32 at the other shapes, and the fused loss in
# fewer chunks with it. 1. head dim 128 (default, f32; hd128-c1: one chunk of 16384 rows with
# f32) and GPT-2 small in two chunks (gpt2s-c2, f32), 3 alternating repetitions; 2. Llama 3.2
# 1B default against f32, 2 repetitions; 3. GPT-2 small's per-call profile under both.
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
echo "== 1. steps"
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- TGRT_ADAMW_MATH=f32"; steps_ab $B $L 3 "hd128-c1 gpt2s-c2" "TGRT_ADAMW_MATH=f32"'
echo "rc $?"
echo "== 2. Llama 3.2 1B"
timeout 150 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "llama1b" "- TGRT_ADAMW_MATH=f32"'
echo "rc $?"
echo "== 3. profiles"
for v in f64 f32; do
  TGRT_PROFILE=1 TGRT_ADAMW_MATH=$v timeout 60 $B/gpt2s --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s-$v.log 2>&1
  grep -E "adamw|grad_norm|profile \(" $L/profile-gpt2s-$v.log | head -6 | cut -c1-150
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
