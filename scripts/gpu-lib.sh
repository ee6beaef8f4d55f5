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
