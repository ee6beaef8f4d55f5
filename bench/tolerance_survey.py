#!/usr/bin/env python3
"""Measured error of every CPU numerical check over several seeds (issue 25, "honest numbers").

    /usr/bin/python3 bench/tolerance_survey.py --build build [--seeds 8] [--low-seeds 32]
        [--only REGEX] [--parts grad,accum,dp,mutate] [--json OUT.json] [--work DIR]

The tolerances of the checks (test/e2e/torch_reference.py GRAD_TOL / UPDATE_TOL / GRAD_TOLS,
grad_accum.py, the --rtol of data_parallel.py in data-parallel.test and zero23.test) are set
from the worst error this prints, times a stated margin (docs/testing.md, "Tolerances").

Parts:
  grad    every `torch_reference.py --lib` case of test/e2e/grad-check.test and
          grad-check-mixed.test (the `tgc compile` RUN line that builds its library, the
          check's own --steps / --ignore-frac / --loss-scale), run in this process (torch
          imported once) at the test's seed and seeds 0..N-1 (--seeds; --low-seeds for the
          low-precision cases, cheaper to widen and statistical), tolerances unchanged: the
          printed table's errors are parsed whatever the verdict. Worst per check class:
          loss, grad, grad norm, update (AdamW alone), step2 (the second micro-step) and, for
          --steps, the accumulated gradients and torch.optim.AdamW against the own AdamW.
  accum   test/e2e/grad_accum.py (grad_accum 4 x 1 against 1 x 4) at seeds 0..N-1.
  dp      the training executables of data-parallel.test / zero23.test (the tests' spec),
          `--seed S` for S in 0..N-1, 5 steps, compared with data_parallel.py (tolerance 1:
          only the printed worst differences are read): N ranks against one rank of the
          global batch, ZeRO-1/2/3 against ZeRO-0, fp32 / bf16-mixed / fp16-mixed.
  mutate  deliberately wrong references (torch_reference's functions monkeypatched in this
          process) against the correct libraries, at each test's seed: per tolerance class
          the worst error and the verdict at the old (OLD_TOLS) and the new tolerances.

Nothing here changes a tolerance; the output is a table and (--json) the raw numbers with a
per-class summary (median, 90th percentile, worst). Single-threaded (torch.set_num_threads(1)):
--seeds 64 --low-seeds 256 takes ~5 min of one core for grad, ~1 min each for accum and dp.
"""
import argparse
import contextlib
import math
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E2E = os.path.join(ROOT, "test", "e2e")
PY = "/usr/bin/python3"


def log(msg):
    print(msg, flush=True)
    sys.stderr.flush()


# ------------------------------------------------------------------ lit RUN lines --


def run_lines(path):
    """The RUN lines of a lit test, continuation lines (`\\`) joined."""
    out, cur = [], ""
    for line in open(path):
        m = re.match(r"\s*//\s*RUN:\s?(.*)$", line)
        if not m:
            continue
        body = m.group(1).rstrip()
        if body.endswith("\\"):
            cur += body[:-1] + " "
            continue
        out.append(cur + body)
        cur = ""
    return out


def subst(cmd, tgc, tmp):
    cmd = cmd.replace("%tg_src", ROOT).replace("%S", E2E).replace("%python", PY)
    cmd = re.sub(r"%t(?=[\w./])", lambda _: tmp + "t", cmd)
    cmd = re.sub(r"^tgc ", tgc + " ", cmd)
    return cmd


def grad_cases(test, tgc, tmp):
    """(label, compile command, library path, check options) of each torch_reference case."""
    lines = run_lines(os.path.join(E2E, test))
    built = {}
    cases = []
    name = os.path.splitext(test)[0]
    for ln in lines:
        m = re.match(r"tgc compile .* -o (%t\S*\.so)$", ln)
        if m:
            built[m.group(1)] = ln
            continue
        if ln.startswith("not "):
            continue
        m = re.match(r"%python %S/torch_reference.py --lib (%t\S*\.so)(.*?)\|\s*FileCheck .*--check-prefix=(\w+)", ln)
        if not m:
            continue
        so, args, prefix = m.group(1), shlex.split(m.group(2)), m.group(3)
        opts = {"seed": 0, "steps": 0, "ignore_frac": 0.0, "loss_scale": None}
        i = 0
        while i < len(args):
            k, v = args[i], args[i + 1]
            opts[{"--seed": "seed", "--steps": "steps", "--ignore-frac": "ignore_frac",
                  "--loss-scale": "loss_scale"}[k]] = float(v) if k in ("--ignore-frac", "--loss-scale") else int(v)
            i += 2
        prefix_dir = os.path.join(tmp, name + "-")
        lib, cmd = subst(so, tgc, prefix_dir), subst(built[so], tgc, prefix_dir)
        cases.append((f"{name}:{prefix}", cmd, lib, opts))
    return cases


