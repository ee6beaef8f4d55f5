# call3 (eighth session): GEMM candidates timed inside the training step
# (TGRT_GEMM_STEP_TUNE=1: each plan's 4 fastest-alone cuBLASLt algorithms timed where the step
# runs them, one per step in turn, 3 steps each, every call event-timed; the lowest median
# kept and recorded under the plan's key + "|step"). (1) a tuning run per shape (30 steps,
# the choice recorded in the tuning cache); (2) 3 alternating repetitions of 20 steps with
# the default (alone-timed choices) and with the step-timed choices (from the cache), head
# dim 128 also against torch.compile.
set -u
source scripts/gpu-lib.sh
gpu_unpack s8c3
mkdata $B/data-50304 50304 4000000
mkdata $B/data-32000 32000 4000000
for m in gpt2s hd128; do
  V=50304; [ $m = hd128 ] && V=32000
  TGRT_GEMM_STEP_TUNE=1 timeout 90 $B/$m --data $B/data-$V --steps 30 --eval-every 0 \
    --eval-batches 1 --log $L/tune-$m.jsonl > $L/tune-$m.log 2>&1; echo "tune $m rc $?"
  grep -a "GEMM tuning in the step\|cuBLASLt algorithms" $L/tune-$m.log | cut -c1-200
done
export B L
timeout 420 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128" "- TGRT_GEMM_STEP_TUNE=1"'
timeout 240 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "torch"'
grep -a -h "GEMM tuning in the step\|run_graph" $L/tgc-*STEP*-1.log | sort | uniq -c | cut -c1-200
steps_summary $L
cp ~/.cache/tgc/gemm-tune.txt $L/ 2>/dev/null
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
