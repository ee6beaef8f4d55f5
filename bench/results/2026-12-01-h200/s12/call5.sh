# call5 (twelfth session): call3's executables on another lease: GPT-2 small (pitch d + 64,
# PDL) against llm.c -r 0 -ge 2 and -r 0, 4 alternating repetitions (the llm.c row's second
# host, as s11 call4).
set -u
source scripts/gpu-lib.sh
gpu_unpack s12c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 400 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 4 "gpt2s" "- llmc-r0ge2 llmc-r0"'
echo "gpt2s rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
