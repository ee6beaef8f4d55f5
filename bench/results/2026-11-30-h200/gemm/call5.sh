# call5: the own GEMM in the training step (TGRT_OWN_GEMM=1 default vs 0), its checks and bench.
set -u
mkdir -p /tmp/l && tar -C /tmp/l -xJf runs/llama/llama.tar.xz
CHK=/tmp/l/llama/tgrt-cuda-check
OUT=$OUT/gemm bash scripts/gpu-gemm.sh $CHK > $OUT/gemm.txt 2>&1; echo "gemm rc $?"
tail -14 $OUT/gemm.txt
ONLY="gpt2s hd128" VARIANTS="gpt2s gpt2s@TGRT_OWN_GEMM=0 hd128 hd128@TGRT_OWN_GEMM=0" TORCH=0 \
  REPS=3 STEPS=20 PROFILES="gpt2s hd128" PROFILE_LINES=30 FULL_CHECK=1 bash scripts/gpu-llama.sh 2>&1 | tail -90
for f in /tmp/gpu-llama-logs/tgc-*-1.log; do echo "$f: $(grep -h "own GEMM" $f)"; done
