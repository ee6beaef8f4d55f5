#!/usr/bin/env bash
# ZeRO-0..3 and CPU optimizer offload on the 2-GPU machine (nvidia-h200-x2), one device call,
# builds nothing. After `scripts/gpu-artifacts.sh zero` here, carry runs/zero.tar.xz,
# runs/zero-big.txt and runs/data-gpu, then from the repo root there: scripts/gpu-zero.sh
#   GPT-2 small bf16-mixed, STEPS (20) steps each:
#   - 1 GPU x micro-batch 16, with and without offload=cpu: losses must be bit-identical
#     (the offloaded moments stream through the same AdamW kernel); ms/step; device memory
#     used against the plan (offload: 0.93 GiB less).
#   - `--gpus 2` x micro-batch 8 under ZeRO-0, 1, 2, 3 and ZeRO-3 + offload: losses against
#     ZeRO-0's (max relative difference over the steps: ZeRO-1 0, bit-identical in every
#     recorded run; ZeRO-2/3 2e-3, 10 x the worst recorded 1.26e-4, ZeRO-3 without prefetch,
#     bench/results/2026-11-26-h200x2/call57; docs/testing.md, Tolerances), ms/step, each
#     rank's plan against the device memory it used.
#   - a ZeRO-3 checkpoint (values and moments gathered over NCCL) resumed on 1 GPU.
#   - the ZeRO-3 executable started by a real torchrun (TORCHRUN=0 skips), against --gpus 2.
#   - PyTorch DDP and FSDP2 (torch.compile, bf16) at 2 GPUs x 8 (TORCH=0 skips).
#   - a fault (FAULT=0 skips): rank 1 stopped with SIGSTOP mid-run; rank 0's watchdog
#     (TGRT_COMM_TIMEOUT_S=15) must end it and the launcher rank 1, in bounded time.
#   - the largest model ZeRO-3 + offload fits per the plan (runs/zero-big.txt; 2 ranks x
#     micro-batch 1; BIG=0 skips; SMALL=0 runs it alone): 3 steps, plan against used, time per step; host memory.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-zero}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 # multicast off on the shared machines (device KINDS.md)
STEPS=${STEPS:-20}
# Every run gets at most its cap and never runs past BUDGET seconds (500) from the start, so
# the logs always come back within the device tool's limit.
T0=$(date +%s); BUDGET=${BUDGET:-500}
bounded() { # CAP cmd...: timeout min(CAP, what is left of BUDGET); 124 without running when < 10 s
  local cap=$1; shift
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -lt 10 ]; then echo "skipped (budget): $*" >&2; return 124; fi
  timeout "$cap" "$@"
}
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
free -g | head -2 | tee -a "$OUT/gpu.txt"
rm -rf /tmp/zero && tar -C /tmp -xJf runs/zero.tar.xz || { echo "no runs/zero.tar.xz"; exit 1; }
Z=/tmp/zero
args=(--data runs/data-gpu --steps "$STEPS" --eval-every 0 --eval-batches 1)
# SMALL=0 skips every GPT-2 small run (the largest model alone).
if [ "${SMALL:-1}" = 1 ]; then
for r in dp1 off1; do
  bounded 60 "$Z/zero-$r" "${args[@]}" --log "$OUT/$r.jsonl" > "$OUT/$r.log" 2>&1
  echo "1 GPU $r: rc $?"; grep -E "error" "$OUT/$r.log" | head -3
