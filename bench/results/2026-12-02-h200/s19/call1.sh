# call1 (nineteenth session): the residual gradient's low copy written by the norm's backward
# (tg-plan-memory puts it in the norm's dying dy; the layer norm's kernel takes low == dy).
# "-base" executables: the emitted C++ of 95623ce (before the change) linked with this
# build's runtime, so the A/B is the emitted code alone.
# 1. the whole quick kernel check (new rows: layer_norm_bwd_acc* low = dy's buffer);
# 2. GPT-2 small and Llama 3.2 1B against their -base twins, 3 alternating repetitions;
# 3. per-call profiles of both forms.
set -u
source scripts/gpu-lib.sh
gpu_unpack s19c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "dy's buffer" $L/check.log | cut -c1-150 | head -12
echo "== 2. steps"
export B L
timeout 120 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-base" "-"'
echo "rc $?"
timeout 260 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b llama1b-base" "-"'
echo "rc $?"
echo "== 3. profiles"
for m in gpt2s gpt2s-base llama1b llama1b-base; do
  case $m in gpt2*) V=50304 ;; *) V=128256 ;; esac
  TGRT_PROFILE=1 timeout 50 $B/$m --data $B/data-$V --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  grep -E "profile \(|tgrt_cast|norm_bwd" $L/profile-$m.log | head -8 | cut -c1-150
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
