#!/usr/bin/env python3
"""Reads the C++ that translateToCpp prints for a tg-lower-to-emitc module and rewrites it
so FileCheck can compare pointers with planned offsets: the region bases become `P` / `A`
and each pointer variable `T* vN = (T*) (base + off);` is replaced at its uses by
`(T*)(P + off)`, the context argument by `ctx`; the declarations themselves are dropped.
The non-finite checks are dropped too (`bool vN = tgrt_check_enabled(ctx);` and each
`if (vN) { tgrt_check_*(...); }` block; test/e2e/find-nonfinite.test checks them), so that
consecutive runtime calls stay on consecutive lines. Other lines pass through."""
import re
import sys

names = {}  # variable -> replacement text
region = re.compile(r"^\s*char\* (v\d+) = tgrt_region\((v\d+), TGRT_(PERSISTENT|ARENA)\);$")
pointer = re.compile(r"^\s*(float|int32_t)\* (v\d+) = \((float|int32_t)\*\) \((v\d+) \+ (\d+)\);$")
check_flag = re.compile(r"^\s*bool (v\d+) = tgrt_check_enabled\(v\d+\);$")
flags = set()  # variables holding tgrt_check_enabled(ctx)
in_check = False
for line in sys.stdin:
    line = line.rstrip("\n")
    m = check_flag.match(line)
    if m:
        flags.add(m.group(1))
        continue
    m = re.match(r"^\s*if \((v\d+)\) \{$", line)
    if m and m.group(1) in flags:
        in_check = True
        continue
    if in_check:
        in_check = line.strip() != "}"
        continue
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
