"""Constructors the JAX capture tests run (test_jax_capture.py, jax_capture_worker.py): each a
function of a key, with the shardings the tests ask for on an ("dp", "tp") mesh."""

import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import PartitionSpec as P


def linear(key):
    """The seed's example: a Linear whose weight is split on its second axis, bias on its first."""
    return eqx.nn.Linear(64, 32, key=key)


def linear_sharding(name, leaf):
    return P(None, "tp") if name == "weight" else P("tp")


def mlp_stack(key):
    """A stack of MLPs, one key each."""
    return [eqx.nn.MLP(16, 16, 32, 2, key=k) for k in jax.random.split(key, 3)]


def mlp_stack_sharding(name, leaf):
    return P("dp", "tp") if leaf.ndim == 2 else P(("dp", "tp"))


class Block(eqx.Module):
    """A transformer block with the modules the frontend covers, and a custom parameter: an
    upper-triangular (T x T) weight, a mask of a random matrix made in __init__."""
    embed: eqx.nn.Embedding
    norm: eqx.nn.LayerNorm
    attn: eqx.nn.MultiheadAttention
    mlp: eqx.nn.MLP
    conv: eqx.nn.Conv1d
    mix: jax.Array
    scale: jax.Array
    steps: int = eqx.field(static=True)

    def __init__(self, key, dim=32, seq=16):
        k = jax.random.split(key, 6)
        self.embed = eqx.nn.Embedding(128, dim, key=k[0])
        self.norm = eqx.nn.LayerNorm(dim)
        self.attn = eqx.nn.MultiheadAttention(4, dim, key=k[1])
        self.mlp = eqx.nn.MLP(dim, dim, 4 * dim, 1, key=k[2])
        self.conv = eqx.nn.Conv1d(dim, dim, 3, key=k[3])
        self.mix = jnp.triu(jax.random.normal(k[4], (seq, seq)) * 0.02)
        self.scale = 1.0 + 0.1 * jax.random.uniform(k[5], (dim,), minval=-1.0, maxval=1.0)
        self.steps = seq


def block(key):
    return Block(key)


def block_sharding(name, leaf):
    if name == "mix":
        return P("dp", "tp")  # each device a box of the triangle: its shard knows where it sits
    if leaf.ndim == 2 and leaf.shape[0] % 8 == 0 and leaf.shape[1] % 8 == 0:
        return P("tp", "dp")
    if leaf.ndim == 1 and leaf.shape[0] % 4 == 0:
        return P("tp")
    return P()


class NnxModel(nnx.Module):
    def __init__(self, rngs):
        init = nnx.initializers.lecun_normal()
        self.embed = nnx.Embed(64, 32, rngs=rngs,
                               embedding_init=nnx.with_partitioning(
                                   nnx.initializers.normal(0.02), ("vocab", "embed")))
        self.up = nnx.Linear(32, 64, rngs=rngs,
                             kernel_init=nnx.with_partitioning(init, ("embed", "mlp")),
                             bias_init=nnx.with_partitioning(nnx.initializers.zeros, ("mlp",)))
        self.layers = nnx.List([nnx.Linear(64, 64, rngs=rngs) for _ in range(2)])


def nnx_model(key):
    with nnx.use_eager_sharding(False):
        return NnxModel(nnx.Rngs(key))


NNX_RULES = {"vocab": "tp", "mlp": "tp", "embed": "dp"}

MODELS = {
    "linear": (linear, linear_sharding),
    "mlp_stack": (mlp_stack, mlp_stack_sharding),
    "block": (block, block_sharding),
    "nnx": (nnx_model, None),
}
