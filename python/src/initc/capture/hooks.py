"""What the capture replaces in torch while a factory runs: the torch.nn.init functions and the
legacy constructors (torch.Tensor(sizes), torch.FloatTensor(sizes), ...)."""

import itertools
import os

import torch
import torch.nn as nn


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
_HOOKS_FILE = os.path.abspath(__file__)


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
            exec(compile(source, _HOOKS_FILE, "exec"), {}, namespace)
            self.saved[name] = f.__code__
            f.__code__ = namespace[name].__code__
        return self

    def __exit__(self, *exc):
        for name, code in self.saved.items():
            INIT_FUNCS[name].__code__ = code
        nn.init.__dict__.pop(_HOOK_GLOBAL, None)
        return False


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

    # Annotations evaluated while the factory imports a module (transformers' `torch.FloatTensor
    # | None`) are the original's.
    def __or__(self, other):
        return self._original | other

    def __ror__(self, other):
        return other | self._original


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
