#!/usr/bin/env bash
# Data parallel over NCCL on the 2-GPU machine (nvidia-h200-x2), one device call, builds
# nothing. After `scripts/gpu-artifacts.sh dp` here, carry runs/${PREFIX}-dp1.xz, runs/${PREFIX}-dp2.xz
# and runs/data-gpu, then from the repo root there: scripts/gpu-dp.sh
#   1 GPU x micro-batch 16 and `--gpus 2` x micro-batch 8 (the same global batch of 16 x 1024
#   tokens, the same data order) for STEPS (20) steps: the loss curves must agree to 9e-5
#   relative (10 x the worst recorded, 8.07e-6, call54; docs/testing.md, Tolerances), ms/step
#   and tokens/s of each, the scaling
#   efficiency (tokens/s per GPU on 2 GPUs / on 1), device memory used against the plan.
#   Then (unless ENVLAUNCH=0) the same 2-rank run started as torchrun starts it: two processes
#   of the executable with RANK=0/1 WORLD_SIZE=2 LOCAL_RANK=0/1 MASTER_ADDR=127.0.0.1
#   MASTER_PORT=29511 and the same arguments (rank 0 hands rank 1 the NCCL id over TCP,
#   runtime/driver/Rendezvous.h); its losses are compared with the --gpus 2 run's (max
#   relative difference printed; tolerance 0: the same ranks run the same program, and
#   every recorded run was bit-identical, calls 50-52).
#   Then (when runs/${PREFIX}-dp2z was carried) ZeRO-1: `--gpus 2` x 8 with the AdamW moments
#   sharded (training.distributed.zero=1): losses against ZeRO-0's (tolerance 0: the same
#   reductions, bit-identical in every recorded run), device memory against its
#   (smaller) plan; its checkpoint (moments gathered over NCCL) resumed on 1 GPU.
#   Then a fault: rank 1 is killed mid-run; the launcher must end rank 0 and exit non-zero
#   within the timeout instead of hanging.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-dp}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 # multicast off on the shared machines (device KINDS.md)
source "$(dirname "$0")/gpu-lib.sh"
STEPS=${STEPS:-20}
# PREFIX: the executables' name prefix (gpt2: GPT-2 small; gpu-artifacts.sh dp with
# DP_PREFIX / DP_BATCH / DP_SETS builds another model); TORCH_MODEL / TORCH_BATCH: the same
# model for bench/torch_gpt2_step.py (its flags) and its micro-batch per GPU (16).
PREFIX=${PREFIX:-gpt2}; TORCH_MODEL=${TORCH_MODEL:-}; TB=${TORCH_BATCH:-16}
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
dp1=$(unpack runs/${PREFIX}-dp1); dp2=$(unpack runs/${PREFIX}-dp2)
args=(--data runs/data-gpu --steps "$STEPS" --eval-every 0 --eval-batches 1)
"$dp1" "${args[@]}" --log "$OUT/dp1.jsonl" > "$OUT/dp1.log" 2>&1; echo "1 GPU: rc $?"
timeout 300 "$dp2" --gpus 2 "${args[@]}" --log "$OUT/dp2.jsonl" > "$OUT/dp2.log" 2>&1
echo "2 GPUs: rc $?"; grep -E "error|memory" "$OUT/dp2.log" | head -4
# The same with the bucket all-reduces on the compute stream (not overlapped with the backward).
TGRT_ALLREDUCE_OVERLAP=0 timeout 300 "$dp2" --gpus 2 "${args[@]}" --log "$OUT/dp2seq.jsonl" \
  > "$OUT/dp2seq.log" 2>&1
echo "2 GPUs, TGRT_ALLREDUCE_OVERLAP=0: rc $?"
# Launcher environment (torchrun-style): rank 1 first (it retries until rank 0 listens).
if [ "${ENVLAUNCH:-1}" != 0 ]; then
  envpids=()
  for r in 1 0; do
    env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 \
      TGRT_RENDEZVOUS_TIMEOUT_S=60 timeout 300 "$dp2" "${args[@]}" --log "$OUT/dp2env.jsonl" \
      > "$OUT/dp2env-rank$r.log" 2>&1 &
    envpids+=($!)
  done
  wait "${envpids[0]}"; rc1=$?; wait "${envpids[1]}"; rc0=$?
  echo "2 GPUs (RANK/WORLD_SIZE environment): rank 0 rc $rc0, rank 1 rc $rc1"
  grep -hE "error|rendezvous" "$OUT/dp2env-rank0.log" "$OUT/dp2env-rank1.log" | head -4
