# call7 (seventeenth session): the add + layer-norm forward (tgrt_add_layer_norm_fwd*, the
# recomputed add + layer norm of `selective` checkpointing) with every pack's loads issued
# first. 1. the whole quick kernel check (its rows: against the CPU, and the _ones form
# bitwise against the plain one); 2. GPT-2 small selective against gpt2s-sel-base (the
# runtime of 80e0310), 3 alternating repetitions; 3. the add + layer norm in both profiles.
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c7
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. the whole quick kernel check"
timeout 150 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1; echo "rc $?"
grep -E "FAIL|passed" $L/check.log | tail -4
echo "== 2. steps"
export B L
timeout 150 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s-sel gpt2s-sel-base" "-"'
echo "rc $?"
echo "== 3. profiles"
for m in gpt2s-sel gpt2s-sel-base; do
  TGRT_PROFILE=1 timeout 40 $B/$m --data $B/data-50304 --steps 6 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  grep -E "add_layer_norm|profile \(" $L/profile-$m.log | head -3 | cut -c1-150
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
