# call4 (seventeenth session): the session's final runtime (AdamW in float by default; the
# norms' backwards with their loads issued together, the RMSNorm one only up to 24 values per
# thread). 1. the whole quick kernel check; 2. the layer-norm kernel rows; 3. GPT-2 small
# against llm.c -r 0, llm.c -r 0 -ge 2 and torch.compile, 3 alternating repetitions (issue
# 22's GPT-2 small rows); 4. the per-call profiles of this build and of call1's executable
# (gpt2s-base, with TGRT_ADAMW_MATH=f32: only the layer-norm backward differs).
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
echo "== 2. kernel rows"
TGRT_KERNEL_BENCH_ONLY=layer_norm_bwd timeout 60 $B/tgrt-cuda-check --bench-kernels > $L/bench-ln.log 2>&1
grep -E "layer_norm_bwd" $L/bench-ln.log | cut -c1-150
echo "== 3. steps"
export B L
timeout 420 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- llmc-r0 llmc-r0ge2 torch"'
echo "rc $?"
echo "== 4. profiles"
for m in gpt2s gpt2s-base; do
  TGRT_PROFILE=1 TGRT_ADAMW_MATH=f32 timeout 60 $B/$m --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  grep -E "layer_norm_bwd|adamw|profile \(" $L/profile-$m.log | head -5 | cut -c1-150
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
