"""safetensors.safe_open (frameworks "pt" and "numpy") reads every file of every layout that
prog/init writes (hf, dcp, ranks): every tensor readable and equal to the 1-rank tensors, the
metadata exactly as ir-spec/checkpoint.md specifies it, each element stored exactly once (hf,
dcp), and nothing else in the directory."""

import json
import os
import re
import struct

import numpy as np
import pytest
from safetensors import safe_open

from clients import mesh_size, read_json, torch_bytes

CONFIG = "llama_uneven.json"
MESH, SHARD = "dp=2,tp=2", "tp"
CHECKSUM = re.compile(r"^[0-9a-f]{16}$")
# numpy has no bfloat16: that program is read with "pt" only.
READS = [("bf16", "pt"), ("f32", "pt"), ("f32", "numpy")]


def header(path):
    """The file's safetensors header, parsed from its bytes."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        return size, json.loads(f.read(size))


def read_all(path, framework):
    """Every tensor of the file as (bytes, shape, dtype name), and the file's metadata."""
    tensors = {}
    with safe_open(str(path), framework=framework) as f:
        metadata = f.metadata()
        for name in f.keys():
            value = f.get_tensor(name)
            data = np.ascontiguousarray(value).tobytes() if framework == "numpy" else torch_bytes(value)
            tensors[name] = (data, tuple(value.shape), f.get_slice(name).get_dtype())
    return tensors, metadata


def persistent_params(prog):
    return [p for p in read_json(prog / "program.json")["params"] if p["persistent"]]


def box_bytes(reference, name, offset, shape):
    return torch_bytes(reference[name][tuple(slice(o, o + s) for o, s in zip(offset, shape))])


class Coverage:
    """Counts how often each element of each tensor is stored: every one exactly once."""

    def __init__(self, params):
        self.counts = {p["name"]: np.zeros(p["shape"], dtype=np.int32) for p in params}

    def add(self, name, offset, shape):
        assert len(offset) == len(shape) == self.counts[name].ndim, name
        index = tuple(slice(o, o + s) for o, s in zip(offset, shape))
        assert all(o + s <= n for o, s, n in zip(offset, shape, self.counts[name].shape)), name
        self.counts[name][index] += 1

    def check(self):
        for name, counts in self.counts.items():
            assert (counts == 1).all(), "%s: elements stored %s times" % (
                name, sorted(set(np.unique(counts)) - {1}))


def program_and_reference(checkpoints, dtype):
    return checkpoints.program(CONFIG, dtype, MESH, SHARD), checkpoints.reference(CONFIG, dtype)


@pytest.mark.parametrize("dtype,framework", READS)
def test_hf_files(checkpoints, dtype, framework):
    directory = checkpoints.get(CONFIG, "hf", dtype, MESH, SHARD, options=("--max-shard-size", "100KB"))
    prog, reference = program_and_reference(checkpoints, dtype)
    program = read_json(prog / "program.json")
    params = persistent_params(prog)
    index = read_json(directory / "model.safetensors.index.json")
    record = read_json(directory / "initc-checkpoint.json")
    files = sorted(set(index["weight_map"].values()))
    count = len(files)
    assert count > 1
    assert files == ["model-%05d-of-%05d.safetensors" % (k + 1, count) for k in range(count)]
    assert sorted(os.listdir(directory)) == sorted(
        files + ["model.safetensors.index.json", "initc-checkpoint.json", "config.json", ".initc"])
    world = mesh_size(MESH)
    assert sorted(os.listdir(directory / ".initc")) == ["rank-%05d.sums" % r for r in range(world)]
    assert isinstance(read_json(directory / "config.json"), dict)

    assert record["format"] == "initc-hf" and record["version"] == 2
    assert record["program_id"] == program["program_id"] and record["model"] == program["model"]
    assert record["mesh"] == program["mesh"]
    assert record["max_shard_size"] == 100000
    assert record["write_boxes"] == {"rule": "replicas-split-rows", "min_box_bytes": 1 << 20}
    assert record["sums"] == {"dir": ".initc", "ranks": world}
    assert record["files"] == [{"name": n, "size": os.path.getsize(directory / n)} for n in files]
    assert list(record["tensors"]) == [p["name"] for p in params] or \
        set(record["tensors"]) == {p["name"] for p in params}

    coverage = Coverage(params)
    total = 0
    for name in files:
        tensors, metadata = read_all(directory / name, framework)
        assert metadata == {"format": "pt"}, metadata
        size, head = header(directory / name)
        for key, (data, shape, dtype_name) in tensors.items():
            entry = record["tensors"][key]
            assert index["weight_map"][key] == name == entry["file"]
            assert entry["dtype"] == dtype_name == head[key]["dtype"]
            assert entry["shape"] == list(shape) == list(reference[key].shape)
            assert entry["offset"] == 8 + size + head[key]["data_offsets"][0]
            assert data == torch_bytes(reference[key]), "%s differs from 1 rank" % key
            total += len(data)
    assert total == index["metadata"]["total_size"]
    for position, p in enumerate(params):
        entry = record["tensors"][p["name"]]
        assert entry["index"] == position
        assert entry["aliases"] == p["aliases"]
        # The program's sharding, its trailing unsplit dims left out.
        split = list(p["split_axes"])
        while split and not split[-1]:
            split.pop()
        assert entry["split_axes"] == split, p["name"]
    # The sums files: rank, world size and program in each header, one checksum per box, and
    # as many boxes in all as the dcp layout of the same job stores (the same writeBoxes).
    boxes = 0
    for rank in range(world):
        raw = (directory / ".initc" / ("rank-%05d.sums" % rank)).read_bytes()
        assert raw[:8] == b"INITCSUM"
        version, id_len, r, w, count = struct.unpack_from("<IIQQQ", raw, 8)
        assert (version, r, w) == (1, rank, world)
        assert raw[40:40 + id_len].decode() == program["program_id"]
        assert len(raw) == (40 + id_len + 7) // 8 * 8 + 8 * count + 8
        boxes += count
    dcp = checkpoints.get(CONFIG, "dcp", dtype, MESH, SHARD)
    stored = 0
    for rank in range(world):
        with safe_open(str(dcp / ("shard-%05d-of-%05d.safetensors" % (rank, world))), "np") as f:
            # Rank 0's file also lists the empty tensors, which no rank writes a box of.
            stored += sum(1 for key in json.loads(f.metadata()["DCP_SHARDING_INFO"])
                          if np.prod(f.get_slice(key).get_shape()) > 0)
    assert boxes == stored


