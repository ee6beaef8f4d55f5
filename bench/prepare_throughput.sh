#!/usr/bin/env bash
# Throughput of `tgc data prepare` (issue 24; docs/prepare.md holds measured numbers):
# encodes one corpus with 1 and with all ($THREADS) threads, with
#   hf: a GPT-2-style byte-level BPE tokenizer.json (GPT-2's pre-tokenizer regex and byte
#       alphabet, 50,256 merges + <|endoftext|> = vocab 50,257), trained here with the
#       `tokenizers` package on the first $TRAIN_MB MB of the corpus (no hub access: the real
#       GPT-2 file cannot be fetched; the encoder is the same code and the same vocab size),
#   sp: the sentencepiece BPE prepare trains (--vocab $SP_VOCAB; its training is not timed),
# and prints per run: the encoding rate (MB of text per second, from prepare's "encoded:"
# line: every split, shard writing included), per thread, the wall time of the whole run
# and the peak RSS: GNU time's %M (the larger of tgc and its Python worker: rusage's maxrss
# is a maximum over the process and its reaped children, not a sum) and the peak of
# tgc + worker summed, sampled from /proc every 0.2 s; "tgc RSS" is tgc's own peak (VmHWM of
# /proc/PID/status, the last value seen before it exits), without the worker. "ids" is the
# start of the SHA-256 of every .npy file written (sorted by name): the same for every
# thread count and for every version of prepare that must not change the ids. "load" is the
# 5-minute load average at the end of the run (the machine may be shared).
#
# The corpus ($WORK/corpus, built once): the Linux kernel documentation (.rst.gz of
# linux-doc, 42 MB) and the other gzip'd prose of /usr/share/doc (changelog*, NEWS*,
# README*, *.txt/.md/.rst; files that are not valid UTF-8 or have a line over 1000
# characters skipped), one document per file, repeated until $CORPUS_MB MB.
#
# Usage: bench/prepare_throughput.sh
# Env:   TGC (default build/bin/tgc), WORK (default /tmp/tgc-prepare-bench; kept: the corpus
#        and tokenizer are reused), CORPUS_MB (default 300), TRAIN_MB (default 20),
#        SP_VOCAB (default 8192), THREADS (default: nproc), RUNS (default "hf sp"),
#        PYTHON (default .venv-hf/bin/python: tokenizers).
set -euo pipefail
cd "$(dirname "$0")/.."
TGC=${TGC:-build/bin/tgc}
WORK=${WORK:-/tmp/tgc-prepare-bench}
CORPUS_MB=${CORPUS_MB:-300}
TRAIN_MB=${TRAIN_MB:-20}
SP_VOCAB=${SP_VOCAB:-8192}
THREADS=${THREADS:-$(nproc)}
RUNS=${RUNS:-hf sp}
PYTHON=${PYTHON:-.venv-hf/bin/python}
[[ -x "$TGC" ]] || { echo "prepare_throughput.sh: no tgc at $TGC (set TGC=...)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "prepare_throughput.sh: /usr/bin/time is required" >&2; exit 1; }
"$PYTHON" -c 'import tokenizers' 2>/dev/null ||
  { echo "prepare_throughput.sh: $PYTHON lacks tokenizers (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$WORK"

corpus="$WORK/corpus-${CORPUS_MB}MB"
if [[ ! -f "$corpus/.done" ]]; then
  echo "[bench] building $corpus"
  rm -rf "$corpus"
  "$PYTHON" - "$corpus" "$CORPUS_MB" <<'PY'
import gzip, os, sys
out, mb = sys.argv[1], int(sys.argv[2])
os.makedirs(out)
docs = []
roots = sorted(d for d in os.listdir("/usr/share/doc") if d.startswith("linux-doc-"))
paths = []
for r in roots:
    for dp, dn, fn in os.walk(os.path.join("/usr/share/doc", r, "Documentation")):
        if "/translations" in dp:
            continue
        paths += [os.path.join(dp, f) for f in fn if f.endswith(".rst.gz")]
# Prose only: changelogs, NEWS, READMEs and .txt/.md/.rst; no PostScript, HTML or data.
prose = ("changelog", "news", "readme")
for dp, dn, fn in os.walk("/usr/share/doc"):
    if "/linux-doc-" in dp:
        continue
    paths += [os.path.join(dp, f) for f in fn
              if f.endswith(".gz") and (f.lower().startswith(prose) or
                                        f.endswith((".txt.gz", ".md.gz", ".rst.gz")))]
paths.sort()
for p in paths:
    try:
        t = gzip.open(p).read().decode("utf-8")
    except Exception:
        continue
    if t.strip() and max(map(len, t.split("\n"))) <= 1000:
        docs.append(t.encode())
total, rep, n = 0, 0, 0
while total < mb * 1000000:
    d = os.path.join(out, "r%02d" % rep)
    os.makedirs(d)
    for i, t in enumerate(docs):
        with open(os.path.join(d, "d%06d.txt" % i), "wb") as f:
            f.write(t)
        total += len(t)
        n += 1
        if total >= mb * 1000000:
            break
    rep += 1
print("[bench] corpus: %d documents, %.1f MB (%d distinct)" % (n, total / 1e6, len(docs)))
PY
  touch "$corpus/.done"
fi

tok="$WORK/gpt2-style-${TRAIN_MB}MB.json"
if [[ ! -f "$tok" ]]; then
  echo "[bench] training a GPT-2-style byte-level BPE (vocab 50257) on $TRAIN_MB MB"
  "$PYTHON" - "$corpus" "$TRAIN_MB" "$tok" <<'PY'
import os, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
corpus, mb, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
files, total = [], 0
for dp, dn, fn in sorted(os.walk(corpus)):
    for f in sorted(fn):
        if f.endswith(".txt") and total < mb * 1000000:
            files.append(os.path.join(dp, f))
            total += os.path.getsize(files[-1])
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=50257, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
tok.train(files, trainer)
tok.save(out)
print("[bench] tokenizer: vocab %d" % tok.get_vocab_size(with_added_tokens=True))
PY
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "[bench] $(date -u +%Y-%m-%d) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), commit $commit"
printf '%-4s %7s %10s %12s %9s %12s %14s %12s %12s %6s\n' run threads "MB/s" "MB/s/thread" \
  "wall s" "max RSS MiB" "sum RSS MiB" "tgc RSS MiB" "ids" "load"
for run in $RUNS; do
  for t in 1 $THREADS; do
    out="$WORK/out-$run-$t"
    args=(--input "$corpus" --out "$out" --threads "$t")
    if [[ $run == hf ]]; then args+=(--tokenizer "$tok"); else args+=(--vocab "$SP_VOCAB"); fi
    /usr/bin/time -f '%e %M' -o "$WORK/time-$run-$t" "$TGC" data prepare "${args[@]}" \
      >"$WORK/log-$run-$t" 2>&1 &
    tpid=$!
    peak=0
    hwm=0
    while kill -0 "$tpid" 2>/dev/null; do
      for c in $(pgrep -P "$tpid" 2>/dev/null || true); do
        h=$( (grep VmHWM "/proc/$c/status" 2>/dev/null || true) | awk '{print $2+0}')
        if ((${h:-0} > hwm)); then hwm=$h; fi
      done
      # /usr/bin/time -> tgc -> python: the RSS of the whole tree but time itself.
      # (ps exits 1 when there is no such process: pipefail would end the script.)
      kb=$( (ps -o rss= --ppid "$tpid" 2>/dev/null || true) | awk '{s+=$1} END {print s+0}')
      for c in $(pgrep -P "$tpid" 2>/dev/null || true); do
        kb=$((kb + $( (ps -o rss= --ppid "$c" 2>/dev/null || true) | awk '{s+=$1} END {print s+0}')))
      done
      if ((kb > peak)); then peak=$kb; fi
      sleep 0.2
    done
    wait "$tpid" || { echo "run $run $t failed:"; tail "$WORK/log-$run-$t"; exit 1; }
    line=$(grep 'encoded:' "$WORK/log-$run-$t")
    rate=$(sed -E 's/.* s, ([0-9.]+) MB\/s.*/\1/' <<<"$line")
    read -r wall rss <"$WORK/time-$run-$t"
    ids=$(cat $(ls "$out"/*.npy | sort) | sha256sum | cut -c1-12)
    printf '%-4s %7d %10.2f %12.2f %9.1f %12.0f %14.0f %12.0f %12s %6s\n' "$run" "$t" "$rate" \
      "$(echo "$rate / $t" | bc -l)" "$wall" "$(echo "$rss / 1024" | bc -l)" \
      "$(echo "$peak / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" "$ids" \
      "$(cut -d' ' -f2 /proc/loadavg)"
  done
  if cmp -s "$WORK/out-$run-1/train.npy" "$WORK/out-$run-$THREADS/train.npy" ||
     "$PYTHON" test/e2e/prepare_check.py same "$WORK/out-$run-1" "$WORK/out-$run-$THREADS" >/dev/null; then
    echo "[bench] $run: 1 and $THREADS threads wrote the same ids"
  else
    echo "[bench] $run: FAIL: 1 and $THREADS threads differ"
  fi
  rm -rf "$WORK/out-$run-1" "$WORK/out-$run-$THREADS"
done
