#!/usr/bin/env bash
# Runs every test: installs what is missing, builds (build/), then the GoogleTest unit
# tests (ctest) and the lit regression suite (passes, dialect, frontend, end to end).
# Ends with one line "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup/build failed"; echo "0 passed, 1 failed"; exit 1; }

echo "== unit tests (ctest) =="
ctest --test-dir build --output-on-failure 2>&1 | tee build/ctest.log
unit_total=$(grep -Eo 'out of [0-9]+' build/ctest.log | tail -1 | grep -Eo '[0-9]+' || echo 0)
unit_failed=$(grep -Eo '[0-9]+ tests failed' build/ctest.log | tail -1 | grep -Eo '^[0-9]+' || echo 0)

echo "== lit regression tests =="
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/test 2>&1 | tee build/lit.log
lit_passed=$(grep -E '^\s*Passed\s*:' build/lit.log | grep -Eo '[0-9]+' | head -1); lit_passed=${lit_passed:-0}
lit_failed=0
for k in Failed Unresolved 'Timed Out' 'Unexpectedly Passed'; do
  n=$(grep -E "^\s*$k\s*:" build/lit.log | grep -Eo '[0-9]+' | head -1); lit_failed=$((lit_failed + ${n:-0}))
done

passed=$((unit_total - unit_failed + lit_passed))
failed=$((unit_failed + lit_failed))
echo ""
echo "unit: $((unit_total - unit_failed))/$unit_total passed; lit: $lit_passed passed, $lit_failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
