#!/usr/bin/env bash
# Fuzzes every parser of outside input with libFuzzer (docs/testing.md, "Fuzzing"):
# builds fuzz/ with clang++-19 and -fsanitize=fuzzer,address,undefined into build-fuzz/, then
# runs each harness from its seed corpus fuzz/corpus/<name>/ for RUNS executions (or
# MAX_TIME seconds, whichever comes first), JOBS harnesses at a time, with -timeout=5 (an
# input taking longer is a hang). New interesting inputs go to build-fuzz/work/<name>/ (the
# seed corpus is not modified); crashes, hangs and OOMs to build-fuzz/artifacts/<name>/.
# Prints a table: harness, executions, crashes (+hangs, OOMs), time. Exit 1 if anything
# was found: minimize it (./build-fuzz/tgc-fuzz-NAME -minimize_crash=1 -runs=10000 FILE),
# fix the parser, and add the input to fuzz/corpus/NAME/ so ctest replays it.
#   usage: scripts/fuzz.sh [NAME...]       (default: spec npy safetensors meta)
#   env:   RUNS=1000000  MAX_TIME=1200 (seconds per harness)  JOBS=2  CXX=clang++-19
# Needs: apt-get install clang-19 libclang-rt-19-dev (not part of scripts/setup.sh: CI only
# replays the corpus, with the default build's tgc-fuzz-replay-* tests).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1000000}
MAX_TIME=${MAX_TIME:-1200}
JOBS=${JOBS:-2}
CXX=${CXX:-clang++-19}
B=build-fuzz
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(spec npy safetensors meta)

command -v "$CXX" >/dev/null || { echo "$CXX not found: apt-get install clang-19 libclang-rt-19-dev"; exit 2; }
cmake -S fuzz -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTGC_FUZZ=ON \
  -DCMAKE_CXX_COMPILER="$CXX" >/dev/null
ninja -C "$B" -j"$JOBS" $(printf 'tgc-fuzz-%s ' "${names[@]}") >/dev/null

run_one() {
  local n=$1
  mkdir -p "$B/work/$n" "$B/artifacts/$n"
  local t0=$SECONDS rc=0
  "$B/tgc-fuzz-$n" -runs="$RUNS" -max_total_time="$MAX_TIME" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$B/artifacts/$n/" \
    "$B/work/$n" "fuzz/corpus/$n" >"$B/fuzz-$n.log" 2>&1 || rc=$?
  echo "$rc $((SECONDS - t0))" >"$B/fuzz-$n.result"
}

running=0
for n in "${names[@]}"; do
  rm -f "$B/fuzz-$n.result"
  run_one "$n" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

found=0
printf '%-12s %12s %8s %6s %6s %8s\n' harness executions crashes hangs ooms time_s
for n in "${names[@]}"; do
  read -r rc secs <"$B/fuzz-$n.result"
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$B/fuzz-$n.log" | awk '{print $2}' | tail -1)
  crashes=$(find "$B/artifacts/$n" -name 'crash-*' -o -name 'leak-*' | wc -l)
  hangs=$(find "$B/artifacts/$n" -name 'timeout-*' -o -name 'slow-unit-*' | wc -l)
  ooms=$(find "$B/artifacts/$n" -name 'oom-*' | wc -l)
  printf '%-12s %12s %8s %6s %6s %8s\n' "$n" "${execs:-?}" "$crashes" "$hangs" "$ooms" "$secs"
  if [ "$rc" != 0 ] || [ $((crashes + hangs + ooms)) -gt 0 ]; then
    found=1
    echo "  $n: libFuzzer exit $rc; see $B/fuzz-$n.log and $B/artifacts/$n/"
  fi
done
exit $found
