#!/usr/bin/env bash
# The cost model's calibration on the GPU machine (issue 23), one device call; builds nothing.
# Run from the repo root after scripts/gpu-calibrate-artifacts.sh built (here) and the call
# carried runs/calibrate:
#   runs/calibrate/calibrate.tar.xz   tgc-calibrate-cuda, gpt2s, llama1b (CUDA executables)
# 1. tgc-calibrate-cuda --out $OUT/h100.json: times the CUDA runtime's kernels (cuBLASLt
#    GEMMs and epilogues, attention (cuDNN for bf16/f16 as compiled by default), norms,
#    activations, loss, AdamW, casts, embeddings) over its grid in f32 / bf16 / f16 (CUDA
#    events, median of 5). QUICK=1: the --quick grid.
# 2. The measured step of gpt2s and llama1b (STEPS steps on synthetic tokens; median of the
#    steps after the first 3), to compare with `tgc plan` here once calibration/h100.json
#    holds the table.
# Last: a summary table (per kernel and dtype: points, best TFLOP/s, best GB/s) and the
# measured step times. The table and the logs come back in $OUT.
#   STEPS (20)  QUICK (0)  SKIP_STEPS (0)
set -u -o pipefail
RESULT=${OUT:-/tmp/gpu-calibrate}; mkdir -p "$RESULT"
STEPS=${STEPS:-20}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader | tee "$RESULT/gpu.txt"
B=/tmp/calibrate; rm -rf $B; mkdir -p $B
tar -C $B -xJf runs/calibrate/calibrate.tar.xz || { echo "no runs/calibrate/calibrate.tar.xz"; exit 1; }
B=$B/calibrate

echo "== 1. calibration"
ARGS=(--out "$RESULT/h100.json"); [ "${QUICK:-0}" = 1 ] && ARGS+=(--quick)
start=$(date +%s)
timeout 480 $B/tgc-calibrate-cuda "${ARGS[@]}" > "$RESULT/calibrate.log" 2>&1
echo "rc $? after $(( $(date +%s) - start )) s"; tail -2 "$RESULT/calibrate.log"

mkdata() { # dir vocab tokens
  python3 - "$@" <<'PY'
import json, os, sys, numpy as np
d, V, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
for split, k in (("train", n), ("val", n // 8), ("test", n // 8)):
    np.save(f"{d}/{split}.npy", rng.integers(0, V, size=k, dtype=np.uint32))
json.dump({"vocab_size": V, "eos_id": 0, "tokenizer": "synthetic"}, open(f"{d}/meta.json", "w"))
PY
}
if [ "${SKIP_STEPS:-0}" != 1 ]; then
  echo "== 2. measured steps"
  mkdata $B/data-50304 50304 2000000
  mkdata $B/data-128256 128256 2000000
  for m in gpt2s:50304 llama1b:128256; do
    name=${m%%:*}; V=${m##*:}
    timeout 240 $B/$name --data $B/data-$V --steps "$STEPS" --log "$RESULT/$name.jsonl" --quiet \
      > "$RESULT/$name.log" 2>&1
    echo "$name rc $?"
  done
fi

echo "== summary"
python3 - "$RESULT" <<'PY'
import json, os, statistics, sys
r = sys.argv[1]
try:
    t = json.load(open(os.path.join(r, "h100.json")))
except Exception as e:
    print("no table:", e); t = None
if t:
    print("device: %s; peaks: %s; memory %.3g B/s; call overhead %.4f ms"
          % (t["device"], ", ".join("%s %.3g" % kv for kv in t["peak"]["flops_per_s"].items()),
             t["peak"]["memory_bytes_per_s"], t["call_overhead_ms"]))
    print("%-32s %-5s %6s %12s %10s" % ("kernel", "dtype", "points", "best TFLOP/s", "best GB/s"))
    for k, dts in sorted(t["kernels"].items()):
        for dt, pts in sorted(dts.items()):
            tf = max(p["flops"] / p["ms"] / 1e9 for p in pts)
            gb = max(p["bytes"] / p["ms"] / 1e6 for p in pts)
            print("%-32s %-5s %6d %12.1f %10.0f" % (k, dt, len(pts), tf, gb))
for name in ("gpt2s", "llama1b"):
    f = os.path.join(r, name + ".jsonl")
    if os.path.exists(f):
        ms = [json.loads(l)["ms"] for l in open(f) if '"ms"' in l]
        if len(ms) > 4:
            print("measured %s: median %.2f ms/step over steps 4-%d (min %.2f, max %.2f)"
                  % (name, statistics.median(ms[3:]), len(ms), min(ms[3:]), max(ms[3:])))
PY
