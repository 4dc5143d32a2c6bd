"""Symbolic tensors of the JAX capture: a value as a tree of init IR ops over its shape.

A Node prints through initc._ir_printer's ParamEmitter (op, shape, dtype, args, attrs). Two
ops exist only here and are lowered before printing: `affine` (start + sum step_d * index_d,
what integer iota arithmetic yields; an init.iota per dim, added in f64) and `unsupported` (an
op with no IR counterpart, reported only if it reaches a leaf). Integer values are computed in
f64, exact for the index arithmetic the constructors do (|x| < 2^53)."""

import math

import numpy as np


class CaptureError(ValueError):
    """A constructor the JAX capture cannot express; the message names the leaf, the primitive
    and the source line."""


RANDOM_OPS = ("uniform", "normal", "trunc_normal", "orthogonal")


class Draw:
    """One random draw of the constructor (a jax.random call on one key): `seq` orders draws as
    the jaxpr does; `where` is its source line."""

    def __init__(self, seq, what, where):
        self.seq, self.what, self.where = seq, what, where


class Node:
    def __init__(self, op, shape, dtype, args=(), kind="float", **attrs):
        self.op, self.shape, self.dtype = op, tuple(int(s) for s in shape), dtype
        self.args, self.attrs, self.kind = tuple(args), attrs, kind  # kind: float, int, bool
        self.draw, self.view = None, ()  # random ops: the draw read, through which views

    def numel(self):
        return math.prod(self.shape)

    def walk(self, seen=None):
        seen = set() if seen is None else seen
        if id(self) in seen:
            return
        seen.add(id(self))
        for a in self.args:
            yield from a.walk(seen)
        yield self


def random_node(op, shape, dtype, draw, **attrs):
    node = Node(op, shape, dtype, **attrs)
    node.draw = draw
    return node


def unsupported(what, where, shape, dtype, kind="float"):
    return Node("unsupported", shape, dtype, kind=kind, what=what, where=where)


def fill(value, shape, dtype, kind="float"):
    return Node("fill", shape, dtype, kind=kind, value=float(value))


def affine(start, coefs, shape, dtype, kind):
    coefs = {d: c for d, c in coefs.items() if c != 0 and shape[d] > 1}
    if not coefs:
        return fill(start, shape, dtype, kind)
    return Node("affine", shape, dtype, kind=kind, start=float(start), coefs=coefs)


class Transform:
    """A change of shape applied to a whole tree. `index(new_index) -> old index` is, per kind:
    broadcast (bdims: old dim d is new dim bdims[d]; new dims of size > 1 repeat), transpose
    (perm), slice (start, stride per dim), shift (low per dim: new = old + low, the rest of the
    new tensor undefined: concatenate and pad select around it), rev (dims), reshape (row-major,
    the linear index kept)."""

    def __init__(self, kind, shape, where, **attrs):
        self.kind, self.shape, self.where, self.attrs = kind, tuple(shape), where, attrs
        self.key = (kind, self.shape) + tuple(sorted((k, repr(v)) for k, v in attrs.items()))


def _reshape_groups(old, new):
    """Pairs (old dims, new dims) of a row-major reshape whose products match, size-1 dims
    attached to no group; None when the dims do not line up in groups (never for reshapes)."""
    old_dims = [d for d, n in enumerate(old) if n != 1]
    new_dims = [d for d, n in enumerate(new) if n != 1]
    groups, i, j = [], 0, 0
    while i < len(old_dims) or j < len(new_dims):
        go, gn = [old_dims[i]], [new_dims[j]]
        po, pn = old[old_dims[i]], new[new_dims[j]]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn:
                go.append(old_dims[i])
                po *= old[old_dims[i]]
                i += 1
            else:
                gn.append(new_dims[j])
                pn *= new[new_dims[j]]
                j += 1
        groups.append((go, gn))
    return groups


def _row_major_strides(shape, dims):
    strides, s = {}, 1
    for d in reversed(dims):
        strides[d] = s
        s *= shape[d]
    return strides


