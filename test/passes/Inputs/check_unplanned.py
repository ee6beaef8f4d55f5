"""Checks of tg-plan-memory drop-unread (test helper for plan-memory-drop-unread.test).

usage: check_unplanned.py KEEP.mlir DROP.mlir
           every result DROP marks tg.unplanned is a backward op's or the dx and dw of an
           evaluation's loss-only tg.linear_cross_entropy, at offset -1; the ops of KEEP carry
           no mark; prints the count and both arenas (tg.plan arena_bytes)
       check_unplanned.py --same-calls KEEP.cpp DROP.cpp
           the two translation units (through resolve_pointers.py) make the same tgrt_
           calls with the same arguments except the arena offsets ((T*)(A + N))

Standard library only.
"""
import re
import sys


def fail(msg):
    print("check-unplanned: FAIL: " + msg)
    sys.exit(1)


def arena(text):
    m = re.search(r"tg\.plan = \{arena_bytes = (\d+) : i64", text)
    if not m:
        fail("no tg.plan arena_bytes")
    return int(m.group(1))


def marks(path):
    text = open(path).read()
    count = 0
    for line in text.splitlines():
        m = re.search(r"tg\.unplanned = array<i64: ([0-9, ]+)>", line)
        if not m:
            continue
        results = [int(x) for x in m.group(1).split(",")]
        evalLoss = "tg.linear_cross_entropy" in line and results == [1, 2]
        if 'tg.phase = "backward"' not in line and not evalLoss:
            fail("a result outside the backward is unplanned: " + line.strip()[:160])
        offs = re.search(r"tg\.offsets = array<i64: ([-0-9, ]+)>", line)
        if not offs:
            fail("an unplanned op without tg.offsets: " + line.strip()[:160])
        offsets = [int(x) for x in offs.group(1).split(",")]
        for i in results:
            if offsets[i] != -1:
                fail(f"unplanned result {i} has offset {offsets[i]}: " + line.strip()[:160])
            count += 1
    return text, count


def calls(path):
    """The tgrt_ calls of a resolve_pointers.py output, arena offsets replaced by 'A'."""
    out = []
    for m in re.finditer(r"\b(tgrt_\w+)\((.*?)\);", open(path).read()):
        out.append((m.group(1), re.sub(r"\(A \+ \d+\)", "(A)", m.group(2))))
    return out


def main(argv):
    if len(argv) == 4 and argv[1] == "--same-calls":
        a, b = calls(argv[2]), calls(argv[3])
        if len(a) != len(b):
            fail(f"{len(a)} calls against {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                fail(f"call {i} differs: {x} / {y}")
        print(f"same calls: {len(a)} tgrt_ calls, only arena offsets differ")
        return
    if len(argv) != 3:
        sys.exit(__doc__.strip())
    keep, n_keep = marks(argv[1])
    drop, n_drop = marks(argv[2])
    if n_keep:
        fail(f"{n_keep} results marked without drop-unread")
    if not n_drop:
        fail("nothing unplanned")
    a, b = arena(keep), arena(drop)
    if b >= a:
        fail(f"the arena did not shrink: {a} -> {b}")
    print(f"unplanned: {n_drop} results, all backward or the evaluation loss's dx and dw, all "
          f"at offset -1; arena {a} -> {b}")


if __name__ == "__main__":
    main(sys.argv)