# -------------------------------------------------------------- table parsing --

LIB_ROW = re.compile(r"^(step1|grad|adamw|update|step2)\s+(.*?)\s+(\S+)\s+(-?[0-9.]+e[+-]\d+|nan|inf)\s\s(\d(?:\.\d+)?e[+-]\d+)")
STEP_ROW = re.compile(r"^(step \d+|adamw)\s+(.*?)\s+(-?[0-9.]+e[+-]\d+|nan|inf)\s\s(\d(?:\.\d+)?e[+-]\d+)")


def classify_lib(sec, name):
    if sec == "step1":
        return "loss"
    if sec == "grad":
        return "grad"
    if sec == "adamw":
        return "norm"
    if sec == "update":
        return "update"
    if name.startswith("loss (ref"):
        return "loss2"  # the loss at the reference-updated weights: after the update
    return "step2-loss" if name.startswith("loss") else "step2-grad"


def classify_steps(sec, what):
    if sec == "adamw":
        return "torch-adamw"
    if what.endswith(": loss"):
        return "loss"
    if "accumulated grads" in what:
        return "grad"
    if what == "grad norm":
        return "norm"
    if what == "grads zeroed":
        return "zeroed"
    return "update"


def parse_table(text, steps):
    worst = {}
    for line in text.splitlines():
        if steps:
            m = STEP_ROW.match(line)
            if not m:
                continue
            cls, err = classify_steps(m.group(1), m.group(2)), float(m.group(3))
        else:
            m = LIB_ROW.match(line)
            if not m:
                continue
            cls, err = classify_lib(m.group(1), m.group(2)), float(m.group(4))
        worst[cls] = max(worst.get(cls, 0.0), err)
    # the check_lib comparison of the own float64 AdamW with torch.optim.AdamW prints only above 1e-9
    if not steps:
        m = re.search(r"own float64 AdamW and torch.optim.AdamW differ \(rel ([0-9.e+-]+)\)", text)
        worst["torch-adamw"] = float(m.group(1)) if m else 0.0  # <= 1e-9 when not printed
    return worst


# ----------------------------------------------------------------- the parts --


def part_grad(args, tgc, tmp, results):
    sys.path.insert(0, E2E)
    import torch
    import torch_reference as tr
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    cases = grad_cases("grad-check.test", tgc, tmp) + grad_cases("grad-check-mixed.test", tgc, tmp)
    for label, cmd, lib, opts in cases:
        if args.only and not re.search(args.only, label):
            continue
        t0 = time.time()
        if not os.path.exists(lib):
            subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
        tc = time.time() - t0
        L = tr.Lib(lib)
        prec = L.precision()
        n = args.seeds if prec == "fp32" else args.low_seeds
        seeds = sorted(set([opts["seed"]] + list(range(n))))
        per_seed = {}
        t1 = time.time()
        for s in seeds:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                if opts["steps"]:
                    rc = tr.check_steps(lib, s, opts["steps"], opts["ignore_frac"], lib=L)
                else:
                    rc = tr.check_lib(lib, s, lib=L, loss_scale=opts["loss_scale"])
            w = parse_table(buf.getvalue(), bool(opts["steps"]))
            if not w:
                log(buf.getvalue())
                raise SystemExit(f"{label} seed {s}: no table parsed")
            w["rc"] = rc
            per_seed[s] = w
        results["grad"][label] = dict(precision=prec, steps=opts["steps"], test_seed=opts["seed"],
                                      per_seed=per_seed, compile_s=tc, check_s=time.time() - t1)
        classes = sorted({c for w in per_seed.values() for c in w if c != "rc"})
        worst = {c: max(w.get(c, 0.0) for w in per_seed.values()) for c in classes}
        fails = [s for s, w in per_seed.items() if w["rc"]]
        log(f"{label:28} {prec:10} seeds {len(seeds):2} ({time.time() - t1:5.1f}s) "
            + " ".join(f"{c} {v:.2e}" for c, v in worst.items())
            + (f"  FAIL at seeds {fails}" if fails else ""))


