"""test_jax_init.py's JAX process (XLA_FLAGS=--xla_force_host_platform_device_count=8 must be set
before jax is imported): every llama_uneven tensor as a jax.Array on a 2 x 4 mesh with
PartitionSpecs over both axes, each device's shard bitwise the reference's box, the whole array
bitwise the reference tensor.

    python jax_worker.py PROG REFERENCE [COORDINATOR PROCESSES PROCESS_ID]

With the last three, one of several processes on localhost (jax.distributed, 8 / PROCESSES host
devices each): each checks the shards of the devices it addresses."""

import sys

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from safetensors.numpy import load_file

import initc
import initc.jax


def main():
    prog_dir, reference = sys.argv[1:3]
    if len(sys.argv) > 3:
        coordinator, processes, process_id = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator, processes, process_id)
        assert jax.local_device_count() == 8 // processes, jax.local_devices()
    assert jax.device_count() == 8, jax.devices()
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    expected = load_file(reference)  # bfloat16 through ml_dtypes
    with initc.load(prog_dir) as prog:
        params = [p for p in prog.params(0) if p.persistent]
        specs = {}
        sizes = {"dp": 2, "tp": 4, ("dp", "tp"): 8, ("tp", "dp"): 8, None: 1}
        for i, p in enumerate(params):
            # Both axes, on either dim in turn, and both on one dim (jax shards only evenly:
            # the 1001-row vocabulary is split by columns).
            if len(p.global_shape) == 2:
                choices = [P("dp", "tp"), P("tp", "dp")] if i % 2 else [P("tp", "dp"),
                                                                        P("dp", "tp")]
                choices.append(P(None, ("tp", "dp")))
            else:
                choices = [P(("dp", "tp"))]
            specs[p.name] = next(c for c in choices if all(
                n % sizes[axis] == 0 for n, axis in zip(p.global_shape, tuple(c))))
        shardings = {name: NamedSharding(mesh, spec) for name, spec in specs.items()}
        arrays = initc.jax.init(prog, shardings, threads=1)
        # The pytree form: nested dicts, leaf names from their paths.
        tree = {"model": {"norm": {"weight": NamedSharding(mesh, P("tp"))}}}
        filled = initc.jax.init_tree(prog, tree, threads=1)
    assert set(arrays) == set(expected)
    shards = 0
    for name, array in arrays.items():
        want = expected[name]
        assert array.shape == want.shape and array.dtype == want.dtype, name
        assert array.sharding == shardings[name], name
        for shard in array.addressable_shards:
            got = np.asarray(shard.data)
            assert got.tobytes() == want[shard.index].tobytes(), (name, shard.index)
            shards += 1
        if array.is_fully_addressable:
            assert np.asarray(array).tobytes() == want.tobytes(), name
    norm = filled["model"]["norm"]["weight"]
    for shard in norm.addressable_shards:
        assert np.asarray(shard.data).tobytes() == \
            expected["model.norm.weight"][shard.index].tobytes()
    assert len(norm.addressable_shards) == jax.local_device_count()
    print("%d arrays, %d shards bitwise equal" % (len(arrays), shards), flush=True)
    check_replicas_share_one_fill(mesh, prog_dir, expected)


def check_replicas_share_one_fill(mesh, prog_dir, expected):
    """An array whose boxes repeat along "tp" (P("dp") on the 2 x 4 mesh): the devices holding
    one box share one fill, and donating the array to a computation on every device still gives
    each device the right result (nothing wrote the shared buffers under another's input)."""
    name = "model.layers.0.mlp.down_proj.weight"
    with initc.load(prog_dir) as prog:
        array = initc.jax.init(prog, {name: NamedSharding(mesh, P("dp"))}, threads=1)[name]
    want = expected[name]
    boxes = {str(shard.index) for shard in array.addressable_shards}
    buffers = {shard.data.unsafe_buffer_pointer() for shard in array.addressable_shards}
    assert len(boxes) < len(array.addressable_shards), boxes  # some box is on two devices
    assert len(buffers) == len(boxes), (len(buffers), len(boxes))
    step = jax.jit(lambda x: x * 2 + 1, donate_argnums=0, out_shardings=array.sharding)
    result = step(array)
    assert array.is_deleted()
    for shard in result.addressable_shards:
        box = want[shard.index].astype(np.float32)
        assert np.asarray(shard.data).tobytes() == (box * 2 + 1).astype(want.dtype).tobytes()
    print("replicas share one fill: %d boxes for %d shards, donation safe"
          % (len(boxes), len(result.addressable_shards)), flush=True)


if __name__ == "__main__":
    main()
