#!/usr/bin/env python3
"""Token files in llm.c's format for timing llm.c's train_gpt2cu (bench/llmc_step.sh, docs/llmc.md).

Format (llm.c dev/data/data_common.py write_datafile, read by llmc/dataloader.h): a header of
256 int32 (little-endian): [0] magic 20240520, [1] version 1, [2] token count; then the tokens
as uint16. The tokens here are uniform random in [0, 50257) (GPT-2's vocabulary): timing only,
no text (the step time does not depend on token values). numpy only.

  bench/llmc_data.py DIR [--train-tokens N] [--val-tokens N] [--seed S]
      writes DIR/llmc_train.bin and DIR/llmc_val.bin and reads both back to check them
  bench/llmc_data.py --check FILE...   validates existing files (header, size, token range)

llm.c's loader needs at least B*T+1 tokens per file (micro-batch B, context T; 16*1024+1 for
bench/llmc_step.sh) and seeks with an int offset (files < 2 GiB)."""
import argparse, os, sys
import numpy as np

MAGIC, VERSION, HEADER_INTS, VOCAB = 20240520, 1, 256, 50257


def write(path, ntok, rng):
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[0], header[1], header[2] = MAGIC, VERSION, ntok
    toks = rng.integers(0, VOCAB, size=ntok, dtype=np.uint16)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(toks.astype("<u2", copy=False).tobytes())


def check(path):
    size = os.path.getsize(path)
    header = np.fromfile(path, dtype="<i4", count=HEADER_INTS)
    if len(header) != HEADER_INTS or header[0] != MAGIC or header[1] != VERSION:
        raise SystemExit(f"{path}: bad header {header[:3].tolist()}")
    ntok = int(header[2])
    if ntok <= 0 or size != HEADER_INTS * 4 + 2 * ntok:
        raise SystemExit(f"{path}: {ntok} tokens in the header but {size} bytes")
    toks = np.fromfile(path, dtype="<u2", offset=HEADER_INTS * 4)
    if len(toks) != ntok or int(toks.max()) >= VOCAB:
        raise SystemExit(f"{path}: {len(toks)} tokens read, max {int(toks.max())}")
    print(f"{path}: ok, magic {MAGIC} version {VERSION}, {ntok} tokens, "
          f"range [{int(toks.min())}, {int(toks.max())}], {size} bytes")
    return ntok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--train-tokens", type=int, default=1 << 22)  # 4.2M tokens, 8 MiB
    ap.add_argument("--val-tokens", type=int, default=1 << 16)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--check", nargs="+", metavar="FILE")
    a = ap.parse_args()
    if a.check:
        for p in a.check:
            check(p)
        return
    if not a.dir:
        ap.error("DIR or --check FILE... is required")
    for n in (a.train_tokens, a.val_tokens):
        if not 0 < n < (1 << 30) - HEADER_INTS * 2:
            ap.error(f"token count {n} out of range (1 .. 2^30: llm.c seeks with an int)")
    os.makedirs(a.dir, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for name, n in (("llmc_train.bin", a.train_tokens), ("llmc_val.bin", a.val_tokens)):
        p = os.path.join(a.dir, name)
        write(p, n, rng)
        check(p)


if __name__ == "__main__":
    sys.exit(main())
