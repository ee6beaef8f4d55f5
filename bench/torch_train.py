#!/usr/bin/env python3
"""PyTorch reference runner for tgc's technique comparison: trains a tgc spec with PyTorch.

    torch_train.py --spec SPEC.json [--set PATH=VALUE ...] --data DIR [--steps S] [--minutes M] [--eval-batches K]
                   [--device cuda|cpu] [--batch N|max] [--compile] [--out FILE.json]
                   [--seed S] [--config NAME] [--peak-tflops F]

SPEC.json is a tgc spec (docs/spec.md). A partial spec is accepted: the fields it leaves out
(or sets to null) take tgc's defaults, mirrored in DEFAULTS below (frontend/Spec.h); an
unknown field is refused with its JSON path. --set PATH=VALUE overrides as `tgc --set` does. DIR holds train.npy, val.npy [, test.npy]
(1-D uint16 / uint32 / int32 token arrays from `tgc data prepare`) and optionally meta.json.

The model is the one tgc compiles (frontend/MLIRGen.cpp): GPT-2 style, token + learned
position embeddings, pre-LN blocks (LayerNorm -> causal self-attention -> residual,
LayerNorm -> MLP(GELU tanh) -> residual), final LayerNorm, LM head (tied to wte unless
model.tie_embeddings is false); dropout after the embeddings and after each residual branch
(attention output projection, MLP output projection), none on the attention probabilities.
Parameters have tgc's names and count; initialisation has tgc's distributions (normal 0.02,
residual projections 0.02/sqrt(2 L), LayerNorm 1/0, biases 0) but not its random stream.
Weight decay as tgc: matrices decay, vectors never, wte/wpe only with
training.optimizer.decay_embeddings. The lr schedule is tgc's learningRate()
(runtime/driver/Driver.cpp): optimizer steps count from 1; step <= warmup: lr * step/warmup;
then cosine / linear / none from lr to min_lr over the remaining steps.

How each technique maps onto PyTorch (what the lab reports did; reported as "impl"):
  precision fp32        plain fp32, TF32 off (torch.backends.cuda.matmul.allow_tf32 = False and
                        cudnn too), as tgc's exact fp32 (TGRT_TF32 unset)
            bf16-mixed  torch.autocast(bfloat16); fp32 weights, gradients and AdamW moments
            fp16-mixed  torch.autocast(float16) + GradScaler(init_scale=loss_scaling.init,
                        growth_interval=loss_scaling.growth_interval); CUDA only
            bf16        model.to(bfloat16) ("pure": weights, gradients, moments bf16); the
                        loss's log-softmax runs on an fp32 copy of the logits, as autocast does
  attention naive       explicit q k^T * scale, boolean causal (+ window) mask, softmax, @ v
            flash       F.scaled_dot_product_attention(is_causal=True): on CUDA with bf16/fp16
                        inputs PyTorch picks its FlashAttention-2 backend (fp32 inputs get the
                        memory-efficient one; "sdpa_flash" in the output says whether flash
                        was eligible); torch < 2.0 has no SDPA: the naive path is used
  window W > 0          SDPA (flash) or the naive path with a boolean sliding-window mask
                        (query i sees keys i-W+1..i): what PyTorch users without flex
                        attention do; SDPA then cannot use the flash backend and no kernel
                        skips the masked blocks, so time and memory do not fall with W
  checkpointing none    nothing recomputed
            layer       torch.utils.checkpoint(block, use_reentrant=False) per block
            selective   per block, torch.utils.checkpoint around ln2 -> mlp.fc -> GELU only
                        (the MLP's first half with its LayerNorm: the two [B,T,d_ff] tensors
                        and the LayerNorm output are not kept; the fc GEMM is recomputed,
                        unlike tgc's selective, which keeps GEMM outputs; PyTorch has no
                        per-op policy without torch.compile)
            budget:X    with --compile and torch._functorch.config.activation_memory_budget
                        (torch >= 2.4): no manual checkpoints, the budget fraction =
                        X / (estimated activation bytes of one micro-step without
                        recomputation, estimate_activation_bytes()), clamped to [0, 1];
                        otherwise as selective
  grad_accum k          loss / k per micro-batch, backward each, one optimizer step per k
  optimizer             torch.optim.AdamW (fused=True on CUDA when available), global-norm
                        clip to grad_clip (after GradScaler.unscale_ under fp16-mixed)

Data: training micro-batches are batch random windows of context + 1 tokens (numpy
default_rng(seed), starts uniform in [0, n - context)). Evaluation, as tgc's: consecutive
non-overlapping windows (window k = tokens [k T, k T + T]), in batches of the micro-batch
size, loss averaged over batches; at the end over the whole val and test splits, or over
their first K batches when --eval-batches K > 0 ("eval_batches" in the output says which:
{"cap": K, "val": batches, "val_batch": size, "test": ..., "test_batch": ...}). A split with
fewer windows than one micro-batch (large --batch max) is evaluated as one batch of all its
windows instead of being skipped.

Measurements (CUDA): torch.cuda.synchronize() around each optimizer step; ms_per_step = the
median of the steps after the first 2. Memory per phase: torch.cuda.reset_peak_memory_stats()
before each phase and torch.cuda.max_memory_allocated() after it (forward, backward of each
micro-batch; the optimizer step incl. clipping), the max over all steps: each number is the
peak allocated during that phase, parameters, gradients and optimizer state included.
used_bytes = torch.cuda.max_memory_reserved() over the run (what the caching allocator took
from the device). On the CPU all memory fields are null.

--batch max (CUDA only; refused on the CPU with exit 2): the largest micro-batch that fits,
by trial: doubling from training.batch_size, then bisecting; each trial builds a fresh model
and optimizer and runs 2 full training steps (forward, backward, optimizer; one micro-batch
each) at that batch, catching torch.cuda.OutOfMemoryError and freeing everything
(gc + empty_cache) between trials. Recorded as "max_batch": {"method": "trial", "max": N,
"trials": [[b, ok], ...]}; training then runs at N.

Output: one JSON object (a results.jsonl line: system "pytorch", status ok|oom|error|refused,
reason, ...) written atomically to --out, and a one-line summary on stdout. Exit status: 0 for
ok and for oom (an out-of-memory at the requested batch is a result), 1 for error, 2 for a
refused request (bad arguments or spec, --batch max on the CPU, fp16-mixed on the CPU).

Runs on PyTorch 2.x with CUDA and on PyTorch >= 1.13 on the CPU (no SDPA, no fused AdamW, no
torch.compile there).
"""
import argparse
import copy
import datetime
import gc
import inspect
import json
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

