#!/usr/bin/env bash
# Times llm.c's train_gpt2cu (built here by scripts/llmc-artifacts.sh; see docs/llmc.md) on the
# GPU machine. Builds nothing; needs bash, python3 (stdlib only), nvidia-smi.
#   bench/llmc_step.sh EXE DATA_DIR STEPS [extra llm.c flags]
#     EXE       runs/llmc/train_gpt2cu
#     DATA_DIR  holds llmc_train.bin and llmc_val.bin (bench/llmc_data.py DATA_DIR)
#     STEPS     optimizer steps (> 3: the first 3 are warm-up and left out of the statistics)
#     extra     appended after the flags below, so they override them (llm.c's parser takes
#               the last value of a flag), e.g. `-r 0` (no recompute) or `-ge 2`
#   LLMC_PARSE_ONLY=LOG bench/llmc_step.sh   parses an existing llm.c log only (no GPU)
# Flags passed (llm.c train_gpt2.cu's parser, commit in runs/llmc/COMMIT.txt):
#   -i DATA/llmc_train.bin -j DATA/llmc_val.bin   train / val token files
#   -e d12          GPT-2 small (12 layers, 768 channels, 12 heads, vocab 50257 padded to 50304),
#                   random init (seed 42), no checkpoint file
#   -b 16 -t 1024   micro-batch B, context T (LLMC_B / LLMC_T override)
#   -d 16384        total batch = B*T tokens: one micro-step per step, no gradient accumulation
#   -x STEPS        max_steps
#   -v 1000000 -m 0 validation: llm.c still enters its val block at step 0 and at the last
#                   step (`step % v == 0 || last_step`; -v 0 would divide by zero) but runs 0
#                   batches (prints `val loss nan`); outside the timed region anyway
#   -s 0            no sampling (generation)
#   -h 0            no HellaSwag;  -n 0 and no -o: no checkpoints, no log dir
#   llm.c defaults kept: bf16 (build), -r 1 (recompute GELU in the backward), -ge 0 (gelu
#   fusion off: train_gpt2.cu maps its -1 default to 0), -w 1 (fp32 master weights), -z 0,
#   -f 1 (TF32 for the few fp32 matmuls), -l 3e-4 with -c 0 (no weight decay), cosine LR
#   with -u 0, gradient clipping at 1.0, AdamW (0.9, 0.95, 1e-8)
# llm.c prints per step (train_gpt2.cu):
#   step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.1f%% bf16 MFU | %.0f tok/s
# the ms is llm.c's cudaEvent time of one step: between its start and end events sit the
# micro-batch fetch (a host read of B*T+1 tokens), forward (with the H2D copy of the tokens),
# backward, the gradient norm and clipping, and AdamW; then it synchronizes. The first
# step(s) include cuBLAS / cuDNN set-up (cuDNN graphs are built on first use), hence 4..STEPS.
# Prints llm.c's output tail, then LAST one JSON line:
#   {"ms": median ms over steps 4..STEPS, "ms_per_step": same, "ms_min", "ms_max", "ms_mean",
#    "steps": steps in the median, "tokens_per_s", "peak_process_mib", "process_mem_source",
#    "peak_gpu_used_mib", "gpu_baseline_mib", "llmc_alloc_mib", "llmc_device_used_mib",
#    "llmc_avg_ms", "loss_last", "device", "batch", "context", "grad_accum", "flags",
#    "commit", "rc", "log"}
# peak_process_mib: the max over nvidia-smi samples (every 0.2 s) of the memory nvidia-smi
# --query-compute-apps lists for llm.c's pid: the whole process (CUDA context, cuBLAS / cuDNN
# workspaces, llm.c's allocations). In a container nvidia-smi may list host pids: then
# process_mem_source is "all-apps" (the sum over all listed processes per sample, right on a
# GPU used only by this run) or null when it lists none. peak_gpu_used_mib is the device's
# memory.used peak (minus nothing; gpu_baseline_mib is the value before the start).
# From llm.c's own log: llmc_alloc_mib = the sum of its "allocat(ed|ing) N MiB for ..." lines
# (parameters, gradients, AdamW m and v, master weights, activations: its cudaMallocs at
# start-up, without the cuBLASLt 32 MiB / cuDNN workspaces and the CUDA context: the figure
# nearest tgc's plan), llmc_device_used_mib = its "device memory usage" line (cudaMemGetInfo
# after those allocations, device-wide, context included, before the first step).
# LLMC_POLL=0 turns the sampling off; LLMC_LOG_DIR (default $OUT/llmc, else /tmp/llmc) keeps
# the logs; LLMC_TIMEOUT (default 900 s) kills a hung run.
set -uo pipefail
PY=${PYTHON:-python3}

