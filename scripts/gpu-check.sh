#!/usr/bin/env bash
# Runs the CUDA backend checks on the GPU machine, from the repository root, with a binary
# built elsewhere (this script never builds):
#
#   scripts/gpu-check.sh build-cuda/bin/tgrt-cuda-check [--sanitize]
#
# 1. tgrt-cuda-check: every CUDA kernel against the CPU reference (table, "N passed, M
#    failed"), then flash attention timings; it also dumps a few attention cases.
# 2. bench/cuda/sdpa_check.py: those cases against PyTorch's scaled_dot_product_attention
#    (float64 reference; full causal and sliding window).
# 3. With --sanitize: compute-sanitizer memcheck and racecheck over the quick check.
# Logs go to $OUT (the device tool's output folder) when set, else /tmp/tgrt-gpu-check.
# Exit status: non-zero when any step fails.
set -u -o pipefail

BIN=${1:?usage: scripts/gpu-check.sh PATH/TO/tgrt-cuda-check [--sanitize]}
SANITIZE=${2:-}
LOGS=${OUT:-/tmp/tgrt-gpu-check}
mkdir -p "$LOGS"
DUMP=$(mktemp -d /tmp/tgrt-attn-dump.XXXXXX)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader || true

"$BIN" --dump "$DUMP" >"$LOGS/cuda-check.log" 2>&1
rc_check=$?
# The full table is in the log; show the header, failures, summary and timings.
grep -E "^tgrt-cuda-check:|^tgrt: |FAIL|passed|flash attention timing|^window|^[0-9]+ +[0-9.]+ " \
  "$LOGS/cuda-check.log"

python3 bench/cuda/sdpa_check.py "$DUMP" 2>&1 | tee "$LOGS/sdpa-check.log"
rc_sdpa=${PIPESTATUS[0]}

rc_san=0
if [ "$SANITIZE" = "--sanitize" ]; then
  for tool in memcheck racecheck; do
    timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN" --quick --no-bench \
      >"$LOGS/sanitize-$tool.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc ($(grep -cE 'FAIL' "$LOGS/sanitize-$tool.log") FAIL rows)"
    grep -E "ERROR SUMMARY|Error|passed" "$LOGS/sanitize-$tool.log" | head -5
    [ $rc -ne 0 ] && rc_san=$rc
  done
fi

rm -rf "$DUMP"
echo "gpu-check: tgrt-cuda-check exit $rc_check, sdpa_check exit $rc_sdpa, sanitizer exit $rc_san"
[ $rc_check -eq 0 ] && [ $rc_sdpa -eq 0 ] && [ $rc_san -eq 0 ]