# tgc's defaults (frontend/Spec.h, docs/spec.md). A spec is this tree with the user's values
# over it; every leaf here is the only legal key at its place.
DEFAULTS = {
    "name": "model",
    "model": {
        "vocab_size": 50304, "context": 1024, "d_model": 768, "n_layers": 12, "n_heads": 12,
        "d_ff": 3072, "tie_embeddings": True, "attention_bias": True, "mlp_bias": True,
        "dropout": 0.0, "positional": "learned", "activation": "gelu_tanh",
        "layer_norm_eps": 1e-5,
        # The Llama family's fields (docs/spec.md): legal keys, refused below unless at
        # GPT-2's values (this runner models GPT-2 only).
        "norm": "layernorm", "mlp_gated": False, "n_kv_heads": 0, "head_dim": 0,
        "rope_theta": 10000.0,
        "rope_scaling": {"factor": 0.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_context": 8192},
    },
    "training": {
        "batch_size": 8, "grad_accum": 1, "precision": "fp32",
        "attention": {"kernel": "naive", "window": 0},
        "checkpointing": "none",
        "loss_scaling": {"init": 65536.0, "growth_interval": 2000},
        "optimizer": {
            "name": "adamw", "lr": 6e-4, "min_lr": 6e-5, "betas": [0.9, 0.95], "eps": 1e-8,
            "weight_decay": 0.1, "grad_clip": 1.0, "warmup_steps": 100, "decay": "cosine",
            "decay_embeddings": False,
        },
        "seed": 1337, "ignore_index": -1,
    },
}

PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed", "bf16")

# Dense peak TFLOP/s per GPU for the MFU column: (16-bit tensor core, fp32 without TF32).
# Matched by substring of torch.cuda.get_device_name(); --peak-tflops overrides.
PEAK_TFLOPS = [("H200", 989.4, 66.9), ("H100", 989.4, 66.9), ("A100", 312.0, 19.5),
               ("A40", 149.7, 37.4), ("L40S", 362.1, 91.6), ("RTX 4090", 165.2, 82.6),
               ("RTX 5090", 209.5, 104.8)]


class SpecError(Exception):
    """A spec problem, as "PATH: message" (PATH dotted like tgc's: training.optimizer.lr)."""


class Refused(Exception):
    """A request this runner does not make (status "refused", exit 2)."""


# ---------------------------------------------------------------------------------------------
# Spec


def fill_spec(user, defaults=DEFAULTS, path=""):
    """Returns a deep copy of `defaults` with the values of `user` (a dict from JSON) over it.

    null takes the default; an object replaces field by field. Raises SpecError for an unknown
    key or an object where a value belongs (and vice versa), naming the dotted JSON path."""
    if user is None:
        return copy.deepcopy(defaults)
    if not isinstance(user, dict):
        raise SpecError("%s: expected an object, got %s" % (path or "(root)", json.dumps(user)))
    out = copy.deepcopy(defaults)
    for k, v in user.items():
        p = path + "." + k if path else k
        if k not in defaults:
            raise SpecError("%s: unknown field" % p)
        if isinstance(defaults[k], dict):
            out[k] = fill_spec(v, defaults[k], p)
        elif v is None:
            pass
        elif isinstance(v, dict):
            raise SpecError("%s: expected a value, got an object" % p)
        else:
            out[k] = v
    return out


def apply_set(user, assignment):
    """Applies one "PATH=VALUE" override (tgc's --set: VALUE parsed as JSON, else taken as a
    string; missing objects created) to the spec dict `user`; raises SpecError."""
    if "=" not in assignment:
        raise SpecError("--set %s: expected PATH=VALUE" % assignment)
    path, text = assignment.split("=", 1)
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    keys, node, defaults = path.split("."), user, DEFAULTS
    for i, k in enumerate(keys):
        if not isinstance(defaults, dict) or k not in defaults:
            raise SpecError("--set %s: unknown field" % ".".join(keys[:i + 1]))
        if i == len(keys) - 1:
            node[k] = value
        else:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node, defaults = node[k], defaults[k]
    return user


def parse_budget(policy):
    """Bytes of a "budget:<n>[KiB|MiB|GiB]" checkpointing policy; None if malformed."""
    if not policy.startswith("budget:"):
        return None
    s = policy[len("budget:"):]
    for suffix, shift in (("KiB", 10), ("MiB", 20), ("GiB", 30), ("", 0)):
        if s.endswith(suffix) and s[:len(s) - len(suffix)].isdigit():
            n = int(s[:len(s) - len(suffix)])
            return n << shift if n > 0 else None
    return None


def check_spec(spec):
    """Checks the rules this runner depends on (a subset of tgc's); raises SpecError."""
    m, t = spec["model"], spec["training"]
    o = t["optimizer"]
    # GPT-2 only: a Llama-family spec is refused by name, never trained as GPT-2
    # (bench/torch_llama_step.py times the family).
    gpt2 = {"norm": "layernorm", "positional": "learned", "activation": "gelu_tanh",
            "mlp_gated": False}
    for k, v in gpt2.items():
        if m[k] != v:
            raise Refused("model.%s: %s: this PyTorch reference models GPT-2 only (layernorm, "
                          "learned positions, gelu_tanh); bench/torch_llama_step.py times the "
                          "Llama family" % (k, json.dumps(m[k])))
    if m["n_kv_heads"] not in (0, m["n_heads"]) or m["head_dim"] not in (0, m["d_model"] // m["n_heads"]):
        raise Refused("model.n_kv_heads / model.head_dim: this PyTorch reference models "
                      "multi-head attention with head dim d_model / n_heads only")
    for k in ("vocab_size", "context", "d_model", "n_layers", "n_heads", "d_ff"):
        if not isinstance(m[k], int) or isinstance(m[k], bool) or m[k] <= 0:
            raise SpecError("model.%s: expected a positive integer, got %s" % (k, json.dumps(m[k])))
    for k in ("batch_size", "grad_accum"):
        if not isinstance(t[k], int) or isinstance(t[k], bool) or t[k] <= 0:
            raise SpecError("training.%s: expected a positive integer, got %s"
                            % (k, json.dumps(t[k])))
    if m["d_model"] % m["n_heads"]:
        raise SpecError("model.d_model: %d is not divisible by model.n_heads=%d"
                        % (m["d_model"], m["n_heads"]))
    if not 0 <= m["dropout"] < 1:
        raise SpecError("model.dropout: %s is not in [0, 1)" % m["dropout"])
    if t["precision"] not in PRECISIONS:
        raise SpecError('training.precision: "%s" is not one of %s'
                        % (t["precision"], ", ".join(PRECISIONS)))
    if t["attention"]["kernel"] not in ("naive", "flash"):
        raise SpecError('training.attention.kernel: "%s" is not one of naive, flash'
                        % t["attention"]["kernel"])
    w = t["attention"]["window"]
    if not isinstance(w, int) or w < 0 or w > m["context"]:
        raise SpecError("training.attention.window: %s is not in [0, model.context=%d]"
                        % (json.dumps(w), m["context"]))
    c = t["checkpointing"]
    if c not in ("none", "selective", "layer") and parse_budget(c) is None:
        raise SpecError('training.checkpointing: "%s" is not one of none, selective, layer, '
                        "budget:<bytes>" % c)
    if o["decay"] not in ("cosine", "linear", "none"):
        raise SpecError('training.optimizer.decay: "%s" is not one of cosine, linear, none'
                        % o["decay"])
    if not (isinstance(o["betas"], list) and len(o["betas"]) == 2):
        raise SpecError("training.optimizer.betas: expected an array of 2 numbers")
    if not o["lr"] > 0:
        raise SpecError("training.optimizer.lr: must be > 0, got %s" % o["lr"])
    if not 0 <= o["min_lr"] <= o["lr"]:
        raise SpecError("training.optimizer.min_lr: %s is not in [0, training.optimizer.lr=%s]"
                        % (o["min_lr"], o["lr"]))
    ii = t["ignore_index"]
    if ii != -1 and not 0 <= ii < m["vocab_size"]:
        raise SpecError("training.ignore_index: %s must be -1 or in [0, model.vocab_size=%d)"
                        % (ii, m["vocab_size"]))


def learning_rate(opt, step, total_steps):
    """tgc's learningRate() (runtime/driver/Driver.cpp): lr of optimizer step `step` (1-based)
    of a run of `total_steps`."""
    lr, min_lr = opt["lr"], opt["min_lr"]
    warmup = max(0, opt["warmup_steps"])
    if warmup > 0 and step <= warmup:
        return lr * step / warmup
    if opt["decay"] == "none":
        return lr
    span = total_steps - warmup
    p = 1.0 if span <= 0 else (step - warmup) / span
    p = min(1.0, max(0.0, p))
    if opt["decay"] == "cosine":
        return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * p))
    return lr - (lr - min_lr) * p


