# call5: tgc (the final binary of call3) against torch.compile in its default mode and in
# mode="reduce-overhead" (the compiled forward and backward replayed as CUDA graphs, as tgc
# replays its micro-step), GPT-2 small and head dim 128, 2 alternating repetitions of 20 steps.
# Why: torch.compile's kernels summed to 30.84 ms per step at hd 128 and 31.62 at GPT-2 small
# (call3's torch.profiler) against its steps of 33.36 and 34.41 ms: the rest is launch gaps.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
steps_ab $B $L 2 "gpt2s hd128" "- torch torch-ro"
for f in $L/torch*.json; do echo "$(basename $f): $(tail -c 220 $f)"; done
grep -h -i "error\|warn" $L/torchro-*.err | sort | uniq -c | head -5
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
