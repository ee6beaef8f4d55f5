#!/usr/bin/env bash
# The own Hopper GEMM (runtime/cuda/Gemm.cu) on the GPU machine, from the repository root,
# with a tgrt-cuda-check built elsewhere (this script never builds):
#
#   scripts/gpu-gemm.sh build/bin/tgrt-cuda-check
#
# 1. `--gemm`: gemm_tn_bf16 against the CPU reference at every tile width and epilogue
#    (TGRT_CUDA_SYNC=1, so a fault names the kernel); then under compute-sanitizer memcheck
#    (the quick shapes).
# 2. `--bench-gemm`: the own GEMM against the runtime's cuBLASLt path (tuned algorithms) at
#    GPT-2 small's and the head-dim-128 example's forward GEMMs; the table comes last.
# Logs in $OUT (the device tool's output folder) when set, else /tmp/tgrt-gpu-gemm.
# Exit status: non-zero when a check fails.
set -u -o pipefail
BIN=${1:?usage: scripts/gpu-gemm.sh PATH/TO/tgrt-cuda-check}
LOGS=${OUT:-/tmp/tgrt-gpu-gemm}
mkdir -p "$LOGS"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit \
  --format=csv,noheader | tee "$LOGS/gpu.txt" || true

TGRT_CUDA_SYNC=1 "$BIN" --gemm >"$LOGS/gemm-check.log" 2>&1
rc_check=$?
grep -E "FAIL|passed" "$LOGS/gemm-check.log" | tail -20
rc_san=0
if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timeout 300 "$SAN" --tool memcheck --error-exitcode 9 "$BIN" --quick --gemm \
    >"$LOGS/gemm-memcheck.log" 2>&1
  rc_san=$?
  echo "memcheck rc $rc_san: $(grep -E 'ERROR SUMMARY|passed' "$LOGS/gemm-memcheck.log" | tr '\n' ' ')"
fi
"$BIN" --bench-gemm >"$LOGS/gemm-bench.log" 2>&1
rc_bench=$?
echo "check rc $rc_check, memcheck rc $rc_san, bench rc $rc_bench"
sed -n '/^own GEMM/,$p' "$LOGS/gemm-bench.log"
[ "$rc_check" = 0 ] && [ "$rc_san" = 0 ] && [ "$rc_bench" = 0 ]
