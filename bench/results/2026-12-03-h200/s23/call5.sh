# s23 call5 (twenty-third session): Llama 3.2 1B with TGRT_ADAMW_SPLIT=1 against
# torch.compile, 3 alternating repetitions (call4: the split 121.76 against 122.83 ms by
# default, ranges apart; call3: the split 0.903x torch.compile, ranges overlapping the default).
set -u
source scripts/gpu-lib.sh
gpu_unpack s23c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 380 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 llama1b "TGRT_ADAMW_SPLIT=1 torch"; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
