#!/usr/bin/env python3
"""Data-parallel equality check (docs/distributed.md): a run of N ranks with micro-batch b
must match a run of one rank with micro-batch N*b (same spec otherwise, same seed): the
same data (every rank draws the global batch and keeps its rows), so the per-step losses and
the parameters of the final checkpoints agree up to the order of float summation.

usage: data_parallel.py --log-a A.jsonl --ckpt-a A.safetensors --log-b B.jsonl
                        --ckpt-b B.safetensors --rtol R [--rtol-loss RL] [--label NAME] [--moments]
Compares every training step's loss (relative difference <= RL, default R) and every tensor of the
checkpoints that is not an optimizer moment (max |a - b| <= R * max(1, max |b|)); with
--moments the AdamW moments too (max |a - b| <= R * max |b|: v is ~1e-8, so no floor of 1;
ZeRO-1 gathers them from their owners on save). Also
fails when the logs have different steps or no step at all, or the checkpoints hold
different tensors. Prints the worst differences and 'data-parallel NAME: PASS', or exits 1."""
import argparse, json, struct, sys

import numpy as np


def fail(msg):
    print(f"data-parallel: FAIL: {msg}")
    sys.exit(1)


def read_log(path):
    steps = {}
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if "eval" not in j and "step" in j:
                steps[j["step"]] = j["loss"]
    if not steps:
        fail(f"{path}: no training step logged")
    return steps


def read_st(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for k, v in header.items():
        if v["dtype"] != "F32":
            fail(f"{path}: {k} has dtype {v['dtype']}, expected F32")
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(data[b:e], dtype="<f4").reshape(v["shape"])
    return out


def main():
    ap = argparse.ArgumentParser()
    for k in ("log-a", "ckpt-a", "log-b", "ckpt-b"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--rtol", type=float, required=True, help="tensors (and the loss without --rtol-loss)")
    ap.add_argument("--rtol-loss", type=float, default=None,
                    help="the per-step losses (default --rtol); docs/testing.md, Tolerances")
    ap.add_argument("--label", default="")
    ap.add_argument("--moments", action="store_true")
    a = ap.parse_args()
    rtol_loss = a.rtol if a.rtol_loss is None else a.rtol_loss

    la, lb = read_log(a.log_a), read_log(a.log_b)
    if sorted(la) != sorted(lb):
        fail(f"the logs have different steps: {sorted(la)} vs {sorted(lb)}")
    worst_loss = 0.0
    for s in sorted(la):
        rel = abs(la[s] - lb[s]) / max(abs(lb[s]), 1e-30)
        worst_loss = max(worst_loss, rel)
        if not rel <= rtol_loss:
            fail(f"step {s}: loss {la[s]!r} vs {lb[s]!r}, relative difference {rel:.3g} > {rtol_loss}")

    ca, cb = read_st(a.ckpt_a), read_st(a.ckpt_b)
    if sorted(ca) != sorted(cb):
        fail(f"the checkpoints hold different tensors: {sorted(set(ca) ^ set(cb))}")
    worst_param, worst_name, compared = 0.0, "", 0
    for k in sorted(ca):
        moment = k.startswith("optim.")
        if moment and not a.moments:
            continue
        x, y = ca[k].astype(np.float64), cb[k].astype(np.float64)
        if x.shape != y.shape:
            fail(f"{k}: shape {x.shape} vs {y.shape}")
        top = float(np.max(np.abs(y))) if y.size else 0.0
        scale = (top if top > 0 else 1.0) if moment else max(1.0, top)
        d = float(np.max(np.abs(x - y))) / scale
        compared += 1
        if d > worst_param:
            worst_param, worst_name = d, k
        if not d <= a.rtol:
            fail(f"{'moment' if moment else 'parameter'} {k}: max |difference| {d:.3g} "
                 f"(relative to {'max |value|' if moment else 'max(1, max |value|)'}) > {a.rtol}")
    print(f"data-parallel {a.label}: {len(la)} steps, worst loss difference {worst_loss:.2g}; "
          f"{compared} tensors, worst difference {worst_param:.2g} ({worst_name})")
    print(f"data-parallel {a.label}: PASS")


if __name__ == "__main__":
    main()
