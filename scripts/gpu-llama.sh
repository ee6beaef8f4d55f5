#!/usr/bin/env bash
# The Llama family on the GPU machine (issue 21), one device call; builds nothing. Run from
# the repo root after `scripts/gpu-llama-artifacts.sh` built (here) and the call carried runs/llama:
#   runs/llama/llama.tar.xz   stripped CUDA executables: smollm2 (examples/smollm2-135m.json,
#                             micro-batch 8), llama1b (examples/llama3.2-1b.json, 4), tiny
#                             (examples/tiny-llama.json fp32 flash) and tiny-cpu (the same on
#                             the CPU backend), and tgrt-cuda-check
# 1. tgrt-cuda-check --quick (every kernel, the family's included) against the CPU backend.
# 2. tiny-llama on CUDA vs the CPU backend, fp32, same seed and data: losses side by side.
# 3. For each example: REPS alternating repetitions of tgc (STEPS steps) and torch.compile
#    (bench/torch_llama_step.py, same shape, bf16 autocast, SDPA with GQA, fused AdamW).
# Synthetic uniform token data (uint32 .npy) of each vocab: timing only.
# A table last: median and min-max over the repetitions, plan vs peak memory.
#   STEPS (20)  REPS (3)  ONLY ("smollm2 llama1b")  VARIANTS  PROFILES  CUDNN (0: 1 runs
#   tgrt-cuda-check --cudnn)  FULL_CHECK (1)  TORCH (1; 0: no torch.compile runs)
#   BENCH_ENVS (kernel timings per runtime setting, e.g. "TGRT_LN_BWD_RELOAD=0 A=1,B=2")
#   CALIBRATE (0; 1: tgc-calibrate-cuda of the artifacts' CALIBRATE=1 writes $OUT/calibration.json)
set -u -o pipefail
RESULT=${OUT:-/tmp/gpu-llama}; mkdir -p "$RESULT"
# Logs in a scratch folder; one tarball of them comes back in $OUT (the device tool returns
# at most 8 files).
OUT=/tmp/gpu-llama-logs; rm -rf "$OUT"; mkdir -p "$OUT"
STEPS=${STEPS:-20}; REPS=${REPS:-3}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
B=/tmp/llama; rm -rf $B; mkdir -p $B
tar -C $B -xJf runs/llama/llama.tar.xz || { echo "no runs/llama/llama.tar.xz"; exit 1; }
B=$B/llama

echo "== 1. kernel check (the family's cases; the whole --quick check runs last)"
TGRT_CUDA_SYNC=1 timeout 120 $B/tgrt-cuda-check --quick --no-bench --llama > "$OUT/check-llama.log" 2>&1
echo "rc $?"; grep -E "FAIL|passed" "$OUT/check-llama.log" | tail -8

if [ "${CUDNN:-0}" = 1 ]; then
  echo "== 1b. cuDNN attention (TGRT_ATTN=cudnn): cases vs the CPU backend, timings beside the own kernels"
  timeout ${CUDNN_S:-240} $B/tgrt-cuda-check --cudnn > "$OUT/check-cudnn.log" 2>&1
  echo "rc $?"; grep -E "FAIL|refus|cudnn: .*passed" "$OUT/check-cudnn.log" | head -12
  sed -n "/attention: own kernels/,\$p" "$OUT/check-cudnn.log" | head -24
  echo "== 1c. PyTorch SDPA by the same harness (bench/torch_sdpa_time.py: fwd and bwd each event-timed, median of 20)"
  timeout 240 python3 bench/torch_sdpa_time.py --json "$OUT/sdpa.json" > "$OUT/sdpa.log" 2>&1
  echo "rc $?"; sed -n '/^PyTorch/,$p' "$OUT/sdpa.log"
fi

