#!/usr/bin/env python3
"""prefetch.test: the driver's batch prefetch changes no number (runtime/driver/Driver.cpp
stageBatch; docs/design-notes.md "Between steps the GPU waits for the host").

By default the trainer samples the next micro-batch and stages it into the token slot
(tgrt_upload_async) while the current one runs. Given trainers compiled from a tiny CPU model
(grad_accum 2) for 1 and 2 data-parallel ranks, checks against TGRT_PREFETCH=0 (each batch
sampled and uploaded when its micro-step starts):

  a. 10 steps with periodic evaluations (which overwrite the token slot between steps) and a
     checkpoint every 4 steps, with --sampling random and with --sampling shuffle: the same
     step losses and gradient norms, evaluation losses, window log (TGRT_LOG_WINDOWS: one
     line per micro-batch trained, none for a batch staged but not trained) and final
     checkpoint bytes;
  b. a run stopped after step 5 (the batch of step 6 staged, not trained) saves the data
     RNG of the run without the prefetch (the checkpoints' bytes are equal), and resuming
     it gives the uninterrupted run's losses and final checkpoint;
  c. TGRT_PREFETCH with another value than 0 or 1 is refused before step 1 (exit 1, the
     message names the variable and its values).

Prints one line per check and "prefetch: PASS"; fails with "prefetch: FAIL: ..." (exit 1).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

VOCAB = 512
SEED = 11


def fail(msg):
    print("prefetch: FAIL: " + msg)
    sys.exit(1)


def write_data(d):
    rng = np.random.default_rng(5)
    os.makedirs(d, exist_ok=True)
    for name, n in (("train", 3000), ("val", 400), ("test", 300)):
        np.save(os.path.join(d, name + ".npy"), rng.integers(0, VOCAB, n).astype(np.uint16))
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"vocab_size": VOCAB, "dtype": "uint16"}, f)


def train(exe, data, args, prefetch, tag, work):
    """Runs exe; returns (log records, window log lines, checkpoint bytes, stdout)."""
    log, win, ck = (os.path.join(work, "%s.%s" % (tag, x)) for x in ("jsonl", "win", "ckpt"))
    for p in (log, win):
        if os.path.exists(p) and "--resume" not in args:
            os.remove(p)
    env = dict(os.environ)
    env["TGRT_LOG_WINDOWS"] = win
    if prefetch is None:
        env.pop("TGRT_PREFETCH", None)  # the default
    else:
        env["TGRT_PREFETCH"] = prefetch
    cmd = [exe, "--data", data, "--seed", str(SEED), "--log", log, "--save", ck] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        fail("%s (TGRT_PREFETCH=%s): exit status %d\n%s\n%s" % (
            " ".join(cmd), prefetch, p.returncode, p.stdout, p.stderr))
    with open(log) as f:
        recs = [json.loads(line) for line in f]
    with open(win) as f:
        # (the ranks are threads: their lines interleave in any order)
        wins = sorted((json.loads(line) for line in f),
                      key=lambda w: (w["step"], w["micro"], w["rank"]))
    with open(ck, "rb") as f:
        ckb = f.read()
    return recs, wins, ckb, p.stdout


def numbers(recs):
    """The step and evaluation numbers of a --log file (times left out)."""
    out = []
    for r in recs:
        if "eval" in r:
            out.append(("eval", r["eval"], r["step"] if "step" in r else None, r["loss"]))
        else:
            out.append(("step", r["step"], r["loss"], r["grad_norm"]))
    return out


def check_a(a, data):
    for exe, ranks in ((a.exe1, 1), (a.exe2, 2)):
        for sampling in ("random", "shuffle"):
            args = ["--steps", "10", "--sampling", sampling, "--eval-every", "3",
                    "--eval-batches", "2", "--save-every", "4", "--quiet"]
            if ranks == 2:
                args += ["--ranks", "2"]
            tag = "a-%d-%s" % (ranks, sampling)
            off = train(exe, data, args, "0", tag + "-off", a.work)
            on = train(exe, data, args, None, tag + "-on", a.work)
            if numbers(on[0]) != numbers(off[0]):
                fail("a: %d rank(s), %s: the losses differ:\nprefetch  %s\nwithout   %s" % (
                    ranks, sampling, numbers(on[0]), numbers(off[0])))
            steps = sum(1 for r in on[0] if "eval" not in r)
            evals = sum(1 for r in on[0] if r.get("eval") == "val" and not r.get("final"))
            if steps != 10 or evals != 3:
                fail("a: %d rank(s), %s: %d steps and %d periodic evaluations logged, want 10 "
                     "and 3" % (ranks, sampling, steps, evals))
            if on[1] != off[1] or len(on[1]) != 10 * 2 * ranks:
                fail("a: %d rank(s), %s: the window logs differ (%d and %d lines, want %d)" % (
                    ranks, sampling, len(on[1]), len(off[1]), 10 * 2 * ranks))
            if on[2] != off[2]:
                fail("a: %d rank(s), %s: the final checkpoints differ" % (ranks, sampling))
            print("prefetch: a: %d rank(s), --sampling %s: 10 steps x 2 micro-batches, 3 "
                  "evaluations between steps: losses, norms, %d window lines and the "
                  "checkpoint equal TGRT_PREFETCH=0's" % (ranks, sampling, len(on[1])))


def check_b(a, data):
    args = ["--steps", "10", "--quiet"]
    full = train(a.exe1, data, args, None, "b-full", a.work)
    off5 = train(a.exe1, data, args + ["--stop-after", "5"], "0", "b-off5", a.work)
    on5 = train(a.exe1, data, args + ["--stop-after", "5"], None, "b-on5", a.work)
    if on5[2] != off5[2]:
        fail("b: the checkpoints saved after step 5 differ with and without the prefetch "
             "(the data RNG of a staged batch saved?)")
    resumed = train(a.exe1, data, ["--resume", os.path.join(a.work, "b-on5.ckpt"), "--quiet"],
                    None, "b-on5", a.work)
    # (the stopped run's final evaluations at step 5 stay in the resumed log)
    kept = [r for r in resumed[0] if not (r.get("final") and r["step"] == 5)]
    if numbers(kept) != numbers(full[0]):
        fail("b: resumed at step 5: the losses differ from the uninterrupted run's:\n%s\n%s" % (
            numbers(kept), numbers(full[0])))
    if resumed[2] != full[2]:
        fail("b: resumed at step 5: the final checkpoint differs from the uninterrupted run's")
    print("prefetch: b: stopped after step 5 with step 6 staged: the checkpoint equals "
          "TGRT_PREFETCH=0's; resumed, 10 step losses and the final checkpoint equal the "
          "uninterrupted run's")


def check_c(a, data):
    env = dict(os.environ)
    env["TGRT_PREFETCH"] = "yes"
    p = subprocess.run([a.exe1, "--data", data, "--steps", "1"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    want = "TGRT_PREFETCH=yes is not 0"
    if p.returncode != 1 or want not in p.stderr or "step 1/" in p.stdout:
        fail("c: TGRT_PREFETCH=yes: exit status %d, want 1 with '%s' before step 1:\n%s\n%s" % (
            p.returncode, want, p.stdout, p.stderr))
    print("prefetch: c: TGRT_PREFETCH=yes refused before step 1: " + p.stderr.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--exe1", required=True, help="trainer, 1 rank, grad_accum 2")
    ap.add_argument("--exe2", required=True, help="trainer, 2 ranks (threads), grad_accum 2")
    a = ap.parse_args()
    data = os.path.join(a.work, "data")
    write_data(data)
    check_a(a, data)
    check_b(a, data)
    check_c(a, data)
    print("prefetch: PASS")


if __name__ == "__main__":
    main()
