#!/usr/bin/env python3
"""`tgc plan --max-batch` must return the largest micro-batch N whose plan fits beside the
CUDA context reserve R (target cuda, --context-bytes' default 537 MiB; MEMORY is the whole
card): plan(N) + R <= memory < plan(N + 1) + R, checked by planning N and N + 1
independently (`tgc plan --json`, total_bytes = persistent + arena + workspace). R is read
from the report line and must be the default.

    max_batch.py TGC SPEC MEMORY [--set k=v ...]

Prints "max-batch: N fits (plan P + R <= M), N+1 does not (plan Q + R > M): PASS" or FAIL
(exit 1)."""
import json
import re
import subprocess
import sys
import tempfile

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "B": 1}
CUDA_CONTEXT_BYTES = 537 << 20  # tgc's default --context-bytes for target cuda (issue 25)


def parse_bytes(text):
    for suffix, mult in UNITS.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * mult)
    return int(text)


def plan_total(tgc, spec, sets, batch):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        args = [tgc, "plan", spec, "--json", f.name, "--set", f"training.batch_size={batch}"]
        for s in sets:
            args += ["--set", s]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(f.name))["total_bytes"]


def main():
    tgc, spec, memory = sys.argv[1], sys.argv[2], sys.argv[3]
    sets = [a for a in sys.argv[4:] if a != "--set"]
    m = parse_bytes(memory)
    args = [tgc, "plan", spec, "--max-batch", "--memory", memory]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    line = re.search(r"max micro-batch: (\d+) \(plan (\d+) bytes \+ CUDA context reserve "
                     r"(\d+) bytes of (\d+) available\)", out)
    if not line:
        print(f"max-batch: FAIL: no max micro-batch line with the reserve in:\n{out}")
        sys.exit(1)
    n, reserve = int(line.group(1)), int(line.group(3))
    ok = n >= 1 and reserve == CUDA_CONTEXT_BYTES and int(line.group(4)) == m
    p_n = plan_total(tgc, spec, sets, n) if n >= 1 else 0
    p_next = plan_total(tgc, spec, sets, n + 1)
    ok = ok and p_n == int(line.group(2)) and p_n + reserve <= m < p_next + reserve
    print(f"max-batch: {' '.join(sets) or 'defaults'}: {n} fits (plan {p_n} + {reserve} <= "
          f"{m}), {n + 1} does not (plan {p_next} + {reserve} > {m}): "
          f"{'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
