# call6: the bench with calls queued back to back (GPU time per call, the host's work
# overlapped), every shape; then 8192^3 and GPT-2's MLP up with the SM clock.
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
runs/gemm/tgrt-cuda-check --bench-gemm > $OUT/gemm-bench.log 2>&1; echo "bench rc $?"
TGRT_GEMM_BENCH_POWER=1 TGRT_GEMM_BENCH_REPS=400 TGRT_GEMM_BENCH_ONLY=square runs/gemm/tgrt-cuda-check --bench-gemm > $OUT/gemm-power.log 2>&1
TGRT_GEMM_BENCH_POWER=1 TGRT_GEMM_BENCH_REPS=3000 TGRT_GEMM_BENCH_ONLY="GPT-2 MLP up" runs/gemm/tgrt-cuda-check --bench-gemm >> $OUT/gemm-power.log 2>&1
sed -n '/^own GEMM/,/^tgrt/p' $OUT/gemm-bench.log | cut -c1-200
grep -E "x[0-9]+x|J/call" $OUT/gemm-power.log | cut -c1-200
