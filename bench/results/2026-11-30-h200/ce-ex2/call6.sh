# call6 (= call5 with the final binary, runs/gemm2): after the review refactor and the fast path's load batch helper (loadPacks) (Gemm.cu: one TileWalk / initRing for the two persistent
# kernels, the cluster-grid line once per process; Kernels.cu: the cross-entropy rows' edge
# elements through one helper per pass): the own-GEMM rows (TGRT_CUDA_SYNC=1) and their
# memcheck, the bench at GPT-2's qkv and 8192^3, the whole quick kernel check.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd runs/gemm2 && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
BIN=runs/gemm2/tgrt-cuda-check
TGRT_CUDA_SYNC=1 $BIN --gemm > $OUT/gemm-check.log 2>&1; echo "gemm check rc $?"
grep -E "FAIL|passed|clusters of" $OUT/gemm-check.log | tail -4
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 $SAN --tool memcheck --error-exitcode 9 $BIN --quick --gemm > $OUT/gemm-memcheck.log 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY|passed' $OUT/gemm-memcheck.log | tr '\n' ' ')"
for shape in "GPT-2 qkv" "8192"; do
  TGRT_GEMM_BENCH_ONLY="$shape" timeout 120 $BIN --bench-gemm > "$OUT/bench-${shape// /-}.log" 2>&1
  echo "bench $shape rc $?"; sed -n '/^own GEMM/,$p' "$OUT/bench-${shape// /-}.log" | head -8
done
TGRT_CUDA_SYNC=1 timeout 200 $BIN --quick --no-bench > $OUT/check.log 2>&1
echo "quick check rc $?"; grep -E "FAIL|passed" $OUT/check.log | tail -4
TGRT_KERNEL_BENCH_ONLY=cross_entropy_ timeout 120 $BIN --bench-kernels > $OUT/bench-ce.log 2>&1
echo "ce bench rc $?"; grep -E "bf16" $OUT/bench-ce.log | grep 50304 | cut -c1-100
cd $OUT && xz -9 gemm-check.log check.log gemm-memcheck.log && ls -la
