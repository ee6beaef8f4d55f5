# s24 call5 (twenty-fourth session): Llama 3.2 1B split master values (llama1b, the default)
# against training.master_values=f32 (llama1b-m32), 3 alternating repetitions (call1 had 2).
# Artifacts: ARTS="llama1b llama1b-m32" GPT_SHAPES=0 bash scripts/gpu-llama-artifacts.sh
set -u
source scripts/gpu-lib.sh
gpu_unpack s24c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-128256" 128256 4000000
export B L
timeout 400 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b llama1b-m32" "-"; done'
echo "rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
