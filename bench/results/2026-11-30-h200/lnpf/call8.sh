# call8: bench/torch_gpt2_step.py with tgc's initialisation (N(0, 0.02), residual projections
# 0.02 / sqrt(2 layers), zero biases; before: PyTorch's defaults, the loss starting near 70)
# against tgc, GPT-2 small and head dim 128, 2 alternating repetitions of 20 steps: does the
# initialisation move torch.compile's step time?
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
steps_ab $B $L 2 "gpt2s hd128" "- torch"
for f in $L/torch-*.json; do echo "$(basename $f): $(tail -c 120 $f)"; done
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
