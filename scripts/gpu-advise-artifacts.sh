#!/usr/bin/env bash
# Builds (here, no GPU needed) the check of `tgc advise` (issue 23: the advised configuration
# measures within 3% of the fastest configuration measured among those it ranked): for each
# SPEC, `tgc advise SPEC --memory MEM --calibration TABLE --json` ranks the candidates; the
# top TOP (default 5) and OTHERS (default 3) seeded-random others whose predicted step is
# below MAX_MS (default 2000: keeps the GPU call short) are compiled for CUDA into
# runs/advise/cost.tar.xz, with runs/advise/configs.txt (name spec args, as gpu-cost.sh reads
# it) and runs/advise/ranked.json (each one's rank and prediction). Then, with the device
# tool:  run: RUNS=runs/advise CALIB=0 STEPS=8 REPS=3 bash scripts/gpu-cost.sh  carry:
# runs/advise; and here: scripts/advise-compare.py runs/advise/ranked.json MEASURED_JSON.
#   SPECS="examples/llama3.2-1b.json" MEM=80GiB TABLE=calibration/h200.json [TGC=path/tgc] \
#     bash scripts/gpu-advise-artifacts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SPECS=${SPECS:-examples/llama3.2-1b.json}
MEM=${MEM:-80GiB}; TABLE=${TABLE:-calibration/h200.json}
TOP=${TOP:-5}; OTHERS=${OTHERS:-3}; MAX_MS=${MAX_MS:-2000}; SEED=${SEED:-1}
# TGC: the compiler to use (default build/bin/tgc, built first; with TGC set nothing is built).
if [ -z "${TGC:-}" ]; then ninja -C build -j"${JOBS:-2}" bin/tgc tgrt_cuda tgrt_driver; TGC=build/bin/tgc; fi
rm -rf runs/advise && mkdir -p runs/advise/cost
: > runs/advise/configs.txt
echo '[]' > runs/advise/ranked.json
for spec in $SPECS; do
  short=$(basename "$spec" .json | sed 's/llama3.2-1b/llama1b/; s/gpt2-small/gpt2s/; s/smollm2-135m/smollm2/')
  "$TGC" advise "$spec" --memory "$MEM" --calibration "$TABLE" --top 10 \
    --json "runs/advise/$short-advise.json" -o "runs/advise/$short-advised.json" \
    > "runs/advise/$short-advise.txt"
  # Pick: the top TOP by predicted tokens/s and OTHERS seeded-random others (predicted step
  # below MAX_MS); one line per pick: name precision checkpointing batch grad_accum.
  /usr/bin/python3 - "runs/advise/$short-advise.json" "$short" "$TOP" "$OTHERS" "$MAX_MS" "$SEED" \
      runs/advise/ranked.json "$spec" > runs/advise/picks.txt <<'PY'
import json, random, sys
path, short, top, others, max_ms, seed, ranked_path, spec = sys.argv[1:]
d = json.load(open(path))
c = [x for x in d["candidates"] if x.get("fits")]
c.sort(key=lambda x: -x["predicted_tokens_per_s"])
for i, x in enumerate(c):
    x["rank"] = i + 1
picks = c[:int(top)]
rest = [x for x in c[int(top):] if x["predicted_ms"] < float(max_ms)]
random.Random(int(seed)).shuffle(rest)
picks += rest[:int(others)]
ranked = json.load(open(ranked_path))
for x in picks:
    name = "%s-r%d-%s-%s-b%d-ga%d" % (short, x["rank"], x["precision"], x["checkpointing"],
                                      x["batch_size"], x["grad_accum"])
    x["name"], x["spec"], x["model"] = name, spec, short
    x["advised"] = bool(x.get("chosen"))
    ranked.append(x)
    print(name, x["precision"], x["checkpointing"], x["batch_size"], x["grad_accum"])
json.dump(ranked, open(ranked_path, "w"), indent=1)
PY
  while read -r name prec ck b ga; do
    args=(--set training.precision=$prec --set training.checkpointing=$ck
          --set training.batch_size=$b --set training.grad_accum=$ga)
    "$TGC" compile "$spec" --target cuda "${args[@]}" -o "runs/advise/cost/$name" > /dev/null
    strip "runs/advise/cost/$name"
    echo "$name $spec ${args[*]}" >> runs/advise/configs.txt
  done < runs/advise/picks.txt
done
tar -C runs/advise -cf - cost | xz -9 -T2 > runs/advise/cost.tar.xz
rm -rf runs/advise/cost runs/advise/picks.txt
ls -la runs/advise; cat runs/advise/configs.txt
