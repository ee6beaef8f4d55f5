"""Edits a safetensors checkpoint the way disks, people and older versions do (test helper).

usage: checkpoint_edit.py flip FILE TENSOR INDEX
           flips the lowest bit of float32 element INDEX of TENSOR in place (still finite;
           its checksum, if any, is left as it was: a corrupted byte)
       checkpoint_edit.py strip SRC DST KEY [KEY ...]
           writes SRC without the __metadata__ entries KEY (a KEY ending in '*' is a prefix:
           "crc32.*"), the tensors byte for byte: e.g. a checkpoint from before checksums
           ("checksums crc32.*") or without the spec ("spec")
       checkpoint_edit.py transpose SRC DST TENSOR
           writes SRC with the 2-D float32 TENSOR transposed (shape and data; its crc32
           metadata, if any, recomputed): e.g. an untied lm_head in the [D, V] layout of
           checkpoints before 2026-12-02

Standard library only.
"""
import json
import array
import struct
import sys
import zlib


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


def transpose(src, dst, name):
    _, header, data = read(src)
    if name not in header or len(header[name]["shape"]) != 2 or header[name]["dtype"] != "F32":
        sys.exit(f"{src}: no 2-D F32 tensor {name!r}")
    rows, cols = header[name]["shape"]
    begin, end = header[name]["data_offsets"]
    a = array.array("f", data[begin:end])
    if sys.byteorder != "little":
        a.byteswap()
    t = array.array("f", (a[r * cols + c] for c in range(cols) for r in range(rows)))
    if sys.byteorder != "little":
        t.byteswap()
    header[name]["shape"] = [cols, rows]
    meta = header.get("__metadata__", {})
    if "crc32." + name in meta:
        meta["crc32." + name] = "%08x" % zlib.crc32(t.tobytes())
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data[:begin] + t.tobytes() + data[end:])


def main(argv):
    if len(argv) == 5 and argv[1] == "flip":
        flip(argv[2], argv[3], int(argv[4]))
    elif len(argv) >= 5 and argv[1] == "strip":
        strip(argv[2], argv[3], argv[4:])
    elif len(argv) == 5 and argv[1] == "transpose":
        transpose(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__.strip())


if __name__ == "__main__":
    main(sys.argv)
