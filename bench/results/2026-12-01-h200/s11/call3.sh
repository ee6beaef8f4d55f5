# call3 (eleventh session): issue 22's reporting form with tg-bias-rows on by default (24b71b1's
# default; "-off" = training.bias_rows=off): GPT-2 small both ways against llm.c (-r 0, -r 0 -ge 2) and torch.compile; head dim 128 both ways
# against torch.compile; 3 alternating repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack s11c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-off" "- llmc-r0 llmc-r0ge2 torch"'
echo "gpt2s rc $?"
timeout 230 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128 hd128-off" "- torch"'
echo "hd128 rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
