# call9: where the 4-stage Persistent256 kernel's time goes at GPT-2's qkv (K 768, b [k, n]):
# Nsight Compute --set full with per-SASS-instruction stall samples (the source page as CSV).
set -u
cd runs/gemm && xz -d -k -f tgrt-cuda-check.xz && chmod +x tgrt-cuda-check && cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
TGRT_GEMM_BENCH_ONLY="GPT-2 qkv" timeout 300 $NCU --clock-control base --kernel-name-base mangled \
  -k "regex:gemm_tn_bf16_kernelILi256ELi4ELi1ELi1ELb1ELi0E" -c 1 --set full \
  --import-source no -o $OUT/persist-qkv runs/gemm/tgrt-cuda-check --bench-gemm > $OUT/ncu-run.log 2>&1
echo "ncu rc $?"
$NCU -i $OUT/persist-qkv.ncu-rep --page source --csv --print-source sass > $OUT/sass.csv 2>&1
$NCU -i $OUT/persist-qkv.ncu-rep --page details > $OUT/details.txt 2>&1
cd $OUT && xz -9 sass.csv && rm -f persist-qkv.ncu-rep; cd - >/dev/null
grep -E "Duration|SM Frequency|Compute \(SM\)|Tensor is|SM Active" $OUT/details.txt | head
ls -la $OUT
