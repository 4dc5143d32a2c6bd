#!/usr/bin/env bash
# Values and dtypes that tools/capture/initc_capture.py must get exactly as eager PyTorch does,
# for the factories written below into the scratch directory: each is captured, compiled for one
# rank, run and assembled, then tests/capture/check_capture.py compares every tensor with eager
# PyTorch (names, dtypes, shapes; deterministic elements bit for bit; random ones by mean, std
# and Kolmogorov-Smirnov), and the factory's own check_NAME(tensors) asserts the exact
# relationships (copies, zeros, constants) that a statistical test cannot see.
# Needs: /usr/bin/python3 with torch, numpy and scipy (scripts/setup.sh installs them).
source "$(dirname "$0")/../common.bash"
CAPTURE="$ROOT/tools/capture/initc_capture.py"
CHECK="$ROOT/tests/capture/check_capture.py"
"$PYTHON" -c "import torch, numpy, scipy" 2>/dev/null ||
  fail "$PYTHON needs torch, numpy and scipy: apt-get install python3-torch python3-numpy python3-scipy"
[[ -x $INITC ]] || fail "$INITC is missing: build the target initc"
cd "$WORK"

cat >models.py <<'EOF'
import math

import numpy as np
import torch
import torch.nn as nn
# Imported by name before the capture hooks torch.nn.init: still recorded whole.
from torch.nn.init import (constant_, dirac_, eye_, kaiming_normal_, ones_, orthogonal_,
                           trunc_normal_, xavier_uniform_, zeros_)

INITS = {"normal": nn.init.normal_, "uniform": nn.init.uniform_}


class Dtypes(nn.Module):
    """Buffers from every factory form, without and with dtype=: eager CPU's dtype rules (the
    meta device of torch 1.13 infers others for full and arange)."""

    def __init__(self):
        super().__init__()
        buffers = {
            "full_int": torch.full((4,), -100),
            "full_bool": torch.full((4,), True),
            "full_float": torch.full((2, 3), 1.5),
            "full_f16": torch.full((4,), 2, dtype=torch.float16),
            "full_i64": torch.full((3,), 7, dtype=torch.int64),
            "arange_float_start": torch.arange(0., 8),
            "arange_float_end": torch.arange(8.),
            "arange_float_step": torch.arange(0, 8, 0.5),
            "arange_int": torch.arange(8),
            "arange_int_step": torch.arange(2, 20, 3),
            "arange_f64": torch.arange(5, dtype=torch.float64),
            "zeros": torch.zeros(3),
            "zeros_i64": torch.zeros(3, dtype=torch.int64),
            "ones_bool": torch.ones(2, 2, dtype=torch.bool),
            "ones_bf16": torch.ones(3, dtype=torch.bfloat16),
            "tensor_int": torch.tensor(3),
            "tensor_float": torch.tensor(2.5),
            "tensor_bool": torch.tensor(True),
            "tensor_f64": torch.tensor(2, dtype=torch.float64),
            "scalar_tensor": torch.scalar_tensor(3),
            "eye": torch.eye(3),
            "eye_bool": torch.eye(2, 3, dtype=torch.bool),
            "empty_filled": torch.empty(3, dtype=torch.int64).fill_(5),
            "full_like": torch.full_like(torch.zeros(2, dtype=torch.int64), 4),
            "new_full": torch.zeros(2, dtype=torch.bool).new_full((3,), 1),
            # Constants keep the rounding of the type they were made in.
            "f32_to_f64": torch.full((4,), 0.1).double(),
            "f64_to_f32": torch.full((4,), 0.1, dtype=torch.float64).float(),
            "bf16_to_f32": torch.full((4,), 0.1, dtype=torch.bfloat16).float(),
            "f32_arange_to_f64": (torch.arange(6, dtype=torch.float32) * 0.1).double(),
            "f32_arange_to_long": (torch.arange(0., 3., 0.1)).long(),
            "f32_iota_to_f64": torch.arange(0., 1., 0.1).double(),
            # Operators as torch composes them: -x flips zeros, number / x is
            # x.reciprocal() * number, bf16 rsqrt rounds once (in eager's vector loop; its
            # scalar tail rounds twice, so the length is whole vectors).
            "neg_zeros": -torch.zeros(3),
            "neg_inplace": torch.zeros(2, 2).neg_(),
            "neg_arange": -torch.arange(-2., 3.),
            "rdiv": 1.7 / torch.arange(1., 40.),
            "rdiv_bf16": 0.3 / torch.arange(1., 40., dtype=torch.bfloat16),
            "rdiv_int": 2 / torch.arange(1, 9),
            "rsqrt_bf16": torch.rsqrt(torch.arange(1., 257., dtype=torch.bfloat16)),
        }
        for name, value in buffers.items():
            self.register_buffer(name, value)


def dtypes():
    return Dtypes()


