# call4: Nsight Compute (--set full) of the own GEMM's epilogue-warpgroup kernel without and
# with 2-block clusters, and of a cuBLASLt kernel, at 8192^3 with b [n, k] (t01).
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
export NCU_NAME_BASE=mangled NCU_ARGS=--bench-gemm NCU_SECTIONS="--set full" TGRT_GEMM_BENCH_ONLY=square
OUT=$OUT/ncu bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "epiwg_kernelILi3ELi0ELi1ELi1E" "epiwg_kernelILi3ELi0ELi1ELi2E" > $OUT/ncu.txt 2>&1
NCU_SKIP=40 OUT=$OUT/ncu-lt bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "sm90_xmma_gemm" > $OUT/ncu-lt.txt 2>&1
cd $OUT && tar czf ncu.tgz ncu ncu-lt && rm -rf ncu ncu-lt; cd - >/dev/null
cat $OUT/ncu.txt $OUT/ncu-lt.txt | cut -c1-160 | head -80
