# call2 (fourteenth session): call1 split the planned loss chunk in two (8 chunks of 2048 rows
# at GPT-2 small) and came out slower. Here the overlap at the default's GEMM shapes: the
# executables compiled with training.loss_chunk_bytes 1 GiB (gpt2s-c2: 2 chunks of 8192 rows;
# hd128-c1: 1 chunk of 16384), whose halves are the default's chunks (4096; 8192) in two
# buffers (+0.38 / +0.48 GiB of plan), under TGRT_CE_OVERLAP 0 / 1 / 2, against the default
# executables (gpt2s, hd128) in the same repetition; 3 alternating repetitions; a profile of
# gpt2s-c2 with overlap 1.
set -u
source scripts/gpu-lib.sh
gpu_unpack s14c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
[ -d $B/data-50304 ] || mkdata $B/data-50304 50304 4000000
TGRT_CE_OVERLAP=1 TGRT_PROFILE=1 timeout 60 $B/gpt2s-c2 --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s-c2-ov1.log 2>&1
echo "profile rc $?"; grep -E "step .* ms \(events|linear_cross_entropy" $L/profile-gpt2s-c2-ov1.log | head -3 | cut -c1-160
for r in 1 2 3; do
  timeout 100 bash -c "source scripts/gpu-lib.sh; REP_FROM=$r steps_ab $B $L 1 gpt2s -; REP_FROM=$r steps_ab $B $L 1 gpt2s-c2 '- TGRT_CE_OVERLAP=1 TGRT_CE_OVERLAP=2'"
  timeout 100 bash -c "source scripts/gpu-lib.sh; REP_FROM=$r steps_ab $B $L 1 hd128 -; REP_FROM=$r steps_ab $B $L 1 hd128-c1 '- TGRT_CE_OVERLAP=1 TGRT_CE_OVERLAP=2'"
  echo "rep $r rc $?"
done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
