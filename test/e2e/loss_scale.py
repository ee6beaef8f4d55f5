#!/usr/bin/env python3
"""Dynamic loss scaling of fp16-mixed models under a forced fp16 overflow (test/e2e/loss-scale.test).

    loss_scale.py lib MODEL.so [--scale S] [--steps N] [--growth-interval G]
        Through the shared library (C ABI: runtime/tglib.h): at loss scale S (default 2^40)
        the f16 gradients overflow; the optimizer step must be skipped (every parameter
        bit-unchanged, tglib_last_grad_norm not finite, gradients zeroed). Then PyTorch
        GradScaler's rule (LossScaler in runtime/driver, re-implemented here: x0.5 and a skip
        on overflow, x2 after G clean steps in a row) runs N steps on one fixed batch: the
        scale must halve down to a value where the steps succeed, every skipped step must
        leave the parameters bit-unchanged, every clean one must change them, the loss must
        stay finite and fall, and the scale must grow again after G clean steps.
    loss_scale.py data DIR --vocab V
        A tiny synthetic token dataset for the training executable: DIR/{train,val}.npy
        (uint16, a noisy periodic sequence that a small model learns quickly) + meta.json.
    loss_scale.py patch-ckpt IN OUT --scale S
        Copies the checkpoint IN (safetensors from the executable's --save) to OUT with
        __metadata__.loss_scale = S, a growth counter and skipped_steps of 0: the executable
        resumed from OUT starts at scale S (tgc does not expose the initial loss scale).
    loss_scale.py check-skipped BEFORE AFTER LOG --scale S --skips K
        The run resumed from BEFORE (scale S) that stopped after K steps, saving AFTER: K
        records in LOG, all skipped (grad_norm not finite, skipped_steps 1..K, loss_scale
        S, S/2, ...), and AFTER holds exactly BEFORE's parameters and AdamW moments, with
        loss_scale S/2^K and skipped_steps K.
    loss_scale.py check-recovery BEFORE AFTER LOG --scale S --skipped K
        The rest of that run (resumed from BEFORE at scale S with K skips so far): the
        scale keeps halving while steps are skipped, then steps succeed (finite grad norm,
        the scale stops halving), the loss is finite throughout and falls, and AFTER's
        parameters differ from BEFORE's.

Exit status 1 with "loss-scale: FAIL: ..." on a failed check; "loss-scale: PASS" otherwise.
"""
import argparse
import ctypes
import json
import math
import os
import random
import struct
import sys

# The C structs of runtime/tgrt.h: the one ctypes mirror, tgrt_abi.py (no torch needed).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tgrt_abi import F32P, I32P, TGRT_PRECISION_FP16_MIXED, TgrtModel, check_model  # noqa: E402


def fail(msg):
    print("loss-scale: FAIL: " + msg)
    sys.exit(1)


class LossScaler:
    """runtime/driver LossScaler (PyTorch GradScaler: growth 2, backoff 0.5)."""

    def __init__(self, scale, growth_interval):
        self.scale, self.interval, self.counter, self.skipped = scale, growth_interval, 0, 0

    def update(self, finite):
        if not finite:
            self.scale *= 0.5
            self.skipped += 1
            self.counter = 0
            return
        self.counter += 1
        if self.counter == self.interval:
            grown = self.scale * 2.0
            if math.isfinite(float(ctypes.c_float(grown).value)):
                self.scale = grown
            self.counter = 0


class Lib:
    def __init__(self, path):
        d = self.dll = ctypes.CDLL(os.path.abspath(path))
        d.tglib_model.restype = ctypes.POINTER(TgrtModel)
        d.tglib_create.restype = ctypes.c_void_p
        d.tglib_create.argtypes = [ctypes.c_int64]
        d.tglib_destroy.argtypes = [ctypes.c_void_p]
        for fn in ("tglib_set_param", "tglib_get_param", "tglib_get_grad"):
            getattr(d, fn).restype = ctypes.c_int32
            getattr(d, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, F32P]
        d.tglib_micro_step.restype = ctypes.c_float
        d.tglib_micro_step.argtypes = [ctypes.c_void_p, I32P, I32P]
        d.tglib_optimizer_step.restype = None
        d.tglib_optimizer_step.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_float]
        d.tglib_last_grad_norm.restype = ctypes.c_float
        d.tglib_last_grad_norm.argtypes = [ctypes.c_void_p]
        d.tglib_set_loss_scale.restype = None
        d.tglib_set_loss_scale.argtypes = [ctypes.c_void_p, ctypes.c_float]
        self.model = check_model(d)  # the tgrt_model, checked against the mirror
        m = self.model
        self.params = [(m.params[i].name, int(m.params[i].numel)) for i in range(m.n_params)]

    def read(self, fn, ctx):
        """name -> the raw float32 bytes of every parameter (fn: tglib_get_param / _grad)."""
        out = {}
        for name, n in self.params:
            buf = (ctypes.c_float * n)()
            if fn(ctx, name, buf) != 0:
                fail(f"{fn.__name__}({name.decode()}) failed")
            out[name.decode()] = bytes(buf)
        return out


