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


class GeneralPowers(nn.Module):
    """Powers torch computes with std::pow (or Sleef's powf): RoPE's inverse frequencies as a
    persistent buffer, other constant exponents, a number to a tensor, a tensor to a tensor."""

    def __init__(self, dtype):
        super().__init__()
        x = torch.arange(1, 65, dtype=torch.float32).to(dtype) / 8
        t = (torch.arange(0, 128, 2).float() / 128).to(dtype)
        buffers = {
            "inv_freq": 1.0 / (10000 ** t),
            "power_1_5": x ** 1.5,
            "quarter": x.pow(0.25),
            "negative_exponent": x ** -1.7,
            "fourth": x ** 4,
            "tensor_tensor": torch.pow(x, t * 6 - 3),
            "two_to_t": 2 ** torch.arange(64).to(dtype),
            "negative_base": (x - 4) ** 5,
            "negative_base_even": (x - 4) ** 4.0,
            "negative_number_base": (-1.5) ** (torch.arange(64).to(dtype) - 32),
        }
        for name, value in buffers.items():
            self.register_buffer(name, value)


def general_powers(dtype="float32"):
    return GeneralPowers(getattr(torch, dtype))


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


class RandomParts(nn.Module):
    """Parameters concatenated and stacked from several random draws and constants (and, with
    `repeated`, one draw used twice)."""

    def __init__(self, repeated):
        super().__init__()
        self.cat = nn.Parameter(torch.cat([torch.randn(64, 32) * 0.02, torch.zeros(8, 32),
                                           torch.rand(56, 32) - 0.5]))
        self.stack = nn.Parameter(torch.stack([torch.randn(256), torch.ones(256),
                                               torch.rand(256) * 4], dim=1))
        self.fans = nn.Parameter(torch.cat([nn.init.kaiming_uniform_(torch.empty(16, 64)),
                                            torch.empty(16, 48).normal_(1.0, 0.5)], dim=1))
        if repeated:
            a = torch.randn(4, 8)
            self.twice = nn.Parameter(torch.cat([a, a]))


def random_parts(repeated=False):
    return RandomParts(repeated)


LINSPACES = [(0.0, 1.0, 2), (0.0, 1.0, 7), (-3.7, 11.3, 30), (0.001, 0.1, 12), (1e-3, 7.0, 65),
             (-1.0, 1.0, 1000), (2.5, -1e4, 257), (0.0, 0.1, 24), (5.0, 5.0, 9), (3.0, 4.0, 1)]


class Linspaces(nn.Module):
    """torch.linspace over bounds and sizes whose two halves round differently, a viewed one,
    and cumulative sums of constants and aranges."""

    def __init__(self, dtype):
        super().__init__()
        for i, (start, end, steps) in enumerate(LINSPACES):
            self.register_buffer("linspace%d" % i, torch.linspace(start, end, steps, dtype=dtype))
        self.register_buffer("grid", torch.linspace(-1, 1, 16, dtype=dtype)[None, :, None]
                             .expand(3, 16, 2).contiguous())
        self.register_buffer("cumsum_ones", torch.ones(6, 5, dtype=dtype).cumsum(0))
        self.register_buffer("cumsum_fill", torch.full((40,), 0.375, dtype=dtype).cumsum(-1))
        self.register_buffer("cumsum_arange", torch.arange(3, 40, 2, dtype=dtype).cumsum(0))
        self.register_buffer("cumsum_down", torch.arange(9, -9, -1, dtype=dtype).cumsum(0))
        self.register_buffer("cumsum_long", torch.arange(10).cumsum(0))
        self.register_buffer("cumsum_mask", torch.ones(7, dtype=torch.bool).cumsum(0))
        self.lin = nn.Linear(4, 4)


def linspaces(dtype="float32"):
    return Linspaces(getattr(torch, dtype))
