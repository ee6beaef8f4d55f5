# call2 (twenty-first session): AdamW launched on the blocks the device holds at once
# (TGRT_ADAMW_GRID=resident, the new default; "waves" the grid before: up to 16384 blocks)
# and the RMSNorm backward loading the residual gradient with x and dy (before the row's sum)
# at <= 8 values per thread. "-base": call1's llama1b (9ebc277's runtime, before both).
# 1. the quick Llama kernel check and the AdamW rows of the whole check;
# 2. profiles: llama1b with either grid, and RoPE at 2, 5, 8 heads per thread
#    (TGRT_ROPE_HEADS; the grid of each variant from gridFor as before); 3. steps against -base and torch.compile, 3 reps.
set -u
source scripts/gpu-lib.sh
gpu_unpack s21c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel checks"
timeout 120 $B/tgrt-cuda-check --quick --llama --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check-all.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check-all.log | tail -4
grep -ciE "adamw.*PASS" $L/check-all.log
echo "== 2. profiles"
[ -d "$B/data-128256" ] || mkdata "$B/data-128256" 128256 4000000
for g in resident waves; do
  TGRT_ADAMW_GRID=$g TGRT_PROFILE=1 timeout 60 $B/llama1b --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-llama1b-$g.log 2>&1
  grep -E "profile \(|rms_norm_bwd_acc|adamw|grad_norm|rope" $L/profile-llama1b-$g.log | grep -v "^tgrt_" | head -8 | cut -c1-150
done
# RoPE's heads per thread (TGRT_ROPE_HEADS; 4 the default, in the profiles above)
for h in 2 5 8; do
  TGRT_ROPE_HEADS=$h TGRT_PROFILE=1 timeout 60 $B/llama1b --data $B/data-128256 --steps 4 --eval-every 0 --eval-batches 1 > $L/profile-llama1b-rope$h.log 2>&1
  echo "heads $h: $(grep -E '^  tgrt_rope' $L/profile-llama1b-rope$h.log)"
done
echo "== 3. steps"
export B L
timeout 420 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "- TGRT_ADAMW_GRID=waves"
  REP_FROM=$r steps_ab $B $L 1 llama1b-base -
  REP_FROM=$r steps_ab $B $L 1 llama1b torch; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
