#!/usr/bin/env python3
"""Property test of training.checkpointing = budget:N (tg-rematerialize policy=budget).

    remat_budget.py SPEC.json [SPEC.json ...] [--budgets 10] [--seed 20261121] [--set k=v]...

For each spec:
  * plans it without checkpointing (`tgc plan --json`): A_none, the no-remat arena;
  * asks for a budget of 1 byte: it must be refused, the message naming the smallest
    achievable arena A_min ("the smallest planned arena is A_min bytes");
  * budget:A_min must be accepted with arena <= A_min, and budget:(A_min - 1) refused with
    the same A_min in the message;
  * for random budgets in [A_min, A_none] (fixed RNG seed), and A_none itself: tgc must accept,
    the planned arena must be <= the budget, and the extra FLOPs of the chosen
    rematerialization (tg.remat's extra_flops in `tgc compile --emit=planned`; also
    `tgc plan --json`'s extra_flops when the report has it, which must agree) must never
    rise when the budget rises; at A_none nothing is recomputed (extra FLOPs 0).

Prints one line per case ending in `ok` or `BAD ...`, then
`remat-budget: N budgets checked, M violations` and exits 1 when M > 0."""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

SMALLEST = re.compile(r"the smallest planned arena is (\d+) bytes")


def tgc(*args):
    return subprocess.run(["tgc", *args], capture_output=True, text=True, errors="replace")


class Checker:
    def __init__(self, spec, sets, tmp):
        self.spec, self.tmp = spec, tmp
        self.sets = [x for s in sets for x in ("--set", s)]
        self.name = os.path.basename(spec)

    def plan(self, policy):
        """(ok, plan dict or None, stderr) for training.checkpointing=policy."""
        out = os.path.join(self.tmp, "plan.json")
        if os.path.exists(out):
            os.remove(out)
        r = tgc("plan", self.spec, *self.sets, "--set", f"training.checkpointing={policy}",
                "--json", out)
        if r.returncode != 0:
            return False, None, r.stderr
        with open(out) as f:
            return True, json.load(f), r.stderr

    def remat(self, policy):
        """tg.remat of the planned IR (None when the pass did not run: policy none)."""
        r = tgc("compile", self.spec, *self.sets, "--set", f"training.checkpointing={policy}",
                "--emit=planned", "--target=cuda")
        if r.returncode != 0:
            raise RuntimeError(f"tgc compile --emit=planned {policy} failed: {r.stderr[:500]}")
        m = re.search(r"tg\.remat = \{([^}]*)\}", r.stdout)
        if not m:
            return None
        # policy = #tg.checkpointing<budget> (an enum attribute), mix = "N layer, ...".
        d = dict(re.findall(r"(\w+) = (\"[^\"]*\"|#tg\.\w+<[^>]*>|-?\d+)", m.group(1)))
        return {k: (v.strip('"') if v.startswith('"') else
                    re.sub(r'^#tg\.\w+<"?|"?>$', "", v) if v.startswith("#") else int(v))
                for k, v in d.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--budgets", type=int, default=10)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    rng = random.Random(a.seed)
    checked = bad = 0

    def report(label, problems):
        nonlocal checked, bad
        checked += 1
        bad += 1 if problems else 0
        print(f"{label}: " + ("ok" if not problems else "BAD " + "; ".join(problems)), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.specs:
            c = Checker(spec, a.set, tmp)
            ok, none_plan, err = c.plan("none")
            if not ok:
                report(f"{c.name} none", [f"tgc plan failed: {err[:300]}"])
                continue
            a_none = none_plan["arena_bytes"]
            # Refused far below: the message names the smallest achievable arena.
            ok, _, err = c.plan("budget:1")
            m = SMALLEST.search(err)
            if ok or not m:
                report(f"{c.name} budget:1", [f"not refused with the smallest arena: {err[:300]}"])
                continue
            a_min = int(m.group(1))
            probs = [] if 0 < a_min <= a_none else [f"smallest {a_min} not in (0, {a_none}]"]
            print(f"{c.name}: no-remat arena {a_none}, smallest achievable arena {a_min}")
            report(f"{c.name} budget:1 refused, smallest {a_min}", probs)
            # Just below it: refused, same number.
            ok, _, err = c.plan(f"budget:{a_min - 1}")
            m = SMALLEST.search(err)
            report(f"{c.name} budget:{a_min - 1} (smallest - 1)",
                   [] if not ok and m and int(m.group(1)) == a_min
                   else [f"accepted={ok}, message: {err[:300]}"])
            # Random budgets between the two, then both ends, in increasing order.
            budgets = sorted({a_min, a_none} |
                             {rng.randint(a_min, a_none) for _ in range(a.budgets)})
            prev = None
            for b in budgets:
                probs = []
                ok, p, err = c.plan(f"budget:{b}")
                if not ok:
                    report(f"{c.name} budget:{b}", [f"refused: {err[:300]}"])
                    prev = None
                    continue
                if p["arena_bytes"] > b:
                    probs.append(f"arena {p['arena_bytes']} > budget {b}")
                rm = c.remat(f"budget:{b}")
                if rm is None:
                    probs.append("no tg.remat in the planned IR")
                    report(f"{c.name} budget:{b}", probs)
                    continue
                flops = rm["extra_flops"]
                if "extra_flops" in p and p["extra_flops"] != flops:
                    probs.append(f"plan --json extra_flops {p['extra_flops']} != tg.remat {flops}")
                if prev is not None and flops > prev[1]:
                    probs.append(f"extra FLOPs rose from {prev[1]} (budget {prev[0]}) to {flops}")
                if b == a_none and flops != 0:
                    probs.append(f"budget = no-remat arena but extra FLOPs {flops}")
                report(f"{c.name} budget:{b} arena {p['arena_bytes']} extra FLOPs {flops} "
                       f"({rm['policy']}: {rm.get('mix', '')})", probs)
                prev = (b, flops)
    print(f"remat-budget: {checked} budgets checked, {bad} violations", flush=True)
    sys.exit(1 if bad or not checked else 0)


if __name__ == "__main__":
    main()
