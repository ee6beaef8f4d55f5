set -u
cd runs/gemm && xz -d -k tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
OUT=$OUT bash scripts/gpu-gemm.sh runs/gemm/tgrt-cuda-check > $OUT/gemm.txt 2>&1; echo "gemm rc $?"
export NCU_NAME_BASE=mangled NCU_ARGS=--bench-gemm
TGRT_GEMM_BENCH_ONLY="GPT-2 qkv" OUT=$OUT/ncu-qkv bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "pingpong_kernelILi6ELi1E" "kernelILi256ELi4ELi1ELi1ELb1E" > $OUT/ncu-qkv.txt 2>&1
TGRT_GEMM_BENCH_ONLY="GPT-2 MLP up" OUT=$OUT/ncu-gelu bash scripts/gpu-ncu.sh runs/gemm/tgrt-cuda-check "pingpong_kernelILi6ELi2E" > $OUT/ncu-gelu.txt 2>&1
cd $OUT && tar czf ncu.tgz ncu-qkv ncu-gelu && rm -rf ncu-qkv ncu-gelu; cd - >/dev/null
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per Issued|Issue Slots|L2|Stall|==" $OUT/ncu-qkv.txt $OUT/ncu-gelu.txt | head -60
tail -16 $OUT/gemm.txt
