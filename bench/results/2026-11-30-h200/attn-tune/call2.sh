# call2: cuDNN attention plans beyond the heuristic's list (TGRT_ATTN_TUNE=2: every
# KERNEL_CFG value of the listed engines) and the tuning's log (TGRT_ATTN_TUNE_LOG=1: each
# plan's time, its outputs against the heuristic plan's, the plans over the planned workspace).
# 1. the cuDNN rows of the quick check with TGRT_ATTN_TUNE=2; 2. one logged run per model;
# 3. 3 alternating repetitions of 20 steps: default (1), 2 and 0, four models.
set -u
source scripts/gpu-lib.sh
gpu_unpack at2
echo "== 1. cuDNN rows of the quick check, TGRT_ATTN_TUNE=2"
TGRT_ATTN_TUNE=2 TGRT_ATTN_TUNE_LOG=1 TGRT_CUDA_SYNC=1 timeout 150 $B/tgrt-cuda-check --quick \
  --no-bench --cudnn > $L/check-cudnn-tune2.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check-cudnn-tune2.log | tail -3
grep "outputs" $L/check-cudnn-tune2.log | awk '{for(i=1;i<=NF;i++) if($i=="outputs") print $(i+1)}' \
  | sort -g | tail -3
echo "== 2. logged tuning per model"
for m in gpt2s hd128 llama1b smollm2; do
  case $m in gpt2*) V=50304 ;; hd128) V=32000 ;; llama1b) V=128256 ;; smollm2) V=49152 ;; esac
  [ -d "$B/data-$V" ] || mkdata "$B/data-$V" "$V" 4000000
  TGRT_ATTN_TUNE=2 TGRT_ATTN_TUNE_LOG=1 timeout 60 $B/$m --data $B/data-$V --steps 3 \
    --eval-every 0 --eval-batches 1 > $L/log-$m.log 2>&1; echo "$m rc $?"
  grep "cuDNN attention" $L/log-$m.log | grep -E "configurations|chosen|heuristic" | cut -c1-260
done
echo "== 3. steps"
steps_ab $B $L 3 "gpt2s hd128 llama1b smollm2" "- TGRT_ATTN_TUNE=2 TGRT_ATTN_TUNE=0"
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
