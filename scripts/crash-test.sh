#!/usr/bin/env bash
# Crash safety of the training executable's checkpoints (runtime/driver, issue 10).
#
# Compiles a very small examples/tiny.json for the CPU (1 layer, d_model 32, context 16: a
# step with its checkpoint takes a few ms), prepares 256 KiB of data, and makes a reference
# run of STEPS steps. Then, TRIALS times: starts the same run with --save-every 1 --save C
# --log L, kills it with SIGKILL after a random delay (anywhere from start-up to the end of
# the run), resumes from C (a fresh run if no checkpoint was written yet) to the end with the
# same --log L, and checks that L holds steps 1..STEPS once each with losses equal, as
# printed in the JSON, to the reference's (bit-exact: the JSON numbers round-trip doubles).
# A kill that leaves C.tmp behind counts as "mid-save".
# Then the full-disk case: a run resumed under `ulimit -f` (smaller than a checkpoint) must
# fail at its first save with "cannot save checkpoint C ... (the previous checkpoint is
# unchanged)", exit 1, leave C byte-identical and no C.tmp; C then resumes bit-exactly.
#
#   scripts/crash-test.sh [--trials N (200)] [--steps N (100)] [--seed S (1)] [--work DIR]
#                         [--no-full-disk] [--keep]
# tgc is taken from $TGC, else build/bin/tgc, else PATH. Prints one line per 20 trials and
# "crash-test: T trials, K killed mid-save/mid-step, all resumed bit-exactly: PASS", or the
# first failure (exit 1; the work directory is kept).
set -uo pipefail

TRIALS=200 STEPS=100 SEED=1 WORK="" FULL_DISK=1 KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) TRIALS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --no-full-disk) FULL_DISK=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "crash-test: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${TGC:-}" ]; then :
elif [ -x "$SRC/build/bin/tgc" ]; then TGC=$SRC/build/bin/tgc
else TGC=tgc; fi
if [ -z "$WORK" ]; then WORK=$(mktemp -d "${TMPDIR:-/tmp}/crash-test.XXXXXX"); fi
mkdir -p "$WORK"
cleanup() { [ "$KEEP" = 1 ] || rm -rf "$WORK"; }

fail() {
  echo "crash-test: FAIL: $*"
  echo "crash-test: work directory kept: $WORK"
  exit 1
}

# "step loss" of every training record (not eval records) of a JSONL log; nlohmann::json
# writes the keys sorted, so "loss" comes before "step".
losses() { grep -v '"eval"' "$1" | sed -nE 's/.*"loss":([^,}]*),.*"step":([0-9]+)[,}].*/\2 \1/p'; }

RANDOM=$SEED
D=$WORK/data T=$WORK/train C=$WORK/ckpt.safetensors L=$WORK/log.jsonl
"$TGC" data prepare --max-bytes 256KiB --vocab 512 --out "$D" >"$WORK/prepare.out" 2>&1 ||
  fail "tgc data prepare (see $WORK/prepare.out)"
"$TGC" compile "$SRC/examples/tiny.json" --set model.n_layers=1 --set model.vocab_size=512 \
  --set model.context=16 --set model.d_model=32 --set model.n_heads=2 --set model.d_ff=64 \
  --set training.batch_size=2 -o "$T" >"$WORK/compile.out" 2>&1 ||
  fail "tgc compile (see $WORK/compile.out)"
"$T" --data "$D" --steps "$STEPS" --log "$WORK/ref.jsonl" --quiet >/dev/null ||
  fail "the reference run failed"
losses "$WORK/ref.jsonl" >"$WORK/ref.losses"
[ "$(wc -l <"$WORK/ref.losses")" = "$STEPS" ] || fail "the reference log has no $STEPS steps"

# How long a saving run takes (ms), for the range of the kill delays; also checks that
# saving does not change the losses.
t0=$(date +%s%N)
"$T" --data "$D" --steps "$STEPS" --save-every 1 --save "$C" --log "$L" --quiet >/dev/null ||
  fail "the saving run failed"
RUN_MS=$(( ($(date +%s%N) - t0) / 1000000 + 1 ))
cmp -s <(losses "$L") "$WORK/ref.losses" || fail "--save-every 1 changed the losses"
MAX_MS=$(( RUN_MS * 21 / 20 + 5 ))

