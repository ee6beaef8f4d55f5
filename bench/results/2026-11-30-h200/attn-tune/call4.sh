# call4: the NVML refactor of Context.cu (one bus-id lookup for processDeviceMemory and
# powerSample): the process-memory lines of a GPT-2 small run and the power samples of the
# GEMM bench (TGRT_GEMM_BENCH_POWER=1), both read through NVML.
set -u
source scripts/gpu-lib.sh
gpu_unpack at4
mkdata $B/data-50304 50304 4000000
timeout 60 $B/gpt2s --data $B/data-50304 --steps 5 --eval-every 0 --eval-batches 1 > $L/gpt2s.log 2>&1
echo "gpt2s rc $?"; grep -E "process memory|cuda memory" $L/gpt2s.log | cut -c1-240
TGRT_GEMM_BENCH_POWER=1 TGRT_GEMM_BENCH_ONLY="GPT-2 qkv" timeout 120 $B/tgrt-cuda-check --bench-gemm \
  > $L/gemm-power.log 2>&1
echo "bench rc $?"; tail -12 $L/gemm-power.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
