#!/usr/bin/env python3
"""Checks a directory `initc assemble CKPT -o DIR` wrote against the one file the same checkpoint
assembles to: `hf_dir_check.py DIR ONE.safetensors [--max-shard-size BYTES] [--files N |
--min-files N]`. Every model-0000k-of-0000n.safetensors is valid safetensors in the reference
writer's layout, within the size limit unless it holds one tensor alone; together they hold
exactly the one file's tensors, bitwise; model.safetensors.index.json maps every tensor and tied
name to the file holding it, with the total size; initc-checkpoint.json lists the files and
where each tensor is."""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_check import FormatError, validate  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("one")
    parser.add_argument("--max-shard-size", type=int, default=5_000_000_000)
    parser.add_argument("--files", type=int)
    parser.add_argument("--min-files", type=int)
    args = parser.parse_args()

    one = open(args.one, "rb").read()
    one_meta, one_tensors = validate(one)

    names = sorted(os.listdir(args.dir))
    files = [n for n in names if re.fullmatch(r"model-\d{5}-of-\d{5}\.safetensors", n)]
    if not files:
        raise FormatError("no model-*.safetensors file")
    if args.files is not None and len(files) != args.files:
        raise FormatError(f"{len(files)} files, expected {args.files}")
    if args.min_files is not None and len(files) < args.min_files:
        raise FormatError(f"{len(files)} files, expected at least {args.min_files}")
    for k, name in enumerate(files, 1):
        if name != f"model-{k:05d}-of-{len(files):05d}.safetensors":
            raise FormatError(f"{name}: not file {k} of {len(files)}")
    others = set(names) - set(files) - {"model.safetensors.index.json", "initc-checkpoint.json",
                                        "config.json", ".initc"}
    if others:
        raise FormatError(f"unexpected files {sorted(others)}")

    where = {}
    for name in files:
        data = open(os.path.join(args.dir, name), "rb").read()
        meta, tensors = validate(data)
        if meta != {"format": "pt"}:
            raise FormatError(f"{name}: __metadata__ {meta}")
        held = sum(end - begin for _, _, begin, end in tensors.values())
        if held > args.max_shard_size and len(tensors) > 1:
            raise FormatError(f"{name}: {held} bytes of tensors over the limit")
        for tensor, (dtype, shape, begin, end) in tensors.items():
            if tensor in where:
                raise FormatError(f"{tensor} in {where[tensor][0]} and {name}")
            if tensor not in one_tensors:
                raise FormatError(f"{name}: {tensor} is not in {args.one}")
            o_dtype, o_shape, o_begin, o_end = one_tensors[tensor]
            if (dtype, shape) != (o_dtype, o_shape) or data[begin:end] != one[o_begin:o_end]:
                raise FormatError(f"{tensor} in {name} differs from {args.one}")
            where[tensor] = (name, begin)
    missing = set(one_tensors) - set(where)
    if missing:
        raise FormatError(f"tensors missing: {sorted(missing)[:5]}")

    index = json.load(open(os.path.join(args.dir, "model.safetensors.index.json")))
    # Tied names (aliases) are not listed, as save_pretrained does not list them.
    expected_map = {t: where[t][0] for t in where}
    if index["weight_map"] != expected_map:
        raise FormatError("the index's weight_map is not where the tensors are")
    total = sum(end - begin for _, _, begin, end in one_tensors.values())
    if index["metadata"]["total_size"] != total:
        raise FormatError(f"total_size {index['metadata']['total_size']}, tensors hold {total}")

    record = json.load(open(os.path.join(args.dir, "initc-checkpoint.json")))
    if record["format"] != "initc-hf" or record["version"] != 2:
        raise FormatError("initc-checkpoint.json is not an initc-hf record")
    sizes = {f["name"]: f["size"] for f in record["files"]}
    if sizes != {n: os.path.getsize(os.path.join(args.dir, n)) for n in files}:
        raise FormatError("initc-checkpoint.json does not list the files and their sizes")
    for tensor, entry in record["tensors"].items():
        if (entry["file"], entry["offset"]) != where[tensor]:
            raise FormatError(f"initc-checkpoint.json places {tensor} elsewhere")
    print(f"{args.dir}: {len(files)} files, {len(where)} tensors, equal to {args.one}")


if __name__ == "__main__":
    try:
        main()
    except (FormatError, KeyError, ValueError, OSError) as e:
        print(f"hf_dir_check: {e}", file=sys.stderr)
        sys.exit(1)
