"""Helpers and checks of test/e2e/experiment-run.test (tools/experiment/run.py).

  check_experiment_run.py setup DIR DATA  writes a hand-made `tgc experiment` output DIR (the
                                          contract of docs/experiments.md) with three
                                          configurations: "a" (DIR/configs/a/train must be
                                          compiled by the test), "crash!" (its exe kills
                                          itself with SIGKILL) and "refused@max" (refused
                                          at compile time)
  check_experiment_run.py check DIR       results.jsonl, results.md and plots/ after one run
  check_experiment_run.py count DIR N     results.jsonl has exactly N lines
  check_experiment_run.py --spec S ... --out F
                                          stands in for bench/torch_train.py (run.py
                                          --torch-runner): writes a plausible --out JSON,
                                          kills itself for a spec under configs/crash_
  check_experiment_run.py check-torch DIR the PyTorch rows that the stand-in produced
"""
import argparse
import json
import math
import os
import stat
import sys
import xml.etree.ElementTree as ET

STEPS, EVAL_EVERY = 20, 10


def fail(msg):
    print("check_experiment_run.py: FAIL: " + msg)
    sys.exit(1)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def config(name, **kw):
    """A config.json as `tgc experiment` writes it, for examples/tiny.json at vocab 512
    (the plan's peak_* fields count the arena only)."""
    cfg = {"name": name, "status": "compiled", "set": {"training.batch_size": 8},
           "batch_request": None, "batch": 8, "grad_accum": 1, "context": 64,
           "tokens_per_step": 512, "precision": "fp32", "attention_kernel": "naive",
           "window": 0, "checkpointing": "none", "n_params": 132416,
           "plan": {"persistent_bytes": 2200000, "arena_bytes": 3100000,
                    "workspace_bytes": 0, "total_bytes": 5300000,
                    "peak_forward_bytes": 2000000, "peak_backward_bytes": 3100000,
                    "peak_optimizer_bytes": 8, "peak_eval_bytes": 1000000,
                    "step_flops": 170000000, "extra_flops": 0},
           "max_batch": None, "exe": "train", "spec": "spec.json", "pytorch": True,
           "hash": "h-" + name}
    cfg.update(kw)
    return cfg


def setup(root, data):
    names = ["a", "crash!", "refused@max"]
    write_json(os.path.join(root, "experiment.json"), {
        "name": "e2e", "matrix_file": "/dev/null", "spec_file": "examples/tiny.json",
        "data": os.path.abspath(data), "target": "cpu", "memory_bytes": 8 << 20,
        "budget": {"steps": STEPS, "minutes": 0, "eval_every": EVAL_EVERY, "eval_batches": 2},
        "pytorch": {"enabled": True, "compile": False}, "configs": names})
    for safe in ("a", "crash_", "refused_max"):
        write_json(os.path.join(root, "configs", safe, "spec.json"), {"name": "tiny"})
    write_json(os.path.join(root, "configs", "a", "config.json"), config("a"))
    write_json(os.path.join(root, "configs", "crash_", "config.json"),
               config("crash!", exe="train.sh", precision="bf16-mixed",
                      attention_kernel="flash", window=16, checkpointing="layer"))
    script = os.path.join(root, "configs", "crash_", "train.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho 'about to die'\nkill -9 $$\n")
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    write_json(os.path.join(root, "configs", "refused_max", "config.json"),
               config("refused@max", status="refused", batch_request="max", batch=0,
                      reason="a micro-batch of 1 needs a plan of 9.1 MiB, which does not fit "
                      "the memory of 8 MiB",
                      max_batch={"memory_bytes": 8 << 20, "max": 0, "plan_at_max_bytes": None,
                                 "plan_at_max_plus_1_bytes": 9500000}))
    print("wrote %s" % root)


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def lines(root):
    with open(os.path.join(root, "results.jsonl")) as f:
        return [json.loads(ln) for ln in f if ln.strip()]


