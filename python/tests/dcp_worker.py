"""One rank of a PyTorch DCP load, launched by test_load_dcp.py with
`torchrun --nproc-per-node 4 dcp_worker.py CHECKPOINT REFERENCE`: loads every tensor of REFERENCE
(a 1-rank checkpoint file holding whole tensors, or a program.json, whose persistent parameters
are then loaded without a reference to compare with) from CHECKPOINT with
torch.distributed.checkpoint.load and HuggingFaceStorageReader into DTensors on a 2x2 CPU mesh
(gloo), each tensor with its own placements, and checks every local shard bitwise against the
matching slice of REFERENCE. On any difference it prints "shards differ", naming tensors, and
exits 1; when the load itself raises (what a half-written checkpoint must make it do) it prints
"DCP load raised" and the exception and exits 2. torchrun exits 1 on either."""

import itertools
import json
import sys
import traceback

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from safetensors import safe_open
from torch.distributed.checkpoint import HuggingFaceStorageReader
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

# Every tensor gets the next placements of its rank's list, so each kind of shard is loaded:
# split on both mesh axes, on one with the other replicated, on one dim by both axes, replicated.
PLACEMENTS = {
    1: [(Shard(0), Replicate()), (Replicate(), Shard(0)), (Shard(0), Shard(0)),
        (Replicate(), Replicate())],
    2: [(Shard(0), Shard(1)), (Replicate(), Shard(0)), (Shard(1), Replicate()),
        (Shard(1), Shard(0)), (Shard(0), Shard(0)), (Replicate(), Replicate())],
}


DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "BOOL": torch.bool}


def reference_tensors(path):
    if path.endswith(".json"):
        with open(path) as f:
            params = [p for p in json.load(f)["params"] if p["persistent"]]
        return {p["name"]: torch.zeros(p["shape"], dtype=DTYPES[p["dtype"]]) for p in params}
    with safe_open(path, framework="pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def as_bytes(t):
    t = t.contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def main(checkpoint, reference):
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    whole = reference_tensors(reference)
    cycles = {rank: itertools.cycle(p) for rank, p in PLACEMENTS.items()}
    state, expected = {}, {}
    for name in sorted(whole):
        tensor = whole[name]
        placements = next(cycles[tensor.dim()])
        shape, offset = compute_local_shape_and_global_offset(tensor.shape, mesh, placements)
        # A value no initialization gives, so a shard the load leaves alone cannot pass.
        local = torch.full(shape, float("nan") if tensor.is_floating_point() else True,
                           dtype=tensor.dtype)
        state[name] = DTensor.from_local(local, mesh, placements, run_check=False,
                                         shape=tensor.shape, stride=tensor.stride())
        index = tuple(slice(o, o + s) for o, s in zip(offset, shape))
        expected[name] = (tensor[index], placements)
    try:
        dcp.load(state, storage_reader=HuggingFaceStorageReader(checkpoint))
    # The failure a caller tests for (CheckpointException, which gathers every rank's error, is
    # not an Exception): reported, and told apart from a wrong load.
    except (Exception, CheckpointException):
        print("rank %d: DCP load raised:\n%s" % (dist.get_rank(), traceback.format_exc()),
              file=sys.stderr)
        dist.destroy_process_group()
        return 2
    bad = [name for name in sorted(state)
           if as_bytes(state[name].to_local()) != as_bytes(expected[name][0])]
    dist.barrier()
    if bad:
        print("rank %d: %d shards differ from the reference, e.g. %s" % (
            dist.get_rank(), len(bad), ", ".join("%s %s" % (n, expected[n][1]) for n in bad[:3])),
            file=sys.stderr)
    if dist.get_rank() == 0 and not bad:
        print("loaded %d tensors" % len(state))
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