def dtypes_f64():
    """The same with torch.set_default_dtype(torch.float64) inside the factory."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return Dtypes()
    finally:
        torch.set_default_dtype(old)


def check_dtypes(t):
    assert t["full_int"].dtype == np.int64 and (t["full_int"] == -100).all()
    assert t["arange_float_start"].dtype == np.float32


def check_dtypes_f64(t):
    assert t["arange_float_start"].dtype == np.float64 and t["full_int"].dtype == np.int64


class ImportedInits(nn.Module):
    """torch.nn.init functions called by names imported before the capture starts, through an
    alias table, and imported while the factory runs."""

    def __init__(self):
        super().__init__()
        from torch.nn.init import orthogonal_ as late_orthogonal_
        shapes = {"orth": (32, 48), "orth_late": (24, 16), "eye": (8, 12), "dirac": (4, 4, 3),
                  "xavier": (40, 30), "kaiming": (40, 30), "trunc": (2000,), "zeros": (5,),
                  "ones": (5,), "const": (5,), "normal": (2000,), "uniform": (2000,)}
        for name, shape in shapes.items():
            setattr(self, name, nn.Parameter(torch.empty(shape)))
        orthogonal_(self.orth, gain=1.5)
        late_orthogonal_(self.orth_late)
        eye_(self.eye)
        dirac_(self.dirac)
        xavier_uniform_(self.xavier)
        kaiming_normal_(self.kaiming, mode="fan_out")
        trunc_normal_(self.trunc, std=0.5, a=-0.7, b=0.7)
        zeros_(self.zeros)
        ones_(self.ones)
        constant_(self.const, 0.25)
        INITS["normal"](self.normal, 1.0, 2.0)
        INITS["uniform"](self.uniform, -3.0, -1.0)


def imported_inits():
    return ImportedInits()


def check_imported_inits(t):
    assert (t["eye"] == np.eye(8, 12, dtype=np.float32)).all()
    assert (t["const"] == 0.25).all() and abs(t["trunc"]).max() <= 0.7


class Moved(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(40, 30)
        self.emb = nn.Embedding(50, 20)
        self.register_buffer("steps", torch.arange(6).to("cpu"))
        self.register_buffer("mask", torch.ones(3, dtype=torch.bool).cpu())
        self.register_buffer("wide", torch.full((4,), 0.1).to("cpu", torch.float64))
        self.scale = nn.Parameter(torch.rand(1000).to(device="cpu", copy=True))


def device_moves():
    """Device moves are no-ops (the capture has no devices), at the end and inside."""
    return Moved().to("cpu")


def device_dtype_move():
    """A move with a dtype: float tensors change dtype, integer buffers keep theirs."""
    return Moved().to(device="cpu", dtype=torch.bfloat16)


class Degenerate(nn.Module):
    """Initializers whose distribution collapses to a constant (std 0, equal bounds, gain 0),
    a gain whose square is 0 in f32, tensors with no elements, and kaiming's mode in capitals."""

    def __init__(self):
        super().__init__()
        for name in ("n0", "u1", "tn", "tu", "u_f32_equal", "xu0", "xn0", "tiny", "tr_equal",
                     "fan_out"):
            setattr(self, name, nn.Parameter(torch.empty(40, 30)))
        self.bf = nn.Parameter(torch.empty(1000, dtype=torch.bfloat16))
        nn.init.normal_(self.n0, 0.5, 0.0)
        nn.init.uniform_(self.u1, 1.0, 1.0)
        with torch.no_grad():
            self.tn.normal_(3.0, 0.0)
            self.tu.uniform_(-2.0, -2.0)
            self.u_f32_equal.uniform_(0.5, 0.5 + 1e-12)
        nn.init.xavier_uniform_(self.xu0, gain=0.0)
        nn.init.xavier_normal_(self.xn0, gain=0.0)
        nn.init.xavier_normal_(self.tiny, gain=1e-30)
        nn.init.trunc_normal_(self.tr_equal, std=1.0, a=0.25, b=0.25)
        nn.init.kaiming_uniform_(self.fan_out, mode="FAN_OUT")
        nn.init.normal_(self.bf, 0.25, 1e-50)
        self.empty_linear = nn.Linear(0, 5)
        self.register_buffer("nothing", torch.empty(0))
        self.register_buffer("no_rows", torch.empty(0, 4).normal_())


def degenerate():
    return Degenerate()


def check_degenerate(t):
    for name, value in (("n0", 0.5), ("u1", 1.0), ("tn", 3.0), ("tu", -2.0), ("u_f32_equal", 0.5),
                        ("xu0", 0.0), ("xn0", 0.0), ("tr_equal", 0.25), ("bf", 0.25),
                        ("empty_linear.bias", 0.0)):
        assert (t[name] == value).all(), name
    assert t["empty_linear.weight"].shape == (5, 0) and t["nothing"].shape == (0,)
    assert 0 < abs(t["tiny"]).max() < 1e-29
    # fan_out (40), not fan_in (30): the bound is sqrt(6 / 40).
    assert 0.9 * math.sqrt(6 / 40) < abs(t["fan_out"]).max() <= math.sqrt(6 / 40)


