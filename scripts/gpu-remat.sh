#!/usr/bin/env bash
# Rematerialization on the GPU machine, one device call; builds nothing. Run from the repo
# root after scripts/gpu-artifacts.sh built (here) and the call carried:
#   runs/gpt2-bf16m-{none,gelu,selective,layer}   GPT-2 small bf16-mixed, flash, micro-batch 16
#   runs/gpt2-bf16m-{none,gelu,selective,layer}-max  the same at the largest micro-batch that
#                                            `tgc plan --max-batch --memory $MAXMEM` gives
#   runs/max-batch.txt                       those batches, "policy batch plan_bytes"
#   runs/data-gpu                            tokenized data
# Times each policy at B=16 (tgc, and PyTorch eager / torch.compile with
# torch.utils.checkpoint per block), then runs each max-batch binary for a few steps and
# compares device memory used with the plan. Prints a short table last.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-remat}; mkdir -p "$OUT"
STEPS=${STEPS:-30}
POLICIES=${POLICIES:-none gelu selective layer} # a missing executable is reported and skipped
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source "$(dirname "$0")/gpu-lib.sh"
run() { # name binary steps
  local name=$1 bin; bin=$(unpack "$2")
  [ -n "$bin" ] || { echo "(no $2)"; return; }
  echo "-- $name"
  "$bin" --data runs/data-gpu --steps "$3" --eval-every 0 --eval-batches 1 \
    --log "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
  echo "rc $?"; grep -E "memory|plan|error|refus" "$OUT/$name.log" | head -3; tail -1 "$OUT/$name.log"
}
echo "== tgc, micro-batch 16"
for p in $POLICIES; do run "tgc-$p" "gpt2-bf16m-$p" "$STEPS"; done
echo "== tgc at the planned max micro-batch"
cat runs/max-batch.txt 2>/dev/null
[ "${MAX:-1}" = 1 ] && for p in $POLICIES; do run "tgc-$p-max" "gpt2-bf16m-$p-max" 4; done
echo "== PyTorch, micro-batch 16, bf16 autocast"
[ "${TORCH:-1}" = 1 ] || TORCH_SETS=";"
IFS=';' read -ra SETS <<< "${TORCH_SETS:---bf16;--bf16 --checkpoint;--bf16 --compile;--bf16 --compile --checkpoint}"
for args in "${SETS[@]}"; do
  [ -n "$args" ] || continue
  n=$(echo "$args" | tr -d ' -'); python3 bench/torch_gpt2_step.py --batch 16 $args > "$OUT/torch-$n.json" 2> "$OUT/torch-$n.err"
  cat "$OUT/torch-$n.json"
done
python3 - "$OUT" "$POLICIES" <<'PY'
import json, sys, statistics, re, os
out = sys.argv[1]
policies = sys.argv[2].split()
def steps(name):
    p = f"{out}/{name}.jsonl"
    if not os.path.exists(p): return []
    return [r for r in (json.loads(l) for l in open(p) if l.strip().startswith("{")) if "ms" in r and "eval" not in r]
def mem(name):
    p = f"{out}/{name}.log"
    m = re.search(r"plan (\d+) bytes.*used (\d+) bytes; overhead (-?\d+)", open(p).read()) if os.path.exists(p) else None
    return (int(m[1]), int(m[2]), int(m[3])) if m else None
base = None
print("\n| tgc bf16-mixed GPT-2 small | micro-batch | ms/step | vs none | tokens/s | plan GiB | used GiB | overhead MiB |")
print("|---|---|---|---|---|---|---|---|")
for p in policies:
    for suffix in ("", "-max"):
        name = f"tgc-{p}{suffix}"
        s = steps(name); m = mem(name)
        if not s: print(f"| {name} | - | - | - | - | - | - | - |"); continue
        ms = statistics.median(r["ms"] for r in (s[2:] or s))
        if name == "tgc-none": base = ms
        rel = f"{100*(ms/base-1):+.1f}%" if base and not suffix else "-"
        toks = statistics.median(r["tokens_per_s"] for r in (s[2:] or s))
        b = round(toks * ms / 1e3 / 1024)
        print(f"| {name} | {b} | {ms:.1f} | {rel} | {toks:.0f} | "
              + (f"{m[0]/2**30:.2f} | {m[1]/2**30:.2f} | {m[2]/2**20:.1f} |" if m else "- | - | - |"))
print("\n| PyTorch (B=16) | ms/step | peak GiB |\n|---|---|---|")
for f in sorted(os.listdir(out)):
    if f.startswith("torch-") and f.endswith(".json"):
        try:
            r = json.load(open(f"{out}/{f}")); print(f"| {r['mode']} | {r['ms_per_step']:.1f} | {r['peak_bytes']/2**30:.2f} |")
        except Exception as e:
            print(f"| {f} | failed: {e} | - |")
PY
