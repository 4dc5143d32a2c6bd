"""The JAX frontend: capture a constructor `fn(key)` (Equinox, Flax NNX, any pytree of arrays)
into init IR, or get its pytree back with every array created in its sharding.

    import initc.jax as ij
    model = ij.init_sharded(lambda key: eqx.nn.Linear(512, 256, key=key), mesh,
                            sharding=lambda name, leaf: P(None, "tp") if name == "weight"
                            else P("tp"), seed=0)
    ij.capture(lambda key: MyModel(..., key=key), "model.mlir", seed=0)

The constructor runs once under jax.make_jaxpr (no parameter memory); the jaxpr is translated
into init IR (translate.py), one init.param per array leaf named by its pytree path. Values are
initc's RNG contract's, not threefry's: the same distributions, and every element a function of
(seed, leaf name, stream, index), so any mesh, process count and key-splitting order gives the
same bits, and so do prog/init and every other initc frontend (ir-spec/capture-jax.md)."""

import sys
import tempfile

from .frontend import cached_program, compile_program, emit, shardings_for, trace
from .nodes import CaptureError


def capture_ir(fn, seed=0, name="jax"):
    """(init IR text, notes) of `fn(key)`'s array leaves."""
    return emit(trace(fn), seed, name)


def capture(fn, path, seed=0, name="jax"):
    """Writes the init IR of `fn(key)` to `path` (then `initc compile` and prog/init as usual);
    returns the leaves' names. Raises CaptureError naming the leaf, the primitive and the
    line."""
    import os
    text, notes = capture_ir(fn, seed, name)
    for note in notes:
        print("initc.jax: note: " + note, file=sys.stderr)
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return [line.split('"')[1] for line in text.splitlines()
            if line.startswith("  init.param ")]


def init_sharded(fn, mesh, sharding=None, seed=0, rules=None, threads=0, cache=True,
                 timings=None):
    """The pytree `fn(key)` returns (static fields and non-array leaves untouched), every array
    a jax.Array laid out as its sharding says, each process computing only the shards of its
    own devices. `sharding`: a callable (name, jax.ShapeDtypeStruct) -> PartitionSpec,
    Sharding or None (replicated); a pytree of the constructor's structure with those leaves;
    one PartitionSpec or Sharding for every leaf; or None: Flax's with_partitioning names
    (mapped by `rules`, {logical name: mesh axis}, else taken as mesh axes), others
    replicated. A dim that does not divide over its mesh axes is a ValueError naming the leaf
    before anything is computed. The compiled program is kept (cache=True) under
    $INITC_JAX_CACHE (default ~/.cache/initc/jax), keyed by the IR, the compiler and the host.
    `timings`, a dict, receives the seconds of each step: capture, compile, fill."""
    import time
    from .. import jax as initc_jax
    from .._program import load
    timings = {} if timings is None else timings
    start = time.perf_counter()
    traced = trace(fn)
    shardings = shardings_for(traced, mesh, sharding, rules)
    text, notes = emit(traced, seed)
    for note in notes:
        print("initc.jax: note: " + note, file=sys.stderr)
    timings["capture"] = time.perf_counter() - start

    def fill(prog):
        compiled = time.perf_counter()
        timings["compile"] = compiled - start - timings["capture"]
        with load(prog) as program:
            arrays = initc_jax.init(program, shardings, threads)
        timings["fill"] = time.perf_counter() - compiled
        return arrays

    if cache:
        arrays = fill(cached_program(text))
    else:
        with tempfile.TemporaryDirectory(prefix="initc-jax-") as directory:
            arrays = fill(compile_program(text, directory))
    return traced.rebuild([arrays[name] for name, _, _, _ in traced.leaves])


__all__ = ["CaptureError", "capture", "capture_ir", "init_sharded"]
