#!/usr/bin/env python3
"""Reads the C++ that translateToCpp prints for a tg-lower-to-emitc module and rewrites it
so FileCheck can compare pointers with planned offsets: the region bases become `P` / `A`
and each pointer variable `T* vN = (T*) (base + off);` is replaced at its uses by
`(T*)(P + off)`, the context argument by `ctx`; the declarations themselves are dropped. Other lines pass through."""
import re
import sys

names = {}  # variable -> replacement text
region = re.compile(r"^\s*char\* (v\d+) = tgrt_region\((v\d+), TGRT_(PERSISTENT|ARENA)\);$")
pointer = re.compile(r"^\s*(float|int32_t)\* (v\d+) = \((float|int32_t)\*\) \((v\d+) \+ (\d+)\);$")
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("extern \"C\""):  # a new function; its tgrt_ctx* is `ctx`
        names = {}
        m = re.search(r"tgrt_ctx\* (v\d+)\)", line)
        if m:
            names[m.group(1)] = "ctx"
    m = region.match(line)
    if m:
        names[m.group(1)] = "P" if m.group(3) == "PERSISTENT" else "A"
        continue
    m = pointer.match(line)
    if m and names.get(m.group(4)) in ("P", "A"):
        names[m.group(2)] = f"({m.group(1)}*)({names[m.group(4)]} + {m.group(5)})"
        continue
    print(re.sub(r"\bv\d+\b", lambda v: names.get(v.group(0), v.group(0)), line))
