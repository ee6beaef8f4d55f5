"""Edits a safetensors checkpoint the way disks, people and older versions do (test helper).

usage: checkpoint_edit.py flip FILE TENSOR INDEX
           flips the lowest bit of float32 element INDEX of TENSOR in place (still finite;
           its checksum, if any, is left as it was: a corrupted byte)
       checkpoint_edit.py strip SRC DST KEY [KEY ...]
           writes SRC without the __metadata__ entries KEY (a KEY ending in '*' is a prefix:
           "crc32.*"), the tensors byte for byte: e.g. a checkpoint from before checksums
           ("checksums crc32.*") or without the spec ("spec")

Standard library only.
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return n, json.loads(raw[8:8 + n]), raw[8 + n:]


def flip(path, name, index):
    n, header, _ = read(path)
    if name not in header:
        sys.exit(f"{path}: no tensor {name!r}")
    begin, end = header[name]["data_offsets"]
    if not 0 <= index < (end - begin) // 4:
        sys.exit(f"{path}: {name} has {(end - begin) // 4} elements, index {index} is out of range")
    with open(path, "r+b") as f:
        f.seek(8 + n + begin + 4 * index)
        b = f.read(1)
        f.seek(8 + n + begin + 4 * index)
        f.write(bytes([b[0] ^ 1]))


def strip(src, dst, keys):
    _, header, data = read(src)
    meta = header.get("__metadata__", {})
    for k in list(meta):
        if any(k == key or (key.endswith("*") and k.startswith(key[:-1])) for key in keys):
            del meta[k]
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main(argv):
    if len(argv) == 5 and argv[1] == "flip":
        flip(argv[2], argv[3], int(argv[4]))
    elif len(argv) >= 5 and argv[1] == "strip":
        strip(argv[2], argv[3], argv[4:])
    else:
        sys.exit(__doc__.strip())


if __name__ == "__main__":
    main(sys.argv)
