# call1 (fifteenth session): bias rows under checkpointing and with persistent gradient slots.
# 1. the quick kernel check (new rows: add_layer_norm_fwd_ones, matmul_acc_lda);
# 2. GPT-2 small: the default, selective and layer with bias rows on the recomputed layer
#    norms against the same policies with bias rows off (what they compiled to before), and
#    budget:4GiB (persistent gradients: its weight gradients now through tgrt_matmul_acc_lda),
#    3 alternating repetitions: ms, last losses, plan against used.
set -u
source scripts/gpu-lib.sh
gpu_unpack s15c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the quick kernel check"
timeout 100 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -3
grep -cE "add_layer_norm_fwd_ones|matmul_acc_lda" $L/check.log
echo "== 2. steps"
export B L
timeout 440 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-sel gpt2s-sel-off gpt2s-layer gpt2s-layer-off gpt2s-budget4g" "-"'
echo "steps rc $?"
grep -h "tgrt: cuda memory on" $L/tgc-*-1.log | cut -c1-160
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
