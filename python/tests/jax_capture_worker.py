"""test_jax_capture.py's JAX process: every model of jax_models.py through initc.jax.init_sharded
on meshes of 1, 2, 4 and 8 host devices (XLA_FLAGS=--xla_force_host_platform_device_count=8 set
before jax starts), each shard bitwise the prog/init checkpoint of the captured IR (so every
mesh gives the same bits), each leaf distributed as the eager constructor's (two-sample KS),
static fields untouched.

    python jax_capture_worker.py REFERENCES_DIR [COORDINATOR PROCESSES PROCESS_ID]

REFERENCES_DIR holds MODEL.safetensors for each model. With the last three, one of several
processes on localhost (jax.distributed): the 2 x 4 mesh only, each process checking the shards
of its own devices."""

import os
import sys

import jax
import numpy as np
from flax import nnx
from jax.sharding import PartitionSpec as P
from safetensors.numpy import load_file
from scipy.stats import ks_2samp

import initc.jax as ij
from initc.jax_capture.frontend import path_name

import jax_models

SEED = 5


def leaves(tree):
    """{name: array} of a constructed pytree, named as the capture names them."""
    if isinstance(tree, nnx.Module):
        tree = nnx.split(tree)[1]
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(leaf, jax.Array):
            name = path_name(path)
            out[name[:-len(".value")] if name.endswith(".value") else name] = leaf
    return out


def check_shards(name, array, want):
    count = 0
    for shard in array.addressable_shards:
        got = np.asarray(shard.data)
        assert got.dtype == want.dtype and got.tobytes() == want[shard.index].tobytes(), \
            (name, shard.index)
        count += 1
    return count


def check_distribution(model, fn, got):
    """Each leaf against the eager constructor's (4 keys pooled): equal constants exactly,
    random values by a two-sample KS test."""
    eager = [leaves(fn(jax.random.key(s))) for s in range(4)]
    for name, array in got.items():
        ours = np.asarray(array, dtype=np.float64).ravel()
        theirs = np.concatenate([np.asarray(e[name], dtype=np.float64).ravel() for e in eager])
        if np.all(theirs == theirs[0]):
            assert np.all(ours == theirs[0]), (model, name)
            continue
        p = ks_2samp(ours, theirs).pvalue
        assert p > 1e-4, (model, name, p)


def single_process(references):
    meshes = [(1, 1), (1, 2), (2, 2), (2, 4)]
    shards = total = 0
    for model, (fn, sharding) in jax_models.MODELS.items():
        want = load_file(os.path.join(references, model + ".safetensors"))
        first = None
        for shape in meshes:
            devices = np.array(jax.devices()[:shape[0] * shape[1]]).reshape(shape)
            mesh = jax.sharding.Mesh(devices, ("dp", "tp"))
            built = ij.init_sharded(fn, mesh, sharding=sharding, seed=SEED,
                                    rules=jax_models.NNX_RULES, threads=1)
            got = leaves(built)
            assert set(got) == set(want), (model, sorted(got), sorted(want))
            for name, array in got.items():
                shards += check_shards(name, array, want[name])
            if first is None:
                first = got
                check_distribution(model, fn, got)
            else:  # bitwise equal to the 1-device arrays
                for name, array in got.items():
                    assert np.asarray(array).tobytes() == np.asarray(first[name]).tobytes()
            total += len(got)
        check_structure(model, built, mesh)
    print("jax capture: %d leaves, %d shards bitwise equal on 1, 2, 4, 8 devices"
          % (total, shards), flush=True)
    check_refusals()


def check_structure(model, built, mesh):
    """On the 2 x 4 mesh: the shardings asked for, static fields untouched, the triangle."""
    if model == "linear":
        assert built.weight.sharding.spec == P(None, "tp"), built.weight.sharding
        assert built.bias.sharding.spec == P("tp"), built.bias.sharding
        assert (built.in_features, built.out_features, built.use_bias) == (64, 32, True)
    elif model == "block":
        assert built.steps == 16 and built.attn.num_heads == 4
        assert built.mlp.activation is jax.nn.relu
        mix = np.asarray(built.mix)
        assert np.all(np.tril(mix, -1) == 0) and np.all(mix[np.triu_indices(16)] != 0)
        assert built.mix.sharding.spec == P("dp", "tp")
    elif model == "nnx":
        assert isinstance(built, jax_models.NnxModel)
        assert built.up.kernel.value.sharding.spec == P("dp", "tp")   # embed -> dp, mlp -> tp
        assert built.embed.embedding.value.sharding.spec == P("tp", "dp")
        assert built.up.in_features == 32
        x = np.ones((2, 32), np.float32)
        assert built.up(x).shape == (2, 64)  # the merged module runs


def check_refusals():
    import equinox as eqx
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    try:
        ij.init_sharded(lambda key: eqx.nn.Linear(6, 10, key=key), mesh,
                        sharding=lambda name, leaf: P(None, "tp"))
    except ValueError as e:
        message = str(e)
        assert "weight: dim 1 of shape [10, 6] does not divide over mesh axes ['tp'] (4 ways)" \
            in message and "jax_capture_worker.py" in message, message
    else:
        raise AssertionError("a 6-wide dim split 4 ways was accepted")
    print("jax capture: refusals ok", flush=True)


def multi_process(references, coordinator, processes, process_id):
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator, processes, process_id)
    assert jax.device_count() == 8 and jax.local_device_count() == 8 // processes
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    shards = 0
    for model, (fn, sharding) in jax_models.MODELS.items():
        want = load_file(os.path.join(references, model + ".safetensors"))
        got = leaves(ij.init_sharded(fn, mesh, sharding=sharding, seed=SEED,
                                     rules=jax_models.NNX_RULES, threads=1))
        assert set(got) == set(want), model
        for name, array in got.items():
            shards += check_shards(name, array, want[name])
    print("jax capture: process %d, %d shards bitwise equal" % (process_id, shards), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        multi_process(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        single_process(sys.argv[1])