@pytest.mark.parametrize("dtype,framework", READS)
def test_dcp_files(checkpoints, dtype, framework):
    directory = checkpoints.get(CONFIG, "dcp", dtype, MESH, SHARD)
    prog, reference = program_and_reference(checkpoints, dtype)
    program = read_json(prog / "program.json")
    params = persistent_params(prog)
    by_name = {p["name"]: (position, p) for position, p in enumerate(params)}
    world = mesh_size(MESH)
    files = ["shard-%05d-of-%05d.safetensors" % (k, world) for k in range(world)]
    assert sorted(os.listdir(directory)) == files
    coverage = Coverage(params)
    for rank, name in enumerate(files):
        tensors, metadata = read_all(directory / name, framework)
        # The keys in the specified order (as the header stores them), DCP's writer's values.
        assert list(header(directory / name)[1]["__metadata__"]) == [
            "format", "DCP_VERSION", "DCP_SHARDING_INFO", "initc"], metadata
        assert metadata["format"] == "pt" and metadata["DCP_VERSION"] == "1.0"
        sharding = json.loads(metadata["DCP_SHARDING_INFO"])
        assert metadata["DCP_SHARDING_INFO"] == json.dumps(sharding)
        initc = json.loads(metadata["initc"])
        assert set(sharding) == set(tensors) == set(initc["tensors"])
        assert initc["format"] == "initc-dcp" and initc["version"] == 1
        assert initc["program_id"] == program["program_id"] and initc["mesh"] == program["mesh"]
        assert initc["model"] == program["model"]
        assert initc["rank"] == rank and initc["world_size"] == world
        for key, (data, shape, dtype_name) in tensors.items():
            position, p = by_name[key]
            entry = initc["tensors"][key]
            assert set(sharding[key]) == {"saved_offsets"}
            offset = sharding[key]["saved_offsets"]
            assert entry["global_shape"] == p["shape"] and dtype_name == p["dtype"]
            assert entry["index"] == position and entry["aliases"] == p["aliases"]
            assert CHECKSUM.match(entry["checksum"])
            coverage.add(key, offset, shape)
            assert data == box_bytes(reference, key, offset, shape), "%s differs" % key
    coverage.check()


@pytest.mark.parametrize("dtype,framework", READS)
def test_ranks_files(checkpoints, dtype, framework):
    directory = checkpoints.get(CONFIG, "ranks", dtype, MESH, SHARD)
    _, reference = program_and_reference(checkpoints, dtype)
    world = mesh_size(MESH)
    files = ["rank-%05d-of-%05d.safetensors" % (k, world) for k in range(world)]
    assert sorted(n for n in os.listdir(directory) if n.endswith(".safetensors")) == files
    for name in files:
        tensors, metadata = read_all(directory / name, framework)
        assert metadata["format"] == "pt"
        slices = json.loads(metadata["initc.tensors"])
        assert set(slices) == set(tensors) == set(reference)
        for key, (data, shape, _) in tensors.items():
            assert slices[key]["global_shape"] == list(reference[key].shape)
            assert data == box_bytes(reference, key, slices[key]["offset"], shape), key
