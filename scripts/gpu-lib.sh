# gpu-lib.sh — shared by the GPU scripts (sourced; runs on the GPU machine, builds nothing).

# unpack NAME: runs/NAME, runs/NAME.xz or runs/NAME.gz -> path of an executable file ("" when
# none was carried); compressed ones are unpacked to /tmp.
unpack() {
  local f=$1; case "$f" in runs/*) ;; *) f=runs/$f ;; esac
  local t=/tmp/$(basename "$f")
  if [ -x "$f" ]; then echo "$f";
  elif [ -f "$f.xz" ]; then python3 -c "import lzma,sys;open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$t" && chmod +x "$t" && echo "$t";
  elif [ -f "$f.gz" ]; then gunzip -c "$f.gz" > "$t" && chmod +x "$t" && echo "$t";
  else echo ""; fi
}

# gpu_unpack TAG: the call scripts' preamble. Puts the CUDA toolkit's libraries on the loader
# path, unpacks runs/llama/llama.tar.xz (scripts/gpu-llama-artifacts.sh) into /tmp/TAG-bin and
# makes an empty /tmp/TAG-logs; sets B (the executables' folder) and L (the logs' folder).
gpu_unpack() {
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  B=/tmp/$1-bin; rm -rf "$B"; mkdir -p "$B"; tar -C "$B" -xJf runs/llama/llama.tar.xz; B=$B/llama
  L=/tmp/$1-logs; rm -rf "$L"; mkdir -p "$L"
}

# step_table OUT: the table of the tgc-*.jsonl runs under OUT (median ms/step after 2 steps,
# first and last loss, plan and used memory from the run's log) and torch-compile-bf16.json.
step_table() {
python3 - "$1" <<'PY'
import json, os, re, statistics, sys
out = sys.argv[1]
print("\n| run (GPT-2 small, B=16, T=1024) | ms/step (median) | loss first -> last | plan GiB | used GiB |")
print("|---|---|---|---|---|")
for f in sorted(os.listdir(out)):
    if not (f.startswith("tgc-") and f.endswith(".jsonl")) or "profile" in f: continue
    name = f[:-6]
    rows = [r for r in (json.loads(l) for l in open(f"{out}/{f}") if l.strip().startswith("{"))
            if "ms" in r and "eval" not in r]
    if not rows: print(f"| {name} | - | - | - | - |"); continue
    ms = statistics.median(r["ms"] for r in (rows[2:] or rows))
    log = open(f"{out}/{name}.log").read()
    m = re.search(r"plan (\d+) bytes.*used (\d+) bytes", log)
    mem = f"{int(m[1])/2**30:.2f} | {int(m[2])/2**30:.2f}" if m else "- | -"
    print(f"| {name} | {ms:.1f} | {rows[0]['loss']:.3f} -> {rows[-1]['loss']:.3f} | {mem} |")
try:
    r = json.load(open(f"{out}/torch-compile-bf16.json"))
    print(f"| torch {r['mode']} | {r['ms_per_step']:.1f} | - | peak {r['peak_bytes']/2**30:.2f} | - |")
except Exception as e:
    print(f"| torch compile+bf16 | failed: {e} | - | - | - |")
PY
}

# mkdata DIR VOCAB TOKENS: a synthetic token dataset (train / val / test .npy of uniform
# random uint32 ids below VOCAB, seed 0; val and test TOKENS / 8) with its meta.json.
mkdata() { # dir vocab tokens
  python3 - "$@" <<'PY'
import json, os, sys, numpy as np
d, V, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
for split, k in (("train", n), ("val", n // 8), ("test", n // 8)):
    np.save(f"{d}/{split}.npy", rng.integers(0, V, size=k, dtype=np.uint32))
json.dump({"vocab_size": V, "eos_id": 0, "tokenizer": "synthetic"}, open(f"{d}/meta.json", "w"))
PY
}

# steps_ab B L REPS "MODELS" "VARIANTS": alternating repetitions of 20 training steps of the
# executables B/MODEL (gpt2s, gpt2m, gpt2l: vocab 50304; hd128*: 32000; llama1b*, smollm2*,
# tiny: 128256 / 49152 / per meta) on synthetic data made once under B/data-VOCAB, each under
# each variant: "-" (the default) or NAME=VALUE[,NAME=VALUE] (environment), "llmc-r0",
# "llmc-r1" or "llmc-r0ge2" for llm.c (gpt2s only: runs/llmc carried, bench/llmc_step.sh,
# logs L/VARIANT-MODEL-REP.json / .out), "torch" for
# torch.compile at the model's shape (bench/torch_gpt2_step.py --compile --bf16 for the GPT-2
# shapes and hd128; bench/torch_llama_step.py on examples/llama3.2-1b.json (batch 4) or
# smollm2-135m.json (8) for llama1b and smollm2, llama1bu and smollm2u with --untied) and "torch-ro" for the same with
# --compile-mode reduce-overhead (its forward and backward as CUDA graphs; GPT-2 harness only). Order per repetition: models outer, variants inner. Logs:
# L/tgc-MODEL-TAG-REP.jsonl / .log (TAG the variant with = , / : turned into -),
# L/torch-MODEL-REP.json, L/torchro-MODEL-REP.json and L/torchsame-MODEL-REP.json ("torch-same":
# torch.compile on one repeated batch, the harness before 2026-11-30). steps_summary L prints
# the table.
steps_ab() { # B L REPS MODELS VARIANTS
  local B=$1 L=$2 reps=$3 models=$4 variants=$5 r m v V tag
  # REP_FROM=K numbers the repetitions K.. (one repetition per call, alternating with other work).
  for r in $(seq "${REP_FROM:-1}" $(( ${REP_FROM:-1} + reps - 1 ))); do for m in $models; do
    case $m in gpt2*) V=50304 ;; hd128*) V=32000 ;; llama1b*) V=128256 ;; smollm2*) V=49152 ;; *) V=50304 ;; esac
    [ -d "$B/data-$V" ] || mkdata "$B/data-$V" "$V" 4000000
    for v in $variants; do
      case $v in llmc-*) # llm.c (gpt2s only; carried runs/llmc, docs/llmc.md): llmc-r0, llmc-r1, llmc-r0ge2
        [ "$m" = gpt2s ] && [ -x runs/llmc/train_gpt2cu ] || { echo "steps_ab: no llm.c for $m"; continue; }
        [ -f /tmp/llmc-data/llmc_train.bin ] || python3 bench/llmc_data.py /tmp/llmc-data > "$L/llmc-data.log" 2>&1
        local lf=(-r 0); case $v in llmc-r1) lf=(-r 1) ;; llmc-r0ge2) lf=(-r 0 -ge 2) ;; esac
        LLMC_LOG_DIR="$L/llmc" timeout 120 bash bench/llmc_step.sh runs/llmc/train_gpt2cu /tmp/llmc-data 20 "${lf[@]}" \
          > "$L/$v-$m-$r.out" 2>&1 || echo "llm.c $v rep $r failed"
        tail -1 "$L/$v-$m-$r.out" > "$L/$v-$m-$r.json"
        continue ;;
      esac
      if [ "$v" = torch ] || [ "$v" = torch-ro ] || [ "$v" = torch-same ]; then
        local shape tn=torch extra=""
        [ "$v" = torch-ro ] && tn=torchro extra="--compile-mode reduce-overhead"
        [ "$v" = torch-same ] && tn=torchsame extra="--same-batch"
        case $m in llama1b|llama1bu|smollm2|smollm2u) # the Llama family: bench/torch_llama_step.py on the example
          local spec=examples/llama3.2-1b.json b=4
          [ "$m" = llama1bu ] && extra="$extra --untied"
          [ "$m" = smollm2 ] && spec=examples/smollm2-135m.json b=8
          [ "$m" = smollm2u ] && spec=examples/smollm2-135m.json b=8 extra="$extra --untied"
          if [ "$v" = torch-ro ]; then echo "steps_ab: no reduce-overhead mode for $m"; continue; fi
          timeout 300 python3 bench/torch_llama_step.py --spec $spec --batch $b $extra --steps 20 \
            > "$L/$tn-$m-$r.json" 2> "$L/$tn-$m-$r.err" || echo "torch.compile ($v) $m rep $r failed"
          continue ;;
        esac
        case $m in
          gpt2s) shape="--batch 16" ;;
          gpt2m) shape="--batch 8 --layers 24 --d-model 1024 --heads 16 --d-ff 4096" ;;
          gpt2l) shape="--batch 8 --layers 36 --d-model 1280 --heads 20 --d-ff 5120" ;;
          hd128) shape="--batch 8 --layers 8 --d-model 1024 --heads 8 --d-ff 4096 --vocab 32000 --context 2048" ;;
          *) echo "steps_ab: no torch.compile shape for $m"; continue ;;
        esac
        timeout 240 python3 bench/torch_gpt2_step.py --compile --bf16 $extra $shape --steps 20 \
          > "$L/$tn-$m-$r.json" 2> "$L/$tn-$m-$r.err" || echo "torch.compile ($v) $m rep $r failed"
        continue
      fi
      tag=$(echo "$v" | tr '=,/:' '----')
      ( [ "$v" = - ] || { IFS=, ; for a in $v; do export "$a"; done; }
        "$B/$m" --data "$B/data-$V" --steps 20 --eval-every 0 --eval-batches 1 \
          --log "$L/tgc-$m-$tag-$r.jsonl" > "$L/tgc-$m-$tag-$r.log" 2>&1 ) || echo "$m $v rep $r failed"
    done
  done; done
}

# steps_summary L: per model and variant the median ms/step of each repetition (steps 3-20),
# their median (min-max), the last loss per repetition and plan / used GiB; torch.compile
# rows and each variant's ratio to it when present.
steps_summary() {
python3 - "$1" <<'PY'
import glob, json, re, statistics, sys, collections
o = sys.argv[1]
runs, torch = collections.defaultdict(list), collections.defaultdict(list)
for f in sorted(glob.glob(f"{o}/tgc-*.jsonl")):
    m = re.match(r"tgc-([^-]+)-(.+)-(\d+)\.jsonl$", f.split("/")[-1])
    rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l and "eval" not in l]
    if not m or len(rows) < 3: continue
    g = re.search(r"plan (\d+) bytes.*used (\d+) bytes", open(f[:-6] + ".log").read())
    mem = f"{int(g[1])/2**30:.2f} / {int(g[2])/2**30:.2f}" if g else "-"
    runs[(m[1], m[2])].append((statistics.median(r["ms"] for r in rows[2:]), round(rows[-1]["loss"], 5), mem))
ro, same = collections.defaultdict(list), collections.defaultdict(list)
losses = collections.defaultdict(list)
llmc = collections.defaultdict(list)
for f in sorted(glob.glob(f"{o}/llmc-*-*.json")):
    m = re.match(r"(llmc-[a-z0-9]+)-([^-]+)-(\d+)\.json$", f.split("/")[-1])
    try: r = json.loads(open(f).read().strip().splitlines()[-1])
    except Exception: continue
    if m and r.get("ms"): llmc[(m[2], m[1])].append((r["ms"], r.get("llmc_alloc_mib")))
for f in sorted(glob.glob(f"{o}/torch*-*.json")):
    m = re.match(r"(torch|torchro|torchsame)-([^-]+)-(\d+)\.json$", f.split("/")[-1])
    txt = open(f).read().strip()
    if m and txt:
        r = json.loads(txt.splitlines()[-1])  # torch_gpt2_step.py: ms_per_step; torch_llama_step.py: ms
        {"torch": torch, "torchro": ro, "torchsame": same}[m[1]][m[2]].append(r.get("ms_per_step", r.get("ms")))
        losses[(m[1], m[2])].append(round(r["loss"], 3))
print("\n| model | variant | ms/step median (min-max) | / torch.compile | / torch.compile (reduce-overhead) | last loss per rep | plan / used GiB |")
print("|---|---|---|---|---|---|---|")
rat = lambda med, ref, m: f"{med / statistics.median(ref[m]):.3f}" if ref.get(m) else "-"
for (m, v), rs in sorted(runs.items()):
    t = [r[0] for r in rs]; med = statistics.median(t)
    print(f"| {m} | {v} | {med:.2f} ({min(t):.2f}-{max(t):.2f}) | {rat(med, torch, m)} | {rat(med, ro, m)} | {[r[1] for r in rs]} | {rs[-1][2]} |")
for key, name, ref in (("torch", "torch.compile", torch), ("torchro", "torch.compile (reduce-overhead)", ro),
                       ("torchsame", "torch.compile, one batch repeated", same)):
    for m, t in sorted(ref.items()):
        med = statistics.median(t)
        print(f"| {m} | {name} | {med:.2f} ({min(t):.2f}-{max(t):.2f}) | {rat(med, torch, m) if ref is not torch else '-'} | - | {losses[(key, m)]} | - |")
# llm.c: its own per-step event time (median of steps 4-20 per run); tgc's variants against it.
for (m, v), rs in sorted(llmc.items()):
    t = [r[0] for r in rs]; med = statistics.median(t)
    alloc = rs[-1][1]
    print(f"| {m} | llm.c {v[5:]} | {med:.2f} ({min(t):.2f}-{max(t):.2f}) | {rat(med, torch, m)} | - | - | allocations {alloc/1024:.2f} |" if alloc else
          f"| {m} | llm.c {v[5:]} | {med:.2f} ({min(t):.2f}-{max(t):.2f}) | {rat(med, torch, m)} | - | - | - |")
    for (tm, tv), trs in sorted(runs.items()):
        if tm == m:
            print(f"|  | tgc {tv} / llm.c {v[5:]} | {statistics.median(r[0] for r in trs) / med:.3f} |  |  |  |  |")
PY
}
