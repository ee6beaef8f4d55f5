# call2 (eighteenth session): weight gradients in the compute type (training.gradient_dtype
# auto, the default since 72afc12) against every gradient f32 (-g32, the same build).
# 1. the whole quick kernel check (new rows: adamw_wc_g); 2. Llama 3.2 1B and SmolLM2-135M,
# 3 alternating repetitions each; 3. Llama 3.2 1B's per-call profiles, both forms.
set -u
source scripts/gpu-lib.sh
gpu_unpack s18c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "adamw_wc_g" $L/check.log | cut -c1-150 | head -8
echo "== 2. steps"
export B L
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b llama1b-g32" "-"'
echo "rc $?"
timeout 130 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "smollm2 smollm2-g32" "-"'
echo "rc $?"
echo "== 3. profiles"
for m in llama1b llama1b-g32; do
  TGRT_PROFILE=1 timeout 50 $B/$m --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  grep -E "profile \(|adamw|grad_norm|matmul_wgrad " $L/profile-$m.log | head -6 | cut -c1-150
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
