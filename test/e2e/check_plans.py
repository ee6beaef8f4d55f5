#!/usr/bin/env python3
"""Plans every examples/*.json (tgc plan --json) under several attention settings and checks
arena <= 1.05 x lower bound and total = persistent + arena + workspace.

Every case prints one line (flushed at once) ending in `ok`, `OVER` or `FAILED ...` with the
exit status and the first stderr lines, so a failing run shows the case that failed."""
import glob, json, os, subprocess, sys, tempfile

examples = sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))
variants = [[], ["--set", "training.attention.kernel=naive"],
            ["--set", "training.attention.window=64"], ["--set", "training.grad_accum=2"]]
checked = bad = 0
with tempfile.TemporaryDirectory() as tmp:
    for ex in examples:
        for v in variants:
            label = f"{os.path.basename(ex):28s} {' '.join(v[1:]) or 'as written':40s}"
            out = os.path.join(tmp, "plan.json")
            # small micro-batch: naive attention on long contexts is large but still plans
            cmd = ["tgc", "plan", ex, "--json", out, "--set", "training.batch_size=2"] + v
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
                if r.returncode != 0:
                    err = " | ".join(r.stderr.strip().splitlines()[:8])
                    raise RuntimeError(f"exit {r.returncode}: {err}")
                with open(out) as f:
                    d = json.load(f)
                os.remove(out)
                ratio = d["arena_bytes"] / d["lower_bound_bytes"]
                ok = ratio <= 1.05 and d["total_bytes"] == (
                    d["persistent_bytes"] + d["arena_bytes"] + d["workspace_bytes"])
                print(f"{label} arena/lb {ratio:.4f} {'ok' if ok else 'OVER'}", flush=True)
                checked += 1
                bad += 0 if ok else 1
            except Exception as e:  # report and go on: one line per case, always a summary
                print(f"{label} FAILED {' '.join(cmd)}: {e}", flush=True)
                bad += 1
print(f"plans: {checked} checked, {bad} over 1.05 x lower bound or failed", flush=True)
sys.exit(1 if bad else 0)
