"""A constructor's jaxpr as init IR values: an interpreter over the equations.

Random draws are recognized at the jax.random call, not at the bits: every public draw
(uniform, normal, truncated_normal, bernoulli, orthogonal) is a `jit` named after its private
function (`_uniform`, `_normal`, ...) whose inputs are the key and the distribution's scalars.
Matching those names needs no pattern over the bit manipulations inside (which change between
jax versions and differ per dtype), sees every caller however it imported jax.random (an
initializer, Equinox, Flax), and keeps the distribution's parameters exact. Any other random
primitive (random_bits outside those calls: gamma, permutation, ...) reaches a leaf as an op
with no counterpart, named with its line.

Values are numpy arrays (constants, evaluated eagerly by the primitive itself when small),
Keys (PRNG keys as object arrays of their derivation paths) or Nodes (symbolic tensors)."""

import itertools

import jax
import numpy as np
from jax._src import source_info_util

from .nodes import (CaptureError, Draw, Node, Transform, affine, fill, numpy_kind, random_node,
                    transform, unsupported)

try:
    from jax.extend.core import Literal
except ImportError:  # pragma: no cover - older jax
    from jax.core import Literal

# Constants up to this many elements are computed by jax itself; larger ones stay symbolic
# (a broadcast zero of a 4096 x 50000 embedding is one init.fill, never an array).
MAX_CONCRETE = 1 << 12

DRAWS = ("_uniform", "_normal", "_truncated_normal", "_bernoulli", "_orthogonal")
IDENTITY_PRIMITIVES = ("copy", "copy_p", "stop_gradient", "sharding_constraint", "mesh_cast",
                       "reshard", "optimization_barrier", "pvary")
# Primitives that are one IR op (or one construction) each: primitive -> op.
BINARY = {"add": "add", "sub": "sub", "mul": "mul"}
UNARY = {"erf_inv": "erfinv", "exp": "exp", "log": "log", "expm1": "expm1", "log1p": "log1p",
         "sqrt": "sqrt"}
COMPARISONS = {op: op for op in ("lt", "le", "gt", "ge", "eq", "ne")}
LOGICAL = {op: op for op in ("and", "or", "xor", "not")}
IR_TYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64",
            "bool": "i1"}


def ir_type(dtype):
    """The IR element type a value of numpy `dtype` is computed in (integers: exactly, in f64)."""
    dtype = np.dtype(dtype)
    if dtype.name in IR_TYPES:
        return IR_TYPES[dtype.name]
    if np.issubdtype(dtype, np.integer):
        return "f64"
    return None


class Keys:
    """PRNG keys: an object array of derivation paths; `data` when unwrapped (random_unwrap),
    the array then has a trailing dim of 2 with (path, half) entries."""

    def __init__(self, paths, data=False):
        self.paths, self.data = paths, data