fi
# Weak scaling (when runs/${PREFIX}-dp2w was carried): 2 GPUs x micro-batch 16 each (global 32),
# tokens/s per GPU against 1 GPU x 16; overlapped and not.
dp2w=$(unpack runs/${PREFIX}-dp2w)
if [ -n "$dp2w" ]; then
  timeout 300 "$dp2w" --gpus 2 "${args[@]}" --log "$OUT/dp2w.jsonl" > "$OUT/dp2w.log" 2>&1
  echo "2 GPUs x 16: rc $?"
  TGRT_ALLREDUCE_OVERLAP=0 timeout 300 "$dp2w" --gpus 2 "${args[@]}" --log "$OUT/dp2wseq.jsonl" \
    > "$OUT/dp2wseq.log" 2>&1
  echo "2 GPUs x 16, TGRT_ALLREDUCE_OVERLAP=0: rc $?"
fi
# PyTorch in the same call (TORCH=0 skips): torch.compile bf16 on 1 GPU x 16, and on 2 GPUs x 16
# each with DDP and with FSDP2 (torchrun; bench/torch_gpt2_step.py).
if [ "${TORCH:-1}" = 1 ]; then
  python3 bench/torch_gpt2_step.py --batch "$TB" $TORCH_MODEL --bf16 --compile > "$OUT/torch-1gpu.json" 2> "$OUT/torch-1gpu.err"
  for m in ddp fsdp; do
    timeout 400 torchrun --nproc_per_node 2 --master_port 29533 bench/torch_gpt2_step.py \
      --batch "$TB" $TORCH_MODEL --bf16 --compile --$m > "$OUT/torch-$m.json" 2> "$OUT/torch-$m.err"
    echo "torch $m: rc $?"
  done
fi
# ZeRO-1 (moments sharded): the same run, a checkpoint gathered over NCCL, resumed on 1 GPU.
dp2z=$(unpack runs/${PREFIX}-dp2z)
if [ -n "$dp2z" ]; then
  timeout 300 "$dp2z" --gpus 2 "${args[@]}" --log "$OUT/dp2z.jsonl" --save "$OUT/z.ckpt" \
    > "$OUT/dp2z.log" 2>&1
  echo "2 GPUs ZeRO-1: rc $?"; grep -E "error|memory|saved" "$OUT/dp2z.log" | head -4
  "$dp1" --data runs/data-gpu --steps $((STEPS + 3)) --eval-every 0 --eval-batches 1 \
    --resume "$OUT/z.ckpt" --log "$OUT/dp1res.jsonl" > "$OUT/dp1res.log" 2>&1
  echo "ZeRO-1 checkpoint resumed on 1 GPU: rc $?"; grep -E "error|warning" "$OUT/dp1res.log" | head -3
  rm -f "$OUT/z.ckpt"
fi
# Fault: kill rank 1 after a few seconds; the launcher must end rank 0 and fail.
( timeout 120 "$dp2" --gpus 2 --data runs/data-gpu --steps 100000 --eval-every 0 \
    --eval-batches 1 > "$OUT/fault.log" 2>&1; echo "fault run: rc $?" >> "$OUT/fault.log" ) &
sleep 25
for p in $(pgrep -f "${PREFIX}-dp2"); do
  if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=1"; then kill -9 "$p"; fi
done
wait
tail -3 "$OUT/fault.log"
python3 - "$OUT" "$TB" <<'PY'
import json, os, statistics, sys, re
out = sys.argv[1]
B = int(sys.argv[2]); H = B // 2
def rows(n):
    try:
        return [r for r in (json.loads(l) for l in open(f"{out}/{n}.jsonl") if l.startswith("{"))
                if "ms" in r and "eval" not in r]
    except FileNotFoundError:
        return []
a, b = rows("dp1"), rows("dp2")
def med(r, k): return statistics.median(x[k] for x in r[2:]) if len(r) > 2 else float("nan")
if a and b:
    n = min(len(a), len(b))
    rel = max(abs(a[i]["loss"] - b[i]["loss"]) / abs(a[i]["loss"]) for i in range(n))
    ok = rel <= 9e-5 and len(a) == len(b)  # 10 x 8.07e-6 (call54), rounded up
    print(f"loss 1 GPU {a[0]['loss']:.4f} -> {a[n-1]['loss']:.4f}; 2 GPUs {b[0]['loss']:.4f} -> {b[n-1]['loss']:.4f}; max relative difference over {n} steps {rel:.2e}: {'PASS' if ok else 'FAIL'} (tolerance 9e-5)")
