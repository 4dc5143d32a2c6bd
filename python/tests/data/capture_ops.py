"""Factories whose persistent buffers use the ops real constructors use, for test_capture_hf.py:
every value deterministic, so the capture must give transformers'/torch's bits."""

import torch
import torch.nn as nn


class Powers(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        x = torch.arange(1, 65, dtype=torch.float32).to(dtype) / 8
        self.register_buffer("square", x ** 2)
        self.register_buffer("cube", torch.pow(x, 3))
        self.register_buffer("root", x ** 0.5)
        self.register_buffer("rsqrt", x.pow(-0.5))
        self.register_buffer("inverse", x ** -1)
        self.register_buffer("inverse_square", x ** -2.0)
        self.register_buffer("one", x ** 0)
        self.register_buffer("same", x ** 1)
        self.register_buffer("folded", 2.0 ** torch.full((64,), 3.0, dtype=dtype))
        self.register_buffer("folded_base", torch.full((64,), 10000.0, dtype=dtype) ** 0.25)
        self.lin = nn.Linear(4, 4)


def powers(dtype="float32"):
    return Powers(getattr(torch, dtype))


class Ops(nn.Module):
    """Concatenations, repeats, views of aranges, masks, outer products, clamps, exp, log, expm1
    and log1p (in-place too)."""

    def __init__(self):
        super().__init__()
        buffers = {
            "cat": torch.cat([torch.arange(4.), torch.arange(10., 14.), torch.full((2,), 7.)]),
            "cat_rows": torch.cat([torch.ones(2, 3), torch.arange(6.).view(2, 3)], dim=0),
            "stack": torch.stack([torch.arange(4.), torch.ones(4)], dim=1),
            "repeat": torch.arange(3.).repeat(2, 2),
            "arange_view": torch.arange(24, dtype=torch.int64).view(2, 3, 4),
            "outer": torch.outer(torch.arange(1., 5.), torch.arange(0., 3.) / 4),
            "masked_fill": torch.zeros(4, 4).masked_fill(
                torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf")),
            "expand": torch.arange(4.)[None].expand(3, 4).contiguous(),
            "clamp": (torch.arange(8.) - 3).clamp(min=0.5, max=3),
            "arange_bf16": torch.arange(0, 16, 2, dtype=torch.bfloat16),
            "exp": (torch.arange(8.) / 4).exp(),
            "log": torch.arange(1., 9.).log(),
            "expm1": torch.expm1((torch.arange(16.) - 8) / 4),
            "log1p": ((torch.arange(16.) - 7) / 8).log1p(),
            "expm1_": (torch.arange(8.) / -64).expm1_(),
            "log1p_": torch.log1p_(torch.arange(8.) / 1024),
        }
        for name, value in buffers.items():
            self.register_buffer(name, value)


def ops():
    return Ops()


class TensorArguments(nn.Module):
    """Distributions whose arguments are tensors (constants), and one that is not."""

    def __init__(self, random_std):
        super().__init__()
        self.w = nn.Parameter(torch.empty(64, 64))
        self.v = nn.Parameter(torch.empty(64, 64))
        self.u = nn.Parameter(torch.empty(64))
        nn.init.uniform_(self.w, torch.tensor(-0.5), torch.tensor(0.5))
        nn.init.normal_(self.v, torch.tensor(0.0), torch.rand(()) if random_std else torch.full((), 0.25))
        self.u.data.uniform_(torch.tensor(1.0), 2.0)


def tensor_arguments(random_std=False):
    return TensorArguments(random_std)