def part_accum(args, tgc, tmp, results):
    lines = run_lines(os.path.join(E2E, "grad-accum.test"))
    d = os.path.join(tmp, "accum-")
    for ln in lines:
        if ln.startswith("tgc compile"):
            c = subst(ln, tgc, d)
            out = c.split(" -o ")[-1]
            if not os.path.exists(out):
                subprocess.run(c, shell=True, check=True, stdout=subprocess.DEVNULL)
    per_seed = {}
    for s in range(args.seeds * 2):
        r = subprocess.run([PY, os.path.join(E2E, "grad_accum.py"), "--accum", d + "t.k4.so",
                            "--single", d + "t.k1.so", "--k", "4", "--seed", str(s)],
                           capture_output=True, text=True)
        o = r.stdout
        l1, lk = map(float, re.search(r"loss single (\S+)\s+mean over \d+ micro-batches (\S+)", o).groups())
        g, p = map(float, re.search(r"worst grad rel err (\S+); worst parameter difference after AdamW (\S+)", o).groups())
        per_seed[s] = dict(loss=abs(l1 - lk) / abs(l1), grad=g, param=p, rc=r.returncode)
    results["accum"] = per_seed
    log("grad-accum: " + " ".join(f"{c} {max(w[c] for w in per_seed.values()):.2e}"
                                  for c in ("loss", "grad", "param"))
        + f" over {len(per_seed)} seeds")


# data-parallel.test / zero23.test: executables (name -> --set) and the comparisons (a, b)
DP_EXES = {
    "r2": "fp32 --set training.batch_size=2 --set training.distributed.ranks=2",
    "r1": "fp32 --set training.batch_size=4",
    "a2": "fp32 --set training.batch_size=1 --set training.grad_accum=2 --set training.distributed.ranks=2",
    "a1": "fp32 --set training.batch_size=2 --set training.grad_accum=2",
    "b2": "bf16-mixed --set training.batch_size=2 --set training.distributed.ranks=2",
    "b1": "bf16-mixed --set training.batch_size=4",
    "z1": "fp32 --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=1",
    "zb1": "bf16-mixed --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=1",
    "z2": "fp32 --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=2",
    "z3": "fp32 --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=3",
    "zb3": "bf16-mixed --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=3",
    "h2": "fp16-mixed --set training.batch_size=2 --set training.distributed.ranks=2",
    "zh3": "fp16-mixed --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=3",
    "s2": "fp32 --set training.batch_size=2 --set training.distributed.ranks=2 --set training.checkpointing=selective",
    "zs3": "fp32 --set training.batch_size=2 --set training.distributed.ranks=2 --set training.distributed.zero=3 --set training.checkpointing=layer",
}
# (label, a, b, moments, the tests' --rtol / --rtol-loss since 2026-11-28; before: fp32 1e-5,
# bf16-mixed and fp16-mixed 2e-2 for both)
DP_PAIRS = [
    ("dp fp32 2 ranks vs 1", "r2", "r1", False, "2e-6/4e-7"),
    ("dp grad-accum 2 ranks vs 1", "a2", "a1", False, "2e-6/4e-7"),
    ("dp bf16-mixed 2 ranks vs 1", "b2", "b1", False, "6e-7/4e-7"),
    ("zero1 vs zero0", "z1", "r2", True, "0"),
    ("zero1 bf16 vs zero0", "zb1", "b2", True, "0"),
    ("zero1 vs 1 rank", "z1", "r1", True, "6e-6/4e-7"),
    ("zero2 vs zero0", "z2", "r2", True, "6e-6/4e-7"),
    ("zero3 vs zero0", "z3", "r2", True, "6e-6/4e-7"),
    ("zero3 vs 1 rank", "z3", "r1", True, "6e-6/4e-7"),
    ("zero3 bf16 vs zero0", "zb3", "b2", True, "2e-2/2e-4"),
    ("zero3 remat vs zero0", "zs3", "s2", True, "6e-6/4e-7"),
    ("zero3 fp16 vs zero0", "zh3", "h2", True, "5e-3/2e-5"),
]