e = rows("dp2env")
if b and e:
    n = min(len(b), len(e))
    rel = max(abs(e[i]["loss"] - b[i]["loss"]) / abs(b[i]["loss"]) for i in range(n))
    same = all(e[i]["loss"] == b[i]["loss"] for i in range(n))
    ok = rel <= 0 and len(e) == len(b)
    print(f"launcher environment vs --gpus 2: {len(e)} and {len(b)} steps; max relative loss difference over {n} steps {rel:.2e}{' (bit-identical)' if same else ''}: {'PASS' if ok else 'FAIL'} (tolerance 0)")
elif b and os.path.exists(f"{out}/dp2env-rank0.log"):
    print("launcher environment vs --gpus 2: FAIL (no dp2env.jsonl steps; see dp2env-rank*.log)")
z = rows("dp2z")
if b and z:
    n = min(len(b), len(z))
    same = all(z[i]["loss"] == b[i]["loss"] for i in range(n))
    rel = max(abs(z[i]["loss"] - b[i]["loss"]) / abs(b[i]["loss"]) for i in range(n))
    print(f"ZeRO-1 vs ZeRO-0 (2 GPUs): {len(z)} and {len(b)} steps; max relative loss difference {rel:.2e}{' (bit-identical)' if same else ''}: {'PASS' if rel <= 0 and len(z) == len(b) else 'FAIL'} (tolerance 0)")
res = rows("dp1res")
if res: print("ZeRO-1 checkpoint resumed on 1 GPU: steps " + ", ".join(f"{r['step']}: {r['loss']:.4f}" for r in res) + (f" (2-GPU run's last: {z[-1]['loss']:.4f})" if z else ""))
def mem(n):
    try:
        m = re.search(r"plan (\d+) bytes.*used (\d+) bytes", open(f"{out}/{n}.log").read())
        return f"{int(m[1])/2**30:.3f} / {int(m[2])/2**30:.3f}" if m else "-"
    except FileNotFoundError:
        return "-"
print("| run | ms/step | tokens/s | tokens/s per GPU | rank 0 plan / used GiB |\n|---|---|---|---|---|")
for name, r, g, log in ((f"1 GPU x {B}", a, 1, "dp1"), (f"2 GPUs x {H} (--gpus 2)", b, 2, "dp2"),
                        (f"2 GPUs x {H}, all-reduce not overlapped", rows("dp2seq"), 2, "dp2seq"),
                        (f"2 GPUs x {H} (RANK/WORLD_SIZE env)", e, 2, "dp2env-rank0"),
                        (f"2 GPUs x {H}, ZeRO-1", z, 2, "dp2z"),
                        (f"2 GPUs x {B} (weak scaling)", rows("dp2w"), 2, "dp2w"),
                        (f"2 GPUs x {B}, all-reduce not overlapped", rows("dp2wseq"), 2, "dp2wseq")):
    if r: print(f"| {name} | {med(r, 'ms'):.1f} | {med(r, 'tokens_per_s'):.0f} | {med(r, 'tokens_per_s') / g:.0f} | {mem(log)} |")
for n in ("torch-1gpu", "torch-ddp", "torch-fsdp"):
    try:
        t = json.load(open(f"{out}/{n}.json"))
        per = t["tokens_per_s"]
        print(f"| PyTorch {t['mode']} x {t['world']} GPU(s), {t['batch']} per GPU | {t['ms_per_step']:.1f} | {per * t['world']:.0f} | {per:.0f} | peak {t['peak_bytes']/2**30:.3f} |")
    except Exception as ex:
        print(f"| PyTorch {n} | failed: {ex} | - | - | - |")
if a and b: print(f"scaling efficiency, same global batch (tokens/s per GPU, 2 x {H} vs 1 x {B}): {med(b, 'tokens_per_s') / 2 / med(a, 'tokens_per_s'):.2f}")
for n in ("dp2w", "dp2wseq"):
    w = rows(n)
    if a and w: print(f"scaling efficiency, same micro-batch ({n}: tokens/s per GPU, 2 x {B} vs 1 x {B}): {med(w, 'tokens_per_s') / 2 / med(a, 'tokens_per_s'):.2f}")
PY
