# s25 call4: Llama 3.2 1B by default against torch.compile, 3 alternating repetitions of 20
# steps, on another host (call3 measured 0.900x). (The kernel check planned here did not fit
# the session's remaining device time after a refused start.)
set -u
source scripts/gpu-lib.sh
gpu_unpack s25c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 345 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b" "- torch"; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
