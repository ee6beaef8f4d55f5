#!/usr/bin/env bash
# One device call (builds nothing) after `POLICIES="none layer-attn" scripts/gpu-artifacts.sh
# perf TAG` and runs/gpt2-bf16m-layer-attn-max-TAG (GPT-2 small bf16-mixed, layer-attn, at the
# micro-batch `tgc plan --max-batch --memory 78GiB` gives):
#   1. scripts/gpu-perf.sh (kernel check, kernel timings, GPT-2 none + profile, layer-attn,
#      torch.compile bf16 with its profile)
#   2. the cross-entropy grid cap TGRT_CE_BLOCKS_PER_SM = 0 2 3 4: its kernel timings and the
#      GPT-2 step with each
#   3. the max-batch executable for 3 steps: device memory used against the plan
# Usage: scripts/gpu-ce.sh TAG   (logs in $OUT; short tables last)
set -u -o pipefail
TAG=${1:?usage: scripts/gpu-ce.sh TAG}
OUT=${OUT:-/tmp/gpu-ce}; mkdir -p "$OUT"
export OUT LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
source "$(dirname "$0")/gpu-lib.sh"
STEPS=${STEPS:-20} EXES="gpt2-bf16m-$TAG gpt2-bf16m-layer-attn-$TAG" \
  bash "$(dirname "$0")/gpu-perf.sh" > "$OUT/perf.txt" 2>&1
grep -E "passed|^\|" "$OUT/perf.txt"
chk=$(unpack "runs/tgrt-cuda-check-$TAG"); exe=$(unpack "runs/gpt2-bf16m-$TAG")
median() { python3 -c "import json,statistics,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; r=[x for x in r if 'ms' in x and 'eval' not in x]; print('%.1f' % statistics.median(x['ms'] for x in r[2:]), r[0]['loss'], r[-1]['loss'])" "$1"; }
echo "| TGRT_CE_BLOCKS_PER_SM | cross_entropy_bwd ms | cross_entropy_fwd_bwd ms | GPT-2 none ms/step, loss first, last |"
for k in 0 2 3 4; do
  TGRT_CE_BLOCKS_PER_SM=$k "$chk" --bench-kernels > "$OUT/bench-ce$k.log" 2>&1
  a=$(grep "cross_entropy_bwd 16384 x 50304" "$OUT/bench-ce$k.log" | grep bf16 | awk '{print $(NF-3)}')
  b=$(grep "cross_entropy_fwd_bwd 16384 x 50304" "$OUT/bench-ce$k.log" | grep bf16 | awk '{print $(NF-3)}')
  TGRT_CE_BLOCKS_PER_SM=$k "$exe" --data runs/data-gpu --steps "${STEPS:-20}" --eval-every 0 \
    --eval-batches 1 --log "$OUT/tgc-ce$k.jsonl" > "$OUT/tgc-ce$k.log" 2>&1
  echo "| $k | $a | $b | $(median "$OUT/tgc-ce$k.jsonl") |"
done
max=$(unpack "runs/gpt2-bf16m-layer-attn-max-$TAG")
"$max" --data runs/data-gpu --steps 3 --eval-every 0 --eval-batches 1 \
  --log "$OUT/tgc-layer-attn-max.jsonl" > "$OUT/tgc-layer-attn-max.log" 2>&1
echo "layer-attn at the planned max micro-batch: rc $?"; grep -E "memory|error" "$OUT/tgc-layer-attn-max.log" | head -3
