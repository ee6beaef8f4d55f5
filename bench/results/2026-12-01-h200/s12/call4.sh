# call4 (twelfth session): call3's executables. 1. head dim 128: this build (pitch d + 64, PDL)
# against "-base" (call1's: pitch d + 8, PDL) and torch.compile, 4 alternating repetitions;
# 2. per-call profiles of GPT-2 small, this build and -base (where the pitch moved time);
# 3. Llama 3.2 1B (PDL; no biases, so no bias rows) against torch.compile, 2 repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s12c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 4 "hd128 hd128-base" "- torch"'
echo "hd128 rc $?"
[ -d $B/data-50304 ] || mkdata $B/data-50304 50304 4000000
for m in gpt2s gpt2s-base; do
  TGRT_PROFILE=1 timeout 60 $B/$m --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-$m.log 2>&1
  echo "profile $m rc $?"; grep -E "step .* ms \(events" $L/profile-$m.log | cut -c1-160
done
timeout 220 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "llama1b" "- torch"'
echo "llama1b rc $?"
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
