"""Checks of test/e2e/torch-train.test (results of bench/torch_train.py).

  check_torch_train.py ok VOCAB FILE...      each result: status ok, finite ms_per_step and
                                             tokens_per_s, the mean loss of the last 5 steps
                                             below that of the first 5, val/test ppl finite
                                             and below VOCAB, memory fields null (CPU)
  check_torch_train.py same A B TOL          the loss curves of A and B agree to TOL
  check_torch_train.py vs-tgc RESULT LOG OUT TOL the same spec trained by PyTorch (RESULT) and
                                             by tgc (--log LOG, stdout OUT): both step-1
                                             losses within 0.1 of ln(vocab_size) (random
                                             init), final val ppl equal to TOL (relative;
                                             init and data order differ, the model,
                                             optimizer and lr schedule must not)
"""
import json
import math
import re
import sys


def fail(msg):
    print("check_torch_train.py: FAIL: " + msg)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return json.load(f)


def check_ok(vocab, paths):
    for p in paths:
        r = load(p)
        if r.get("system") != "pytorch" or r.get("status") != "ok":
            fail("%s: system %s status %s (%s)" % (p, r.get("system"), r.get("status"),
                                                   r.get("reason")))
        for k in ("ms_per_step", "tokens_per_s", "wall_s"):
            if not (isinstance(r.get(k), (int, float)) and math.isfinite(r[k]) and r[k] > 0):
                fail("%s: %s is %r" % (p, k, r.get(k)))
        losses = [c[1] for c in r["curve"]]
        if len(losses) != r["steps"] or len(losses) < 10:
            fail("%s: %d curve points for %s steps" % (p, len(losses), r["steps"]))
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        if not last < first:
            fail("%s: loss did not decrease: first 5 steps %.4f, last 5 %.4f" % (p, first, last))
        for k in ("val_ppl", "test_ppl"):
            v = r.get(k)
            if not (isinstance(v, float) and math.isfinite(v) and 1 < v < vocab):
                fail("%s: %s is %r, not in (1, %d)" % (p, k, v, vocab))
        for k in ("used_bytes", "peak_forward_bytes", "peak_backward_bytes",
                  "peak_optimizer_bytes"):
            if r.get(k) is not None:
                fail("%s: %s is %r on the CPU (expected null)" % (p, k, r[k]))
        print("%s: %s/%s/%s loss %.4f -> %.4f, val ppl %.2f, test ppl %.2f, %.2f ms/step"
              % (p, r["precision"], r["attention_kernel"], r["checkpointing"], first, last,
                 r["val_ppl"], r["test_ppl"], r["ms_per_step"]))


def check_same(a, b, tol):
    ca, cb = load(a)["curve"], load(b)["curve"]
    if len(ca) != len(cb) or not ca:
        fail("curves of %d and %d steps" % (len(ca), len(cb)))
    worst = max(abs(x[1] - y[1]) for x, y in zip(ca, cb))
    print("%d steps, max |loss difference| %.3g (tolerance %g)" % (len(ca), worst, tol))
    if not worst <= tol:
        fail("loss curves differ by %.3g > %g" % (worst, tol))


def check_tgc(result, log, out, tol):
    r = load(result)
    vocab = r["vocab_size"]
    with open(log) as f:
        steps = [json.loads(l) for l in f if l.strip()]
    tgc_first = [s for s in steps if s.get("step") == 1 and "eval" not in s][0]["loss"]
    torch_first = r["curve"][0][1]
    print("step-1 loss: pytorch %.4f, tgc %.4f, ln(vocab) %.4f"
          % (torch_first, tgc_first, math.log(vocab)))
    for name, v in (("pytorch", torch_first), ("tgc", tgc_first)):
        if not abs(v - math.log(vocab)) < 0.1:
            fail("%s step-1 loss %.4f is not within 0.1 of ln(%d)" % (name, v, vocab))
    with open(out) as f:
        m = re.findall(r"^val loss ([0-9.eE+-]+) ppl ([0-9.eE+-]+)$", f.read(), re.M)
    if not m:
        fail("no 'val loss X ppl Y' line in " + out)
    tgc_ppl = float(m[-1][1])
    rel = abs(r["val_ppl"] - tgc_ppl) / tgc_ppl
    print("final val ppl: pytorch %.3f, tgc %.3f, relative difference %.3f (tolerance %g)"
          % (r["val_ppl"], tgc_ppl, rel, tol))
    if not rel <= tol:
        fail("val perplexities differ by %.3f > %g" % (rel, tol))


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "ok":
        check_ok(int(sys.argv[2]), sys.argv[3:])
    elif cmd == "same":
        check_same(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif cmd == "vs-tgc":
        check_tgc(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        fail("usage: see the docstring")
