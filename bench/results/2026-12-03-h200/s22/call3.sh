# call3 (twenty-second session): the final runtime (AdamW's grid up to 65536 blocks by
# default; the RMSNorm prefetch of call2 reverted).
# 1. the whole quick kernel check; 2. GPT-2 small profiles with the new grid and the old
# (TGRT_ADAMW_BLOCKS=16384); 3. GPT-2 small steps: the same two against llm.c (-r 0 -ge 2)
# and torch.compile, 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s22c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel check (whole, quick)"
timeout 230 $B/tgrt-cuda-check --quick --no-bench > $L/check-all.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check-all.log | tail -4
echo "== 2. profiles"
[ -d "$B/data-50304" ] || mkdata "$B/data-50304" 50304 4000000
for b in 65536 16384; do
  TGRT_ADAMW_BLOCKS=$b TGRT_PROFILE=1 timeout 60 $B/gpt2s --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s-b$b.log 2>&1
  echo "blocks $b: $(grep -E 'profile \(' $L/profile-gpt2s-b$b.log | grep -oE 'step [0-9.]+ ms')"
  grep -E "^  tgrt_(adamw|grad_norm)" $L/profile-gpt2s-b$b.log
done
echo "== 3. steps"
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 gpt2s "- TGRT_ADAMW_BLOCKS=16384 llmc-r0ge2 torch"; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
