# call1 (seventeenth session): AdamW in float arithmetic (TGRT_ADAMW_MATH=f32, PyTorch's fused
# AdamW's opmath) against the default double for f32 p, m, v. 1. the whole quick kernel check
# (new rows: adamw_wc f32 math against the CPU); 2. the adamw kernel rows of --bench-kernels,
# both arithmetics; 3. GPT-2 small: default against TGRT_ADAMW_MATH=f32, and llm.c -r 0 -ge 2,
# 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c1
ls -la runs/llmc | head -5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "adamw" $L/check.log | head -40 | cut -c1-150
echo "== 2. adamw kernel rows"
TGRT_KERNEL_BENCH_ONLY=adamw timeout 100 $B/tgrt-cuda-check --bench-kernels > $L/bench-adamw.log 2>&1; echo "rc $?"
grep -E "adamw" $L/bench-adamw.log | cut -c1-160
echo "== 3. steps"
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- TGRT_ADAMW_MATH=f32 llmc-r0ge2"'
echo "gpt2s rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
