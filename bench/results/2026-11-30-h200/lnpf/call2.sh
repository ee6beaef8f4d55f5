# call2: the layer-norm backward's staged ring (TGRT_LN_BWD_STAGED, default on: each warp's
# rows bulk-copied into shared memory 2-4 rows ahead, one block per SM) against the reload
# kernel with the residual gradient's L2 prefetch ("unstaged") and without ("plain").
# 1. the whole quick kernel check (new rows: the unstaged forms == default bitwise; 20000
# rows at d 136 for the ring's refills); 2. the kernels at d 768 / 1024, 3 rounds; 3. Nsight
# Compute of the staged kernel at d 1024; 4. steps of GPT-2 small and hd 128, default vs
# plain, 3 alternating repetitions; 5. compute-sanitizer memcheck of the LN bench rows
# (16384 rows, every form).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
echo "== 1. the whole quick kernel check"
TGRT_CUDA_SYNC=1 timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check.log | tail -6; grep -c "unstaged.* == default" $L/check.log
echo "== 2. fused LN backward kernels (ms, GB/s of the minimal bytes)"
for r in 1 2 3; do
  TGRT_KERNEL_BENCH_ONLY=layer_norm_bwd_acc_bgrad timeout 120 $B/tgrt-cuda-check --bench-kernels > $L/bench-$r.log 2>&1
  echo "-- round $r (rc $?)"; grep -E "bf16" $L/bench-$r.log | cut -c1-100
done
echo "== 3. ncu, d 1024 bf16, staged"
TGRT_KERNEL_BENCH_ONLY="layer_norm_bwd_acc_bgrad 16384 x 1024 bf16" timeout 120 \
  ncu --clock-control none -k regex:layer_norm_bwd_fused -s 3 -c 1 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
  $B/tgrt-cuda-check --bench-kernels > $L/ncu-staged.log 2>&1
echo "rc $?"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Dynamic Shared|Waves Per SM" $L/ncu-staged.log | head -14
echo "== 4. steps"
steps_ab $B $L 3 "gpt2s hd128" "- TGRT_LN_BWD_STAGED=0,TGRT_LN_BWD_PREFETCH=0"
echo "== 5. memcheck, LN rows"
TGRT_KERNEL_BENCH_ONLY=layer_norm_bwd_acc_bgrad timeout 150 compute-sanitizer --tool memcheck \
  $B/tgrt-cuda-check --bench-kernels > $L/memcheck.log 2>&1
echo "rc $?"; grep -E "ERROR SUMMARY" $L/memcheck.log | tail -2
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
