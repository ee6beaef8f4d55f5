#!/usr/bin/env bash
# Start-up cost of the driver's token data against its size (issue 24): trains a tiny CPU
# model for $STEPS steps on two data directories that differ only in train.npy:
#   small: $SMALL uint16 tokens (default 10 M: 20 MB written, random ids < vocab 512)
#   big:   $BIG uint16 tokens   (default 10 B: 20 GB apparent, a SPARSE file of zeros: the
#          header, then truncate; no disk blocks, so its pages read as zero pages without
#          disk I/O: this measures the driver, not the disk)
# next to the val/test splits and meta.json of `tgc data prepare --max-bytes 64KiB --vocab 512`,
# and prints per run: seconds from exec to the first "step" line, total seconds, and peak RSS
# (GNU time's %M; it counts the page-cache pages the process mapped) in MiB, $REPS times
# each. Before each run train.npy's pages are dropped from the page cache (fadvise
# DONTNEED, that file only): every run starts with a cold train.npy. The issue's targets: the big run starts in < 2 s
# and takes < 200 MB more host memory than the small one. docs/data.md holds measured numbers.
#
# Usage: bench/data_scale.sh
# Env:   TGC (default build/bin/tgc; it links the driver archive of its build tree, or of
#        TGC_RUNTIME_DIR), BIG, SMALL, STEPS (default 20), REPS (default 3), RANKS (default 1:
#        data-parallel ranks as threads), KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
TGC=${TGC:-build/bin/tgc}
[[ -x "$TGC" ]] || { echo "data_scale.sh: no tgc binary at $TGC (set TGC=...)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "data_scale.sh: /usr/bin/time is required" >&2; exit 1; }
BIG=${BIG:-10000000000}
SMALL=${SMALL:-10000000}
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

$PY - "$tmp" "$SMALL" "$BIG" "$STEPS" "$REPS" <<'PYEOF'
import json, os, shutil, subprocess, sys, time
import numpy as np

tmp, small, big, steps, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])

def make(name, count, sparse):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for f in ("val.npy", "test.npy", "tokenizer.model"):
        shutil.copy(os.path.join(tmp, "prepared", f), d)
    meta = json.load(open(os.path.join(tmp, "prepared", "meta.json")))
    meta["tokens"]["train"] = count
    json.dump(meta, open(os.path.join(d, "meta.json"), "w"), indent=2, sort_keys=True)
    path = os.path.join(d, "train.npy")
    if sparse:
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(
                f, {"descr": "<u2", "fortran_order": False, "shape": (count,)})
            f.truncate(f.tell() + 2 * count)
    else:
        np.save(path, np.random.default_rng(0).integers(0, 512, count, dtype=np.uint16))
    st = os.stat(path)
    if sparse and st.st_blocks * 512 > 64 << 20:
        sys.exit(f"data_scale.sh: the file system under {tmp} does not keep sparse files sparse")
    return d, st.st_size, st.st_blocks * 512

def evict(path):
    """Drops the file's clean pages from the page cache (this file only), so that every run
    starts alike: pages np.save just wrote sit in the cache as large folios, and a fault on
    one maps all of it, which RSS counts (26 MiB instead of 8 MiB for the 10 M-token run)."""
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def run(d):
    evict(os.path.join(d, "train.npy"))
    # GNU time's %M: the peak RSS of the trainer alone (wait4's ru_maxrss of a child forked
    # by this Python would include this Python's RSS: Linux carries the peak over exec).
    rss_file = os.path.join(tmp, "rss.txt")
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss_file,
                          os.path.join(tmp, "train"), "--data", d, "--steps", steps],
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

print(f"{'data':<6} {'train tokens':>14} {'file bytes':>14} {'allocated':>12} "
      f"{'first step s':>12} {'total s':>8} {'peak RSS MiB':>12}")
rss = {}
for name, count, sparse in (("small", small, False), ("big", big, True)):
    d, size, alloc = make(name, count, sparse)
    for _ in range(reps):
        first, total, mb = run(d)
        rss.setdefault(name, []).append(mb)
        print(f"{name:<6} {count:>14} {size:>14} {alloc:>12} {first:>12.3f} {total:>8.3f} "
              f"{mb:>12.1f}", flush=True)
    os.remove(os.path.join(d, "train.npy"))
print(f"big - small peak RSS (max over reps): {max(rss['big']) - max(rss['small']):.1f} MiB")
PYEOF
