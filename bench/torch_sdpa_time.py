#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention, forward + backward, per backend (issue 7's attention
target: tgc's own kernel against PyTorch's fastest SDPA backend in the same run).

Shape as tgrt-cuda-check's attention timing: batch 16 x heads 12 (bh 192), t 1024, head dim
64, causal, bf16 (or --dtype f16), inputs [B, H, T, hd] contiguous. Per backend (flash,
efficient, cudnn; math is far slower and left out) the median over --reps of CUDA-event
timed runs of: forward alone, and forward + backward (out.backward(dout)) -- so the backward
alone is their difference. Prints one JSON line per backend, then a table; a backend that
refuses the shape prints its error instead.

Usage: python3 bench/torch_sdpa_time.py [--reps 20] [--dtype bf16|f16] [--json FILE]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(fn, reps):
    """Median milliseconds of fn() over reps runs (3 warm-up runs first), CUDA events."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_sdpa_time.py: needs a CUDA GPU")
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    B, H, T, D = 16, 12, 1024, 64
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, dout = (torch.randn(B, H, T, D, device="cuda", dtype=dt, generator=g)
                     for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)
    rows = []
    for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                     ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(be):
                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=True)

                def fwd_bwd():
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    out.backward(dout)
                f = timed(fwd, args.reps)
                fb = timed(fwd_bwd, args.reps)
            r = {"backend": name, "dtype": args.dtype, "bh": B * H, "t": T, "hd": D,
                 "fwd_ms": f, "fwd_bwd_ms": fb, "bwd_ms": fb - f}
        except Exception as e:  # a backend that does not take the shape / GPU
            r = {"backend": name, "error": str(e).splitlines()[0][:200]}
        print(json.dumps(r), flush=True)
        rows.append(r)
    print(f"\nSDPA {args.dtype}, bh {B * H}, t {T}, hd {D}, causal (median of {args.reps}, ms)")
    print(f"{'backend':<10} {'fwd':>8} {'bwd':>8} {'fwd+bwd':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['backend']:<10} error: {r['error']}")
        else:
            print(f"{r['backend']:<10} {r['fwd_ms']:8.3f} {r['bwd_ms']:8.3f} {r['fwd_bwd_ms']:8.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
