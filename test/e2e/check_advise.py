"""Checks `tgc advise --json` output (test/e2e/advise.test).

usage: check_advise.py ADVISE.json MEMORY_BYTES [PLAN.json] [--tokens T]

- the chosen configuration fits and has the highest predicted tokens/s of every fitting
  candidate (ties: the smaller plan);
- every candidate marked fitting has plan + context reserve <= MEMORY, every other one not;
- each family's candidates are the powers of two up to its largest fitting micro-batch and
  that largest (capped at T / context with --tokens);
- with PLAN.json (`tgc plan` of the written spec): its total bytes are the chosen plan's;
- with --tokens T: every candidate's micro-batch x grad_accum x context is the fewest >= T.
"""
import json
import sys


def main(argv):
    args = argv[1:]
    tokens = None
    if "--tokens" in args:
        i = args.index("--tokens")
        tokens = int(args[i + 1])
        del args[i:i + 2]
    doc = json.load(open(args[0]))
    memory = int(args[1])
    assert doc["memory_bytes"] == memory, doc["memory_bytes"]
    ctx = doc["context_bytes"]
    cands = doc["candidates"]
    assert cands, "no candidates"
    fitting = [c for c in cands if c["fits"]]
    for c in cands:
        assert c["total_bytes"] == c["plan_bytes"] + ctx, c
        assert (c["total_bytes"] <= memory) == c["fits"], c
    chosen = [c for c in cands if c["chosen"]]
    assert len(chosen) == 1, chosen
    best = chosen[0]
    assert best["fits"], best
    top = max(c["predicted_tokens_per_s"] for c in fitting)
    assert best["predicted_tokens_per_s"] == top, (best, top)
    for k in ("precision", "checkpointing", "batch_size", "grad_accum"):
        assert doc["chosen"][k] == best[k], (k, doc["chosen"], best)
    for f in doc["families"]:
        got = sorted(c["batch_size"] for c in cands
                     if c["precision"] == f["precision"] and c["checkpointing"] == f["checkpointing"])
        m = f["max_micro_batch"]
        if tokens is not None:
            m = min(m, max(1, tokens // 64))  # context 64 in the test
        want = sorted({b for b in [1 << i for i in range(20)] if b <= m} | ({m} if m else set()))
        assert got == want, (f, got, want)
    if tokens is not None:
        for c in cands:
            per = c["batch_size"] * 64
            assert c["grad_accum"] == max(1, -(-tokens // per)), c
            assert c["tokens_per_step"] == c["batch_size"] * c["grad_accum"] * 64, c
            assert c["exact_tokens_per_step"] == (c["tokens_per_step"] == tokens), c
    if len(args) > 2:
        plan = json.load(open(args[2]))
        assert plan["total_bytes"] == best["plan_bytes"], (plan["total_bytes"], best)
    print(f"advise: PASS ({len(cands)} candidates, {len(fitting)} fit, chosen "
          f"{best['precision']}/{best['checkpointing']} micro-batch {best['batch_size']} "
          f"grad_accum {best['grad_accum']})")


if __name__ == "__main__":
    main(sys.argv)
