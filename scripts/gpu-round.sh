#!/usr/bin/env bash
# One device call of the experiments round; builds nothing. Carried (built here):
#   runs/gpt2-bf16m.xz        GPT-2 small bf16-mixed, micro-batch 16 (scripts/gpu-artifacts.sh)
#   runs/exp-D.tar.xz, runs/exp-C.tar.xz   lab D / lab C matrices, compiled for CUDA
#                             (scripts/gpu-artifacts.sh experiment MATRIX NAME)
#   runs/data-gpu             tokens
# 1. GPT-2 small B=16: step time per TGRT_DGELU_EPILOGUE path (0 own kernels, 1 DGELU,
#    2 DGELU_BGRAD), 20 steps each.
# 2. Lab D: every tgc row; the PyTorch rows of $TORCH_ONLY. 3. Lab C: every tgc row.
# Budgets (seconds): T_D, T_DT, T_C. Results: $OUT/exp-*-results.tar.gz, $OUT/round.txt.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-round}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source "$(dirname "$0")/gpu-lib.sh"
{
echo "== 1. GPT-2 small B=16 bf16-mixed, MLP backward path"
bin=$(unpack gpt2-bf16m)
for mode in 0 1 2; do
  TGRT_DGELU_EPILOGUE=$mode "$bin" --data runs/data-gpu --steps 20 --eval-every 0 --eval-batches 1 \
    --log /tmp/dgelu$mode.jsonl > /tmp/dgelu$mode.log 2>&1
  python3 -c "
import json,statistics,sys
r=[json.loads(l) for l in open('/tmp/dgelu$mode.jsonl') if '\"ms\"' in l]
print('TGRT_DGELU_EPILOGUE=$mode: %.1f ms/step (median of steps 4-20), loss %.3f -> %.3f' % (statistics.median(x['ms'] for x in r[3:]), r[0]['loss'], r[-1]['loss']))"
done
} 2>&1 | tee "$OUT/round.txt"
RUN_TIMEOUT=${T_D:-240} OUT=$OUT bash scripts/gpu-experiment.sh exp-D --no-pytorch > "$OUT/exp-D-tgc.txt" 2>&1
RUN_TIMEOUT=${T_DT:-150} OUT=$OUT bash scripts/gpu-experiment.sh exp-D \
  --only "${TORCH_ONLY:-fp32,bf16+flash,bf16+flash+layer,bf16+flash@max}" > "$OUT/exp-D-torch.txt" 2>&1
RUN_TIMEOUT=${T_C:-110} OUT=$OUT bash scripts/gpu-experiment.sh exp-C --no-pytorch > "$OUT/exp-C-tgc.txt" 2>&1
tail -30 "$OUT/exp-D-torch.txt"; tail -22 "$OUT/exp-C-tgc.txt"; cat "$OUT/round.txt"