def _transform_affine(node, t, old):
    start, coefs, new = node.attrs["start"], dict(node.attrs["coefs"]), t.shape
    a = t.attrs
    out = {}
    if t.kind == "broadcast":
        for d, c in coefs.items():
            out[a["bdims"][d]] = c
    elif t.kind == "transpose":
        for i, d in enumerate(a["perm"]):
            if d in coefs:
                out[i] = coefs[d]
    elif t.kind == "slice":
        for d, c in coefs.items():
            start += c * a["start"][d]
            out[d] = c * a["strides"][d]
    elif t.kind == "shift":
        for d, c in coefs.items():
            start -= c * a["low"][d]
            out[d] = c
    elif t.kind == "rev":
        for d, c in coefs.items():
            if d in a["dims"]:
                start += c * (old[d] - 1)
                out[d] = -c
            else:
                out[d] = c
    elif t.kind == "reshape":
        for go, gn in _reshape_groups(old, new):
            strides = _row_major_strides(old, go)
            # The group's value is sum c_d * i_d; with c_d = k * stride_d it is k * (the
            # group's linear index), which is affine in the new dims too.
            cs = [coefs.get(d, 0) for d in go]
            if not any(cs):
                continue
            k = cs[-1] / strides[go[-1]]
            if any(c != k * strides[d] for c, d in zip(cs, go)):
                return None
            for d, s in _row_major_strides(new, gn).items():
                out[d] = k * s
    return affine(start, out, new, node.dtype, node.kind)


def _view_preserves_order(t, old):
    """Whether the transform keeps every element at its row-major linear index with no
    repetition: then a random op over the new shape reads the same elements."""
    if t.kind == "reshape":
        return True
    if t.kind == "broadcast":
        bd = t.attrs["bdims"]
        kept = [bd[d] for d in range(len(old)) if old[d] != 1]
        repeated = any(n != 1 and (d not in bd or old[bd.index(d)] == 1)
                       for d, n in enumerate(t.shape))
        return not repeated and kept == sorted(kept)
    if t.kind == "transpose":
        moved = [d for d in t.attrs["perm"] if old[d] != 1]
        return moved == sorted(moved)
    return False


def transform(node, t, memo=None):
    """`node` seen through `t`: a tree over t.shape."""
    memo = {} if memo is None else memo
    if id(node) in memo:
        return memo[id(node)]
    old = node.shape
    if node.op == "fill":
        out = fill(node.attrs["value"], t.shape, node.dtype, node.kind)
    elif node.op == "unsupported":
        out = unsupported(node.attrs["what"], node.attrs["where"], t.shape, node.dtype, node.kind)
    elif node.op == "affine":
        out = _transform_affine(node, t, old)
        if out is None:
            out = unsupported("a reshape that merges dims of an index-dependent value (iota) "
                              "is not affine in the new index", t.where, t.shape, node.dtype,
                              node.kind)
    elif node.op in RANDOM_OPS:
        keeps, view, why = _view_preserves_order(t, old), None, None
        if node.op == "orthogonal":
            if keeps and t.shape[0] == old[0]:
                view = node.view
            elif t.kind == "transpose" and len(old) == 2:
                view = node.view + (t.key,)  # Q^T: orthogonal over the transposed shape
            else:
                why = ("an orthogonal matrix seen so that its rows are not the IR's "
                       "(init.orthogonal is orthogonal over shape[0] and the product of the "
                       "other dims)")
        elif t.kind == "broadcast" and not keeps:
            why = ("broadcasting a random value repeats its elements (init IR draws every "
                   "element of a random op at its own index)")
        else:
            # A view that keeps linear order is the same read; another one (a transpose, a
            # slice, a part of a concatenation) is a read of its own.
            view = node.view if keeps else node.view + (t.key,)
        if why is not None:
            out = unsupported(why, t.where, t.shape, node.dtype, node.kind)
        else:
            out = Node(node.op, t.shape, node.dtype, kind=node.kind, **node.attrs)
            out.draw, out.view = node.draw, view
    else:
        args = [transform(a, t, memo) for a in node.args]
        out = Node(node.op, t.shape, node.dtype, args, kind=node.kind, **node.attrs)
    memo[id(node)] = out
    return out


def numpy_kind(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool"
    if np.issubdtype(dtype, np.integer):
        return "int"
    return "float"
