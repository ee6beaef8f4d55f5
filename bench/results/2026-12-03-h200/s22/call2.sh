# call2 (twenty-second session): AdamW's grid at 65536 blocks (the new default, call1: 7.06
# against 7.27 ms per step) and RMSNorm's register kernels prefetching the next row
# (TGRT_RMS_PREFETCH=1, resident grids) against torch.compile.
# 1. the quick Llama kernel check with the prefetch on (the AdamW rows on the new grid);
# 2. profiles with the prefetch off and on; 3. steps: prefetch on / off and torch.compile, 3 reps.
set -u
source scripts/gpu-lib.sh
gpu_unpack s22c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel check (TGRT_RMS_PREFETCH=1)"
TGRT_RMS_PREFETCH=1 timeout 120 $B/tgrt-cuda-check --quick --llama --no-bench > $L/check-pf.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check-pf.log | tail -4
echo "== 2. profiles"
[ -d "$B/data-128256" ] || mkdata "$B/data-128256" 128256 4000000
for pf in 0 1; do
  TGRT_RMS_PREFETCH=$pf TGRT_PROFILE=1 timeout 60 $B/llama1b --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-llama1b-pf$pf.log 2>&1
  echo "prefetch $pf: $(grep -E 'profile \(' $L/profile-llama1b-pf$pf.log | grep -oE 'step [0-9.]+ ms')"
  grep -E "^  tgrt_(adamw|rms_norm)" $L/profile-llama1b-pf$pf.log
done
echo "== 3. steps"
export B L
timeout 380 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "- TGRT_RMS_PREFETCH=1"
  REP_FROM=$r steps_ab $B $L 1 llama1b torch; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
