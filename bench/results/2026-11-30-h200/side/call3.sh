# call3: torch.compile's Llama harness with tgc's initialisation (bench/torch_llama_step.py:
# N(0, 0.02), residual projections 0.02 / sqrt(2 L); call2's PyTorch defaults started the loss
# near 65); tgc against it at SmolLM2-135M and Llama 3.2 1B, 3 alternating repetitions of 20
# steps, a fresh batch per step; then head dim 128 under two existing runtime switches
# (TGRT_GELU_EPILOGUE=0: the bias GEMM then the own GELU; TGRT_CE_FAST=7), 3 repetitions. The
# same executables as call2.
set -u
source scripts/gpu-lib.sh
gpu_unpack side3
export B L
timeout 430 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "smollm2 llama1b" "- torch"'
timeout 100 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- TGRT_GELU_EPILOGUE=0 TGRT_CE_FAST=7"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
