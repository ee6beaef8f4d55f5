"""Checks the rule of runtime/cuda/Pdl.cuh: in every CUDA source that launches kernels with
launchDependent (programmatic dependent launch), every __global__ kernel's first statement
is pdlWait(), so that no kernel launched that way reads or writes global memory before the
kernel before it has completed. A kernel without it would race with its predecessor on the
GPU, and nothing on the CPU (the emulator) would notice.

Usage: check_pdl_wait.py FILE...   Prints one line per kernel checked; exits 1, naming the
file, line and kernel, when a kernel of a launching file does not begin with pdlWait().
"""
import re
import sys


def balanced(s, i):
    """s[i] == '(': the index after its matching ')'."""
    depth = 0
    while True:
        if s[i] == "(":
            depth += 1
        elif s[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


def kernels(src):
    """(name, line, first statement) of each __global__ function in src."""
    for m in re.finditer(r"__global__\s+void\s+", src):
        i = m.end()
        lb = re.match(r"__launch_bounds__\s*", src[i:])
        if lb:
            i = balanced(src, i + lb.end())
        name = re.match(r"\s*(\w+)\s*", src[i:])
        i += name.end()
        i = balanced(src, i)
        body = src.index("{", i) + 1
        first = src[body:].lstrip().split(";", 1)[0].strip() + ";"
        yield name.group(1), src.count("\n", 0, m.start()) + 1, first


def main(paths):
    bad = 0
    for path in paths:
        src = open(path).read()
        if "launchDependent(" not in src:
            continue
        for name, line, first in kernels(src):
            if first == "pdlWait();":
                print("ok %s:%d %s" % (path, line, name))
            else:
                print("error: %s:%d: kernel %s is launched with launchDependent's file but its "
                      "first statement is `%s`, not pdlWait();" % (path, line, name, first))
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
