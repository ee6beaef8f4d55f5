#!/usr/bin/env python3
"""The check of `tgc advise` (issue 23): for each model of a gpu-advise run
(ranked.json, written by scripts/gpu-advise-artifacts.sh: the configurations tried, each
with its rank and prediction; measured.json, written on the GPU by scripts/gpu-cost.sh),
prints predicted and measured step time and tokens/s per configuration, and whether the
advised one measures within TOL (default 3%) of the fastest measured.

  scripts/advise-compare.py RANKED_JSON MEASURED_JSON [--tol 0.03]
Exit status 0 when every model's advised configuration is within the tolerance, 1 when one
is not, 2 on missing input. Prints markdown."""
import argparse, json, sys

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("ranked")
ap.add_argument("measured")
ap.add_argument("--tol", type=float, default=0.03)
a = ap.parse_args()
try:
    ranked = json.load(open(a.ranked))
    measured = json.load(open(a.measured))
except (OSError, ValueError) as e:
    print(f"advise-compare: {e}", file=sys.stderr)
    sys.exit(2)
ok = True
for model in dict.fromkeys(x["model"] for x in ranked):
    rows = [x for x in ranked if x["model"] == model]
    print(f"\n### {model} ({rows[0]['spec']})\n")
    print("| rank | precision | checkpointing | micro-batch | predicted ms | measured ms | error "
          "| predicted tokens/s | measured tokens/s | reps |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---|")
    best, adv = None, None
    for x in sorted(rows, key=lambda x: x["rank"]):
        m = measured.get(x["name"])
        ms = m["ms"] if m else None
        tps = x["tokens_per_step"] / (ms / 1e3) if ms else None
        if tps and (best is None or tps > best[1]):
            best = (x, tps)
        if x["advised"]:
            adv = (x, tps)
        err = "%+.1f%%" % (100 * (x["predicted_ms"] - ms) / ms) if ms else "-"
        print(f"| {x['rank']}{' (advised)' if x['advised'] else ''} | {x['precision']} | "
              f"{x['checkpointing']} | {x['batch_size']} | {x['predicted_ms']:.1f} | "
              f"{'%.1f' % ms if ms else '-'} | {err} | {x['predicted_tokens_per_s']:,.0f} | "
              f"{'{:,.0f}'.format(tps) if tps else '-'} | "
              f"{', '.join('%.1f' % r for r in m['reps']) if m else 'not run'} |")
    if not best or not adv or adv[1] is None:
        print("\nno measurement of the advised configuration")
        ok = False
        continue
    gap = 1 - adv[1] / best[1]
    verdict = "within" if gap <= a.tol else "NOT within"
    ok = ok and gap <= a.tol
    print(f"\nadvised: rank 1, {adv[1]:,.0f} tokens/s measured; fastest measured: rank "
          f"{best[0]['rank']} ({best[0]['precision']} {best[0]['checkpointing']} micro-batch "
          f"{best[0]['batch_size']}), {best[1]:,.0f} tokens/s; the advised is {100 * gap:.1f}% "
          f"below: {verdict} {100 * a.tol:.0f}%")
sys.exit(0 if ok else 1)