parse() { # LOG APPS GPU PID BASELINE FLAGS RC COMMIT
  "$PY" - "$@" <<'PY'
import json, re, statistics, sys
log, apps, gpu, pid, baseline, flags, rc, commit = sys.argv[1:9]
step_re = re.compile(r"^step\s+(\d+)/(\d+) \| loss (\S+) .*\| ([0-9.]+) ms \| (-?[0-9.]+)% bf16 MFU \| ([0-9.]+) tok/s")
steps, loss_last, device, avg, B, T, accum, alloc, dev_used = {}, None, None, None, None, None, None, None, None
for line in open(log, errors="replace"):
    m = step_re.match(line)
    if m:
        steps[int(m.group(1))] = float(m.group(4))
        loss_last = m.group(3)
        continue
    m = re.match(r"^\| device\s+\| (.*?)\s*\|$", line)
    if m: device = m.group(1)
    m = re.match(r"^total average iteration time: ([0-9.]+) ms", line)
    if m: avg = float(m.group(1))
    m = re.match(r"^batch_size B=(\d+) \* seq_len T=(\d+) \* num_processes=(\d+) and total_batch_size=(\d+)", line)
    if m: B, T = int(m.group(1)), int(m.group(2))
    m = re.match(r"^=> setting grad_accum_steps=(\d+)", line)
    if m: accum = int(m.group(1))
    m = re.match(r"^allocat(?:ed|ing) (\d+) MiB for ", line)
    if m: alloc = (alloc or 0) + int(m.group(1))
    m = re.match(r"^device memory usage: (\d+) MiB / (\d+) MiB", line)
    if m: dev_used = int(m.group(1))
timed = [ms for n, ms in sorted(steps.items()) if n > 3]

def samples(path):  # "#" separates samples; rows "pid, MiB"
    out, cur = [], None
    try:
        for line in open(path, errors="replace"):
            line = line.strip()
            if line.startswith("#"):
                if cur is not None: out.append(cur)
                cur = []
            elif cur is not None and re.fullmatch(r"\d+(, *\d+)?", line):
                cur.append([int(x) for x in line.split(",")])
        if cur is not None: out.append(cur)
    except OSError:
        pass
    return out

peak_proc, source = None, None
app_samples = samples(apps) if apps else []
mine = [r[1] for s in app_samples for r in s if len(r) == 2 and str(r[0]) == pid]
if mine:
    peak_proc, source = max(mine), "pid"
else:
    sums = [sum(r[1] for r in s if len(r) == 2) for s in app_samples if s]
    if sums:
        peak_proc, source = max(sums), "all-apps"
gpu_vals = [r[0] for s in (samples(gpu) if gpu else []) for r in s if len(r) == 1]
med = statistics.median(timed) if timed else None
tok = B * T * (accum or 1) if B and T else None
res = dict(ms=med, ms_per_step=med, ms_min=min(timed) if timed else None,
           ms_max=max(timed) if timed else None,
           ms_mean=statistics.fmean(timed) if timed else None, steps=len(timed),
           steps_logged=len(steps), tokens_per_s=(tok / (med / 1e3)) if tok and med else None,
           peak_process_mib=peak_proc, process_mem_source=source,
           peak_gpu_used_mib=max(gpu_vals) if gpu_vals else None,
           gpu_baseline_mib=int(baseline) if baseline.isdigit() else None,
           llmc_alloc_mib=alloc, llmc_device_used_mib=dev_used,
           llmc_avg_ms=avg, loss_last=loss_last, device=device, batch=B, context=T,
           grad_accum=accum, impl="llm.c train_gpt2cu", flags=flags, commit=commit or None,
           rc=int(rc) if rc.lstrip("-").isdigit() else None, log=log)
print(json.dumps(res))
sys.exit(0 if timed and res["rc"] in (0, None) else 1)
PY
}

if [ -n "${LLMC_PARSE_ONLY:-}" ]; then
  parse "$LLMC_PARSE_ONLY" "${LLMC_PARSE_APPS:-}" "${LLMC_PARSE_GPU:-}" "${LLMC_PARSE_PID:-0}" "" \
    "${LLMC_PARSE_FLAGS:-}" "" ""
  exit $?
fi

