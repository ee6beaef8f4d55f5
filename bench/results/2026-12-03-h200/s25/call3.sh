# s25 call3: Llama 3.2 1B, default GEMM tuning against TGRT_GEMM_AUTOTUNE=3 (tuned at the
# power limit; its first run tunes, ~95 s in step 1, outside the median of steps 3-20) and
# torch.compile, 3 alternating repetitions of 20 steps. The tuning cache comes back in the logs.
set -u
source scripts/gpu-lib.sh
gpu_unpack s25c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 555 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b" "- TGRT_GEMM_AUTOTUNE=3 torch"; done'
echo "rc $?"
cp ~/.cache/tgc/gemm-tune.txt $L/ 2>/dev/null
grep -h "^energy:" $L/tgc-llama1b*.log | cut -c1-160 | head -6
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
