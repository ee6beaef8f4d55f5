#!/usr/bin/env python3
"""Rematerialization must not change the numbers: the same weights and batch through
libraries compiled with different training.checkpointing policies give bit-identical
losses and gradients on the CPU (same kernels, same order; tg-rematerialize only moves
recomputation), and identical parameters after one AdamW step.

    remat_check.py REFERENCE.so OTHER.so [OTHER.so ...] [--seed S]

Prints one line per library ("<lib>: loss ..., N gradients bit-identical") and ends with
"remat-check: PASS" (exit 0) or "remat-check: FAIL" (exit 1)."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import Lib  # noqa: E402  (ctypes wrapper of runtime/tglib.h)


def run(path, seed):
    lib = Lib(path)
    ctx = lib.create(seed)
    m = lib.model
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(0, m.vocab_size, (m.batch_size, m.context), generator=g)
    tgt = torch.randint(0, m.vocab_size, (m.batch_size, m.context), generator=g)
    params = lib.params()
    out = {"loss": lib.micro_step(ctx, tok, tgt)}
    out["grads"] = {p["name"]: lib.get_grad(ctx, p["name"], p["shape"]) for p in params}
    lib.optimizer_step(ctx, 1, 1e-3)
    out["params"] = {p["name"]: lib.get_param(ctx, p["name"], p["shape"]) for p in params}
    out["loss2"] = lib.micro_step(ctx, tok, tgt)
    lib.destroy(ctx)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ref = run(a.libs[0], a.seed)
    ok = True
    for path in a.libs[1:]:
        o = run(path, a.seed)
        bad = [n for n, t in ref["grads"].items() if not torch.equal(t, o["grads"][n])]
        badp = [n for n, t in ref["params"].items() if not torch.equal(t, o["params"][n])]
        same_loss = o["loss"] == ref["loss"] and o["loss2"] == ref["loss2"]
        print(f"{os.path.basename(path)}: loss {o['loss']:.6f} (ref {ref['loss']:.6f}), "
              f"{len(ref['grads']) - len(bad)}/{len(ref['grads'])} gradients bit-identical, "
              f"{len(ref['params']) - len(badp)}/{len(ref['params'])} updated parameters bit-identical")
        for n in bad[:5]:
            d = (o["grads"][n] - ref["grads"][n]).abs().max().item()
            print(f"  gradient {n}: max |diff| {d:.3e}")
        ok &= same_loss and not bad and not badp
    print("remat-check: " + ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
