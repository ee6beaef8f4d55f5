# call5 (tenth session): the 16-bit cross-entropy's variant in the step after the rounding
# change. The kernel alone (call1, both rounds) now has variant 6 faster from V 32000 up
# (50304: 0.944 against 1.05 ms) where the rule (7 while 4 rows per SM fit in 7/8 of L2) still
# takes 7 on a host reporting 60 MiB of L2. GPT-2 small (50304) and head dim 128 (32000) with
# TGRT_CE_FAST=6 and =7 and the default, 3 alternating repetitions; the host's L2 from the
# bench's "(default)" labels.
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
python3 -c "import torch; print('l2CacheSize', torch.cuda.get_device_properties(0).L2_cache_size)" 2>/dev/null
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128" "- TGRT_CE_FAST=6 TGRT_CE_FAST=7"'
echo "steps rc $?"
TGRT_KERNEL_BENCH_ONLY=sweep timeout 60 $B/tgrt-cuda-check --bench-kernels 2>&1 | grep sweep | tee $L/sweep.txt
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
