"""Expressions: a tensor's value as a tree of init IR ops over its shape."""

import itertools
import math
import struct

import torch

from .._ir_printer import UNARY_OPS
from .diagnostics import CaptureError, user_location


DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.bool: "i1", torch.int64: "i64",
}
FLOAT_TYPES = ("f32", "f16", "bf16", "f64")
RANDOM_OPS = ("uniform", "normal", "trunc_normal", "variance_scaling", "orthogonal")
# Ops whose element values depend on the element's position (not only on its linear index).
INDEXED_OPS = ("iota", "linspace", "eye", "tril", "triu", "index_mask", "orthogonal")
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
        if op in ("iota", "linspace"):
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
    elif node.op == "iota" and len(old) == 1:
        unfolded = unfold_iota(node, shape)
        if unfolded is not None:
            return unfolded
    if dim_map is None and not is_index_free(node):
        return unsupported("reshaping a tensor whose values depend on their position from %s to %s"
                           % (list(node.shape), list(shape)), shape, node.dtype)
    return rebuild(node, shape, dim_map)


def unfold_iota(node, shape):
    """An arange viewed with more dims (torch.arange(16.).view(4, 4)): element start + step *
    (linear index), as a sum of one iota per dim in f64, exact for integer values below 2^53,
    then one rounding to the type, as arange's. None where that is not exact."""
    start, step = node.attrs["start"], node.attrs["step"]
    total = node.numel()
    if not all(float(v).is_integer() for v in (start, step)) or \
            max(abs(start), abs(start + step * (total - 1))) >= 2.0 ** 53:
        return None
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    value = None
    for d, n in enumerate(shape):
        if n == 1:
            continue
        term = Node("iota", shape, "f64", dim=d, start=0.0, step=float(step * strides[d]))
        value = term if value is None else Node("add", shape, "f64", (value, term))
    value = Node("add", shape, "f64", (value, fill(start, shape, "f64")))
    return Node("cast", shape, node.dtype, (value,))


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


# Ops whose element is computed from the same element of their operands (a shift of the index
# along a dim moves through them).
POINTWISE_OPS = ("fill", "add", "sub", "mul", "div", "pow", "cast", "select", "clamp") + UNARY_OPS


def shifted(node, shape, dim, lo, place=None):
    """`node` placed over `shape` so that its element at index i along `dim` is the one at
    i - lo (the other dims equal): the part of a concatenation that starts at `lo`. Exact
    where init IR can say it: fills, and iotas whose shifted start is an exact integer (iota
    computes start + i * step in f64); None otherwise. A random op is drawn over `shape`, each
    element at its own index as any random op (the same distribution), and `place(old map)`
    records which of the part's elements it holds where, so that a part read twice (a repeat)
    is found."""
    if node.op in RANDOM_OPS and place is not None and node.op != "orthogonal":
        src = explicit_random(node)  # its fan is the part's
        out = src.derived(shape)
        out.imap, out.where = place(node.imap), user_location()
        return out
    if node.op == "fill":
        return fill(node.attrs["value"], shape, node.dtype)
    if node.op == "iota":
        attrs = dict(node.attrs)
        if attrs["dim"] == dim and lo:
            start, step = attrs["start"], attrs["step"]
            moved = start - lo * step
            # Multiples of 1/2 below 2^51: every start + i * step is exact in f64 either way.
            if not all(float(2 * v).is_integer() and abs(v) < 2.0 ** 51 for v in (start, step, moved)):
                return None
            attrs["start"] = moved
        return Node("iota", shape, node.dtype, **attrs)
    if node.op == "index_mask":
        attrs = dict(node.attrs)
        if attrs["dim"] == dim:
            attrs["index"] += lo
        return Node("index_mask", shape, node.dtype, **attrs)
    if node.op == "linspace":
        # Its values follow from its size along its dim, which a shift along it would change.
        if node.attrs["dim"] == dim and (lo or shape[dim] != node.shape[dim]):
            return None
        return Node("linspace", shape, node.dtype, **node.attrs)
    if node.op not in POINTWISE_OPS or not node.args:
        return None
    args = [shifted(a, shape, dim, lo, place) for a in node.args]
    if any(a is None for a in args):
        return None
    return node.derived(shape, args)


