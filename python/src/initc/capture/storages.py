"""Storages and views: the value of each tensor storage, and where a view sits in it."""

import itertools
import math

from .expressions import fill


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
    # untyped_storage (torch 2.x) avoids TypedStorage's deprecation warning; 1.13 has storage().
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage()._cdata
    return t.storage()._cdata


def storage_numel(t):
    """The number of elements of `t`'s dtype that its storage holds."""
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage().nbytes() // t.element_size()
    return t.storage().size()


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