def part_dp(args, tgc, tmp, results):
    spec = None
    for ln in open(os.path.join(E2E, "zero23.test")):
        m = re.match(r"\s*//\s*DEFINE: %\{spec\} = (.*)$", ln)
        if m:
            spec = m.group(1).strip().replace("%tg_src", ROOT)
    d = os.path.join(tmp, "dp")
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "data")
    if not os.path.exists(data):
        subprocess.run(f"{tgc} data prepare --max-bytes 64KiB --vocab 512 --out {data}",
                       shell=True, check=True, stdout=subprocess.DEVNULL)
    for name, sets in DP_EXES.items():
        exe = os.path.join(d, name)
        if not os.path.exists(exe):
            prec, rest = sets.split(" ", 1)
            t0 = time.time()
            subprocess.run(f"{tgc} compile {spec} --set training.precision={prec} {rest} -o {exe}",
                           shell=True, check=True, stdout=subprocess.DEVNULL)
            log(f"compiled {name} in {time.time() - t0:.0f}s")
    per = {p[0]: {} for p in DP_PAIRS}
    for s in range(args.seeds):
        for name in DP_EXES:
            exe = os.path.join(d, name)
            subprocess.run([exe, "--data", data, "--steps", "5", "--seed", str(s), "--quiet",
                            "--log", f"{exe}.{s}.jsonl", "--save", f"{exe}.{s}.ckpt"],
                           check=True, stdout=subprocess.DEVNULL)
        for label, a, b, mom, _ in DP_PAIRS:
            cmd = [PY, os.path.join(E2E, "data_parallel.py"), "--log-a", f"{d}/{a}.{s}.jsonl",
                   "--ckpt-a", f"{d}/{a}.{s}.ckpt", "--log-b", f"{d}/{b}.{s}.jsonl",
                   "--ckpt-b", f"{d}/{b}.{s}.ckpt", "--rtol", "1"] + (["--moments"] if mom else [])
            o = subprocess.run(cmd, capture_output=True, text=True).stdout
            m = re.search(r"worst loss difference (\S+); \d+ tensors, worst difference (\S+) \((\S*)\)", o)
            if not m:
                raise SystemExit(f"{label} seed {s}: {o}")
            per[label][s] = dict(loss=float(m.group(1)), tensor=float(m.group(2)), worst_tensor=m.group(3))
    results["dp"] = per
    for label, a, b, mom, rtol in DP_PAIRS:
        w = per[label]
        log(f"{label:28} rtol {rtol:9} loss {max(v['loss'] for v in w.values()):.2e} "
            f"tensors {max(v['tensor'] for v in w.values()):.2e} over {len(w)} seeds")


# ------------------------------------------------------------------ mutations --


# The tolerances before issue 25's survey (torch_reference.py at 6964b3f).
OLD_TOLS = {"fp32": dict(loss=1e-5, grad=1e-5, norm=1e-5, loss2=1e-5, update=1e-4),
            "bf16-mixed": dict(loss=2e-2, grad=2e-2, norm=2e-2, loss2=2e-2, update=1e-4),
            "fp16-mixed": dict(loss=5e-3, grad=5e-3, norm=5e-3, loss2=5e-3, update=1e-4),
            "bf16": dict(loss=2e-2, grad=2e-2, norm=2e-2, loss2=2e-2, update=1e-4)}
# error classes of parse_table -> tolerance classes
TOL_CLASS = {"loss": "loss", "step2-loss": "loss", "grad": "grad", "step2-grad": "grad",
             "norm": "norm", "loss2": "loss2", "update": "update"}


