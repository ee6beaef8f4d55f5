# call7: Nsight Compute (--set full) at clocks locked to base (no power limit at play) of
# cuBLASLt's kernel (heuristic's first, TGRT_GEMM_AUTOTUNE=0: no tuning launches before it)
# and the own epilogue-warpgroup kernel, 8192^3, b [n, k].
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
export NCU_NAME_BASE=mangled NCU_ARGS=--bench-gemm NCU_SECTIONS="--set full" TGRT_GEMM_BENCH_ONLY=square TGRT_GEMM_AUTOTUNE=0 NCU_CLOCK=base
OUT=$OUT/ncu bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "nvjet" "epiwg_kernelILi3ELi0ELi1ELi1E" > $OUT/ncu.txt 2>&1
cd $OUT && tar czf ncu.tgz ncu && rm -rf ncu; cd - >/dev/null
cat $OUT/ncu.txt | cut -c1-160 | head -60
