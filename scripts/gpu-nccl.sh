#!/usr/bin/env bash
# NCCL's own device memory per rank (issue 25: the plan's NCCL reserve) and the GPU checks
# whose tolerances were set from records, re-run: one call on the 2-GPU machine
# (nvidia-h200-x2), builds nothing. Carry runs/nccl.tar.xz and runs/data-gpu: the tar holds
# (stripped, one solid xz) nccl-footprint (nvcc -O2 -arch=sm_90 bench/cuda/nccl_footprint.cu
# -lnccl), the four executables of `scripts/gpu-artifacts.sh dp` (gpt2-dp1, -dp2, -dp2z,
# -dp2w) and the two libraries of scripts/gpu-grad-check.sh's header (gpt2-grad.so,
# tiny-cuda.so). Then from the repo root there: scripts/gpu-nccl.sh
#   1. bench/cuda/nccl_footprint.cu (runs/nccl-footprint) on 2 ranks under NCCL's default
#      settings and with NCCL_RUNTIME_CONNECT=0 (every connection made at initialisation);
#      NCCL_DEBUG=INFO logs of each (channels, protocols) in $OUT/nccl-*.log.
#   2. scripts/gpu-dp.sh (TORCH=0): 1 vs 2 GPUs, the launcher environment, ZeRO-1, weak
#      scaling, the fault; each rank's log has the runtime's NCCL lines ("took ... at
#      initialisation", "held ... at the end of the run").
#   3. scripts/gpu-grad-check.sh (GPT-2 small fp32 and tiny, float64 PyTorch on the GPU).
#   PARTS (default "probe dp grad") picks; "zero" (also carry runs/zero.tar.xz and
#   runs/zero-big.txt of `scripts/gpu-artifacts.sh zero`) runs scripts/gpu-zero.sh (TORCH=0)
#   and prints which process held how much on which GPU during the 2-rank runs; on a machine
#   of 4 GPUs the probe also runs on 4 ranks.
# Prints last: the footprint table, the NCCL lines of the tgc runs, the checks' verdicts.
# Logs: $OUT/nccl.tar.xz.
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-nccl}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 # multicast off on the shared machines (device KINDS.md)
source "$(dirname "$0")/gpu-lib.sh"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
tar -C runs -xJf runs/nccl.tar.xz || { echo "no runs/nccl.tar.xz"; exit 1; }
PARTS=${PARTS:-probe dp grad}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
probe=$(unpack runs/nccl-footprint)
modes=(default connect0)
[ "$(nvidia-smi -L | wc -l)" -ge 4 ] && modes+=(ranks4)
if part probe; then
for mode in "${modes[@]}"; do
  envs=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ALLOC,TUNING); n=2
  [ "$mode" = connect0 ] && envs+=(NCCL_RUNTIME_CONNECT=0)
  [ "$mode" = ranks4 ] && n=4
  env "${envs[@]}" timeout 120 "$probe" $n > "$OUT/nccl-$mode.out" 2> "$OUT/nccl-$mode.log"
  echo "footprint $mode: rc $?"
done
fi
if part zero; then
  OUT=$OUT/zero TORCH=0 bash scripts/gpu-zero.sh > "$OUT/zero.txt" 2>&1; echo "gpu-zero: rc $?"
fi
if part dp; then
  OUT=$OUT/dp TORCH=0 bash scripts/gpu-dp.sh > "$OUT/dp.txt" 2>&1; echo "gpu-dp: rc $?"
fi
if part grad; then
  OUT=$OUT/grad bash scripts/gpu-grad-check.sh > "$OUT/grad.txt" 2>&1; echo "gpu-grad-check: rc $?"
fi
tar -C "$OUT" -cJf /tmp/nccl.tar.xz . && mv /tmp/nccl.tar.xz "$OUT/nccl.tar.xz"
echo "== NCCL footprint (bytes per rank)"
for mode in "${modes[@]}"; do
  [ -f "$OUT/nccl-$mode.out" ] || continue
  echo "-- $mode"; grep -E "^NCCL|stage (init|allreduce-f32-256MiB|broadcast-4KiB|before-destroy)" "$OUT/nccl-$mode.out" | sort -s -k2,2n
  grep -hoE "[0-9]+ coll channels, [0-9]+ collnet channels, [0-9]+ nvls channels, [0-9]+ p2p channels, [0-9]+ p2p channels per peer" "$OUT/nccl-$mode.log" | sort | uniq -c
done
echo "== tgc runs: NCCL lines"
grep -h "NCCL" "$OUT"/dp/*.log "$OUT"/zero/*.log 2>/dev/null | sed 's/^.*tgrt: cuda: //' | sort | uniq -c | head -20
if [ -d "$OUT/zero" ]; then
  echo "== per process and GPU, largest used_memory during the 2-rank runs (MiB)"
  for f in "$OUT"/zero/*-apps.txt; do
    echo "-- $(basename "$f")"
    awk -F', ' 'NF==3 {gsub(/ MiB/,"",$3); k=$1" "$2; if ($3+0 > m[k]) m[k]=$3+0} END {for (k in m) print k, m[k]}' "$f" | sort
    grep -E "zero-" "$f" | sort -u | head -4
  done
  echo "== gpu-zero verdicts"; tail -n 22 "$OUT/zero.txt"
fi
[ -f "$OUT/dp.txt" ] && { echo "== gpu-dp verdicts"; tail -n 16 "$OUT/dp.txt"; }
[ -f "$OUT/grad.txt" ] && { echo "== gpu-grad-check"; grep -E "^gpu-grad-check|grad-check: [0-9]+ tensors|^check " "$OUT/grad.txt" | head -20; }
