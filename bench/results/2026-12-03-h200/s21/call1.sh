# call1 (twenty-first session): the RMSNorm backward at 4 blocks per SM when a thread holds
# <= 8 values of a row (Llama 3.2 1B's 512 rows-blocks all resident, not two waves) and RoPE
# with every head's loads issued before its rotations (runtime/cuda/Llama.cu). "-base": the
# same emitted code linked with the runtime of 84250e7 (before both).
# 1. the quick Llama kernel check; 2. per-call profiles of both; 3. Llama 3.2 1B against its
#    -base twin and torch.compile, 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s21c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the Llama kernel check"
timeout 120 $B/tgrt-cuda-check --quick --llama --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
echo "== 2. profiles"
[ -d "$B/data-128256" ] || mkdata "$B/data-128256" 128256 4000000
for m in llama1b llama1b-base; do
  TGRT_PROFILE=1 timeout 60 $B/$m --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  grep -E "profile \(|rms_norm_bwd|rope" $L/profile-$m.log | head -8 | cut -c1-150
done
echo "== 3. steps"
export B L
timeout 400 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b llama1b-base" "- torch"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
