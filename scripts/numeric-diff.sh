#!/usr/bin/env bash
# Trains a small GPT-2 (examples/tiny.json, shrunk) on the CPU with two tgc binaries and
# compares the checkpoints after a few steps byte for byte (parameters and AdamW moments):
# a compiler change that must not change the numbers (e.g. a fusion that moved from the
# lowering into tg-fuse, which changes the plan's pointers but not the calls) runs this
# against a build of the commit before it, beside scripts/emitted-diff.sh CALLS=1.
#   scripts/numeric-diff.sh OLD_TGC NEW_TGC [OUT_DIR]
# Prints one line per configuration (identical / DIFFERS / both refuse) and exits 1 when any
# differs. About 2 s per configuration on 2 cores.
set -uo pipefail
old=$1 new=$2 out=${3:-/tmp/numeric-diff}
cd "$(dirname "$0")/.."
rm -rf "$out" && mkdir -p "$out"
"$new" data prepare --max-bytes 64KiB --vocab 512 --out "$out/data" > /dev/null || exit 2
small=(--set model.n_layers=2 --set model.vocab_size=512 --set model.context=32 --set model.d_model=64
       --set model.n_heads=2 --set model.d_ff=128 --set training.batch_size=2 --target cpu)
configs=()
for p in fp32 bf16-mixed fp16-mixed bf16; do
  for c in none gelu selective layer; do
    for k in naive flash; do configs+=("training.precision=$p training.checkpointing=$c training.attention.kernel=$k"); done
  done
done
configs+=("training.grad_accum=2 training.attention.window=8 training.attention.kernel=flash training.precision=bf16-mixed")
differ=0 n=0
for cfg in "${configs[@]}"; do
  sets=(); for kv in $cfg; do sets+=(--set "$kv"); done
  id=$(echo "$cfg" | tr ' =:/' '____')
  rc=()
  for side in old new; do
    tgc=$old; [ $side = new ] && tgc=$new
    if "$tgc" compile examples/tiny.json "${small[@]}" "${sets[@]}" -o "$out/$id.$side" 2> "$out/$id.$side.err" &&
       "$out/$id.$side" --data "$out/data" --steps 3 --save "$out/$id.$side.st" --quiet > "$out/$id.$side.log" 2>&1; then
      rc+=(0)
    else rc+=(1); fi
  done
  n=$((n + 1))
  if [ "${rc[0]}" = 1 ] && [ "${rc[1]}" = 1 ]; then echo "both refuse: $cfg"; continue; fi
  if [ "${rc[0]}" != "${rc[1]}" ]; then echo "DIFFERS (exit ${rc[*]}): $cfg"; differ=$((differ + 1)); continue; fi
  if cmp -s "$out/$id.old.st" "$out/$id.new.st"; then echo "identical: $cfg"
  else echo "DIFFERS: $cfg ($out/$id.{old,new}.st)"; differ=$((differ + 1)); fi
done
echo "$n configurations: $((n - differ)) identical after 3 steps (or refused by both), $differ differ"
[ $differ -eq 0 ]