def concatenate(parts, dim, shape, dtype):
    """torch.cat of the expressions `parts` along `dim` (each already of the result's dtype):
    selects over range masks of each part's shifted value."""
    what = "torch.cat of tensors whose values init IR cannot move to another position " \
           "(only constants, integer aranges and random draws)"
    if any(first_unsupported(p) is not None for p in parts):
        return unsupported("", shape, dtype, inputs=parts)
    offsets, lo = [], 0
    for p in parts:
        offsets.append(lo)
        lo += p.shape[dim]
    numel, strides = math.prod(shape), [math.prod(shape[d + 1:]) for d in range(len(shape))]
    placed = []
    for p, at in zip(parts, offsets):
        if p.shape[dim] == 0:
            continue
        q = shifted(p, shape, dim, at, lambda inner, p=p, at=at: IndexMap(
            "place", inner, p.shape, strides, at * strides[dim], numel))
        if q is None:
            return unsupported(what, shape, dtype)
        placed.append((q, at, at + p.shape[dim]))
    value = placed[-1][0]
    for q, a, b in reversed(placed[:-1]):
        value = select(range_mask(shape, dim, a, b), q, value)
    return value


# Significant bits of each type, and of the type torch.cumsum accumulates it in on the CPU
# (at::acc_type: double for float, float for the 16-bit types); i64 sums are computed here in f64.
PRECISION = {"f64": 53, "f32": 24, "bf16": 8, "f16": 11, "i64": 53}
CUMSUM_ACCUMULATOR = {"f64": 53, "f32": 53, "bf16": 24, "f16": 24, "i64": 53}


def cumulative_sum(node, dim, dtype):
    """torch.cumsum of `node` (already in `dtype`) along `dim`, where every partial sum torch's
    CPU loop adds is exact in its accumulator, so the result is the exact sum rounded once: of
    a constant c, (k + 1) * c (an iota); of an arange a + b * k along `dim` with integer a and b,
    (k + 1) * a + b * k * (k + 1) / 2, computed exactly in f64 and converted. None otherwise."""
    n = node.shape[dim]
    acc = CUMSUM_ACCUMULATOR.get(dtype)
    if acc is None or n == 0:
        return None
    if node.op == "fill":
        c = node.attrs["value"]
        if not math.isfinite(c):
            return None
        if c == 0 or abs(c.as_integer_ratio()[0]) * n < 2 ** acc:
            return Node("iota", node.shape, dtype, dim=dim, start=c, step=c)
        return None
    if node.op != "iota" or node.attrs["dim"] != dim:
        return None
    a, b = node.attrs["start"], node.attrs["step"]
    if not (float(a).is_integer() and float(b).is_integer()):
        return None
    a, b = int(a), int(b)
    # Every element exact in the type, every partial sum exact in the accumulator and in f64.
    if max(abs(a), abs(a + b * (n - 1))) >= 2 ** PRECISION[dtype]:
        return None
    k = torch.arange(n, dtype=torch.float64)
    sums = (k + 1) * a + b * k * (k + 1) / 2
    if sums.abs().max().item() >= 2 ** acc or (abs(b) + 2 * abs(a)) * n * n >= 2 ** 53:
        return None
    shape = node.shape
    here = Node("iota", shape, "f64", dim=dim, start=0.0, step=1.0)
    after = Node("iota", shape, "f64", dim=dim, start=1.0, step=1.0)
    value = Node("mul", shape, "f64", (after, fill(a, shape, "f64")))
    if b:
        triangle = Node("mul", shape, "f64", (Node("mul", shape, "f64", (here, after)),
                                               fill(b / 2, shape, "f64")))
        value = Node("add", shape, "f64", (value, triangle))
    return cast(value, dtype)
