# call6: geluFast as x sigmoid(2u); the own GEMM's checks and bench; ncu of the persistent kernel
# with b [k, n] (the compiled layout) at GPT-2's qkv (bias) and MLP up (GELU).
set -u
cd runs/gemm && xz -d -k tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
OUT=$OUT bash scripts/gpu-gemm.sh runs/gemm/tgrt-cuda-check > $OUT/gemm.txt 2>&1; echo "gemm rc $?"
export NCU_NAME_BASE=mangled NCU_ARGS=--bench-gemm
TGRT_GEMM_BENCH_ONLY="GPT-2 qkv" OUT=$OUT/ncu-qkv bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "kernelILi256ELi3ELi1ELi1ELb1ELi0E" > $OUT/ncu-qkv.txt 2>&1
TGRT_GEMM_BENCH_ONLY="GPT-2 MLP up" OUT=$OUT/ncu-gelu bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "kernelILi256ELi3ELi1ELi2ELb1ELi0E" > $OUT/ncu-gelu.txt 2>&1
cd $OUT && tar czf ncu.tgz ncu-qkv ncu-gelu && rm -rf ncu-qkv ncu-gelu; cd - >/dev/null
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per Issued|Issue Slots|==|Est. Speedup|stalled" $OUT/ncu-qkv.txt $OUT/ncu-gelu.txt | cut -c1-150 | head -40
tail -14 $OUT/gemm.txt
