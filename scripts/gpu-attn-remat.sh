#!/usr/bin/env bash
# One device call (builds nothing) after `POLICIES="none gelu selective layer-attn layer"
# scripts/gpu-artifacts.sh perf TAG`: the attention occupancy variants and the checkpointing
# policies on GPT-2 small bf16-mixed B=16, with torch.compile (plain and with per-block
# checkpointing) in the same run.
#   1. scripts/gpu-perf.sh over every carried executable (kernel check + timings of TAG's build)
#   2. TGRT_ATTN_MINB=1 (runtime/cuda/AttentionBf16.cu): the kernel timings and the step again
#   3. bench/torch_gpt2_step.py --bf16 --compile [--checkpoint]
# Usage: scripts/gpu-attn-remat.sh TAG   (logs in $OUT; a short table last)
set -u -o pipefail
TAG=${1:?usage: scripts/gpu-attn-remat.sh TAG}
OUT=${OUT:-/tmp/gpu-attn-remat}; mkdir -p "$OUT"
export OUT LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
source "$(dirname "$0")/gpu-lib.sh"
EXES=$(ls runs/gpt2-*"-$TAG.xz" runs/gpt2-bf16m-"$TAG.xz" 2>/dev/null | sort -u | xargs -n1 basename | sed 's/\.xz$//')
STEPS=${STEPS:-20} TORCH=0 PROFILE=0 EXES="$EXES" bash "$(dirname "$0")/gpu-perf.sh" > "$OUT/perf.txt" 2>&1
grep -E "passed|^\|" "$OUT/perf.txt"
bin=$(unpack "runs/tgrt-cuda-check-$TAG")
TGRT_ATTN_MINB=1 "$bin" --bench-only > "$OUT/bench-minb1.log" 2>&1
for f in "$OUT/tgrt-cuda-check-$TAG-bench.log" "$OUT/bench-minb1.log"; do
  echo "== $(basename "$f"): bf16 attention (bh 192, t 1024, hd 64)"
  grep -A3 "causal, bf16 tensor cores" "$f" | tail -2
done
exe=$(unpack "runs/gpt2-bf16m-$TAG")
TGRT_ATTN_MINB=1 "$exe" --data runs/data-gpu --steps "${STEPS:-20}" --eval-every 0 --eval-batches 1 \
  --log "$OUT/tgc-minb1.jsonl" > "$OUT/tgc-minb1.log" 2>&1
python3 -c "import json,statistics,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; r=[x for x in r if 'ms' in x and 'eval' not in x]; print('| tgc none, TGRT_ATTN_MINB=1 | %.1f |' % statistics.median(x['ms'] for x in r[2:]))" "$OUT/tgc-minb1.jsonl"
for args in "--bf16 --compile" "--bf16 --compile --checkpoint"; do
  n=$(echo "$args" | tr -d ' -')
  python3 bench/torch_gpt2_step.py --batch 16 $args > "$OUT/torch-$n.json" 2> "$OUT/torch-$n.err"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('| torch %s | %.1f | peak %.2f GiB |' % (r['mode'], r['ms_per_step'], r['peak_bytes']/2**30))" "$OUT/torch-$n.json" || tail -3 "$OUT/torch-$n.err"
done