if [ -n "${BENCH_ENVS:-}" ]; then
  # BENCH_ENVS="A=1 A=2,B=3 ...": the memory-bound kernel and GEMM timings at GPT-2 small's
  # shapes (tgrt-cuda-check --bench-kernels) once per setting (commas join variables).
  echo "== 1d. kernel timings per runtime setting (bf16 rows of layer norm, bias grad, GEMMs)"
  for e in $BENCH_ENVS; do
    env ${e//,/ } timeout 120 $B/tgrt-cuda-check --bench-kernels > "$OUT/bench-$e.log" 2>&1
    echo "-- $e (rc $?)"
    grep -E "bf16" "$OUT/bench-$e.log" | grep -E "${BENCH_GREP:-layer_norm_bwd|bias_grad|matmul}" | cut -c1-90
  done
fi

source scripts/gpu-lib.sh  # mkdata
mkdata $B/data-2048 2048 400000
mkdata $B/data-49152 49152 4000000
mkdata $B/data-128256 128256 4000000
case " ${ONLY:-} " in *" gpt2"*|*" hd128 "*) mkdata $B/data-50304 50304 4000000; mkdata $B/data-32000 32000 4000000 ;; esac

echo "== 2. tiny-llama fp32: CUDA vs CPU"
for be in tiny tiny-cpu; do
  $B/$be --data $B/data-2048 --steps 10 --log "$OUT/$be.jsonl" > "$OUT/$be.log" 2>&1
  echo "$be rc $?"; grep -E "step 10/|val loss|error" "$OUT/$be.log" | tail -2
done
python3 - "$OUT" <<'PY'
import json, sys
o = sys.argv[1]
rd = lambda f: [json.loads(l) for l in open(f"{o}/{f}.jsonl") if '"loss"' in l and '"step"' in l]
a, b = rd("tiny"), rd("tiny-cpu")
err = max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(a, b)) if a and b else float("nan")
print(f"tiny-llama fp32 flash: {len(a)} steps, max relative loss difference CUDA vs CPU {err:.2e}")
PY

echo "== 2b. the final evaluation over every window on CUDA (micro-batches 2 and 5) vs the CPU"
mkdata $B/data-512 512 20011
if [ -x $B/evw2-cpu ]; then
  $B/evw2-cpu --data $B/data-512 --steps 3 --save $B/evw.st --quiet > "$OUT/evw-train.log" 2>&1
  for e in evw2-cpu evw2 evw5 evwi2-cpu evwi5; do
    $B/$e --data $B/data-512 --steps 3 --resume $B/evw.st --log "$OUT/$e.jsonl" --quiet > "$OUT/$e.log" 2>&1
    echo "$e rc $?"
  done
  python3 test/e2e/eval_windows.py $B/data-512 16 "$OUT/evw2-cpu.jsonl:2" "$OUT/evw2.jsonl:2" \
    "$OUT/evw5.jsonl:5" 2>&1 | tail -3
  python3 test/e2e/eval_windows.py $B/data-512 16 "$OUT/evwi2-cpu.jsonl:2" "$OUT/evwi5.jsonl:5" 2>&1 | tail -3
fi

if [ -x $B/shards-r1 ]; then
  echo "== 2c. sharded token data and epochs with a CUDA trainer (test/e2e/data_shards.py)"
  rm -rf /tmp/shards-work && mkdir -p /tmp/shards-work
  timeout 240 python3 test/e2e/data_shards.py --work /tmp/shards-work --exe1 $B/shards-r1 \
    --exe2 $B/shards-r2-cpu > "$OUT/data-shards.log" 2>&1
  echo "rc $?"; grep -E "data-shards: (PASS|FAIL)|FAIL" "$OUT/data-shards.log" | head -5
fi

