# call2 (nineteenth session): call1's executables (79d3937: the low copies written by the
# norms' backwards). GPT-2 small against llm.c -r 0 -ge 2 and torch.compile, Llama 3.2 1B
# against torch.compile, 3 alternating repetitions each (issue 22's rows on the H200).
set -u
source scripts/gpu-lib.sh
gpu_unpack s19c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 270 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- llmc-r0ge2 torch"'
echo "rc $?"
timeout 320 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "llama1b" "- torch"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
