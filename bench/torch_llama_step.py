#!/usr/bin/env python3
"""PyTorch reference timing of one Llama-family training step (fwd + bwd + AdamW).

The model tgc compiles from a spec with model.norm "rmsnorm", positional "rope", SwiGLU and
grouped-query attention (examples/smollm2-135m.json, examples/llama3.2-1b.json): RMSNorm,
rotary embeddings (rotate_half, Llama 3 frequency scaling when the spec has it), SDPA with
enable_gqa (no repeated k/v), SwiGLU MLP, tied embeddings (an nn.Linear lm_head when the spec's tie_embeddings
is false, or with --untied), no biases. bf16 autocast,
fused AdamW (fp32 master weights and state), torch.compile by default.

  python3 bench/torch_llama_step.py --spec examples/llama3.2-1b.json --batch 4 --steps 20

Prints one JSON line: ms/step (median of --steps after --warmup, and min/max), tokens/s,
peak allocated bytes (torch.cuda.max_memory_allocated), the parameter count and, where NVML
answers, the timed steps' energy per step and mean power (bench/nvml_energy.py: the
counter tgc's trainer reads for its "energy:" line).
Runs on the GPU machine (PyTorch >= 2.5 with CUDA)."""
import argparse, json, math, os, statistics, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvml_energy  # noqa: E402  (bench/nvml_energy.py)


def inv_freq(hd, theta, scaling):
    """tgrt_rope_inv_freq (runtime/tgrt.h): HF's default and "llama3" rope types."""
    out = []
    for i in range(hd // 2):
        f = 1.0 / theta ** (2 * i / hd)
        if scaling and scaling.get("factor", 0) > 0:
            fac, lo, hi, ctx = (scaling["factor"], scaling["low_freq_factor"],
                                scaling["high_freq_factor"], scaling["original_context"])
            w = 2 * math.pi / f
            if w > ctx / lo:
                f = f / fac
            elif not (w < ctx / hi):
                s = (ctx / w - lo) / (hi - lo)
                f = (1 - s) * f / fac + s * f
        out.append(f)
    return torch.tensor(out, dtype=torch.float32)


class Block(nn.Module):
    def __init__(s, d, h, kv, hd, f, eps):
        super().__init__()
        s.h, s.kv, s.hd = h, kv, hd
        s.ln1, s.ln2 = nn.RMSNorm(d, eps=eps), nn.RMSNorm(d, eps=eps)
        s.qkv = nn.Linear(d, (h + 2 * kv) * hd, bias=False)
        s.proj = nn.Linear(h * hd, d, bias=False)
        s.fc = nn.Linear(d, 2 * f, bias=False)
        s.down = nn.Linear(f, d, bias=False)

    def forward(s, x, cos, sin):
        B, T, D = x.shape
        q, k, v = s.qkv(s.ln1(x)).split([s.h * s.hd, s.kv * s.hd, s.kv * s.hd], dim=2)
        q = q.view(B, T, s.h, s.hd).transpose(1, 2)
        k = k.view(B, T, s.kv, s.hd).transpose(1, 2)
        v = v.view(B, T, s.kv, s.hd).transpose(1, 2)

        def rope(t):
            t1, t2 = t.chunk(2, dim=-1)
            return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1)

        q, k = rope(q), rope(k)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=s.kv != s.h)
        x = x + s.proj(o.transpose(1, 2).reshape(B, T, s.h * s.hd))
        g, u = s.fc(s.ln2(x)).chunk(2, dim=-1)
        return x + s.down(F.silu(g) * u)


class Llama(nn.Module):
    def __init__(s, m):
        super().__init__()
        d, h = m["d_model"], m["n_heads"]
        kv = m.get("n_kv_heads") or h
        hd = m.get("head_dim") or d // h
        eps = m.get("layer_norm_eps", 1e-5)
        s.wte = nn.Embedding(m["vocab_size"], d)
        s.blocks = nn.ModuleList(
            Block(d, h, kv, hd, m["d_ff"], eps) for _ in range(m["n_layers"]))
        s.ln_f = nn.RMSNorm(d, eps=eps)
        s.lm_head = None if m.get("tie_embeddings", True) else nn.Linear(d, m["vocab_size"],
                                                                         bias=False)
        t = torch.arange(m["context"], dtype=torch.float32)
        ang = t[:, None] * inv_freq(hd, m.get("rope_theta", 10000.0), m.get("rope_scaling"))[None, :]
        s.register_buffer("cos", ang.cos(), persistent=False)
        s.register_buffer("sin", ang.sin(), persistent=False)
        # tgc's initialisation (frontend/Spec.cpp): weights and the (tied) embedding N(0, 0.02),
        # the residual projections (attention output, MLP down) N(0, 0.02 / sqrt(2 layers)),
        # norms 1. (PyTorch's defaults, an N(0, 1) embedding tied to the output layer, start the
        # loss near 65 instead of ln(vocab).)
        L = m["n_layers"]
        for n, mod in s.named_modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * L) if n.endswith(("proj", "down")) else 0.02
                nn.init.normal_(mod.weight, 0.0, std)

    def forward(s, idx, targets):
        T = idx.shape[1]
        x = s.wte(idx)
        cos, sin = s.cos[:T].to(x.dtype), s.sin[:T].to(x.dtype)
        for b in s.blocks:
            x = b(x, cos, sin)
        logits = F.linear(s.ln_f(x), s.wte.weight if s.lm_head is None else s.lm_head.weight)
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--eager", action="store_true", help="no torch.compile")
    ap.add_argument("--untied", action="store_true",
                    help="an untied lm_head (the spec with model.tie_embeddings=false)")
    ap.add_argument("--same-batch", action="store_true",
                    help="repeat one random batch every step (before 2026-11-30; default: a "
                         "fresh batch per step)")
    a = ap.parse_args()
    m = json.load(open(a.spec))["model"]
    if a.untied:
        m["tie_embeddings"] = False
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = "cuda"
    model = Llama(m).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=True)
    step_model = model if a.eager else torch.compile(model)
    V, T = m["vocab_size"], m["context"]
    # A fresh uniform random batch per step, as tgc's synthetic stream draws one (one
    # repeated batch is memorised and its loss falls); all drawn before the first step.
    # --same-batch: one batch.
    n = 1 if a.same_batch else a.warmup + a.steps
    x = torch.randint(0, V, (n, a.batch, T), device=dev)
    y = torch.randint(0, V, (n, a.batch, T), device=dev)

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(x[i % n], y[i % n])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    energy = nvml_energy.for_torch_device(torch)
    times = []
    j0, w0 = energy.joules(), time.perf_counter()
    for i in range(a.warmup, a.warmup + a.steps):
        t0 = time.perf_counter()
        loss = step(i)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    j1, w1 = energy.joules(), time.perf_counter()
    med = statistics.median(times)
    # The timed steps' energy (NVML's counter around them, as tgc's trainer reads it).
    extra = {} if j0 is None or j1 is None else {
        "energy_j_per_step": round((j1 - j0) / a.steps, 3), "watts": round((j1 - j0) / (w1 - w0), 1)}
    print(json.dumps({"system": "torch.compile" if not a.eager else "torch-eager",
                      "spec": a.spec, "batch": a.batch, "ms": round(med, 3),
                      "ms_min": round(min(times), 3), "ms_max": round(max(times), 3),
                      "tokens_per_s": round(a.batch * T / med * 1e3),
                      "peak_bytes": torch.cuda.max_memory_allocated(),
                      "params": nparams, "loss": float(loss.detach()), **extra}))


if __name__ == "__main__":
    main()