def check(root):
    recs = lines(root)
    by = {(r["config"], r["system"]): r for r in recs}
    if len(recs) != 3 or set(by) != {("a", "tgc"), ("crash!", "tgc"), ("refused@max", "tgc")}:
        fail("expected one tgc line for each of a, crash!, refused@max; got %s"
             % [(r.get("config"), r.get("system"), r.get("status")) for r in recs])
    a = by[("a", "tgc")]
    if a["status"] != "ok":
        fail("a: status %r (%s)" % (a["status"], a.get("reason")))
    for key in ("ms_per_step", "tokens_per_s", "val_loss", "val_ppl", "test_loss", "test_ppl",
                "wall_s"):
        if not finite(a.get(key)) or a[key] <= 0:
            fail("a: %s is %r, expected a positive finite number" % (key, a.get(key)))
    if a["steps"] != STEPS:
        fail("a: steps %r, expected %d" % (a["steps"], STEPS))
    # The median of steps 3..STEPS: STEPS - 2 timed steps after the warm-up, not indicative.
    if (a.get("timing_steps"), a.get("timing_indicative")) != (STEPS - 2, False):
        fail("a: timing_steps %r, timing_indicative %r, expected %d, False"
             % (a.get("timing_steps"), a.get("timing_indicative"), STEPS - 2))
    if abs(a["tokens_per_s"] - 512 * 1000.0 / a["ms_per_step"]) > 1e-6 * a["tokens_per_s"]:
        fail("a: tokens_per_s %r is not 512 tokens / ms_per_step" % a["tokens_per_s"])
    if a["mfu"] is not None or a["used_bytes"] is not None:
        fail("a: on the CPU mfu and used_bytes must be null, got %r, %r"
             % (a["mfu"], a["used_bytes"]))
    # The plan's phase peaks count the arena only; the results add persistent + workspace.
    got = [a["planned_bytes"]] + [a["peak_%s_bytes" % p] for p in ("forward", "backward",
                                                                 "optimizer")]
    if got != [5300000, 4200000, 5300000, 2200008]:
        fail("a: planned / per-phase bytes %r, expected [5300000, 4200000, 5300000, 2200008]"
             % got)
    if len(a["curve"]) != STEPS or [p[0] for p in a["curve"]] != list(range(1, STEPS + 1)):
        fail("a: curve has steps %r" % [p[0] for p in a["curve"]])
    elapsed = [p[2] for p in a["curve"]]
    if elapsed != sorted(elapsed) or elapsed[0] <= 0:
        fail("a: curve elapsed times are not increasing: %r" % elapsed)
    if [p[0] for p in a["val_curve"]] != [EVAL_EVERY, STEPS]:
        fail("a: val_curve steps %r, expected [%d, %d]"
             % ([p[0] for p in a["val_curve"]], EVAL_EVERY, STEPS))
    if abs(a["val_curve"][-1][1] - a["val_loss"]) > 1e-9:
        fail("a: the last val_curve point is not the final val loss")
    c = by[("crash!", "tgc")]
    if c["status"] != "crashed" or "SIGKILL" not in (c.get("reason") or "") \
            or "about to die" not in c["reason"]:
        fail("crash!: expected status crashed with SIGKILL and the log tail, got %r: %r"
             % (c["status"], c.get("reason")))
    r = by[("refused@max", "tgc")]
    if r["status"] != "refused" or "does not fit" not in (r.get("reason") or ""):
        fail("refused@max: expected the refusal of config.json, got %r: %r"
             % (r["status"], r.get("reason")))

    with open(os.path.join(root, "results.md")) as f:
        md = f.read()
    for needle in ("| config | system | micro-batch | precision | attention |",
                   "| a | tgc | 8 | fp32 | naive | none | 1 | 0.00494 |  | 0.00391 | 0.00494 "
                   "| 0.00205 |",
                   "| crash! | tgc | 8 | bf16-mixed | flash (window 16) | layer |",
                   "| refused@max | tgc |", "crashed: killed by SIGKILL",
                   "## Largest micro-batch", "| refused@max | 0 |", "1.00x"):
        if needle not in md:
            fail("results.md lacks %r:\n%s" % (needle, md))
    if "*" in md.split("## Largest")[0].split("## Runs")[1].split("\n\n")[1]:
        fail("results.md marks a time of the 20-step tgc rows as indicative:\n%s" % md)
    for stem in ("memory", "step_time", "loss", "max_batch"):
        for ext in ("svg", "png"):
            path = os.path.join(root, "plots", stem + "." + ext)
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                fail("missing or empty %s" % path)
        try:
            tree = ET.parse(os.path.join(root, "plots", stem + ".svg"))
        except ET.ParseError as e:
            fail("plots/%s.svg is not XML: %s" % (stem, e))
        if not tree.getroot().tag.endswith("svg"):
            fail("plots/%s.svg: root element %s" % (stem, tree.getroot().tag))
    print("results: a ok (%.2f ms/step, val ppl %.1f, test ppl %.1f), crash! crashed, "
          "refused@max refused; results.md and 4 plots fine"
          % (a["ms_per_step"], a["val_ppl"], a["test_ppl"]))


