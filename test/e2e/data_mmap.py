#!/usr/bin/env python3
"""data-mmap.test: the driver memory-maps its token files (issue 24; docs/data.md).

Given a data directory written by `tgc data prepare` (vocab 512) and executables compiled
from a tiny CPU model, builds DIR/train.npy as a SPARSE file of --tokens uint16 ids (the
header written by numpy.lib.format, then truncate to the full size: all ids 0, no disk
blocks) next to the prepared val/test splits and meta.json, and checks:

  1. each executable starts and trains 2 steps on it (step lines, finite losses in the log,
     the final val/test evaluation), and its peak RSS (GNU time's %M) stays below
     --max-rss-mib: the old driver read every split whole as uint32, 4 bytes a token, after
     reading the file (12 GB for 2 G tokens), before the first step;
  2. a token id >= vocab_size in val.npy is reported when the final evaluation reads it
     (exit 1, after the steps), naming the file, the id, its index and byte offset;
  3. a train.npy whose header promises one token more than the file holds is refused at
     open, naming the byte offset where the data starts.

Prints one line per check (the messages it requires) and "data-mmap: PASS"; fails with
"data-mmap: FAIL: ..." (exit 1).
Only when the file system does not keep the file sparse (it would write 4 GB) does it print
"data-mmap: SKIP: ..." and exit 0.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np


def fail(msg):
    print("data-mmap: FAIL: " + msg)
    sys.exit(1)


def write_sparse_u16(path, count, header_count=None):
    """A .npy file of `count` uint16 zeros whose data is a hole; the header may promise
    `header_count` elements instead (a truncated file). Returns the data offset."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<u2", "fortran_order": False,
                "shape": (count if header_count is None else header_count,)})
        offset = f.tell()
        f.truncate(offset + 2 * count)
    return offset


TIME = "/usr/bin/time"


