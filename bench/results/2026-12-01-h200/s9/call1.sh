# call1 (ninth session): GPT-2 small against llm.c (-r 0 and -r 0 -ge 2, built by
# scripts/llmc-artifacts.sh) and torch.compile in one call, 3 alternating repetitions of 20
# steps; the bias sums before the weight-gradient GEMM (TGRT_BGRAD_FIRST=1, an experiment)
# at GPT-2 small and head dim 128; head dim 128 with the fused loss in one chunk (hd128-c1).
# Correctness of the switch: the per-step losses and gradient norms of the switch's runs
# equal the default's bit for bit (the same sums, another order of calls).
set -u
source scripts/gpu-lib.sh
gpu_unpack s9c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- TGRT_BGRAD_FIRST=1 llmc-r0 llmc-r0ge2 torch"'
echo "gpt2s rc $?"
timeout 240 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128 hd128-c1" "- TGRT_BGRAD_FIRST=1 torch"'
echo "hd128 rc $?"
python3 - $L <<'PY'
import json, sys, glob
o = sys.argv[1]
def rows(f): return [(r["loss"], r["grad_norm"]) for r in (json.loads(l) for l in open(f) if l.startswith("{")) if "grad_norm" in r]
for m in ("gpt2s", "hd128"):
    for r in (1, 2, 3):
        try: a, b = rows(f"{o}/tgc-{m}---{r}.jsonl"), rows(f"{o}/tgc-{m}-TGRT_BGRAD_FIRST-1-{r}.jsonl")
        except Exception as e: print(m, r, "missing", e); continue
        print(f"{m} rep {r}: {len(a)} steps; losses and norms bitwise equal with TGRT_BGRAD_FIRST=1: {a == b and len(a) > 0}")
    try: print(f"{m} control: the default's reps 1 and 2 bitwise equal: {rows(f'{o}/tgc-{m}---1.jsonl') == rows(f'{o}/tgc-{m}---2.jsonl')}")
    except Exception as e: print(m, "control missing", e)
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
