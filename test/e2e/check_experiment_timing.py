"""Helper of test/e2e/experiment-timing.test: step times that rest on fewer than 3 timed steps
after the warm-up step are marked in the experiment's results (issue 25).

  check_experiment_timing.py setup DIR DATA  writes a hand-made `tgc experiment` output DIR
                                             (docs/experiments.md's contract) with
                                             configurations "two" and "five", whose
                                             executables are scripts that log 2 and 5 steps
                                             (step i takes 100 + i ms) and a final eval
  check_experiment_timing.py check DIR       results.jsonl's timing fields of both rows
"""
import json
import os
import stat
import sys

STEPS = {"two": 2, "five": 5}  # "two" first: the speed-up baseline must skip it

# Writes STEPS step records and a final val / test eval to the --log file, as the
# executable's --log does (runtime/driver); ignores every other option.
FAKE_TRAIN = """#!/bin/sh
log=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--log" ]; then log="$2"; fi
  shift
done
i=1
while [ $i -le STEPS ]; do
  echo "{\\"step\\": $i, \\"loss\\": 5.0, \\"ms\\": $((100 + i))}" >> "$log"
  i=$((i + 1))
done
echo '{"eval": "val", "step": STEPS, "final": true, "loss": 5.0, "ppl": 148.41}' >> "$log"
echo '{"eval": "test", "step": STEPS, "final": true, "loss": 5.0, "ppl": 148.41}' >> "$log"
"""


def fail(msg):
    print("check_experiment_timing.py: FAIL: " + msg)
    sys.exit(1)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def setup(root, data):
    names = list(STEPS)
    write_json(os.path.join(root, "experiment.json"), {
        "name": "timing", "matrix_file": "/dev/null", "spec_file": "examples/tiny.json",
        "data": os.path.abspath(data), "target": "cpu", "memory_bytes": None,
        "context_bytes": 0,
        "budget": {"steps": 10, "minutes": 0, "eval_every": 0, "eval_batches": 2},
        "pytorch": {"enabled": False, "compile": False}, "configs": names})
    for name, n in STEPS.items():
        cdir = os.path.join(root, "configs", name)
        write_json(os.path.join(cdir, "spec.json"), {"name": "tiny"})
        write_json(os.path.join(cdir, "config.json"), {
            "name": name, "status": "compiled", "set": {"training.batch_size": 8},
            "batch_request": None, "batch": 8, "grad_accum": 1, "context": 64,
            "tokens_per_step": 512, "precision": "fp32", "attention_kernel": "naive",
            "window": 0, "checkpointing": "none", "n_params": 132416,
            "plan": {"persistent_bytes": 2200000, "arena_bytes": 3100000,
                     "workspace_bytes": 0, "total_bytes": 5300000,
                     "peak_forward_bytes": 2000000, "peak_backward_bytes": 3100000,
                     "peak_optimizer_bytes": 8, "peak_eval_bytes": 1000000,
                     "step_flops": 170000000, "extra_flops": 0},
            "max_batch": None, "exe": "train.sh", "spec": "spec.json", "pytorch": False,
            "hash": "h-" + name})
        exe = os.path.join(cdir, "train.sh")
        with open(exe, "w") as f:
            f.write(FAKE_TRAIN.replace("STEPS", str(n)))
        os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR)
    print("wrote %s" % root)


def check(root):
    with open(os.path.join(root, "results.jsonl")) as f:
        recs = {r["config"]: r for r in (json.loads(ln) for ln in f if ln.strip())}
    # five: the median of steps 3-5 (103, 104, 105 ms), 3 timed steps after the warm-up;
    # two: of both steps (101, 102 ms), only 1 after the warm-up step.
    want = {"five": (5, 104.0, 3, False), "two": (2, 101.5, 1, True)}
    for name, (steps, ms, timed, indicative) in want.items():
        r = recs.get(name)
        if r is None or r.get("status") != "ok":
            fail("%s: no ok result line: %r" % (name, r))
        got = (r.get("steps"), r.get("ms_per_step"), r.get("timing_steps"),
               r.get("timing_indicative"))
        if got != (steps, ms, timed, indicative):
            fail("%s: (steps, ms_per_step, timing_steps, timing_indicative) = %r, expected %r"
                 % (name, got, (steps, ms, timed, indicative)))
    print("timing: PASS")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "setup":
        setup(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
