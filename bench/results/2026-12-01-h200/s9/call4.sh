# call4 (ninth session): the largest micro-batch tgc predicts before launch, on the GPU.
# `tgc plan examples/gpt2-small.json --max-batch --calibration calibration/h200.json` (no
# --memory: the table's memory_bytes 150108446720, reserve 571473920) says 419 at none (plan
# 149420510468 bytes; 420: 149771775236). 419 must train; 420 must be refused at start.
set -u
source scripts/gpu-lib.sh
gpu_unpack s9c4
python3 -c "import torch; f, t = torch.cuda.mem_get_info(); print('cudaMemGetInfo total', t, 'free', f)"
mkdata $B/data-50304 50304 12000000
timeout 120 $B/gpt2s-b419 --data $B/data-50304 --steps 6 --eval-every 0 --eval-batches 1 \
  --log $L/b419.jsonl > $L/b419.log 2>&1; echo "419 rc $?"
grep -a -E "tgrt: cuda (process )?memory" $L/b419.log | cut -c1-260
tail -n 3 $L/b419.log | cut -c1-200
timeout 60 $B/gpt2s-b420 --data $B/data-50304 --steps 2 --eval-every 0 --eval-batches 1 \
  > $L/b420.log 2>&1; echo "420 rc $?"; grep -a -E "plan needs|error" $L/b420.log | cut -c1-300
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
