"""The final evaluation covers every window, whatever the micro-batch (issue 25, item 6).

usage: eval_windows.py DATA CONTEXT LOG:BATCH [LOG:BATCH ...]

Each LOG is the --log of a run of the same weights compiled with micro-batch BATCH. For val
and test (DATA/SPLIT.npy) the final {"eval": SPLIT, "final": true} record of every log must
report windows = (tokens - 1) // CONTEXT (all of them), batches = ceil(windows / BATCH), and
losses equal to 1e-6 relative across the logs. At least one BATCH must not divide the window
count, else the check could not tell padding from dropping. Prints one line per split and
"eval-windows: PASS", or exits 1.
"""
import json
import os
import struct
import sys


def npy_len(path):
    with open(path, "rb") as f:
        head = f.read(10)
        major = head[6]
        n = struct.unpack("<H", head[8:10])[0] if major == 1 else struct.unpack("<I", head[8:12])[0]
        f.seek(0)
        hdr = f.read((10 if major == 1 else 12) + n).decode("latin1")
    shape = hdr[hdr.index("'shape'"):]
    return int(shape[shape.index("(") + 1:shape.index(",")])


def final(log):
    out = {}
    with open(log) as f:
        for line in f:
            r = json.loads(line)
            if r.get("final") and "eval" in r:
                out[r["eval"]] = r
    return out


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__.strip().splitlines()[2])
    data, T = argv[1], int(argv[2])
    runs = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in argv[3:]]
    discriminating = False
    for split in ("val", "test"):
        path = os.path.join(data, split + ".npy")
        if not os.path.exists(path):
            continue
        windows = (npy_len(path) - 1) // T
        losses = []
        for log, B in runs:
            r = final(log).get(split)
            if r is None:
                sys.exit(f"eval-windows: FAIL: no final {split} record in {log}")
            want_batches = (windows + B - 1) // B
            if r.get("windows") != windows or r.get("batches") != want_batches:
                sys.exit(f"eval-windows: FAIL: {log}: {split} windows {r.get('windows')} batches "
                         f"{r.get('batches')}, expected {windows} and {want_batches}")
            discriminating = discriminating or windows % B != 0
            losses.append(r["loss"])
        spread = (max(losses) - min(losses)) / abs(losses[0])
        print(f"{split}: {windows} windows; losses " + ", ".join(
            f"{l:.9f} (batch {B})" for l, (_, B) in zip(losses, runs)) + f"; spread {spread:.1e}")
        if not spread <= 1e-6:
            sys.exit(f"eval-windows: FAIL: {split} losses differ by {spread:.2e} relative")
    if not discriminating:
        sys.exit("eval-windows: FAIL: every micro-batch divides the window counts; pick one "
                 "that does not")
    print("eval-windows: PASS")


if __name__ == "__main__":
    main(sys.argv)