def is_key_dtype(dtype):
    return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _library_dirs():
    import os
    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # initc
    for name in ("equinox", "flax"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        dirs.append(os.path.dirname(os.path.abspath(module.__file__)))
    return tuple(d + os.sep for d in dirs)


_LIBRARIES = None


def where_of(eqn):
    """file:line (function) of the constructor's code that made the equation: the innermost
    frame outside jax, and outside Equinox and Flax when the constructor's own frame is there
    (an eqx.nn.Linear's draw is reported at the line that builds the Linear)."""
    global _LIBRARIES
    if _LIBRARIES is None:
        _LIBRARIES = _library_dirs()
    frames = list(source_info_util.user_frames(eqn.source_info.traceback))
    if not frames:
        return ""
    own = [f for f in frames if not f.file_name.startswith(_LIBRARIES)]
    frame = own[0] if own else frames[0]
    return "%s:%d (%s)" % (frame.file_name, frame.start_line, frame.function_name)


def _np_broadcast_in_dim(x, shape, bdims):
    expanded = [1] * len(shape)
    for d, b in enumerate(bdims):
        expanded[b] = x.shape[d]
    return np.broadcast_to(x.reshape(expanded), shape)


def _np_structural(name, x, params, out_shape, extra):
    """The structural primitives on numpy (object) arrays, for keys."""
    if name == "broadcast_in_dim":
        return _np_broadcast_in_dim(x, tuple(out_shape), params["broadcast_dimensions"])
    if name in ("reshape", "squeeze"):
        return x.reshape(out_shape)
    if name == "transpose":
        return np.transpose(x, params["permutation"])
    if name == "slice":
        strides = params["strides"] or (1,) * x.ndim
        return x[tuple(slice(s, e, st) for s, e, st in
                       zip(params["start_indices"], params["limit_indices"], strides))]
    if name == "rev":
        return np.flip(x, params["dimensions"])
    if name == "dynamic_slice":
        starts = [int(np.clip(int(s), 0, n - k)) for s, n, k in
                  zip(extra, x.shape, params["slice_sizes"])]
        return x[tuple(slice(s, s + k) for s, k in zip(starts, params["slice_sizes"]))]
    return None


class Interpreter:
    def __init__(self):
        self._seq = itertools.count()
        self._draws = {}
        # The enclosing jit calls: an equation of a jit's cached jaxpr may carry no line of
        # the constructor, its caller's does.
        self._calls = []

    # -- values ----------------------------------------------------------------------------

    def const(self, value):
        if hasattr(value, "dtype") and is_key_dtype(value.dtype):
            data = np.asarray(jax.random.key_data(value))
            paths = np.empty(value.shape, dtype=object)
            for index in np.ndindex(value.shape):
                paths[index] = (("const", data[index].tobytes()),)
            return Keys(paths)
        return np.asarray(value)

    def node(self, x, aval, where):
        """`x` as a Node of aval's shape and dtype (a constant broadcast as lax does)."""
        shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
        ty, kind = ir_type(dtype), numpy_kind(dtype)
        if isinstance(x, Node):
            if x.shape != shape:
                pad = len(shape) - len(x.shape)
                bdims = tuple(range(pad, len(shape)))
                x = transform(x, Transform("broadcast", shape, where, bdims=bdims))
            return x
        x = np.asarray(x)
        if ty is None:
            return unsupported("values of dtype %s (init IR has f32, bf16, f16, f64, bool)"
                               % dtype, where, shape, "f32")
        flat = x.reshape(-1)
        if flat.size == 0 or np.all((flat == flat[0]) | (flat != flat)):
            value = float(flat[0]) if flat.size else 0.0
            return fill(value, shape, ty, kind)
        return unsupported(
            "a constant array of shape %s with %d distinct values: the constructor reads data "
            "(a file, numpy values made outside JAX), which init IR cannot express; initc "
            "computes every value from the key and the element's index"
            % (list(x.shape), len(np.unique(flat))), where, shape, ty, kind)

    # -- the interpreter -------------------------------------------------------------------

    def run(self, closed, args):
        return self.eval(closed.jaxpr, closed.consts, args)

    def eval(self, jaxpr, consts, args):
        env = {}

        def read(v):
            if isinstance(v, Literal):
                return np.asarray(v.val, dtype=v.aval.dtype)
            return env[v]

        for v, c in zip(jaxpr.constvars, consts):
            env[v] = self.const(c)
        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            outs = self.equation(eqn, [read(v) for v in eqn.invars])
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        return [read(v) for v in jaxpr.outvars]

    def equation(self, eqn, ins):
        name, params, where = eqn.primitive.name, eqn.params, where_of(eqn)
        if self._calls:
            outer, caller = self._calls[0]
            if not where:
                where = caller
            if outer != "<jit>":
                where = "%s, inside %s" % (where, outer)
        avals = [v.aval for v in eqn.outvars]
        if name in ("pjit", "jit"):
            if params.get("name") in DRAWS and ins and isinstance(ins[0], Keys):
                return [self.draw(params["name"], ins, avals[0], where)]
            sub = params["jaxpr"]
            called = params.get("name", "<jit>")
            self._calls.append((_public_name(called), where))
            try:
                return self.eval(sub.jaxpr, sub.consts, ins)
            finally:
                self._calls.pop()
        if name in ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
                    "closed_call", "core_call", "remat", "checkpoint"):
            sub = next(p for p in params.values()
                       if hasattr(p, "jaxpr") and hasattr(p, "consts") or hasattr(p, "eqns"))
            if hasattr(sub, "eqns"):
                return self.eval(sub, (), ins)
            return self.eval(sub.jaxpr, sub.consts, ins)
        if name in IDENTITY_PRIMITIVES:
            return list(ins)
        if any(isinstance(x, Keys) for x in ins) or any(is_key_dtype(a.dtype) for a in avals):
            return self.keys(eqn, name, params, ins, avals, where)
        symbolic = any(isinstance(x, Node) for x in ins)
        small = all(np.prod(a.shape, dtype=np.int64) <= MAX_CONCRETE for a in avals)
        handler = self._handler(name)
        if not symbolic and name != "iota" and (small or not ins):
            out = eqn.primitive.bind(*[jax.numpy.asarray(x) for x in ins], **params)
            outs = [np.asarray(o) for o in (out if eqn.primitive.multiple_results else [out])]
            # An array of distinct values made from equal ones (pad, concatenate of fills) has
            # no IR form as a constant, but has one as the ops that made it.
            if handler is None or all(_uniform(o) for o in outs):
                return outs
            again = handler(ins, params, avals[0], where)
            if any(n.op == "unsupported" for n in again.walk()):
                return outs
            return [again]
        if handler is None:
            return [unsupported("jax primitive %s has no init IR counterpart" % name, where,
                                a.shape, ir_type(a.dtype) or "f32", numpy_kind(a.dtype))
                    for a in avals]
        out = handler(ins, params, avals[0], where)
        return out if isinstance(out, list) else [out]

    def _handler(self, name):
        """The symbolic form of primitive `name`: (ins, params, aval, where) -> Node."""
        for table, method in ((BINARY, self._binary), (UNARY, self._unary),
                              (COMPARISONS, self._compare), (LOGICAL, self._logical)):
            if name in table:
                op = table[name]
                return lambda ins, params, aval, where: method(op, ins, aval, where)
        return getattr(self, "p_" + name, None)

    # -- keys and draws --------------------------------------------------------------------

    def keys(self, eqn, name, params, ins, avals, where):
        shape = tuple(avals[0].shape)
        k = ins[0] if ins else None
        if name == "random_seed":
            seed = np.asarray(ins[0])
            paths = np.empty(seed.shape, dtype=object)
            for index in np.ndindex(seed.shape):
                paths[index] = (("seed", int(seed[index])),)
            return [Keys(paths)]
        if name == "random_wrap":
            if isinstance(k, Keys):
                if not k.data:
                    return self._key_error(name, where, avals)
                paths = np.empty(k.paths.shape[:-1], dtype=object)
                for index in np.ndindex(paths.shape):
                    pair = k.paths[index]
                    if pair[0][0] != pair[1][0] or (pair[0][1], pair[1][1]) != (0, 1):
                        return self._key_error(name, where, avals)
                    paths[index] = pair[0][0]
                return [Keys(paths)]
            data = np.asarray(k)
            paths = np.empty(data.shape[:-1], dtype=object)
            for index in np.ndindex(paths.shape):
                paths[index] = (("data", data[index].tobytes()),)
            return [Keys(paths)]
        if name in ("random_unwrap", "random_key_data"):
            paths = np.empty(k.paths.shape + (2,), dtype=object)
            for index in np.ndindex(k.paths.shape):
                paths[index + (0,)] = (k.paths[index], 0)
                paths[index + (1,)] = (k.paths[index], 1)
            return [Keys(paths, data=True)]
        if name == "random_split" and not k.data:
            count = params["shape"]
            paths = np.empty(k.paths.shape + tuple(count), dtype=object)
            for index in np.ndindex(paths.shape):
                base = index[:k.paths.ndim]
                paths[index] = k.paths[base] + (("split", index[k.paths.ndim:]),)
            return [Keys(paths)]
        if name == "random_fold_in" and not k.data and not isinstance(ins[1], (Keys, Node)):
            data = np.broadcast_to(np.asarray(ins[1]), k.paths.shape)
            paths = np.empty(k.paths.shape, dtype=object)
            for index in np.ndindex(paths.shape):
                paths[index] = k.paths[index] + (("fold_in", int(data[index])),)
            return [Keys(paths)]
        if name == "concatenate" and all(isinstance(x, Keys) for x in ins):
            return [Keys(np.concatenate([x.paths for x in ins], params["dimension"]),
                         ins[0].data)]
        if isinstance(k, Keys):
            extra = [np.asarray(x) for x in ins[1:]]
            if all(not isinstance(x, (Keys, Node)) for x in ins[1:]):
                out = _np_structural(name, k.paths, params, shape, extra)
                if out is not None:
                    return [Keys(np.asarray(out), k.data)]
        return self._key_error(name, where, avals)

    def _key_error(self, name, where, avals):
        return [unsupported("jax primitive %s on PRNG keys has no init IR counterpart (initc "
                            "maps the draws of jax.random.uniform, normal, truncated_normal, "
                            "bernoulli and orthogonal, and the keys split for them)" % name,
                            where, a.shape, ir_type(a.dtype) or "f32",
                            numpy_kind(a.dtype) if not is_key_dtype(a.dtype) else "float")
                for a in avals]

    def _scalar(self, x, what, jit_name, where):
        if isinstance(x, (Node, Keys)):
            raise CaptureError("jax.random.%s: its %s is computed from random values (at %s); "
                               "init IR draws take constant parameters"
                               % (jit_name.lstrip("_"), what, where))
        flat = np.asarray(x, dtype=np.float64).reshape(-1)
        if flat.size and not np.all(flat == flat[0]):
            raise CaptureError("jax.random.%s: its %s differs between the elements (at %s); "
                               "init IR draws take one value" % (jit_name.lstrip("_"), what,
                                                                  where))
        return float(flat[0]) if flat.size else 0.0

    def draw(self, jit_name, ins, aval, where):
        keys, shape, dtype = ins[0], tuple(aval.shape), np.dtype(aval.dtype)
        ty = ir_type(dtype)
        scalars = tuple(self._scalar(x, what, jit_name, where) for x, what in
                        zip(ins[1:], ("first bound", "second bound")
                            if jit_name != "_bernoulli" else ("probability",)))
        identity = (jit_name, tuple(keys.paths.reshape(-1)), scalars, shape, dtype.name)
        draw = self._draws.get(identity)
        if draw is None:
            draw = self._draws[identity] = Draw(next(self._seq), "jax.random." +
                                                jit_name.lstrip("_"), where)
        if jit_name == "_bernoulli":
            u = random_node("uniform", shape, "f32", draw, low=0.0, high=1.0)
            p = fill(scalars[0], shape, "f32")
            return compare("lt", u, p, "f32")
        if ty is None or numpy_kind(dtype) != "float":
            return unsupported("%s of dtype %s" % (draw.what, dtype), where, shape, "f32")
        if jit_name == "_uniform":
            low, high = scalars
            if low == high:
                return fill(low, shape, ty)
            return random_node("uniform", shape, ty, draw, low=low, high=high)
        if jit_name == "_normal":
            return random_node("normal", shape, ty, draw, mean=0.0, std=1.0)
        if jit_name == "_truncated_normal":
            lower, upper = scalars
            return random_node("trunc_normal", shape, ty, draw, mean=0.0, std=1.0, a=lower,
                               b=upper)
        if keys.paths.ndim or len(shape) != 2:
            return unsupported("a batch of orthogonal matrices (jax.random.orthogonal with a "
                               "shape, or under vmap): init.orthogonal is one matrix per "
                               "parameter", where, shape, ty)
        return random_node("orthogonal", shape, ty, draw, gain=1.0)

    # -- elementwise -----------------------------------------------------------------------

    def _args(self, ins, aval, where):
        return [self.node(x, aval, where) for x in ins]

    def _binary(self, op, ins, aval, where):
        a, b = self._args(ins, aval, where)
        if numpy_kind(aval.dtype) == "bool":
            return unsupported("arithmetic %s on booleans" % op, where, aval.shape, "i1", "bool")
        return Node(op, aval.shape, ir_type(aval.dtype), (a, b), kind=numpy_kind(aval.dtype))

    def p_div(self, ins, params, aval, where):
        if numpy_kind(aval.dtype) != "float":
            return unsupported("integer division", where, aval.shape, "f64", "int")
        return self._binary("div", ins, aval, where)

    def p_neg(self, ins, params, aval, where):
        x, = self._args(ins, aval, where)
        return Node("mul", aval.shape, x.dtype, (x, fill(-1.0, aval.shape, x.dtype, x.kind)),
                    kind=x.kind)

    def _unary(self, op, ins, aval, where):
        x, = self._args(ins, aval, where)
        if x.kind != "float":
            return unsupported("%s of integers" % op, where, aval.shape, x.dtype, x.kind)
        return Node(op, aval.shape, x.dtype, (x,))

    def p_rsqrt(self, ins, params, aval, where):
        root = self._unary("sqrt", ins, aval, where)
        return Node("div", aval.shape, root.dtype, (fill(1.0, aval.shape, root.dtype), root))

    def p_sign(self, ins, params, aval, where):
        x, = self._args(ins, aval, where)
        return Node("sign", aval.shape, x.dtype, (x,), kind=x.kind)

    def p_abs(self, ins, params, aval, where):
        x, = self._args(ins, aval, where)
        s = Node("sign", aval.shape, x.dtype, (x,), kind=x.kind)
        # x * sign(x) is -0 for -0; adding +0 gives |x| = +0 there, as jnp.abs.
        return Node("add", aval.shape, x.dtype,
                    (Node("mul", aval.shape, x.dtype, (x, s), kind=x.kind),
                     fill(0.0, aval.shape, x.dtype, x.kind)), kind=x.kind)

    def p_square(self, ins, params, aval, where):
        x, = self._args(ins, aval, where)
        return Node("mul", aval.shape, x.dtype, (x, x), kind=x.kind)

    def p_integer_pow(self, ins, params, aval, where):
        x, = self._args(ins, aval, where)
        y = params["y"]
        if y == 0:
            return fill(1.0, aval.shape, x.dtype, x.kind)
        out = x
        for _ in range(abs(y) - 1):
            out = Node("mul", aval.shape, x.dtype, (out, x), kind=x.kind)
        if y < 0:
            out = Node("div", aval.shape, x.dtype, (fill(1.0, aval.shape, x.dtype), out))
        return out

    def p_pow(self, ins, params, aval, where):
        x, y = self._args(ins, aval, where)
        if x.kind != "float":
            return unsupported("pow of integers", where, aval.shape, x.dtype, x.kind)
        return Node("pow", aval.shape, x.dtype, (x, cast(y, x.dtype, "float")))

    def p_max(self, ins, params, aval, where):
        a, b = self._args(ins, aval, where)
        return select(compare("gt", a, b, _compute(a)), a, b)

    def p_min(self, ins, params, aval, where):
        a, b = self._args(ins, aval, where)
        return select(compare("lt", a, b, _compute(a)), a, b)

    def p_clamp(self, ins, params, aval, where):
        lo, x, hi = ins
        x = self.node(x, aval, where)
        if not isinstance(lo, Node) and not isinstance(hi, Node) and x.kind == "float" \
                and np.asarray(lo).size == 1 and np.asarray(hi).size == 1:
            return Node("clamp", aval.shape, x.dtype, (x,), min=float(np.asarray(lo)),
                        max=float(np.asarray(hi)))
        lo, hi = self.node(lo, aval, where), self.node(hi, aval, where)
        low = select(compare("lt", x, lo, _compute(x)), lo, x)
        return select(compare("gt", low, hi, _compute(x)), hi, low)

    def _compare(self, op, ins, aval, where):
        operand = ins[0] if isinstance(ins[0], Node) else ins[1]
        like = _Aval(aval.shape, _numpy_dtype_of(operand, ins))
        a, b = self._args(ins, like, where)
        if a.kind == "bool":
            a, b = cast(a, "f32", "float"), cast(b, "f32", "float")
        return compare(op, a, b, _compute(a))

    def _logical(self, op, ins, aval, where):
        if numpy_kind(aval.dtype) != "bool":
            return unsupported("bitwise %s of integers" % op, where, aval.shape, "f64", "int")
        xs = [cast(x, "f32", "float") for x in self._args(ins, aval, where)]
        shape = tuple(aval.shape)
        if op == "not":
            value = Node("sub", shape, "f32", (fill(1.0, shape, "f32"), xs[0]))
        else:
            value = Node({"and": "mul", "or": "add", "xor": "sub"}[op], shape, "f32", tuple(xs))
        return cast(value, "i1", "bool")

    def p_select_n(self, ins, params, aval, where):
        pred, cases = ins[0], ins[1:]
        boolean = pred.kind == "bool" if isinstance(pred, Node) else \
            np.asarray(pred).dtype == np.bool_
        if len(cases) != 2 or not boolean:
            return unsupported("select_n of %d cases on an integer predicate" % len(cases),
                               where, aval.shape, ir_type(aval.dtype), numpy_kind(aval.dtype))
        mask = self.node(pred, _Aval(aval.shape, np.bool_), where)
        on_false, on_true = [self.node(c, aval, where) for c in cases]
        return select(mask, on_true, on_false)

    def p_convert_element_type(self, ins, params, aval, where):
        x = ins[0]
        source = np.dtype(x.dtype) if not isinstance(x, Node) else None
        x = self.node(x, _Aval(aval.shape, source if source is not None else aval.dtype), where) \
            if not isinstance(x, Node) else x
        kind, ty = numpy_kind(aval.dtype), ir_type(aval.dtype)
        if ty is None:
            return unsupported("conversion to %s" % np.dtype(aval.dtype), where, aval.shape,
                               "f32")
        if x.kind == "float" and kind == "int":
            return unsupported("conversion of a float value to an integer", where, aval.shape,
                               ty, kind)
        return cast(x, ty, kind)

    # -- structure -------------------------------------------------------------------------

    def _structural(self, kind, x, aval, where, **attrs):
        x = x if isinstance(x, Node) else self.node(x, _Aval(np.shape(x), np.asarray(x).dtype),
                                                    where)
        return transform(x, Transform(kind, aval.shape, where, **attrs))

    def p_broadcast_in_dim(self, ins, params, aval, where):
        return self._structural("broadcast", ins[0], aval, where,
                                bdims=tuple(params["broadcast_dimensions"]))

    def p_reshape(self, ins, params, aval, where):
        if params.get("dimensions") is not None:
            return unsupported("reshape with dimensions", where, aval.shape,
                               ir_type(aval.dtype), numpy_kind(aval.dtype))
        return self._structural("reshape", ins[0], aval, where)

    def p_squeeze(self, ins, params, aval, where):
        return self._structural("reshape", ins[0], aval, where)

    def p_expand_dims(self, ins, params, aval, where):
        return self._structural("reshape", ins[0], aval, where)

    def p_transpose(self, ins, params, aval, where):
        return self._structural("transpose", ins[0], aval, where,
                                perm=tuple(params["permutation"]))

    def p_slice(self, ins, params, aval, where):
        strides = params["strides"] or (1,) * len(aval.shape)
        return self._structural("slice", ins[0], aval, where,
                                start=tuple(params["start_indices"]), strides=tuple(strides))

    def p_rev(self, ins, params, aval, where):
        return self._structural("rev", ins[0], aval, where, dims=tuple(params["dimensions"]))

    def p_dynamic_slice(self, ins, params, aval, where):
        x, starts = ins[0], ins[1:]
        if any(isinstance(s, Node) for s in starts):
            return unsupported("dynamic_slice at a computed index", where, aval.shape,
                               ir_type(aval.dtype), numpy_kind(aval.dtype))
        shape = x.shape
        begin = tuple(int(np.clip(int(np.asarray(s)), 0, n - k))
                      for s, n, k in zip(starts, shape, params["slice_sizes"]))
        return self._structural("slice", x, aval, where, start=begin, strides=(1,) * len(begin))

    def _placed(self, x, aval, low, where):
        x = self.node(x, _Aval(np.shape(x), getattr(x, "dtype", aval.dtype)), where) \
            if not isinstance(x, Node) else x
        return transform(x, Transform("shift", aval.shape, where, low=tuple(low)))

    def p_concatenate(self, ins, params, aval, where):
        dim, shape = params["dimension"], tuple(aval.shape)
        out, offset = None, 0
        for x in ins:
            n = np.shape(x)[dim] if not isinstance(x, Node) else x.shape[dim]
            low = [0] * len(shape)
            low[dim] = offset
            part = self._placed(x, aval, low, where)
            out = part if out is None else select(range_mask(shape, dim, offset, offset + n,
                                                             where), part, out)
            offset += n
        return out

    def p_pad(self, ins, params, aval, where):
        x, value = ins
        config = params["padding_config"]
        if isinstance(value, Node) or any(i != 0 or lo < 0 or hi < 0 for lo, hi, i in config):
            return unsupported("pad with interior, negative or computed padding", where,
                               aval.shape, ir_type(aval.dtype), numpy_kind(aval.dtype))
        shape = tuple(aval.shape)
        low = [lo for lo, _, _ in config]
        out = self._placed(x, aval, low, where)
        background = self.node(value, aval, where)
        for d, (lo, hi, _) in enumerate(config):
            if lo or hi:
                out = select(range_mask(shape, d, lo, shape[d] - hi, where), out, background)
        return out

    def p_dynamic_update_slice(self, ins, params, aval, where):
        x, update, starts = ins[0], ins[1], ins[2:]
        if any(isinstance(s, Node) for s in starts):
            return unsupported("dynamic_update_slice at a computed index", where, aval.shape,
                               ir_type(aval.dtype), numpy_kind(aval.dtype))
        shape = tuple(aval.shape)
        ushape = np.shape(update) if not isinstance(update, Node) else update.shape
        begin = [int(np.clip(int(np.asarray(s)), 0, n - k)) for s, n, k in
                 zip(starts, shape, ushape)]
        out = self.node(x, aval, where)
        placed = self._placed(update, aval, begin, where)
        mask = None
        for d, (b, k) in enumerate(zip(begin, ushape)):
            if k != shape[d]:
                m = range_mask(shape, d, b, b + k, where)
                mask = m if mask is None else cast(
                    Node("mul", shape, "f32", (cast(mask, "f32", "float"),
                                               cast(m, "f32", "float"))), "i1", "bool")
        return placed if mask is None else select(mask, placed, out)

    def p_iota(self, ins, params, aval, where):
        shape, dtype = tuple(params["shape"]), np.dtype(params["dtype"])
        kind, ty = numpy_kind(dtype), ir_type(dtype)
        if ty is None or kind == "bool":
            return unsupported("iota of %s" % dtype, where, shape, "f32")
        return affine(0.0, {params["dimension"]: 1.0}, shape, ty, kind)