done
for r in z0 z3 z2 z3off z1 z0c z0c2; do
  # Which process holds how much on which GPU, every second (NVML's per-process figures: the
  # launcher, each rank's context, NCCL's buffers; $OUT/$r-apps.txt).
  ( while sleep 1; do date +%s; nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory \
      --format=csv,noheader; ps -o pid=,ppid=,args= -C "zero-$r" 2>/dev/null | cut -c1-80; done ) \
    > "$OUT/$r-apps.txt" 2>&1 &
  apps=$!
  exe="$Z/zero-$r"; [ "$r" = z0c2 ] && exe="$Z/zero-z0c" # z0c2: zero-z0c again (run-to-run)
  [ -x "$exe" ] || continue
  bounded 60 "$exe" --gpus 2 "${args[@]}" --log "$OUT/$r.jsonl" > "$OUT/$r.log" 2>&1
  echo "2 GPUs $r: rc $?"; grep -E "error" "$OUT/$r.log" | head -3
  kill $apps 2>/dev/null
done
# ZeRO-3: save at step 10 (gathered over NCCL), resume on 1 GPU for 3 more steps.
bounded 60 "$Z/zero-z3" --gpus 2 --data runs/data-gpu --steps 10 --eval-every 0 \
  --eval-batches 1 --save "$OUT/z3.ckpt" --log "$OUT/z3save.jsonl" > "$OUT/z3save.log" 2>&1
echo "ZeRO-3 save: rc $?"; grep -E "error|saved" "$OUT/z3save.log" | head -3
bounded 60 "$Z/zero-dp1" --data runs/data-gpu --steps 13 --eval-every 0 --eval-batches 1 \
  --resume "$OUT/z3.ckpt" --log "$OUT/z3res.jsonl" > "$OUT/z3res.log" 2>&1
echo "ZeRO-3 checkpoint resumed on 1 GPU: rc $?"; grep -E "error|warning" "$OUT/z3res.log" | head -3
rm -f "$OUT/z3.ckpt"
# Real torchrun (when installed; TORCHRUN=0 skips): ZeRO-3 ranks started by torchrun, against
# the `--gpus 2` run.
if [ "${TORCHRUN:-1}" = 1 ] && command -v torchrun > /dev/null; then
  # Through a wrapper: torchrun's argparse would take the executable's --log for its own
  # --log-dir / --logs-specs (an ambiguous prefix) even after the script's path.
  printf '#!/bin/sh\nexec %s "$@" --log %s\n' "$Z/zero-z3" "$OUT/z3torchrun.jsonl" > /tmp/z3run.sh
  chmod +x /tmp/z3run.sh
  bounded 90 torchrun --nproc_per_node 2 --master_port 29541 --no-python /tmp/z3run.sh \
    "${args[@]}" > "$OUT/z3torchrun.log" 2>&1
  echo "ZeRO-3 under torchrun: rc $?"; grep -E "error" "$OUT/z3torchrun.log" | head -3
fi
# PyTorch FSDP2 / DDP at the same shape (TORCH=0 skips): 8 sequences per GPU, compiled, bf16.
if [ "${TORCH:-1}" = 1 ]; then
  for m in ddp fsdp; do
    bounded 150 torchrun --nproc_per_node 2 --master_port 29533 bench/torch_gpt2_step.py \
      --batch 8 --bf16 --compile --$m > "$OUT/torch-$m.json" 2> "$OUT/torch-$m.err"
    echo "torch $m: rc $?"
  done
fi
# Fault: rank 1 stopped (SIGSTOP: alive, silent) mid-run; rank 0 waits in NCCL until its
# watchdog (TGRT_COMM_TIMEOUT_S=15) ends it, then the launcher ends rank 1 (SIGTERM, SIGKILL).
if [ "${FAULT:-1}" = 1 ]; then
  t0=$(date +%s)
  ( TGRT_COMM_TIMEOUT_S=15 bounded 90 "$Z/zero-z3" --gpus 2 --data runs/data-gpu --steps 100000 \
      --eval-every 0 --eval-batches 1 > "$OUT/fault.log" 2>&1; echo "fault run: rc $?" >> "$OUT/fault.log" ) &
  sleep 20
  for p in $(pgrep -f "zero/zero-z3"); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=1"; then kill -STOP "$p"; echo "stopped rank 1 (pid $p) at $(( $(date +%s) - t0 )) s"; fi
  done
  wait
  echo "fault run ended at $(( $(date +%s) - t0 )) s"; grep -E "error|rc" "$OUT/fault.log" | head -5
