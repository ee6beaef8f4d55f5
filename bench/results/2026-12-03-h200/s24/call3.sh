# s24 call3 (twenty-fourth session): SmolLM2-135M (examples/smollm2-135m.json, B 8 x 2048),
# split master values (the default) against training.master_values=f32 (smollm2-m32) and
# torch.compile, 3 alternating repetitions. Artifacts:
# ARTS="smollm2 smollm2-m32" GPT_SHAPES=0 bash scripts/gpu-llama-artifacts.sh
set -u
source scripts/gpu-lib.sh
gpu_unpack s24c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
mkdata "$B/data-49152" 49152 4000000
export B L
timeout 450 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 smollm2 "- torch"; REP_FROM=$r steps_ab $B $L 1 smollm2-m32 "-"; done'
echo "rc $?"
grep -h "plan .*bytes" $L/tgc-smollm2*-1.log | cut -c1-200 | head -4
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
