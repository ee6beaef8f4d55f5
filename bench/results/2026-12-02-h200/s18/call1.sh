# call1 (eighteenth session): Llama 3.2 1B's fused loss in 4 (default, 512 MiB of logits),
# 2 (llama1b-c2, 1 GiB) and 1 chunk (llama1b-c1, 2 GiB): each chunk after the first re-reads
# and re-writes the tied head's f32 gradient (1.05 GB) in its dw GEMM. 3 alternating
# repetitions; then each one's per-call profile (the loss op's time).
set -u
source scripts/gpu-lib.sh
gpu_unpack s18c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
echo "== 1. steps"
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b llama1b-c2 llama1b-c1" "-"'
echo "rc $?"
echo "== 2. profiles"
for m in llama1b llama1b-c1; do
  TGRT_PROFILE=1 timeout 60 $B/$m --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  grep -E "profile \(|cross_entropy|matmul_wgrad |tgrt_matmul " $L/profile-$m.log | head -8 | cut -c1-150
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
