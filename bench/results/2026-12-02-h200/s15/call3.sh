# call3 (fifteenth session): the runtime as it lands (matmulWgradLda / matmulAccLda through
# one helper, the CPU add + layer norm through layerNormFwdRows). 1. the quick kernel check;
# 2. GPT-2 small and head dim 128 defaults, 2 alternating repetitions (against call1's
# 29.20 ms and losses); 3. per-call profiles (TGRT_PROFILE=1, 8 steps) of head dim 128 and of
# GPT-2 small under selective: where their time goes now.
set -u
source scripts/gpu-lib.sh
gpu_unpack s15c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the quick kernel check"
timeout 100 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -3
echo "== 2. steps"
export B L
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s hd128" "-"'
echo "steps rc $?"
echo "== 3. profiles"
[ -d $B/data-32000 ] || (source scripts/gpu-lib.sh; mkdata $B/data-32000 32000 4000000)
TGRT_PROFILE=1 timeout 90 $B/hd128 --data $B/data-32000 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-hd128.log 2>&1
TGRT_PROFILE=1 timeout 60 $B/gpt2s-sel --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s-sel.log 2>&1
grep -A14 "^call (loc" $L/profile-hd128.log | cut -c1-110
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