if [ $# -lt 3 ]; then
  sed -n '2,12p' "$0" >&2; exit 2
fi
EXE=$(realpath "$1"); DATA=$(realpath "$2"); STEPS=$3; shift 3
B=${LLMC_B:-16}; T=${LLMC_T:-1024}
[ -x "$EXE" ] || { echo "llmc_step: $EXE is not executable" >&2; exit 2; }
for f in llmc_train.bin llmc_val.bin; do
  [ -f "$DATA/$f" ] || { echo "llmc_step: no $DATA/$f (bench/llmc_data.py $DATA)" >&2; exit 2; }
done
ARGS=(-i "$DATA/llmc_train.bin" -j "$DATA/llmc_val.bin" -e d12 -b "$B" -t "$T" -d $((B * T))
      -x "$STEPS" -v 1000000 -m 0 -s 0 -h 0 -n 0 "$@")
FLAGS="-e d12 -b $B -t $T -d $((B * T)) -x $STEPS -v 1000000 -m 0 -s 0 -h 0 -n 0${*:+ $*}"
COMMIT=""
[ -f "$(dirname "$EXE")/COMMIT.txt" ] && COMMIT=$(awk '/^llm.c commit:/{print $3; exit}' "$(dirname "$EXE")/COMMIT.txt")

# shared libraries: the toolkit's, else the ones in python's nvidia-* wheels (torch's)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# LLMC_LIB_FIRST=DIR: DIR before the toolkit (e.g. torch's wheel's newer cuDNN, as a tgc run
# with that DIR first on LD_LIBRARY_PATH loads it).
[ -n "${LLMC_LIB_FIRST:-}" ] && export LD_LIBRARY_PATH=$LLMC_LIB_FIRST:$LD_LIBRARY_PATH
if ldd "$EXE" 2>/dev/null | grep -q "not found"; then
  more=$("$PY" - <<'PY' 2>/dev/null
import glob, os, site
roots = list(site.getsitepackages()) + [site.getusersitepackages()]
dirs = set()
for r in roots:
    for pat in ("libcudnn.so.9", "libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13*"):
        for f in glob.glob(os.path.join(r, "nvidia", "**", pat), recursive=True):
            dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
PY
)
  [ -n "$more" ] && export LD_LIBRARY_PATH=$more:$LD_LIBRARY_PATH
fi

LOGDIR=${LLMC_LOG_DIR:-${OUT:+$OUT/llmc}}; LOGDIR=${LOGDIR:-/tmp/llmc}
mkdir -p "$LOGDIR"
TAG=$(echo "b${B}-t${T}${*:+-$*}" | tr -c 'A-Za-z0-9.=_-' '_' | sed 's/_*$//')
STAMP=$(date +%Y%m%d-%H%M%S)
LOG=$LOGDIR/llmc-$TAG-$STAMP.log
APPS=$LOGDIR/llmc-$TAG-$STAMP.smi-apps
GPU=$LOGDIR/llmc-$TAG-$STAMP.smi-gpu
{ echo "# $EXE ${ARGS[*]}"; echo "# LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$EXE" 2>/dev/null | grep -E "cudnn|cublas|not found" | sed 's/^/# /'; } > "$LOG.head"
WORK=$(mktemp -d)  # cwd: llm.c looks for gpt2_tokenizer.bin and dev/data/hellaswag there
DEV=${CUDA_VISIBLE_DEVICES:-0}; DEV=${DEV%%,*}  # the GPU llm.c uses (device 0 of those visible)
BASE=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "$DEV" 2>/dev/null | head -1 | tr -d ' ')

STDBUF=(); command -v stdbuf >/dev/null && STDBUF=(stdbuf -oL -eL)
( cd "$WORK" && exec ${STDBUF[@]+"${STDBUF[@]}"} "$EXE" "${ARGS[@]}" ) > "$LOG" 2>&1 &
PID=$!
POLL_PID=""
if [ "${LLMC_POLL:-1}" != 0 ] && command -v nvidia-smi >/dev/null; then
  ( exec </dev/null >/dev/null 2>&1; : > "$APPS"; : > "$GPU"
    while kill -0 "$PID" 2>/dev/null; do
      echo "#" >> "$APPS"
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >> "$APPS" 2>/dev/null
      echo "#" >> "$GPU"
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "$DEV" >> "$GPU" 2>/dev/null
      sleep 0.2
    done ) &
  POLL_PID=$!
fi
( exec >/dev/null 2>&1  # watchdog: ends with llm.c (leaves no sleep behind holding stdout)
  s=0; while kill -0 "$PID" 2>/dev/null; do
    sleep 1; s=$((s + 1)); [ "$s" -ge "${LLMC_TIMEOUT:-900}" ] && kill "$PID"
  done ) &
DOG=$!
wait "$PID"; RC=$?
wait "$DOG" 2>/dev/null
[ -n "$POLL_PID" ] && wait "$POLL_PID" 2>/dev/null
rm -rf "$WORK"
cat "$LOG.head" "$LOG" > "$LOG.tmp" && mv "$LOG.tmp" "$LOG" && rm -f "$LOG.head"
# llm.c's output without its parameter table, then the JSON last
grep -v '^|\|^+--' "$LOG" | tail -n "${LLMC_TAIL:-45}"
[ "$RC" = 0 ] || echo "llmc_step: train_gpt2cu exited $RC (log $LOG)" >&2
parse "$LOG" "${POLL_PID:+$APPS}" "${POLL_PID:+$GPU}" "$PID" "$BASE" "$FLAGS" "$RC" "$COMMIT"