fi
fi # SMALL
# The largest model (BIG=0 skips): a val split of 2 batches (the final evaluation covers it whole), no test.
if [ "${BIG:-1}" = 1 ]; then
cat runs/zero-big.txt
mkdir -p /tmp/bigdata && ln -sf "$PWD/runs/data-gpu/train.npy" /tmp/bigdata/train.npy
python3 - <<'PY2'
import json, numpy as n
a = n.load('runs/data-gpu/val.npy')[:2 * 1024 + 1]
n.save('/tmp/bigdata/val.npy', a)
# meta.json's index must name the shortened split's token count (runtime/driver/TokenSplit.cpp
# refuses a shard whose length differs from it).
m = json.load(open('runs/data-gpu/meta.json'))
v = m['splits']['val']
v['tokens'] = len(a); v['shards'] = [{'file': 'val.npy', 'tokens': len(a)}]
v.pop('document_starts', None); v.pop('documents', None)
m['splits'].pop('test', None)  # no test split: the run only trains and evaluates val
json.dump(m, open('/tmp/bigdata/meta.json', 'w'), indent=1)
PY2
( while sleep 5; do nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits | tr '\n' ' '; free -g | awk '/Mem/{print "host used GiB", $3}'; done ) > "$OUT/big-mem.txt" 2>&1 &
mon=$!
t0=$(date +%s)
bounded 400 "$Z/zero-big" --gpus 2 --data /tmp/bigdata --steps 3 --eval-every 0 \
  --log "$OUT/big.jsonl" > "$OUT/big.log" 2>&1
echo "largest model: rc $? in $(( $(date +%s) - t0 )) s"; kill $mon 2>/dev/null
grep -E "error|tgrt: cuda memory|val loss|step" "$OUT/big.log" | cut -c1-300 | head -12
fi
python3 - "$OUT" <<'PY'
import json, os, re, statistics, sys
out = sys.argv[1]
def rows(n):
    try:
        return [r for r in (json.loads(l) for l in open(f"{out}/{n}.jsonl") if l.startswith("{"))
                if "ms" in r and "eval" not in r]
    except FileNotFoundError:
        return []
def med(r): return statistics.median(x["ms"] for x in r[2:]) if len(r) > 2 else float("nan")
def mem(n):
    try:
        ms = re.findall(r"plan (\d+) bytes.*?used (\d+) bytes", open(f"{out}/{n}.log").read())
        return "; ".join(f"{int(a)/2**30:.3f} / {int(b)/2**30:.3f}" for a, b in ms) or "-"
    except FileNotFoundError:
        return "-"
def cmp(a, b, tol):
    ra, rb = rows(a), rows(b)
    if not ra or not rb: return "missing"
    n = min(len(ra), len(rb))
    same = all(ra[i]["loss"] == rb[i]["loss"] for i in range(n))
    rel = max(abs(ra[i]["loss"] - rb[i]["loss"]) / abs(rb[i]["loss"]) for i in range(n))
    ok = rel <= tol and len(ra) == len(rb)
    return f"{len(ra)} vs {len(rb)} steps, max relative loss difference {rel:.2e}{' (bit-identical)' if same else ''}: {'PASS' if ok else 'FAIL'} (tolerance {tol:g})"
print("offload vs not (1 GPU x 16):", cmp("off1", "dp1", 0))
# ZeRO-1 runs ZeRO-0's reductions and only shards the moments: bit-identical (calls 50-58).
# ZeRO-2/3 reduce-scatter instead of all-reduce: worst recorded 1.26e-4 (call57), 8.5e-6 /
# 5.9e-6 (call58); x10, rounded up. Re-run 2026-11-28: 8.5e-6 at most (bench/results/
# 2026-11-28-h200x2/nccl3).
for z, tol in (("z1", 0), ("z2", 2e-3), ("z3", 2e-3), ("z3off", 2e-3)):
    print(f"{z} vs ZeRO-0 (2 GPUs x 8):", cmp(z, "z0", tol))
