#!/usr/bin/env python3
"""The device's memory bandwidth as PyTorch reaches it: the roofline for tgc's memory-bound kernels.

Three rows, each the median of --reps runs timed with CUDA events around one call after 2
warm-up calls (tgrt-cuda-check's timeMs):
  copy     y.copy_(x), --gib GiB of float32: one read and one write per element;
  read     x.sum() over the same tensor: reads only;
  adamw    torch.optim.AdamW(fused=True).step() on one float32 parameter of --adamw-params
           elements (Llama 3.2 1B's 16 layers hold 973,078,528): p, g, m, v read and p, m, v
           written, 28 bytes per element (tgc's mixed-precision update moves 28 too: bf16
           gradient in, bf16 working copy out).
TB/s = bytes moved / median time. Usage: python3 bench/torch_bandwidth.py [--reps 20]
"""
import argparse
import torch

from torch_sdpa_time import timed  # the same harness: median of CUDA-event-timed calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--gib", type=float, default=2.0, help="GiB of the copy's source tensor")
    ap.add_argument("--adamw-params", type=int, default=973078528)
    a = ap.parse_args()
    n = int(a.gib * (1 << 30)) // 4
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    rows = []
    ms = timed(lambda: y.copy_(x), a.reps)
    rows.append(("copy", n, 8 * n, ms))
    ms = timed(lambda: x.sum(), a.reps)
    rows.append(("read (sum)", n, 4 * n, ms))
    del x, y
    p = torch.nn.Parameter(torch.randn(a.adamw_params, device="cuda") * 0.02)
    p.grad = torch.randn_like(p) * 1e-3
    opt = torch.optim.AdamW([p], lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                            fused=True)
    ms = timed(opt.step, a.reps)
    rows.append(("adamw fused f32", a.adamw_params, 28 * a.adamw_params, ms))
    print(f"{torch.cuda.get_device_name()} (torch {torch.__version__}), median of {a.reps}")
    print(f"{'kernel':<18} {'elements':>12} {'bytes':>14} {'ms':>9} {'TB/s':>7}")
    for name, elems, nbytes, t in rows:
        print(f"{name:<18} {elems:>12} {nbytes:>14} {t:>9.3f} {nbytes / t / 1e9:>7.3f}")


if __name__ == "__main__":
    main()
