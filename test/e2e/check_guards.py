"""Checks the non-finite checks in the C++ that `tgc compile --emit=cpp` prints (test helper).

usage: check_guards.py FILE.cpp

In each step function (tg_micro_step, tg_optimizer_step, tg_eval_step): the flag
`bool vF = tgrt_check_enabled(ctx);` comes first, and every runtime call that writes a tensor
(every tgrt_* call but tgrt_region, tgrt_zero, tgrt_report_loss and the checks themselves) is
followed by `if (vF) {`, `tgrt_check_op(ctx, &kCheckSites[i]);`, `}`, with i counting up from
0 across the file, one site per call. A `tgrt_check_inputs` block before a call names the same
site as the check after it. Prints the number of guarded calls; exits 1 with the first
offending line otherwise.
"""
import re
import sys

UNCHECKED = {"region", "zero", "report_loss", "check_enabled", "check_op", "check_inputs"}


def fail(lineno, msg, line=""):
    sys.exit(f"check_guards.py: line {lineno}: {msg}: {line.strip()}")


def main(path):
    lines = open(path).read().splitlines()
    flag = None
    site = 0
    calls = inputs = 0
    pending_inputs = None  # site named by a tgrt_check_inputs block not yet matched
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('extern "C" void tg_'):
            m = re.match(r"\s*bool (v\d+) = tgrt_check_enabled\(v\d+\);$", lines[i + 3])
            if not m:
                fail(i + 4, "no tgrt_check_enabled flag after the region bases", lines[i + 3])
            flag = m.group(1)
        m = re.match(r"\s*if \((v\d+)\) \{$", line)
        if m and m.group(1) == flag:
            mi = re.match(r"\s*tgrt_check_inputs\(v\d+, &kCheckSites\[(\d+)\]\);$", lines[i + 1])
            if not mi or lines[i + 2].strip() != "}":
                fail(i + 1, "an if (flag) block that is not a tgrt_check_inputs call", line)
            pending_inputs = int(mi.group(1))
            inputs += 1
            i += 3
            continue
        m = re.match(r"\s*tgrt_(\w+)\(", line)
        if m and m.group(1) not in UNCHECKED:
            guard = lines[i + 1:i + 4]
            want = [f"if ({flag}) {{", None, "}"]
            mo = re.match(r"\s*tgrt_check_op\(v\d+, &kCheckSites\[(\d+)\]\);$", guard[1])
            if guard[0].strip() != want[0] or not mo or guard[2].strip() != "}":
                fail(i + 1, "runtime call not followed by its guarded tgrt_check_op", line)
            if int(mo.group(1)) != site:
                fail(i + 3, f"expected site {site}", guard[1])
            if pending_inputs is not None and pending_inputs != site:
                fail(i + 1, f"tgrt_check_inputs names site {pending_inputs}, the call {site}", line)
            pending_inputs = None
            site += 1
            calls += 1
            i += 4
            continue
        i += 1
    m = re.search(r"static const tgrt_check_site kCheckSites\[(\d+)\]", "\n".join(lines))
    if not m or int(m.group(1)) != site:
        sys.exit(f"check_guards.py: kCheckSites has {m.group(1) if m else 'no'} entries, "
                 f"{site} calls are checked")
    print(f"{calls} runtime calls guarded by one flag each ({inputs} in-place calls also "
          f"check their inputs before the call)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1])
