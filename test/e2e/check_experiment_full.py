#!/usr/bin/env python3
"""Checks the output directory of a full `tgc experiment` run (test/e2e/experiment-full.test).

    check_experiment_full.py DIR N

Fails (exit 1, with the reason) unless: results.jsonl has exactly one tgc line per
configuration, N in all, each "ok" with a finite positive ms_per_step and a finite val
perplexity; results.md has a runs-table row per configuration and the max-batch table
naming every configuration whose batch_request is "max"; plots/ holds at least one SVG
(each parses as XML with an <svg> root) and one PNG (PNG signature)."""
import json, math, os, sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("experiment-full: FAIL: " + msg)
    sys.exit(1)


def main():
    root, n = sys.argv[1], int(sys.argv[2])
    lines = [json.loads(l) for l in open(os.path.join(root, "results.jsonl")) if l.strip()]
    tgc = [r for r in lines if r.get("system") == "tgc"]
    names = sorted(r["config"] for r in tgc)
    if len(tgc) != n or len(set(names)) != n:
        fail("expected %d tgc lines, one per configuration; got %s" % (n, names))
    for r in tgc:
        ms, ppl = r.get("ms_per_step"), r.get("val_ppl")
        if r.get("status") != "ok" or not (isinstance(ms, (int, float)) and ms > 0 and
                                           math.isfinite(ms)):
            fail("%s: status %s, ms_per_step %r" % (r["config"], r.get("status"), ms))
        if not (isinstance(ppl, (int, float)) and math.isfinite(ppl) and ppl > 1):
            fail("%s: val_ppl %r" % (r["config"], ppl))
    print("results.jsonl: %d configurations ok" % n)
    md = open(os.path.join(root, "results.md")).read()
    rows = [c for c in names if ("| %s | tgc |" % c) in md]
    if len(rows) != n:
        fail("results.md: runs rows for %s only" % rows)
    maxes = [r["config"] for r in tgc if r.get("batch_request") == "max"]
    if "## Largest micro-batch" not in md or not all(("| %s | " % c) in md.split(
            "## Largest micro-batch", 1)[1] for c in maxes):
        fail("results.md: no max-batch table row for %s" % maxes)
    print("results.md: runs table with %d rows, max-batch table with %s" % (n, ", ".join(maxes)))
    pdir = os.path.join(root, "plots")
    svgs = [f for f in os.listdir(pdir) if f.endswith(".svg")]
    pngs = [f for f in os.listdir(pdir) if f.endswith(".png")]
    for f in svgs:
        tag = ET.parse(os.path.join(pdir, f)).getroot().tag
        if not tag.endswith("svg"):
            fail("%s: root element %s" % (f, tag))
    for f in pngs:
        if open(os.path.join(pdir, f), "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            fail("%s: not a PNG" % f)
    if not svgs or not pngs:
        fail("plots: %d svg, %d png" % (len(svgs), len(pngs)))
    print("plots: %d svg (xml ok), %d png" % (len(svgs), len(pngs)))


if __name__ == "__main__":
    main()
