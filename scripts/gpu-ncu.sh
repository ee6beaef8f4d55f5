#!/usr/bin/env bash
# Nsight Compute over the flash-attention kernels of a kernel-check binary, on the GPU machine
# (builds nothing):   scripts/gpu-ncu.sh runs/tgrt-cuda-check-TAG [KERNEL_REGEX...]
# Profiles the first launch of each kernel (default: the bf16 forward, dk/dv and dq kernels
# of `tgrt-cuda-check --bench-only`, i.e. bh 192, t 1024, hd 64, causal) with the speed-of-
# light, occupancy, launch and warp-state sections, clocks left alone (--clock-control none).
# Reports go to $OUT/ncu-<n>.txt; the summary lines are printed. NCU_ARGS: the binary's
# arguments instead of --bench-only (e.g. "--bench-gemm" with TGRT_GEMM_BENCH_ONLY=qkv for
# the own GEMM's kernels). NCU_NAME_BASE=mangled: the regexes match mangled names (template
# arguments, e.g. "pingpong_kernelILi6ELi2E"). NCU_SECTIONS: ncu's section options instead
# (e.g. "--set full"); NCU_SKIP=N: profile the launch after the first N that match;
# NCU_CLOCK=base: ncu locks the clocks at base (default none: left alone).
set -u -o pipefail
OUT=${OUT:-/tmp/gpu-ncu}; mkdir -p "$OUT"
source "$(dirname "$0")/gpu-lib.sh"
BIN=$(unpack "${1:?usage: scripts/gpu-ncu.sh runs/tgrt-cuda-check-TAG [KERNEL_REGEX...]}"); shift
[ -n "$BIN" ] || { echo "gpu-ncu: no binary"; exit 1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "gpu-ncu: ncu not found"; exit 1; }
[ $# -gt 0 ] || set -- "attention_fwd_lp_kernel" "attention_bwd_dkdv_lp_kernel" "attention_bwd_dq_lp_kernel"
n=0
for k in "$@"; do
  n=$((n + 1))
  timeout 240 "$NCU" --clock-control ${NCU_CLOCK:-none} --kernel-name-base "${NCU_NAME_BASE:-function}" \
    -k "regex:$k" -c 1 ${NCU_SKIP:+--launch-skip $NCU_SKIP} ${NCU_SECTIONS:---section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section ComputeWorkloadAnalysis} \
    "$BIN" ${NCU_ARGS:---bench-only} > "$OUT/ncu-$n.txt" 2>&1
  echo "== $k (rc $?)"
  grep -E "attention_|gemm_tn|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Shared Memory Configuration Size|Warp Cycles Per Issued|Stall|L1/TEX Hit|Mem Busy|Max Bandwidth|Issue Slots|Executed Ipc" "$OUT/ncu-$n.txt" | head -40
done
