# call1 (fourteenth session): the fused output layer + loss with the cross-entropy on a second
# stream (TGRT_CE_OVERLAP, runtime/cuda/Kernels.cu linearCrossEntropyOverlap). Same executables
# under each variant: "-" (one stream, the default), TGRT_CE_OVERLAP=1 (half-chunks, the
# cross-entropy on a second stream of the same priority), =2 (that stream at the highest
# priority). 1. the quick kernel check (linear_cross_entropy rows with ce_overlap 1 and 2);
# 2. per-call profiles of GPT-2 small, off and 2 (the loss op's own time); 3. GPT-2 small and
# head dim 128, 3 alternating repetitions of the three variants.
set -u
source scripts/gpu-lib.sh
gpu_unpack s14c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the quick kernel check"
timeout 110 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "linear_cross_entropy" $L/check.log | head -40 | cut -c1-160
export B L
[ -d $B/data-50304 ] || mkdata $B/data-50304 50304 4000000
echo "== 2. profiles"
for v in 0 2; do
  TGRT_CE_OVERLAP=$v TGRT_PROFILE=1 timeout 60 $B/gpt2s --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s-ov$v.log 2>&1
  echo "profile ov$v rc $?"; grep -E "step .* ms \(events|linear_cross_entropy" $L/profile-gpt2s-ov$v.log | head -3 | cut -c1-160
done
echo "== 3. steps"
timeout 240 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128" "- TGRT_CE_OVERLAP=1 TGRT_CE_OVERLAP=2"'
echo "gpt2s hd128 rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
