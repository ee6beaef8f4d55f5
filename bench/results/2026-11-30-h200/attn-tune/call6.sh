# call6: the GPT-2 large shape (36 x 1280, 20 heads, d_ff 5120, micro-batch 8 x 1024), the row
# of issue 22 met by 0.3% on 2026-11-29 with torch's old harness (one repeated batch), again
# with a fresh batch per step: tgc (default) against torch.compile, 3 alternating repetitions
# (whatever finished within 330 s is summarised).
set -u
source scripts/gpu-lib.sh
gpu_unpack at6
export -f steps_ab mkdata
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2l" "- torch"'
echo "steps rc $?"
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