class Views(nn.Module):
    """Random tensors read through views: one view read twice is the same values (exactly), two
    disjoint parts are independent, a transpose or a part alone is a fresh draw of the same
    distribution; constants broadcast; in-place inits through contiguous reshapes and slices."""

    def __init__(self):
        super().__init__()
        a = torch.randn(32, 32)
        self.zero = nn.Parameter(a[:, :16] - a[:, :16])
        self.square = nn.Parameter(a[:, 16:] * a[:, 16:])
        b = torch.rand(64, 48)
        self.twice = nn.Parameter((b + b) - 2 * b)
        self.halves = nn.Parameter(b[:, :24] + b[:, 24:])
        self.transposed = nn.Parameter(torch.randn(40, 30).t().clone())
        c = torch.randn(50, 40)
        self.part = nn.Parameter(c[10:40, 8:])
        self.scaled_rows = nn.Parameter(torch.randn(40, 32) * torch.arange(32.).view(1, 32))
        self.register_buffer("positions", torch.arange(16).expand(3, 16))
        self.register_buffer("masks", torch.tril(torch.ones(6, 6)).expand(2, 6, 6))
        self.flat = nn.Parameter(torch.empty(40, 30))
        self.rows = nn.Parameter(torch.empty(40, 30))
        self.box = nn.Parameter(torch.empty(512, 300))
        with torch.no_grad():
            self.flat.view(-1).normal_(2.0, 0.5)
            self.rows.view(-1)[:600].uniform_(-1.0, 1.0)  # rows 0 to 19
            self.rows.view(-1)[600:].fill_(3.0)
            self.box.normal_()
            self.box[:256, :200].zero_()


def views():
    return Views()


def check_views(t):
    assert (t["zero"] == 0).all() and (t["square"] >= 0).all()
    assert (t["twice"] == 0).all()
    assert (t["rows"][20:] == 3.0).all() and (abs(t["rows"][:20]) <= 1).all()
    assert (t["box"][:256, :200] == 0).all() and (t["box"][256:] != 0).all()
    assert (t["box"][:256, 200:] != 0).all()


class Legacy(nn.Module):
    """Legacy constructors with sizes (torch.Tensor(16, 8), torch.FloatTensor(...)) give
    uninitialized tensors as torch.empty does; reset_parameters-style code then fills them."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.Tensor(40, 30))
        self.f = nn.Parameter(torch.FloatTensor(torch.Size([50, 20])))
        self.register_buffer("count", torch.LongTensor(4).fill_(3))
        self.register_buffer("flag", torch.BoolTensor(2).fill_(True))
        nn.init.kaiming_uniform_(self.w, a=math.sqrt(5))
        nn.init.normal_(self.f, 0.0, 0.02)


def legacy():
    return Legacy()


ALL = ["dtypes", "dtypes_f64", "imported_inits", "device_moves", "device_dtype_move", "degenerate",
       "views", "legacy"]
EOF

for model in $("$PYTHON" -c "import models; print(' '.join(models.ALL))"); do
  mkdir -p "$model"
  "$PYTHON" "$CAPTURE" --factory "models.py:$model" --seed 5 -o "$model/model.mlir" \
    2> >(grep -v "^initc-capture: note:" >&2) || fail "$model: capture failed"
  "$INITC" compile "$model/model.mlir" --mesh dp=1 --shard replicated -o "$model/prog" >/dev/null ||
    fail "$model: compile failed"
  "$model/prog/init" --layout ranks --out "$model/ckpt" --quiet || fail "$model: the run failed"
  "$INITC" assemble "$model/ckpt" -o "$model/m.safetensors" >/dev/null || fail "$model: assemble failed"
  if ! "$PYTHON" "$CHECK" --factory "models.py:$model" --ir "$model/model.mlir" \
      "$model/m.safetensors" >"$model/check.log" 2>&1; then
    cat "$model/check.log" >&2
    fail "$model: values do not match PyTorch's eager initialization"
  fi
  "$PYTHON" - "$CHECK" "$model" "$model/m.safetensors" <<'EOF' || fail "$model: an exact relationship does not hold"
import importlib.util
import sys
sys.path.insert(0, ".")
spec = importlib.util.spec_from_file_location("check_capture", sys.argv[1])
check_capture = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_capture)
import models
tensors = {k: v[1] for k, v in check_capture.read_safetensors(sys.argv[3]).items()}
check = getattr(models, "check_" + sys.argv[2], None)
if check is not None:
    check(tensors)
EOF
  echo "ok $model: $(tail -1 "$model/check.log")"
done
echo "PASS capture_values"
