"""Loads a safetensors checkpoint directory with orbax-checkpoint's own safetensors layout
(orbax.checkpoint.v1: ocp.metadata + ocp.load under CheckpointLayout.SAFETENSORS) into jax.Arrays
sharded over 8 CPU devices, and checks every device's shard bitwise against the matching slice of
a 1-rank checkpoint file. Run by test_load_orbax.py in its own process, since XLA_FLAGS must be
set before jax is imported:
    orbax_worker.py CHECKPOINT_DIR REFERENCE_FILE"""

import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
from orbax.checkpoint import v1 as ocp  # noqa: E402
from safetensors import safe_open  # noqa: E402

# Specs tried in order for each tensor; the first whose sharded dims divide evenly (as jax
# requires) is used, so most tensors are split over both mesh axes.
SPECS = {2: [P("a", "b"), P("b", "a"), P(None, ("a", "b")), P(("a", "b"), None), P(None, "b"),
             P("a", None), P(None, "a"), P()],
         1: [P(("a", "b")), P("b"), P("a"), P()]}


def sharding_for(mesh, shape):
    for spec in SPECS.get(len(shape), [P()]):
        parts = [1 if axes is None else
                 int(np.prod([mesh.shape[a] for a in (axes if isinstance(axes, tuple) else (axes,))]))
                 for axes in tuple(spec) + (None,) * (len(shape) - len(spec))]
        if all(n % p == 0 for n, p in zip(shape, parts)):
            return NamedSharding(mesh, spec)
    return NamedSharding(mesh, P())


def as_bytes(t):
    t = t.contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def main(checkpoint, reference):
    devices = jax.devices()
    assert len(devices) == 8, devices
    mesh = Mesh(np.array(devices).reshape(2, 4), ("a", "b"))
    context = ocp.Context()
    context.checkpoint_layout = ocp.options.CheckpointLayout.SAFETENSORS
    with context:
        metadata = ocp.metadata(checkpoint)
        tree = metadata.metadata if hasattr(metadata, "metadata") else metadata
        abstract = {name: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                               sharding=sharding_for(mesh, leaf.shape))
                    for name, leaf in tree.items()}
        loaded = ocp.load(checkpoint, abstract_state=abstract)
    with safe_open(reference, framework="pt") as f:
        whole = {name: f.get_tensor(name) for name in f.keys()}
    assert set(loaded) == set(whole), sorted(set(loaded) ^ set(whole))
    bad, split = [], 0
    for name, array in sorted(loaded.items()):
        assert isinstance(array, jax.Array) and array.shape == tuple(whole[name].shape), name
        assert array.sharding == abstract[name].sharding, name
        split += not array.sharding.is_fully_replicated
        for shard in array.addressable_shards:
            if np.asarray(shard.data).tobytes() != as_bytes(whole[name][shard.index]):
                bad.append("%s on %s" % (name, shard.device))
    if bad:
        print("%d shards differ from the reference: %s" % (len(bad), ", ".join(bad)),
              file=sys.stderr)
        return 1
    print("loaded %d tensors, %d sharded over the devices" % (len(loaded), split))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
