# call12: Cluster256 (Persistent256, 4 stages, in 2-block clusters sharing B by multicast)
# The own GEMM's checks, memcheck and bench; then the whole quick kernel
# check (every runtime kernel against the CPU).
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
OUT=$OUT bash scripts/gpu-gemm.sh runs/gemm/tgrt-cuda-check > $OUT/gemm.txt 2>&1; echo "gemm rc $?"
timeout 280 runs/gemm/tgrt-cuda-check --quick --no-bench > $OUT/quick-check.log 2>&1; echo "quick check rc $?"
grep -E "FAIL|passed|memcheck|rc " $OUT/gemm.txt | head
grep -E "FAIL|passed" $OUT/quick-check.log | tail -5
sed -n '/^shape/,$p' $OUT/gemm-bench.log | grep -E "shape|x[0-9]+x" | cut -c1-250
