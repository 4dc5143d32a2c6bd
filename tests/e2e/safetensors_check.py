#!/usr/bin/env python3
"""A strict safetensors reader, written from the format's rules (ir-spec/checkpoint.md and the
reference implementation's reader): used by the end-to-end tests to validate initc's output and to
load tensors as numpy arrays. Run alone: `safetensors_check.py FILE` validates FILE."""
import json
import struct
import sys

DTYPE_ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
               "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
               "C64", "F64", "I64", "U64"]
BITS = {"BOOL": 8, "U8": 8, "I8": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
        "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}


class FormatError(Exception):
    pass


def read_header(data):
    if len(data) < 8:
        raise FormatError("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > 100_000_000 or 8 + n > len(data):
        raise FormatError(f"header length {n} does not fit the file")
    raw = data[8:8 + n]
    if not raw.startswith(b"{"):
        raise FormatError("header does not start with '{'")
    if (8 + n) % 8:
        raise FormatError("data section is not 8-byte aligned")
    header = json.loads(raw.decode("utf-8"),
                        object_pairs_hook=lambda pairs: _no_duplicates(pairs))
    return n, header


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise FormatError("duplicate keys in the header")
    return dict(pairs)


def validate(data, check_writer_order=True):
    n, header = read_header(data)
    meta = header.pop("__metadata__", None)
    if meta is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise FormatError("__metadata__ must map strings to strings")
    entries = []
    for name, info in header.items():
        if set(info) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{name}: unexpected keys {sorted(info)}")
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in BITS:
            raise FormatError(f"{name}: unknown dtype {dtype}")
        count = 1
        for d in shape:
            if not isinstance(d, int) or d < 0:
                raise FormatError(f"{name}: bad shape {shape}")
            count *= d
        if end - begin != count * BITS[dtype] // 8 or end < begin:
            raise FormatError(f"{name}: {end - begin} bytes for {count} x {dtype}")
        entries.append((begin, end, name, dtype, shape))
    entries.sort()
    position = 0
    for begin, end, name, _, _ in entries:
        if begin != position:
            raise FormatError(f"{name}: starts at {begin}, expected {position} (hole or overlap)")
        position = end
    if 8 + n + position != len(data):
        raise FormatError(f"file length {len(data)} != {8 + n + position}")
    if check_writer_order:
        # The reference writer's layout: dtype alignment descending, then name ascending.
        expected = sorted(entries, key=lambda e: (-DTYPE_ORDER.index(e[3]), e[2]))
        if [e[2] for e in expected] != [e[2] for e in entries]:
            raise FormatError("tensors are not laid out in the reference writer's order")
    return meta, {name: (dtype, shape, 8 + n + begin, 8 + n + end)
                  for begin, end, name, dtype, shape in entries}


def load(path):
    """{name: numpy array (bf16 and f16 as float32)}, metadata."""
    import numpy as np
    data = open(path, "rb").read()
    meta, tensors = validate(data)
    out = {}
    for name, (dtype, shape, begin, end) in tensors.items():
        raw = data[begin:end]
        if dtype == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            np_type = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BOOL": "?", "I64": "<i8",
                       "I32": "<i4", "U8": "u1", "I8": "i1"}[dtype]
            array = np.frombuffer(raw, dtype=np_type)
            if dtype == "F16":
                array = array.astype(np.float32)
        out[name] = array.reshape(shape)
    return out, meta or {}


if __name__ == "__main__":
    try:
        meta, tensors = validate(open(sys.argv[1], "rb").read())
    except (FormatError, ValueError) as e:
        print(f"{sys.argv[1]}: invalid safetensors: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{sys.argv[1]}: valid safetensors, {len(tensors)} tensors")
