#!/usr/bin/env python3
"""data-shards.test: sharded token datasets and true epochs (issue 24; docs/data.md).

Given trainers compiled from a tiny CPU model (vocab 512, context 16, micro-batch 2) for 1
and 2 data-parallel ranks, writes token datasets with NumPy and checks:

  a. the same tokens as one train.npy and as 3 train shards (val in 1, test in 2 shards,
     format_version 2 index) train bit-identically with --sampling random: step losses,
     final val/test losses and checkpoint bytes; the window log shows windows that straddle
     a shard boundary;
  b. --sampling shuffle (the default with --epochs) visits every window of an epoch once:
     per epoch, the windows logged (TGRT_LOG_WINDOWS) are distinct, S * G of the W windows,
     the ranks' disjoint, in exactly the order of the permutation docs/data.md describes
     (reimplemented here: a 6-round Feistel network with cycle walking), each epoch in
     another order; on 1 and 2 ranks; the step log prints "epoch E/N", each epoch's end
     and the time per epoch;
  c. a run stopped mid-epoch and resumed from its checkpoint (no --epochs or --sampling:
     both from the checkpoint) gives the uninterrupted run's step losses and final
     checkpoint bytes, on 1 and 2 ranks;
  d. a truncated shard, a shard shorter than the index says and a malformed index are
     refused at open (exit 1, no step) with messages naming the shard file (or the index's
     JSON path) and the byte offset; a bad id in a shard is reported naming the shard and
     the index in it.

Prints one line per check and "data-shards: PASS"; fails with "data-shards: FAIL: ..."
(exit 1).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

VOCAB, T, B = 512, 16, 2
SEED = 7


def fail(msg):
    print("data-shards: FAIL: " + msg)
    sys.exit(1)


# ---------------------------------------------------------------- the epoch permutation

M64 = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def permutation(n, seed, epoch):
    """docs/data.md's epoch order: element i of epoch `epoch`'s (0-based) permutation of
    [0, n), as a function of i."""
    bits = 0
    while bits < 64 and (1 << bits) < n:
        bits += 1
    half = 1 if bits < 2 else (bits + 1) // 2
    mask = (1 << half) - 1
    key = splitmix64(splitmix64(seed ^ 0x6A09E667F3BCC909) ^ epoch)
    keys = [splitmix64((key + r) & M64) for r in range(6)]

    def enc(x):
        left, right = (x >> half) & mask, x & mask
        for k in keys:
            left, right = right, left ^ (splitmix64(right ^ k) & mask)
        return (left << half) | right

    def at(i):
        x = enc(i)
        while x >= n:
            x = enc(x)
        return x
    return at


# ---------------------------------------------------------------------------- datasets

def write_single(d, train, val, test):
    os.makedirs(d, exist_ok=True)
    for name, a in (("train", train), ("val", val), ("test", test)):
        np.save(os.path.join(d, name + ".npy"), a)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"vocab_size": VOCAB, "dtype": "uint16"}, f)


def write_sharded(d, splits):
    """splits: {name: [array, ...]}: each split's shards, written as <name>-0000i.npy (a
    split of one shard as <name>.npy), with their format_version 2 index."""
    os.makedirs(d, exist_ok=True)
    index = {}
    for name, shards in splits.items():
        entries = []
        for i, a in enumerate(shards):
            file = name + ".npy" if len(shards) == 1 else "%s-%05d.npy" % (name, i)
            np.save(os.path.join(d, file), a)
            entries.append({"file": file, "tokens": int(a.size)})
        index[name] = {"tokens": sum(e["tokens"] for e in entries), "documents": 1,
                       "shards": entries}
    meta = {"format": "tgc-tokens", "format_version": 2, "vocab_size": VOCAB,
            "dtype": "uint16", "eos_id": None,
            "tokenizer": {"type": "sentencepiece", "file": "tokenizer.model", "sha256": "0" * 64},
            "splits": index}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    return meta


def run(cmd, env_extra=None):
    env = dict(os.environ)
    env.pop("TGRT_LOG_WINDOWS", None)
    env.update(env_extra or {})
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def train(exe, data, args, log=None, windows=None, ckpt=None, check=True):
    cmd = [exe, "--data", data, "--seed", str(SEED)] + args
    if log:
        cmd += ["--log", log]
    if ckpt:
        cmd += ["--save", ckpt]
    env = {"TGRT_LOG_WINDOWS": windows} if windows else None
    if windows and os.path.exists(windows):
        os.remove(windows)
    rc, out, err = run(cmd, env)
    if check and rc != 0:
        fail("%s: exit status %d\n%s\n%s" % (" ".join(cmd), rc, out, err))
    return rc, out, err


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def step_losses(log):
    return [(r["step"], r["loss"]) for r in read_jsonl(log) if "eval" not in r]


def final_evals(log):
    return [(r["eval"], r["loss"]) for r in read_jsonl(log) if r.get("final")]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def data_offset(path):
    with open(path, "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        return f.tell()


# -------------------------------------------------------------------------------- checks

def check_a(a, rng):
    """Single file vs 3 shards, --sampling random: bit-identical."""
    train_ids = rng.integers(0, VOCAB, 400, dtype=np.uint16)
    val = rng.integers(0, VOCAB, 150, dtype=np.uint16)
    test = rng.integers(0, VOCAB, 133, dtype=np.uint16)
    cuts = [0, 130, 280, 400]  # not on window boundaries
    one, sh = os.path.join(a.work, "a-one"), os.path.join(a.work, "a-sharded")
    write_single(one, train_ids, val, test)
    write_sharded(sh, {"train": [train_ids[cuts[i]:cuts[i + 1]] for i in range(3)],
                       "val": [val], "test": [test[:50], test[50:]]})
    logs = {}
    for label, d in (("one", one), ("sharded", sh)):
        log, ck, w = (os.path.join(a.work, "a-%s.%s" % (label, x))
                      for x in ("jsonl", "ckpt", "windows"))
        _, out, _ = train(a.exe1, d, ["--steps", "100", "--sampling", "random"], log=log,
                          windows=w, ckpt=ck)
        logs[label] = (log, ck, w, out)
    if "400 train tokens" not in logs["sharded"][3]:
        fail("a: the sharded run does not report 400 train tokens:\n" + logs["sharded"][3])
    la, lb = step_losses(logs["one"][0]), step_losses(logs["sharded"][0])
    if la != lb or len(la) != 100:
        fail("a: step losses differ between one file and 3 shards:\n%r\n%r" % (la, lb))
    ea, eb = final_evals(logs["one"][0]), final_evals(logs["sharded"][0])
    if ea != eb or [e[0] for e in ea] != ["val", "test"]:
        fail("a: final evaluations differ: %r vs %r" % (ea, eb))
    if read_bytes(logs["one"][1]) != read_bytes(logs["sharded"][1]):
        fail("a: the final checkpoints differ")
    wa = [r["offsets"] for r in read_jsonl(logs["one"][2])]
    if wa != [r["offsets"] for r in read_jsonl(logs["sharded"][2])]:
        fail("a: the window offsets differ")
    straddle = sum(1 for offs in wa for o in offs
                   if any(o < c < o + T + 1 for c in cuts[1:3]))
    if straddle == 0:
        fail("a: no training window straddles a shard boundary; the check shows nothing")
    print("data-shards: a: 100 steps on 1 file and on 3 shards (130+150+120 tokens): "
          "identical losses (last %.6f), final val/test and checkpoint bytes; %d of %d "
          "windows straddle a shard boundary" % (la[-1][1], straddle, 2 * len(wa)))


def epoch_dataset(a, rng, windows):
    n = T * windows + 1 + 5
    ids = rng.integers(0, VOCAB, n, dtype=np.uint16)
    d = os.path.join(a.work, "ep")
    cuts = [0, 1000, 2337, n]
    write_sharded(d, {"train": [ids[cuts[i]:cuts[i + 1]] for i in range(3)],
                      "val": [rng.integers(0, VOCAB, 100, dtype=np.uint16)]})
    return d


def check_b(a, d, W):
    """Shuffle: every window once per epoch, in the documented order, on 1 and 2 ranks."""
    for exe, ranks, epochs in ((a.exe1, 1, 2), (a.exe2, 2, 2)):
        G = B * ranks  # grad_accum 1
        S = W // G
        wl = os.path.join(a.work, "b-%d.windows" % ranks)
        log = os.path.join(a.work, "b-%d.jsonl" % ranks)
        _, out, _ = train(exe, d, ["--epochs", str(epochs)], log=log, windows=wl)
        want = ("sampling: shuffle: %d windows of %d tokens, each epoch in a new order, %d "
                "steps of %d windows an epoch (its last %d windows dropped)"
                % (W, T + 1, S, G, W - S * G))
        if want not in out:
            fail("b: %d rank(s): no '%s' in the output:\n%s" % (ranks, want, out))
        for e in range(1, epochs + 1):
            line = "epoch %d/%d done at step %d: %d steps in " % (e, epochs, e * S, S)
            if line not in out:
                fail("b: %d rank(s): no '%s' in the output:\n%s" % (ranks, line, out))
        shown = [(int(m[0]), int(m[1]), int(m[2]), int(m[3])) for m in re.findall(
            r"^step (\d+)/(\d+) \|.* \| epoch (\d+)/(\d+)$", out, re.M)]
        if sorted({e for _, _, e, _ in shown}) != list(range(1, epochs + 1)) or \
                any(n != epochs * S or e != (s - 1) // S + 1 or of != epochs
                    for s, n, e, of in shown) or "time per epoch: 1: " not in out:
            fail("b: %d rank(s): the step log lacks the epoch:\n%s" % (ranks, out))
        recs = read_jsonl(wl)
        if len(recs) != epochs * S * ranks:
            fail("b: %d rank(s): %d window log lines, expected %d"
                 % (ranks, len(recs), epochs * S * ranks))
        orders = []
        for e in range(epochs):
            perm = permutation(W, SEED, e)
            seen = []
            for step in range(e * S + 1, (e + 1) * S + 1):
                got = {}
                for r in recs:
                    if r["step"] == step:
                        if r["epoch"] != e + 1:
                            fail("b: step %d logged as epoch %d" % (step, r["epoch"]))
                        got[r["rank"]] = r["windows"]
                if sorted(got) != list(range(ranks)):
                    fail("b: step %d: window lines of ranks %r" % (step, sorted(got)))
                j = step - 1 - e * S
                for rank in range(ranks):
                    want_w = [perm(j * G + rank * B + i) for i in range(B)]
                    if got[rank] != want_w:
                        fail("b: %d rank(s): step %d rank %d read windows %r, the documented "
                             "order gives %r" % (ranks, step, rank, got[rank], want_w))
                    seen += got[rank]
            if len(seen) != S * G or len(set(seen)) != len(seen) or \
                    not all(0 <= x < W for x in seen):
                fail("b: %d rank(s): epoch %d read %d windows, %d distinct, expected %d "
                     "distinct in [0, %d)" % (ranks, e + 1, len(seen), len(set(seen)), S * G, W))
            orders.append(seen)
        if orders[0] == orders[1]:
            fail("b: %d rank(s): both epochs read the windows in the same order" % ranks)
        steps = read_jsonl(log)
        if [r["epoch"] for r in steps if "eval" not in r] != \
                [(s - 1) // S + 1 for s in range(1, epochs * S + 1)]:
            fail("b: %d rank(s): the --log step records do not carry their epoch" % ranks)
        print("data-shards: b: %d rank(s): %d epochs of %d steps x %d windows: each epoch "
              "read %d distinct of the %d windows (%d dropped) in the documented order, "
              "a new order each epoch" % (ranks, epochs, S, G, S * G, W, W - S * G))


def check_c(a, d, W):
    """Resume mid-epoch: bit-exact against the uninterrupted run."""
    for exe, ranks in ((a.exe1, 1), (a.exe2, 2)):
        S = W // (B * ranks)
        stop = S + S // 2 + 1  # inside epoch 2
        full_log, full_ck = (os.path.join(a.work, "c-%d-full.%s" % (ranks, x))
                             for x in ("jsonl", "ckpt"))
        part_log, part_ck = (os.path.join(a.work, "c-%d-part.%s" % (ranks, x))
                             for x in ("jsonl", "ckpt"))
        train(exe, d, ["--epochs", "2", "--quiet"], log=full_log, ckpt=full_ck)
        train(exe, d, ["--epochs", "2", "--stop-after", str(stop), "--quiet"], log=part_log,
              ckpt=part_ck)
        _, out, _ = train(exe, d, ["--resume", part_ck], log=part_log, ckpt=part_ck)
        want = "epoch 2/2 done at step %d: %d steps (of %d; resumed at step %d)" % (
            2 * S, 2 * S - stop, S, stop)
        if want not in out:
            fail("c: %d rank(s): no '%s' in the output:\n%s" % (ranks, want, out))
        la, lb = step_losses(full_log), step_losses(part_log)
        if la != lb or len(la) != 2 * S:
            fail("c: %d rank(s): step losses differ after resuming at step %d" % (ranks, stop))
        if read_bytes(full_ck) != read_bytes(part_ck):
            fail("c: %d rank(s): the final checkpoints differ" % ranks)
        print("data-shards: c: %d rank(s): stopped at step %d (epoch 2, step %d of %d) and "
              "resumed: %d step losses and the final checkpoint bytes equal the "
              "uninterrupted run's" % (ranks, stop, stop - S, S, 2 * S))


def check_d(a, d):
    """Corrupt shards and index: refused at open, located; a bad id at use."""
    meta = json.load(open(os.path.join(d, "meta.json")))
    shard = meta["splits"]["train"]["shards"][1]

    def case(label, mutate, want, after_steps=0, args=("--steps", "2")):
        c = os.path.join(a.work, "d-" + label.replace(" ", "-"))
        shutil.rmtree(c, ignore_errors=True)
        shutil.copytree(d, c)
        want = mutate(c, want)
        rc, out, err = train(a.exe1, c, list(args), check=False)
        steps = [l for l in out.splitlines() if l.startswith("step ")]
        if rc != 1 or want not in err or (after_steps == 0 and steps):
            fail("d: %s: exit status %d, %d step lines; expected 1 and '%s':\n%s\n%s"
                 % (label, rc, len(steps), want, out, err))
        print("data-shards: d: %s: %s" % (label, want))

    def truncate(c, want):
        p = os.path.join(c, shard["file"])
        off = data_offset(p)
        os.truncate(p, off + 2 * shard["tokens"] - 2)
        return want % (p, shard["tokens"], 2 * shard["tokens"] - 2, off, c)
    case("truncated shard", truncate,
         "%s: truncated: the header promises %d elements of 2 bytes but only %d bytes follow "
         "(at byte offset %d) (listed in %s/meta.json as splits.train.shards[1].file)")

    def shorter(c, want):
        p = os.path.join(c, shard["file"])
        np.save(p, np.load(p)[:-100])
        return want % (p, shard["tokens"] - 100, shard["tokens"], c, data_offset(p))
    case("short shard", shorter,
         "%s: %d tokens in the file, %d in %s/meta.json (splits.train.shards[1].tokens) "
         "(at byte offset %d)")

    def malformed(c, want):
        m = json.load(open(os.path.join(c, "meta.json")))
        m["splits"]["train"]["shards"][2]["file"] = 3
        json.dump(m, open(os.path.join(c, "meta.json"), "w"))
        return want % c
    case("malformed index", malformed,
         "%s/meta.json: splits.train.shards[2].file: expected a string, found 3")

    def bad_id(c, want):
        p = os.path.join(c, shard["file"])
        ids = np.load(p)
        ids[:] = 1
        ids[50] = VOCAB
        np.save(p, ids)
        return want % (p, VOCAB, VOCAB, data_offset(p) + 100)
    # One epoch of shuffle reads every window: the bad id is found, in some step.
    case("bad id in a shard", bad_id,
         "%s: token id %d at index 50 is outside [0, vocab_size=%d) (at byte offset %d)",
         after_steps=1, args=("--epochs", "1"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--exe1", required=True, help="trainer for 1 rank")
    ap.add_argument("--exe2", required=True, help="trainer for 2 data-parallel ranks")
    a = ap.parse_args()
    rng = np.random.default_rng(24)
    check_a(a, rng)
    W = 203  # windows: not a multiple of the 2 or 4 windows of a step
    d = epoch_dataset(a, rng, W)
    check_b(a, d, W)
    check_c(a, d, W)
    check_d(a, d)
    print("data-shards: PASS")


if __name__ == "__main__":
    main()
