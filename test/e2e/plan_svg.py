"""Checks of test/e2e/plan-svg.test: plan_svg.py PLAN.json PLAN.svg [--capped]

The SVG of `tgc plan --svg` against the JSON report of the same plan: it parses as XML;
each function's panel has one `rect.buf` per buffer of the JSON (same names in the
tooltips), the peak line's data-bytes and its label equal the JSON peak of that function
(micro_step: max of the forward and backward peaks; optimizer_step: the optimizer peak;
eval_step: the eval peak) and the largest sum of live bytes over the JSON buffers; the
caption states the persistent region and the workspace sizes.

--capped: a plan too large to draw whole: the file is under 5 MB, and a panel that draws
fewer rectangles than it has buffers says how many it left out (the rest as above).
"""
import collections
import json
import os
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("plan_svg.py: FAIL: " + msg)
    sys.exit(1)


def human(b):
    if b < 1024:
        return "%d B" % b
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)):
        if b < scale * 1024 or unit == "GiB":
            return "%.2f %s" % (b / scale, unit)


def peak_live(bufs):
    delta = collections.Counter()
    for b in bufs:
        delta[b["first"]] += b["bytes"]
        delta[b["last"] + 1] -= b["bytes"]
    run = peak = 0
    for i in sorted(delta):
        run += delta[i]
        peak = max(peak, run)
    return peak


def main(plan_json, svg, capped=False):
    plan = json.load(open(plan_json))
    size = os.path.getsize(svg)
    if size >= 5_000_000:
        fail("%s is %d bytes (limit 5 MB)" % (svg, size))
    root = ET.parse(svg).getroot()  # raises on malformed XML
    panels = {g.get("id"): g for g in root.iter(NS + "g") if g.get("class") == "panel"}
    want_peak = {
        "micro_step": max(plan["peak_forward_bytes"], plan["peak_backward_bytes"]),
        "optimizer_step": plan["peak_optimizer_bytes"],
        "eval_step": plan["peak_eval_bytes"],
    }
    if set(panels) != set(want_peak):
        fail("panels %s, expected %s" % (sorted(panels), sorted(want_peak)))
    for fn in ("micro_step", "optimizer_step", "eval_step"):
        g = panels[fn]
        bufs = [b for b in plan["buffers"] if b["function"] == fn]
        rects = [r for r in g.iter(NS + "rect") if "buf" in r.get("class", "").split()]
        names = collections.Counter(r.find(NS + "title").text.split(" (")[0] for r in rects)
        if int(g.get("data-drawn")) != len(rects) or int(g.get("data-buffers")) != len(bufs):
            fail("%s: data-drawn/data-buffers do not count the rectangles/buffers" % fn)
        if len(rects) < len(bufs) and capped:
            note = "%d buffers smaller than " % (len(bufs) - len(rects))
            if not any((t.text or "").startswith(note) for t in g.iter(NS + "text")):
                fail("%s: %d of %d buffers drawn and no note '%s...'"
                     % (fn, len(rects), len(bufs), note))
            if names - collections.Counter(b["name"] for b in bufs):
                fail("%s: tooltips name buffers the JSON does not have" % fn)
        elif names != collections.Counter(b["name"] for b in bufs):
            fail("%s: %d rectangles for %d buffers, or the tooltips do not name the JSON "
                 "buffers" % (fn, len(rects), len(bufs)))
        phases = {r.get("class").split()[1] for r in rects}
        want_phases = {"eval"} if fn == "eval_step" else {b["phase"] for b in bufs}
        if phases != want_phases:
            fail("%s: rectangle phases %s, expected %s" % (fn, phases, want_phases))
        lines = [l for l in g.iter(NS + "line") if l.get("class") == "peak"]
        if len(lines) != 1:
            fail("%s: %d peak lines" % (fn, len(lines)))
        peak = int(lines[0].get("data-bytes"))
        if peak != want_peak[fn] or peak != peak_live(bufs):
            fail("%s: peak line at %d bytes, JSON peak %d, live-bytes sweep %d"
                 % (fn, peak, want_peak[fn], peak_live(bufs)))
        label = "peak " + human(peak)
        if not any(t.text == label for t in g.iter(NS + "text")):
            fail("%s: no '%s' label" % (fn, label))
        print("%s: %d buffers, %d rectangles, peak %d bytes (%s)"
              % (fn, len(bufs), len(rects), peak, human(peak)))
    if capped and all(int(g.get("data-drawn")) == int(g.get("data-buffers"))
                      for g in panels.values()):
        fail("--capped: every buffer was drawn (%d bytes)" % size)
    caption = " ".join(t.text or "" for t in root.iter(NS + "text") if t.get("class") == "caption")
    for what in ("persistent region " + human(plan["persistent_bytes"]),
                 "workspace " + human(plan["workspace_bytes"]),
                 "arena " + human(plan["arena_bytes"])):
        if what not in caption:
            fail("the caption does not state '%s': %s" % (what, caption))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--capped"]):
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:] == ["--capped"])
