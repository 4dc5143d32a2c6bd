"""Recording: a TorchFunctionMode that follows every torch call of the factory on the meta device
and keeps each storage's value as an expression."""

import itertools
import math

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from .diagnostics import CaptureError, meta_failure, user_location
from .expressions import (DTYPES, FLOAT_TYPES, INDEXED_OPS, RANDOM_OPS, UNARY_OPS, IndexMap, Node,
                          binary, broadcast, cast, compute_type, concatenate, cumulative_sum,
                          explicit_random, fill, first_unsupported, is_index_free, negate,
                          normal_node, random_leaves, range_mask, reshape, round_to, select,
                          trunc_normal_node, uniform_node, unsupported, variance_scaling_node)
from .hooks import INIT_BY_FUNC, ORIGINAL_INIT
from .storages import (Storage, contiguous_strides, describe_view, dim_order, storage_key,
                       storage_numel,
                       unexpanded_shape, view_geometry)


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
        dense = t.storage_offset() == 0 and t.numel() == storage_numel(t)
        order = dim_order(t) if dense else None
        if first_unsupported(node) is not None:
            node = unsupported("", (storage_numel(t),) if order is None else
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
                               "%s)" % list(t.stride()), (storage_numel(t),), dtype)
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
    def scalar(self, v, what):
        """A distribution's argument as a Python number: a tensor argument must be a constant
        the capture knows (torch.tensor(0.5), a full), not a computed or random one."""
        if not isinstance(v, torch.Tensor):
            return v
        node = self.value(v)
        if node.op == "fill" and v.numel() == 1:
            return node.attrs["value"]
        raise CaptureError("%s: %s with a tensor argument that is not a known constant (a "
                           "computed or random tensor): the distribution must be known when the "
                           "capture records it" % (user_location(), what))

    SCALAR_ARGS = {"uniform_": ("a", "b"), "normal_": ("mean", "std"),
                   "trunc_normal_": ("mean", "std", "a", "b")}

    def nn_init(self, name, args, kwargs):
        import inspect
        sig = inspect.signature(ORIGINAL_INIT[name])
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise CaptureError("%s: torch.nn.init.%s: %s" % (user_location(), name, e))
        bound.apply_defaults()
        a = bound.arguments
        for key in self.SCALAR_ARGS.get(name, ()):
            a[key] = self.scalar(a[key], "torch.nn.init." + name)
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
        if name == "linspace":
            bounds = [kwargs.get(k, args[i] if len(args) > i else None)
                      for i, k in enumerate(("start", "end"))]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds):
                return unsupported("torch.linspace with bounds that are not numbers", shape, dt)
            start, end = (float(v) for v in bounds)
            if dt not in ("f32", "bf16", "f16"):
                return unsupported("torch.linspace in %s (init.linspace makes f32, bf16 and f16: "
                                   "make it in float32 and convert it)" % dt, shape, dt)
            if not all(math.isfinite(round_to(v, dt)) for v in (start, end)):
                return unsupported("torch.linspace(%s, %s) with bounds that are not finite in %s"
                                   % (start, end, dt), shape, dt)
            if shape[0] <= 1:
                return fill(start, shape, dt)
            return Node("linspace", shape, dt, dim=0, start=start, end=end)
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
        if base in ("pow", "rpow", "float_power") and len(args) >= 2:
            node = self.power(base, args, shape, dt)
            if node is not None:
                return node
        if base in ("cat", "concat", "concatenate", "stack") and args and \
                isinstance(args[0], (list, tuple)):
            dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
            dim = dim + len(shape) if dim < 0 else dim
            parts = []
            for t in args[0]:
                part_shape = tuple(t.shape)
                if base == "stack":
                    part_shape = part_shape[:dim] + (1,) + part_shape[dim:]
                elif t.dim() == 1 and t.shape[0] == 0 and len(shape) != 1:
                    continue  # torch.cat skips legacy empty 1-d tensors
                parts.append(cast(self.value(t, part_shape), dt))
            return concatenate(parts, dim, shape, dt)
        if base == "cumsum" and x is not None:
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            dim = dim + len(shape) if dim < 0 else dim
            v = self.value(x, shape, dt)
            summed = cumulative_sum(v, dim, dt) if first_unsupported(v) is None else None
            if summed is not None:
                return summed
            return unsupported("torch.cumsum of a tensor other than a constant or an integer "
                               "arange along the summed dim (its sums would not be exact)",
                               shape, dt, inputs=(v,))
        if base == "repeat" and len(args) >= 2:
            sizes = tuple(args[1]) if isinstance(args[1], (list, tuple, torch.Size)) else tuple(args[1:])
            v = self.value(x, None, dt)
            v = reshape(v, (1,) * (len(sizes) - len(v.shape)) + tuple(v.shape))
            for d, r in enumerate(sizes):
                if r != 1:
                    grown = tuple(n * r if i == d else n for i, n in enumerate(v.shape))
                    v = concatenate([v] * r, d, grown, dt)
            return v
        if base == "masked_fill" and len(args) >= 3:
            return select(self.value(args[1], shape, "i1"), self.value(args[2], shape, dt),
                          self.value(x, shape, dt))
        if base in ("outer", "ger") and len(args) >= 2:
            n, m = shape
            a = broadcast(reshape(self.value(args[0], None, dt), (n, 1)), shape)
            b = broadcast(reshape(self.value(args[1], None, dt), (1, m)), shape)
            return binary("mul", a, b, dt)
        if base == "pad" and len(args) >= 2 and not any(args[1]):
            # F.pad by nothing (transformers' _adjust_bias of a tied head of the same size).
            return self.value(x, None, dt)
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

    def power(self, name, args, shape, dt):
        """`x ** e` as torch's CPU kernel computes it, where init IR can do the same: an
        exponent of 0 or 1, of 0.5, -0.5, -1 (torch calls sqrt, rsqrt, reciprocal), 2, 3, -2
        (products: x*x, x*x*x, 1/(x*x)) and constants on both sides (folded here, by torch
        itself); any other power is init.pow (rule 7's pow_f: torch's std::pow or Sleef powf
        within 1 ulp).
        None: no counterpart (float_power, whose f64 arithmetic init.pow does not do)."""
        base, exp = (args[1], args[0]) if name == "rpow" else (args[0], args[1])
        if name == "float_power" or dt not in FLOAT_TYPES:
            return None
        if isinstance(exp, torch.Tensor):
            e = self.value(exp, shape, dt)
            b = self.value(base, shape, dt)
            if e.op == "fill" and b.op == "fill":
                ty = next(k for k, v in DTYPES.items() if v == dt)
                value = torch.pow(torch.tensor(b.attrs["value"], dtype=ty),
                                  torch.tensor(e.attrs["value"], dtype=ty)).item()
                return fill(value, shape, dt)
            if e.op != "fill":
                return Node("pow", shape, dt, (b, e))  # number ** tensor, tensor ** tensor
            exp = e.attrs["value"]
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            return None
        v = self.value(base, shape, dt)
        if v.op == "fill":
            ty = next(k for k, t in DTYPES.items() if t == dt)
            return fill(torch.pow(torch.tensor(v.attrs["value"], dtype=ty), exp).item(), shape, dt)
        if exp == 0:
            return fill(1, shape, dt)
        if exp == 1:
            return v
        if exp == 0.5:
            return Node("sqrt", shape, dt, (v,))
        if exp in (-0.5, -1):
            ct = compute_type(dt)
            inner = Node("sqrt", shape, ct, (cast(v, ct),)) if exp == -0.5 else cast(v, ct)
            return cast(binary("div", fill(1, shape, ct), inner, ct), dt)
        if exp in (2, 3, -2):
            # torch's products round at every step in bf16 (its bf16 kernel multiplies bf16
            # values), once at the end in f16 (computed in f32).
            ct = "bf16" if dt == "bf16" else compute_type(dt)
            w = cast(v, ct)
            prod = binary("mul", w, w, ct)
            if exp == 3:
                prod = binary("mul", prod, w, ct)
            if exp == -2:
                prod = binary("div", fill(1, shape, ct), prod, ct)
            return cast(prod, dt)
        return Node("pow", shape, dt, (v, fill(exp, shape, dt)))

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
            # torch.cat and torch.stack take their tensors in a list.
            listed = args[0] if args and isinstance(args[0], (list, tuple)) else ()
            tensors = [a for a in itertools.chain(listed, args, kwargs.values())
                       if isinstance(a, torch.Tensor)]
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
            if name in ("uniform_", "normal_") and args and self.state(args[0]) is not None:
                # Tensor bounds or moments (t.normal_(mean_t, std_t)) as the numbers they hold.
                args = (args[0],) + tuple(self.scalar(v, torch_name(func)) for v in args[1:])
                kwargs = {k: self.scalar(v, torch_name(func)) for k, v in kwargs.items()}
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
