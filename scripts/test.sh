#!/usr/bin/env bash
# Runs every test: installs what is missing, builds (build/), then the GoogleTest unit
# tests (ctest) and the lit regression suite (passes, dialect, frontend, end to end).
# Ends with one line "N passed, M failed" (", K skipped" when lit skipped tests), where
# N and M count GoogleTest cases (from each binary's XML report), the other ctest entries
# (the CUDA emulator check) and lit tests. The exit status is non-zero when anything
# failed, and also when ctest or lit themselves exit non-zero (a crash before a summary
# counts as a failure, never as "0 failed"). In CI (CI=true) a missing PyTorch fails the run
# up front instead of skipping the tests that need it.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup/build failed"; echo "0 passed, 1 failed"; exit 1; }

# In CI (CI=true, as .ci/run sets) a missing PyTorch is a failure: the lit feature `torch`
# (test/lit.cfg.py: /usr/bin/python3 -c 'import torch') gates the float64 oracle tests
# (grad-check, torch-train, ...), which would otherwise only be listed as skipped.
if [ "${CI:-}" = "true" ] && ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  echo "CI: PyTorch is missing (/usr/bin/python3 -c 'import torch' fails), so the tests that" \
       "REQUIRE: torch would be skipped; install python3-torch (scripts/setup.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi

echo "== unit tests (ctest) =="
rm -rf build/gtest-xml && mkdir -p build/gtest-xml
GTEST_OUTPUT="xml:$PWD/build/gtest-xml/" ctest --test-dir build --output-on-failure 2>&1 \
  | tee build/ctest.log
ctest_rc=${PIPESTATUS[0]}

echo "== lit regression tests =="
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv --show-unsupported build/test 2>&1 | tee build/lit.log
lit_rc=${PIPESTATUS[0]}

# Counts: GoogleTest cases from the XML reports; other ctest entries one each; lit's summary.
read -r g_tests g_failed g_files g_bad_files < <(python3 - build/gtest-xml <<'PY'
import glob, sys, xml.etree.ElementTree as ET
tests = failed = files = bad = 0
for f in glob.glob(sys.argv[1] + "/*.xml"):
    try:
        r = ET.parse(f).getroot()
        t, fl = int(r.get("tests", 0)), int(r.get("failures", 0)) + int(r.get("errors", 0))
    except Exception:
        t, fl = 0, 1
    tests += t; failed += fl; files += 1; bad += fl > 0
print(tests, failed, files, bad)
PY
)
ct_total=$(grep -Eo 'out of [0-9]+' build/ctest.log | tail -1 | grep -Eo '[0-9]+' || echo 0)
ct_failed=$(grep -Eo '[0-9]+ tests failed' build/ctest.log | tail -1 | grep -Eo '^[0-9]+' || echo 0)
other_total=$((ct_total - g_files)); [ "$other_total" -lt 0 ] && other_total=0
other_failed=$((ct_failed - g_bad_files)); [ "$other_failed" -lt 0 ] && other_failed=0
count() { local n; n=$(grep -E "^\s*$1\s*:" build/lit.log | grep -Eo '[0-9]+' | head -1); echo "${n:-0}"; }
lit_passed=$(count Passed)
lit_failed=0
for k in Failed Unresolved 'Timed Out' 'Unexpectedly Passed'; do
  lit_failed=$((lit_failed + $(count "$k")))
done
lit_skipped=$(( $(count Unsupported) + $(count 'Expectedly Failed') ))

passed=$((g_tests - g_failed + other_total - other_failed + lit_passed))
failed=$((g_failed + other_failed + lit_failed))
runner=""
if [ "$ctest_rc" -ne 0 ] && [ $((g_failed + other_failed)) -eq 0 ]; then
  failed=$((failed + 1)); runner="$runner ctest exited $ctest_rc without a counted failure;"
fi
if [ "$lit_rc" -ne 0 ] && [ "$lit_failed" -eq 0 ]; then
  failed=$((failed + 1)); runner="$runner lit exited $lit_rc without a counted failure;"
fi
echo ""
echo "unit: $((g_tests - g_failed))/$g_tests GoogleTest cases in $g_files binaries," \
     "$((other_total - other_failed))/$other_total other ctest entries;" \
     "lit: $lit_passed passed, $lit_failed failed, $lit_skipped skipped"
if [ "$lit_skipped" -gt 0 ]; then
  echo "lit skipped (unsupported on this machine):"
  grep -E '^UNSUPPORTED:' build/lit.log | sed 's/^/  /'
fi
[ -n "$runner" ] && echo "runner errors:$runner"
if [ "$lit_skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $lit_skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
