"""Checks a `tgc experiment --stage compile` output directory against the contract in
docs/experiments.md ("The output directory").

  check_experiment.py DIR DATA [--run] [--save-mtimes F] [--same-mtimes F]

DIR/experiment.json and every DIR/configs/<safe>/config.json must have the contract's
fields and types; compiled configurations must have their spec.json (the effective spec)
and their executable; a "max" configuration must satisfy plan_at_max <= memory <
plan_at_max_plus_1. --run trains each executable 2 steps on DATA. --save-mtimes writes the
executables' mtimes to F; --same-mtimes fails unless they equal those saved in F (nothing
was recompiled). Prints "experiment: PASS" or raises.
"""
import json
import os
import re
import subprocess
import sys

PLAN_KEYS = ["persistent_bytes", "arena_bytes", "workspace_bytes", "total_bytes",
             "peak_forward_bytes", "peak_backward_bytes", "peak_optimizer_bytes",
             "peak_eval_bytes", "step_flops", "extra_flops"]


def safe(name):
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", name)


def fail(msg):
    raise SystemExit("experiment: FAIL: " + msg)


def check_experiment(d, data):
    exp = json.load(open(os.path.join(d, "experiment.json")))
    for k, t in [("name", str), ("matrix_file", str), ("spec_file", str), ("data", str),
                 ("target", str), ("memory_bytes", int), ("context_bytes", int),
                 ("budget", dict), ("pytorch", dict), ("configs", list)]:
        if not isinstance(exp.get(k), t):
            fail(f"experiment.json: {k}: expected {t.__name__}, got {exp.get(k)!r}")
    if exp["target"] not in ("cpu", "cuda"):
        fail(f"experiment.json: target {exp['target']!r}")
    # The reserve beside the plan (CUDA context): 537 MiB by default on cuda, none on cpu.
    want_reserve = {"cpu": 0, "cuda": 537 << 20}[exp["target"]]
    if exp["context_bytes"] != want_reserve:
        fail(f"experiment.json: context_bytes {exp['context_bytes']} on target "
             f"{exp['target']}, expected {want_reserve}")
    if os.path.realpath(exp["data"]) != os.path.realpath(data):
        fail(f"experiment.json: data {exp['data']} is not {data}")
    for k in ("matrix_file", "spec_file"):
        if not os.path.isabs(exp[k]) or not os.path.exists(exp[k]):
            fail(f"experiment.json: {k} {exp[k]} is not an existing absolute path")
    if sorted(exp["budget"]) != sorted(["steps", "minutes", "eval_every", "eval_batches"]):
        fail(f"experiment.json: budget keys {sorted(exp['budget'])}")
    if sorted(exp["pytorch"]) != ["compile", "enabled"]:
        fail(f"experiment.json: pytorch keys {sorted(exp['pytorch'])}")
    return exp


