"""Sets elements of one float32 tensor of a safetensors checkpoint in place (test helper).

usage: set_tensor_value.py FILE.safetensors TENSOR INDEX VALUE [INDEX VALUE ...]

INDEX is a flat (row-major) element index, VALUE a float as Python reads it ("inf", "-inf",
"nan", "1e30"). The header and every other byte stay as they are, except that a checkpoint
recording tensor checksums (__metadata__ "crc32.TENSOR", 8 hex digits: the CRC-32 of the
tensor's bytes) gets that tensor's checksum updated in place, so that the value (and not a
checksum mismatch) is what a reader sees. Exits 1 with a message on an unknown tensor, a
tensor that is not F32 or an index out of range. Standard library only.
"""
import json
import struct
import sys
import zlib


def main(argv):
    if len(argv) < 5 or len(argv) % 2 == 0:
        sys.exit(__doc__.strip().splitlines()[2])
    path, name = argv[1], argv[2]
    with open(path, "r+b") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        if name not in header:
            sys.exit(f"{path}: no tensor {name!r}")
        info = header[name]
        if info["dtype"] != "F32":
            sys.exit(f"{path}: {name} has dtype {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        count = (end - begin) // 4
        for i in range(3, len(argv), 2):
            index, value = int(argv[i]), float(argv[i + 1])
            if not 0 <= index < count:
                sys.exit(f"{path}: {name} has {count} elements, index {index} is out of range")
            f.seek(8 + n + begin + 4 * index)
            f.write(struct.pack("<f", value))
        old = header.get("__metadata__", {}).get("crc32." + name)
        if old is not None:
            f.seek(8 + n + begin)
            crc = "%08x" % zlib.crc32(f.read(end - begin))
            f.seek(8)
            raw = f.read(n)
            key = json.dumps("crc32." + name).encode() + b":" + json.dumps(old).encode()
            if raw.count(key) != 1:
                sys.exit(f"{path}: cannot find the checksum entry of {name} in the header")
            f.seek(8 + raw.index(key) + len(key) - 9)
            f.write(crc.encode())


if __name__ == "__main__":
    main(sys.argv)