def floats(raw):
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def all_finite(tensors):
    return all(math.isfinite(x) for raw in tensors.values() for x in floats(raw))


def n_changed(a, b):
    """Parameters (by name) whose bytes differ."""
    return sum(a[n] != b[n] for n in a)


def check_lib(path, scale0, steps, interval):
    lib = Lib(path)
    m = lib.model
    if m.precision != TGRT_PRECISION_FP16_MIXED or not m.loss_scale_init > 0:
        fail(f"{path}: precision {m.precision}, loss_scale_init {m.loss_scale_init}: "
             "expected an fp16-mixed model with loss scaling")
    print(f"loss-scale: {path}: fp16-mixed, model loss_scale_init {m.loss_scale_init:g}, growth "
          f"interval {m.loss_scale_growth_interval}; forcing scale {scale0:g}, growth interval "
          f"{interval} here")
    d = lib.dll
    ctx = d.tglib_create(1)
    if not ctx:
        fail("tglib_create returned NULL")
    B, T, V = m.batch_size, m.context, m.vocab_size
    rng = random.Random(0)
    # one fixed batch of a learnable sequence (t -> t+1 mod V): the loss must fall on it
    start = [rng.randrange(V) for _ in range(B)]
    tk = (ctypes.c_int32 * (B * T))(*[(start[b] + t) % V for b in range(B) for t in range(T)])
    tg = (ctypes.c_int32 * (B * T))(*[(start[b] + t + 1) % V for b in range(B) for t in range(T)])

    # 1. one step at the forced scale: the f16 gradients overflow, AdamW is skipped
    before = lib.read(d.tglib_get_param, ctx)
    d.tglib_set_loss_scale(ctx, scale0)
    loss = d.tglib_micro_step(ctx, tk, tg)
    grads = lib.read(d.tglib_get_grad, ctx)
    n_inf = sum(not math.isfinite(x) for raw in grads.values() for x in floats(raw))
    n_all = sum(n for _, n in lib.params)
    d.tglib_optimizer_step(ctx, 1, m.lr)
    norm = d.tglib_last_grad_norm(ctx)
    after = lib.read(d.tglib_get_param, ctx)
    # Persistent slots are zeroed by the (skipped) step; slots in the arena are left as they
    # are and zeroed by the next micro-step before its first write (section 2 then trains
    # on: a stale slot would show there).
    zeroed = bool(m.grads_in_arena) or all(
        not any(floats(raw)) for raw in lib.read(d.tglib_get_grad, ctx).values())
    print(f"loss-scale: scale {scale0:g}: loss {loss:.6f}, {n_inf}/{n_all} gradient elements not "
          f"finite, grad norm {norm}, parameters changed: {n_changed(before, after)}, "
          f"gradients zeroed: {zeroed}")
    if not math.isfinite(loss):
        fail("the loss (forward, unscaled) is not finite at the forced scale")
    if n_inf == 0:
        fail(f"no gradient overflowed at scale {scale0:g}; the test needs a larger --scale")
    if math.isfinite(norm):
        fail(f"tglib_last_grad_norm = {norm} is finite although gradients overflowed")
    if after != before:
        fail(f"the skipped step changed {n_changed(before, after)} parameters (must be bit-unchanged)")
    if not zeroed:
        fail("the skipped step did not zero the gradients")

    # 2. GradScaler's rule from there: halve until the steps succeed, then train
    scaler = LossScaler(scale0, interval)
    scaler.update(False)  # the step above
    params = after
    losses, first_clean, grown = [], None, 0
    step = 1  # AdamW step numbers count the applied steps only (as torch.optim under GradScaler)
    for it in range(2, steps + 1):
        s = scaler.scale
        d.tglib_set_loss_scale(ctx, s)
        loss = d.tglib_micro_step(ctx, tk, tg)
        d.tglib_optimizer_step(ctx, step, m.lr)
        norm = d.tglib_last_grad_norm(ctx)
        new = lib.read(d.tglib_get_param, ctx)
        finite = math.isfinite(norm)
        changed = n_changed(params, new)
        if not math.isfinite(loss):
            fail(f"iteration {it}: loss {loss} at scale {s:g}")
        if not finite and changed:
            fail(f"iteration {it}: skipped step (scale {s:g}) changed {changed} parameters")
        if finite:
            if changed == 0:
                fail(f"iteration {it}: clean step (scale {s:g}, norm {norm:g}) changed no parameter")
            if not all_finite(new):
                fail(f"iteration {it}: a clean step made parameters non-finite")
            if first_clean is None:
                first_clean = (it, s)
            losses.append(loss)
            step += 1
        prev = scaler.scale
        scaler.update(finite)
        grown += scaler.scale > prev
        print(f"loss-scale: iteration {it:2d} scale {s:<14g} loss {loss:.6f} grad norm {norm:<10.4g} "
              f"{'ok' if finite else 'skipped'}; {changed} parameters changed")
        params = new
    d.tglib_destroy(ctx)
    if first_clean is None:
        fail(f"no step succeeded in {steps} iterations (scale now {scaler.scale:g})")
    it0, s0 = first_clean
    if it0 - 1 != round(math.log2(scale0 / s0)):
        fail(f"the first clean step ran at scale {s0:g} after {it0 - 1} halvings of {scale0:g}")
    print(f"loss-scale: {scaler.skipped} skipped steps; first clean step at iteration {it0}, scale "
          f"{s0:g} = 2^{math.log2(s0):g}; {len(losses)} clean steps, loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}; the scale grew {grown} times, now {scaler.scale:g}")
    if len(losses) < 2 * interval:
        fail(f"only {len(losses)} clean steps; run more --steps")
    if not losses[-1] < losses[0] - 0.1:
        fail(f"the loss did not fall over the clean steps ({losses[0]:.4f} -> {losses[-1]:.4f})")
    if grown == 0:
        fail(f"the scale never grew after {interval} clean steps in a row")
    print("loss-scale: PASS")


