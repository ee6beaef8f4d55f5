"""Checks of test/e2e/train.test.

  check_train.py ppl OUTPUT META RATIO   the final "val loss X ppl Y" line of OUTPUT beats
                                         RATIO x the val unigram perplexity in META
  check_train.py same A.jsonl B.jsonl    the per-step losses of two logs are identical
"""
import json
import re
import sys


def fail(msg):
    print("check_train.py: FAIL: " + msg)
    sys.exit(1)


def check_ppl(output, meta, ratio):
    with open(output) as f:
        lines = re.findall(r"^val loss ([0-9.eE+-]+) ppl ([0-9.eE+-]+)$", f.read(), re.M)
    if not lines:
        fail("no 'val loss X ppl Y' line in " + output)
    loss, ppl = (float(x) for x in lines[-1])
    with open(meta) as f:
        unigram = float(json.load(f)["val_unigram_perplexity"])
    limit = float(ratio) * unigram
    print("val loss %.4f ppl %.3f; unigram ppl %.3f; limit %s x %.3f = %.3f"
          % (loss, ppl, unigram, ratio, unigram, limit))
    if not ppl < limit:
        fail("val perplexity %.3f is not below %.3f" % (ppl, limit))


def step_losses(path):
    losses = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if "eval" in rec:
                continue
            if rec["step"] in losses:
                fail("%s: step %d logged twice" % (path, rec["step"]))
            losses[rec["step"]] = rec["loss"]
    return losses


def check_same(a, b):
    la, lb = step_losses(a), step_losses(b)
    if sorted(la) != sorted(lb) or sorted(la) != list(range(1, len(la) + 1)):
        fail("steps differ: %s has %s, %s has %s" % (a, sorted(la), b, sorted(lb)))
    bad = [(s, la[s], lb[s]) for s in sorted(la) if la[s] != lb[s]]
    if bad:
        fail("losses differ at %d of %d steps, first (step, resumed, uninterrupted): %s"
             % (len(bad), len(la), bad[:5]))
    print("%d steps, losses identical" % len(la))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "ppl":
        check_ppl(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "same":
        check_same(*sys.argv[2:])
    else:
        fail("usage: check_train.py ppl OUTPUT META RATIO | same A.jsonl B.jsonl")
