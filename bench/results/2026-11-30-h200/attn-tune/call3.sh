# call3: the final runtime (TGRT_ATTN_TUNE 0 | 1 only: the KERNEL_CFG enumeration of call2 is
# gone; TGRT_ATTN_TUNE_LOG=1 times the heuristic's plan even when it is the only candidate).
# 1. the cuDNN rows of the quick check, default tuning, logged; 2. one logged run of GPT-2 small
# and head dim 128 (the backward's plans over the workspace against the heuristic's); 3. tgc
# (default, TGRT_ATTN_TUNE=0) against torch.compile (a fresh batch per step), 3 alternating
# repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack at3
echo "== 1. cuDNN rows of the quick check (default tuning)"
TGRT_ATTN_TUNE_LOG=1 TGRT_CUDA_SYNC=1 timeout 120 $B/tgrt-cuda-check --quick --no-bench --cudnn \
  > $L/check-cudnn.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check-cudnn.log | tail -3
echo "worst listed plan's outputs against the heuristic's:"
grep "outputs" $L/check-cudnn.log | grep -v "not eligible" | sed -E 's/.*outputs ([^ ]+) .*/\1/' | sort -g | tail -2
echo "== 2. logged tuning"
for m in gpt2s hd128; do
  case $m in gpt2*) V=50304 ;; hd128) V=32000 ;; esac
  [ -d "$B/data-$V" ] || mkdata "$B/data-$V" "$V" 4000000
  TGRT_ATTN_TUNE_LOG=1 timeout 60 $B/$m --data $B/data-$V --steps 3 --eval-every 0 \
    --eval-batches 1 > $L/log-$m.log 2>&1; echo "$m rc $?"
  grep "cuDNN attention" $L/log-$m.log | sed -E 's/tgrt: [^:]*: cuDNN attention //' | cut -c1-200
done
echo "== 3. steps"
steps_ab $B $L 3 "gpt2s hd128" "- TGRT_ATTN_TUNE=0 torch"
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
