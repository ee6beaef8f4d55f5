# call3 (tenth session): the fused layer-norm backward's RELOAD form reloads dy at the store
# too (ptxas: no spill left; 116 / 103 registers at 4 / 3 packs; the same bits). "-base" here
# is call1's runtime (da24c37), the before of this change. 1. the whole quick kernel check
# (the reload form against the register form bit for bit); 2. the step's layer-norm backward
# (d 768, d 1024) with both runtimes, 3 alternating rounds; 3. steps of both at GPT-2 small
# and head dim 128 and torch.compile at head dim 128, 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "reload" $L/check.log | head -6 | cut -c1-150
echo "== 2. the layer-norm backward"
for r in 1 2 3; do for v in base new; do
  exe=$B/tgrt-cuda-check; [ $v = base ] && exe=$B/tgrt-cuda-check-base
  TGRT_KERNEL_BENCH_ONLY="layer_norm_bwd_acc_bgrad" timeout 60 $exe --bench-kernels 2>&1 | grep "step's form" | sed "s/^/$v $r: /"
done; done | tee $L/ln-bench.txt
echo "== 3. steps"
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-base hd128 hd128-base" "- torch"'
echo "steps rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
