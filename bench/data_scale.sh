#!/usr/bin/env bash
# Start-up cost of the driver's token data against its size (issue 24): trains a tiny CPU
# model for $STEPS steps on two data directories that differ only in train.npy:
#   small: $SMALL uint16 tokens (default 10 M: 20 MB written, random ids < vocab 512)
#   big:   $BIG uint16 tokens   (default 10 B: 20 GB apparent, a SPARSE file of zeros: the
#          header, then truncate; no disk blocks, so its pages read as zero pages without
#          disk I/O: this measures the driver, not the disk)
# next to the val/test splits and meta.json of `tgc data prepare --max-bytes 64KiB --vocab 512`,
# and a third, sharded: $BIG tokens as $SHARDS sparse shards (default 100 of 100 M tokens,
# train-00000.npy ...) under a format_version 2 meta.json index (docs/data.md), trained with
# --sampling random ("shards") and --sampling shuffle ("shuffle": true epochs, windows taken
# from the epoch's permutation); and prints per run: seconds from exec to the first "step"
# line, total seconds, and peak RSS
# (GNU time's %M; it counts the page-cache pages the process mapped) in MiB, $REPS times
# each. Before each run train.npy's pages are dropped from the page cache (fadvise
# DONTNEED, that file only): every run starts with a cold train.npy. The issue's targets: the big run starts in < 2 s
# and takes < 200 MB more host memory than the small one. docs/data.md holds measured numbers.
#
# Usage: bench/data_scale.sh
# Env:   TGC (default build/bin/tgc; it links the driver archive of its build tree, or of
#        TGC_RUNTIME_DIR), BIG, SMALL, SHARDS (default 100; 0 skips the sharded runs), STEPS
#        (default 20), REPS (default 3), RANKS (default 1: data-parallel ranks as threads),
#        KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
TGC=${TGC:-build/bin/tgc}
[[ -x "$TGC" ]] || { echo "data_scale.sh: no tgc binary at $TGC (set TGC=...)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "data_scale.sh: /usr/bin/time is required" >&2; exit 1; }
BIG=${BIG:-10000000000}
SMALL=${SMALL:-10000000}
SHARDS=${SHARDS:-100}
STEPS=${STEPS:-20}
REPS=${REPS:-3}
RANKS=${RANKS:-1}
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { echo "data_scale.sh: $PY needs numpy" >&2; exit 1; }

tmp=$(mktemp -d)
if [[ "${KEEP:-0}" == 1 ]]; then echo "work directory: $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
"$TGC" data prepare --max-bytes 64KiB --vocab 512 --out "$tmp/prepared" >"$tmp/prepare.log" 2>&1 ||
  { cat "$tmp/prepare.log" >&2; exit 1; }
"$TGC" compile examples/tiny.json --set model.n_layers=1 --set model.vocab_size=512 \
  --set model.context=16 --set model.d_model=32 --set model.n_heads=2 --set model.d_ff=64 \
  --set training.batch_size=2 --set "training.distributed.ranks=$RANKS" -o "$tmp/train" \
  >/dev/null

$PY - "$tmp" "$SMALL" "$BIG" "$STEPS" "$REPS" "$SHARDS" <<'PYEOF'
import json, os, shutil, subprocess, sys, time
import numpy as np

tmp, small, big, steps, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
shards = int(sys.argv[6])

def sparse_npy(path, count):
    """A .npy of `count` uint16 zeros whose data is a hole (no disk blocks)."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<u2", "fortran_order": False, "shape": (count,)})
        f.truncate(f.tell() + 2 * count)

def make(name, count, sparse, n_shards=0):
    """DIR with train as one file (train.npy) or as n_shards sparse shards under a
    format_version 2 index; val/test: the prepared ones (one shard each). Returns the
    directory, the train files, their bytes and allocated bytes."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for f in ("val.npy", "test.npy", "tokenizer.model"):
        shutil.copy(os.path.join(tmp, "prepared", f), d)
    vocab = json.load(open(os.path.join(tmp, "prepared", "meta.json")))["vocab_size"]
    if n_shards:
        per = count // n_shards
        sizes = [per] * (n_shards - 1) + [count - per * (n_shards - 1)]
        files = [os.path.join(d, "train-%05d.npy" % i) for i in range(n_shards)]
        for path, n in zip(files, sizes):
            sparse_npy(path, n)
        split = lambda name: {"tokens": int(np.load(os.path.join(d, name), mmap_mode="r").size)}
        val, test = split("val.npy"), split("test.npy")
        val["shards"] = [{"file": "val.npy", "tokens": val["tokens"]}]
        test["shards"] = [{"file": "test.npy", "tokens": test["tokens"]}]
        meta = {"format": "tgc-tokens", "format_version": 2, "vocab_size": vocab,
                "dtype": "uint16", "eos_id": None,
                "splits": {"train": {"tokens": count, "shards": [
                    {"file": os.path.basename(p), "tokens": n} for p, n in zip(files, sizes)]},
                    "val": val, "test": test}}
    else:
        files = [os.path.join(d, "train.npy")]
        if sparse:
            sparse_npy(files[0], count)
        else:
            np.save(files[0], np.random.default_rng(0).integers(0, 512, count, dtype=np.uint16))
        meta = {"vocab_size": vocab}
    json.dump(meta, open(os.path.join(d, "meta.json"), "w"), indent=2)
    size = sum(os.stat(p).st_size for p in files)
    alloc = sum(os.stat(p).st_blocks * 512 for p in files)
    if sparse and alloc > 64 << 20:
        sys.exit(f"data_scale.sh: the file system under {tmp} does not keep sparse files sparse")
    return d, files, size, alloc

def evict(path):
    """Drops the file's clean pages from the page cache (this file only), so that every run
    starts alike: pages np.save just wrote sit in the cache as large folios, and a fault on
    one maps all of it, which RSS counts (26 MiB instead of 8 MiB for the 10 M-token run)."""
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def run(d, files, extra):
    for f in files:
        evict(f)
    # GNU time's %M: the peak RSS of the trainer alone (wait4's ru_maxrss of a child forked
    # by this Python would include this Python's RSS: Linux carries the peak over exec).
    rss_file = os.path.join(tmp, "rss.txt")
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss_file,
                          os.path.join(tmp, "train"), "--data", d, "--steps", steps] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = None
    for line in p.stdout:
        if first is None and line.startswith("step "):
            first = time.monotonic() - t0
    err = p.stderr.read()
    rc = p.wait()
    total = time.monotonic() - t0
    if rc != 0:
        sys.exit(f"data_scale.sh: {d}: exit status {rc}\n{err}")
    with open(rss_file) as f:
        return first, total, int(f.read().split()[-1]) / 1024.0

