# call2 (tenth session): the runtime of call1 (da24c37: bf16 / f16 packs rounded by paired
# cvt) against llm.c (-r 0 and -r 0 -ge 2, scripts/llmc-artifacts.sh) and torch.compile at
# GPT-2 small, and against torch.compile at head dim 128: 3 alternating repetitions of 20
# steps each, the reporting form.
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- llmc-r0 llmc-r0ge2 torch"'
echo "gpt2s rc $?"
timeout 230 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- torch"'
echo "hd128 rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
