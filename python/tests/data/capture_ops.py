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
