# call5: energy per call and SM clock of each bench column at sustained load (NVML), 8192^3
# and GPT-2's MLP up + GELU.
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
TGRT_GEMM_BENCH_POWER=1 TGRT_GEMM_BENCH_REPS=400 TGRT_GEMM_BENCH_ONLY=square runs/gemm/tgrt-cuda-check --bench-gemm 2>&1 | grep -E "x[0-9]+x|J/call|shape"
TGRT_GEMM_BENCH_POWER=1 TGRT_GEMM_BENCH_REPS=3000 TGRT_GEMM_BENCH_ONLY="GPT-2 MLP up" runs/gemm/tgrt-cuda-check --bench-gemm 2>&1 | grep -E "x[0-9]+x|J/call"
