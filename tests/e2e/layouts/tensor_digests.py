"""Prints one line per tensor of safetensors files: name, dtype, shape, sha256 of its bytes.

Usage: tensor_digests.py FILE_OR_DIR... (a directory: every *.safetensors in it). Standard
library only, so that the layout tests compare checkpoints without the venv.
"""
import hashlib
import json
import os
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        start = 8 + length
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            f.seek(start + begin)
            data = f.read(end - begin)
            if len(data) != end - begin:
                sys.exit(f"{path}: {name} is truncated")
            yield name, entry["dtype"], entry["shape"], hashlib.sha256(data).hexdigest()


def main():
    lines = {}
    for arg in sys.argv[1:]:
        files = (
            [os.path.join(arg, n) for n in sorted(os.listdir(arg)) if n.endswith(".safetensors")]
            if os.path.isdir(arg)
            else [arg]
        )
        for path in files:
            for name, dtype, shape, digest in tensors(path):
                if name in lines:
                    sys.exit(f"{path}: {name} is stored twice")
                lines[name] = f"{name} {dtype} {shape} {digest}"
    for name in sorted(lines):
        print(lines[name])


main()
