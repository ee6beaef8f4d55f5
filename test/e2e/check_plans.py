#!/usr/bin/env python3
"""Plans every examples/*.json (tgc plan --json) under several attention settings and checks
arena <= 1.05 x lower bound and total = persistent + arena + workspace."""
import glob, json, os, subprocess, sys, tempfile

examples = sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))
variants = [[], ["--set", "training.attention.kernel=naive"],
            ["--set", "training.attention.window=64"], ["--set", "training.grad_accum=2"]]
checked = bad = 0
with tempfile.TemporaryDirectory() as tmp:
    for ex in examples:
        for v in variants:
            out = os.path.join(tmp, "plan.json")
            # naive attention on long contexts is large but still plans; keep batch 1 for speed
            cmd = ["tgc", "plan", ex, "--json", out, "--set", "training.batch_size=2"] + v
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print("FAILED:", " ".join(cmd), r.stderr.strip())
                bad += 1
                continue
            d = json.load(open(out))
            ratio = d["arena_bytes"] / d["lower_bound_bytes"]
            ok = ratio <= 1.05 and d["total_bytes"] == d["persistent_bytes"] + d["arena_bytes"] + d["workspace_bytes"]
            print(f"{os.path.basename(ex):28s} {' '.join(v[1:]) or 'as written':40s} arena/lb {ratio:.4f} {'ok' if ok else 'OVER'}")
            checked += 1
            bad += 0 if ok else 1
print(f"plans: {checked} checked, {bad} over 1.05 x lower bound")
sys.exit(1 if bad else 0)
