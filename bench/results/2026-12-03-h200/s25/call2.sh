# s25 call2: Llama 3.2 1B with its GEMMs tuned at the power limit (TGRT_GEMM_AUTOTUNE=3,
# Kernels.cu ltTune: mode 2's candidates, the 5 + 3 fastest alone timed sustained) against
# the default tuning (the fastest of single calls alone). 1. one tuning run (4 steps) that
# records the |power choices in the tuning cache and logs each plan's finalists; 2. 3
# alternating repetitions of 20 steps, default against mode 3 (from the cache).
set -u
source scripts/gpu-lib.sh
gpu_unpack s25c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
echo "== 1. tuning run, mode 3"
( export TGRT_GEMM_AUTOTUNE=3; timeout 280 $B/llama1b --data $B/data-128256 --steps 4 \
  --eval-every 0 --eval-batches 1 --log $L/tune3.jsonl > $L/tune3.log 2>&1 ); echo "rc $?"
grep "power limit" $L/tune3.log | sed 's/tgrt: gemm tuning at the power limit: //' | cut -c1-60,100-330
grep -c "|power" ~/.cache/tgc/gemm-tune.txt
grep "^step" $L/tune3.log | head -4
echo "== 2. steps"
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b" "- TGRT_GEMM_AUTOTUNE=3"; done'
echo "rc $?"
grep -h "cuBLASLt algorithms" $L/tgc-llama1b*-1.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
