#!/usr/bin/env python3
"""Predicted vs measured step time (issue 23): for each configuration of a cost-check run
(runs/cost/configs.txt, written by scripts/gpu-cost-artifacts.sh; measured.json, written
on the GPU by scripts/gpu-cost.sh), `tgc plan SPEC ARGS --target cuda --calibration TABLE
--json F` predicts the step and this prints predicted, measured, the relative error, and
the median / worst absolute error over the configurations.

  scripts/cost-compare.py CONFIGS MEASURED_JSON TABLE_JSON [--tgc build/bin/tgc]
Exits 2 on missing input; prints a markdown table."""
import argparse, json, os, shlex, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("configs")
ap.add_argument("measured")
ap.add_argument("table")
ap.add_argument("--tgc", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "tgc"))
a = ap.parse_args()
try:
    measured = json.load(open(a.measured))
    lines = [l.split() for l in open(a.configs) if l.strip()]
except OSError as e:
    sys.exit(f"cost-compare: {e}")
rows = []
with tempfile.TemporaryDirectory() as tmp:
    for name, spec, *args in lines:
        out = os.path.join(tmp, name + ".json")
        r = subprocess.run([a.tgc, "plan", spec, *args, "--target", "cuda", "--calibration", a.table,
                            "--json", out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: tgc plan failed: {r.stderr.strip()[-300:]}", file=sys.stderr)
            continue
        p = json.load(open(out))["prediction"]
        m = measured.get(name, {}).get("ms")
        rows.append((name, p["step_ms"], m, p.get("uncalibrated_ms", 0.0)))
print("| config | predicted ms | measured ms | error | of which uncalibrated ms |")
print("|---|---|---|---|---|")
errs = []
for name, pred, meas, unc in rows:
    err = (pred - meas) / meas if meas else None
    if err is not None:
        errs.append(abs(err))
    e = f"{100 * err:+.1f}%" if err is not None else "-"
    ms = f"{meas:.2f}" if meas else "-"
    print(f"| {name} | {pred:.2f} | {ms} | {e} | {unc:.2f} |")
if errs:
    print(f"\n{len(errs)} configurations: median absolute error {100 * statistics.median(errs):.1f}%, "
          f"worst {100 * max(errs):.1f}%")
