"""A training executable's stdout into a file survives a kill (issue 25, item 2; test helper).

usage: stdout_kill.py OUTFILE TRAIN [ARG ...]

Starts TRAIN ARG... with stdout redirected to OUTFILE (a regular file: the C library would
block-buffer it by default), waits until a line starting with "step 1/" is in the file
(60 s at most), kills the process with SIGKILL (no exit handlers, no flush) and checks that
the file still holds that line, and that every line of it is complete. Prints
"stdout-kill: PASS (N lines)" or exits 1.
"""
import os
import signal
import subprocess
import sys
import time


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__.strip().splitlines()[2])
    out, cmd = argv[1], argv[2:]
    with open(out, "wb") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    seen = False
    while time.time() < deadline and p.poll() is None:
        with open(out, "rb") as f:
            text = f.read().decode(errors="replace")
        if any(line.startswith("step 1/") for line in text.splitlines()):
            seen = True
            break
        time.sleep(0.05)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    p.wait()
    with open(out, "rb") as f:
        text = f.read().decode(errors="replace")
    lines = text.splitlines()
    if not seen or not any(line.startswith("step 1/") for line in lines):
        print(text)
        sys.exit("stdout-kill: FAIL: no 'step 1/' line in %s (status %s)" % (out, p.returncode))
    if p.returncode != -signal.SIGKILL:
        sys.exit("stdout-kill: FAIL: the run ended by itself (status %s) before the kill; give "
                 "it more steps" % p.returncode)
    if text and not text.endswith("\n"):
        sys.exit("stdout-kill: FAIL: the file ends inside a line: %r" % lines[-1])
    print("stdout-kill: PASS (%d lines)" % len(lines))


if __name__ == "__main__":
    main(sys.argv)
