#!/usr/bin/python3
"""Capture a PyTorch model constructor into init IR (ir-spec/capture.md).

    initc_capture.py --factory models.py:build_model --kwargs '{"dim": 512}' -o model.mlir

The factory runs on the meta device: no parameter memory is allocated. A TorchFunctionMode sees
every torch call; each tensor storage carries the expression (a tree of init IR ops over the
storage's shape) that computes its current value, and every in-place op, torch.nn.init function
or re-initialization replaces or extends that tree. At the end every parameter and persistent
buffer of the state dict becomes one `init.param` whose body evaluates its final tree (earlier,
overwritten trees stay in the body as dead values; init-eliminate-dead-inits drops them).

Depends only on torch (1.13 or later) and the Python standard library.
"""

import argparse
import importlib
import importlib.util
import itertools
import json
import math
import os
import struct
import sys
import traceback

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode


class CaptureError(Exception):
    """A model the capture cannot express; the message names the op and where it happened."""


#===------------------------------------------------------------------------------------------===#
# Expressions
#===------------------------------------------------------------------------------------------===#

DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.bool: "i1", torch.int64: "i64",
}
FLOAT_TYPES = ("f32", "f16", "bf16", "f64")
RANDOM_OPS = ("uniform", "normal", "trunc_normal", "variance_scaling", "orthogonal")
UNARY_OPS = ("erfinv", "exp", "log", "sqrt", "sign")
BINARY_OPS = ("add", "sub", "mul", "div")
# Ops whose element values depend on the element's position (not only on its linear index).
INDEXED_OPS = ("iota", "eye", "tril", "triu", "index_mask", "orthogonal")
_sequence = itertools.count()


class Node:
    """One init IR op over a tensor of `shape` and element type `dtype`."""

    def __init__(self, op, shape, dtype, args=(), where=None, **attrs):
        self.op, self.shape, self.dtype = op, tuple(int(s) for s in shape), dtype
        self.args, self.attrs, self.where = tuple(args), attrs, where
        # Random ops are numbered in program order; streams follow that order per parameter.
        self.seq = next(_sequence) if op in RANDOM_OPS else None
        # A random op read through a view (IndexMap; None: element i is the op's element i).
        self.imap = None
        if op in RANDOM_OPS and where is None:
            self.where = user_location()
        self.origin = self.where  # where the random op was drawn

    def derived(self, shape, args=(), op=None, attrs=None):
        """A copy over `shape` with `args`: the same op (or `op` with `attrs`), the same random
        number, index map and locations."""
        out = Node.__new__(Node)
        out.op, out.shape, out.dtype = op or self.op, tuple(int(x) for x in shape), self.dtype
        out.args, out.attrs = tuple(args), dict(self.attrs if attrs is None else attrs)
        out.where, out.seq, out.imap, out.origin = self.where, self.seq, self.imap, self.origin
        return out

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

    def find(self, op):
        return next((n for n in self.walk() if n.op == op), None)


def unsupported(what, shape=(), dtype="f32", inputs=(), where=None):
    """An op the IR cannot express, at `where` (default: the factory's current line). When one
    of `inputs` already holds such an op, that one is the reason (its message names the real
    op), over the new shape."""
    for node in inputs:
        inner = first_unsupported(node)
        if inner is not None:
            return inner.derived(shape)
    here = user_location()
    return Node("unsupported", shape, dtype, where=here if here != "?" else (where or here),
                what=what)


def first_unsupported(node):
    return next((n for n in node.walk() if n.op == "unsupported"), None)


def random_leaves(node):
    return [n for n in node.walk() if n.op in RANDOM_OPS]


def strided_injective(sizes, strides):
    """True when no two elements of a strided view share a position, False when some
    certainly do (a stride 0: expand, broadcasting), None when this quick test cannot tell."""
    dims = sorted((st, n) for n, st in zip(sizes, strides) if n > 1)
    extent = 0
    for stride, n in dims:
        if stride == 0:
            return False
        if stride <= extent:
            return None
        extent += (n - 1) * stride
    return True


class IndexMap:
    """Which element of its random op each element of a node holds, in PyTorch, once the op has
    been read through views (a transpose, a slice, an expand) or written into part of another
    tensor. `view`: element k (row-major over `sizes`) is element offset + sum(i_d * strides_d)
    of the node read (a tensor of `numel` elements, mapped by `inner`); `place`: the node is a
    tensor of `numel` elements whose elements at that strided position hold the elements of
    `inner`'s node, the others none (-1)."""

    def __init__(self, kind, inner, sizes, strides, offset, numel):
        self.kind, self.inner = kind, inner
        self.sizes, self.strides = tuple(int(x) for x in sizes), tuple(int(x) for x in strides)
        self.offset, self.numel = int(offset), int(numel)
        self.key = (kind, inner.key if inner else None, self.sizes, self.strides, self.offset,
                    self.numel)
        injective = strided_injective(self.sizes, self.strides)
        inner_injective = True if inner is None else inner.injective
        self.injective = False if False in (injective, inner_injective) else \
            (None if None in (injective, inner_injective) else True)

    def indices(self):
        """The map as a contiguous int64 CPU tensor (-1: no element)."""
        count = math.prod(self.sizes)
        if self.kind == "view":
            base = torch.arange(self.numel) if self.inner is None else self.inner.indices()
            return base.as_strided(self.sizes, self.strides, self.offset).reshape(-1).clone()
        src = torch.arange(count) if self.inner is None else self.inner.indices()
        out = torch.full((self.numel,), -1, dtype=torch.int64)
        out.as_strided(self.sizes, self.strides, self.offset).copy_(src.view(self.sizes))
        return out