def part_mutate(args, tgc, tmp, results):
    """Deliberately wrong references (torch_reference's functions monkeypatched in this
    process) against the correct libraries, at the test's seed: per tolerance class the
    worst error and the verdict at the old and at the new tolerances."""
    sys.path.insert(0, E2E)
    import torch
    import torch_reference as tr
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    new_tols = {p: dict(t, update=tr.UPDATE_TOL) for p, t in tr.TOLS.items()}
    cases = {c[0]: c for c in grad_cases("grad-check.test", tgc, tmp) + grad_cases("grad-check-mixed.test", tgc, tmp)}
    orig = {n: getattr(tr, n) for n in ("config_from_spec", "ref_adamw_one", "gelu_tanh", "optimizer_problems")}

    def cfg_patch(**kw):
        """The reference's config changed; the library's AdamW hyperparameters are still
        checked against the spec's (else optimizer_problems would stop the check first)."""
        def f(spec):
            cfg = orig["config_from_spec"](spec)
            for k, v in kw.items():
                cfg[k] = v(cfg[k])
            return cfg

        def opt(m, cfg, problems, tag):
            return orig["optimizer_problems"](m, orig["config_from_spec"](json.loads(m.spec_json.decode())), problems, tag)
        return {"config_from_spec": f, "optimizer_problems": opt}

    def lr_scaled(factor):
        def f(cfg, name, p, g, step, lr, scale):
            return orig["ref_adamw_one"](cfg, name, p, g, step, lr * factor, scale)
        return {"ref_adamw_one": f}

    def gelu_erf(x):  # the exact GELU where the model uses the tanh approximation
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    muts = [
        ("AdamW lr x (1 + 1e-5)", "grad-check:ONE", lr_scaled(1 + 1e-5)),
        ("AdamW eps 1e-8 -> 1.1e-8", "grad-check:ONE", cfg_patch(adam_eps=lambda e: e * 1.1)),
        ("AdamW beta2 + 1e-5 (3 steps)", "grad-check:STEPS", cfg_patch(beta2=lambda b: b + 1e-5)),
        ("AdamW beta1 + 1e-5 (3 steps)", "grad-check:STEPS", cfg_patch(beta1=lambda b: b + 1e-5)),
        ("layer-norm eps x 1.1", "grad-check:ONE", cfg_patch(eps=lambda e: e * 1.1)),
        ("layer-norm eps x 1.5", "grad-check:ONE", cfg_patch(eps=lambda e: e * 1.5)),
        ("GELU erf instead of tanh", "grad-check:ONE", {"gelu_tanh": gelu_erf}),
        ("RMSNorm eps x 1.1", "grad-check:GQA", cfg_patch(eps=lambda e: e * 1.1)),
        ("RoPE theta 10000 -> 10010", "grad-check:GQA", cfg_patch(rope_theta=lambda t: t + 10)),
        ("RoPE theta 10000 -> 10100", "grad-check:GQA", cfg_patch(rope_theta=lambda t: t + 100)),
        ("layer-norm eps x 3, bf16-mixed", "grad-check-mixed:ONE", cfg_patch(eps=lambda e: e * 3)),
        ("layer-norm eps x 10, bf16-mixed", "grad-check-mixed:ONE", cfg_patch(eps=lambda e: e * 10)),
        ("RMSNorm eps x 10, bf16-mixed (Llama)", "grad-check-mixed:LLAMA", cfg_patch(eps=lambda e: e * 10)),
        ("layer-norm eps x 10, pure bf16", "grad-check-mixed:FIVE", cfg_patch(eps=lambda e: e * 10)),
        ("layer-norm eps x 3, fp16-mixed", "grad-check-mixed:SIX", cfg_patch(eps=lambda e: e * 3)),
        ("layer-norm eps x 10, fp16-mixed", "grad-check-mixed:SIX", cfg_patch(eps=lambda e: e * 10)),
        ("layer-norm eps x 3, pure bf16", "grad-check-mixed:FIVE", cfg_patch(eps=lambda e: e * 3)),
        ("layer-norm eps x 1.5, bf16-mixed", "grad-check-mixed:ONE", cfg_patch(eps=lambda e: e * 1.5)),
        ("GELU erf instead of tanh, bf16-mixed", "grad-check-mixed:ONE", {"gelu_tanh": gelu_erf}),
        ("GELU erf instead of tanh, pure bf16", "grad-check-mixed:FIVE", {"gelu_tanh": gelu_erf}),
        ("GELU erf instead of tanh, fp16-mixed", "grad-check-mixed:SIX", {"gelu_tanh": gelu_erf}),
        ("AdamW lr x (1 + 1e-5), bf16-mixed", "grad-check-mixed:ONE", lr_scaled(1 + 1e-5)),
    ]
    rows = []
    for label, case, patch in muts:
        if args.only and not re.search(args.only, case):
            continue
        _, cmd, lib, opts = cases[case]
        if not os.path.exists(lib):
            subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
        L = tr.Lib(lib)
        prec = L.precision()
        s = opts["seed"]
        for n, f in patch.items():
            setattr(tr, n, f)
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                if opts["steps"]:
                    tr.check_steps(lib, s, opts["steps"], opts["ignore_frac"], lib=L)
                else:
                    tr.check_lib(lib, s, lib=L, loss_scale=opts["loss_scale"])
        finally:
            for n, f in orig.items():
                setattr(tr, n, f)
        w = parse_table(buf.getvalue(), bool(opts["steps"]))
        worst = {}
        for c, e in w.items():
            if c in TOL_CLASS:
                worst[TOL_CLASS[c]] = max(worst.get(TOL_CLASS[c], 0.0), e)
        old_fail = sorted(c for c, e in worst.items() if e > OLD_TOLS[prec][c])
        new_fail = sorted(c for c, e in worst.items() if e > new_tols[prec][c])
        rows.append(dict(mutation=label, case=case, seed=s, precision=prec, worst=worst,
                         old_fail=old_fail, new_fail=new_fail))
        log(f"mutation {label:38} {case:22} seed {s}: "
            + " ".join(f"{c} {e:.1e}" for c, e in sorted(worst.items()))
            + f" | old: {'FAIL ' + ','.join(old_fail) if old_fail else 'pass'}"
            + f" | new: {'FAIL ' + ','.join(new_fail) if new_fail else 'pass'}")
    results["mutate"] = rows


