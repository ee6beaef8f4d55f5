# s25 call1 (twenty-fifth session): are there cuBLASLt configurations of Llama 3.2 1B's GEMMs
# that spend less energy per call, and so run faster at the 700 W limit, than the tuner's
# pick (the fastest of a few calls alone)? bench/cuda/gemm_energy.cu, 1 s sustained runs.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 520 runs/gemm_energy 1.0 > $OUT/gemm_energy.log 2>&1; echo "rc $?"
grep -v "^|" $OUT/gemm_energy.log | tail -n +1 | cut -c1-200 | head -150 > /dev/null
sed -n '/^| GEMM/,$p' $OUT/gemm_energy.log
