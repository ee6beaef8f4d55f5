# call5 (eighth session): as call3, with the step tuning's candidates alternating within a
# step (the k-th call of a plan in a round takes candidate (round + k) mod n), so the layers
# of one step spread over the candidates at one clock; call3 rotated them across steps only
# (its tuning steps drifted from 27.8 to 30-32 ms with the power cap). (1) a tuning run per
# shape (30 steps, TGRT_GEMM_STEP_TUNE=1, the choices recorded under KEY|step); (2) 3
# alternating repetitions of 20 steps with the default (alone-timed choices) and with the
# step-timed ones (from the cache), head dim 128 also against torch.compile.
set -u
source scripts/gpu-lib.sh
gpu_unpack s8c5
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
