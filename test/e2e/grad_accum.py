#!/usr/bin/env python3
"""Gradient accumulation check: grad_accum = K over micro-batches of size B/K must give the
same accumulated gradients as one micro-batch of size B (the loss is a mean over an equal
number of tokens per micro-batch, and tg-autodiff seeds each micro-step with 1/K), and the
same parameters after one optimizer step.

usage: grad_accum.py --accum LIB_K --single LIB_1 --k K [--seed S]
Both libraries come from the same spec, built with (batch B/K, grad_accum K) and (batch B,
grad_accum 1). Prints one line per parameter and 'grad-accum: PASS' or exits 1."""
import argparse, ctypes, os, sys
import numpy as np


# The C structs of runtime/tgrt.h: the one ctypes mirror (tgrt_abi.py, shared with
# torch_reference.py and loss_scale.py; no torch needed).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tgrt_abi import DTYPE_NAMES, PRECISIONS, TGRT_F32, check_model  # noqa: E402


# Tolerances (docs/testing.md, "Tolerances"): the worst bench/tolerance_survey.py measured
# over seeds 0-127 (2026-11-28) x 10, rounded up to one significant digit.
LOSS_TOL = 9e-7   # |single - mean of the K losses| / |single|: worst 8.2e-8
GRAD_TOL = 8e-6   # max|g1 - gK| / max|g1| per tensor: worst 7.1e-7
PARAM_TOL = 2e-5  # max|p1 - pK| after one AdamW step at lr 1e-3 (absolute): worst 2.0e-6,
                  # elements whose |g| is near eps, where AdamW's lr * g / (|g| + eps) is steep


def load(path):
    lib = ctypes.CDLL(path)
    lib.tglib_create.restype = ctypes.c_void_p
    lib.tglib_create.argtypes = [ctypes.c_int64]
    for fn in ("tglib_set_param", "tglib_get_param", "tglib_get_grad"):
        getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    lib.tglib_micro_step.restype = ctypes.c_float
    lib.tglib_micro_step.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.tglib_optimizer_step.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_float]
    return lib


def params(lib):
    """The model (checked against the mirror) and its (name, numel) list. The buffers here
    are float32 and the tolerances fp32's: every parameter must be an f32 slot."""
    m = check_model(lib)
    for i in range(m.n_params):
        p = m.params[i]
        assert p.dtype == TGRT_F32 and p.state_dtype == TGRT_F32, \
            f"{p.name.decode()}: dtype {DTYPE_NAMES[p.dtype]}, state {DTYPE_NAMES[p.state_dtype]} " \
            f"(precision {PRECISIONS[m.precision]}): this check is for fp32 models"
    return m, [(m.params[i].name, m.params[i].numel) for i in range(m.n_params)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accum", required=True)
    ap.add_argument("--single", required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--seed", type=int, default=7, help="weights and batch (default 7)")
    a = ap.parse_args()
    la, ls = load(a.accum), load(a.single)
    ma, pa = params(la)
    ms, ps = params(ls)
    assert ma.grad_accum == a.k and ms.grad_accum == 1, "libraries built with the wrong grad_accum"
    assert ms.batch_size == ma.batch_size * a.k, "batch sizes do not match B = K * b"
    ca, cs = la.tglib_create(1), ls.tglib_create(1)
    rng = np.random.default_rng(a.seed)
    for (name, n) in ps:  # identical random weights in both
        w = (rng.standard_normal(n) * 0.05).astype(np.float32)
        ls.tglib_set_param(cs, name, w.ctypes.data)
        la.tglib_set_param(ca, name, w.ctypes.data)
    T, B = ms.context, ms.batch_size
    tok = rng.integers(0, ms.vocab_size, (B, T), dtype=np.int32)
    tgt = rng.integers(0, ms.vocab_size, (B, T), dtype=np.int32)
    loss1 = ls.tglib_micro_step(cs, tok.ctypes.data, tgt.ctypes.data)
    b = ma.batch_size
    losses = []
    for k in range(a.k):
        t = np.ascontiguousarray(tok[k * b:(k + 1) * b])
        g = np.ascontiguousarray(tgt[k * b:(k + 1) * b])
        losses.append(la.tglib_micro_step(ca, t.ctypes.data, g.ctypes.data))
    worst, ok = 0.0, True
    mean_loss = float(np.mean(losses))
    print(f"loss single {loss1:.7f}  mean over {a.k} micro-batches {mean_loss:.7f}")
    ok &= abs(loss1 - mean_loss) <= LOSS_TOL * abs(loss1)
    for (name, n) in ps:
        g1 = np.empty(n, np.float32); gk = np.empty(n, np.float32)
        ls.tglib_get_grad(cs, name, g1.ctypes.data)
        la.tglib_get_grad(ca, name, gk.ctypes.data)
        err = float(np.max(np.abs(g1 - gk)) / max(np.max(np.abs(g1)), 1e-12))
        worst = max(worst, err)
        print(f"  {name.decode():32s} grad rel err {err:.2e}")
    ok &= worst <= GRAD_TOL
    ls.tglib_optimizer_step(cs, 1, 1e-3)
    la.tglib_optimizer_step(ca, 1, 1e-3)
    pworst = 0.0
    for (name, n) in ps:
        p1 = np.empty(n, np.float32); pk = np.empty(n, np.float32)
        ls.tglib_get_param(cs, name, p1.ctypes.data)
        la.tglib_get_param(ca, name, pk.ctypes.data)
        pworst = max(pworst, float(np.max(np.abs(p1 - pk))))
    print(f"worst grad rel err {worst:.2e}; worst parameter difference after AdamW {pworst:.2e}")
    ok &= pworst <= PARAM_TOL
    print("grad-accum: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
