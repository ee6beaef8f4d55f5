# call1: the layer-norm backward's L2 prefetches (TGRT_LN_BWD_PREFETCH, default 3) and the
# cross-entropy variant read at context creation (Context::ce_fast). 1. the whole quick kernel
# check (new rows: prefetch 0/1/2 == default bitwise; the CE variants set on the context);
# 2. the fused LN backward kernels, d 768 / 1024, each prefetch setting, 3 rounds; 3. Nsight
# Compute of the d-1024 kernel, prefetch 0 and 3; 4. steps of GPT-2 small and hd 128, default
# vs TGRT_LN_BWD_PREFETCH=0 (and TGRT_CE_FAST=7 at GPT-2 small), 3 alternating repetitions;
# 5. hd 128's per-op profile.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
echo "== 1. the whole quick kernel check"
TGRT_CUDA_SYNC=1 timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check.log | tail -6; grep -c "prefetch . == default" $L/check.log
echo "== 2. fused LN backward kernels (ms, GB/s of the minimal bytes)"
for r in 1 2 3; do
  TGRT_KERNEL_BENCH_ONLY=layer_norm_bwd_acc_bgrad timeout 120 $B/tgrt-cuda-check --bench-kernels > $L/bench-$r.log 2>&1
  echo "-- round $r (rc $?)"; grep -E "bf16" $L/bench-$r.log | cut -c1-100
done
echo "== 3. ncu, d 1024 bf16, prefetch 0 and 3"
for pf in 0 3; do
  TGRT_LN_BWD_PREFETCH=$pf TGRT_KERNEL_BENCH_ONLY="layer_norm_bwd_acc_bgrad 16384 x 1024 bf16" timeout 120 \
    ncu --clock-control none -k regex:layer_norm_bwd_fused -s 3 -c 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    $B/tgrt-cuda-check --bench-kernels > $L/ncu-pf$pf.log 2>&1
  echo "-- pf $pf (rc $?)"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Achieved Occupancy|Registers Per|Warp Cycles Per Issued" $L/ncu-pf$pf.log | head -12
done
echo "== 4. steps"
steps_ab $B $L 3 "gpt2s hd128" "- TGRT_LN_BWD_PREFETCH=0"
steps_ab $B $L 3 "gpt2s" "TGRT_CE_FAST=7"
echo "== 5. hd 128 profile"
TGRT_PROFILE=1 $B/hd128 --data $B/data-32000 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-hd128.log 2>&1
grep -A24 "tgrt profile" $L/profile-hd128.log | cut -c1-130
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