# ------------------------------------------------------------------------ data --


def write_npy_u16(path, values):
    header = "{'descr': '<u2', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}H", *values))


def make_data(out, vocab):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(0)

    def seq(n):  # t -> t+1 mod vocab, with 5% random tokens
        t, xs = rng.randrange(vocab), []
        for _ in range(n):
            xs.append(rng.randrange(vocab) if rng.random() < 0.05 else t)
            t = (xs[-1] + 1) % vocab
        return xs

    write_npy_u16(os.path.join(out, "train.npy"), seq(8192))
    write_npy_u16(os.path.join(out, "val.npy"), seq(512))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"vocab_size": vocab}, f)
    print(f"loss-scale: wrote {out}/train.npy (8192 tokens), val.npy (512), meta.json")


# ----------------------------------------------------------------- checkpoints --


def read_st(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
    return header, meta, tensors, data


def patch_ckpt(src, dst, scale):
    header, meta, _, data = read_st(src)
    if "loss_scale" not in meta:
        fail(f"{src}: no __metadata__.loss_scale (not an fp16-mixed checkpoint?)")
    if f32(scale) != scale or not math.isfinite(scale) or not scale > 0:
        fail(f"--scale {scale!r} is not a positive float32 value")
    meta["loss_scale"] = repr(float(scale))  # exact (strtof reads it back exactly)
    meta["loss_scale_growth_counter"] = "0"
    meta["skipped_steps"] = "0"  # counted from here
    header["__metadata__"] = meta
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    print(f"loss-scale: {dst}: loss_scale {meta['loss_scale']} (was from {src}), step {meta['step']}")


def log_steps(path):
    with open(path) as f:
        recs = [json.loads(line) for line in f]
    return [r for r in recs if "eval" not in r]


def f32(x):
    """x rounded to float32 (the checkpoint's loss_scale is a float printed with %.9g)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def finite_num(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def check_skipped(before, after, log, scale, k):
    _, mb, tb, _ = read_st(before)
    _, ma, ta, _ = read_st(after)
    recs = log_steps(log)
    if len(recs) != k:
        fail(f"{log}: {len(recs)} step records, expected {k}")
    for i, r in enumerate(recs):
        want = scale * 0.5 ** i
        print(f"loss-scale: step {r['step']}: loss {r['loss']} loss_scale {r['loss_scale']:g} "
              f"grad_norm {r['grad_norm']} skipped_steps {r['skipped_steps']}")
        if r["loss_scale"] != want or r["skipped_steps"] != i + 1 or finite_num(r["grad_norm"]) \
                or not finite_num(r["loss"]):
            fail(f"step {r['step']}: expected a skipped step at scale {want:g} with "
                 f"skipped_steps {i + 1}, a non-finite grad norm and a finite loss")
    if set(tb) != set(ta):
        fail(f"{before} and {after} hold different tensors")
    diff = [n for n in tb if tb[n] != ta[n]]
    if diff:
        fail(f"skipped steps changed {len(diff)} tensors, e.g. {diff[:3]}")
    want = scale * 0.5 ** k
    if f32(float(ma["loss_scale"])) != want or int(ma["skipped_steps"]) != k:
        fail(f"{after}: loss_scale {ma['loss_scale']} skipped_steps {ma['skipped_steps']}, "
             f"expected {want:g} and {k}")
    n_moments = sum(n.startswith("optim.") for n in tb)
    print(f"loss-scale: {k} skipped steps: {len(tb) - n_moments} parameters and {n_moments} AdamW "
          f"moments bit-unchanged; checkpoint loss_scale {ma['loss_scale']} skipped_steps "
          f"{ma['skipped_steps']}")
    print("loss-scale: PASS")


def check_recovery(before, after, log, scale, skipped):
    _, _, tb, _ = read_st(before)
    _, ma, ta, _ = read_st(after)
    recs = log_steps(log)
    s, k, clean = scale, skipped, []
    for r in recs:
        if not finite_num(r["loss"]):
            fail(f"step {r['step']}: loss {r['loss']}")
        ok = finite_num(r["grad_norm"])
        if not clean and r["loss_scale"] != s:
            fail(f"step {r['step']}: loss_scale {r['loss_scale']:g}, expected {s:g} (halving)")
        if not ok:
            k += 1
            if clean:
                print(f"loss-scale: note: step {r['step']} overflowed again at scale {r['loss_scale']:g}")
        if r["skipped_steps"] != k:
            fail(f"step {r['step']}: skipped_steps {r['skipped_steps']}, expected {k}")
        if not clean and not ok:
            s *= 0.5
        if ok:
            if not clean:
                print(f"loss-scale: first clean step {r['step']} at scale {r['loss_scale']:g} = "
                      f"2^{math.log2(r['loss_scale']):g} after {k} skipped steps")
            clean.append(r)
    if len(clean) < 10:
        fail(f"only {len(clean)} clean steps in {log}")
    l0, l1 = clean[0]["loss"], clean[-1]["loss"]
    print(f"loss-scale: {len(clean)} clean steps, loss {l0:.4f} -> {l1:.4f}; final loss_scale "
          f"{recs[-1]['loss_scale']:g}, skipped_steps {recs[-1]['skipped_steps']}")
    if not l1 < l0 - 0.1:
        fail(f"the loss did not fall ({l0:.4f} -> {l1:.4f})")
    changed = [n for n in tb if not n.startswith("optim.") and tb[n] != ta[n]]
    n_params = sum(not n.startswith("optim.") for n in tb)
    print(f"loss-scale: {len(changed)}/{n_params} parameters changed; checkpoint loss_scale "
          f"{ma['loss_scale']} skipped_steps {ma['skipped_steps']}")
    if len(changed) != n_params:
        fail("some parameters did not change: " + str([n for n in tb if not n.startswith('optim.')
                                                       and n not in changed]))
    print("loss-scale: PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("lib")
    a.add_argument("lib")
    a.add_argument("--scale", type=float, default=2.0 ** 40)
    a.add_argument("--steps", type=int, default=60)
    a.add_argument("--growth-interval", type=int, default=10)
    a = sub.add_parser("data")
    a.add_argument("out")
    a.add_argument("--vocab", type=int, required=True)
    a = sub.add_parser("patch-ckpt")
    a.add_argument("src")
    a.add_argument("dst")
    a.add_argument("--scale", type=float, required=True)
    for name, kw in (("check-skipped", "--skips"), ("check-recovery", "--skipped")):
        a = sub.add_parser(name)
        a.add_argument("before")
        a.add_argument("after")
        a.add_argument("log")
        a.add_argument("--scale", type=float, required=True)
        a.add_argument(kw, type=int, required=True)
    a = ap.parse_args()
    if a.cmd == "lib":
        check_lib(a.lib, a.scale, a.steps, a.growth_interval)
    elif a.cmd == "data":
        make_data(a.out, a.vocab)
    elif a.cmd == "patch-ckpt":
        patch_ckpt(a.src, a.dst, a.scale)
    elif a.cmd == "check-skipped":
        check_skipped(a.before, a.after, a.log, a.scale, a.skips)
    else:
        check_recovery(a.before, a.after, a.log, a.scale, a.skipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
