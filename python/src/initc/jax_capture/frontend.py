"""Tracing a JAX constructor (Equinox, Flax NNX, any pytree of arrays), naming its leaves and
printing their init IR; building the pytree back with every array sharded (ir-spec/capture-jax.md)."""

import os
import shutil
import tempfile

import jax
import numpy as np

from .._ir_printer import ParamEmitter, mlir_string, quote, tensor_type
from .nodes import RANDOM_OPS, CaptureError, Node, fill
from .translate import IR_TYPES, Interpreter, Keys, Literal, is_key_dtype, where_of


def _nnx():
    try:
        from flax import nnx
    except ImportError:
        return None
    return nnx


class Traced:
    """A traced constructor: `leaves` [(name, ShapeDtypeStruct, axes or None, where)], the IR
    values of those leaves and what rebuilds the constructor's own pytree from arrays."""

    def __init__(self, leaves, values, rebuild):
        self.leaves, self.values, self.rebuild = leaves, values, rebuild


def key_name(key):
    """One pytree key as the name's part: attributes and string keys dotted, indices bracketed."""
    for attribute in ("name", "key"):
        if hasattr(key, attribute):
            value = getattr(key, attribute)
            return "[%d]" % value if isinstance(value, int) else ".%s" % value
    if hasattr(key, "idx"):
        return "[%d]" % key.idx
    return ".%s" % key


def path_name(path):
    """`layers[3].attn.wq.weight` from a pytree key path."""
    return "".join(key_name(k) for k in path).lstrip(".")


def trace(fn):
    """Runs `fn(key)` under jax.make_jaxpr and interprets the jaxpr."""
    nnx = _nnx()
    box = {}

    def dynamic(key):
        if nnx is not None:
            # No mesh while tracing: with_partitioning's sharding is applied by init_sharded.
            with nnx.use_eager_sharding(False):
                out = fn(key)
        else:
            out = fn(key)
        meta = {}
        if nnx is not None and isinstance(out, nnx.Module):
            graphdef, state = nnx.split(out)
            box["nnx"] = graphdef
            variables = jax.tree_util.tree_flatten_with_path(
                state, is_leaf=lambda x: isinstance(x, nnx.Variable))[0]
            for path, var in variables:
                if isinstance(var, nnx.Variable):
                    meta[path_name(path)] = var.get_metadata()
            out = state
        flat, treedef = jax.tree_util.tree_flatten_with_path(out)
        arrays = [i for i, (_, x) in enumerate(flat) if isinstance(x, jax.Array)]
        box.update(treedef=treedef, flat=flat, arrays=arrays, meta=meta)
        return [flat[i][1] for i in arrays]

    closed = jax.make_jaxpr(dynamic)(jax.random.key(0))
    interpreter = Interpreter()
    root = np.empty((), dtype=object)
    root[()] = ()  # the key fn receives: the root of every derivation path
    values = interpreter.run(closed, [Keys(root)])
    producers = {}
    for eqn in closed.jaxpr.eqns:
        for v in eqn.outvars:
            producers[v] = where_of(eqn)

    leaves, seen = [], {}
    for i, (index, out_var) in enumerate(zip(box["arrays"], closed.jaxpr.outvars)):
        path, leaf = box["flat"][index]
        name = path_name(path)
        if not name:
            raise CaptureError("the constructor returned a bare array: a leaf's name is its "
                               "pytree path, so return a module or a dict of arrays")
        axes = None
        if "nnx" in box:
            if name.endswith(".value"):
                name = name[:-len(".value")]
            meta = box["meta"].get(name, {})
            names = meta.get("out_sharding") or meta.get("sharding_names") or \
                meta.get("sharding")
            if names is not None and len(tuple(names)) == len(leaf.shape):
                axes = tuple(names)
        # A leaf that is a constant of the trace (eqx.nn.PReLU's 0.25) has no equation.
        where = producers.get(out_var, "?") if not isinstance(out_var, Literal) else "?"
        if name in seen:
            raise CaptureError("the leaves %s and %s are both named %r: their paths collide "
                               "after naming (%s); rename one (a dict key with a dot or "
                               "brackets, or an attribute and a key of the same name)"
                               % (seen[name][0], jax.tree_util.keystr(path), name,
                                  "ir-spec/capture-jax.md"))
        seen[name] = (jax.tree_util.keystr(path), where)
        if is_key_dtype(leaf.dtype):
            raise CaptureError("%s: the leaf is a PRNG key (at %s); initc fills numeric arrays, "
                               "keep keys out of the constructed pytree (Flax: no rngs stored "
                               "in the module)" % (name, where))
        leaves.append((name, jax.ShapeDtypeStruct(leaf.shape, leaf.dtype), axes, where))

    def rebuild(arrays):
        flat = [x for _, x in box["flat"]]
        for index, array in zip(box["arrays"], arrays):
            flat[index] = array
        out = jax.tree_util.tree_unflatten(box["treedef"], flat)
        if "nnx" in box:
            out = nnx.merge(box["nnx"], out)
        return out

    return Traced(leaves, values, rebuild)


