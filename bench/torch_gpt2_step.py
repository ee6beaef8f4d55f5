#!/usr/bin/env python3
"""PyTorch reference timing of one GPT-2-style training step (fwd + bwd + AdamW).

Same shapes as a tgc spec: --layers --d-model --heads --d-ff --context --vocab --batch.
Modes: eager fp32 with TF32 matmuls (the first comparison of issue 4) and, with --compile,
torch.compile. Prints ms/step (median over --steps after --warmup) and peak memory (bytes).
Runs on the GPU machine (PyTorch 2.x with CUDA).

Data parallel (issue 11's PyTorch rows): under torchrun (WORLD_SIZE > 1) with --ddp
(DistributedDataParallel) or --fsdp (FSDP2 `fully_shard` per block and at the root: the
ZeRO-3 analogue); --batch is per GPU. Rank 0 prints the JSON: ms/step, tokens/s per GPU,
its peak memory, the world size.
  torchrun --nproc_per_node 2 bench/torch_gpt2_step.py --bf16 --compile --ddp"""
import argparse, json, math, os, statistics, time
import torch
import torch.utils.checkpoint
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(s, d, h, f):
        super().__init__()
        s.h = h
        s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.qkv, s.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        s.fc, s.mproj = nn.Linear(d, f), nn.Linear(f, d)

    def forward(s, x, window):
        B, T, D = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, s.h, D // s.h).transpose(1, 2) for t in (q, k, v))
        if window:
            i = torch.arange(T, device=x.device)
            mask = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < window)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + s.proj(o.transpose(1, 2).reshape(B, T, D))
        return x + s.mproj(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(s, a):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(a.vocab, a.d_model), nn.Embedding(a.context, a.d_model)
        s.blocks = nn.ModuleList(Block(a.d_model, a.heads, a.d_ff) for _ in range(a.layers))
        s.lnf = nn.LayerNorm(a.d_model)
        s.window = a.window
        s.checkpoint = a.checkpoint
        # tgc's initialisation (frontend/Spec.cpp; GPT-2, Radford et al. 2019): weights and
        # embeddings N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2 layers)), biases
        # 0. (PyTorch's defaults, N(0, 1) embeddings tied to the output layer, start the loss
        # near 70 instead of ln(vocab).)
        for n, m in s.named_modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * a.layers) if n.endswith("proj") else 0.02  # proj, mproj
                nn.init.normal_(m.weight, 0.0, std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def forward(s, idx, tgt):
        x = s.wte(idx) + s.wpe.weight[: idx.shape[1]]
        for b in s.blocks:
            if s.checkpoint and s.training:
                x = torch.utils.checkpoint.checkpoint(b, x, s.window, use_reentrant=False)
            else:
                x = b(x, s.window)
        logits = s.lnf(x) @ s.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.view(-1))


def write_profile(path, step, n):
    """GPU kernel time per step (ms) of `n` calls of step(), grouped by kernel name, largest
    first, with the share of the summed kernel time; written to `path` as text."""
    from torch.profiler import profile, ProfilerActivity
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    from torch.autograd import DeviceType
    agg = {}
    for e in prof.events():  # kernels and copies only (device-side events), not the CPU ops
        if e.device_type == DeviceType.CUDA:
            t, c = agg.get(e.name, (0.0, 0))
            agg[e.name] = (t + e.time_range.elapsed_us() / 1e3, c + 1)
    rows = [(k, t / n, c // n) for k, (t, c) in agg.items()]
    rows.sort(key=lambda r: -r[1])
    total = sum(r[1] for r in rows)
    with open(path, "w") as f:
        f.write(f"torch.profiler: {n} steps; GPU kernel time {total:.3f} ms per step\n")
        for name, ms, calls in rows:
            f.write(f"{ms:9.3f} ms {100 * ms / total:5.1f}% {calls:5d}x  {name[:140]}\n")


def main():
    p = argparse.ArgumentParser()
    for k, v in dict(layers=12, d_model=768, heads=12, d_ff=3072, context=1024, vocab=50304,
                     batch=16, window=0, steps=20, warmup=5).items():
        p.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile's mode (e.g. reduce-overhead: the compiled forward and "
                        "backward replayed as CUDA graphs); default: torch.compile's default")
    p.add_argument("--bf16", action="store_true", help="autocast bf16 (default: fp32 + TF32)")
    p.add_argument("--same-batch", action="store_true",
                   help="repeat one random batch every step (before 2026-11-30; default: a "
                        "fresh batch per step, as tgc's synthetic data)")
    p.add_argument("--checkpoint", action="store_true",
                   help="torch.utils.checkpoint per transformer block (activation recomputation)")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel (under torchrun)")
    p.add_argument("--fsdp", action="store_true", help="FSDP2 fully_shard (under torchrun)")
    p.add_argument("--profile", metavar="FILE",
                   help="after the timed steps, profile 3 more with torch.profiler and write the "
                        "GPU kernels' time per step (ms, grouped by kernel name) to FILE")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = "cuda"
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    if a.ddp or a.fsdp:
        import torch.distributed as dist
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl")
        torch.manual_seed(1234)  # the same initial weights on every rank
    model = GPT(a).to(dev)
    if a.ddp:
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model)
    elif a.fsdp:
        from torch.distributed.fsdp import fully_shard
        for b in model.blocks:
            fully_shard(b)
        fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=not a.fsdp, foreach=True if a.fsdp else None)
    step_fn = torch.compile(model, mode=a.compile_mode) if a.compile else model  # mode None: default
    # A fresh uniform random batch per step, as tgc's synthetic stream draws one (the loss
    # then stays near ln V; one repeated batch is memorised, its loss falls to 4-8 in 25
    # steps). All drawn before the first step: (warmup + steps) x 2 x batch x context int64
    # (6.6 MB at GPT-2 small's 25 steps), counted in the peak below. --same-batch: one batch.
    n_batches = 1 if a.same_batch else a.warmup + a.steps
    idx = torch.randint(0, a.vocab, (n_batches, a.batch, a.context), device=dev)
    tgt = torch.randint(0, a.vocab, (n_batches, a.batch, a.context), device=dev)
    times = []
    torch.cuda.reset_peak_memory_stats()
    def step(i=0):
        if a.compile and a.compile_mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()  # a new iteration of the graphs
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.bf16):
            loss = step_fn(idx[i % n_batches], tgt[i % n_batches])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    for i in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = step(i)
        torch.cuda.synchronize()
        if i >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    if a.profile:
        write_profile(a.profile, step, n=3)
    mode = (("compile" if a.compile else "eager")
            + (f"({a.compile_mode})" if a.compile and a.compile_mode else "")
            + ("+bf16" if a.bf16 else "+fp32/tf32")
            + ("+checkpoint" if a.checkpoint else "") + ("+ddp" if a.ddp else "")
            + ("+fsdp" if a.fsdp else ""))
    res = dict(mode=mode, batch=a.batch, context=a.context, window=a.window, world=world,
               batches=n_batches,
               ms_per_step=statistics.median(times),
               tokens_per_s=a.batch * a.context / (statistics.median(times) / 1e3),
               peak_bytes=torch.cuda.max_memory_allocated(), loss=float(loss))
    if rank == 0:
        print(json.dumps(res))
    if a.ddp or a.fsdp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
