# call4 (twenty-second session): Llama 3.2 1B on the final runtime, AdamW's grid up to 65536
# blocks (the default) against the old 16384 (TGRT_ADAMW_BLOCKS=16384) and torch.compile,
# 3 alternating repetitions (call1's profiles: 7.06 against 7.27 ms per step of AdamW).
set -u
source scripts/gpu-lib.sh
gpu_unpack s22c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 500 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "- TGRT_ADAMW_BLOCKS=16384 torch"; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
