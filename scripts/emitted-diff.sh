#!/usr/bin/env bash
# Compares the C++ (and plan JSON) two tgc binaries emit for GPT-2 over every precision,
# checkpointing policy and attention kernel, plus ZeRO-3, offload and grad_accum: a refactor
# of the compiler that must not change GPT-2's code runs this against a build of the commit
# before it.
#   scripts/emitted-diff.sh OLD_TGC NEW_TGC [OUT_DIR]
# Prints one line per configuration (same / DIFFERS) and exits 1 when any differs. The
# embedded spec text (spec_json, which lists every spec field with its default) is compared
# separately and reported, not counted, when it is the only difference.
# With CALLS=1, a configuration whose C++ differs but whose runtime calls do not (the same
# tgrt_* calls in the same order with the same scalar arguments; only the planned pointers,
# the check tables' op names and the plan differ: a fusion that moved from the lowering into
# tg-fuse) is reported as "same calls" and not counted; scripts/numeric-diff.sh then runs
# both sides and compares the losses bit for bit.
set -uo pipefail
old=$1 new=$2 out=${3:-/tmp/emitted-diff}
cd "$(dirname "$0")/.."
mkdir -p "$out"
specs=(examples/tiny.json examples/gpt2-small.json)
configs=()
for p in fp32 bf16-mixed fp16-mixed bf16; do
  for c in none gelu selective layer-attn layer budget:64MiB; do
    for k in naive flash; do configs+=("training.precision=$p training.checkpointing=$c training.attention.kernel=$k"); done
  done
done
configs+=("training.distributed.ranks=2 training.distributed.zero=3 training.precision=bf16-mixed training.attention.kernel=flash")
configs+=("training.distributed.ranks=2 training.distributed.zero=1 training.optimizer.offload=cpu")
configs+=("training.grad_accum=4 training.attention.window=16 training.attention.kernel=flash")
differ=0 specOnly=0 sameCalls=0 n=0
# The runtime calls of a C++ file, pointers (v123: an emitc pointer expression) blanked.
calls() { grep -o 'tgrt_[a-z_0-9]*(v[0-9]*, "[^"]*"[^;]*' "$1" | sed -E 's/\bv[0-9]+\b/p/g'; }
for spec in "${specs[@]}"; do
  for cfg in "${configs[@]}"; do
    sets=(); for kv in $cfg; do sets+=(--set "$kv"); done
    id=$(echo "$(basename "$spec" .json) $cfg" | tr ' =:/' '____')
    "$old" compile "$spec" "${sets[@]}" --emit=cpp -o "$out/$id.old.cpp" 2>"$out/$id.old.err"; ro=$?
    "$new" compile "$spec" "${sets[@]}" --emit=cpp -o "$out/$id.new.cpp" 2>"$out/$id.new.err"; rn=$?
    n=$((n + 1))
    if [ $ro -ne $rn ]; then echo "DIFFERS (exit $ro vs $rn): $spec $cfg"; differ=$((differ + 1)); continue; fi
    if [ $ro -ne 0 ]; then
      cmp -s "$out/$id.old.err" "$out/$id.new.err" && echo "same (both refuse): $spec $cfg" ||
        { echo "DIFFERS (errors): $spec $cfg"; differ=$((differ + 1)); }
      continue
    fi
    if cmp -s "$out/$id.old.cpp" "$out/$id.new.cpp"; then echo "same: $spec $cfg"; continue; fi
    if diff <(grep -v 'spec_json\|^static const char' "$out/$id.old.cpp") \
            <(grep -v 'spec_json\|^static const char' "$out/$id.new.cpp") >/dev/null; then
      echo "same but the embedded spec: $spec $cfg"; specOnly=$((specOnly + 1))
    elif [ "${CALLS:-0}" = 1 ] && diff <(calls "$out/$id.old.cpp") <(calls "$out/$id.new.cpp") >/dev/null; then
      echo "same calls (pointers differ): $spec $cfg"; sameCalls=$((sameCalls + 1))
    else
      echo "DIFFERS: $spec $cfg ($out/$id.{old,new}.cpp)"; differ=$((differ + 1))
    fi
  done
done
echo "$n configurations: $((n - differ - specOnly - sameCalls)) byte-identical, $specOnly differ only in the embedded spec, $sameCalls the same calls with other pointers, $differ differ"
[ $differ -eq 0 ]
