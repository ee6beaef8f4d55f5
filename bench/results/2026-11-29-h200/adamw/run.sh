#!/usr/bin/env bash
# AdamW kernel variants on the GPU machine (one device call; builds nothing). Carry
# runs/adamw/tgrt-cuda-check.xz (build/bin/tgrt-cuda-check, stripped, xz). Runs the kernel
# timings (tgrt-cuda-check --bench-kernels) under TGRT_ADAMW_VARIANT=0,1,2 alternating, REPS
# times, and prints the AdamW rows last (Kernels.cu adamw: 0 double arithmetic, plain loads;
# 1 streaming cache hints, the same bits; 2 float arithmetic).
set -u
OUT=${OUT:-/tmp/gpu-adamw}; mkdir -p "$OUT"
B=/tmp/adamw; mkdir -p $B; xz -dc runs/adamw/tgrt-cuda-check.xz > $B/tgrt-cuda-check && chmod +x $B/tgrt-cuda-check
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
for r in $(seq 1 "${REPS:-2}"); do
  for v in 0 1 2; do
    TGRT_ADAMW_VARIANT=$v timeout 120 $B/tgrt-cuda-check --bench-kernels > "$OUT/bench-v$v-$r.log" 2>&1
    echo "variant $v rep $r rc $?"
  done
done
for v in 0 1 2; do echo "== TGRT_ADAMW_VARIANT=$v"; grep -h "adamw" "$OUT"/bench-v$v-*.log; done
