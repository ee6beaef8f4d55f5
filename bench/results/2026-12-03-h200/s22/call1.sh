# call1 (twenty-second session): rooflines and two questions about Llama 3.2 1B's step.
# 1. the device's bandwidth as PyTorch reaches it (copy, read, fused AdamW: bench/torch_bandwidth.py)
#    against tgc's AdamW at 3.77-3.88 TB/s in the step;
# 2. cuDNN attention at Llama's shape: grouped (32/8 heads) against the same heads unshared
#    (32/32), and the packed [B, t, H + 2 Hkv, hd] layout against contiguous [B, H, t, hd]
#    q, k, v (tgrt-cuda-check --cudnn, benchAttentionCudnn's "Llama as MHA" and cudnn-bhsd rows);
# 3. AdamW's grid (TGRT_ADAMW_BLOCKS: 16384 the default, 65536, one pack per thread), profiles.
set -u
source scripts/gpu-lib.sh
gpu_unpack s22c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. bandwidth (torch)"
timeout 120 python3 bench/torch_bandwidth.py --reps 20 > $L/bandwidth.log 2>&1; echo "rc $?"
tail -5 $L/bandwidth.log
echo "== 2. cuDNN attention"
timeout 200 $B/tgrt-cuda-check --quick --cudnn > $L/cudnn.log 2>&1; echo "rc $?"
grep -E "passed|FAIL" $L/cudnn.log | tail -3
grep -E "^(Llama|GPT-2|hd 128|GQA)" $L/cudnn.log | cut -c1-125
echo "== 3. AdamW grid (profiles)"
[ -d "$B/data-128256" ] || mkdata "$B/data-128256" 128256 4000000
for b in 16384 1000000000 65536 16384; do
  TGRT_ADAMW_BLOCKS=$b TGRT_PROFILE=1 timeout 60 $B/llama1b --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-llama1b-b$b.log 2>&1
  echo "blocks $b: $(grep -E 'profile \(' $L/profile-llama1b-b$b.log | grep -oE 'step [0-9.]+ ms')"
  grep -E "^  tgrt_(adamw|grad_norm)" $L/profile-llama1b-b$b.log
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
echo done