start=$(date +%s)
killed=0 mid_save=0 no_ckpt=0
for ((i = 1; i <= TRIALS; ++i)); do
  rm -f "$C" "$C.tmp" "$L"
  delay_ms=$(( (RANDOM * 32768 + RANDOM) % MAX_MS ))
  "$T" --data "$D" --steps "$STEPS" --save-every 1 --save "$C" --log "$L" --quiet \
    >/dev/null 2>"$WORK/kill.err" &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rc=$?
  what="finished before the kill"
  if [ "$rc" = 137 ]; then
    killed=$((killed + 1))
    what="killed"
    if [ -e "$C.tmp" ]; then mid_save=$((mid_save + 1)); what="killed mid-save"; fi
  elif [ "$rc" != 0 ]; then
    fail "trial $i: the run exited with $rc before the kill: $(cat "$WORK/kill.err")"
  fi
  ctx="trial $i (kill after ${delay_ms} ms, $what)"
  if [ -e "$C" ]; then
    "$T" --data "$D" --steps "$STEPS" --resume "$C" --save "$C" --log "$L" --quiet \
      >/dev/null 2>"$WORK/resume.err" ||
      fail "$ctx: resuming from the checkpoint failed: $(cat "$WORK/resume.err")"
  else
    no_ckpt=$((no_ckpt + 1))
    "$T" --data "$D" --steps "$STEPS" --save "$C" --log "$L" --quiet >/dev/null \
      2>"$WORK/resume.err" || fail "$ctx: the restarted run failed: $(cat "$WORK/resume.err")"
  fi
  if ! cmp -s <(losses "$L") "$WORK/ref.losses"; then
    diff <(losses "$L") "$WORK/ref.losses" >"$WORK/diff.txt"
    fail "$ctx: the resumed log differs from the reference (< resumed, > reference):" \
      "$(head -6 "$WORK/diff.txt")"
  fi
  if (( i % 20 == 0 )); then
    echo "crash-test: $i/$TRIALS trials, $killed killed ($mid_save mid-save), $no_ckpt before" \
      "the first checkpoint"
  fi
done
secs=$(( $(date +%s) - start ))
echo "crash-test: $TRIALS trials of $STEPS steps (kill delays 0..$MAX_MS ms, ${secs} s):" \
  "$killed killed ($mid_save mid-save), $no_ckpt before the first checkpoint"
echo "crash-test: $TRIALS trials, $killed killed mid-save/mid-step, all resumed bit-exactly: PASS"

if [ "$FULL_DISK" = 1 ]; then
  # A checkpoint at step 5, then a run resumed from it under a file size limit below the size
  # of a checkpoint: its first save (step 6) fails with EFBIG ("File too large").
  rm -f "$C" "$C.tmp" "$L"
  "$T" --data "$D" --steps "$STEPS" --stop-after 5 --save "$C" --log "$L" --quiet >/dev/null ||
    fail "full disk: the first run failed"
  cp "$C" "$WORK/ckpt.before"
  limit_kb=$(( $(wc -c <"$C") / 1024 / 2 ))
  ( ulimit -f "$limit_kb"
    exec "$T" --data "$D" --steps "$STEPS" --resume "$C" --save-every 2 --save "$C" \
      --log "$L" --quiet ) >/dev/null 2>"$WORK/full.err"
  rc=$?
  [ "$rc" = 1 ] || fail "full disk: exit status $rc, expected 1: $(cat "$WORK/full.err")"
  echo "crash-test: full disk (ulimit -f $limit_kb): $(grep -m1 'error:' "$WORK/full.err" |
    sed 's|^.*error: ||; s|'"$WORK"'/||g')"
  grep -q "cannot save checkpoint $C at step 6: .*(the previous checkpoint is unchanged)" \
    "$WORK/full.err" || fail "full disk: unexpected message: $(cat "$WORK/full.err")"
  cmp -s "$C" "$WORK/ckpt.before" || fail "full disk: the previous checkpoint was changed"
  [ ! -e "$C.tmp" ] || fail "full disk: $C.tmp was left behind"
  "$T" --data "$D" --steps "$STEPS" --resume "$C" --log "$L" --quiet >/dev/null \
    2>"$WORK/resume.err" || fail "full disk: resuming failed: $(cat "$WORK/resume.err")"
  cmp -s <(losses "$L") "$WORK/ref.losses" ||
    fail "full disk: the resumed log differs from the reference"
  echo "crash-test: full disk: previous checkpoint unchanged, resumed bit-exactly: PASS"
fi
cleanup