def summary(results):
    """Per check and error class: seeds, median, 90th percentile and worst over the seeds."""
    def stats(v):
        v = sorted(v)
        return dict(n=len(v), median=v[len(v) // 2], p90=v[int(0.9 * (len(v) - 1))], worst=v[-1])
    out = {}
    for label, d in results.get("grad", {}).items():
        classes = sorted({c for w in d["per_seed"].values() for c in w if c != "rc"})
        out[label] = dict(precision=d["precision"], fails=[s for s, w in d["per_seed"].items() if w["rc"]],
                          **{c: stats([w.get(c, 0.0) for w in d["per_seed"].values()]) for c in classes})
    if "accum" in results:
        out["grad-accum"] = {c: stats([w[c] for w in results["accum"].values()]) for c in ("loss", "grad", "param")}
    for label, per in results.get("dp", {}).items():
        out[label] = {c: stats([w[c] for w in per.values()]) for c in ("loss", "tensor")}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--low-seeds", type=int, default=32)
    ap.add_argument("--only", default="")
    ap.add_argument("--parts", default="grad,accum,dp")
    ap.add_argument("--json", default="")
    ap.add_argument("--work", default="")
    a = ap.parse_args()
    tgc = os.path.join(os.path.abspath(a.build), "bin", "tgc")
    tmp = a.work or tempfile.mkdtemp(prefix="tolsurvey-")
    os.makedirs(tmp, exist_ok=True)
    results = {"grad": {}, "seeds": a.seeds, "low_seeds": a.low_seeds,
               "commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip(),
               "date": time.strftime("%Y-%m-%d", time.gmtime())}
    t0 = time.time()
    parts = a.parts.split(",")
    if "grad" in parts:
        part_grad(a, tgc, tmp, results)
    if "accum" in parts:
        part_accum(a, tgc, tmp, results)
    if "dp" in parts:
        part_dp(a, tgc, tmp, results)
    if "mutate" in parts:
        part_mutate(a, tgc, tmp, results)
    results["wall_s"] = time.time() - t0
    results["summary"] = summary(results)
    log(f"tolerance survey: {time.time() - t0:.0f}s, work dir {tmp}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
