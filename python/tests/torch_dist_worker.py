"""One process of test_torch_init.py's torchrun jobs (gloo, CPU): LlamaForCausalLM built on the
meta device, sharded with FSDP2, tensor parallelism or both, filled by initc.torch.init_; every
local shard must equal, bit for bit, DTensor's own shard of the reference checkpoint (the 1-rank
prog/init output), and one forward and backward must run.

    torchrun --nproc-per-node N torch_dist_worker.py MODE PROG REFERENCE CONFIG
    MODE: fsdp (1-D mesh of N), tp (1-D mesh of N), fsdp+tp (2 x N/2 mesh: dp, tp)"""

import os
import sys

import torch
import torch.distributed as dist
from safetensors.torch import load_file
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Replicate, distribute_tensor
from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                               parallelize_module)
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

import initc
import initc.torch


def tensor_parallel(model, mesh):
    for layer in model.model.layers:
        parallelize_module(layer, mesh, {
            "self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
            "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel()})
    # The uneven vocabulary (1001 rows) over the tp ranks.
    parallelize_module(model, mesh, {"lm_head": ColwiseParallel(output_layouts=Replicate())})


def main():
    mode, prog, reference, config_path = sys.argv[1:5]
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    rank = dist.get_rank()
    torch.set_num_threads(1)
    config = LlamaConfig.from_json_file(config_path)
    with torch.device("meta"):
        model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    if mode == "fsdp":
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    elif mode == "tp":
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
        tensor_parallel(model, mesh)
    elif mode == "fsdp+tp":
        mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("dp", "tp"))
        tensor_parallel(model, mesh["tp"])
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh["dp"])
        fully_shard(model, mesh=mesh["dp"])
    else:
        raise SystemExit("unknown mode " + mode)

    initc.torch.init_(model, prog, threads=1)

    expected = load_file(reference)
    state = model.state_dict()
    checked, sharded = 0, 0
    for name, value in state.items():
        want = expected[name]
        if isinstance(value, DTensor):
            # DTensor's own assembly of every rank's local shard (all-gather), and, where it can
            # shard the reference itself, its own cut of this rank's shard: both independent of
            # initc's box arithmetic.
            assert _bits(value.full_tensor()).equal(_bits(want)), \
                "rank %d: %s, gathered, differs" % (rank, name)
            if not any(type(p).__name__ == "_StridedShard" for p in value.placements):
                local = value.to_local()
                ref_local = _shard_of(want, value)
                assert local.shape == ref_local.shape, (name, local.shape, ref_local.shape)
                assert _bits(local).equal(_bits(ref_local)), "rank %d: %s differs" % (rank, name)
            sharded += 1
        else:
            assert _bits(value).equal(_bits(want)), "rank %d: %s differs" % (rank, name)
        checked += 1
    assert checked == len(expected), (checked, len(expected))
    # A buffer no checkpoint stores, filled too: what the model computes when built for real.
    with torch.device("cpu"):
        rotary = LlamaRotaryEmbedding(config)
    torch.testing.assert_close(model.model.rotary_emb.inv_freq, rotary.inv_freq)

    torch.manual_seed(0)
    tokens = torch.randint(0, config.vocab_size, (2, 16))
    out = model(input_ids=tokens, labels=tokens)
    out.loss.backward()
    loss = out.loss.full_tensor() if isinstance(out.loss, DTensor) else out.loss
    assert torch.isfinite(loss), loss
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads, "no gradient"
    print("rank %d: %d tensors (%d DTensors) bitwise equal; loss %.4f"
          % (rank, checked, sharded, float(loss.detach())), flush=True)
    leave()


def leave():
    """Ends a worker whose checks are all done. torch's threads of gloo and FSDP2 can still be
    joinable at interpreter teardown ("terminate called without an active exception", SIGABRT,
    now and then on rank 0), which would fail a run whose results are all in: leave without
    tearing the interpreter down."""
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _bits(tensor):
    """The tensor's bits as integers: equal means bitwise equal (NaNs and -0.0 included)."""
    return tensor.detach().contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32,
                                              8: torch.int64}[tensor.element_size()])


def _shard_of(full, dtensor):
    """The local shard DTensor itself cuts from `full` for this rank: distribute_tensor with
    the same mesh and placements (every rank passes the same full tensor)."""
    return distribute_tensor(full, dtensor.device_mesh, dtensor.placements).to_local()


if __name__ == "__main__":
    main()
