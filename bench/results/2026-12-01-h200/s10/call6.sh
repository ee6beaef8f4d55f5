# call6 (tenth session): the session's final runtime (the rounding change and the
# cross-entropy's rule at half of L2): 1. the "loss" group calibrated again into a copy of
# calibration/h200.json (its cross-entropy points now with the new default variant); 2. GPT-2
# small against llm.c (-r 0, -r 0 -ge 2) and head dim 128 against torch.compile, 3 alternating
# repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c6
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
python3 -c "import torch; print('l2CacheSize', torch.cuda.get_device_properties(0).L2_cache_size)" 2>/dev/null
timeout 100 $B/tgc-calibrate-cuda --out $OUT/h200.json --only loss calibration/h200.json > $L/calibrate-loss.log 2>&1; echo "loss rc $?"
tail -n 1 $L/calibrate-loss.log | cut -c1-150
export B L
timeout 230 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- llmc-r0 llmc-r0ge2"'
echo "gpt2s rc $?"
timeout 250 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- torch"'
echo "hd128 rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