def round_to(value, dtype):
    """`value` as an element of `dtype` holds it (init IR's rounding, as eager PyTorch's): floats
    to f32 first (nearest even) and 16-bit types from there; i64 toward zero (NaN, infinities and
    values out of range: -2^63, as torch on x86); i1 true when not 0."""
    value = float(value)
    if dtype == "i1":
        return 1.0 if value else 0.0
    if dtype == "i64":
        if not math.isfinite(value) or not -2.0 ** 63 <= value < 2.0 ** 63:
            return -2.0 ** 63
        return float(int(value))
    if dtype == "f64" or not math.isfinite(value):
        return value
    try:
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    if dtype == "bf16" and math.isfinite(value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF
        value = struct.unpack("<f", struct.pack("<I", bits))[0]
    elif dtype == "f16" and math.isfinite(value):
        try:
            value = struct.unpack("<e", struct.pack("<e", value))[0]
        except OverflowError:  # 65504 is the largest half; from 65520 on, nearest even is inf
            value = math.copysign(65504.0 if abs(value) < 65520.0 else math.inf, value)
    return value


def fill(value, shape, dtype):
    return Node("fill", shape, dtype, value=round_to(value, dtype))


def compute_type(dtype):
    return "f64" if dtype == "f64" else "f32"


# Random samples are made in f32 for every dtype (an f64 sample is the f32 one widened, rng.md
# rule 8), so their parameters are checked there.
SAMPLE_TYPE = "f32"


def uniform_node(shape, dtype, low, high, what):
    """U(low, high) over `shape`, as PyTorch's uniform_ gives it: bounds equal in f32
    give the constant `low` (init.uniform needs low < high); low > high, or bounds that are not
    finite there, are refused as PyTorch refuses them (or would give infinities)."""
    low, high = float(low), float(high)
    ct = SAMPLE_TYPE
    lo, hi = round_to(low, ct), round_to(high, ct)
    if not all(math.isfinite(v) for v in (lo, hi, round_to(high - low, ct))):
        raise CaptureError("%s: %s(%s, %s): the bounds and their difference must be finite in %s"
                           % (user_location(), what, low, high, ct))
    if lo > hi:
        raise CaptureError("%s: %s(%s, %s): the lower bound is above the upper one (PyTorch "
                           "refuses it too)" % (user_location(), what, low, high))
    if lo == hi:
        # torch computes u * (high - low) + low: uniform_(-0.0, 0.0) gives +0.
        return fill(lo + 0.0, shape, dtype)
    return Node("uniform", shape, dtype, low=low, high=high)


def normal_node(shape, dtype, mean, std, what):
    """N(mean, std) over `shape`, as PyTorch's normal_ gives it: std 0 in f32 gives
    the constant `mean` (init.normal needs std > 0); std < 0 or values that are not finite are
    refused."""
    mean, std = float(mean), float(std)
    ct = SAMPLE_TYPE
    if not (math.isfinite(round_to(mean, ct)) and math.isfinite(round_to(std, ct))):
        raise CaptureError("%s: %s(mean=%s, std=%s): mean and std must be finite in %s"
                           % (user_location(), what, mean, std, ct))
    if std < 0:
        raise CaptureError("%s: %s(mean=%s, std=%s): std must be >= 0 (PyTorch refuses it too)"
                           % (user_location(), what, mean, std))
    if round_to(std, ct) == 0:
        return fill(mean, shape, dtype)
    return Node("normal", shape, dtype, mean=mean, std=std)


def trunc_normal_node(shape, dtype, mean, std, a, b, what):
    """trunc_normal_(mean, std, a, b) over `shape`: a == b gives the constant a (PyTorch clamps
    every value to it); arguments PyTorch fails on (std <= 0: a division by zero or an empty
    range; a > b) and values init IR cannot take are refused."""
    mean, std, a, b = float(mean), float(std), float(a), float(b)
    ct = SAMPLE_TYPE
    call = "%s(mean=%s, std=%s, a=%s, b=%s)" % (what, mean, std, a, b)
    if not all(math.isfinite(round_to(v, ct)) for v in (mean, std, a, b)):
        raise CaptureError("%s: %s: the arguments must be finite in %s" % (user_location(), call, ct))
    if std <= 0:
        raise CaptureError("%s: %s: std must be positive (PyTorch fails on it too)"
                           % (user_location(), call))
    if a > b:
        raise CaptureError("%s: %s: a must not be above b (PyTorch fails on it too)"
                           % (user_location(), call))
    if round_to(a, ct) == round_to(b, ct):
        return fill(a, shape, dtype)
    if round_to(std, ct) == 0:
        raise CaptureError("%s: %s: std is 0 in %s, which init.trunc_normal cannot take; use "
                           "torch.nn.init.constant_ for a constant" % (user_location(), call, ct))
    return Node("trunc_normal", shape, dtype, mean=mean, std=std, a=a, b=b)


def variance_scaling_node(shape, dtype, gain, mode, distribution, what):
    """xavier_* / kaiming_* over `shape` (the fan from it): init.variance_scaling, or the uniform
    or normal op it stands for when gain^2 is 0 or not finite in f32; gain 0 gives
    zeros and a negative gain is refused, as in PyTorch."""
    gain = float(gain)
    if gain < 0:
        raise CaptureError("%s: %s with gain %s: PyTorch fails on a negative gain (a negative std "
                           "or an empty range)" % (user_location(), what, gain))
    node = Node("variance_scaling", shape, dtype, scale=gain * gain, mode=mode,
                distribution=distribution)
    scale = round_to(gain * gain, SAMPLE_TYPE)
    if scale > 0 and math.isfinite(scale):
        return node
    node = explicit_random(node)
    if node.op == "uniform":
        return uniform_node(shape, dtype, node.attrs["low"], node.attrs["high"], what)
    return normal_node(shape, dtype, 0.0, node.attrs["std"], what)


def is_index_free(node):
    """True when every element depends only on its linear index (so any reshape keeps it)."""
    return all(n.op not in INDEXED_OPS and n.op not in ("unsupported",) for n in node.walk())


def fan_in_and_out(shape):
    if len(shape) < 2:
        raise CaptureError("fan in and fan out need a tensor of 2 or more dims, got shape %s"
                           % (list(shape),))
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def explicit_random(node):
    """A variance_scaling op as the uniform/normal op it stands for (its fan is shape-bound)."""
    if node.op != "variance_scaling":
        return node
    fan_in, fan_out = fan_in_and_out(node.shape)
    fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[node.attrs["mode"]]
    var = node.attrs["scale"] / fan
    if node.attrs["distribution"] == "uniform":
        bound = math.sqrt(3.0 * var)
        return node.derived(node.shape, op="uniform", attrs=dict(low=-bound, high=bound))
    return node.derived(node.shape, op="normal", attrs=dict(mean=0.0, std=math.sqrt(var)))


def rebuild(node, shape, dim_map, memo=None):
    """`node` over `shape`; dim_map maps old dims to new dims (None: any reshape, index-free)."""
    memo = {} if memo is None else memo
    if id(node) in memo:
        return memo[id(node)]
    shape = tuple(shape)
    if node.shape == shape:
        return node
    op, attrs = node.op, dict(node.attrs)
    if op == "variance_scaling":
        node = explicit_random(node)
        op, attrs = node.op, dict(node.attrs)
    args = [rebuild(a, shape, dim_map, memo) for a in node.args]
    if op in INDEXED_OPS:
        if dim_map is None:
            return unsupported("reshaping %s (its values depend on their position)" % op,
                               shape, node.dtype)
        if op == "iota":
            d = attrs["dim"]
            if node.shape[d] == 1:
                return fill(attrs["start"], shape, node.dtype)
            attrs["dim"] = dim_map[d]
        elif op == "index_mask":
            d = attrs["dim"]
            if node.shape[d] == 1:
                return fill(attrs["index"] == 0, shape, node.dtype)
            attrs["dim"] = dim_map[d]
        elif op in ("tril", "triu"):
            r = len(node.shape)
            if (dim_map.get(r - 1) != len(shape) - 1 or dim_map.get(r - 2) != len(shape) - 2):
                return unsupported("reshaping %s so that its matrix dims move" % op, shape,
                                   node.dtype)
        else:
            return unsupported("reshaping %s" % op, shape, node.dtype)
    out = node.derived(shape, args, op=op, attrs=attrs)
    memo[id(node)] = out
    return out


def reshape(node, shape):
    shape = tuple(int(s) for s in shape)
    if node.shape == shape:
        return node
    if first_unsupported(node) is not None:
        return unsupported("", shape, node.dtype, inputs=(node,))
    if node.numel() != math.prod(shape):
        return broadcast(node, shape)
    old = [d for d, s in enumerate(node.shape) if s != 1]
    new = [d for d, s in enumerate(shape) if s != 1]
    dim_map = None
    if [node.shape[d] for d in old] == [shape[d] for d in new]:
        dim_map = dict(zip(old, new))
    elif not is_index_free(node):
        return unsupported("reshaping a tensor whose values depend on their position from %s to %s"
                           % (list(node.shape), list(shape)), shape, node.dtype)
    return rebuild(node, shape, dim_map)


def broadcast(node, shape):
    """`node` broadcast to `shape` (torch's rules, trailing dims aligned). Exact for values that
    do not depend on the repeated dims (constants, aranges and masks along the kept dims); a
    random tensor is refused: PyTorch repeats its values, and init IR draws every element of a
    random op at its own index."""
    what = "broadcasting a tensor of shape %s to %s" % (list(node.shape), list(shape))
    lead = len(shape) - len(node.shape)
    if lead < 0 or any(n not in (1, m) for n, m in zip(node.shape, shape[lead:])):
        return unsupported(what + " (the shapes do not broadcast)", shape, node.dtype)
    randoms = random_leaves(node)
    if randoms:
        return unsupported(
            "%s repeats the values of the random tensor drawn at %s (expand, broadcasting): in "
            "PyTorch the copies are equal, and init IR draws every element of a random op at its "
            "own index; draw the random tensor at the full shape if independent values are meant"
            % (what, randoms[0].origin), shape, node.dtype, where=randoms[0].origin)
    dim_map = {d: d + lead for d in range(len(node.shape))}
    # Dims that grow are broadcast; rebuild maps the others (their sizes stay).
    kept = [d for d in range(len(node.shape)) if node.shape[d] == shape[d + lead]]
    return rebuild(node, shape, {d: dim_map[d] for d in kept} if kept else {})


def cast(node, dtype):
    if node.dtype == dtype:
        return node
    if node.op == "fill":
        return fill(node.attrs["value"], node.shape, dtype)
    # An iota in another type is the same values only where no rounding step is lost: from
    # integers to floats, and from a float to a narrower float (iota computes in f64 and
    # rounds through f32, as the cast would).
    narrower = {"f64": ("f32", "f16", "bf16"), "f32": ("f16", "bf16"), "i64": FLOAT_TYPES}
    if node.op == "iota" and dtype in narrower.get(node.dtype, ()):
        return Node("iota", node.shape, dtype, **node.attrs)
    if node.op in ("eye", "tril", "triu") and dtype != "i64":
        return Node(node.op, node.shape, dtype, **node.attrs)
    return Node("cast", node.shape, dtype, (node,))


def binary(op, lhs, rhs, dtype):
    """lhs op rhs in `dtype` (torch's result type); both already have the result's shape."""
    lhs, rhs = cast(lhs, dtype), cast(rhs, dtype)
    if lhs.op == "fill" and rhs.op == "fill" and dtype == "i64":
        a, b = lhs.attrs["value"], rhs.attrs["value"]
        value = {"add": a + b, "sub": a - b, "mul": a * b}.get(op)
        if value is not None:
            return fill(value, lhs.shape, dtype)
    if dtype == "i64":
        # arange arithmetic stays an iota: start and step fold exactly.
        it, other = (lhs, rhs) if lhs.op == "iota" else (rhs, lhs)
        if it.op == "iota" and other.op == "fill":
            c, s, st = other.attrs["value"], it.attrs["start"], it.attrs["step"]
            if op == "add":
                return Node("iota", it.shape, dtype, dim=it.attrs["dim"], start=s + c, step=st)
            if op == "mul":
                return Node("iota", it.shape, dtype, dim=it.attrs["dim"], start=s * c, step=st * c)
            if op == "sub" and it is lhs:
                return Node("iota", it.shape, dtype, dim=it.attrs["dim"], start=s - c, step=st)
        return unsupported("integer %s (init IR computes in floating point)" % op, lhs.shape, dtype)
    if dtype not in FLOAT_TYPES:
        return unsupported("%s on %s tensors" % (op, dtype), lhs.shape, dtype)
    return Node(op, lhs.shape, dtype, (lhs, rhs))


def negate(x):
    """-x as torch.neg: -0 - x flips the sign of zeros too (0 - x would make -(+0) +0)."""
    if x.dtype not in FLOAT_TYPES:
        return binary("sub", fill(0, x.shape, x.dtype), x, x.dtype)
    return binary("sub", fill(-0.0, x.shape, x.dtype), x, x.dtype)


def range_mask(shape, dim, lo, hi):
    """An i1 tensor of `shape`, true where lo <= index along `dim` < hi."""
    if hi - lo == 1:
        return Node("index_mask", shape, "i1", dim=dim, index=lo)
    # sign(i - lo + 1/2) + sign(hi - 1/2 - i) is 2 inside and 0 outside (never -2 as lo < hi),
    # exactly, in f64; the cast to i1 is true where it is not 0.
    above = Node("sign", shape, "f64", (Node("iota", shape, "f64", dim=dim, start=0.5 - lo, step=1.0),))
    below = Node("sign", shape, "f64", (Node("iota", shape, "f64", dim=dim, start=hi - 0.5, step=-1.0),))
    return Node("cast", shape, "i1", (Node("add", shape, "f64", (above, below)),))


def select(cond, on_true, on_false):
    if cond.op == "fill":
        return on_true if cond.attrs["value"] else on_false
    return Node("select", on_true.shape, on_true.dtype, (cast(cond, "i1"), on_true, on_false))


#===------------------------------------------------------------------------------------------===#
# Storages and views
#===------------------------------------------------------------------------------------------===#

class Storage:
    """The value of one tensor storage: a contiguous tensor of `shape`, and its history."""

    def __init__(self, tensor, node):
        self.tensor = tensor          # kept alive so its storage id is never reused
        self.shape = node.shape
        self.dtype = node.dtype
        self.versions = [node]
        self.defined = []  # boxes written with defined values while torch.empty's values remain

    @property
    def node(self):
        return self.versions[-1]

    def assign(self, node, box=None, defined=False):
        """The new value `node`; `box`: it changed only that part, with values that no longer
        depend on torch.empty's (`defined`). Once such parts cover the tensor, torch.empty's
        values are unobservable: they become 0, so that a tensor written piece by piece
        (w[:n].normal_(); w[n:].zero_()) counts as initialized."""
        if box is not None and defined and node.find("empty") is not None:
            self.defined.append(box)
            if boxes_cover(self.defined, self.shape):
                node = replace_empty(node)
                self.defined = []
        self.versions.append(node)


def replace_empty(node, memo=None):
    """`node` with torch.empty's values as 0."""
    memo = {} if memo is None else memo
    if id(node) not in memo:
        if node.op == "empty":
            memo[id(node)] = fill(0, node.shape, node.dtype)
        elif node.find("empty") is None:
            memo[id(node)] = node
        else:
            memo[id(node)] = node.derived(node.shape, [replace_empty(a, memo) for a in node.args])
    return memo[id(node)]


def boxes_cover(boxes, shape, max_cells=1 << 20):
    """Whether the boxes [(dim, lo, hi), ...] (each a list; dims not listed are whole) cover a
    tensor of `shape`: every cell of the grid their bounds cut is inside one of them."""
    cuts = [{0, n} for n in shape]
    for box in boxes:
        for d, lo, hi in box:
            cuts[d].update((lo, hi))
    cuts = [sorted(c) for c in cuts]
    if math.prod(len(c) - 1 for c in cuts) > max_cells:
        return False
    for cell in itertools.product(*[list(zip(c[:-1], c[1:])) for c in cuts]):
        if not any(all(lo <= cell[d][0] and cell[d][1] <= hi for d, lo, hi in box) for box in boxes):
            return False
    return True


def storage_key(t):
    return t.storage()._cdata


def describe_view(t, base_shape, geo):
    """What kind of view `t` is of a contiguous tensor of `base_shape`, for messages."""
    if any(n > 1 and st == 0 for n, st in zip(t.shape, t.stride())):
        return "an expanded view (stride 0: expand or broadcasting) of shape %s" % list(t.shape)
    if geo is not None and geo[0] == "full":
        return "a transposed or permuted view (strides %s)" % list(t.stride())
    if geo is not None:
        ranges = {d: (lo, hi) for d, lo, hi in geo[1]}
        index = ", ".join("%d:%d" % ranges[d] if d in ranges else ":" for d in range(len(base_shape)))
        return "the slice [%s] of a tensor of shape %s" % (index, list(base_shape))
    if t.is_contiguous():
        return ("the elements %d to %d of a tensor of shape %s, in storage order (not a box of it)"
                % (t.storage_offset(), t.storage_offset() + t.numel() - 1, list(base_shape)))
    return ("a view with strides %s at offset %d of a tensor of shape %s (step slicing, a diagonal, "
            "or a reshaped part)" % (list(t.stride()), t.storage_offset(), list(base_shape)))


def unexpanded_shape(t, base_shape):
    """When `t` is an expand of a whole contiguous tensor of `base_shape` (its dims of stride 0
    repeat, the others are the tensor in order), t's shape with those dims 1; else None."""
    sizes = [1 if st == 0 and n > 1 else n for n, st in zip(t.shape, t.stride())]
    if sizes == list(t.shape) or t.storage_offset() != 0 or \
            math.prod(sizes) != math.prod(base_shape):
        return None
    expected = contiguous_strides(sizes)
    if any(n > 1 and st != e for n, st, e in zip(sizes, t.stride(), expected)):
        return None
    return tuple(sizes)


def dim_order(t):
    """The dims of `t`, outermost first in memory, when its elements fill its storage densely
    in some dim order (a permutation of a contiguous tensor); None otherwise."""
    order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))
    layout = [t.shape[d] for d in order]
    expected = contiguous_strides(layout)
    if any(layout[i] > 1 and t.stride(d) != expected[i] for i, d in enumerate(order)):
        return None
    return order


