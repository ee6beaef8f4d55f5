# call2: the runtime without side work (the side-work code of call1 removed) and cuDNN's
# tuning deselecting the plans over the planned workspace before building them (cuDNN >= 9.2
# filters at the engine-configuration level). 1. the cuDNN rows of the quick check (default
# tuning); 2. step 1 of GPT-2 small and head dim 128, 3 runs each (the tuning's cost at the
# first step; call1's runs are the before); 3. tgc against torch.compile (a fresh batch per
# step) at GPT-2 medium's shape and SmolLM2-135M, 3 alternating repetitions of 20 steps.
set -u
source scripts/gpu-lib.sh
gpu_unpack side2
echo "== 1. cuDNN rows of the quick check"
timeout 120 $B/tgrt-cuda-check --quick --no-bench --cudnn > $L/check-cudnn.log 2>&1
echo "rc $?"; grep -E "FAIL|passed" $L/check-cudnn.log | tail -3
echo "== 2. step 1 (ms) of 3-step runs"
for m in gpt2s hd128; do
  case $m in gpt2*) V=50304 ;; hd128) V=32000 ;; esac
  [ -d "$B/data-$V" ] || mkdata "$B/data-$V" "$V" 4000000
  for r in 1 2 3; do
    timeout 60 $B/$m --data $B/data-$V --steps 3 --eval-every 0 --eval-batches 1 \
      --log $L/first-$m-$r.jsonl > $L/first-$m-$r.log 2>&1 || echo "$m run $r failed"
  done
  python3 - $L $m <<'PY'
import json, sys
L, m = sys.argv[1], sys.argv[2]
ms = []
for r in (1, 2, 3):
    rows = [json.loads(l) for l in open(f"{L}/first-{m}-{r}.jsonl") if l.startswith("{") and '"ms"' in l and "eval" not in l]
    ms.append(round(rows[0]["ms"], 1))
print(m, "step 1 ms:", ms)
PY
done
echo "== 3. steps"
export B L
timeout 400 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2m smollm2" "- torch"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
