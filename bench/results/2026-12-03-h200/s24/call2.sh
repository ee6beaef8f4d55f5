# s24 call2 (twenty-fourth session): Llama 3.2 1B with split master values (the default
# since this session) against torch.compile, 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s24c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 400 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "- torch"; done'
echo "rc $?"
grep -h "plan .*bytes\|^energy:" $L/tgc-llama1b-*.log | cut -c1-220 | head -4
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
