"""initc.jax.init_sharded of an Equinox transformer on 8 host devices against
eqx.filter_jit of the same constructor with its output sharded (eqx.filter_shard: the
out_shardings of the jitted constructor), compile included on both sides, in one run.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 INITC=build/bin/initc \\
        python benchmarks/jax_init_sharded.py [--layers 18 --dim 2048 --mlp 5632 --vocab 32000]

The default is a 1.06B-parameter model (f32, 4.2 GB). Each side runs --runs times (default 1),
the two alternated (which goes first swaps every round), each with the other's arrays freed and
no cache reused (the initc side compiles its program afresh, cache=False; JAX's caches are
emptied). Prints every time with the load average after it, the best of each side, their ratio,
and that both give the same shapes and shardings."""

import argparse
import gc
import os
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

import initc.jax as ij


class Layer(eqx.Module):
    attn: eqx.nn.MultiheadAttention
    norm1: eqx.nn.RMSNorm
    norm2: eqx.nn.RMSNorm
    gate: eqx.nn.Linear
    up: eqx.nn.Linear
    down: eqx.nn.Linear

    def __init__(self, dim, heads, mlp, key):
        k = jax.random.split(key, 4)
        self.attn = eqx.nn.MultiheadAttention(heads, dim, key=k[0])
        self.norm1, self.norm2 = eqx.nn.RMSNorm(dim), eqx.nn.RMSNorm(dim)
        self.gate = eqx.nn.Linear(dim, mlp, use_bias=False, key=k[1])
        self.up = eqx.nn.Linear(dim, mlp, use_bias=False, key=k[2])
        self.down = eqx.nn.Linear(mlp, dim, use_bias=False, key=k[3])


class Transformer(eqx.Module):
    embed: eqx.nn.Embedding
    layers: list
    norm: eqx.nn.RMSNorm
    head: eqx.nn.Linear

    def __init__(self, vocab, dim, heads, mlp, layers, key):
        k = jax.random.split(key, layers + 2)
        self.embed = eqx.nn.Embedding(vocab, dim, key=k[0])
        self.layers = [Layer(dim, heads, mlp, k[i + 1]) for i in range(layers)]
        self.norm = eqx.nn.RMSNorm(dim)
        self.head = eqx.nn.Linear(dim, vocab, use_bias=False, key=k[-1])


def spec(name, leaf):
    """Matrices over both mesh axes, vectors replicated."""
    return P("dp", "tp") if leaf.ndim == 2 else P()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=18)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--mlp", type=int, default=5632)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--runs", type=int, default=1,
                        help="rounds; the sides alternate, which goes first swapping each round")
    args = parser.parse_args()
    assert jax.device_count() == 8, "set XLA_FLAGS=--xla_force_host_platform_device_count=8"
    # Auto axes: filter_shard inside the jitted constructor is a sharding constraint.
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

    def make(key):
        return Transformer(args.vocab, args.dim, args.heads, args.mlp, args.layers, key)

    shapes = eqx.filter_eval_shape(make, jax.random.key(0))
    leaves = [x for x in jax.tree_util.tree_leaves(shapes) if isinstance(x, jax.ShapeDtypeStruct)]
    count = sum(int(np.prod(x.shape)) for x in leaves)
    print("model: %d parameters in %d arrays (%.2f GB f32), mesh dp=2 x tp=4 of host devices"
          % (count, len(leaves), count * 4 / 1e9), flush=True)

    shardings = jax.tree_util.tree_map(
        lambda x: NamedSharding(mesh, spec("", x)) if isinstance(x, jax.ShapeDtypeStruct)
        else None, shapes, is_leaf=lambda x: isinstance(x, jax.ShapeDtypeStruct))

    def layout(tree):
        return [(a.shape, a.sharding.spec) for a in jax.tree_util.tree_leaves(tree)
                if isinstance(a, jax.Array)]

    def ours():
        steps = {}
        model = ij.init_sharded(make, mesh, sharding=spec, seed=0, cache=False, timings=steps)
        jax.block_until_ready(model)
        return layout(model), "capture %.2f s, initc compile %.2f s, fill %.2f s" % (
            steps["capture"], steps["compile"], steps["fill"])

    def theirs():
        jax.clear_caches()  # a run reuses no earlier run's executable

        @eqx.filter_jit
        def sharded(key):
            return eqx.filter_shard(make(key), shardings)

        model = sharded(jax.random.key(0))
        jax.block_until_ready(model)
        return layout(model), "trace, XLA compile, run"

    sides = [("initc.jax.init_sharded", ours), ("eqx.filter_jit with sharded outputs", theirs)]
    times = {name: [] for name, _ in sides}
    layouts = {}
    for round_ in range(max(args.runs, 1)):
        for name, side in (sides if round_ % 2 == 0 else sides[::-1]):
            gc.collect()  # the other side's arrays are freed
            start = time.perf_counter()
            layouts[name], detail = side()
            seconds = time.perf_counter() - start
            times[name].append(seconds)
            print("round %d: %s %.2f s (%s), load average %.1f"
                  % (round_ + 1, name, seconds, detail, os.getloadavg()[0]), flush=True)
    assert layouts["initc.jax.init_sharded"] == layouts["eqx.filter_jit with sharded outputs"]
    print("same shapes and shardings: %d arrays" % len(layouts["initc.jax.init_sharded"]))
    best_ours, best_theirs = min(times[sides[0][0]]), min(times[sides[1][0]])
    print("best of %d: init_sharded %.2f s, eqx.filter_jit %.2f s" % (args.runs, best_ours,
                                                                      best_theirs))
    print("ratio: init_sharded is %.1fx faster" % (best_theirs / best_ours), flush=True)


if __name__ == "__main__":
    main()
