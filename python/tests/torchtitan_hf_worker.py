"""One process of test_trainer_presets.py's torchrun job (gloo, CPU) for the preset's
transformers names, which torchtitan's own model (torchtitan_worker.py) does not have:
LlamaForCausalLM built on the meta device and laid out as torchtitan's parallelize_llama lays
out its llama (apply_tp's plan, then apply_fsdp's fully_shard of the embedding, each block, the
norm with the head, and the root) on a (dp_shard, tp) mesh, with transformers' module names for torchtitan's. Filled by
initc.torch.init_, every DTensor local shard must equal, shape for shape and bit for bit, the
tensor of the same name in this rank's file of a program compiled with `--shard torchtitan`:
the file holds exactly the rank's shard in torchtitan's layout.

    torchrun --nproc-per-node 4 torchtitan_hf_worker.py PROG CKPT CONFIG"""

import os
import sys

import torch
import torch.distributed as dist
from safetensors.torch import load_file
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                               SequenceParallel, parallelize_module)
from transformers import LlamaConfig, LlamaForCausalLM

import initc
import initc.torch
from torch_dist_worker import _bits, leave


def torchtitan_tp(model, tp_mesh):
    """apply_tp (torchtitan/models/llama3/infra/parallelize.py), the parameters' part."""
    parallelize_module(model, tp_mesh, {
        "model.embed_tokens": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "model.norm": SequenceParallel(),
        "lm_head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                   use_local_output=False)})
    for block in model.model.layers:
        parallelize_module(block, tp_mesh, {
            "input_layernorm": SequenceParallel(),
            "self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(),
            "self_attn.o_proj": RowwiseParallel(output_layouts=Shard(1)),
            "post_attention_layernorm": SequenceParallel(),
            "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(output_layouts=Shard(1))})


def torchtitan_fsdp(model, dp_mesh):
    """apply_fsdp: the embedding, every block, the norm and head together, then the root."""
    fully_shard(model.model.embed_tokens, mesh=dp_mesh)
    for block in model.model.layers:
        fully_shard(block, mesh=dp_mesh)
    fully_shard([model.model.norm, model.lm_head], mesh=dp_mesh)
    fully_shard(model, mesh=dp_mesh)


def main():
    prog, ckpt, config_path = sys.argv[1:4]
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    torch.set_num_threads(1)
    config = LlamaConfig.from_json_file(config_path)
    with torch.device("meta"):
        model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("dp_shard", "tp"))
    torchtitan_tp(model, mesh["tp"])
    torchtitan_fsdp(model, mesh["dp_shard"])
    initc.torch.init_(model, prog, threads=1)

    mine = load_file(os.path.join(ckpt, "rank-%05d-of-%05d.safetensors" % (rank, world)))
    state = model.state_dict()
    assert set(state) == set(mine), (sorted(set(state) ^ set(mine)))
    strided = 0
    for name, value in state.items():
        assert isinstance(value, DTensor), name
        strided += any(type(p).__name__ == "_StridedShard" for p in value.placements)
        local = value.to_local()
        assert tuple(local.shape) == tuple(mine[name].shape), \
            "rank %d: %s is %s in torchtitan's layout, %s in the file" % (
                rank, name, tuple(local.shape), tuple(mine[name].shape))
        assert _bits(local).equal(_bits(mine[name])), "rank %d: %s differs" % (rank, name)
    # FSDP2 over tensor-parallel Shard(0) weights nests: the case the preset exists for.
    assert strided, "no parameter has FSDP2 nested inside tensor parallelism"
    print("rank %d: %d tensors equal torchtitan's local shards (%d nested)"
          % (rank, len(state), strided), flush=True)
    leave()


if __name__ == "__main__":
    main()