def _lower(node, memo):
    """The tree with `affine` as init.iota ops (added in f64 for several dims)."""
    if id(node) in memo:
        return memo[id(node)]
    if node.op == "affine":
        terms = []
        for i, (d, c) in enumerate(sorted(node.attrs["coefs"].items())):
            start = node.attrs["start"] if i == 0 else 0.0
            terms.append(Node("iota", node.shape, "f64", dim=d, start=start, step=c))
        out = terms[0]
        for t in terms[1:]:
            out = Node("add", node.shape, "f64", (out, t))
        if node.dtype != "f64":
            out = Node("cast", node.shape, node.dtype, (out,))
        out.kind = node.kind
    elif node.args:
        args = [_lower(a, memo) for a in node.args]
        out = Node(node.op, node.shape, node.dtype, args, kind=node.kind, **node.attrs)
        orthogonal = [a for a in args if a.op == "orthogonal"]
        other = [a for a in args if a.op != "orthogonal"]
        # init.orthogonal is computed alone (not elementwise): `scale * Q`, as
        # jax.nn.initializers.orthogonal writes it, is its gain.
        if node.op == "mul" and len(orthogonal) == 1 and other and other[0].op == "fill":
            q = orthogonal[0]
            out = Node("orthogonal", q.shape, q.dtype, kind=q.kind,
                       gain=q.attrs["gain"] * other[0].attrs["value"])
            out.draw, out.view = q.draw, q.view
        elif node.op == "cast" and orthogonal and node.kind == "float":
            q = orthogonal[0]  # rounded once, from the f64 factorization, to the new type
            out = Node("orthogonal", q.shape, node.dtype, kind=q.kind, **q.attrs)
            out.draw, out.view = q.draw, q.view
    else:
        out = node
    memo[id(node)] = out
    return out


def _streams(name, node, where):
    """Per leaf: the random ops' streams, 0, 1, ... in the order of their draws; one draw read
    in two ways stops the capture."""
    reads = {}
    for n in node.walk():
        if n.op in RANDOM_OPS:
            reads.setdefault(id(n.draw), {}).setdefault(n.view, []).append(n)
    order = sorted(reads, key=lambda d: next(iter(reads[d].values()))[0].draw.seq)
    streams = {}
    for stream, draw in enumerate(order):
        views = reads[draw]
        if len(views) > 1:
            first = next(iter(views.values()))[0].draw
            raise CaptureError(
                "%s: the leaf reads the random value of %s (at %s) in %d different ways (a "
                "transpose, slices, broadcasts of it); init IR draws every element of a random "
                "op at its own index and cannot repeat it at another (at %s): draw separate "
                "random values for the parts" % (name, first.what, first.where, len(views),
                                                 where))
        for nodes in views.values():
            for n in nodes:
                streams[id(n)] = stream
    return streams


