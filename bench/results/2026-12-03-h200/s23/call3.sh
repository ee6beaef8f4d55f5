# s23 call3 (twenty-third session): AdamW with split master values (TGRT_ADAMW_SPLIT=1: the
# bf16-gradient weights' values as working copy + 16-bit low halves, 26 bytes a value moved
# instead of 28) on Llama 3.2 1B. 1. profiles default / split (6 steps); 2. steps: default,
# split and torch.compile, 3 alternating repetitions (losses per repetition must agree).
set -u
source scripts/gpu-lib.sh
gpu_unpack s23c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
echo "== 1. profiles"
for sp in 0 1; do
  TGRT_ADAMW_SPLIT=$sp TGRT_PROFILE=1 timeout 60 $B/llama1b --data $B/data-128256 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-llama1b-split$sp.log 2>&1
  echo "split $sp: $(grep -E 'profile \(' $L/profile-llama1b-split$sp.log | grep -oE 'step [0-9.]+ ms')"
  grep -E "^  tgrt_adamw|^step 6|beside the plan" $L/profile-llama1b-split$sp.log | cut -c1-160
done
echo "== 2. steps"
export B L
timeout 450 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "- TGRT_ADAMW_SPLIT=1 torch"; done'
echo "rc $?"
grep -h "^energy:" $L/tgc-llama1b-*.log | head -6
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
