"""Checks of test/e2e/export-hf.test and export-hf-llama.test (run with the .venv-hf
python: transformers, torch).

  hf_export.py loss HFDIR DATA CKPT LOG.jsonl [--tol T]
      Loads HFDIR with transformers.AutoModelForCausalLM.from_pretrained (GPT-2 or Llama,
      float32) on the CPU and computes
      the loss over the windows the training driver evaluates at the end
      (runtime/driver/Driver.cpp evaluate(): window i is tokens [i*T, i*T+T] of the split,
      input its first T, targets its last T; every window, in ceil(windows / B) batches,
      the last one padded with ignored targets; the mean over all targets), for val and
      test, and
      compares each with the driver's {"eval": SPLIT, "final": true} line of LOG to T
      relative (default 1e-3). T and B come from the spec stored in CKPT's metadata.
  hf_export.py variants CKPT OUTDIR
      From a tied checkpoint with biases writes OUTDIR/untied.safetensors (lm_head.weight =
      a copy of wte, [V, D] as tgc and HF store it) and OUTDIR/nobias.safetensors (no attention
      or MLP biases), both without the embedded spec (and its tensor checksums).
  hf_export.py same REFDIR HFDIR [--zero-biases]
      The two exported models give the same logits on random tokens (REFDIR's attention
      and MLP biases set to zero first with --zero-biases).
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file
from transformers import AutoModelForCausalLM

from eval_windows import final as final_evals  # the final {"eval": split} records of a --log


def fail(msg):
    print("hf_export.py: FAIL: " + msg)
    sys.exit(1)


def load(d):
    model = AutoModelForCausalLM.from_pretrained(d)
    model.eval()
    return model


def split_loss(model, tokens, T, B):
    windows = (len(tokens) - 1) // T if len(tokens) > 0 else 0
    batches = (windows + B - 1) // B
    total, count = 0.0, 0
    with torch.no_grad():
        for k in range(batches):
            rows = [tokens[i * T:i * T + T + 1] for i in range(k * B, min(k * B + B, windows))]
            w = torch.tensor(np.stack(rows).astype(np.int64))
            logits = model(w[:, :T]).logits
            total += torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).double(), w[:, 1:].reshape(-1),
                reduction="sum").item()
            count += w[:, 1:].numel()
    return (total / count if count else float("nan")), batches


def check_loss(hfdir, data, ckpt, log, tol=1e-3):
    with safe_open(ckpt, framework="np") as f:
        spec = json.loads(f.metadata()["spec"])
    T, B = spec["model"]["context"], spec["training"]["batch_size"]
    final = final_evals(log)
    model = load(hfdir)
    checked = 0
    for split in ("val", "test"):
        path = os.path.join(data, split + ".npy")
        if split not in final or not os.path.exists(path):
            continue
        tokens = np.load(path)
        loss, batches = split_loss(model, tokens, T, B)
        want = final[split]["loss"]
        print("%s: transformers loss %.6f over %d batches; tgc logged %.6f over %d batches; "
              "relative difference %.2e" % (split, loss, batches, want, final[split]["batches"],
                                            abs(loss - want) / abs(want)))
        if batches != final[split]["batches"]:
            fail("%s: %d batches here, %d in the log" % (split, batches, final[split]["batches"]))
        if not abs(loss - want) <= tol * abs(want):
            fail("%s: loss %.6f differs from the logged %.6f by more than %g relative"
                 % (split, loss, want, tol))
        checked += 1
    if "val" not in final or checked == 0:
        fail("no final val eval in " + log)


def variants(ckpt, outdir):
    with safe_open(ckpt, framework="np") as f:
        params = {k: f.get_tensor(k) for k in f.keys() if not k.startswith("optim.")}
        # Without the spec, and without the tensor checksums (the files hold other tensors).
        meta = {k: v for k, v in f.metadata().items()
                if k not in ("spec", "checksums") and not k.startswith("crc32.")}
    untied = dict(params)
    untied["lm_head.weight"] = params["wte"].copy()  # [V, D], wte's layout
    save_file(untied, os.path.join(outdir, "untied.safetensors"), metadata=meta)
    nobias = {k: v for k, v in params.items()
              if not (k.endswith("bias") and (".attn." in k or ".mlp." in k))}
    if len(nobias) == len(params):
        fail("the checkpoint has no attention/MLP biases to drop")
    save_file(nobias, os.path.join(outdir, "nobias.safetensors"), metadata=meta)


def same(refdir, hfdir, zero_biases):
    ref, got = load(refdir), load(hfdir)
    if zero_biases:
        with torch.no_grad():
            for name, p in ref.named_parameters():
                if name.endswith("bias") and (".attn." in name or ".mlp." in name):
                    p.zero_()
    if ref.config.tie_word_embeddings == got.config.tie_word_embeddings and not zero_biases:
        fail("expected an untied model against a tied one")
    g = torch.Generator().manual_seed(0)
    positions = getattr(ref.config, "n_positions", None) or ref.config.max_position_embeddings
    x = torch.randint(0, ref.config.vocab_size, (2, positions), generator=g)
    with torch.no_grad():
        a, b = ref(x).logits, got(x).logits
    err = (a - b).abs().max().item()
    print("max |logits difference| = %g (tied %s vs %s)"
          % (err, ref.config.tie_word_embeddings, got.config.tie_word_embeddings))
    if not err <= 1e-5:
        fail("logits differ by %g" % err)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "loss" and len(sys.argv) == 6:
        check_loss(*sys.argv[2:])
    elif cmd == "loss" and len(sys.argv) == 8 and sys.argv[6] == "--tol":
        check_loss(*sys.argv[2:6], tol=float(sys.argv[7]))
    elif cmd == "variants" and len(sys.argv) == 4:
        variants(*sys.argv[2:])
    elif cmd == "same" and len(sys.argv) in (4, 5):
        same(sys.argv[2], sys.argv[3], sys.argv[4:] == ["--zero-biases"])
    else:
        print(__doc__)
        sys.exit(2)