def emit(traced, seed, model_name="jax"):
    """The init IR text of a traced constructor."""
    lines = ['module attributes {init.model = "%s"} {' % mlir_string(model_name),
             "  init.seed %d" % seed]
    shared = {}
    for (name, leaf, axes, where), value in zip(traced.leaves, traced.values):
        dtype = np.dtype(leaf.dtype)
        ty = IR_TYPES.get(dtype.name)
        if ty is None:
            raise CaptureError("%s: dtype %s has no init IR type (f32, bf16, f16, f64, bool; "
                               "x64 integers are i64 in the IR but JAX's are int32) (at %s)"
                               % (name, dtype, where))
        if not isinstance(value, Node):
            value = _concrete(name, value, leaf, ty, where)
        for n in value.walk():
            if n.op == "unsupported":
                raise CaptureError("%s: %s (at %s)" % (name, n.attrs["what"], n.attrs["where"]))
        final = _lower(value, {})
        for n in final.walk():
            if n.op == "orthogonal" and n is not final:
                raise CaptureError(
                    "%s: an orthogonal matrix (%s, at %s) is used in arithmetic other than a "
                    "scale: init.orthogonal is computed alone, as the leaf's whole value, with "
                    "its gain (at %s)" % (name, n.draw.what, n.draw.where, where))
        for n in final.walk():
            if n.draw is not None:
                shared.setdefault(id(n.draw), (n.draw, set()))[1].add(name)
        emitter = ParamEmitter([])
        emitter.streams = _streams(name, final, where)
        result = emitter.emit(final)
        shape = tuple(leaf.shape)
        head = "  init.param %s : %s" % (quote(name), tensor_type(shape, ty))
        if axes is not None and all(isinstance(a, str) for a in axes):
            head += " axes [%s]" % ", ".join('"%s"' % mlir_string(a) for a in axes)
        lines.append(head + " {")
        lines.extend(emitter.lines)
        lines.append("    init.yield %s : %s" % (result, tensor_type(shape, ty)))
        lines.append("  }")
    lines.append("}")
    notes = ["%s hold the same random values in JAX (one draw of %s, at %s); initc draws each "
             "of them independently, with the same distribution"
             % (", ".join(sorted(names)), draw.what, draw.where)
             for draw, names in shared.values() if len(names) > 1]
    return "\n".join(lines) + "\n", notes


def _concrete(name, value, leaf, ty, where):
    flat = np.asarray(value).reshape(-1)
    if flat.size == 0 or np.all((flat == flat[0]) | (flat != flat)):
        return fill(float(flat[0]) if flat.size else 0.0, leaf.shape, ty)
    raise CaptureError("%s: the leaf is a constant array with %d distinct values, not computed "
                       "from the key (at %s): the constructor reads data (a file, numpy values "
                       "made outside JAX); init IR computes every value from the key and the "
                       "element's index" % (name, len(np.unique(flat)), where))


def compile_program(ir_text, directory):
    """`initc compile` of the IR into directory/prog for one device: fill_box computes any box
    of it, so one program serves every mesh. The kernels are compiled for this host's CPU only
    (each process compiles its own, and the bits never depend on the CPU)."""
    from .._errors import Error
    from .._program import compile as compile_ir
    model = os.path.join(directory, "model.mlir")
    with open(model, "w") as f:
        f.write(ir_text)
    prog = os.path.join(directory, "prog")
    try:
        compile_ir(model, mesh="dp=1", shard="replicated", target_cpu="native", out=prog).close()
    except Error as error:
        raise CaptureError("initc compile refused the captured IR (%s): %s" % (model, error))
    return prog


