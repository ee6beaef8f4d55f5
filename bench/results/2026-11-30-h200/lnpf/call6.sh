# call6: the same executables with the cuDNN that torch ships (9.19, its wheel's lib directory
# first on LD_LIBRARY_PATH: tgc dlopens libcudnn) against the toolkit's (9.14 on this image):
# call4 found tgc and torch.compile running the same cuDNN kernels at head dim 128, but at
# GPT-2 small tgc's forward on another configuration (knob_32 64x256, 90.7 us) than torch's
# (knob_7 64x128). GPT-2 small and hd 128, 3 alternating repetitions of 20 steps.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
TL=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))")
ls $TL | head -3
mkdata $B/data-50304 50304 4000000
for lp in /usr/local/cuda/lib64 $TL:/usr/local/cuda/lib64; do
  LD_LIBRARY_PATH=$lp CUDNN_FRONTEND_LOG_INFO=1 CUDNN_FRONTEND_LOG_FILE=$L/fe.log $B/gpt2s --data $B/data-50304 --steps 1 --eval-every 0 --eval-batches 1 > /dev/null 2>&1
  echo "$lp: $(grep -m1 'version used' $L/fe.log | cut -c1-160)"; grep EXECUTION_PLAN_DESCRIPTOR $L/fe.log | sed 's/.*: _*//' | cut -c1-16; rm -f $L/fe.log
done
steps_ab $B $L 3 "gpt2s hd128" "- LD_LIBRARY_PATH=$TL:/usr/local/cuda/lib64"
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
