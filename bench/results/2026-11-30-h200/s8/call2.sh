# call2 (eighth session, final): the session's last runtime and driver. (1) the whole quick
# kernel check; (2) the cross-entropy sweep's default labels from the context
# (tgrt_cuda::ceAutoVariant); (3) TGRT_ATTN with a value it does not take: named, and the
# compiled choice (cuDNN) runs; (4) GPT-2 small and head dim 128 against torch.compile, 3
# alternating repetitions of 20 steps (the prefetch on, the default).
set -u
source scripts/gpu-lib.sh
gpu_unpack s8c2
timeout 300 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "check rc $?"
grep -a -E "passed|FAIL" $L/check.log | tail -3
TGRT_KERNEL_BENCH_ONLY=sweep timeout 60 $B/tgrt-cuda-check --bench-kernels > $L/ce-sweep.log 2>&1
echo "sweep rc $?"; grep -a "default" $L/ce-sweep.log | cut -c1-90
mkdata $B/data-32000 32000 4000000
TGRT_ATTN=flash TGRT_ATTN_TUNE_LOG=1 timeout 60 $B/hd128 --data $B/data-32000 --steps 2 \
  --eval-every 0 --eval-batches 1 > $L/attn-bad.log 2>&1; echo "attn-bad rc $?"
grep -a -m1 "TGRT_ATTN=flash" $L/attn-bad.log; grep -a -c "cuDNN attention" $L/attn-bad.log
export B L
timeout 420 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128" "- torch"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