def run(cmd, work):
    """Runs cmd; returns (exit status, stdout, stderr, seconds to the first step line,
    peak RSS in MiB) of that one process. The peak is GNU time's %M (its own wait4 of the
    command it forks); without /usr/bin/time, os.wait4's ru_maxrss of the child, an upper
    bound: Linux carries the peak over exec, so it includes this Python's RSS at the fork."""
    rss_file = os.path.join(work, "rss.txt")
    if os.path.exists(TIME):
        cmd = [TIME, "-f", "%M", "-o", rss_file] + cmd
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_lines, first_step = [], None
    for line in p.stdout:
        if first_step is None and line.startswith("step "):
            first_step = time.monotonic() - t0
        out_lines.append(line)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    rss_kib = ru.ru_maxrss  # Linux: KiB
    if os.path.exists(TIME):
        with open(rss_file) as f:  # "Command exited with non-zero status N" may precede
            rss_kib = int(f.read().split()[-1])
    return p.returncode, "".join(out_lines), err, first_step, rss_kib / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepared", required=True, help="a `tgc data prepare` directory")
    ap.add_argument("--work", required=True, help="where to build the data directories")
    ap.add_argument("--exe", action="append", required=True,
                    help="N-rank[s]=path of a trainer compiled for N data-parallel ranks")
    ap.add_argument("--tokens", type=int, default=2_000_000_000)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--max-rss-mib", type=float, default=300)
    a = ap.parse_args()

    data = os.path.join(a.work, "data")
    os.makedirs(data, exist_ok=True)
    for name in ("val.npy", "test.npy", "tokenizer.model"):
        shutil.copy(os.path.join(a.prepared, name), data)
    with open(os.path.join(a.prepared, "meta.json")) as f:
        meta = json.load(f)
    # The single-file layout: train.npy is replaced below, so drop an index of the prepared
    # shards (format_version 2, docs/data.md) that would describe the old one.
    meta.pop("splits", None)
    if isinstance(meta.get("tokens"), dict):
        meta["tokens"]["train"] = a.tokens  # what the file holds (the driver reads vocab_size)
    with open(os.path.join(data, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
    train = os.path.join(data, "train.npy")
    offset = write_sparse_u16(train, a.tokens)
    st = os.stat(train)
    allocated = st.st_blocks * 512
    if st.st_size != offset + 2 * a.tokens:
        fail(f"{train}: {st.st_size} bytes, expected {offset + 2 * a.tokens}")
    if allocated > 64 << 20:
        os.remove(train)
        print(f"data-mmap: SKIP: the file system under {a.work} does not keep {train} sparse "
              f"({allocated} of {st.st_size} bytes allocated)")
        return
    print(f"data-mmap: train.npy: {a.tokens} uint16 tokens, {st.st_size} bytes, "
          f"{allocated} allocated")

    # 1. Each executable trains 2 steps; peak RSS bounded.
    for spec in a.exe:
        label, exe = spec.split("=", 1)
        log = os.path.join(a.work, label + ".jsonl")
        rc, out, err, first, rss = run([exe, "--data", data, "--steps", "2", "--log", log],
                                       a.work)
        if rc != 0:
            fail(f"{label}: exit status {rc}\n{out}\n{err}")
        want = f"{a.tokens} train tokens"
        if want not in out:
            fail(f"{label}: no '{want}' in the output:\n{out}")
        ranks = int(label.split("-")[0])  # "N-rank(s)"
        if ranks > 1 and f"data parallel: {ranks} ranks (threads)" not in out:
            fail(f"{label}: not {ranks} data-parallel ranks:\n{out}")
        steps = [l for l in out.splitlines() if l.startswith("step ")]
        if len(steps) != 2:
            fail(f"{label}: {len(steps)} step lines, expected 2:\n{out}")
        with open(log) as f:
            recs = [json.loads(l) for l in f]
        losses = [r["loss"] for r in recs if "eval" not in r]
        evals = [r["eval"] for r in recs if r.get("final")]
        if len(losses) != 2 or not all(math.isfinite(x) for x in losses):
            fail(f"{label}: step losses {losses}")
        if evals != ["val", "test"]:
            fail(f"{label}: final evaluations {evals}, expected val and test")
        if rss >= a.max_rss_mib:
            fail(f"{label}: peak RSS {rss:.0f} MiB >= {a.max_rss_mib:.0f} MiB")
        print(f"data-mmap: {label}: 2 steps, losses {losses[0]:.4f} {losses[1]:.4f}, first "
              f"step after {first:.2f} s, peak RSS {rss:.0f} MiB < {a.max_rss_mib:.0f} MiB "
              f"(reading the ids whole as uint32 would take {4 * a.tokens / 2**20:.0f} MiB)")

    # 2. A bad id in val.npy: reported by the final evaluation that reads it.
    label, exe = a.exe[0].split("=", 1)
    bad = os.path.join(a.work, "bad")
    os.makedirs(bad, exist_ok=True)
    for name in ("test.npy", "meta.json"):
        shutil.copy(os.path.join(data, name), bad)
    if not os.path.exists(os.path.join(bad, "train.npy")):
        os.link(train, os.path.join(bad, "train.npy"))
    val = np.load(os.path.join(data, "val.npy"))
    val[100] = a.vocab
    np.save(os.path.join(bad, "val.npy"), val)
    with open(os.path.join(bad, "val.npy"), "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        val_offset = f.tell()
    rc, out, err, _, _ = run([exe, "--data", bad, "--steps", "2"], a.work)
    steps = [l for l in out.splitlines() if l.startswith("step ")]
    want = (f"{bad}/val.npy: token id {a.vocab} at index 100 is outside [0, vocab_size="
            f"{a.vocab}) (at byte offset {val_offset + 2 * 100})")
    if rc != 1 or len(steps) != 2 or want not in err:
        fail(f"bad id: exit status {rc}, {len(steps)} step lines; expected 1 after 2 steps "
             f"and '{want}':\n{out}\n{err}")
    print("data-mmap: bad id, after 2 steps: " + want)

    # 3. A truncated train.npy is refused at open.
    cut = os.path.join(a.work, "cut")
    os.makedirs(cut, exist_ok=True)
    for name in ("val.npy", "test.npy", "meta.json"):
        shutil.copy(os.path.join(data, name), cut)
    write_sparse_u16(os.path.join(cut, "train.npy"), a.tokens, header_count=a.tokens + 1)
    rc, out, err, first, _ = run([exe, "--data", cut, "--steps", "2"], a.work)
    want = (f"{cut}/train.npy: truncated: the header promises {a.tokens + 1} elements of 2 "
            f"bytes but only {2 * a.tokens} bytes follow (at byte offset {offset})")
    if rc != 1 or first is not None or want not in err:
        fail(f"truncated: exit status {rc}; expected 1 before any step and '{want}':\n"
             f"{out}\n{err}")
    print("data-mmap: truncated, at open: " + want)
    for d in (data, bad, cut):  # sparse, but 4 GB to anything that copies them
        os.remove(os.path.join(d, "train.npy"))
    print("data-mmap: PASS")


if __name__ == "__main__":
    main()
