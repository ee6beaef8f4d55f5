#!/usr/bin/env python3
"""Compares tgc's CUDA flash attention with PyTorch's scaled_dot_product_attention.

Reads the cases that `tgrt-cuda-check --dump DIR` wrote (DIR/manifest.txt: one line per case,
"name bh t hd causal window scale"; DIR/<name>_<part>.bin: raw float32 [bh, t, hd] for q, k,
v, out, dout, dq, dk, dv and [bh, t] for lse, all from the CUDA kernels). For each case it
recomputes out, lse and the gradients with torch in float64 on the GPU:
  - full causal (window 0): F.scaled_dot_product_attention(..., is_causal=True)
  - sliding window w: an explicit boolean mask, key j visible to query i iff
    j <= i and i - j < w
and prints max |ours - torch| / max |torch| for each (gradients taken together), PASS when
<= 1e-5. It also prints the error of PyTorch's own float32 SDPA against the same float64
reference, for scale. Exit status 1 on any FAIL.

Usage: python3 bench/cuda/sdpa_check.py DIR
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

TOL = 1e-5


def rel_err(got, ref):
    got = got.double().flatten()
    ref = ref.double().flatten()
    finite = torch.isfinite(ref)
    same_inf = (~finite) & (got == ref)
    diff = (got - ref).abs()
    diff[same_inf] = 0.0
    if torch.isnan(diff).any() or torch.isinf(diff).any():
        return math.inf
    denom = ref[finite].abs().max().item() if finite.any() else 0.0
    m = diff.max().item()
    return m / denom if denom > 0 else m


def load(d, name, part, shape):
    a = np.fromfile(os.path.join(d, f"{name}_{part}.bin"), dtype=np.float32)
    return torch.from_numpy(a.reshape(shape)).cuda()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    with open(os.path.join(d, "manifest.txt")) as f:
        cases = [line.split() for line in f if line.strip()]
    if not cases:
        print("sdpa_check: no cases in", d)
        return 1
    print(f"sdpa_check: torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"{len(cases)} cases, reference = torch float64")
    print(f"{'case':30s} {'out':>10s} {'lse':>10s} {'dq,dk,dv':>10s} "
          f"{'torch32 out':>12s} {'torch32 grads':>14s}  result")
    failed = 0
    for name, bh, t, hd, causal, window, scale in cases:
        bh, t, hd, causal, window = int(bh), int(t), int(hd), int(causal), int(window)
        scale = float(scale)
        shape = (1, bh, t, hd)
        q, k, v, dout = (load(d, name, p, shape) for p in ("q", "k", "v", "dout"))
        out, dq, dk, dv = (load(d, name, p, shape) for p in ("out", "dq", "dk", "dv"))
        lse = load(d, name, "lse", (1, bh, t))

        i = torch.arange(t, device="cuda")[:, None]
        j = torch.arange(t, device="cuda")[None, :]
        visible = torch.ones(t, t, dtype=torch.bool, device="cuda")
        if causal:
            visible = j <= i
            if window > 0:
                visible = visible & (i - j < window)

        def sdpa(dtype):
            qq, kk, vv = (x.to(dtype).detach().requires_grad_(True) for x in (q, k, v))
            if causal and window == 0:
                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, scale=scale)
            else:
                o = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=visible, scale=scale)
            o.backward(dout.to(dtype))
            return o.detach(), qq.grad, kk.grad, vv.grad

        ro, rdq, rdk, rdv = sdpa(torch.float64)
        s = scale * (q.double() @ k.double().transpose(-1, -2))
        rlse = torch.logsumexp(s.masked_fill(~visible, -math.inf), dim=-1)
        e_out = rel_err(out, ro)
        e_lse = rel_err(lse, rlse)
        e_grad = rel_err(torch.cat([dq.flatten(), dk.flatten(), dv.flatten()]),
                         torch.cat([rdq.flatten(), rdk.flatten(), rdv.flatten()]))
        to, tdq, tdk, tdv = sdpa(torch.float32)
        t_out = rel_err(to, ro)
        t_grad = rel_err(torch.cat([tdq.flatten(), tdk.flatten(), tdv.flatten()]),
                         torch.cat([rdq.flatten(), rdk.flatten(), rdv.flatten()]))
        ok = e_out <= TOL and e_lse <= TOL and e_grad <= TOL
        failed += not ok
        print(f"{name:30s} {e_out:10.2e} {e_lse:10.2e} {e_grad:10.2e} {t_out:12.2e} "
              f"{t_grad:14.2e}  {'PASS' if ok else 'FAIL'}")
    print(f"sdpa_check: {len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
