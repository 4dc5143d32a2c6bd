"""Creating a JAX model's parameters as sharded jax.Arrays, each device's shard filled directly:

    import initc.jax
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    params = initc.jax.init("prog/", {"model.embed_tokens.weight":
                                      NamedSharding(mesh, P("tp", "dp")), ...})

jax.make_array_from_callback asks for each addressable device's index (a box of the global
tensor); the runtime computes exactly that box, whatever mesh the program was compiled for. The
values are those prog/init writes. Needs jax (and ml_dtypes, which jax brings, for bfloat16)."""

import jax
import numpy as np

from ._program import Program, _numpy_dtype, load


def _box(index, shape):
    """The offset and shape of the box that `index` (a tuple of slices, as
    make_array_from_callback passes it) selects from a tensor of `shape`."""
    offset, box = [], []
    for d, n in enumerate(shape):
        s = index[d] if d < len(index) else slice(None)
        start, stop, step = s.indices(n)
        if step != 1:
            raise ValueError("a shard index with step %d: initc fills boxes" % step)
        offset.append(start)
        box.append(max(stop - start, 0))
    return offset, box


def _aligned_empty(shape, dtype, alignment=4096):
    """An uninitialized array whose data starts on a page: jax's CPU client then takes the
    buffer as the shard itself instead of copying it (numpy's own allocations are 16-byte
    aligned). Not laid out for huge pages (2 MiB-aligned boxes, one mapping per array): on the
    guest of benchmarks/README.md, where freed 2 MiB blocks go back to the host, the 1B Equinox
    model's fill then took 16-18 s against 9-13 s this way, alternated with eqx.filter_jit."""
    size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    raw = np.empty(size + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + size].view(dtype).reshape(shape)


def _planned(param, sharding):
    """{(offset, box): array}: every distinct box this process's devices hold, allocated (not
    filled). Devices that hold the same box (replicas along a mesh axis the spec leaves out)
    share one: on the CPU their buffers then alias one host array, as jax's own fully
    replicated path does. Safe under donation: jax hands such arrays to PJRT as
    kImmutableZeroCopy host buffers, which the runtime promises never to write (never reused
    for an aliased output)."""
    shape = tuple(param.global_shape)
    keys = {}  # ordered: the devices' order
    for index in sharding.addressable_devices_indices_map(shape).values():
        offset, box = _box(index, shape)
        keys.setdefault((tuple(offset), tuple(box)))
    dtype = _numpy_dtype(param.dtype)
    return {key: _aligned_empty(key[1], dtype) for key in keys}


def _array(param, sharding, filled):
    shape = tuple(param.global_shape)

    def callback(index):
        offset, box = _box(index, shape)
        return filled[(tuple(offset), tuple(box))]

    return jax.make_array_from_callback(shape, sharding, callback)


def _check(param, name, spec):
    """A jax.ShapeDtypeStruct leaf must agree with the program."""
    shape = getattr(spec, "shape", None)
    if shape is not None and tuple(shape) != tuple(param.global_shape):
        raise ValueError("%s: the tree asks for shape %s, the program's %s has %s"
                         % (name, list(shape), param.name, list(param.global_shape)))
    dtype = getattr(spec, "dtype", None)
    if dtype is not None and np.dtype(dtype) != _numpy_dtype(param.dtype):
        raise TypeError("%s: the tree asks for %s, the program's %s is %s"
                        % (name, np.dtype(dtype), param.name, param.dtype))


def _sharding_of(name, leaf):
    sharding = leaf if isinstance(leaf, jax.sharding.Sharding) else getattr(leaf, "sharding", None)
    if not isinstance(sharding, jax.sharding.Sharding):
        raise TypeError("%s: expected a jax.sharding.Sharding (or a jax.ShapeDtypeStruct with "
                        "one), got %r" % (name, leaf))
    return sharding