def count(root, n):
    got = len(lines(root))
    if got != int(n):
        fail("results.jsonl has %d lines, expected %s" % (got, n))
    print("results.jsonl: %d lines" % got)


def fake_torch(argv):
    ap = argparse.ArgumentParser()
    for flag in ("--spec", "--data", "--steps", "--minutes", "--eval-batches", "--device",
                 "--batch", "--out", "--config"):
        ap.add_argument(flag)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args(argv)
    if os.path.basename(os.path.dirname(a.spec)) == "crash_":
        print("fake-torch: dying", flush=True)
        os.kill(os.getpid(), 9)
    batch = 3 if a.batch == "max" else int(a.batch)
    for i in range(1, 4):
        print("step %d/3 | fake" % i, flush=True)
    write_json(a.out, {
        "system": "pytorch", "status": "ok", "reason": None, "batch": batch,
        "tokens_per_step": batch * 64, "steps": 3, "ms_per_step": 40.0,
        "tokens_per_s": None, "mfu": None, "used_bytes": 9000000,
        "peak_forward_bytes": 6000000, "peak_backward_bytes": 8000000,
        "peak_optimizer_bytes": 4000000, "val_loss": 6.0, "val_ppl": math.exp(6.0),
        "test_loss": 6.1, "test_ppl": math.exp(6.1),
        "curve": [[1, 6.3, 0.04], [2, 6.2, 0.08], [3, 6.1, 0.12]],
        "max_batch": {"method": "trial", "max": batch, "trials": [[1, True], [2, True],
                                                                 [4, False], [3, True]]}
        if a.batch == "max" else None,
        "args": {"steps": a.steps, "device": a.device, "batch": a.batch,
                 "eval_batches": a.eval_batches, "compile": a.compile,
                 "data": a.data, "config": a.config}})


