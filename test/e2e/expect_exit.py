"""Runs a command and checks its exit status (test helper).

usage: expect_exit.py STATUS OUTFILE COMMAND [ARG ...]

Runs COMMAND with stdout and stderr together written to OUTFILE; exits 0 when the command's
status is STATUS, else prints both and exits 1 (lit's `not` accepts any non-zero status).
"""
import subprocess
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__.strip().splitlines()[2])
    want, out = int(argv[1]), argv[2]
    with open(out, "wb") as f:
        rc = subprocess.run(argv[3:], stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != want:
        sys.stdout.write(open(out, errors="replace").read())
        print(f"expect_exit.py: {argv[3]} exited with status {rc}, expected {want}")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