def _fitted_sharding(param, name, leaf):
    """The leaf's sharding, checked against the parameter's shape before anything is computed:
    a mesh or PartitionSpec that does not fit it is one ValueError naming the parameter."""
    sharding = _sharding_of(name, leaf)
    shape = tuple(param.global_shape)
    spec = getattr(sharding, "spec", None)
    if spec is not None and len(spec) > len(shape):
        problem = "its PartitionSpec %s has %d entries for %d dims" % (spec, len(spec), len(shape))
    else:
        try:
            sharding.shard_shape(shape)
            return sharding
        except (ValueError, IndexError, TypeError) as e:
            problem = str(e)
    raise ValueError("%s: its sharding does not fit the program's shape %s: %s"
                     % (name, list(shape), problem))


def _resolve(program, names):
    """{name: Param} of the program for the given names (aliases included); KeyError naming the
    first unknown one."""
    params = program.params(0)
    out = {}
    for name in names:
        index = program._native.param_index(name)
        if index < 0:
            raise KeyError("the program has no parameter %r" % name)
        out[name] = params[index]
    return out


def _with_program(prog, body):
    owned = not isinstance(prog, Program)
    program = load(prog) if owned else prog
    try:
        return body(program)
    finally:
        if owned:
            program.close()


def init(prog, shardings, threads=0):
    """{name: jax.Array} for {name: Sharding} (or {name: jax.ShapeDtypeStruct with a sharding},
    whose shape and dtype are checked): each array has the program's global shape and dtype and
    is laid out as its sharding says; each device's shard is computed on this host, only for
    the devices this process addresses. `prog` is an initc.Program or a program directory.
    Unknown names are a KeyError, a shape a ValueError, a dtype a TypeError, a sharding that
    does not fit a ValueError, all before anything is computed."""
    def body(program):
        params = _resolve(program, shardings)
        fitted = {}
        for name, leaf in shardings.items():
            _check(params[name], name, leaf)
            fitted[name] = _fitted_sharding(params[name], name, leaf)
        # Every array's boxes in one run of the runtime's threads (initrt_fill_boxes), which
        # then meet once rather than once per array (what a busy host makes costly), before
        # jax asks for them.
        planned = {name: _planned(params[name], fitted[name]) for name in shardings}
        program.fill_boxes([(params[name].name, list(offset), out)
                            for name, boxes in planned.items()
                            for (offset, _), out in boxes.items()], threads)
        return {name: _array(params[name], fitted[name], planned[name]) for name in shardings}
    return _with_program(prog, body)


def path_name(path):
    """The dotted name of a pytree key path: ("model", "layers", 0, "weight") ->
    "model.layers.0.weight", as a state dict names it."""
    parts = []
    for key in path:
        for attribute in ("key", "name", "idx"):
            if hasattr(key, attribute):
                parts.append(str(getattr(key, attribute)))
                break
        else:
            parts.append(str(key))
    return ".".join(parts)


def init_tree(prog, shardings, name_of=path_name, threads=0):
    """The pytree `shardings` (leaves: Shardings or jax.ShapeDtypeStructs with one) with every
    leaf replaced by its jax.Array; name_of(key path) gives the program's name of a leaf
    (default: the dotted path)."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(
        shardings, is_leaf=lambda x: isinstance(x, (jax.sharding.Sharding,
                                                    jax.ShapeDtypeStruct)))
    named = {}
    for path, leaf in leaves:
        name = name_of(path)
        if name in named:
            raise ValueError("two leaves of the tree are both named %r" % name)
        named[name] = leaf
    arrays = init(prog, named, threads)
    return jax.tree_util.tree_unflatten(treedef, [arrays[name_of(path)] for path, _ in leaves])


__all__ = ["init", "init_tree", "path_name"]


def __getattr__(name):
    # The constructor frontend (capture, init_sharded) lives in initc.jax_capture; reached
    # from here as the user writes it, `import initc.jax as ij; ij.init_sharded(...)`.
    if name in ("capture", "capture_ir", "init_sharded", "CaptureError"):
        from . import jax_capture
        return getattr(jax_capture, name)
    raise AttributeError("module 'initc.jax' has no attribute %r" % name)
