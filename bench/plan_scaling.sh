#!/usr/bin/env bash
# Planning cost against depth: plans examples/gpt2-small.json (or $SPEC) at several
# n_layers and prints one row per depth:
#   layers, ops (in the planned IR, all three step functions), seconds and max RSS (MB)
#   of `tgc plan` (wall clock and peak resident set from /usr/bin/time).
# The compile that counts the ops is not timed. docs/memory-planning.md ("Planning cost")
# holds a measured table; speed targets live here, not in timed tests.
#
# Usage: bench/plan_scaling.sh [LAYERS...]     (default: 12 48 200 500 1000 1024)
# Env:   TGC (default build-drv/bin/tgc, else build/bin/tgc), SPEC, TARGET (default cuda).
# n_layers is capped at 1024 by the spec limits (docs/spec.md "Limits"), so 2000 layers
# cannot be planned; 1024 is the deepest row.
set -euo pipefail
cd "$(dirname "$0")/.."
TGC=${TGC:-}
if [[ -z "$TGC" ]]; then
  for c in build-drv/bin/tgc build/bin/tgc; do
    [[ -x "$c" ]] && TGC=$c && break
  done
fi
[[ -x "${TGC:-}" ]] || { echo "plan_scaling.sh: no tgc binary (set TGC=...)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "plan_scaling.sh: /usr/bin/time is required" >&2; exit 1; }
SPEC=${SPEC:-examples/gpt2-small.json}
TARGET=${TARGET:-cuda}
LAYERS=("$@")
[[ ${#LAYERS[@]} -gt 0 ]] || LAYERS=(12 48 200 500 1000 1024)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-7s %9s %9s %9s\n' layers ops seconds max_MB
for n in "${LAYERS[@]}"; do
  "$TGC" compile "$SPEC" --set "model.n_layers=$n" --target "$TARGET" --emit=planned \
    -o "$tmp/planned.mlir"
  # One op per line at function-body indentation (4 spaces), terminators included.
  ops=$(grep -cE '^    [^ }]' "$tmp/planned.mlir")
  /usr/bin/time -f '%e %M' -o "$tmp/time" \
    "$TGC" plan "$SPEC" --set "model.n_layers=$n" --target "$TARGET" >/dev/null
  read -r secs kb <"$tmp/time"
  printf '%-7s %9s %9s %9d\n' "$n" "$ops" "$secs" $((kb / 1024))
done
