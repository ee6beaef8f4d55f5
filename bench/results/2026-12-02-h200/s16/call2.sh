# call2 (sixteenth session): the evaluation's loss fused too (tg.linear_cross_entropy with dx,
# dw NULL: the loss only).
# 1. the quick kernel check (new row: linear_cross_entropy loss only);
# 2. GPT-2 small default, 20 steps, final eval over val and test: the final losses against
#    call1's (the same training calls; only the eval's loss changed), 2 repetitions;
# 3. `layer` at micro-batch 2071 (tgc plan --max-batch for the H200; 1370 before): 2 steps and
#    the final eval, plan against used; 2072 must be refused at start.
set -u
source scripts/gpu-lib.sh
gpu_unpack s16c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the quick kernel check"
timeout 120 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -3
grep -E "linear_cross_entropy loss only" $L/check.log | head -4
echo "== 2. GPT-2 small final eval"
export B L
timeout 120 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s" "-"'
grep -h '"final":true' $L/tgc-gpt2s-*.jsonl
echo "== 3. layer at 2071 / 2072"
[ -d /tmp/data-big ] || (source scripts/gpu-lib.sh; mkdata /tmp/data-big 50304 8000000)
timeout 200 $B/gpt2s-layer-b2071 --data /tmp/data-big --steps 2 --eval-every 0 --log $L/b2071.jsonl > $L/b2071.log 2>&1; echo "b2071 rc $?"
grep -h "tgrt: cuda memory on\|process memory at the end" $L/b2071.log | cut -c1-220
grep -h '"final":true\|"step":2' $L/b2071.jsonl | cut -c1-200
timeout 60 $B/gpt2s-layer-b2072 --data /tmp/data-big --steps 2 --eval-every 0 > $L/b2072.log 2>&1; echo "b2072 rc $?"
tail -3 $L/b2072.log | cut -c1-300
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