# ---------------------------------------------------------------------------------------------
# Model

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def attention_mask(T, window, device):
    """Boolean [T, T]: True where query i may see key j (j <= i, and i - j < window if > 0)."""
    i = torch.arange(T, device=device)
    mask = i[None, :] <= i[:, None]
    if window:
        mask &= (i[:, None] - i[None, :]) < window
    return mask


class Attention(nn.Module):
    def __init__(s, D, H, bias, kernel, window):
        super().__init__()
        s.H, s.kernel, s.window = H, kernel, window
        s.qkv = nn.Linear(D, 3 * D, bias=bias)
        s.proj = nn.Linear(D, D, bias=bias)

    def forward(s, x, mask):
        """x [B, T, D]; mask: boolean [T, T] (attention_mask) or None for SDPA is_causal."""
        B, T, D = x.shape
        q, k, v = s.qkv(x).split(D, dim=2)
        q, k, v = (t.view(B, T, s.H, D // s.H).transpose(1, 2) for t in (q, k, v))
        if s.kernel == "flash" and HAS_SDPA:
            if mask is not None:
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # naive: materializes the [B, H, T, T] scores and probabilities
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // s.H))
            att = att.masked_fill(~mask, float("-inf"))
            o = F.softmax(att, dim=-1) @ v
        return s.proj(o.transpose(1, 2).reshape(B, T, D))


class MLP(nn.Module):
    def __init__(s, D, Fd, bias):
        super().__init__()
        s.fc = nn.Linear(D, Fd, bias=bias)
        s.proj = nn.Linear(Fd, D, bias=bias)


class Block(nn.Module):
    def __init__(s, m, kernel, window, selective):
        super().__init__()
        D = m["d_model"]
        s.ln1 = nn.LayerNorm(D, eps=m["layer_norm_eps"])
        s.attn = Attention(D, m["n_heads"], m["attention_bias"], kernel, window)
        s.ln2 = nn.LayerNorm(D, eps=m["layer_norm_eps"])
        s.mlp = MLP(D, m["d_ff"], m["mlp_bias"])
        s.drop = nn.Dropout(m["dropout"])
        s.selective = selective

    def mlp_up(s, x):
        return F.gelu(s.mlp.fc(s.ln2(x)), approximate="tanh")

    def forward(s, x, mask):
        x = x + s.drop(s.attn(s.ln1(x), mask))
        if s.selective and s.training:
            h = torch.utils.checkpoint.checkpoint(s.mlp_up, x, use_reentrant=False)
        else:
            h = s.mlp_up(x)
        return x + s.drop(s.mlp.proj(h))


class GPT(nn.Module):
    """tgc's model (frontend/MLIRGen.cpp) with its parameter names: wte, wpe, layers.i.{ln1,
    attn.qkv, attn.proj, ln2, mlp.fc, mlp.proj}, ln_f, lm_head (untied only). forward(idx,
    tgt) with int64 [B, T] tokens and targets returns the mean cross-entropy (fp32)."""

    def __init__(s, spec, checkpointing):
        super().__init__()
        m, t = spec["model"], spec["training"]
        D, V, L = m["d_model"], m["vocab_size"], m["n_layers"]
        s.wte = nn.Embedding(V, D)
        s.wpe = nn.Embedding(m["context"], D)
        s.drop = nn.Dropout(m["dropout"])
        s.layers = nn.ModuleList(
            Block(m, t["attention"]["kernel"], t["attention"]["window"],
                  checkpointing == "selective") for _ in range(L))
        s.ln_f = nn.LayerNorm(D, eps=m["layer_norm_eps"])
        s.lm_head = None if m["tie_embeddings"] else nn.Linear(D, V, bias=False)
        s.layer_checkpoint = checkpointing == "layer"
        s.ignore_index = t["ignore_index"]
        # One boolean [C, C] mask for all layers (None: SDPA with is_causal needs none).
        kern, win = t["attention"]["kernel"], t["attention"]["window"]
        s.register_buffer("mask", None if kern == "flash" and HAS_SDPA and not win else
                          attention_mask(m["context"], win, "cpu"), persistent=False)
        # tgc's initialisation (frontend/Spec.cpp modelParameters), not its random stream.
        resid = 0.02 / math.sqrt(2.0 * L)
        for name, p in s.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln" in name or name.startswith("ln_f"):
                nn.init.ones_(p)
            else:
                std = resid if name.endswith("attn.proj.weight") or name.endswith(
                    "mlp.proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(s, idx, tgt):
        T = idx.shape[1]
        x = s.drop(s.wte(idx) + s.wpe.weight[:T])
        mask = None if s.mask is None else s.mask[:T, :T]
        for b in s.layers:
            if s.layer_checkpoint and s.training:
                x = torch.utils.checkpoint.checkpoint(b, x, mask, use_reentrant=False)
            else:
                x = b(x, mask)
        x = s.ln_f(x)
        logits = F.linear(x, s.wte.weight if s.lm_head is None else s.lm_head.weight)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt.reshape(-1),
                               ignore_index=s.ignore_index)

    def param_groups(s, weight_decay, decay_embeddings):
        """AdamW groups with tgc's rule: matrices decay, vectors never, wte/wpe only when
        decay_embeddings."""
        decay, no_decay = [], []
        for name, p in s.named_parameters():
            emb = name in ("wte.weight", "wpe.weight")
            (decay if p.dim() >= 2 and (not emb or decay_embeddings) else no_decay).append(p)
        return [{"params": decay, "weight_decay": weight_decay},
                {"params": no_decay, "weight_decay": 0.0}]


def visible_pairs(T, window):
    """(query, key) pairs causal attention computes: sum over i of min(i + 1, window)."""
    if not window or window >= T:
        return T * (T + 1) // 2
    return window * (window + 1) // 2 + (T - window) * window


def step_flops(spec, batch):
    """Model FLOPs of one optimizer step (forward + backward = 3 x forward, no recomputation):
    GEMMs 2mnk, attention 4 * B * H * hd * visible pairs (QK^T and PV)."""
    m, t = spec["model"], spec["training"]
    D, Fd, V, T, L = m["d_model"], m["d_ff"], m["vocab_size"], m["context"], m["n_layers"]
    tok = batch * T
    per_layer = 2 * tok * (3 * D * D + D * D + 2 * D * Fd) + \
        4 * batch * D * visible_pairs(T, t["attention"]["window"])
    return 3 * (L * per_layer + 2 * tok * D * V) * t["grad_accum"]


def estimate_activation_bytes(spec, batch):
    """Rough bytes autograd keeps for one micro-step without recomputation (for the budget
    fraction of activation_memory_budget): per layer the fp32 residual stream and LayerNorm
    outputs, qkv, attention output (or fp32 scores and probabilities for naive attention), the
    MLP's two [B,T,d_ff] tensors; plus the logits and their fp32 copy."""
    m, t = spec["model"], spec["training"]
    D, Fd, V, T, H = m["d_model"], m["d_ff"], m["vocab_size"], m["context"], m["n_heads"]
    cb = 4 if t["precision"] == "fp32" else 2
    tok = batch * T
    attn = 2 * batch * H * T * T * 4 if t["attention"]["kernel"] == "naive" else \
        tok * D * cb + batch * H * T * 4
    layer = tok * (D * (4 * 4 + 6 * cb) + 2 * Fd * cb) + attn
    return m["n_layers"] * layer + tok * V * (cb + 4)


# ---------------------------------------------------------------------------------------------
# Data


def load_split(path, vocab):
    """1-D token array of a .npy file as int64 numpy; raises ValueError with the file named."""
    try:
        a = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as e:
        raise ValueError("%s: cannot read a .npy token array: %s" % (path, e))
    if a.ndim != 1 or a.dtype not in (np.uint16, np.uint32, np.int32, np.int64):
        raise ValueError("%s: expected a 1-D uint16/uint32/int32 token array, got %s %s"
                         % (path, a.dtype, a.shape))
    a = np.asarray(a, dtype=np.int64)
    if a.size and (a.min() < 0 or a.max() >= vocab):
        raise ValueError("%s: token ids must be in [0, %d), found [%d, %d]"
                         % (path, vocab, int(a.min()), int(a.max())))
    return a


class Data:
    def __init__(s, d, vocab, context, seed):
        meta_path = os.path.join(d, "meta.json")
        if os.path.exists(meta_path):
            with open(meta_path) as f:
                meta = json.load(f)
            v = meta.get("vocab_size") if isinstance(meta, dict) else None
            if isinstance(v, int) and v > vocab:
                raise ValueError("%s: the data's vocab_size %d exceeds the model's vocab_size "
                                 "%d" % (meta_path, v, vocab))
        s.train = load_split(os.path.join(d, "train.npy"), vocab)
        s.val = load_split(os.path.join(d, "val.npy"), vocab)
        tp = os.path.join(d, "test.npy")
        s.test = load_split(tp, vocab) if os.path.exists(tp) else None
        s.T = context
        if s.train.size < context + 1:
            raise ValueError("%s: %d tokens, fewer than one training window of context + 1 = %d"
                             % (os.path.join(d, "train.npy"), s.train.size, context + 1))
        s.rng = np.random.default_rng(seed)
        s.offsets = np.arange(context + 1)

    def sample(s, batch):
        """[batch, T + 1] int64 random windows of the train split."""
        starts = s.rng.integers(0, s.train.size - s.T, size=batch)
        return torch.from_numpy(s.train[starts[:, None] + s.offsets[None, :]])

    def eval_batch(s, split, batch):
        """The eval batch size: `batch`, or all windows of the split when it holds fewer than
        one batch (tgc would skip the split; a reference number is more useful)."""
        windows = (split.size - 1) // s.T if split.size else 0
        return max(1, min(batch, windows))

    def eval_batches(s, split, batch):
        """Consecutive windows [k T, k T + T] in batches of `batch` (tgc's evaluate(); the
        windows after the last full batch are left out, as there)."""
        windows = (split.size - 1) // s.T if split.size else 0
        for k in range(windows // batch):
            idx = (k * batch + np.arange(batch))[:, None] * s.T + s.offsets[None, :]
            yield torch.from_numpy(split[idx])


# ---------------------------------------------------------------------------------------------
# Training


def is_oom(e):
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(e, oom):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e)


class Trainer:
    """One model + optimizer + precision policy on one device."""

    def __init__(s, spec, device, batch, compile_, seed):
        s.spec, s.device, s.batch = spec, device, batch
        t = spec["training"]
        s.prec = t["precision"]
        s.accum = t["grad_accum"]
        s.opt_spec = t["optimizer"]
        s.cuda = device.type == "cuda"
        ck = t["checkpointing"]
        s.impl = {}
        budget_frac = None
        if parse_budget(ck) is not None:
            fn_config = None
            if compile_:
                try:
                    import torch._functorch.config as fn_config
                except ImportError:
                    fn_config = None
            if fn_config is not None and hasattr(fn_config, "activation_memory_budget"):
                est = estimate_activation_bytes(spec, batch)
                budget_frac = min(1.0, max(0.0, parse_budget(ck) / est))
                fn_config.activation_memory_budget = budget_frac
                s.impl["checkpointing"] = ("torch.compile activation_memory_budget=%.4f (budget "
                                           "%d B / estimated %d B)" % (budget_frac,
                                                                      parse_budget(ck), est))
                ck = "none"
            else:
                s.impl["checkpointing"] = ("selective (budget needs --compile and torch >= 2.4 "
                                           "activation_memory_budget)")
                ck = "selective"
        else:
            s.impl["checkpointing"] = {
                "none": "none", "layer": "torch.utils.checkpoint per block (use_reentrant=False)",
                "selective": "torch.utils.checkpoint around ln2 -> mlp.fc -> gelu per block"}[ck]
        torch.manual_seed(seed)
        model = GPT(spec, ck)  # initialised on the CPU: the same weights on every device
        if s.prec == "bf16":
            model = model.to(torch.bfloat16)
        s.model = model.to(device)
        s.n_params = sum(p.numel() for p in s.model.parameters())
        groups = s.model.param_groups(s.opt_spec["weight_decay"], s.opt_spec["decay_embeddings"])
        kw = dict(lr=s.opt_spec["lr"], betas=tuple(s.opt_spec["betas"]), eps=s.opt_spec["eps"])
        s.fused = s.cuda and "fused" in inspect.signature(torch.optim.AdamW).parameters
        if s.fused:
            kw["fused"] = True
        s.opt = torch.optim.AdamW(groups, **kw)
        s.impl["optimizer"] = "AdamW" + (" fused" if s.fused else "")
        s.autocast_dtype = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}.get(s.prec)
        s.impl["precision"] = {"fp32": "fp32, TF32 off", "bf16-mixed": "autocast bf16",
                               "fp16-mixed": "autocast fp16 + GradScaler",
                               "bf16": "model.to(bfloat16)"}[s.prec]
        kern, win = t["attention"]["kernel"], t["attention"]["window"]
        if kern == "flash" and HAS_SDPA:
            s.impl["attention"] = "sdpa " + ("bool window mask %d" % win if win else "is_causal")
        else:
            s.impl["attention"] = "naive matmul/mask/softmax/matmul" + (
                " window %d" % win if win else "") + (
                " (flash requested; torch %s has no SDPA)" % torch.__version__
                if kern == "flash" else "")
        s.scaler = None
        if s.prec == "fp16-mixed":
            ls = t["loss_scaling"]
            Scaler = torch.amp.GradScaler if hasattr(torch.amp, "GradScaler") else \
                torch.cuda.amp.GradScaler
            args = ("cuda",) if Scaler is not torch.cuda.amp.GradScaler else ()
            s.scaler = Scaler(*args, init_scale=ls["init"], growth_interval=ls["growth_interval"])
        s.fwd = torch.compile(s.model) if compile_ else s.model
        if compile_:
            s.impl["compile"] = "torch.compile(model)"
        s.phase = {"forward": 0, "backward": 0, "optimizer": 0}
        s.skipped = 0

    def autocast(s):
        if s.autocast_dtype is None:
            return torch.autocast(s.device.type, enabled=False)
        return torch.autocast(s.device.type, dtype=s.autocast_dtype)

    def _mark(s, phase):
        if s.cuda:
            s.phase[phase] = max(s.phase[phase], torch.cuda.max_memory_allocated(s.device))
            torch.cuda.reset_peak_memory_stats(s.device)

    def step(s, lr, batches):
        """One optimizer step over the micro-batches `batches` ([B, T+1] int64 CPU tensors).
        Returns the mean micro-batch loss (float)."""
        for g in s.opt.param_groups:
            g["lr"] = lr
        s.model.train()
        total = None
        for xy in batches:
            xy = xy.to(s.device, non_blocking=True)
            if s.cuda:
                torch.cuda.reset_peak_memory_stats(s.device)
            with s.autocast():
                loss = s.fwd(xy[:, :-1], xy[:, 1:])
            s._mark("forward")
            scaled = loss / s.accum
            if s.scaler is not None:
                scaled = s.scaler.scale(scaled)
            scaled.backward()
            s._mark("backward")
            total = loss.detach() if total is None else total + loss.detach()
        if s.scaler is not None:
            s.scaler.unscale_(s.opt)
        if s.opt_spec["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(s.model.parameters(), s.opt_spec["grad_clip"])
        if s.scaler is not None:
            before = s.scaler.get_scale()
            s.scaler.step(s.opt)
            s.scaler.update()
            if s.scaler.get_scale() < before:
                s.skipped += 1
        else:
            s.opt.step()
        s.opt.zero_grad(set_to_none=True)
        s._mark("optimizer")
        return float(total) / len(batches)

    @torch.no_grad()
    def evaluate(s, data, split, max_batches):
        """Mean over batches of the mean loss, and the batches used (tgc's evaluate())."""
        s.model.eval()
        total, used = 0.0, 0
        for xy in data.eval_batches(split, data.eval_batch(split, s.batch)):
            if max_batches > 0 and used >= max_batches:
                break
            xy = xy.to(s.device)
            with s.autocast():
                total += float(s.model(xy[:, :-1], xy[:, 1:]))
            used += 1
        return (total / used if used else float("nan")), used


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def free_cuda():
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def trial(spec, device, batch, compile_, seed, data):
    """2 training steps at micro-batch `batch` on a fresh model; False on out-of-memory."""
    tr = None
    ok = True
    try:
        if compile_:
            torch._dynamo.reset()
        tr = Trainer(spec, device, batch, compile_, seed)
        for k in range(2):
            tr.step(spec["training"]["optimizer"]["lr"], [data.sample(batch)])
        sync(device)
    except Exception as e:  # noqa: BLE001 -- only OOM is a trial outcome
        if not is_oom(e):
            raise
        ok = False
    del tr
    free_cuda()
    return ok


def find_max_batch(spec, device, compile_, seed, data, limit=1 << 20):
    """Doubling from training.batch_size, then bisecting: {"method", "max", "trials"}."""
    trials = []

    def ok(b):
        r = trial(spec, device, b, compile_, seed, data)
        trials.append([b, r])
        print("batch finder: %d %s" % (b, "fits" if r else "out of memory"), file=sys.stderr)
        return r

    lo, hi, b = 0, None, max(1, spec["training"]["batch_size"])
    while hi is None and b <= limit:
        if ok(b):
            lo, b = b, b * 2
        else:
            hi = b
    if hi is None:
        hi = limit + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return {"method": "trial", "max": lo, "trials": trials}


def peak_tflops(device, precision, override):
    if override:
        return override
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, half, fp32 in PEAK_TFLOPS:
        if key in name:
            return fp32 if precision == "fp32" else half
    return None


def sdpa_flash_eligible(spec, device):
    """Whether SDPA's flash backend accepts this model's q/k/v (CUDA, torch >= 2.3); else None."""
    t = spec["training"]
    if device.type != "cuda" or t["attention"]["kernel"] != "flash" or not HAS_SDPA:
        return None
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None
    dt = torch.float32 if t["precision"] == "fp32" else \
        torch.float16 if t["precision"] == "fp16-mixed" else torch.bfloat16
    m = spec["model"]
    hd = m["d_model"] // m["n_heads"]
    q = torch.zeros(1, m["n_heads"], 16, hd, device=device, dtype=dt)
    mask = attention_mask(16, t["attention"]["window"], device) if t["attention"]["window"] \
        else None
    try:
        with warnings.catch_warnings():  # PyTorch explains at length why a backend is unfit
            warnings.simplefilter("ignore")
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                F.scaled_dot_product_attention(q, q, q, attn_mask=mask, is_causal=mask is None)
        return True
    except RuntimeError:
        return False


def run(a, spec, result):
    """Trains per the arguments; fills `result` as it goes (so a failure keeps what was
    measured). Raises on errors; an out-of-memory propagates to main()."""
    t0 = time.perf_counter()
    device = torch.device(a.device)
    t = spec["training"]
    seed = t["seed"] if a.seed is None else a.seed
    result["seed"] = seed
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise Refused("--device cuda: torch %s sees no CUDA device" % torch.__version__)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        result["gpu"] = torch.cuda.get_device_name(device)
    result["tf32"] = False
    if a.compile and not hasattr(torch, "compile"):
        raise Refused("--compile needs torch >= 2.0 (this is %s)" % torch.__version__)
    if t["precision"] == "fp16-mixed" and device.type != "cuda":
        raise Refused("fp16-mixed needs CUDA (GradScaler and fp16 autocast are CUDA features)")
    if a.batch == "max" and device.type != "cuda":
        raise Refused("--batch max finds the largest batch by out-of-memory trials on a GPU; "
                      "on the CPU give --batch N")
    data = Data(a.data, spec["model"]["vocab_size"], spec["model"]["context"],
                seed ^ 0xD1B54A32D192ED03)
    if a.batch == "max":
        mb = find_max_batch(spec, device, a.compile, seed, data)
        result["max_batch"] = mb
        if mb["max"] == 0:
            result["batch"] = 1
            raise torch.cuda.OutOfMemoryError("batch 1 does not fit (batch finder)") \
                if hasattr(torch.cuda, "OutOfMemoryError") else RuntimeError(
                    "CUDA out of memory: batch 1 does not fit (batch finder)")
        batch = mb["max"]
        data.rng = np.random.default_rng(seed ^ 0xD1B54A32D192ED03)
    else:
        batch = int(a.batch) if a.batch else t["batch_size"]
    T, k = spec["model"]["context"], t["grad_accum"]
    result.update(batch=batch, grad_accum=k, context=T, tokens_per_step=batch * T * k)
    flops = step_flops(spec, batch)
    result["flops_per_step"] = flops
    result["sdpa_flash"] = sdpa_flash_eligible(spec, device)
    if device.type == "cuda":
        if a.compile:
            torch._dynamo.reset()
        free_cuda()
        torch.cuda.reset_peak_memory_stats(device)
    tr = Trainer(spec, device, batch, a.compile, seed)
    result["n_params"] = tr.n_params
    result["impl"] = tr.impl
    total = a.steps if a.steps > 0 else (2 ** 31 - 1 if a.minutes > 0 else 200)
    limit_s = a.minutes * 60.0
    curve, times = [], []
    result["curve"] = curve
    t_train = time.perf_counter()
    step = 0
    while step < total:
        s = step + 1
        batches = [data.sample(batch) for _ in range(k)]
        sync(device)
        ts = time.perf_counter()
        loss = tr.step(learning_rate(t["optimizer"], s, total), batches)
        sync(device)
        secs = time.perf_counter() - ts
        times.append(secs)
        step = s
        curve.append([s, loss, round(time.perf_counter() - t_train, 4)])
        if not math.isfinite(loss) and tr.scaler is None:
            raise FloatingPointError("loss is %s at step %d" % (loss, s))
        if limit_s > 0:
            elapsed = time.perf_counter() - t_train
            if a.steps <= 0 and len(times) == 5:  # tgc: fix the schedule from steps 2..5
                warm = sum(times[1:5]) / 4.0
                total = s + int(max(0.0, limit_s - elapsed) / warm) if warm > 0 else s
            # Like tgc's --time-limit: at least 5 steps (the first carries the warm-up:
            # kernel loading, cuBLAS/cuDNN heuristics), then stop before the budget runs out.
            if len(times) >= 5 and elapsed + times[-1] > limit_s:
                break
    result["steps"] = step
    timed = times[2:] if len(times) > 2 else times
    ms = statistics.median(timed) * 1e3
    result["ms_per_step"] = ms
    result["tokens_per_s"] = batch * T * k / (ms / 1e3) if ms > 0 else None
    pk = peak_tflops(device, t["precision"], a.peak_tflops)
    result["mfu"] = flops / (ms / 1e3) / (pk * 1e12) if pk and ms > 0 else None
    if device.type == "cuda":
        result.update(peak_forward_bytes=tr.phase["forward"],
                      peak_backward_bytes=tr.phase["backward"],
                      peak_optimizer_bytes=tr.phase["optimizer"],
                      peak_allocated_bytes=max(tr.phase.values()))
    if tr.scaler is not None:
        result.update(loss_scale=tr.scaler.get_scale(), skipped_steps=tr.skipped)
    evb = {"cap": a.eval_batches}
    for name, split in (("val", data.val), ("test", data.test)):
        if split is None:
            continue
        loss, used = tr.evaluate(data, split, a.eval_batches)
        evb[name] = used
        evb[name + "_batch"] = data.eval_batch(split, batch)
        if used:
            result[name + "_loss"] = loss
            result[name + "_ppl"] = math.exp(loss) if loss < 700 else float("inf")
    result["eval_batches"] = evb
    if device.type == "cuda":
        result["used_bytes"] = torch.cuda.max_memory_reserved(device)
    result["wall_s"] = time.perf_counter() - t0


def write_atomic(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".torch_train.", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, allow_nan=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def finite_or_none(x):
    """JSON has no NaN/Infinity: non-finite floats become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite_or_none(v) for v in x]
    return x


def summary(r):
    if r["status"] not in ("ok",):
        return "pytorch %s: %s (batch %s): %s" % (r.get("config"), r["status"], r.get("batch"),
                                                  r.get("reason"))

    def f(key, fmt):
        v = r.get(key)
        return fmt % v if isinstance(v, (int, float)) else "-"
    mem = r.get("used_bytes")
    return ("pytorch %s: %s batch %s x %s (x%s accum), %s steps, %s ms/step, %s tok/s, "
            "val ppl %s, test ppl %s, peak reserved %s"
            % (r.get("config"), r["status"], r.get("batch"), r.get("context"),
               r.get("grad_accum"), r.get("steps"), f("ms_per_step", "%.2f"),
               f("tokens_per_s", "%.0f"), f("val_ppl", "%.3f"), f("test_ppl", "%.3f"),
               "%.1f MiB" % (mem / 2 ** 20) if mem else "-"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spec", required=True, help="tgc spec JSON (partial: defaults filled)")
    p.add_argument("--data", required=True, help="token dir from `tgc data prepare`")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="spec override as for tgc --set (repeatable)")
    p.add_argument("--steps", type=int, default=0,
                   help="optimizer steps (the lr schedule's length); default 200, or as many "
                        "as fit in --minutes")
    p.add_argument("--minutes", type=float, default=0.0, help="wall-clock limit of training")
    p.add_argument("--eval-batches", type=int, default=0,
                   help="cap of the final val/test evals in batches (0: whole splits)")
    p.add_argument("--device", choices=("cuda", "cpu"),
                   default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", help="micro-batch: N, or max (largest that fits, by trial)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--out", help="write the result JSON object here (atomically)")
    p.add_argument("--seed", type=int, help="overrides training.seed (init and data order)")
    p.add_argument("--config", help='the "config" field (default: the spec name)')
    p.add_argument("--peak-tflops", type=float, default=0.0,
                   help="device peak TFLOP/s for mfu (default: a table of known GPUs)")
    a = p.parse_args(argv)

    result = {"config": a.config, "system": "pytorch", "status": "error", "reason": None,
              "batch": None, "tokens_per_step": None, "steps": 0, "ms_per_step": None,
              "tokens_per_s": None, "mfu": None, "planned_bytes": None, "used_bytes": None,
              "peak_forward_bytes": None, "peak_backward_bytes": None,
              "peak_optimizer_bytes": None, "val_loss": None, "val_ppl": None,
              "test_loss": None, "test_ppl": None, "wall_s": None, "curve": [],
              "max_batch": None, "device": a.device, "torch": torch.__version__,
              "compile": a.compile,
              "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if not a.config:
        result["config"] = os.path.splitext(os.path.basename(a.spec))[0]
    code = 1
    t0 = time.perf_counter()
    try:
        try:
            with open(a.spec) as f:
                text = f.read()
        except OSError as e:
            raise Refused("%s: cannot read file: %s" % (a.spec, e.strerror))
        try:
            user = json.loads(text)
        except ValueError as e:
            raise Refused("%s: %s" % (a.spec, e))
        try:
            if not isinstance(user, dict):
                raise SpecError("(root): expected an object")
            for assignment in a.set:
                apply_set(user, assignment)
            spec = fill_spec(user)
            check_spec(spec)
        except SpecError as e:
            raise Refused(str(e) if str(e).startswith("--set ") else "%s: %s" % (a.spec, e))
        if a.batch not in (None, "max") and not (a.batch.isdigit() and int(a.batch) > 0):
            raise Refused("--batch: expected a positive integer or max, got %r" % a.batch)
        if a.eval_batches < 0 or a.steps < 0 or a.minutes < 0:
            raise Refused("--steps, --minutes and --eval-batches must be >= 0")
        t = spec["training"]
        result["config"] = a.config or spec["name"]
        result.update(vocab_size=spec["model"]["vocab_size"], precision=t["precision"], attention_kernel=t["attention"]["kernel"],
                      window=t["attention"]["window"], checkpointing=t["checkpointing"],
                      batch_request="max" if a.batch == "max" else
                      int(a.batch) if a.batch else None)
        run(a, spec, result)
        result["status"], code = "ok", 0
    except Refused as e:
        result["status"], result["reason"], code = "refused", str(e), 2
    except Exception as e:  # noqa: BLE001 -- every failure becomes a result line
        if is_oom(e):
            result["status"], code = "oom", 0
            result["reason"] = "out of memory at batch %s: %s" % (
                result.get("batch"), str(e).split("\n")[0][:300])
        else:
            result["status"], code = "error", 1
            result["reason"] = "%s: %s" % (type(e).__name__, e)
    if result.get("wall_s") is None:
        result["wall_s"] = time.perf_counter() - t0
    result = finite_or_none(result)
    if a.out:
        write_atomic(a.out, result)
    print(summary(result))
    if code:
        print("torch_train.py: %s: %s" % (result["status"], result["reason"]), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