print(f"{'data':<7} {'train tokens':>14} {'files':>5} {'file bytes':>14} {'allocated':>12} "
      f"{'first step s':>12} {'total s':>8} {'peak RSS MiB':>12}")
rss = {}
runs = [("small", small, False, 0, []), ("big", big, True, 0, [])]
if shards:
    runs += [("shards", big, True, shards, ["--sampling", "random"]),
             ("shuffle", big, True, shards, ["--sampling", "shuffle"])]
made = {}
for name, count, sparse, n_shards, extra in runs:
    key = (count, sparse, n_shards)
    if key not in made:
        made[key] = make(name, count, sparse, n_shards)
    d, files, size, alloc = made[key]
    for _ in range(reps):
        first, total, mb = run(d, files, extra)
        rss.setdefault(name, []).append(mb)
        print(f"{name:<7} {count:>14} {len(files):>5} {size:>14} {alloc:>12} {first:>12.3f} "
              f"{total:>8.3f} {mb:>12.1f}", flush=True)
for d, files, _, _ in made.values():
    for f in files:  # sparse, but 20 GB to anything that copies them
        os.remove(f)
for name in rss:
    if name != "small":
        print(f"{name} - small peak RSS (max over reps): "
              f"{max(rss[name]) - max(rss['small']):.1f} MiB")
PYEOF
