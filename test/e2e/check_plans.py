#!/usr/bin/env python3
"""Plans every examples/*.json (tgc plan --json) under several attention settings, every
precision and every checkpointing policy, and checks arena <= 1.05 x lower bound and
total = persistent + arena + workspace; for a precision, that the plan reports it, with
f32 parameter / AdamW slots (bf16 slots for pure bf16) sized accordingly; for a
checkpointing policy, that it recomputes something (extra FLOPs > 0) and that its arena is
no larger than the same spec's with checkpointing none.

Every case prints one line (flushed at once) ending in `ok`, `OVER` or `FAILED ...` with the
exit status and the first stderr lines, so a failing run shows the case that failed."""
import glob, json, os, subprocess, sys, tempfile

examples = sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))
variants = [[], ["--set", "training.attention.kernel=naive"],
            ["--set", "training.attention.window=64"], ["--set", "training.grad_accum=2"]]
variants += [["--set", "training.precision=" + p] for p in ("fp32", "bf16-mixed", "fp16-mixed", "bf16")]
# none first: the policies' arenas are compared with it
variants += [["--set", "training.checkpointing=" + c] for c in ("none", "selective", "layer")]
BYTES = {"f32": 4, "bf16": 2, "f16": 2}


def check_setting(d, v, arena_none):
    """The precision / checkpointing a variant sets shows in the plan; returns the problem
    or ''."""
    key, _, value = v[1].partition("=") if v else ("", "", "")
    if key == "training.precision":
        if d["precision"] != value:
            return f"precision {d['precision']}"
        want = "bf16" if value == "bf16" else "f32"
        dts = {(q["dtype"], q["state_dtype"]) for q in d["params"]}
        if dts != {(want, want)}:
            return f"parameter dtypes {sorted(dts)}, expected {want}"
        n = sum(q["numel"] for q in d["params"])
        # Mixed precision: a weight whose whole gradient one bf16 / f16 GEMM writes keeps that
        # type in its gradient slot (grad_dtype; training.gradient_dtype auto), the others
        # their value's; the pure and fp32 policies have every gradient in the value's type.
        low = "f16" if value == "fp16-mixed" else "bf16"
        gdts = {q["grad_dtype"] for q in d["params"]}
        if not gdts <= ({want, low} if value.endswith("-mixed") else {want}):
            return f"gradient dtypes {sorted(gdts)} under {value}"
        grads = sum(BYTES[q["grad_dtype"]] * q["numel"] for q in d["params"])
        # each slot is padded to 256 bytes at most
        # Split master values (training.master_values auto): 2 bytes of low halves a value.
        values = sum((2 if q.get("split") else BYTES[want]) * q["numel"] for q in d["params"])
        if any(q.get("split") for q in d["params"]) and value != "bf16-mixed":
            return f"split values under {value}"
        for what, lo, per in (("param_bytes", values, 1), ("grad_bytes", grads, 1),
                              ("optimizer_state_bytes", 2 * BYTES[want] * n, 2)):
            if not lo <= d[what] <= lo + per * 256 * len(d["params"]):
                return f"{what} {d[what]} for {n} {want} parameters"
    if key == "training.checkpointing":
        if d["remat_policy"] != value:
            return f"remat policy {d['remat_policy']}"
        if value != "none" and not d["extra_flops"] > 0:
            return f"extra FLOPs {d['extra_flops']}"
        if value != "none" and arena_none is not None and d["arena_bytes"] > arena_none:
            return f"arena {d['arena_bytes']} > {arena_none} without checkpointing"
    return ""


checked = bad = 0
with tempfile.TemporaryDirectory() as tmp:
    for ex in examples:
        arena_none = None
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
                problem = check_setting(d, v, arena_none)
                if v == ["--set", "training.checkpointing=none"]:
                    arena_none = d["arena_bytes"]
                print(f"{label} arena/lb {ratio:.4f} {'ok' if ok else 'OVER'}"
                      + (f" FAILED: {problem}" if problem else ""), flush=True)
                ok = ok and not problem
                checked += 1
                bad += 0 if ok else 1
            except Exception as e:  # report and go on: one line per case, always a summary
                print(f"{label} FAILED {' '.join(cmd)}: {e}", flush=True)
                bad += 1
print(f"plans: {checked} checked, {bad} over 1.05 x lower bound or failed", flush=True)
sys.exit(1 if bad else 0)
