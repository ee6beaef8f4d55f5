#!/usr/bin/env bash
# Runs on the GPU machine from the repo root; builds nothing. Expects (carried):
#   runs/gpt2-cuda(.xz)   scripts/gpu-artifacts.sh fp32
#   runs/data-gpu    tgc data prepare --vocab 8192 --max-bytes 8MiB --out runs/data-gpu
# Trains GPT-2 small (fp32, flash attention, micro-batch 16) for a few steps, reads back the
# memory report, times PyTorch on the same shapes, and prints a short table last.
set -uo pipefail
source "$(dirname "$0")/gpu-lib.sh"
[ -x runs/gpt2-cuda ] || cp "$(unpack gpt2-cuda)" runs/gpt2-cuda
OUT=${OUT:-/tmp/gpu-run}; mkdir -p "$OUT"
STEPS=${STEPS:-30}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
runs/gpt2-cuda --info 2>&1 | tail -8
echo "== tgc GPT-2 small: $STEPS steps =="
runs/gpt2-cuda --data runs/data-gpu --steps "$STEPS" --eval-every 0 --eval-batches 4 \
  --log "$OUT/tgc-gpt2.jsonl" 2>&1 | tee "$OUT/tgc-gpt2.log" | grep -vE '^\s*$' | tail -14
echo "== tgc GPT-2 small, TGRT_TF32=1 (TF32 GEMMs/attention, GELU_AUX_BIAS epilogue): 20 steps =="
TGRT_TF32=1 runs/gpt2-cuda --data runs/data-gpu --steps 20 --eval-every 0 --eval-batches 1 \
  --log "$OUT/tgc-gpt2-tf32.jsonl" 2>&1 | tail -3
echo "== TGRT_TF32=1 TGRT_GELU_EPILOGUE=0 (own GELU kernel): 20 steps =="
TGRT_TF32=1 TGRT_GELU_EPILOGUE=0 runs/gpt2-cuda --data runs/data-gpu --steps 20 --eval-every 0 \
  --eval-batches 1 --log "$OUT/tgc-gpt2-tf32-noepi.jsonl" 2>&1 | tail -3
echo "== window 256 (same binary family, compiled separately) =="
[ -x runs/gpt2-cuda-w256 ] && runs/gpt2-cuda-w256 --data runs/data-gpu --steps 15 --eval-every 0 \
  --eval-batches 1 --log "$OUT/tgc-gpt2-w256.jsonl" 2>&1 | tail -3
echo "== PyTorch =="
python3 bench/torch_gpt2_step.py --batch 16 > "$OUT/torch-eager.json" 2>"$OUT/torch-eager.err"; cat "$OUT/torch-eager.json"
python3 bench/torch_gpt2_step.py --batch 16 --compile > "$OUT/torch-compile.json" 2>"$OUT/torch-compile.err"; cat "$OUT/torch-compile.json"
python3 bench/torch_gpt2_step.py --batch 16 --compile --bf16 > "$OUT/torch-compile-bf16.json" 2>"$OUT/torch-compile-bf16.err"; cat "$OUT/torch-compile-bf16.json"
python3 - "$OUT" <<'PY'
import json, sys, statistics, re, os
out = sys.argv[1]
def tgc(path):
    if not os.path.exists(path): return None
    rows = [json.loads(l) for l in open(path) if l.strip().startswith("{")]
    steps = [r for r in rows if "ms" in r and "eval" not in r]
    if not steps: return None
    ms = statistics.median(r["ms"] for r in steps[3:] or steps)
    return dict(ms=ms, first=steps[0]["loss"], last=steps[-1]["loss"])
t = tgc(f"{out}/tgc-gpt2.jsonl"); w = tgc(f"{out}/tgc-gpt2-w256.jsonl")
t32 = tgc(f"{out}/tgc-gpt2-tf32.jsonl"); t32n = tgc(f"{out}/tgc-gpt2-tf32-noepi.jsonl")
mem = re.search(r"plan (\d+) bytes.*used (\d+) bytes; overhead (-?\d+)", open(f"{out}/tgc-gpt2.log").read())
print("\n| run | ms/step (median) | note |\n|---|---|---|")
if t: print(f"| tgc fp32 flash, B=16 | {t['ms']:.1f} | loss {t['first']:.3f} -> {t['last']:.3f} |")
if w: print(f"| tgc fp32 flash window 256, B=16 | {w['ms']:.1f} | |")
if t32: print(f"| tgc TGRT_TF32=1 (GELU epilogue), B=16 | {t32['ms']:.1f} | loss {t32['first']:.3f} -> {t32['last']:.3f} |")
if t32n: print(f"| tgc TGRT_TF32=1 TGRT_GELU_EPILOGUE=0, B=16 | {t32n['ms']:.1f} | |")
for name in ("torch-eager", "torch-compile", "torch-compile-bf16"):
    try:
        r = json.load(open(f"{out}/{name}.json"))
        print(f"| {r['mode']} B=16 | {r['ms_per_step']:.1f} | peak {r['peak_bytes']/2**30:.2f} GiB |")
    except Exception as e:
        print(f"| {name} | - | failed: {e} |")
if mem: print(f"memory: plan {int(mem[1])} B, device used {int(mem[2])} B, overhead {int(mem[3])} B")
PY
