#!/usr/bin/env bash
# Mixed precision on the GPU machine, one device call; builds nothing. Run from the repo
# root. Carried (built here by scripts/gpu-artifacts.sh): runs/gpt2-{bf16m,fp16m,bf16,fp32}
# (GPT-2 small, flash, micro-batch 16, CUDA), runs/gpt2-bf16m-grad.so (B=2 library),
# runs/tiny-{bf16m,fp16m,bf16}-cuda.so, runs/tgrt-cuda-check.gz, runs/data-gpu.
#   1. kernel check (every CUDA kernel, f32 / bf16 / f16, against the CPU reference)
#   2. gradients of one step vs float64 PyTorch for each precision (tiny; GPT-2 bf16-mixed)
#   3. GPT-2 small B=16: tgc bf16-mixed (timed + per-call profile), fp16-mixed, bf16, fp32/TF32;
#      torch.compile and eager with bf16 autocast in the same call
#   4. loss curves: fp32 (TF32) vs bf16-mixed, same seed and batches
# Prints a short table last. Env: STEPS (timed steps, default 40), CURVE (default 200; 0
# skips the curves), EAGER=0 skips PyTorch eager; a binary or library not carried is skipped.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-mixed}; mkdir -p "$OUT"
STEPS=${STEPS:-40}; CURVE=${CURVE:-200}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source "$(dirname "$0")/gpu-lib.sh"
if [ -f runs/tgrt-cuda-check.gz ]; then
  echo "== 1. kernel check"
  gunzip -c runs/tgrt-cuda-check.gz > /tmp/tgrt-cuda-check && chmod +x /tmp/tgrt-cuda-check
  TGRT_CUDA_SYNC=1 timeout 240 /tmp/tgrt-cuda-check --no-bench > "$OUT/cuda-check.log" 2>&1
  echo "rc $?"; grep -E "FAIL" "$OUT/cuda-check.log" | head -20
  grep -E '[0-9]+ passed, [0-9]+ failed' "$OUT/cuda-check.log" | tail -1
else
  echo "== 1. kernel check: not carried (runs/tgrt-cuda-check.gz), skipped"
fi

echo "== 2. gradients vs float64"
for name in tiny-bf16m-cuda.so tiny-fp16m-cuda.so tiny-bf16-cuda.so gpt2-bf16m-grad.so; do
  lib=$(unpack "$name"); [ -n "$lib" ] || continue
  echo "-- $lib"
  env -u LD_LIBRARY_PATH timeout 300 python3 test/e2e/torch_reference.py --lib "$lib" --device cuda \
    > "$OUT/$(basename "$lib" .so)-grad.log" 2>&1
  echo "rc $?"; grep -E "grad-check|FAIL|worst|loss" "$OUT/$(basename "$lib" .so)-grad.log" | tail -6
done

run() { # name binary steps [env...]
  local name=$1 want=$2 bin; bin=$(unpack "$2"); local steps=$3; shift 3
  [ -n "$bin" ] || { echo "(no $want)"; return; }
  echo "-- $name"
  env "$@" "$bin" --data runs/data-gpu --steps "$steps" --eval-every 0 --eval-batches 2 \
    --log "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
  echo "rc $?"; grep -E "memory|plan|skipped|error" "$OUT/$name.log" | head -4; tail -2 "$OUT/$name.log"
}
echo "== 3. GPT-2 small, micro-batch 16 x 1024"
$(unpack gpt2-bf16m) --info 2>&1 | tail -12
run tgc-bf16m runs/gpt2-bf16m "$STEPS"
run tgc-bf16m-profile runs/gpt2-bf16m 6 TGRT_PROFILE=1
grep -A40 "profile" "$OUT/tgc-bf16m-profile.log" | head -45
run tgc-fp16m runs/gpt2-fp16m 20
run tgc-bf16 runs/gpt2-bf16 20
run tgc-fp32-tf32 runs/gpt2-fp32 15 TGRT_TF32=1
echo "-- PyTorch"
python3 bench/torch_gpt2_step.py --batch 16 --compile --bf16 > "$OUT/torch-compile-bf16.json" 2> "$OUT/torch-compile-bf16.err"
cat "$OUT/torch-compile-bf16.json"
[ "${EAGER:-1}" = 1 ] && python3 bench/torch_gpt2_step.py --batch 16 --bf16 > "$OUT/torch-eager-bf16.json" 2> "$OUT/torch-eager-bf16.err"
cat "$OUT/torch-eager-bf16.json" 2>/dev/null

if [ "$CURVE" -gt 0 ]; then
  echo "== 4. loss curves ($CURVE steps, same seed and data)"
  run curve-fp32 runs/gpt2-fp32 "$CURVE" TGRT_TF32=1
  run curve-bf16m runs/gpt2-bf16m "$CURVE"
fi

python3 - "$OUT" <<'PY'
import json, sys, statistics, re, os
out = sys.argv[1]
def rows(name):
    p = f"{out}/{name}.jsonl"
    if not os.path.exists(p): return []
    return [json.loads(l) for l in open(p) if l.strip().startswith("{")]
def steps(name):
    return [r for r in rows(name) if "ms" in r and "eval" not in r]
def mem(name):
    p = f"{out}/{name}.log"
    m = re.search(r"plan (\d+) bytes.*used (\d+) bytes; overhead (-?\d+)", open(p).read()) if os.path.exists(p) else None
    return (int(m[1]), int(m[2]), int(m[3])) if m else None
print("\n| run (GPT-2 small, B=16, T=1024) | ms/step (median) | loss first -> last | memory |")
print("|---|---|---|---|")
for name in ("tgc-bf16m", "tgc-fp16m", "tgc-bf16", "tgc-fp32-tf32"):
    s = steps(name)
    if not s: print(f"| {name} | - | - | - |"); continue
    ms = statistics.median(r["ms"] for r in (s[3:] or s))
    m = mem(name)
    ms_txt = f"plan {m[0]/2**30:.2f} GiB, used {m[1]/2**30:.2f} GiB (+{m[2]/2**20:.1f} MiB)" if m else "-"
    extra = f", scale {s[-1].get('loss_scale')}, skipped {s[-1].get('skipped_steps')}" if "loss_scale" in s[-1] else ""
    print(f"| {name} | {ms:.1f} | {s[0]['loss']:.3f} -> {s[-1]['loss']:.3f}{extra} | {ms_txt} |")
for name in ("torch-compile-bf16", "torch-eager-bf16"):
    try:
        r = json.load(open(f"{out}/{name}.json"))
        print(f"| torch {r['mode']} | {r['ms_per_step']:.1f} | - | peak {r['peak_bytes']/2**30:.2f} GiB |")
    except Exception as e:
        print(f"| {name} | - | failed: {e} | - |")
a, b = steps("curve-fp32"), steps("curve-bf16m")
if a and b:
    n = min(len(a), len(b))
    rel = [abs(b[i]["loss"] - a[i]["loss"]) / a[i]["loss"] for i in range(n)]
    w = max(range(n), key=lambda i: rel[i])
    print(f"loss curve bf16-mixed vs fp32 over {n} steps: max rel diff {max(rel)*100:.2f}% at step {w+1}, "
          f"mean {100*sum(rel)/n:.2f}%, last {a[n-1]['loss']:.4f} vs {b[n-1]['loss']:.4f}")
PY
