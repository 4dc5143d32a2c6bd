"""One process of test_trainer_presets.py's torchrun job (gloo, CPU): torchtitan 0.3.0's own
llama3 (torchtitan_model.py) parallelized by torchtitan's own code as its Trainer calls it
(ParallelDims.from_config and build_mesh, the model config's update_from_config, the model built
on the meta device, then parallelize_llama: apply_tp's plan and FSDP2's fully_shard; with pp,
pipeline_llm, which splits the stages by torchtitan's _generate_llm_fqn_per_model_part and
parallelizes each). Filled by initc.torch.init_ from PROG, on every rank:
  - every DTensor's local shard equals, shape for shape and bit for bit, the tensor of the same
    name in this rank's file of PROG (compiled with `--shard torchtitan`): the file holds exactly
    the rank's shard in torchtitan's layout;
  - every DTensor's full tensor equals, bit for bit, the tensor in REF, a 1-rank program's file;
  - without pp, one forward step runs to a finite loss.

    torchrun --nproc-per-node 4 torchtitan_worker.py MESH PROG CKPT REF

MESH is pp=P,dp_shard=D,tp=T (any subset). The IR has torchtitan's own state-dict names."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.distributed.tensor import DTensor
from torch.nn.attention.flex_attention import create_block_mask

# torchtitan picks its device type once, at import, and takes "cuda" when no accelerator is
# there: a CPU job must say so before ParallelDims builds its mesh.
import torchtitan.distributed.parallel_dims as parallel_dims_module
parallel_dims_module.device_type = "cpu"

from torchtitan.components.loss import CrossEntropyLoss  # noqa: E402
from torchtitan.config import ParallelismConfig, TrainingConfig  # noqa: E402
from torchtitan.distributed import ParallelDims  # noqa: E402
from torchtitan.distributed.pipeline_parallel import pipeline_llm  # noqa: E402
from torchtitan.models.common.attention import get_causal_mask_mod  # noqa: E402
from torchtitan.models.llama3 import parallelize_llama  # noqa: E402
from torchtitan.trainer import Trainer  # noqa: E402

import initc  # noqa: E402
import initc.torch  # noqa: E402
import torchtitan_model  # noqa: E402
from torch_dist_worker import _bits, leave  # noqa: E402

BATCH = 2


def trainer_config(mesh):
    degrees = dict((axis, int(size)) for axis, size in
                   (part.split("=") for part in mesh.split(",")))
    # partial_dtensor: DTensor on the model-parallel axes, FSDP2 on its own mesh, as
    # parallelize_llama's apply_tp + apply_fsdp always did. The spmd_types default stops in
    # fully_shard on this job ("all parameters must be DTensors on the full SPMD mesh", given
    # a plain 'weight').
    return Trainer.Config(
        loss=CrossEntropyLoss.Config(),  # what torchtitan's llama3 recipes train with
        training=TrainingConfig(seq_len=torchtitan_model.SEQ_LEN, local_batch_size=BATCH,
                                disable_cuda_graphs=True),
        parallelism=ParallelismConfig(
            data_parallel_shard_degree=degrees.get("dp_shard", 1),
            tensor_parallel_degree=degrees.get("tp", 1),
            pipeline_parallel_degree=degrees.get("pp", 1),
            spmd_backend="partial_dtensor"))


def parallelized(config, world):
    parallel_dims = ParallelDims.from_config(config.parallelism, world)
    parallel_dims.build_mesh()
    model_config = torchtitan_model.config()
    model_config.update_from_config(config=config)
    with torch.device("meta"):
        model = model_config.build()
    common = dict(parallel_dims=parallel_dims, training=config.training,
                  parallelism=config.parallelism, compile_config=config.compile,
                  ac_config=config.activation_checkpoint, dump_folder=config.dump_folder)
    if not parallel_dims.pp_enabled:
        return None, [parallelize_llama(model, **common)], True, True
    return pipeline_llm(model, device=torch.device("cpu"), model_config=model_config,
                        parallelize_fn=parallelize_llama,
                        loss_fn=config.loss.build(compile_config=config.compile), **common)


def causal_mask(batch):
    """torchtitan's causal mask_mod as a flex BlockMask. Its own get_attention_masks passes
    create_block_mask an argument (separate_full_blocks) that torch 2.12 does not have."""
    return create_block_mask(get_causal_mask_mod(), batch, None, torchtitan_model.SEQ_LEN,
                             torchtitan_model.SEQ_LEN, device="cpu")


def main():
    mesh, prog, ckpt, ref = sys.argv[1:5]
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the batch; every rank draws the same
    config = trainer_config(mesh)
    schedule, parts, first, last = parallelized(config, world)
    state = {}
    for part in parts:
        # As the trainer: CPU storage, then torchtitan's init_weights, for the RoPE cache (a
        # buffer no checkpoint holds); the program then writes every parameter over its values.
        part.to_empty(device="cpu")
        with torch.no_grad():
            part.init_weights(buffer_device=None)
        initc.torch.init_(part, prog, threads=1)
        state.update(part.state_dict())

    mine = load_file(os.path.join(ckpt, "rank-%05d-of-%05d.safetensors" % (rank, world)))
    whole = load_file(ref)
    assert set(state) == set(mine), sorted(set(state) ^ set(mine))
    strided = 0
    for name, value in state.items():
        assert isinstance(value, DTensor), name
        strided += any(type(p).__name__ == "_StridedShard" for p in value.placements)
        local, expected = value.to_local(), mine[name]
        assert tuple(local.shape) == tuple(expected.shape), \
            "rank %d: %s is %s in torchtitan's layout, %s in the file" % (
                rank, name, tuple(local.shape), tuple(expected.shape))
        assert _bits(local).equal(_bits(expected)), "rank %d: %s differs from the file" % (
            rank, name)
        assert _bits(value.full_tensor()).equal(_bits(whole[name])), \
            "rank %d: %s differs from the 1-rank program's" % (rank, name)
    if config.parallelism.tensor_parallel_degree > 1 and \
            config.parallelism.data_parallel_shard_degree > 1:
        # FSDP2 over tensor-parallel Shard(0) weights nests: the case the preset exists for.
        assert strided, "no parameter has FSDP2 nested inside tensor parallelism"

    vocab = torchtitan_model.config().vocab_size
    tokens = torch.randint(vocab, (BATCH, torchtitan_model.SEQ_LEN + 1))
    inputs, labels = tokens[:, :-1], tokens[:, 1:]
    positions = torch.arange(torchtitan_model.SEQ_LEN).expand(BATCH, -1)
    step = ""
    if schedule is None:
        # Forward only, under no_grad: none of torchtitan 0.3.0's attention backends for
        # language models takes a backward on the CPU (FlexAttention's backward is CUDA-only in
        # torch 2.12, varlen is CUDA flash attention, sdpa is gone). With pp, no step: the
        # trainer's schedule.step(arg_mbs=, kwarg_mbs=, loss_kwargs=) is a newer
        # torch.distributed.pipelining's than torch 2.12.1's.
        with torch.no_grad():
            logits = parts[0](inputs, positions=positions, attention_masks=causal_mask(BATCH))
            loss = F.cross_entropy(logits.full_tensor().flatten(0, 1).float(),
                                   labels.flatten())
        assert torch.isfinite(loss), loss
        step = ", a forward step ran"
    print("rank %d: %d tensors equal torchtitan's local shards and the 1-rank program's "
          "(%d nested)%s" % (rank, len(state), strided, step), flush=True)
    leave()


if __name__ == "__main__":
    main()
