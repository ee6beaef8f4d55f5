# call5 (eighteenth session): call4's executables (the final runtime), GPT-2 small against
# llm.c -r 0 -ge 2 (its fastest flags) and torch.compile, 3 alternating repetitions (issue
# 22's GPT-2 small rows on the H200).
set -u
source scripts/gpu-lib.sh
gpu_unpack s18c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 270 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- llmc-r0ge2 torch"'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
