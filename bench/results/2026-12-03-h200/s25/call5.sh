# s25 call5: split master values for f32-gradient weights and the tied embedding (the
# gather through tgrt_embedding_fwd_split). 1. the whole quick kernel check (new rows:
# embedding_fwd_split, GPU against CPU, bit for bit); 2. Llama 3.2 1B and GPT-2 small, the
# new default against "-base" executables compiled before the change (3 alternating
# repetitions of 20 steps): losses, steps, plan and used bytes.
set -u
source scripts/gpu-lib.sh
gpu_unpack s25c5
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. kernel check"
timeout 130 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|embedding_fwd_split|passed" $L/check.log | cut -c1-150 | tail -8
echo "== 2. steps"
mkdata "$B/data-128256" 128256 4000000
mkdata "$B/data-50304" 50304 4000000
export B L
timeout 265 bash -c 'source scripts/gpu-lib.sh; for r in 1 2 3; do
  REP_FROM=$r steps_ab $B $L 1 "llama1b llama1b-base gpt2s gpt2s-base" "-"; done'
echo "rc $?"
grep -h "plan .*bytes" $L/tgc-*-1.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