echo "== 3. step time: tgc variants vs torch.compile, $REPS alternating repetitions"
# A variant is an executable of runs/llama (smollm2, llama1b, smollm2-sel = checkpointing
# selective, ...), optionally @VALUE for TGRT_ATTN=VALUE (llama1b@cudnn) or @VAR=VALUE[,VAR=VALUE]
# (llama1b@TGRT_ATTN_MINB=0).
VARIANTS=${VARIANTS:-"smollm2 llama1b"}
# GPT-2 shapes (gpt2s gpt2m gpt2l hd128 in ONLY): torch.compile is bench/torch_gpt2_step.py
# at the same shape (bf16 autocast, flash SDPA, fused AdamW).
for model in ${ONLY:-smollm2 llama1b}; do
  tref=(python3 bench/torch_llama_step.py)
  case $model in
    smollm2) spec=examples/smollm2-135m.json; batch=8; data=$B/data-49152 ;;
    llama1b) spec=examples/llama3.2-1b.json; batch=4; data=$B/data-128256 ;;
    gpt2s) data=$B/data-50304; tref=(python3 bench/torch_gpt2_step.py --compile --bf16 --batch 16) ;;
    gpt2m) data=$B/data-50304; tref=(python3 bench/torch_gpt2_step.py --compile --bf16 --batch 8
             --layers 24 --d-model 1024 --heads 16 --d-ff 4096) ;;
    gpt2l) data=$B/data-50304; tref=(python3 bench/torch_gpt2_step.py --compile --bf16 --batch 8
             --layers 36 --d-model 1280 --heads 20 --d-ff 5120) ;;
    hd128) data=$B/data-32000; tref=(python3 bench/torch_gpt2_step.py --compile --bf16 --batch 8
             --layers 8 --d-model 1024 --heads 8 --d-ff 4096 --vocab 32000 --context 2048) ;;
    none) continue ;;  # ONLY=none: no step times
    *) echo "unknown model $model"; continue ;;
  esac
  case $model in smollm2|llama1b) tref+=(--spec $spec --batch $batch) ;; esac
  for r in $(seq 1 "$REPS"); do
    for v in $VARIANTS; do
      exe=${v%@*}; case $exe in $model|$model-*) ;; *) continue ;; esac
      [ -x "$B/$exe" ] || { echo "(no $exe)"; continue; }
      envs=(); [ "$v" != "$exe" ] && { e=${v#*@}; case $e in *=*) envs=(${e//,/ }) ;; *) envs=(TGRT_ATTN=$e) ;; esac; }
      env "${envs[@]}" $B/$exe --data $data --steps "$STEPS" --eval-every 0 --eval-batches 1 \
        --log "$OUT/tgc-$v-$r.jsonl" > "$OUT/tgc-$v-$r.log" 2>&1
      echo "tgc $v rep $r rc $?: $(grep -E 'plan .*used|error|cudnn' "$OUT/tgc-$v-$r.log" | head -2 | cut -c1-160 | tr '\n' ' ')"
    done
    if [ "${TORCH:-1}" = 1 ]; then  # TORCH=0: no torch.compile runs (an A/B of tgc variants)
      "${tref[@]}" --steps "$STEPS" > "$OUT/torch-$model-$r.json" 2> "$OUT/torch-$model-$r.err"
      echo "torch.compile $model rep $r rc $?: $(tail -c 200 "$OUT/torch-$model-$r.json")"
    fi
    # llm.c (GPT-2 small only; carried runs/llmc, scripts/llmc-artifacts.sh, docs/llmc.md):
    # LLMC="r0 r1 r0ge2": -r 0 (no recompute, tgc's default), -r 1 (llm.c's default: GELU
    # recomputed), -r 0 -ge 2 (its cuBLASLt GELU fusion forward and backward).
    if [ "$model" = gpt2s ] && [ -n "${LLMC:-}" ] && [ -x runs/llmc/train_gpt2cu ]; then
      [ -f /tmp/llmc-data/llmc_train.bin ] || python3 bench/llmc_data.py /tmp/llmc-data > "$OUT/llmc-data.log" 2>&1
      for lv in $LLMC; do
        case $lv in r0) lf=(-r 0) ;; r1) lf=(-r 1) ;; r0ge2) lf=(-r 0 -ge 2) ;; *) continue ;; esac
        LLMC_LOG_DIR="$OUT/llmc" bash bench/llmc_step.sh runs/llmc/train_gpt2cu /tmp/llmc-data "$STEPS" "${lf[@]}" \
          > "$OUT/llmc-$lv-$r.out" 2>&1
        tail -1 "$OUT/llmc-$lv-$r.out" > "$OUT/llmc-$lv-$r.json"
        echo "llm.c $lv rep $r: $(tail -c 240 "$OUT/llmc-$lv-$r.json")"
      done
    fi
  done