def cache_directory():
    """Where compiled programs are kept: $INITC_JAX_CACHE, else ~/.cache/initc/jax."""
    return os.environ.get("INITC_JAX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "initc", "jax")


def cached_program(ir_text):
    """The program of `ir_text`, compiled once per IR, compiler and CPU: a program directory is
    a pure function of them. Made under a temporary name and renamed, so that concurrent
    processes each find a whole one."""
    import hashlib
    import platform
    from .._program import _compiler
    binary = _compiler()
    stat = os.stat(binary)
    key = hashlib.sha256("\0".join([ir_text, os.path.realpath(binary), str(stat.st_size),
                                     str(stat.st_mtime_ns), platform.node()]).encode())
    root = cache_directory()
    final = os.path.join(root, key.hexdigest()[:24])
    if os.path.isfile(os.path.join(final, "prog", "program.json")):
        return os.path.join(final, "prog")
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=root)
    try:
        compile_program(ir_text, tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another process put it there first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return os.path.join(final, "prog")


def _spec_of(sharding, mesh, name, leaf, axes, rules):
    from jax.sharding import NamedSharding, PartitionSpec
    if callable(sharding) and not isinstance(sharding, (jax.sharding.Sharding, PartitionSpec)):
        sharding = sharding(name, leaf)
    if sharding is None:
        if axes is None:
            sharding = PartitionSpec()
        else:
            names = set(mesh.axis_names)
            rules = dict(rules or {})
            sharding = PartitionSpec(*[rules.get(a, a if a in names else None) if a else None
                                       for a in axes])
    if isinstance(sharding, PartitionSpec):
        sharding = NamedSharding(mesh, sharding)
    if not isinstance(sharding, jax.sharding.Sharding):
        raise TypeError("%s: the sharding is %r, not a PartitionSpec or a jax.sharding.Sharding"
                        % (name, sharding))
    return sharding


def _check_divides(name, leaf, sharding, where):
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is None or mesh is None:
        return
    if len(spec) > len(leaf.shape):
        raise ValueError("%s: the PartitionSpec %s has %d entries for a tensor of rank %d "
                         "(created at %s)" % (name, spec, len(spec), len(leaf.shape), where))
    for d, entry in enumerate(spec):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        ways = int(np.prod([mesh.shape[a] for a in names]))
        if leaf.shape[d] % ways:
            raise ValueError(
                "%s: dim %d of shape %s does not divide over mesh axes %s (%d ways): a JAX "
                "sharding holds equal shards only, and the IR's uneven chunks (torch.chunk's "
                "rule) have no jax.Array form; choose another PartitionSpec for it (created at "
                "%s)" % (name, d, list(leaf.shape), list(names), ways, where))


def shardings_for(traced, mesh, sharding, rules=None):
    """{name: Sharding} of every leaf: `sharding` is a callable (name, ShapeDtypeStruct) ->
    PartitionSpec | Sharding | None, a pytree of the constructor's structure with those
    leaves, one PartitionSpec or Sharding for all, or None (Flax's with_partitioning names,
    through `rules`, else replicated)."""
    from jax.sharding import PartitionSpec
    per_leaf = None
    if sharding is not None and not callable(sharding) and \
            not isinstance(sharding, (jax.sharding.Sharding, PartitionSpec)):
        flat = jax.tree_util.tree_flatten_with_path(
            sharding, is_leaf=lambda x: x is None or isinstance(
                x, (jax.sharding.Sharding, PartitionSpec)))[0]
        per_leaf = {}
        for path, s in flat:
            n = path_name(path)
            per_leaf[n[:-len(".value")] if n.endswith(".value") else n] = s
        missing = [n for n, _, _, _ in traced.leaves if n not in per_leaf]
        if missing:
            raise ValueError("the sharding tree has no entry for %s" % ", ".join(missing[:5]))
    out = {}
    for name, leaf, axes, where in traced.leaves:
        chosen = per_leaf[name] if per_leaf is not None else sharding
        s = _spec_of(chosen, mesh, name, leaf, axes, rules)
        _check_divides(name, leaf, s, where)
        out[name] = s
    return out
