# call8: Persistent256 with 4 stages (its epilogue through two 8 KB boxes per warpgroup):
# the own GEMM's checks (every schedule), memcheck, and the bench (GPU time of queued calls).
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
OUT=$OUT bash scripts/gpu-gemm.sh runs/gemm/tgrt-cuda-check > $OUT/gemm.txt 2>&1; echo "gemm rc $?"
grep -E "FAIL|passed|memcheck|rc " $OUT/gemm.txt | head
sed -n '/^shape/,$p' $OUT/gemm-bench.log | grep -E "shape|x[0-9]+x" | cut -c1-250
