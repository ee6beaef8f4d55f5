# call7: tgc with the cuDNN torch ships (9.19, its wheel's lib directory first on
# LD_LIBRARY_PATH; call6: 1.3% faster at GPT-2 small than the toolkit's 9.14) against
# torch.compile (default mode, the same cuDNN), GPT-2 small and head dim 128, 3 alternating
# repetitions of 20 steps: both systems on one cuDNN version.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
TL=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))")
steps_ab $B $L 3 "gpt2s hd128" "LD_LIBRARY_PATH=$TL:/usr/local/cuda/lib64 torch"
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