print("ZeRO-3 + offload vs ZeRO-3:", cmp("z3off", "z3", 0))
# cuDNN's SDPA backward (the default attention on CUDA) is not run-to-run deterministic: the
# same executable twice, and against the own kernels (no verdict: measured).
if rows("z0c") and rows("z0c2"):
    print("cuDNN attention, ZeRO-0, run twice:", cmp("z0c2", "z0c", float("inf")).replace(": PASS (tolerance inf)", ""))
    print("cuDNN attention vs own kernels, ZeRO-0:", cmp("z0c", "z0", float("inf")).replace(": PASS (tolerance inf)", ""))
if rows("z3torchrun"): print("ZeRO-3 under torchrun vs --gpus 2:", cmp("z3torchrun", "z3", 0))
res, sv = rows("z3res"), rows("z3save")
if res: print("ZeRO-3 checkpoint resumed on 1 GPU: steps " + ", ".join(f"{r['step']}: {r['loss']:.4f}" for r in res) + (f" (2-GPU run at step 10: {sv[-1]['loss']:.4f})" if sv else ""))
print("| run | ms/step (median) | loss first -> last | plan / used GiB (each rank) |\n|---|---|---|---|")
for n, label in (("dp1", "1 GPU x 16"), ("off1", "1 GPU x 16, offload=cpu"), ("z0", "2 GPUs x 8, ZeRO-0"),
                 ("z1", "2 GPUs x 8, ZeRO-1"), ("z2", "2 GPUs x 8, ZeRO-2"), ("z3", "2 GPUs x 8, ZeRO-3"),
                 ("z3off", "2 GPUs x 8, ZeRO-3 + offload"), ("z3torchrun", "2 GPUs x 8, ZeRO-3 under torchrun"), ("big", "largest (runs/zero-big.txt), 2 GPUs x 1, ZeRO-3 + offload")):
    r = rows(n)
    if r: print(f"| {label} | {med(r) if len(r) > 2 else statistics.median(x['ms'] for x in r):.1f} | {r[0]['loss']:.3f} -> {r[-1]['loss']:.3f} | {mem(n)} |")
    else: print(f"| {label} | failed | - | {mem(n)} |")
# NCCL's own memory per rank (runtime/cuda/Comm.cu prints it at the end of each rank) against
# the reserve in tgc's plans (passes/Passes.h kNcclReserveBytes; NCCL_RESERVE overrides).
reserve = int(os.environ.get("NCCL_RESERVE", "939524096"))
held = {}
for n in ("z0", "z1", "z2", "z3", "z3off", "z3torchrun", "big"):
    try:
        held[n] = [int(x) for x in re.findall(r"NCCL held (\d+) bytes", open(f"{out}/{n}.log").read())]
    except FileNotFoundError:
        pass
allheld = [x for v in held.values() for x in v]
if allheld:
    print("NCCL held per rank at the end (bytes): " + "; ".join(f"{n} {', '.join(map(str, v))}" for n, v in held.items() if v))
    print(f"NCCL held at most {max(allheld)} bytes per rank over {len(allheld)} ranks; plan's reserve {reserve}: {'PASS' if max(allheld) <= reserve else 'FAIL'}")
for n in ("torch-ddp", "torch-fsdp"):
    try:
        t = json.load(open(f"{out}/{n}.json"))
        print(f"| PyTorch {t['mode']} x {t['world']} GPUs, {t['batch']} per GPU | {t['ms_per_step']:.1f} | - | peak {t['peak_bytes']/2**30:.3f} |")
    except Exception as ex:
        print(f"| PyTorch {n} | failed: {ex} | - | - |")
PY
