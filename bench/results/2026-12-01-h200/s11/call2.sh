# call2 (eleventh session): tg-bias-rows after call1's two mends: the forward GEMMs read the
# ones-column output with lda (K = d, tgrt_matmul_bias_lda / _gelu_lda) and AdamW runs over
# the decayed run with the biases as no-decay islands (tgrt_adamw_islands). 1. the whole
# quick kernel check (layer_norm_fwd_ones rows against the CPU and bit for bit against the
# plain layer norm); 2. steps of the default and bias-rows executables (gpt2s, hd128, gpt2m),
# 3 alternating repetitions, losses side by side; 3. per-call profiles of gpt2s both ways.
set -u
source scripts/gpu-lib.sh
gpu_unpack s11c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "layer_norm_fwd_ones|adamw_islands" $L/check.log | head -16 | cut -c1-150
echo "== 2. steps"
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-br hd128 hd128-br" "-"'
echo "steps rc $?"
timeout 100 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2m gpt2m-br" "-"'
echo "gpt2m rc $?"
python3 - $L <<'PY'
import json, sys
o = sys.argv[1]
def rows(f): return [(round(r["loss"], 4), round(r["grad_norm"], 3)) for r in (json.loads(l) for l in open(f) if l.startswith("{")) if "grad_norm" in r]
for m in ("gpt2s", "hd128"):
    try: a, b = rows(f"{o}/tgc-{m}---1.jsonl"), rows(f"{o}/tgc-{m}-br---1.jsonl")
    except Exception as e: print(m, "missing", e); continue
    print(f"{m}: steps 1, 10, 20 (loss, grad norm) default {a[0]} {a[9]} {a[-1]} / bias rows {b[0]} {b[9]} {b[-1]}")
PY
echo "== 3. profiles"
for m in gpt2s gpt2s-br; do
  TGRT_PROFILE=1 timeout 60 $B/$m --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1; echo "$m rc $?"
  grep -E "^  tgrt_|step .* ms \(events" $L/profile-$m.log | head -14 | cut -c1-110
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
