# call3: the session's final binary (the committed layer-norm kernel; TGRT_CE_FAST read at
# context creation, the check and bench switch it on the context). 1. the whole quick kernel
# check; 2. where the time goes: torch.compile's kernel profile (bench/torch_gpt2_step.py
# --profile, 3 steps after the timed ones) and tgc's (TGRT_PROFILE=1) at head dim 128 and
# GPT-2 small; 3. tgc against torch.compile, 3 alternating repetitions of 20 steps, both shapes;
# 4. hd 128 with TGRT_LN_BWD_RELOAD=0.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
echo "== 1. the whole quick kernel check"
TGRT_CUDA_SYNC=1 timeout 240 $B/tgrt-cuda-check --quick --no-bench > $L/check.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check.log | tail -4
echo "== 2. profiles"
mkdata $B/data-32000 32000 4000000; mkdata $B/data-50304 50304 4000000
timeout 200 python3 bench/torch_gpt2_step.py --compile --bf16 --batch 8 --layers 8 --d-model 1024 \
  --heads 8 --d-ff 4096 --vocab 32000 --context 2048 --steps 10 --profile $L/torch-profile-hd128.txt \
  > $L/torch-profile-hd128.json 2> $L/torch-profile-hd128.err; echo "torch hd128 rc $?"
head -25 $L/torch-profile-hd128.txt | cut -c1-150
TGRT_PROFILE=1 $B/hd128 --data $B/data-32000 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-hd128.log 2>&1
grep -A30 "tgrt profile" $L/profile-hd128.log | cut -c1-130
timeout 200 python3 bench/torch_gpt2_step.py --compile --bf16 --batch 16 --steps 10 \
  --profile $L/torch-profile-gpt2s.txt > $L/torch-profile-gpt2s.json 2> $L/torch-profile-gpt2s.err
echo "torch gpt2s rc $?"; head -25 $L/torch-profile-gpt2s.txt | cut -c1-150
TGRT_PROFILE=1 $B/gpt2s --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s.log 2>&1
grep -A30 "tgrt profile" $L/profile-gpt2s.log | cut -c1-130
echo "== 3. tgc against torch.compile"
steps_ab $B $L 3 "hd128 gpt2s" "- torch"
echo "== 4. hd 128 with TGRT_LN_BWD_RELOAD=0 (d 1024: the reload form spills 24-84 bytes)"
steps_ab $B $L 3 "hd128" "TGRT_LN_BWD_RELOAD=0"
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