def _uniform(x):
    flat = np.asarray(x).reshape(-1)
    return flat.size <= 1 or bool(np.all((flat == flat[0]) | (flat != flat)))


def _public_name(jit_name):
    """jax.random's private draws by their public name (`_exponential`: jax.random.exponential)."""
    if jit_name.startswith("_") and hasattr(jax.random, jit_name.lstrip("_")):
        return "jax.random." + jit_name.lstrip("_")
    return "<jit>"


class _Aval:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)


def _numpy_dtype_of(operand, ins):
    if isinstance(operand, Node):
        if operand.kind == "bool":
            return np.bool_
        if operand.kind == "int":
            return np.int64
        return {"f32": np.float32, "f64": np.float64, "f16": np.float16,
                "bf16": jax.numpy.bfloat16}[operand.dtype]
    return np.asarray(operand).dtype


def _compute(x):
    """The type two values are compared in: f64 for integers and f64, else f32 (a difference of
    distinct f32, bf16 or f16 values is never 0 there)."""
    return "f64" if x.dtype == "f64" else "f32"


def cast(x, ty, kind):
    if x.dtype == ty and x.kind == kind:
        return x
    if x.dtype == ty:
        out = Node(x.op, x.shape, x.dtype, x.args, kind=kind, **x.attrs)
        out.draw, out.view = x.draw, x.view
        return out
    return Node("cast", x.shape, ty, (x,), kind=kind)


