# call3 (twelfth session): the bias-rows layer norm's output at a pitch of d + 64 (rows 128-byte
# aligned; tgrt_matmul_wgrad_lda) with PDL. 1. the whole quick kernel check (new rows:
# matmul_bias_lda, _gelu_lda, matmul_wgrad_lda against the CPU; layer_norm_fwd_ones with 64
# columns); 2. GPT-2 small: this build against "-base" (call1's executables: pitch d + 8, PDL),
# llm.c -r 0 and -r 0 -ge 2 and torch.compile, 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s12c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "_lda|layer_norm_fwd_ones" $L/check.log | head -24 | cut -c1-150
echo "== 2. steps"
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-base" "- llmc-r0 llmc-r0ge2 torch"'
echo "gpt2s rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