done
for p in ${PROFILES:-llama1b}; do
  [ "$p" = none ] && continue  # PROFILES=none: no profile
  exe=${p%@*}; envs=(); [ "$p" != "$exe" ] && { e=${p#*@}; case $e in *=*) envs=($e) ;; *) envs=(TGRT_ATTN=$e) ;; esac; }
  case $exe in smollm2*) data=$B/data-49152 ;; gpt2*) data=$B/data-50304 ;;
    hd128*) data=$B/data-32000 ;; *) data=$B/data-128256 ;; esac
  echo "== 4. where the time goes: $p, 8 steps, TGRT_PROFILE=1"
  env "${envs[@]}" TGRT_PROFILE=1 $B/$exe --data $data --steps 8 --eval-every 0 --eval-batches 1 \
    > "$OUT/profile-$p.log" 2>&1
  grep -A${PROFILE_LINES:-22} "tgrt profile" "$OUT/profile-$p.log" | cut -c1-120
done
if [ "${CALIBRATE:-0}" = 1 ] && [ -x $B/tgc-calibrate-cuda ]; then
  echo "== 4b. the cost model's calibration table (tgc-calibrate-cuda, full grid)"
  start=$(date +%s)
  timeout ${CALIB_S:-300} $B/tgc-calibrate-cuda --out "$RESULT/calibration.json" > "$OUT/calibrate.log" 2>&1
  echo "rc $? in $(( $(date +%s) - start )) s"; tail -3 "$OUT/calibrate.log"
fi
if [ "${FULL_CHECK:-1}" = 1 ]; then
  echo "== 5. the whole quick kernel check"
  TGRT_CUDA_SYNC=1 timeout ${CHECK_S:-150} $B/tgrt-cuda-check --quick --no-bench > "$OUT/check.log" 2>&1
  echo "rc $?"; grep -E "FAIL|passed" "$OUT/check.log" | tail -6
fi
tar -C "$OUT" -czf "$RESULT/logs.tgz" . 2>/dev/null
python3 - "$OUT" <<'PY'
import glob, json, re, statistics, sys
o = sys.argv[1]
print("\n| model | system | ms/step median (min-max over reps) | memory GiB |")
print("|---|---|---|---|")
names = sorted({f.split("/")[-1][4:].rsplit("-", 1)[0] for f in glob.glob(f"{o}/tgc-*.jsonl")})
for name in ("smollm2", "llama1b", "gpt2s", "gpt2m", "gpt2l", "hd128"):
  for variant in [n for n in names if n == name or n.startswith(name + "-") or n.startswith(name + "@")]:
    tg, tgmem = [], ""
    for f in sorted(glob.glob(f"{o}/tgc-{variant}-[0-9]*.jsonl")):
        rows = [json.loads(l) for l in open(f) if '"ms"' in l and '"eval"' not in l]
        if len(rows) > 3: tg.append(statistics.median(r["ms"] for r in rows[3:]))
        m = re.search(r"plan (\d+) bytes.*used (\d+) bytes", open(f[:-6] + ".log").read())
        if m: tgmem = f"plan {int(m.group(1))/2**30:.2f}, used {int(m.group(2))/2**30:.2f}"
    fmt = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-"
    print(f"| {name} | tgc {variant} | {fmt(tg)} | {tgmem} |")
  th, thmem = [], ""
  for f in sorted(glob.glob(f"{o}/torch-{name}-*.json")):
      try: j = json.loads(open(f).read().strip().splitlines()[-1])
      except Exception: continue
      th.append(j.get("ms", j.get("ms_per_step"))); thmem = f"peak allocated {j['peak_bytes']/2**30:.2f}"
  fmt = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-"
  print(f"| {name} | torch.compile | {fmt(th)} | {thmem} |")
  for lv in sorted({f.split("/")[-1].split("-")[1] for f in glob.glob(f"{o}/llmc-*-*.json")} if name == "gpt2s" else []):
    lm, lmem = [], ""
    for f in sorted(glob.glob(f"{o}/llmc-{lv}-*.json")):
      try: j = json.loads(open(f).read().strip())
      except Exception: continue
      if j.get("ms"): lm.append(j["ms"])
      if j.get("llmc_alloc_mib"): lmem = f"llm.c allocations {j['llmc_alloc_mib']/1024:.2f}, process {j.get('peak_process_mib', 0)/1024:.2f}"
    print(f"| {name} | llm.c {lv} | {fmt(lm)} | {lmem} |")
PY