def check_torch(root):
    recs = lines(root)
    by = {(r["config"], r["system"]): r for r in recs}
    if len(recs) != 6 or len([k for k in by if k[1] == "pytorch"]) != 3:
        fail("expected 3 tgc and 3 pytorch lines, got %s"
             % [(r.get("config"), r.get("system"), r.get("status")) for r in recs])
    a = by[("a", "pytorch")]
    want = {"steps": str(STEPS), "device": "cpu", "batch": "8", "eval_batches": "0",
            "compile": False, "config": "a"}
    if a["status"] != "ok" or any(a["args"].get(k) != v for k, v in want.items()):
        fail("a/pytorch: status %r, runner arguments %r, expected %r"
             % (a["status"], a.get("args"), want))
    if a["tokens_per_s"] != 512 * 1000.0 / 40.0 or a["hash"] != "h-a":
        fail("a/pytorch: tokens_per_s %r / hash %r not filled in"
             % (a["tokens_per_s"], a.get("hash")))
    # The stand-in ran 3 steps: its time rests on 1 step after the warm-up step (issue 25).
    if (a.get("timing_steps"), a.get("timing_indicative")) != (1, True):
        fail("a/pytorch: timing_steps %r, timing_indicative %r, expected 1, True"
             % (a.get("timing_steps"), a.get("timing_indicative")))
    c = by[("crash!", "pytorch")]
    if c["status"] != "crashed" or "fake-torch: dying" not in (c.get("reason") or ""):
        fail("crash!/pytorch: %r: %r" % (c["status"], c.get("reason")))
    r = by[("refused@max", "pytorch")]
    if r["status"] != "ok" or r["args"]["batch"] != "max" or r["batch"] != 3:
        fail("refused@max/pytorch: expected --batch max and batch 3, got %r" % r)
    with open(os.path.join(root, "results.md")) as f:
        md = f.read()
    # 3 stand-in steps: the PyTorch times are marked indicative ('*', issue 25), the tgc
    # row's 20 steps are not.
    for needle in ("| a | pytorch | 8 | fp32 | naive | none | 1 |  | 0.00838 | 0.00559 | "
                   "0.00745 | 0.00373 | 40.0* | 1.00x* | 12800* |",
                   "\\* fewer than 3 timed steps after the warm-up step: indicative only",
                   "| crash! | pytorch |", "| refused@max | pytorch | 3 (max) |",
                   "| refused@max | 0 |  | 0.00885 | 0.00781 | no (refused) | 3 |"):
        if needle not in md:
            fail("results.md lacks %r:\n%s" % (needle, md))
    print("pytorch rows: a ok, crash! crashed, refused@max ok at its trial max 3")


def setup_hang(root, data):
    """One configuration whose executable records its pid and sleeps a minute."""
    write_json(os.path.join(root, "experiment.json"), {
        "name": "e2e-hang", "matrix_file": "/dev/null", "spec_file": "examples/tiny.json",
        "data": os.path.abspath(data), "target": "cpu", "memory_bytes": 8 << 20,
        "budget": {"steps": STEPS, "minutes": 0, "eval_every": 0, "eval_batches": 2},
        "pytorch": {"enabled": False}, "configs": ["hang"]})
    write_json(os.path.join(root, "configs", "hang", "spec.json"), {"name": "tiny"})
    write_json(os.path.join(root, "configs", "hang", "config.json"),
               config("hang", exe="hang.sh"))
    script = os.path.join(root, "configs", "hang", "hang.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho $$ > %s\nexec sleep 60\n"
                % os.path.join(os.path.abspath(root), "hang.pid"))
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    print("wrote %s" % root)


def check_hang(root):
    """After SIGTERM to run.py: the executable's process is gone and the report exists."""
    with open(os.path.join(root, "hang.pid")) as f:
        pid = int(f.read())
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    if alive:
        os.kill(pid, 9)
        fail("the configuration's process %d outlived run.py's SIGTERM" % pid)
    if not os.path.isfile(os.path.join(root, "results.md")):
        fail("no results.md after SIGTERM")
    print("sigterm: child gone, report written")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "setup" and len(sys.argv) == 4:
        setup(sys.argv[2], sys.argv[3])
    elif cmd == "setup-hang" and len(sys.argv) == 4:
        setup_hang(sys.argv[2], sys.argv[3])
    elif cmd == "check-hang" and len(sys.argv) == 3:
        check_hang(sys.argv[2])
    elif cmd == "check" and len(sys.argv) == 3:
        check(sys.argv[2])
    elif cmd == "--spec":
        fake_torch(sys.argv[1:])
    elif cmd == "check-torch" and len(sys.argv) == 3:
        check_torch(sys.argv[2])
    elif cmd == "count" and len(sys.argv) == 4:
        count(sys.argv[2], sys.argv[3])
    else:
        print(__doc__)
        sys.exit(2)
