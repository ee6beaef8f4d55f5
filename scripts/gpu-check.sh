#!/usr/bin/env bash
# Runs the CUDA backend checks on the GPU machine, from the repository root, with a binary
# built elsewhere (this script never builds):
#
#   scripts/gpu-check.sh build-cuda/bin/tgrt-cuda-check [--sanitize] [--sweep]
#
# 1. tgrt-cuda-check: every CUDA kernel against the CPU reference (table, "N passed, M
#    failed"); it also dumps a few attention cases. Then flash attention timings, twice.
# 2. bench/cuda/sdpa_check.py: those cases against PyTorch's scaled_dot_product_attention
#    (float64 reference; full causal and sliding window).
# 3. With --sweep: every compiled attention tile shape, checked and timed (for choosing the
#    defaults in runtime/cuda/Attention.cu).
# 4. With --sanitize: compute-sanitizer memcheck and racecheck over the quick check (and
#    racecheck over the sweep's checks, with --sweep).
# Logs go to $OUT (the device tool's output folder) when set, else /tmp/tgrt-gpu-check.
# Exit status: non-zero when any step fails.
set -u -o pipefail

BIN=${1:?usage: scripts/gpu-check.sh PATH/TO/tgrt-cuda-check [--sanitize] [--sweep]}
shift
SANITIZE=0
SWEEP=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) SANITIZE=1 ;;
    --sweep) SWEEP=1 ;;
    *) echo "gpu-check: unknown option $arg" >&2; exit 2 ;;
  esac
done
LOGS=${OUT:-/tmp/tgrt-gpu-check}
mkdir -p "$LOGS"
DUMP=$(mktemp -d /tmp/tgrt-attn-dump.XXXXXX)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader || true

# Checks synchronise after every launch (TGRT_CUDA_SYNC=1) so a fault names its kernel.
TGRT_CUDA_SYNC=1 "$BIN" --no-bench --dump "$DUMP" >"$LOGS/cuda-check.log" 2>&1
rc_check=$?
# The full table is in the log; show the header, failures and the summary.
grep -E "^tgrt-cuda-check:|^tgrt: |cuda-check:|FAIL|passed" "$LOGS/cuda-check.log"

# Timings, twice (the spread between the two runs is the noise).
for run in 1 2; do
  "$BIN" --bench-only >"$LOGS/cuda-bench-$run.log" 2>&1 || rc_check=1
  grep -vE "^tgrt-cuda-check:" "$LOGS/cuda-bench-$run.log"
done

python3 bench/cuda/sdpa_check.py "$DUMP" 2>&1 | tee "$LOGS/sdpa-check.log"
rc_sdpa=${PIPESTATUS[0]}

rc_sweep=0
if [ $SWEEP -eq 1 ]; then
  "$BIN" --sweep >"$LOGS/cuda-sweep.log" 2>&1
  rc_sweep=$?
  grep -E "sweep|time|FAIL|tgrt:" "$LOGS/cuda-sweep.log"
fi

rc_san=0
if [ $SANITIZE -eq 1 ]; then
  runs=("memcheck --quick --no-bench" "racecheck --quick --no-bench")
  [ $SWEEP -eq 1 ] && runs+=("racecheck --sweep --quick")
  for r in "${runs[@]}"; do
    set -- $r
    tool=$1
    shift
    log="$LOGS/sanitize-$tool$(echo "$*" | tr -d ' -').log"
    timeout 70 compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN" "$@" >"$log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool $*: exit $rc ($(grep -c 'FAIL' "$log") FAIL rows)"
    grep -E "SUMMARY|passed" "$log" | head -3
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && rc_san=$rc # 124: ran out of time, not a failure
  done
fi

rm -rf "$DUMP"
echo "gpu-check: tgrt-cuda-check exit $rc_check, sdpa_check exit $rc_sdpa, sweep exit $rc_sweep," \
  "sanitizer exit $rc_san"
[ $rc_check -eq 0 ] && [ $rc_sdpa -eq 0 ] && [ $rc_sweep -eq 0 ] && [ $rc_san -eq 0 ]