def contiguous_strides(shape):
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    return tuple(reversed(strides))


def view_geometry(t, base_shape):
    """How tensor `t` sits in its storage (a contiguous `base_shape`): ('full', ordered) when it
    covers every element, ('box', [(dim, lo, hi)...]) for a box of it, or None otherwise."""
    base_strides = contiguous_strides(base_shape)
    offset = t.storage_offset()
    if t.numel() == math.prod(base_shape) and (t.numel() == 0 or (
            offset == 0 and t.is_contiguous())):
        # Every element in storage order (a reshape: w.view(-1)), or nothing at all.
        return ("full", True)
    if t.numel() == 0:
        return ("box", [])
    geo = strided_box(t, base_shape, base_strides, offset)
    if geo is None and t.is_contiguous():
        # A range of elements in storage order that is a box of the storage: w.view(-1)[:64]
        # of a (8, 8) w is rows 0 to 7.
        box = range_box(offset, t.numel(), base_shape)
        if box is not None:
            geo = ("box", box)
    return geo


def strided_box(t, base_shape, base_strides, offset):
    start = []
    for n, s in zip(base_shape, base_strides):
        start.append((offset // s) % n if n else 0)
    if sum(i * s for i, s in zip(start, base_strides)) != offset:
        return None
    ranges = {d: (start[d], start[d] + 1) for d in range(len(base_shape))}
    order = []
    for size, stride in zip(t.shape, t.stride()):
        if size == 1:
            continue
        dims = [d for d in range(len(base_shape))
                if base_strides[d] == stride and base_shape[d] != 1 and d not in order]
        if not dims:
            return None
        d = dims[0]
        if start[d] + size > base_shape[d]:
            return None
        ranges[d] = (start[d], start[d] + size)
        order.append(d)
    box = [(d, lo, hi) for d, (lo, hi) in sorted(ranges.items()) if (lo, hi) != (0, base_shape[d])]
    if not box:
        return ("full", order == sorted(order))
    return ("box", box)


def range_box(offset, count, shape):
    """The elements offset .. offset + count - 1 (row-major) of a tensor of `shape` as a box
    [(dim, lo, hi)], or None when they are not one."""
    for k in range(len(shape)):
        block = math.prod(shape[k + 1:])  # elements per index of dim k
        if offset % block or count % block:
            continue
        lo, n = (offset // block) % shape[k], count // block
        if lo + n > shape[k]:
            continue
        outer, index = offset // (block * shape[k]), []
        for size in reversed(shape[:k]):
            index.append(outer % size)
            outer //= size
        index.reverse()
        box = [(d, i, i + 1) for d, i in enumerate(index) if shape[d] != 1]
        if n != shape[k]:
            box.append((k, lo, lo + n))
        return box
    return None


#===------------------------------------------------------------------------------------------===#
# The capture
#===------------------------------------------------------------------------------------------===#

_THIS_FILE = os.path.abspath(__file__)
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def user_location():
    """file:line of the innermost frame outside torch and this tool."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        path = os.path.abspath(frame.filename)
        if path != _THIS_FILE and not path.startswith(_TORCH_DIR):
            return "%s:%d" % (frame.filename, frame.lineno)
    return "?"


def torch_name(func):
    name = getattr(func, "__name__", str(func))
    qual = getattr(func, "__qualname__", name)
    module = getattr(func, "__module__", None) or ""
    if module == "torch.nn.init":
        return "torch.nn.init." + name
    if "." in qual or module.startswith("torch._C") or module == "torch._tensor":
        return "torch.Tensor." + name
    return "torch." + name


FACTORIES = {"empty", "zeros", "ones", "full", "arange", "eye", "rand", "randn", "tensor",
             "scalar_tensor", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
             "randn_like", "linspace", "randint", "randperm", "normal", "empty_strided",
             "as_tensor"}
# In-place methods that change a tensor's geometry or metadata, never its values.
KEEPS_VALUES = {"t_", "transpose_", "unsqueeze_", "squeeze_", "requires_grad_", "detach_",
                "share_memory_", "retain_grad", "set_", "as_strided_", "swapaxes_", "swapdims_"}
READS_VALUES = {"item", "tolist", "__bool__", "__float__", "__int__", "__index__", "numpy",
                "__array__", "__format__", "any", "all", "equal", "allclose", "isclose", "nonzero",
                "__contains__"}


def eager_factory_dtype(name, args, kwargs):
    """The dtype a factory call without dtype= gets on the CPU, where the meta device of torch 1.13
    infers another: torch.full((4,), -100) is int64 and torch.full((4,), True) bool (meta: the
    default float type), torch.arange(0., 8) is the default float type (meta: int64). None when
    the meta device agrees."""
    try:
        if name == "full":
            value = args[1] if len(args) > 1 else kwargs.get("fill_value")
            if isinstance(value, (bool, int, float)):
                return torch.full((0,), value, device="cpu").dtype
        elif name == "arange":
            bounds = list(args) + [kwargs[k] for k in ("start", "end", "step") if k in kwargs]
            if bounds and all(isinstance(b, (int, float)) and not isinstance(b, bool)
                              for b in bounds):
                # The same call over an empty range: the dtype follows the Python types of the
                # bounds, never their values.
                probe = [type(b)(0) for b in bounds]
                if len(probe) == 3:
                    probe[2] = type(bounds[2])(1)
                return torch.arange(*probe, device="cpu").dtype
    except Exception:
        pass
    return None


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0].strip() if text else type(e).__name__


def meta_failure(op, e):
    """The message for an op that raised on the meta device: either the op has no meta
    implementation in this PyTorch (then the capture cannot run it), or it refused its
    arguments, as it would on the CPU."""
    text = first_line(e)
    if "Could not run '" in text:  # the dispatcher's message, with every backend listed
        text = text.split(" with arguments from")[0]
    if isinstance(e, NotImplementedError) or "meta" in text.lower() or "Could not run" in text:
        return ("%s: %s cannot run on the meta device in this PyTorch (%s), so the capture cannot "
                "record it: it has no init IR counterpart; initialize the tensor with ops the "
                "capture records (ir-spec/capture.md), or do this step after loading the "
                "checkpoint" % (user_location(), op, text))
    return "%s: %s: %s" % (user_location(), op, text)


def without_device(name, func, args, kwargs):
    """`t.to(...)`, `t.cpu()`, `t.cuda()` with the device move left out (the capture has no
    devices: a meta tensor cannot be copied to the CPU, and the checkpoint is the same on any
    device); a dtype change or copy=True stays."""
    t = args[0]
    if name != "to":
        return (lambda x: x), (t,), {}
    rest = dict(kwargs)
    copy = bool(rest.pop("copy", False))
    positional = list(args[1:])
    # to(device, dtype, non_blocking, copy): a fourth positional argument is copy.
    if len(positional) == 4 and isinstance(positional[3], bool):
        copy = copy or positional.pop()
    try:
        _, dtype, _, memory_format = torch._C._nn._parse_to(*positional, **rest)
    except Exception:
        return func, args, kwargs  # torch's own error for a call it does not take
    out = {}
    if dtype is not None:
        out["dtype"] = dtype
    if copy:
        out["copy"] = True
    if memory_format is not None:
        out["memory_format"] = memory_format
    return func, (t,), out


class Capture(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.storages = {}
        self.busy = False

    # -- values --------------------------------------------------------------------------------
    def state(self, t):
        if not isinstance(t, torch.Tensor) or t.device.type != "meta":
            return None
        return self.storages.get(storage_key(t))

    def register(self, t, node):
        """`t` is a fresh tensor whose value is `node`."""
        if not isinstance(t, torch.Tensor):
            return
        key = storage_key(t)
        if key in self.storages:
            return  # a view of a known storage: nothing new
        dtype = DTYPES.get(t.dtype)
        if dtype is None:
            node = unsupported("tensors of dtype %s (init IR has f32, f16, bf16, f64, bool, int64)"
                               % t.dtype, t.shape, "f32")
            dtype = "f32"
        dense = t.storage_offset() == 0 and t.numel() == t.storage().size()
        order = dim_order(t) if dense else None
        if first_unsupported(node) is not None:
            node = unsupported("", (t.storage().size(),) if order is None else
                               tuple(t.shape[d] for d in order), dtype, inputs=(node,))
        elif dense and t.is_contiguous():
            node = cast(reshape(node, t.shape), dtype)
        elif order is not None:
            # Laid out in another dim order (a clone or a cast of a transposed tensor keeps its
            # strides): the storage holds the value read in that order.
            node = cast(reshape(node, t.shape), dtype)
            layout = tuple(t.shape[d] for d in order)
            strides = contiguous_strides(tuple(t.shape))
            if is_index_free(node):
                node = self._index_free_part(node, layout, lambda inner: IndexMap(
                    "view", inner, layout, [strides[d] for d in order], 0, t.numel()))
            else:
                node = unsupported("a tensor whose values depend on their position, laid out in "
                                   "another dim order (strides %s)" % list(t.stride()), layout, dtype)
        else:
            node = unsupported("a tensor laid out with gaps or overlaps in a new storage (strides "
                               "%s)" % list(t.stride()), (t.storage().size(),), dtype)
        self.storages[key] = Storage(t, node)

    def value(self, x, shape=None, dtype=None):
        """The expression of a tensor or Python scalar operand, over `shape`."""
        if isinstance(x, torch.Tensor):
            st = self.state(x)
            if st is None:
                node = unsupported("a tensor created outside the capture (on %s)" % x.device,
                                   tuple(x.shape))
            elif x.numel() == 0:
                node = fill(0, tuple(x.shape), st.dtype)
            else:
                node = self.read_view(x, st)
            if shape is not None and tuple(node.shape) != tuple(shape):
                node = reshape(node, shape)
            return cast(node, dtype) if dtype else node
        if isinstance(x, (bool, int, float)):
            return fill(x, shape or (), dtype or ("i1" if isinstance(x, bool) else
                                                 "i64" if isinstance(x, int) else "f32"))
        return unsupported("an operand of type %s" % type(x).__name__, shape or (), dtype or "f32")

    def read_view(self, x, st):
        """The value of tensor `x`, a view of storage `st`, over x's shape."""
        geo = view_geometry(x, st.shape)
        shape = tuple(x.shape)
        if geo == ("full", True):
            return reshape(st.node, shape)
        if first_unsupported(st.node) is not None:
            return unsupported("", shape, st.dtype, inputs=(st.node,))
        expanded = unexpanded_shape(x, st.shape)
        if expanded is not None:  # an expand of the whole tensor: a broadcast
            return broadcast(reshape(st.node, expanded), shape)
        what = describe_view(x, st.shape, geo)
        if not is_index_free(st.node):
            ops = sorted({n.op for n in st.node.walk() if n.op in INDEXED_OPS})
            return unsupported("reading %s of a tensor whose values depend on their position "
                               "(init.%s)" % (what, ", init.".join(ops)), shape, st.dtype)
        numel = math.prod(st.shape)
        node = self._index_free_part(st.node, shape, lambda inner: IndexMap(
            "view", inner, shape, x.stride(), x.storage_offset(), numel))
        repeated = [n for n in random_leaves(node) if n.imap.injective is False]
        if repeated:
            return unsupported(
                "reading the random tensor drawn at %s through %s repeats its values: in PyTorch "
                "the copies are equal, and init IR draws every element of a random op at its own "
                "index; draw the random tensor at the full shape if independent values are meant"
                % (repeated[0].origin, what), shape, st.dtype, where=repeated[0].origin)
        return node

    @staticmethod
    def _index_free_part(node, shape, imap=None):
        """`node`, index-free, over `shape`: each element of an index-free expression is a
        function of its random ops' elements at the same index, so a part of it is the same
        expression over the part's shape, its random ops read through imap(old_map) (None: a new
        random op, e.g. one drawn over a view and placed in its storage)."""
        memo = {}
        location = user_location() if imap is not None else None

        def sub(n):
            if id(n) in memo:  # shared operands stay shared: a - a is 0
                return memo[id(n)]
            src = explicit_random(n) if n.op == "variance_scaling" else n
            out = src.derived(shape, [sub(a) for a in n.args])
            if n.op in RANDOM_OPS and imap is not None:
                out.imap, out.where = imap(n.imap), location
            memo[id(n)] = out
            return out
        return sub(node)

    def mutate(self, t, compute, what):
        """In-place write to tensor `t`: compute(old_full) gives the new value over the whole
        storage; only the part `t` views is replaced."""
        st = self.state(t)
        if st is None or t.numel() == 0:
            return
        geo = view_geometry(t, st.shape)
        old = st.node
        if geo is None:
            st.assign(unsupported("%s on %s" % (what, describe_view(t, st.shape, geo)),
                                  st.shape, st.dtype))
            return
        new = compute(old, geo)
        new = cast(reshape(new, st.shape), st.dtype)
        if geo[0] == "box":
            defined = new.find("empty") is None
            st.assign(self.masked(geo[1], new, old), box=geo[1], defined=defined)
        else:
            st.assign(new)

    def masked(self, box, new, old):
        """select over the box [(dim, lo, hi)]: new inside, old outside."""
        mask = None
        for dim, lo, hi in box:
            m = range_mask(old.shape, dim, lo, hi)
            mask = m if mask is None else select(m, mask, fill(0, old.shape, "i1"))
        return select(mask, new, old)

    # -- in-place ops ----------------------------------------------------------------------------
    def fresh_random(self, t, geo, make):
        """A random op over the storage; fans come from the viewed tensor's own shape."""
        st = self.state(t)
        node = make(tuple(t.shape))
        if node.op == "variance_scaling" and (tuple(t.shape) != st.shape or geo[0] != "full"):
            node = explicit_random(node)
        if node.op == "orthogonal" and (tuple(t.shape) != st.shape or geo != ("full", True)):
            return unsupported("orthogonal_ on a part or a reshaped view of a tensor", st.shape, st.dtype)
        if node.shape != st.shape:
            node = self._index_free_part(node, st.shape) if is_index_free(node) else \
                unsupported("a random op over a view", st.shape, st.dtype)
        return node

    def random_(self, t, what, make):
        self.mutate(t, lambda old, geo: self.fresh_random(t, geo, make), what)

    def operand_over(self, t, x, geo):
        """Operand x of an in-place op on view t, over the storage's shape."""
        st = self.state(t)
        v = self.value(x, shape=tuple(t.shape), dtype=st.dtype)
        if v.op == "fill":
            return fill(v.attrs["value"], st.shape, st.dtype)
        if geo == ("full", True):
            return reshape(v, st.shape)
        if first_unsupported(v) is not None:
            return unsupported("", st.shape, st.dtype, inputs=(v,))
        if is_index_free(v):
            numel = math.prod(st.shape)
            return self._index_free_part(v, st.shape, lambda inner: IndexMap(
                "place", inner, tuple(t.shape), t.stride(), t.storage_offset(), numel))
        return unsupported("writing a tensor whose values depend on their position into %s"
                           % describe_view(t, st.shape, geo), st.shape, st.dtype)

    def inplace(self, name, args, kwargs):
        t = args[0]
        rest = list(args[1:])
        arg = lambda i, key, default=None: rest[i] if len(rest) > i else kwargs.get(key, default)
        st = self.state(t)
        if st is None:
            return
        dt = st.dtype
        base = name.strip("_")
        if name == "uniform_":
            lo, hi = float(arg(0, "from", 0.0)), float(arg(1, "to", 1.0))
            uniform_node((), dt, lo, hi, "torch.Tensor.uniform_")  # refuses bad bounds now
            self.random_(t, "uniform_", lambda s: uniform_node(s, dt, lo, hi, "torch.Tensor.uniform_"))
        elif name == "normal_":
            mean, std = float(arg(0, "mean", 0.0)), float(arg(1, "std", 1.0))
            normal_node((), dt, mean, std, "torch.Tensor.normal_")
            self.random_(t, "normal_", lambda s: normal_node(s, dt, mean, std, "torch.Tensor.normal_"))
        elif name in ("fill_", "zero_"):
            v = 0.0 if name == "zero_" else arg(0, "value")
            self.mutate(t, lambda old, geo: self.operand_over(t, v, geo), name)
        elif name == "copy_":
            self.mutate(t, lambda old, geo: self.operand_over(t, arg(0, "src"), geo), name)
        elif base in ("add", "sub", "mul", "div", "iadd", "isub", "imul", "itruediv", "true_divide"):
            op = {"iadd": "add", "isub": "sub", "imul": "mul", "itruediv": "div",
                  "true_divide": "div"}.get(base, base)
            other, alpha = arg(0, "other"), arg(1, "alpha", 1)
            if kwargs.get("rounding_mode") is not None:
                self.mutate(t, lambda old, geo: unsupported("div_ with rounding_mode", old.shape, dt), name)
                return

            def compute(old, geo):
                o = self.operand_over(t, other, geo)
                if alpha != 1:
                    o = binary("mul", o, fill(alpha, o.shape, dt), dt)
                return binary(op, old, o, dt)
            self.mutate(t, compute, name)
        elif name in ("clamp_", "clip_", "clamp_min_", "clamp_max_"):
            lo = arg(0, "min") if name != "clamp_max_" else None
            hi = (arg(1, "max") if name in ("clamp_", "clip_") else arg(0, "max")) \
                if name != "clamp_min_" else None
            if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor) or dt not in FLOAT_TYPES:
                self.mutate(t, lambda old, geo: unsupported(name + " with tensor bounds", old.shape, dt), name)
                return
            lo = -math.inf if lo is None else float(lo)
            hi = math.inf if hi is None else float(hi)
            self.mutate(t, lambda old, geo: Node("clamp", old.shape, dt, (old,), min=lo, max=hi), name)
        elif base in UNARY_OPS or base == "neg":
            if dt not in FLOAT_TYPES:
                self.mutate(t, lambda old, geo: unsupported(name + " on " + dt, old.shape, dt), name)
            elif base == "neg":
                self.mutate(t, lambda old, geo: negate(old), name)
            else:
                self.mutate(t, lambda old, geo: Node(base, old.shape, dt, (old,)), name)
        elif name in ("tril_", "triu_"):
            k = int(arg(0, "diagonal", 0))

            def compute(old, geo):
                if geo != ("full", True) or len(old.shape) < 2:
                    return unsupported(name + " on a view", old.shape, dt)
                return select(Node(base, old.shape, "i1", diagonal=k), old, fill(0, old.shape, dt))
            self.mutate(t, compute, name)
        elif name == "masked_fill_":
            mask, v = arg(0, "mask"), arg(1, "value")

            def compute(old, geo):
                if geo != ("full", True):
                    return unsupported("masked_fill_ on a view", old.shape, dt)
                m = self.value(mask, shape=tuple(t.shape), dtype="i1")
                return select(reshape(m, old.shape), self.operand_over(t, v, geo), old)
            self.mutate(t, compute, name)
        elif name == "__setitem__":
            index, v = rest[0], rest[1]
            if isinstance(index, torch.Tensor) and index.dtype == torch.bool:
                def compute(old, geo):
                    if geo != ("full", True):
                        return unsupported("boolean-mask assignment into a view", old.shape, dt)
                    m = self.value(index, dtype="i1")
                    if m.shape != tuple(t.shape):
                        return unsupported("boolean-mask assignment with a broadcast mask", old.shape, dt)
                    return select(reshape(m, old.shape), self.operand_over(t, v, geo), old)
                self.mutate(t, compute, "__setitem__")
                return
            try:
                view = torch.Tensor.__getitem__(t, index)
            except Exception:  # advanced indexing: a copy, not a view
                view = None
            if view is None or not isinstance(view, torch.Tensor) or self.state(view) is not st:
                self.mutate(t, lambda old, geo: unsupported("assignment through advanced indexing",
                                                            old.shape, dt), "__setitem__")
                return
            self.mutate(view, lambda old, geo: self.operand_over(view, v, geo), "__setitem__")
        elif name in KEEPS_VALUES:
            pass
        else:
            self.mutate(t, lambda old, geo: unsupported(
                "torch.Tensor.%s has no init IR counterpart" % name, old.shape, dt), name)

    # -- torch.nn.init -------------------------------------------------------------------------
    def nn_init(self, name, args, kwargs):
        import inspect
        sig = inspect.signature(ORIGINAL_INIT[name])
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise CaptureError("%s: torch.nn.init.%s: %s" % (user_location(), name, e))
        bound.apply_defaults()
        a = bound.arguments
        t = a["tensor"]
        st = self.state(t)
        if st is None:
            return None
        if t.numel() == 0:
            return t  # as in PyTorch: nothing to initialize
        dt = st.dtype
        if name == "uniform_":
            what = "torch.nn.init.uniform_"
            uniform_node((), dt, a["a"], a["b"], what)
            self.random_(t, name, lambda s: uniform_node(s, dt, a["a"], a["b"], what))
        elif name == "normal_":
            what = "torch.nn.init.normal_"
            normal_node((), dt, a["mean"], a["std"], what)
            self.random_(t, name, lambda s: normal_node(s, dt, a["mean"], a["std"], what))
        elif name == "trunc_normal_":
            args = (a["mean"], a["std"], a["a"], a["b"], "torch.nn.init.trunc_normal_")
            trunc_normal_node((), dt, *args)
            self.random_(t, name, lambda s: trunc_normal_node(s, dt, *args))
        elif name in ("constant_", "ones_", "zeros_"):
            v = {"ones_": 1.0, "zeros_": 0.0}.get(name, a.get("val"))
            self.mutate(t, lambda old, geo: self.operand_over(t, v, geo), name)
        elif name in ("xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"):
            what = "torch.nn.init." + name
            if t.dim() < 2:
                raise CaptureError("%s: %s: fan in and fan out cannot be computed for a tensor of "
                                   "fewer than 2 dims (shape %s), in PyTorch either"
                                   % (user_location(), what, list(t.shape)))
            if name.startswith("xavier"):
                gain, mode = float(a["gain"]), "fan_avg"
            else:
                # torch lower-cases the mode ('FAN_OUT' is fan_out).
                mode = a["mode"].lower() if isinstance(a["mode"], str) else a["mode"]
                if mode not in ("fan_in", "fan_out"):
                    raise CaptureError("%s: %s: mode %r must be 'fan_in' or 'fan_out'"
                                       % (user_location(), what, a["mode"]))
                try:
                    gain = nn.init.calculate_gain(a["nonlinearity"], a["a"])
                except ValueError as e:
                    raise CaptureError("%s: %s: %s" % (user_location(), what, e))
            dist = "uniform" if name.endswith("uniform_") else "normal"
            variance_scaling_node(tuple(t.shape), dt, gain, mode, dist, what)
            self.random_(t, name, lambda s: variance_scaling_node(s, dt, gain, mode, dist, what))
        elif name == "orthogonal_":
            if t.dim() < 2:
                raise CaptureError("orthogonal_ needs a tensor of 2 or more dims (%s)" % user_location())
            if t.numel() == 0:
                return t
            self.random_(t, name, lambda s: Node("orthogonal", s, dt, gain=float(a["gain"])))
        elif name == "eye_":
            if t.dim() != 2:
                raise ValueError("Only tensors with 2 dimensions are supported")
            self.mutate(t, lambda old, geo: Node("eye", old.shape, dt) if geo == ("full", True)
                        else unsupported("eye_ on a view", old.shape, dt), name)
        elif name == "dirac_":
            self.mutate(t, lambda old, geo: self.dirac(t, int(a["groups"]), old, geo), name)
        elif name == "sparse_":
            self.mutate(t, lambda old, geo: unsupported(
                "torch.nn.init.sparse_ has no init IR counterpart (it needs a random permutation "
                "per column); initialize the weight another way", old.shape, dt), name)
        return t

    def dirac(self, t, groups, old, geo):
        shape, dt = old.shape, old.dtype
        if len(shape) not in (3, 4, 5):
            raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
        if geo != ("full", True):
            return unsupported("dirac_ on a view", shape, dt)
        out_per_group = shape[0] // groups
        min_dim = min(out_per_group, shape[1])
        if groups * min_dim > 256:
            return unsupported("dirac_ with more than 256 ones", shape, dt)
        one, value = fill(1.0, shape, dt), fill(0.0, shape, dt)
        centre = one
        for d in range(2, len(shape)):
            centre = select(Node("index_mask", shape, "i1", dim=d, index=shape[d] // 2), centre, value)
        for g in range(groups):
            for d in range(min_dim):
                row = Node("index_mask", shape, "i1", dim=0, index=g * out_per_group + d)
                col = Node("index_mask", shape, "i1", dim=1, index=d)
                value = select(row, select(col, centre, value), value)
        return value

    # -- out-of-place ops ----------------------------------------------------------------------
    def factory(self, name, args, kwargs, result):
        shape, dt = tuple(result.shape), DTYPES.get(result.dtype, "f32")
        if name in ("empty", "empty_like", "new_empty", "new", "empty_strided"):
            return Node("empty", shape, dt)
        if name in ("zeros", "zeros_like", "new_zeros"):
            return fill(0, shape, dt)
        if name in ("ones", "ones_like", "new_ones"):
            return fill(1, shape, dt)
        if name in ("full", "full_like", "new_full"):
            at = 2 if name == "new_full" else 1
            v = args[at] if len(args) > at else kwargs.get("fill_value")
            return self.value(v, shape, dt)
        if name in ("tensor", "scalar_tensor", "new_tensor", "as_tensor"):
            data = args[1] if name == "new_tensor" else args[0]
            if isinstance(data, (bool, int, float)):
                return fill(data, shape, dt)
            if isinstance(data, torch.Tensor):
                return self.value(data, shape, dt)
            return unsupported("torch.%s from a list (write it with arange, ones, ...)" % name, shape, dt)
        if name == "arange":
            nums = [a for a in args if isinstance(a, (int, float))]
            start = kwargs.get("start", nums[0] if len(nums) > 1 else 0)
            step = kwargs.get("step", nums[2] if len(nums) > 2 else 1)
            return Node("iota", shape, dt, dim=0, start=float(start), step=float(step))
        if name == "eye":
            return Node("eye", shape, dt)
        if name in ("rand", "rand_like"):
            return Node("uniform", shape, dt, low=0.0, high=1.0)
        if name in ("randn", "randn_like"):
            return Node("normal", shape, dt, mean=0.0, std=1.0)
        return unsupported("torch.%s has no init IR counterpart" % name, shape, dt)

    def out_of_place(self, name, args, kwargs, result):
        shape = tuple(result.shape)
        dt = DTYPES.get(result.dtype, "f32")
        x = args[0] if args else None
        base = name.strip("_")
        swapped = base.startswith("r") and base[1:] in ("add", "sub", "mul", "truediv", "div")
        op = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "div": "div",
              "true_divide": "div", "subtract": "sub", "multiply": "mul",
              "divide": "div"}.get(base[1:] if swapped else base)
        if op is not None and len(args) >= 2:
            lhs, rhs = self.value(args[0], shape, dt), self.value(args[1], shape, dt)
            if swapped and op == "div":
                # `number / tensor` is Tensor.__rdiv__: `self.reciprocal() * other`, two roundings.
                return binary("mul", binary("div", fill(1, shape, dt), lhs, dt), rhs, dt)
            if swapped:
                lhs, rhs = rhs, lhs
            alpha = kwargs.get("alpha", 1)
            if alpha != 1:
                rhs = binary("mul", rhs, fill(alpha, shape, dt), dt)
            if kwargs.get("rounding_mode") is not None:
                return unsupported("division with rounding_mode", shape, dt)
            return binary(op, lhs, rhs, dt)
        if base == "neg":
            return negate(self.value(x, shape, dt))
        if base in UNARY_OPS and dt in FLOAT_TYPES:
            return Node(base, shape, dt, (self.value(x, shape, dt),))
        if base == "rsqrt" and dt in FLOAT_TYPES:
            # One rounding to a 16-bit type: torch computes 1 / sqrt(x) in f32 for those.
            ct = compute_type(dt)
            root = Node("sqrt", shape, ct, (self.value(x, shape, ct),))
            return cast(binary("div", fill(1, shape, ct), root, ct), dt)
        if base == "reciprocal" and dt in FLOAT_TYPES:
            return binary("div", fill(1, shape, dt), self.value(x, shape, dt), dt)
        if base in ("clamp", "clip", "clamp_min", "clamp_max") and dt in FLOAT_TYPES:
            lo = kwargs.get("min", args[1] if len(args) > 1 else None) if base != "clamp_max" else None
            hi = kwargs.get("max", args[2] if len(args) > 2 else None) if base in ("clamp", "clip") \
                else (kwargs.get("max", args[1] if len(args) > 1 else None) if base == "clamp_max" else None)
            if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):
                return unsupported("clamp with tensor bounds", shape, dt)
            return Node("clamp", shape, dt, (self.value(x, shape, dt),),
                        min=-math.inf if lo is None else float(lo), max=math.inf if hi is None else float(hi))
        if base in ("tril", "triu"):
            k = kwargs.get("diagonal", args[1] if len(args) > 1 else 0)
            v = self.value(x, shape, dt)
            if v.op == "fill" and v.attrs["value"] == 1:
                return Node(base, shape, dt, diagonal=int(k))
            return select(Node(base, shape, "i1", diagonal=int(k)), v, fill(0, shape, dt))
        if base == "where" and len(args) == 3:
            return select(self.value(args[0], shape, "i1"), self.value(args[1], shape, dt),
                          self.value(args[2], shape, dt))
        if base == "pow" and isinstance(args[1], (int, float)) and args[1] in (1, 2):
            v = self.value(x, shape, dt)
            return v if args[1] == 1 else binary("mul", v, v, dt)
        if base == "square":
            v = self.value(x, shape, dt)
            return binary("mul", v, v, dt)
        if base in ("clone", "contiguous", "to", "type", "type_as", "float", "double", "half",
                    "bfloat16", "long", "bool", "detach", "view", "reshape", "flatten",
                    "unsqueeze", "squeeze", "view_as", "reshape_as", "cpu", "cuda",
                    "requires_grad_", "__deepcopy__", "expand", "expand_as", "new_tensor",
                    "permute", "t", "transpose", "__getitem__", "narrow", "select"):
            if x is not None and x.numel() == result.numel() and base not in (
                    "permute", "t", "transpose", "__getitem__", "narrow", "select", "expand", "expand_as"):
                return self.value(x, None, dt) if tuple(x.shape) == shape else \
                    reshape(self.value(x, None, dt), shape)
            return unsupported("torch.Tensor.%s copying a rearranged tensor" % name, shape, dt)
        # An operand that has no counterpart itself is the reason (w.abs().max(): abs).
        inputs = [self.state(a).node for a in itertools.chain(args, kwargs.values())
                  if isinstance(a, torch.Tensor) and self.state(a) is not None]
        return unsupported("%s has no init IR counterpart" % name, shape, dt, inputs=inputs)

    # -- the mode --------------------------------------------------------------------------------
    def init_call(self, name, args, kwargs):
        """A call of the torch.nn.init function `name` (InitHooks): recorded whole, through the
        mode, so that it is seen as one op rather than as the ops it is made of."""
        original = ORIGINAL_INIT[name]
        if self.busy:
            return original(*args, **kwargs)
        return self.__torch_function__(original, (), args, kwargs)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if self.busy:
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        # torch.nn.init functions re-dispatch through their module globals, which may be ours.
        init_name = INIT_BY_FUNC.get(func)
        self.busy = True
        try:
            if init_name is not None:
                result = self.nn_init(init_name, args, kwargs)
                return result if result is not None else func(*args, **kwargs)
            tensors = [a for a in itertools.chain(args, kwargs.values()) if isinstance(a, torch.Tensor)]
            tracked = any(self.state(a) is not None for a in tensors)
            if name in READS_VALUES and tracked:
                raise CaptureError(
                    "%s: %s reads the value of a tensor being initialized (data-dependent control "
                    "flow on random values cannot be captured)" % (user_location(), torch_name(func)))
            is_factory = name in FACTORIES and (
                not tensors or name.endswith("_like") or name in ("tensor", "as_tensor"))
            if is_factory:
                kwargs["device"] = "meta"
                if kwargs.get("dtype") is None:
                    dtype = eager_factory_dtype(name, args, kwargs)
                    if dtype is not None:
                        kwargs["dtype"] = dtype
            if name in ("to", "cpu", "cuda") and args and isinstance(args[0], torch.Tensor) \
                    and args[0].device.type == "meta":
                func, args, kwargs = without_device(name, func, args, kwargs)
            if "out" in kwargs and kwargs["out"] is not None:
                out = kwargs["out"]
                res = func(*args, **kwargs)
                if self.state(out) is not None:
                    self.mutate(out, lambda old, geo: unsupported(
                        "%s with out= has no init IR counterpart" % torch_name(func), old.shape, old.dtype),
                        torch_name(func))
                return res
            try:
                result = func(*args, **kwargs)
            except CaptureError:
                raise
            except Exception as e:
                if tracked or is_factory:
                    raise CaptureError(meta_failure(torch_name(func), e)) from e
                raise
            is_inplace = (name.endswith("_") and not name.startswith("__")) or name in (
                "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__")
            if is_inplace and args and isinstance(args[0], torch.Tensor):
                if self.state(args[0]) is not None:
                    self.inplace(name, args, kwargs)
                return result
            if name == "__set__":
                return result  # `p.data = x`: p now shares x's storage
            outs = result if isinstance(result, (tuple, list)) else [result]
            for r in outs:
                if not isinstance(r, torch.Tensor) or r.device.type != "meta":
                    continue
                if storage_key(r) in self.storages:
                    continue  # a view
                if is_factory or name in ("new_empty", "new_zeros", "new_ones", "new_full", "new",
                                          "new_tensor"):
                    node = self.factory(name, args, kwargs, r)
                elif tracked:
                    node = self.out_of_place(name, args, kwargs, r)
                else:
                    node = unsupported("%s has no init IR counterpart" % torch_name(func),
                                       tuple(r.shape), DTYPES.get(r.dtype, "f32"))
                if node.op == "unsupported" and "has no init IR" in node.attrs["what"] \
                        and not node.attrs["what"].startswith("torch."):
                    node.attrs["what"] = "%s has no init IR counterpart" % torch_name(func)
                self.register(r, node)
            return result
        finally:
            self.busy = False


INIT_NAMES = ["uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
              "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
              "orthogonal_", "sparse_"]
# The torch.nn.init function objects, which InitHooks patches in place while a factory runs.
INIT_FUNCS = {n: getattr(nn.init, n) for n in INIT_NAMES}


def _function_copy(f):
    """A new function object running f's original code (f itself gets another while hooked)."""
    import types
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__, g.__qualname__, g.__module__ = f.__kwdefaults__, f.__qualname__, f.__module__
    g.__doc__ = f.__doc__
    return g


# Callable originals: signatures and the calls the capture does not record.
ORIGINAL_INIT = {n: _function_copy(f) for n, f in INIT_FUNCS.items()}
INIT_BY_FUNC = {f: n for n, f in itertools.chain(INIT_FUNCS.items(), ORIGINAL_INIT.items())}
_HOOK_GLOBAL = "__initc_capture_init_hook__"


class InitHooks:
    """While active, every torch.nn.init function in INIT_NAMES is recorded whole, however the
    factory reaches it: torch.nn.init.orthogonal_, `from torch.nn.init import orthogonal_`
    (before or after the hooks are installed), an alias in a dict. The function objects
    themselves get a small body (their __code__) that calls Capture.init_call; the originals
    run as copies. Everything is restored on exit."""

    def __init__(self, capture):
        self.capture, self.saved = capture, {}

    def __enter__(self):
        init_globals = nn.init.__dict__
        init_globals[_HOOK_GLOBAL] = self.capture.init_call
        for name, f in INIT_FUNCS.items():
            namespace = {}
            source = "def %s(*args, **kwargs):\n    return %s(%r, args, kwargs)\n" % (
                name, _HOOK_GLOBAL, name)
            # Compiled as this file, so that error locations skip its frame.
            exec(compile(source, _THIS_FILE, "exec"), {}, namespace)
            self.saved[name] = f.__code__
            f.__code__ = namespace[name].__code__
        return self

    def __exit__(self, *exc):
        for name, code in self.saved.items():
            INIT_FUNCS[name].__code__ = code
        nn.init.__dict__.pop(_HOOK_GLOBAL, None)
        return False


#===------------------------------------------------------------------------------------------===#
# Printing init IR
#===------------------------------------------------------------------------------------------===#

def fmt_float(v):
    v = float(v)
    if math.isnan(v):
        return "0x7FF8000000000000"
    if math.isinf(v):
        return "0x7FF0000000000000" if v > 0 else "0xFFF0000000000000"
    text = repr(v)
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def tensor_type(shape, dtype):
    return "tensor<%s%s>" % ("".join("%dx" % s for s in shape), dtype)


def mlir_string(text):
    """`text` as the body of an MLIR string literal: quotes, backslashes and control characters
    escaped as \\XX (hex), other characters as UTF-8."""
    out = []
    for ch in text:
        if ch in ('"', "\\") or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\%02X" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def quote(name):
    return '@"%s"' % mlir_string(name)


class ParamEmitter:
    def __init__(self, lines):
        self.lines, self.names, self.streams, self.texts = lines, {}, {}, {}

    def emit(self, node):
        if id(node) in self.names:
            return self.names[id(node)]
        args = [self.emit(a) for a in node.args]
        ty, a = tensor_type(node.shape, node.dtype), node.attrs
        stream = lambda: self.streams[id(node)]
        op = node.op
        if op == "uniform":
            text = "init.uniform %s, %s stream %d : %s" % (fmt_float(a["low"]), fmt_float(a["high"]), stream(), ty)
        elif op == "normal":
            text = "init.normal mean %s std %s stream %d : %s" % (fmt_float(a["mean"]), fmt_float(a["std"]), stream(), ty)
        elif op == "trunc_normal":
            text = "init.trunc_normal mean %s std %s bounds [%s, %s] stream %d : %s" % (
                fmt_float(a["mean"]), fmt_float(a["std"]), fmt_float(a["a"]), fmt_float(a["b"]), stream(), ty)
        elif op == "variance_scaling":
            text = "init.variance_scaling scale %s %s %s stream %d : %s" % (
                fmt_float(a["scale"]), a["mode"], a["distribution"], stream(), ty)
        elif op == "orthogonal":
            text = "init.orthogonal gain %s stream %d strategy redundant : %s" % (fmt_float(a["gain"]), stream(), ty)
        elif op == "fill":
            text = "init.fill %s : %s" % (fmt_float(a["value"]), ty)
        elif op == "iota":
            text = "init.iota dim %d start %s step %s : %s" % (a["dim"], fmt_float(a["start"]), fmt_float(a["step"]), ty)
        elif op == "eye":
            text = "init.eye : %s" % ty
        elif op in ("tril", "triu"):
            text = "init.%s diagonal %d : %s" % (op, a["diagonal"], ty)
        elif op == "index_mask":
            text = "init.index_mask dim %d index %d : %s" % (a["dim"], a["index"], ty)
        elif op in BINARY_OPS:
            text = "init.%s %s, %s : %s" % (op, args[0], args[1], ty)
        elif op in UNARY_OPS:
            text = "init.%s %s : %s" % (op, args[0], ty)
        elif op == "clamp":
            text = "init.clamp %s min %s max %s : %s" % (args[0], fmt_float(a["min"]), fmt_float(a["max"]), ty)
        elif op == "select":
            text = "init.select %s, %s, %s : %s, %s" % (args[0], args[1], args[2],
                                                        tensor_type(node.shape, "i1"), ty)
        elif op == "cast":
            text = "init.cast %s : %s to %s" % (args[0], tensor_type(node.args[0].shape, node.args[0].dtype), ty)
        else:
            raise AssertionError("cannot print " + op)
        if text in self.texts:  # the same op on the same operands: one value (ops are pure)
            self.names[id(node)] = self.texts[text]
            return self.texts[text]
        name = "%%%d" % len(self.texts)
        self.names[id(node)] = self.texts[text] = name
        self.lines.append("    %s = %s" % (name, text))
        return name


def emittable(node):
    return all(n.op not in ("empty", "unsupported") for n in node.walk())


def module_path(name):
    parts = name.split(".")[:-1]
    return ".".join(["model"] + parts)


def check_final(name, node):
    for n in node.walk():
        if n.op == "unsupported":
            raise CaptureError("%s: %s (tensor %s, at %s)" % (module_path(name), n.attrs["what"], name, n.where))
    if node.find("empty") is not None:
        raise CaptureError("%s: %s is never initialized (it comes from torch.empty and nothing "
                           "writes all of it); initialize it in the constructor" % (module_path(name), name))


LINEAR_TYPES = (nn.Linear,)


def logical_axes(model):
    """Logical axis names for dims whose meaning the module type tells."""
    axes = {}
    for prefix, module in model.named_modules():
        dot = prefix + "." if prefix else ""
        if isinstance(module, nn.Linear):
            axes[dot + "weight"] = ["out", "in"]
            axes[dot + "bias"] = ["out"]
        elif isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
            axes[dot + "weight"] = ["vocab", "embed"]
    return axes


# The most elements whose positions assign_streams compares (int64 index tensors: 512 MiB).
MAX_CHECKED_ELEMENTS = 1 << 26


def read_key(n):
    return (n.seq, n.imap.key if n.imap is not None else None)


def assign_streams(name, final, roots):
    """The stream of every random op in a parameter's body (the final value and the dead ones in
    `roots`): random ops read in the same way (the same random tensor at the same positions) get
    one stream, so they have the same values (a[:, :16] - a[:, :16] is 0), others get their own
    stream, numbered in program order. The final value must read each element of a random
    tensor at most once (one position, or one way): otherwise PyTorch's copies (a + a.t(),
    w[:, 8:] = -w[:, :8], an expand) would be independent draws here, so the capture stops."""
    by_seq = {}
    for n in random_leaves(final):
        by_seq.setdefault(n.seq, {}).setdefault(read_key(n), n)
    group = {}  # read key -> the read key whose stream it shares
    for seq, reads in by_seq.items():
        if len(reads) == 1:
            (key, n), = reads.items()
            if n.imap is None or n.imap.injective:
                group[key] = key
                continue
        total = sum(n.numel() for n in reads.values())
        origin = next(iter(reads.values())).origin
        if total > MAX_CHECKED_ELEMENTS:
            raise CaptureError("%s: %s reads the random tensor drawn at %s through views of %d "
                               "elements in all, too many to check that they are exact (at most "
                               "%d)" % (module_path(name), name, origin, total,
                                        MAX_CHECKED_ELEMENTS))
        distinct = []
        for key, n in reads.items():
            positions = torch.arange(n.numel()) if n.imap is None else n.imap.indices()
            same = next((k for k, p in distinct if torch.equal(p, positions)), None)
            group[key] = key if same is None else same
            if same is None:
                distinct.append((key, positions))
        used = torch.cat([p[p >= 0] for _, p in distinct])
        if torch.unique(used).numel() != used.numel():
            reads_at = sorted({n.where for n in reads.values() if n.imap is not None})
            raise CaptureError(
                "%s: %s holds some elements of the random tensor drawn at %s more than once (read "
                "at %s): in PyTorch those are exact copies (as in a + a.t(), w[:, 8:] = "
                "-w[:, :8], expand), but init IR draws every element of a random op at its own "
                "index and cannot repeat it at another; draw separate random tensors if "
                "independent values are meant, or build the relationship after loading the "
                "checkpoint" % (module_path(name), name, origin, ", ".join(reads_at) or origin))
    order = []
    for r in roots:
        for n in random_leaves(r):
            g = group.get(read_key(n), read_key(n))
            if g not in order:
                order.append(g)
    order.sort(key=lambda g: g[0])  # stable: program order, then first use
    stream = {g: i for i, g in enumerate(order)}
    return {id(n): stream[group.get(read_key(n), read_key(n))]
            for r in roots for n in random_leaves(r)}


def reads_overlap(reads):
    """Whether parameters read common elements of one random tensor: reads maps each parameter
    name to its reads {read key: node}. Disjoint parts (a[:32] and a[32:] in two parameters) are
    independent in PyTorch too."""
    nodes = [n for r in reads.values() for n in r.values()]
    if any(n.imap is None for n in nodes) or \
            sum(n.numel() for n in nodes) > MAX_CHECKED_ELEMENTS:
        return True
    used = torch.cat([torch.unique(torch.cat([n.imap.indices() for n in r.values()]))
                      for r in reads.values()])
    used = used[used >= 0]
    return torch.unique(used).numel() != used.numel()


LEGACY_TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                "BoolTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor"]


def legacy_sizes(args, kwargs):
    """The sizes of a legacy constructor call that gives an uninitialized tensor (torch.Tensor(16,
    8), torch.FloatTensor(torch.Size([4]))), or None for the other forms (data, a storage)."""
    if kwargs:
        return None
    if len(args) == 1 and isinstance(args[0], torch.Size):
        return tuple(args[0])
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return tuple(args)
    return None


class LegacyType:
    """Stands for torch.FloatTensor and the like while the factory runs: a call with sizes is
    torch.empty of that dtype (seen by the capture, on the meta device); anything else is the
    original's. isinstance and attributes behave as the original's."""

    def __init__(self, original):
        self._original = original

    def __call__(self, *args, **kwargs):
        sizes = legacy_sizes(args, kwargs)
        if sizes is None:
            return self._original(*args, **kwargs)
        return torch.empty(sizes, dtype=self._original.dtype)

    def __instancecheck__(self, obj):
        return isinstance(obj, self._original)

    def __getattr__(self, name):
        return getattr(self._original, name)


class LegacyConstructors:
    """While active, torch.Tensor(sizes) and torch.FloatTensor(sizes) etc. (which allocate on the
    CPU without passing through torch's function hooks) are torch.empty(sizes, dtype)."""

    def __enter__(self):
        base_new = torch._C._TensorBase.__new__

        def tensor_new(cls, *args, **kwargs):
            sizes = legacy_sizes(args, kwargs)
            if cls is torch.Tensor and sizes is not None:
                return torch.empty(sizes)
            return base_new(cls, *args, **kwargs)
        self.saved = {name: getattr(torch, name) for name in LEGACY_TYPES if hasattr(torch, name)}
        for name, original in self.saved.items():
            setattr(torch, name, LegacyType(original))
        torch.Tensor.__new__ = staticmethod(tensor_new)
        return self

    def __exit__(self, *exc):
        if "__new__" in torch.Tensor.__dict__:
            del torch.Tensor.__new__
        for name, original in self.saved.items():
            setattr(torch, name, original)
        return False


def capture_model(factory, kwargs, seed, model_name):
    capture = Capture()
    with InitHooks(capture), LegacyConstructors(), capture, torch.no_grad():
        model = factory(**kwargs)
    if not isinstance(model, nn.Module):
        raise CaptureError("the factory returned %s, not a torch.nn.Module" % type(model).__name__)

    if not model.state_dict(keep_vars=True):
        raise CaptureError("the factory's %s has no parameters or buffers: there is nothing to "
                           "initialize" % type(model).__name__)
    param_ids = {id(p) for p in model.parameters()}
    axes = logical_axes(model)
    lines = ['module attributes {init.model = "%s"} {' % mlir_string(model_name), "  init.seed %d" % seed]
    primary = {}
    shared_random = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if name.rsplit(".", 1)[-1] == "_extra_state":
            print("initc-capture: note: %s: %s is the module's extra state (get_extra_state), not "
                  "a parameter or buffer: the checkpoint does not hold it (load it with "
                  "strict=False, or let the module set it)" % (module_path(name), name),
                  file=sys.stderr)
            continue
        is_buffer = id(t) not in param_ids
        st = capture.state(t)
        if st is None:
            raise CaptureError(
                "%s: %s is a %s tensor the capture never saw created: made outside the factory "
                "(at module scope), or by a call that bypasses torch's function hooks (a legacy "
                "constructor such as torch.cuda.FloatTensor(data), torch.from_numpy); create it "
                "in the factory with torch.empty, torch.zeros, torch.full, ..."
                % (module_path(name), name, t.device))
        dtype = DTYPES.get(t.dtype)
        if dtype is None:
            raise CaptureError("%s: %s has dtype %s, which init IR does not have" % (module_path(name), name, t.dtype))
        ty = tensor_type(tuple(t.shape), dtype)
        key = (storage_key(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if key in primary:
            lines.append("  init.param %s : %s tied_to %s" % (quote(name), ty, quote(primary[key])))
            continue
        primary[key] = name
        if t.numel() == 0:  # no element needs a value
            final, roots = fill(0, tuple(t.shape), dtype), []
        else:
            final = capture.value(t)
            check_final(name, final)
            # Earlier versions of the storage that can be printed stay as dead values.
            roots = [v for v in st.versions[:-1] if emittable(v)] if tuple(t.shape) == st.shape else []
        roots.append(final)
        for n in random_leaves(final):
            shared_random.setdefault(n.seq, {}).setdefault(name, {})[read_key(n)] = n
        emitter = ParamEmitter([])
        emitter.streams = assign_streams(name, final, roots)
        for r in roots:
            emitter.emit(r)
        result = emitter.emit(final)
        head = "  init.param %s : %s" % (quote(name), ty)
        if name in axes and len(axes[name]) == len(t.shape):
            head += " axes [%s]" % ", ".join('"%s"' % a for a in axes[name])
        if is_buffer:
            head += " buffer"
        lines.append(head + " {")
        lines.extend(emitter.lines)
        lines.append("    init.yield %s : %s" % (result, ty))
        lines.append("  }")
    lines.append("}")
    noted = set()
    for reads in shared_random.values():
        names = tuple(reads)
        if len(names) > 1 and names not in noted and reads_overlap(reads):
            noted.add(names)
            print("initc-capture: note: %s hold the same random values in PyTorch (copies, as "
                  "copy.deepcopy of a layer makes, or values computed from one random tensor); "
                  "the capture draws each of them independently, with the same distribution"
                  % ", ".join(names), file=sys.stderr)
    return "\n".join(lines) + "\n"


def load_factory(spec):
    if ":" not in spec:
        raise CaptureError("--factory '%s' must be FILE.py:FUNCTION or MODULE:FUNCTION" % spec)
    where, func = spec.rsplit(":", 1)
    if where.endswith(".py") or os.path.sep in where:
        if not os.path.exists(where):
            raise CaptureError("--factory: no file '%s'" % where)
        # As python does for a script: its directory first on the path.
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        mod_name = os.path.splitext(os.path.basename(where))[0]
        spec_ = importlib.util.spec_from_file_location(mod_name, where)
        module = importlib.util.module_from_spec(spec_)
        sys.modules[mod_name] = module
        spec_.loader.exec_module(module)
    else:
        # As `python -m` does: modules of the current directory first.
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name is None or not where.startswith(e.name):
                raise
            raise CaptureError("--factory: no module '%s' (looked in the current directory and "
                               "on sys.path): run from the directory that holds %s.py, or give "
                               "FILE.py:FUNCTION" % (where, where.replace(".", "/")))
    factory = getattr(module, func, None)
    if not callable(factory):
        raise CaptureError("--factory: '%s' has no function '%s'" % (where, func))
    return factory


def output_target(path):
    """The file that `-o path` writes and whether it is written in place: a pipe, /dev/null,
    /dev/stdout or another non-regular file is (a rename would replace it); a symbolic link to
    a regular file names the file that is replaced (the link stays). Raises CaptureError for
    paths that cannot be written."""
    import stat
    try:
        info = os.stat(path)  # follows links
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise CaptureError("cannot write %s: it is a directory: name a file" % path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        return path, True
    # A link to a file yet to be written: realpath names the file to create.
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(target) or "."
    if not os.path.isdir(directory):
        raise CaptureError("cannot write %s: directory %s does not exist" % (path, directory))
    return target, False


def write_output(path, text):
    """Writes `text` to `path` ('-': stdout) atomically: a temporary name next to the file, then
    a rename, so that a failure never leaves a partial file under the final name nor a
    temporary file behind; a pipe or a device is written as it is."""
    data = text.encode("utf-8")
    if path == "-":
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except OSError as e:
            raise CaptureError("cannot write to stdout: %s" % (e.strerror or e))
        return
    target, direct = output_target(path)
    if direct:
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as e:
            raise CaptureError("cannot write %s: %s" % (path, e.strerror or e))
        return
    directory, base = os.path.split(target)
    temp = os.path.join(directory, ".%s.tmp-%d" % (base[:200], os.getpid()))
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, target)
    except OSError as e:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise CaptureError("cannot write %s: %s" % (path, e.strerror or e))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="initc_capture.py",
        description="Capture a PyTorch model constructor (run on the meta device) into init IR.")
    parser.add_argument("--factory", required=True, help="FILE.py:FUNCTION or MODULE:FUNCTION returning an nn.Module")
    parser.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for the factory")
    parser.add_argument("-o", "--output", default="-", help="output .mlir ('-': stdout)")
    parser.add_argument("--seed", type=int, default=0, help="the init.seed of the module (default 0)")
    parser.add_argument("--name", help="model name (default: the factory's name)")
    opts = parser.parse_args(argv)
    try:
        try:
            kwargs = json.loads(opts.kwargs)
        except json.JSONDecodeError as e:
            raise CaptureError("--kwargs is not valid JSON: %s" % e)
        if not isinstance(kwargs, dict):
            raise CaptureError("--kwargs must be a JSON object, e.g. '{\"dim\": 512}'")
        if not 0 <= opts.seed < 2 ** 64:
            raise CaptureError("--seed must be an unsigned 64-bit integer")
        if opts.output != "-":
            target, _ = output_target(opts.output)
            where = opts.factory.rsplit(":", 1)[0]
            if os.path.exists(where) and os.path.exists(target) and os.path.samefile(where, target):
                raise CaptureError("-o '%s' is the factory's file: choose another -o" % opts.output)
        if opts.name is not None:
            try:
                opts.name.encode("utf-8")
            except UnicodeEncodeError:
                raise CaptureError("--name must be valid UTF-8")
        factory = load_factory(opts.factory)
        name = opts.name or opts.factory.rsplit(":", 1)[1]
        text = capture_model(factory, kwargs, opts.seed, name)
    except CaptureError as e:
        print("initc-capture: error: %s" % e, file=sys.stderr)
        return 1
    except Exception as e:  # the factory itself failed
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if os.path.abspath(f.filename) != _THIS_FILE]
        # The factory's own line (not torch's), and where it failed when that is elsewhere.
        user = [f for f in frames if not os.path.abspath(f.filename).startswith(_TORCH_DIR)]
        where = "%s:%d" % (user[-1].filename, user[-1].lineno) if user else "?"
        if frames and user and frames[-1] is not user[-1]:
            where += ", in %s:%d" % (frames[-1].filename, frames[-1].lineno)
        print("initc-capture: error: the factory raised %s: %s (at %s)"
              % (type(e).__name__, first_line(e), where), file=sys.stderr)
        return 1
    try:
        write_output(opts.output, text)
    except CaptureError as e:
        print("initc-capture: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