def compare(op, a, b, ty):
    """A boolean (i1) tensor: a op b, from the sign of a - b in `ty`."""
    if op in ("lt", "le"):
        a, b, op = b, a, {"lt": "gt", "le": "ge"}[op]
    shape = a.shape
    a, b = cast(a, ty, "float"), cast(b, ty, "float")
    s = Node("sign", shape, ty, (Node("sub", shape, ty, (a, b)),))
    if op == "gt":
        value = Node("clamp", shape, ty, (s,), min=0.0, max=1.0)
    elif op == "ge":
        value = Node("add", shape, ty, (s, fill(1.0, shape, ty)))
    elif op == "eq":
        value = Node("sub", shape, ty, (fill(1.0, shape, ty), Node("mul", shape, ty, (s, s))))
    else:
        value = Node("mul", shape, ty, (s, s))
    return cast(value, "i1", "bool")


def select(mask, on_true, on_false):
    if mask.op == "fill":
        return on_true if mask.attrs["value"] else on_false
    return Node("select", on_true.shape, on_true.dtype, (mask, on_true, on_false),
                kind=on_true.kind)


def range_mask(shape, dim, lo, hi, where):
    """True where lo <= index along dim < hi: the sum of two signs is 2 inside, 0 outside."""
    up = affine(-lo + 0.5, {dim: 1.0}, shape, "f64", "int")
    down = affine(hi - 0.5, {dim: -1.0}, shape, "f64", "int")
    total = Node("add", shape, "f64", (Node("sign", shape, "f64", (up,)),
                                       Node("sign", shape, "f64", (down,))))
    return cast(total, "i1", "bool")
