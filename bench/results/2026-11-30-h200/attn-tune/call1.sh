# call1: cuDNN attention's execution plans timed at each graph's first call (TGRT_ATTN_TUNE,
# default 1), and torch's harness drawing a fresh batch per step (default now).
# 1. the cuDNN rows of the quick kernel check with every plan's time printed (2) and with the
#    heuristic's first plan (0); 2. tgc (tuned, untuned) against torch.compile, 3 alternating
#    repetitions of 20 steps, GPT-2 small and head dim 128; 3. one repetition of torch.compile
#    on one repeated batch (the harness before) and tgc with the plans' times printed.
set -u
source scripts/gpu-lib.sh
gpu_unpack at
echo "== 1. cuDNN rows of the quick check"
for t in 2 0; do
  TGRT_ATTN_TUNE=$t TGRT_CUDA_SYNC=1 timeout 120 $B/tgrt-cuda-check --quick --no-bench --cudnn \
    > $L/check-cudnn-tune$t.log 2>&1
  echo "TGRT_ATTN_TUNE=$t rc $?"; grep -E "FAIL|passed" $L/check-cudnn-tune$t.log | tail -3
done
grep -c "cuDNN attention .*plan" $L/check-cudnn-tune2.log
grep "chosen" $L/check-cudnn-tune2.log | grep -vc heuristic
echo "== 2. tgc against torch.compile"
steps_ab $B $L 3 "gpt2s hd128" "- TGRT_ATTN_TUNE=0 torch"
echo "== 3. torch.compile on one repeated batch; tgc's plan times"
steps_ab $B $L 1 "gpt2s hd128" "torch-same TGRT_ATTN_TUNE=2"
grep -h "cuDNN attention" $L/tgc-*-TGRT_ATTN_TUNE-2-1.log | cut -c1-220
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
