# call1 (twelfth session): programmatic dependent launch (runtime/cuda/Pdl.cuh; every kernel
# of Kernels.cu and Llama.cu launched with launchDependent, TGRT_PDL=0 turns it off).
# 1. tiny-llama and GPT-2 small: the losses with PDL on and off (the same bits expected: PDL
#    changes when a kernel starts, not what it computes); 2. steps on / off, 3 alternating
#    repetitions: GPT-2 small, head dim 128, SmolLM2 (the most own kernels per ms);
#    3. per-call profile of GPT-2 small with PDL (TGRT_PROFILE: its events between calls).
set -u
source scripts/gpu-lib.sh
gpu_unpack s12c1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
echo "== 1. losses on / off"
for m in gpt2s; do
  mkdata $B/data-50304 50304 4000000
  for p in 1 0; do
    TGRT_PDL=$p timeout 60 $B/$m --data $B/data-50304 --steps 6 --eval-every 0 --eval-batches 1 \
      --log $L/bits-$m-pdl$p.jsonl > $L/bits-$m-pdl$p.log 2>&1; echo "$m pdl=$p rc $?"
  done
  python3 - $L/bits-$m-pdl1.jsonl $L/bits-$m-pdl0.jsonl <<'PY'
import json, sys
r = [[(x["loss"], x.get("grad_norm")) for x in map(json.loads, filter(lambda l: l.startswith("{") and '"ms"' in l, open(f)))] for f in sys.argv[1:]]
print("losses, grad norms PDL on :", r[0]); print("losses, grad norms PDL off:", r[1]); print("identical:", r[0] == r[1])
PY
done
echo "== 2. steps"
timeout 420 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128 smollm2" "- TGRT_PDL=0"'
echo "steps rc $?"
echo "== 3. profile"
TGRT_PROFILE=1 timeout 60 $B/gpt2s --data $B/data-50304 --steps 8 --eval-every 0 --eval-batches 1 > $L/profile-gpt2s.log 2>&1; echo "profile rc $?"
grep -E "step .* ms \(events" $L/profile-gpt2s.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
