# call9: after the review refactor (produceTiles, consumeTile shared by the persistent kernels): checks, bench, quick check.
set -u
cd runs/gemm && xz -d -k tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
OUT=$OUT bash scripts/gpu-gemm.sh runs/gemm/tgrt-cuda-check > $OUT/gemm.txt 2>&1; echo "gemm rc $?"
TGRT_CUDA_SYNC=1 timeout 200 runs/gemm/tgrt-cuda-check --quick --no-bench > $OUT/check.log 2>&1
echo "quick check rc $?"; grep -E "FAIL|passed" $OUT/check.log | tail -5
tail -14 $OUT/gemm.txt
