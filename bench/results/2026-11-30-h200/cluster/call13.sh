# call13: the final binary (packBf16 shared by Gemm.cu and AttentionBf16.cu, the check
# tool's shared end of run): the own GEMM's rows and the whole quick kernel check.
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
TGRT_CUDA_SYNC=1 runs/gemm/tgrt-cuda-check --gemm > $OUT/gemm-check.log 2>&1; echo "gemm rc $?"
timeout 280 runs/gemm/tgrt-cuda-check --quick --no-bench > $OUT/quick-check.log 2>&1; echo "quick check rc $?"
grep -E "FAIL|passed" $OUT/gemm-check.log | tail -3
grep -E "FAIL|passed" $OUT/quick-check.log | tail -5
