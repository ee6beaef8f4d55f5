# call3 (seventeenth session): the layer-norm and RMSNorm backwards with every pack's loads
# issued before any is used (the c < dW guards had serialized the packs' memory latencies:
# 6 in a row per row at d 768). 1. the whole quick kernel check (layer-norm / RMSNorm rows
# against the CPU and the reload forms bitwise); 2. the kernel rows of --bench-kernels for
# both backwards; 3. GPT-2 small and head dim 128 against "-base" (call1's executables, with
# TGRT_ADAMW_MATH=f32, this build's default, for both), llm.c -r 0 -ge 2, 3 alternating
# repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "norm_bwd" $L/check.log | grep -v PASS | head; grep -cE "norm_bwd.*PASS" $L/check.log
echo "== 2. kernel rows"
for k in layer_norm_bwd rms_norm_bwd adamw; do
  TGRT_KERNEL_BENCH_ONLY=$k timeout 60 $B/tgrt-cuda-check --bench-kernels > $L/bench-$k.log 2>&1
  grep -E "$k" $L/bench-$k.log | cut -c1-150
done
echo "== 3. steps"
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-base hd128 hd128-base" "TGRT_ADAMW_MATH=f32 llmc-r0ge2"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
