# call3 (seventh session): the bias gradients' packed column sums with 16 rows of raw 16-byte
# words in flight per thread (Kernels.cu column_partials_vec_kernel, dy alone) against the
# 8 rows of floats before: (1) the kernel check (quick), its bias rows (new: packed = scalar
# bit for bit, 2000 x 4096); (2) the sums alone (bias_grad rows of --bench-kernels); (3) the
# steps of GPT-2 small and head dim 128, this build against the same specs built before the
# change (gpt2sbase, hd128base: commit 92ea386), and torch.compile at head dim 128; 3
# alternating repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack s7c3
mv $B/gpt2s-base $B/gpt2sbase; mv $B/hd128-base $B/hd128base # the model names of steps_summary have no dash
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "check rc $?"
grep -a "bias_grad" $L/check.log | cut -c1-120; grep -a -i "passed\|failed" $L/check.log | tail -2
TGRT_KERNEL_BENCH_ONLY=bias_grad timeout 60 $B/tgrt-cuda-check --bench-kernels > $L/bgrad.log 2>&1
grep "bias_grad.*bf16" $L/bgrad.log
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2sbase" -; steps_ab $B $L 3 "hd128 hd128base" "- torch"' 
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
