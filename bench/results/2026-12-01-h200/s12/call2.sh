# call2 (twelfth session): 1. PDL changes no bit: with every choice by timing off
# (TGRT_ATTN=cudnn-det, TGRT_GEMM_AUTOTUNE=0, TGRT_OWN_GEMM=0, TGRT_ATTN_TUNE=0) GPT-2 small and
# SmolLM2 for 6 steps with PDL on, off, off, on: the losses and gradient norms bit for bit;
# 2. bench/gemm_pitch.cu (runs/bench/gemm_pitch): the bias-rows GEMMs at row pitches d, d + 8,
# d + 64 (GPT-2 small's and head dim 128's shapes).
set -u
source scripts/gpu-lib.sh
gpu_unpack s12c2
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
echo "== 1. PDL on / off, deterministic choices"
export TGRT_ATTN=cudnn-det TGRT_GEMM_AUTOTUNE=0 TGRT_OWN_GEMM=0 TGRT_ATTN_TUNE=0
for m in gpt2s smollm2; do
  case $m in gpt2s) V=50304 ;; smollm2) V=49152 ;; esac
  mkdata $B/data-$V $V 4000000
  i=0
  for p in 1 0 0 1; do
    i=$((i + 1))
    TGRT_PDL=$p timeout 90 $B/$m --data $B/data-$V --steps 6 --eval-every 0 --eval-batches 1 \
      --log $L/bits-$m-$i-pdl$p.jsonl > $L/bits-$m-$i-pdl$p.log 2>&1 || echo "$m pdl=$p run $i failed"
  done
  python3 - $L/bits-$m-1-pdl1.jsonl $L/bits-$m-2-pdl0.jsonl $L/bits-$m-3-pdl0.jsonl $L/bits-$m-4-pdl1.jsonl <<'PY'
import json, sys
r = [[(x["loss"], x.get("grad_norm")) for x in map(json.loads, filter(lambda l: l.startswith("{") and '"ms"' in l, open(f)))] for f in sys.argv[1:]]
for f, x in zip(sys.argv[1:], r): print(f.split("/")[-1], x[0], x[-1], len(x))
print("off == off:", r[1] == r[2], "| on == on:", r[0] == r[3], "| on == off:", r[0] == r[1], "| 6 steps each:", all(len(x) == 6 for x in r))
PY
done
unset TGRT_ATTN TGRT_GEMM_AUTOTUNE TGRT_OWN_GEMM TGRT_ATTN_TUNE
echo "== 2. GEMM row pitch"
timeout 120 runs/bench/gemm_pitch 16384 768 2304 3072 768 776 832 | tee $L/pitch-gpt2s.md
timeout 120 runs/bench/gemm_pitch 16384 1024 3072 4096 1024 1032 1088 | tee $L/pitch-hd128.md
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
