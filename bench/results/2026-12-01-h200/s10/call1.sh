# call1 (tenth session): f32 -> bf16 / f16 rounding by the hardware's paired cvt on packs
# without NaN (runtime/cuda/Dtype.cuh pack16, bf16FromFloat), the layer-norm backward's low
# copy rounded once. The same bits by construction: 1. the whole quick kernel check (cast rows
# bit for bit over every special and NaN payload); 2. kernel timings of the new and the base
# runtime (the build before, carried as tgrt-cuda-check-base), 2 alternating rounds; 3. steps
# of the new and base executables (gpt2s, hd128), 3 alternating repetitions, their per-step
# losses and gradient norms compared bit for bit; 4. per-call profiles of both.
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "cast f32 -> (bf16|f16)|layer_norm_bwd_acc_bgrad|cross_entropy_fwd_bwd" $L/check.log | head -12 | cut -c1-150
echo "== 2. kernel timings"
for r in 1 2; do for v in base new; do
  exe=$B/tgrt-cuda-check; [ $v = base ] && exe=$B/tgrt-cuda-check-base
  timeout 120 $exe --bench-kernels > $L/bench-$v-$r.log 2>&1; echo "$v $r rc $?"
done; done
python3 - $L <<'PY'
import re, sys, statistics, collections
o = sys.argv[1]; t = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("base", "new"):
    for r in (1, 2):
        try: lines = open(f"{o}/bench-{v}-{r}.log").read().splitlines()
        except Exception: continue
        for l in lines:
            m = re.match(r"(.{52}) (\S+)\s+([0-9.]+) ms", l)
            if m: t[(m[1].strip(), m[2])][v].append(float(m[3]))
print("\n| kernel | dtype | base ms (2 rounds) | new ms | new / base |\n|---|---|---|---|---|")
for (k, dt), d in t.items():
    if dt == "f32" or not d.get("new"): continue
    b, n = d.get("base", []), d["new"]
    ratio = f"{min(n) / min(b):.3f}" if b else "-"
    print(f"| {k} | {dt} | {', '.join(f'{x:.4f}' for x in b) or '-'} | {', '.join(f'{x:.4f}' for x in n)} | {ratio} |")
PY
echo "== 3. steps"
export B L
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s gpt2s-base hd128 hd128-base" "-"'
echo "steps rc $?"
python3 - $L <<'PY'
import json, sys
o = sys.argv[1]
def rows(f): return [(r["loss"], r["grad_norm"]) for r in (json.loads(l) for l in open(f) if l.startswith("{")) if "grad_norm" in r]
for m in ("gpt2s", "hd128"):
    for r in (1, 2, 3):
        try: a, b = rows(f"{o}/tgc-{m}---{r}.jsonl"), rows(f"{o}/tgc-{m}-base---{r}.jsonl")
        except Exception as e: print(m, r, "missing", e); continue
        print(f"{m} rep {r}: {len(a)} steps; losses and norms bitwise equal to the base runtime's: {a == b and len(a) > 0}")
PY
echo "== 4. profiles"
for m in gpt2s gpt2s-base hd128 hd128-base; do
  case $m in gpt2*) V=50304 ;; *) V=32000 ;; esac
  TGRT_PROFILE=1 timeout 60 $B/$m --data $B/data-$V --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1; echo "$m rc $?"
  grep -E "tgrt_linear_cross_entropy|tgrt_layer_norm_bwd_acc_bgrad |tgrt_layer_norm_fwd |step .* ms \(events" $L/profile-$m.log | grep -v "layers\.\*" | head -6 | cut -c1-110
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