def check_config(d, exp, name):
    cdir = os.path.join(d, "configs", safe(name))
    c = json.load(open(os.path.join(cdir, "config.json")))
    where = f"{name}/config.json"
    types = [("name", str), ("status", str), ("set", dict), ("batch", int),
             ("grad_accum", int), ("context", int), ("tokens_per_step", int),
             ("precision", str), ("attention_kernel", str), ("window", int),
             ("checkpointing", str), ("n_params", int), ("exe", str), ("spec", str),
             ("pytorch", bool), ("hash", str)]
    for k, t in types:
        if not isinstance(c.get(k), t) or isinstance(c.get(k), bool) != (t is bool):
            fail(f"{where}: {k}: expected {t.__name__}, got {c.get(k)!r}")
    if c["name"] != name or c["status"] != "compiled" or not c["hash"]:
        fail(f"{where}: name/status/hash {c['name']!r} {c['status']!r} {c['hash']!r}")
    if "batch_request" not in c or not (c["batch_request"] is None or c["batch_request"] == "max"
                                        or isinstance(c["batch_request"], int)):
        fail(f"{where}: batch_request {c.get('batch_request')!r}")
    if c["set"].get("training.batch_size") != c["batch"]:
        fail(f"{where}: set.training.batch_size {c['set'].get('training.batch_size')} != batch {c['batch']}")
    if c["tokens_per_step"] != c["batch"] * c["context"] * c["grad_accum"]:
        fail(f"{where}: tokens_per_step {c['tokens_per_step']}")
    p = c["plan"]
    for k in PLAN_KEYS:
        if not isinstance(p.get(k), int) or p[k] < 0:
            fail(f"{where}: plan.{k}: {p.get(k)!r}")
    if p["total_bytes"] != p["persistent_bytes"] + p["arena_bytes"] + p["workspace_bytes"]:
        fail(f"{where}: plan.total_bytes is not the sum of the regions")
    if p["step_flops"] <= 0:
        fail(f"{where}: plan.step_flops {p['step_flops']}")
    # The effective spec matches the record.
    spec = json.load(open(os.path.join(cdir, c["spec"])))
    tr = spec["training"]
    for got, want in [(tr["batch_size"], c["batch"]), (tr["grad_accum"], c["grad_accum"]),
                      (tr["precision"], c["precision"]),
                      (tr["attention"]["kernel"], c["attention_kernel"]),
                      (tr["attention"]["window"], c["window"]),
                      (tr["checkpointing"], c["checkpointing"]),
                      (spec["model"]["context"], c["context"])]:
        if got != want:
            fail(f"{where}: spec.json has {got!r}, config.json {want!r}")
    for path, v in c["set"].items():
        node = spec
        for seg in path.split("."):
            node = node[seg]
        if node != v:
            fail(f"{where}: spec.json {path} = {node!r}, set says {v!r}")
    if c["batch_request"] == "max":
        mb = c["max_batch"]
        mem, reserve = exp["memory_bytes"], exp["context_bytes"]
        if (mb["memory_bytes"] != mem or mb["context_bytes"] != reserve
                or mb["max"] != c["batch"]):
            fail(f"{where}: max_batch {mb} (memory {mem}, context {reserve}, "
                 f"batch {c['batch']})")
        if not (mb["plan_at_max_bytes"] + reserve <= mem
                < mb["plan_at_max_plus_1_bytes"] + reserve):
            fail(f"{where}: not plan(max) + context <= memory < plan(max+1) + context: {mb}")
        if mb["plan_at_max_bytes"] != p["total_bytes"]:
            fail(f"{where}: plan_at_max_bytes {mb['plan_at_max_bytes']} != plan.total_bytes")
    elif c["max_batch"] is not None:
        fail(f"{where}: max_batch should be null")
    exe = os.path.join(cdir, c["exe"])
    if not os.access(exe, os.X_OK):
        fail(f"{where}: {exe} is not an executable")
    return exe


def main():
    d, data = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    exp = check_experiment(d, data)
    exes = {n: check_config(d, exp, n) for n in exp["configs"]}
    if not exes:
        fail("no configurations")
    if "--run" in args:
        for n, exe in exes.items():
            r = subprocess.run([exe, "--data", data, "--steps", "2", "--quiet"],
                               capture_output=True, text=True)
            if r.returncode != 0 or "val loss" not in r.stdout:
                fail(f"{n}: {exe} --steps 2: exit {r.returncode}\n{r.stdout}{r.stderr}")
    mtimes = {n: os.stat(e).st_mtime_ns for n, e in exes.items()}
    if "--save-mtimes" in args:
        json.dump(mtimes, open(args[args.index("--save-mtimes") + 1], "w"))
    if "--same-mtimes" in args:
        old = json.load(open(args[args.index("--same-mtimes") + 1]))
        if old != mtimes:
            fail(f"executables were rebuilt: {old} -> {mtimes}")
    print(f"experiment: {len(exes)} configurations: PASS")


main()
