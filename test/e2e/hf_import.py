"""Checks of test/e2e/import-hf.test (run with the .venv-hf python: transformers, torch).

  hf_import.py make gpt2|llama DIR [--dtype f32|bf16|f16] [--shard BYTES] [--zero-biases]
                 KEY=VALUE...
      A GPT2LMHeadModel or LlamaForCausalLM with the config fields KEY=VALUE (JSON values;
      dropout 0), every parameter set to random values (norm weights near 1, biases
      non-zero unless --zero-biases, seed 0), saved with save_pretrained (safetensors; in
      the dtype given; in shards of at most BYTES with model.safetensors.index.json when
      --shard). No network.
  hf_import.py step1 DIR DATA LOG.jsonl --seed S --batch B --context T [--tol X]
      The batch the training driver draws first (runtime/driver/Driver.cpp sampleBatch: a
      std::mt19937_64 seeded with S ^ 0xD1B54A32D192ED03, B windows of T + 1 tokens of
      DATA/train.npy starting at rng() % (len - T)), fed to DIR loaded in float32 with
      transformers; the mean token cross-entropy is compared with the {"step": 1} loss of
      LOG to X relative (default 1e-5). B is the global batch (ranks x batch_size).
  hf_import.py edit-config SRC DST KEY=VALUE...
      A copy of the model directory SRC with config.json fields changed.
  hf_import.py edit-tensor SRC DST NAME drop|D0,D1,...
      A copy of SRC (one model.safetensors) without tensor NAME, or with NAME (replaced or
      added) a float32 tensor of zeros of the shape given.
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.numpy import load_file, save_file
from transformers import (AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM)

MASK = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64 (the C++ standard's parameters)."""

    def __init__(self, seed):
        self.mt = [0] * 312
        self.mt[0] = seed & MASK
        for i in range(1, 312):
            x = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (x ^ (x >> 62)) + i) & MASK
        self.i = 312

    def __call__(self):
        if self.i >= 312:
            mt = self.mt
            for k in range(312):
                x = (mt[k] & 0xFFFFFFFF80000000) | (mt[(k + 1) % 312] & 0x7FFFFFFF)
                xa = x >> 1
                if x & 1:
                    xa ^= 0xB5026F5AA96619E9
                mt[k] = mt[(k + 156) % 312] ^ xa
            self.i = 0
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK


def fail(msg):
    print("hf_import.py: FAIL: " + msg)
    sys.exit(1)


def fields(args):
    out = {}
    for a in args:
        k, _, v = a.partition("=")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def make(arch, d, args):
    dtype, shard, zero_biases = torch.float32, None, False
    rest = []
    i = 0
    while i < len(args):
        if args[i] == "--dtype":
            dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[args[i + 1]]
            i += 2
        elif args[i] == "--zero-biases":
            zero_biases = True
            i += 1
        elif args[i] == "--shard":
            shard = int(args[i + 1])
            i += 2
        else:
            rest.append(args[i])
            i += 1
    cfg = fields(rest)
    torch.manual_seed(0)
    if arch == "gpt2":
        cfg.update(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = GPT2LMHeadModel(GPT2Config(**cfg))
    else:
        cfg.update(attention_dropout=0.0)
        model = LlamaForCausalLM(LlamaConfig(**cfg))
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g)
            if name.endswith("bias"):
                p.copy_(0.0 * r if zero_biases else 0.1 * r)
            elif p.dim() == 1:  # norm weights
                p.copy_(1.0 + 0.2 * r)
            else:
                p.copy_(0.15 * r)
    model = model.to(dtype)
    kw = {"safe_serialization": True}
    if shard:
        kw["max_shard_size"] = shard
    model.save_pretrained(d, **kw)
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    print("saved %s (%s, %s): %s" % (type(model).__name__, str(dtype).replace("torch.", ""),
                                    "%d parameters" % sum(p.numel() for p in model.parameters()),
                                    " ".join(files)))


def step1(d, data, log, args):
    opts = dict(zip(args[0::2], args[1::2]))
    seed, B, T = int(opts["--seed"]), int(opts["--batch"]), int(opts["--context"])
    tol = float(opts.get("--tol", "1e-5"))
    tokens = np.load(os.path.join(data, "train.npy")).astype(np.int64)
    rng = MT19937_64(seed ^ 0xD1B54A32D192ED03)
    starts = len(tokens) - T
    rows = []
    for _ in range(B):
        s = rng() % starts
        rows.append(tokens[s:s + T + 1])
    w = torch.tensor(np.stack(rows))
    model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        logits = model(w[:, :T]).logits.float()
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).double(), w[:, 1:].reshape(-1)).item()
    want = None
    with open(log) as f:
        for line in f:
            r = json.loads(line)
            if r.get("step") == 1 and "loss" in r and "eval" not in r:
                want = r["loss"]
    if want is None:
        fail("no step 1 in " + log)
    rel = abs(loss - want) / abs(want)
    print("step 1: transformers loss %.7f, tgc loss %.7f (%s, %d x %d tokens); relative "
          "difference %.2e" % (loss, want, type(model).__name__, B, T, rel))
    if not rel <= tol:
        fail("the losses differ by more than %g relative" % tol)


def edit_config(src, dst, args):
    shutil.copytree(src, dst)
    path = os.path.join(dst, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.update(fields(args))
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


def edit_tensor(src, dst, name, what):
    shutil.copytree(src, dst)
    path = os.path.join(dst, "model.safetensors")
    tensors = load_file(path)
    if what == "drop":
        if name not in tensors:
            fail("%s has no tensor %s" % (path, name))
        del tensors[name]
    else:
        tensors[name] = np.zeros([int(d) for d in what.split(",")], dtype=np.float32)
    save_file(tensors, path, metadata={"format": "pt"})


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "make" and len(sys.argv) >= 4 and sys.argv[2] in ("gpt2", "llama"):
        make(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "step1" and len(sys.argv) >= 5:
        step1(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif cmd == "edit-config" and len(sys.argv) >= 4:
        edit_config(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "edit-tensor" and len(sys.argv) == 6:
        edit_tensor(*sys.argv[2:])
    else:
        print(__doc__)
        sys.exit(2)
