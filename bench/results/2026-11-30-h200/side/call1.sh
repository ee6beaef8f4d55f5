# call1: the bias gradients' column sums as side work beside the weight-gradient GEMM
# (TGRT_BGRAD_SIDE, default on). 1. the whole quick kernel check WITHOUT TGRT_CUDA_SYNC (a sync
# after each launch would serialise the side work and hide a race); its matmul_wgrad rows with
# the side work and on one stream, and run_graph's capture of a forked wgrad; 2. per-call
# profiles (side on / off) at GPT-2 small and head dim 128; 3. tgc (default, side off) against
# torch.compile (a fresh batch per step), 3 alternating repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack side1
echo "== 1. the whole quick kernel check (no per-launch sync)"
timeout 200 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check.log | tail -4
grep -E "matmul_wgrad \(dbias\).*(side work|one stream)|run_graph capture" $L/check.log | head -8 | cut -c1-150
echo "== 2. profiles"
for m in gpt2s hd128; do
  case $m in gpt2*) V=50304 ;; hd128) V=32000 ;; esac
  [ -d "$B/data-$V" ] || mkdata "$B/data-$V" "$V" 4000000
  for side in 1 0; do
    TGRT_PROFILE=1 TGRT_BGRAD_SIDE=$side timeout 60 $B/$m --data $B/data-$V --steps 8 \
      --eval-every 0 --eval-batches 1 > $L/profile-$m-side$side.log 2>&1; echo "$m side $side rc $?"
    grep -E "tgrt_matmul_wgrad|step .* ms \(events" $L/profile-$m-side$side.log | head -6 | cut -c1-120
  done
done
echo "== 3. steps"
export B L
timeout 390 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128" "- TGRT_BGRAD_SIDE=0 torch"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
