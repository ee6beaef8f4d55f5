#!/usr/bin/env bash
# The power model's inputs and its check in one device call (docs/cost-model.md "The power
# limit"; carry runs/llama from `ARTS="gpt2s hd128 smollm2 llama1b" CALIBRATE=1
# scripts/gpu-llama-artifacts.sh`; builds nothing):
# 1. tgc-calibrate-cuda --power-only TABLE: the power section (idle, a bandwidth-bound add,
#    two GEMMs run for ~1 s each) measured into a copy of TABLE (default
#    calibration/h200.json), before the steps ($OUT/power-1.json) and after them, on a
#    warm GPU ($OUT/power-2.json): how much the probes move.
# 2. scripts/gpu-clocks.sh for EXES (default "gpt2s hd128 smollm2 llama1b"): the SM clock
#    and power while each trains STEPS steps, the numbers the model predicts.
# Here afterwards: `build/bin/tgc plan SPEC --calibration power-1.json` prints the predicted
# clock beside the step; scripts/cost-compare.py compares steps.
set -u -o pipefail
RESULT=${OUT:-/tmp/gpu-power}; mkdir -p "$RESULT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
TABLE=${TABLE:-calibration/h200.json}
B=/tmp/pwr; rm -rf $B; mkdir -p $B
tar -C $B -xJf runs/llama/llama.tar.xz || { echo "no runs/llama/llama.tar.xz"; exit 1; }
[ -x $B/llama/tgc-calibrate-cuda ] || { echo "no tgc-calibrate-cuda (CALIBRATE=1 artifacts)"; exit 1; }
echo "== 1. power probes (cold)"
timeout 120 $B/llama/tgc-calibrate-cuda --power-only "$TABLE" --out "$RESULT/power-1.json" 2>&1 | grep -E "power|error|no power" | tee "$RESULT/power-1.log"
echo "== 2. clocks while training"
OUT=$RESULT STEPS=${STEPS:-100} EXES=${EXES:-"gpt2s hd128 smollm2 llama1b"} bash scripts/gpu-clocks.sh 2>&1 | tail -12 | tee "$RESULT/clocks.txt"
echo "== 3. power probes (after the steps)"
timeout 120 $B/llama/tgc-calibrate-cuda --power-only "$TABLE" --out "$RESULT/power-2.json" 2>&1 | grep -E "power|error|no power" | tee "$RESULT/power-2.log"
