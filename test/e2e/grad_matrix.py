#!/usr/bin/env python3
"""Gradient check across combinations of the features that change where and how a gradient
is computed (test/e2e/grad-matrix.test).

    grad_matrix.py --tg-src DIR [--only NAME ...] [--keep DIR]
    grad_matrix.py --tg-src DIR --target cuda --compile-only --keep DIR   (here: no GPU needed)
    grad_matrix.py --tg-src DIR --libs DIR --device cuda                  (on the GPU machine)

Each row compiles a small spec (`tgc compile --emit=lib`, target cpu) with one combination of
    checkpointing (none, gelu, selective, layer-attn, layer, budget:<bytes>),
    training.gradients (auto: in the arena where it can live there; persistent),
    training.bias_rows (the ones column on the layer norms, tg-bias-rows),
    precision, attention kernel and window, grad_accum, dropout, the loss's chunking, tied
    or untied embeddings, ignore_index, layers without biases, the Llama family,
and runs test/e2e/torch_reference.py on it: the loss, every gradient and every AdamW update
against PyTorch in float64 (`--steps 2` rows, which dropout needs: two optimizer steps of
grad_accum micro-steps on fresh batches).
A budget row asks for the midpoint between the smallest arena any checkpointing achieves
(named by the refusal of a 1-byte budget) and the arena without checkpointing, so the budget
search has to mix policies.

Why: each feature was checked against PyTorch alone, but they change the same tensors'
layouts and slots. tg-bias-rows with persistent gradient slots lowered its weight gradient as
a plain GEMM over the layer norm's pitched rows (wrong gradients, 2026-12-02); no single-
feature check crossed the two. A row that fails prints its worst tensors.

Prints one line per row ending in PASS or FAIL, then `grad-matrix: N rows, M failed`; exits 1
when M > 0 (or a compile fails)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# The tiny GPT-2 of grad-check.test (13): 2 layers, d 64, 2 heads, vocab 128, context 32.
GPT = ["model.n_layers=2", "model.context=32", "model.d_model=64", "model.n_heads=2",
       "model.vocab_size=128", "training.batch_size=2"]
# The Llama family (RMSNorm, RoPE, SwiGLU, grouped-query attention, no biases).
LLAMA = ["model.n_layers=2", "model.context=16", "model.d_model=64", "model.n_heads=4",
         "model.n_kv_heads=2", "model.d_ff=128", "model.vocab_size=128",
         "training.batch_size=2"]

# (name, spec, sets, torch_reference args). "BUDGET" in a set is replaced by the midpoint
# budget of that row's other settings.
ROWS = [
    ("gpt-f32-flash-none-arena", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on"], []),
    ("gpt-f32-flash-none-persistent", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.gradients=persistent"], []),
    ("gpt-f32-naive-gelu-arena", "tiny.json",
     GPT + ["training.attention.kernel=naive", "training.bias_rows=on",
            "training.checkpointing=gelu"], []),
    ("gpt-f32-flash-selective-persistent-dropout-2steps", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.checkpointing=selective", "training.gradients=persistent",
            "model.dropout=0.1"], ["--steps", "2"]),
    ("gpt-f32-naive-layer-attn-arena", "tiny.json",
     GPT + ["training.attention.kernel=naive", "training.bias_rows=on",
            "training.checkpointing=layer-attn"], []),
    ("gpt-f32-flash-layer-persistent", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.checkpointing=layer", "training.gradients=persistent"], []),
    ("gpt-f32-flash-budget", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.checkpointing=BUDGET"], []),
    ("gpt-f32-flash-budget-dropout-2steps", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.checkpointing=BUDGET", "model.dropout=0.1"], ["--steps", "2"]),
    ("gpt-f32-flash-window-selective", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.attention.window=16",
            "training.bias_rows=on", "training.checkpointing=selective"], []),
    ("gpt-f32-flash-selective-accum2-2steps", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.checkpointing=selective", "training.grad_accum=2"], ["--steps", "2"]),
    ("gpt-bf16-flash-gelu-arena", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.precision=bf16-mixed", "training.checkpointing=gelu"], []),
    ("gpt-bf16-flash-budget", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.precision=bf16-mixed", "training.checkpointing=BUDGET"], []),
    ("gpt-bf16-flash-layer-persistent", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.precision=bf16-mixed", "training.checkpointing=layer",
            "training.gradients=persistent"], []),
    ("gpt-fp16-flash-selective-persistent", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.precision=fp16-mixed", "training.checkpointing=selective",
            "training.gradients=persistent"], []),
    # The fused loss in 8 chunks (loss_chunk_bytes 4096: 8 rows of 128 f32 logits each; the
    # chunks' dw sum into the tied table) under selective; untied embeddings (lm_head its
    # own [V, D] weight, fused like the tied one) under selective; ignore_index with ~30% of
    # the targets ignored, under a budget with persistent slots; no biases at all
    # (tg-bias-rows finds nothing) under layer.
    ("gpt-f32-chunks-selective", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.loss_chunk_bytes=4096", "training.checkpointing=selective"], []),
    ("gpt-f32-untied-selective-persistent", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "model.tie_embeddings=false", "training.checkpointing=selective",
            "training.gradients=persistent"], []),
    ("gpt-f32-ignore-budget-2steps", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "training.ignore_index=5", "training.checkpointing=BUDGET"],
     ["--steps", "2", "--ignore-frac", "0.3"]),
    ("gpt-f32-nobias-layer-persistent", "tiny.json",
     GPT + ["training.attention.kernel=flash", "training.bias_rows=on",
            "model.attention_bias=false", "model.mlp_bias=false",
            "training.checkpointing=layer", "training.gradients=persistent"], []),
    ("llama-f32-selective-persistent", "tiny-llama.json",
     LLAMA + ["training.checkpointing=selective", "training.gradients=persistent"], []),
    ("llama-f32-layer-arena", "tiny-llama.json",
     LLAMA + ["training.checkpointing=layer"], []),
    ("llama-f32-budget-2steps", "tiny-llama.json",
     LLAMA + ["training.checkpointing=BUDGET"], ["--steps", "2"]),
]

SMALLEST = re.compile(r"the smallest planned arena is (\d+) bytes")
ARENA = re.compile(r"^\s*arena\s+(\d+)", re.M)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace")


def sets_args(sets):
    return [x for s in sets for x in ("--set", s)]


def midpoint_budget(spec, sets, target):
    """(budget bytes, note) between the smallest achievable arena and none's arena."""
    base = [s for s in sets if not s.startswith("training.checkpointing=")]
    r = run(["tgc", "plan", spec, "--target", target, *sets_args(base),
             "--set", "training.checkpointing=none"])
    m = ARENA.search(r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"tgc plan (checkpointing none) failed: {r.stderr[-400:]}")
    none = int(m[1])
    r = run(["tgc", "plan", spec, "--target", target, *sets_args(base),
             "--set", "training.checkpointing=budget:1"])
    m = SMALLEST.search(r.stderr)
    if r.returncode == 0 or not m:
        raise RuntimeError(f"a 1-byte budget was not refused with the smallest arena: "
                           f"{r.stderr[-400:]}")
    smallest = int(m[1])
    return (smallest + none) // 2, f"budget {(smallest + none) // 2} in [{smallest}, {none}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tg-src", required=True, help="the tgc source tree (examples/, test/)")
    ap.add_argument("--only", nargs="*", help="run only these rows")
    ap.add_argument("--keep", help="keep the compiled libraries in this folder")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda"],
                    help="tgc compile --target (cuda: run the libraries with --device cuda "
                         "on a GPU machine)")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile the rows' libraries into --keep, run nothing")
    ap.add_argument("--libs", help="run the libraries already in this folder (NAME.so)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="torch_reference.py --device (the float64 reference's device)")
    a = ap.parse_args()
    if a.compile_only and not a.keep:
        ap.error("--compile-only needs --keep DIR")
    ref = os.path.join(a.tg_src, "test", "e2e", "torch_reference.py")
    tmp = a.libs or a.keep or tempfile.mkdtemp(prefix="grad-matrix-")
    os.makedirs(tmp, exist_ok=True)
    rows = [r for r in ROWS if not a.only or r[0] in a.only]
    failed = 0
    for seed, (name, spec, sets, refargs) in enumerate(rows, start=11):
        spec = os.path.join(a.tg_src, "examples", spec)
        lib = os.path.join(tmp, name + ".so")
        note = ""
        if not a.libs:
            try:
                if any("BUDGET" in s for s in sets):
                    budget, note = midpoint_budget(spec, sets, a.target)
                    sets = [s.replace("BUDGET", f"budget:{budget}") for s in sets]
                r = run(["tgc", "compile", spec, *sets_args(sets), "--target", a.target,
                         "--emit=lib", "-o", lib])
                if r.returncode != 0:
                    raise RuntimeError(f"tgc compile failed: {r.stderr[-400:]}")
            except RuntimeError as e:
                failed += 1
                print(f"{name:48s} FAIL ({e})")
                continue
            if a.compile_only:
                print(f"{name:48s} compiled {lib}{' (' + note + ')' if note else ''}")
                continue
        elif not os.path.exists(lib):
            failed += 1
            print(f"{name:48s} FAIL (no {lib})")
            continue
        r = run([sys.executable, ref, "--lib", lib, "--seed", str(seed), "--device", a.device,
                 *refargs])
        verdict = [l for l in r.stdout.splitlines()
                   if l.startswith(("grad-check:", "steps-check:"))]
        ok = r.returncode == 0 and verdict and all(l.rstrip().endswith("PASS")
                                                   for l in verdict if "PASS" in l or "FAIL" in l)
        last = verdict[-1] if verdict else (r.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"{name:48s} {'PASS' if ok else 'FAIL'}  {note + '; ' if note else ''}{last}")
        if not ok:
            failed += 1
            for l in r.stdout.splitlines():
                if "worst" in l or "FAIL" in l:
                    print(f"    {l}")
    if a.compile_only:
        print(f"grad-matrix: {len(rows)} rows compiled for {a.target}, {failed} failed")
        return 1 if failed else 0
    print(f"grad-matrix: {len(rows)} rows, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
