# call4: the cross-entropy's variant chosen per vocabulary (Kernels.cu ceAutoVariant: 7 at
# head dim 128's V 32000 on the H200, 6 at GPT-2's 50304). tgc by default against
# TGRT_CE_FAST=6 (the default before) and torch.compile (a fresh batch per step) at head dim
# 128; GPT-2 small (the default is 6 there, unchanged) against torch.compile; 3 alternating
# repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack side4
export B L
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- TGRT_CE_FAST=6 torch"'
timeout 150 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- torch"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
