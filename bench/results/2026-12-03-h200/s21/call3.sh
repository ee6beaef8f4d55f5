# NOT RUN (no device time left); TGRT_ADAMW_GRID was removed again after 63e6baf.
# call3 (twenty-first session; cut to the device time left): the final runtime (9ebc277's
# kernels: call2's "-base"; call2's RMSNorm early residual load and resident AdamW grid
# reverted) with AdamW's block cap selectable (TGRT_ADAMW_GRID: 16384 the default as before,
# 0 = one pack per thread, no cap): per-call profiles of Llama 3.2 1B at both caps.
set -u
source scripts/gpu-lib.sh
gpu_unpack s21c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. profiles"
[ -d "$B/data-128256" ] || mkdata "$B/data-128256" 128256 4000000
for g in 16384 0; do
  TGRT_ADAMW_GRID=$g TGRT_PROFILE=1 timeout 50 $B/llama1b --data $B/data-128256 --steps 3 --eval-every 0 --eval-batches 1 > $L/profile-llama1b-g$g.log 2>&1
  echo "cap $g:"; grep -E "^  tgrt_(adamw|grad_norm)" $L/profile-llama1b-g$g.log
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
