"""test_trainer_presets.py's JAX process (XLA_FLAGS=--xla_force_host_platform_device_count=N set
by the caller): for every parameter of a program compiled with `--shard maxtext`, the box each
rank holds must be the shard of that rank's device under MaxText's own rule: flax's
logical_to_mesh_axes over MaxText's default logical_axis_rules, then jax's NamedSharding on a
mesh of the program's axes (devices in rank order).

    python maxtext_worker.py PROG MODEL.mlir MESH"""

import re
import sys

import jax
import numpy as np
from flax import linen as nn
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import initc

# MaxText's default logical_axis_rules (src/MaxText/configs/base.yml), the entries for axes a
# parameter can have, in the file's order; the activation and cache entries name no
# parameter's axes, so they decide nothing here.
MAXTEXT_RULES = [
    ("mlp", ("fsdp_transpose", "tensor", "tensor_sequence", "autoregressive")),
    ("vocab", ("tensor", "tensor_transpose", "tensor_sequence", "autoregressive")),
    ("heads", ("tensor", "tensor_transpose", "tensor_sequence", "autoregressive")),
    ("q_heads", ("tensor", "tensor_transpose", "tensor_sequence", "autoregressive")),
    ("kv_heads", ("tensor", "tensor_transpose", "tensor_sequence", "autoregressive")),
    ("embed", ("fsdp", "fsdp_transpose", "sequence", "tensor_transpose", "context", "expert")),
    ("embed", ("fsdp", "sequence", "tensor_transpose", "context", "expert")),
    ("embed", ("fsdp", "fsdp_transpose", "sequence", "context", "expert")),
    ("embed", ("fsdp", "sequence", "context", "expert")),
    ("embed_no_exp", ("fsdp", "fsdp_transpose", "sequence", "tensor_transpose", "context")),
    ("embed_no_exp", ("fsdp", "sequence", "tensor_transpose", "context")),
    ("embed_no_exp", ("fsdp", "fsdp_transpose", "sequence", "context")),
    ("embed_no_exp", ("fsdp", "sequence", "context")),
    ("norm", ("tensor", "tensor_transpose")),
    ("qkv", ()),
    ("kv_head_dim", ()),
    ("exp", "expert"),
]


def maxtext_names(axes):
    """MaxText's names for the dims the importer calls `axes` (its layers' kernel_axes): the
    norms' scale is `norm`, an expert kernel's embedding `embed_no_exp`, the router's expert
    dim unnamed (GateLogit's ("embed", None))."""
    names = []
    for axis in axes:
        if axis == "embed":
            axis = "norm" if len(axes) == 1 else "embed_no_exp" if "experts" in axes else "embed"
        names.append({"experts": "exp", "expert_mlp": "mlp", "head_dim": "kv_head_dim",
                      "router": None}.get(axis, axis))
    return names


def main():
    prog_dir, model, mesh_text = sys.argv[1:4]
    axis_names = [a.split("=")[0] for a in mesh_text.split(",")]
    shape = [int(a.split("=")[1]) for a in mesh_text.split(",")]
    devices = np.array(jax.devices()).reshape(shape)
    assert [d.id for d in devices.flat] == list(range(devices.size))
    mesh = Mesh(devices, axis_names)
    text = open(model).read()
    axes_of = {m.group(1).strip('"'): re.findall(r'"([^"]+)"', m.group(2)) for m in re.finditer(
        r'init\.param @("[^"]+"|\S+) : tensor<[^>]*> axes \[([^\]]*)\]', text)}
    prog = initc.load(prog_dir)
    checked = 0
    for param in prog.params(0):
        if param.is_buffer:
            continue
        spec = nn.logical_to_mesh_axes(maxtext_names(axes_of[param.name]), MAXTEXT_RULES)
        # MaxText's mesh has every axis of its list; those this mesh lacks have size 1 there.
        kept = []
        for entry in spec:
            entry = (entry,) if isinstance(entry, str) else entry or ()
            entry = tuple(a for a in entry if a in axis_names)
            kept.append(entry or None)
        shards = NamedSharding(mesh, PartitionSpec(*kept)).devices_indices_map(param.global_shape)
        for device, index in shards.items():
            mine = prog.param(param.name, rank=device.id)
            want_offset = tuple(s.indices(n)[0] for s, n in zip(index, param.global_shape))
            want_shape = tuple(len(range(*s.indices(n))) for s, n in zip(index, param.global_shape))
            assert (tuple(mine.slice_offset), tuple(mine.slice_shape)) == (want_offset, want_shape), (
                param.name, device.id, kept, mine.slice_offset, mine.slice_shape, want_offset,
                want_shape)
        checked += 1
    prog.close()
    print("maxtext: %d tensors on %d ranks hold their jax shards" % (checked, devices.size))


if __name__ == "__main__":
    main()
