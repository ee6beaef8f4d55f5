# s23 call6 (twenty-third session): energy per step measured the same way for both systems:
# tgc's trainer line and torch.compile's timed steps between two reads of NVML's counter
# (bench/nvml_energy.py), Llama 3.2 1B, one repetition each (the session's last device time).
set -u
source scripts/gpu-lib.sh
gpu_unpack s23c6
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 170 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 1 llama1b "- torch"'
echo "rc $?"
grep -h "^energy:" $L/tgc-llama1b-*.log
tail -1 $L/torch-llama1b-1.json
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
