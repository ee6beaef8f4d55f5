#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention timed the way tgrt-cuda-check times tgc's attention.

The same harness (issue 25, "comparisons that survive noise"): the forward and the backward
each timed alone with CUDA events around one call, 2 warm-up calls, then the median of
--reps (20, as `tgrt-cuda-check --cudnn`); the backward is `torch.autograd.grad(out, (q, k, v),
dout, retain_graph=True)` on one saved forward, so no repetition accumulates into .grad and
no forward is timed with it. The inputs are tgc's packed layout: q, k, v are strided views of
one [B, t, H + 2 Hkv, hd] projection output (leaves, so the gradients come back as dq, dk, dv
without a copy into a packed gradient); dout is [B, H, t, hd]. Grouped-query shapes use
`enable_gqa=True`. Causal, bf16 (or --dtype f16).

Shapes (those of tgrt-cuda-check's benchAttentionCudnn): GPT-2 small 16 x 12/12, t 1024, hd 64;
Llama 3.2 1B 4 x 32/8, t 2048, hd 64; hd 128 8 x 8/8, t 2048; GQA hd 128 8 x 32/8, t 2048
(issue 21's attention target). Per shape and backend (flash, efficient, cudnn; math is far
slower and left out) one JSON line, then a table with each shape's fastest backend; a
backend that refuses a shape prints its error instead.

Usage: python3 bench/torch_sdpa_time.py [--reps 20] [--dtype bf16|f16] [--json FILE]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = (("GPT-2 small", 16, 12, 12, 1024, 64),
          ("Llama 3.2 1B", 4, 32, 8, 2048, 64),
          ("hd 128", 8, 8, 8, 2048, 128),
          ("GQA hd 128", 8, 32, 8, 2048, 128))


def timed(fn, reps):
    """Median milliseconds of fn() over reps runs after 2 warm-up runs, one pair of CUDA events
    around each run (tgrt-cuda-check's timeMs)."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def visible_pairs(t):
    """Query-key pairs a causal mask lets through: t (t + 1) / 2."""
    return t * (t + 1) / 2


def time_shape(name, B, H, Hkv, t, hd, dt, backend, reps):
    """One row: fwd, bwd ms (and TFLOP/s as tgrt-cuda-check counts them) of one backend."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(B, t, H + 2 * Hkv, hd, device="cuda", dtype=dt, generator=g)
    q = x[:, :, :H].transpose(1, 2).detach().requires_grad_(True)
    k = x[:, :, H:H + Hkv].transpose(1, 2).detach().requires_grad_(True)
    v = x[:, :, H + Hkv:].transpose(1, 2).detach().requires_grad_(True)
    dout = torch.randn(B, H, t, hd, device="cuda", dtype=dt, generator=g)
    gqa = Hkv != H
    with sdpa_kernel(backend):
        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        f = timed(fwd, reps)
        out = fwd()
        b = timed(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), reps)
    flops = 4.0 * hd * visible_pairs(t) * B * H
    return {"shape": name, "dims": f"{B} x {H}/{Hkv}, t {t}, hd {hd}", "fwd_ms": f, "bwd_ms": b,
            "total_ms": f + b, "fwd_tflops": flops / (f * 1e-3) / 1e12,
            "bwd_tflops": 2.5 * flops / (b * 1e-3) / 1e12}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_sdpa_time.py: needs a CUDA GPU")
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    rows = []
    for shape in SHAPES:
        for bname, be in (("flash", SDPBackend.FLASH_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                r = time_shape(*shape, dt, be, args.reps)
            except Exception as e:  # a backend that does not take the shape / GPU
                r = {"shape": shape[0], "error": str(e).splitlines()[0][:160]}
            r.update(backend=bname, dtype=args.dtype)
            print(json.dumps(r), flush=True)
            rows.append(r)
            torch.cuda.empty_cache()
    print(f"\nPyTorch {torch.__version__} SDPA, {args.dtype}, causal, packed q/k/v views; fwd and "
          f"bwd each event-timed alone, median of {args.reps} after 2 warm-ups (ms)")
    print(f"{'shape':<14} {'B x H/Hkv, t, hd':<28} {'backend':<10} {'fwd':>8} {'bwd':>8} "
          f"{'total':>8} {'fwd TF/s':>9} {'bwd TF/s':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['shape']:<14} {'':<28} {r['backend']:<10} error: {r['error']}")
        else:
            print(f"{r['shape']:<14} {r['dims']:<28} {r['backend']:<10} {r['fwd_ms']:8.3f} "
                  f"{r['bwd_ms']:8.3f} {r['total_ms']:8.3f} {r['fwd_tflops']:9.1f} "
                  f"{r['bwd_tflops']:9.1f}")
    print("\nfastest PyTorch backend per shape (fwd + bwd):")
    for shape in SHAPES:
        ok = [r for r in rows if r["shape"] == shape[0] and "error" not in r]
        if ok:
            best = min(ok, key=lambda r: r["total_ms"])
            print(f"  {shape[0]:<14} {best['backend']:<10} {best['total_ms']:.3f} ms")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
