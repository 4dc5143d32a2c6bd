#!/usr/bin/env bash
# What tools/capture/initc_capture.py refuses, and how it writes: every refusal exits 1 (2 for a
# usage error) with exactly one "initc-capture: error:" line naming the op, the tensor or module
# and what to do, never a Python traceback, and leaves no file under the output's name and no
# temporary file. The factories are written below into the scratch directory.
# Needs: /usr/bin/python3 with torch (apt-get install python3-torch).
source "$(dirname "$0")/../common.bash"
CAPTURE="$ROOT/tools/capture/initc_capture.py"
"$PYTHON" -c "import torch" 2>/dev/null || fail "$PYTHON cannot import torch: apt-get install python3-torch"
cd "$WORK"
cases=0

cat >ok.py <<'EOF'
import torch
import torch.nn as nn


def linear():
    return nn.Linear(4, 3)


def stateless():
    return nn.Sequential(nn.ReLU(), nn.Dropout())
EOF

# refused NAME PATTERN ARGS...: the capture with ARGS fails cleanly with exit status 1, one error
# line holding PATTERN (grep -E) and no traceback.
refused() {
  local name=$1 pattern=$2
  shift 2
  fails_cleanly "$name" "$pattern" "$PYTHON" "$CAPTURE" "$@"
  local rc=0
  "$PYTHON" "$CAPTURE" "$@" >/dev/null 2>&1 || rc=$?
  ((rc == 1)) || fail "$name: exit status $rc, expected 1"
  ! grep -q "Traceback" "$WORK/err.txt" || fail "$name: a Python traceback: $(head -c 800 "$WORK/err.txt")"
  local lines
  lines=$(grep -vc "^initc-capture: note:" "$WORK/err.txt" || true)
  ((lines == 1)) || fail "$name: $lines lines, expected one error line: $(head -c 1200 "$WORK/err.txt")"
  grep -q "^initc-capture: error: " "$WORK/err.txt" || fail "$name: no 'initc-capture: error:' line"
  cases=$((cases + 1))
}

#===------------------------------------------------------------------------===#
# Outputs
#===------------------------------------------------------------------------===#

refused "missing directory" "cannot write $WORK/nowhere/x.mlir: directory $WORK/nowhere does not exist" \
  --factory ok.py:linear -o "$WORK/nowhere/x.mlir"
mkdir outdir
refused "a directory" "cannot write outdir: it is a directory: name a file" --factory ok.py:linear -o outdir
[[ -d outdir && -z $(ls -A outdir) ]] || fail "the output directory was changed"
no_output "$WORK/outdir.tmp"
refused "the factory's file" "-o 'ok.py' is the factory's file" --factory ok.py:linear -o ok.py
# IR without a parameter would only be refused later, by initc.
refused "no state" "the factory's Sequential has no parameters or buffers: there is nothing to initialize" \
  --factory ok.py:stateless -o stateless.mlir
no_output stateless.mlir
grep -q "def linear" ok.py || fail "the factory's file was overwritten"
# A usage error is argparse's, exit status 2.
rc=0
"$PYTHON" "$CAPTURE" --factory ok.py:linear --bogus >/dev/null 2>&1 || rc=$?
((rc == 2)) || fail "an unknown option: exit status $rc, expected 2"

"$PYTHON" "$CAPTURE" --factory ok.py:linear -o plain.mlir || fail "capture into a file"
expected=$(sha256sum <plain.mlir)
# A FIFO stays a FIFO and its reader gets the whole IR.
# (The reader gives up after a while: a tool that replaced the FIFO would leave it waiting.)
mkfifo ir.fifo
timeout 60 cat ir.fifo >from_fifo.mlir &
reader=$!
"$PYTHON" "$CAPTURE" --factory ok.py:linear -o ir.fifo || fail "capture into a FIFO"
[[ -p ir.fifo ]] || { kill $reader 2>/dev/null; fail "the FIFO was replaced by a regular file"; }
wait $reader || fail "the FIFO's reader got nothing"
[[ $(sha256sum <from_fifo.mlir) == "$expected" ]] || fail "the FIFO's reader got other bytes"
# /dev/stdout, a link to a pipe here, is written as it is. (Not /dev/null: a tool that renamed a
# file over it would break the machine for everyone.)
"$PYTHON" "$CAPTURE" --factory ok.py:linear -o /dev/stdout | cat >from_stdout.mlir
[[ ${PIPESTATUS[0]} == 0 && $(sha256sum <from_stdout.mlir) == "$expected" ]] || fail "capture into /dev/stdout"
# A symbolic link stays a link; the file it names is written (and created when missing).
ln -s target.mlir link.mlir
"$PYTHON" "$CAPTURE" --factory ok.py:linear -o link.mlir || fail "capture through a dangling link"
[[ -L link.mlir && $(sha256sum <target.mlir) == "$expected" ]] || fail "the link was not followed"
echo stale >target.mlir
"$PYTHON" "$CAPTURE" --factory ok.py:linear -o link.mlir || fail "capture through a link"
[[ -L link.mlir && $(sha256sum <target.mlir) == "$expected" ]] || fail "the link's target was not replaced"
no_output "$WORK/none"
# A model name with quotes, backslashes and control characters is escaped: initc reads it back.
"$PYTHON" "$CAPTURE" --factory ok.py:linear --name $'a"b\\c\nd' -o named.mlir || fail "capture with --name"
"$INITC" inspect named.mlir >inspect.txt 2>&1 || fail "initc cannot read the IR of a quoted --name: $(head -c 600 inspect.txt)"

#===------------------------------------------------------------------------===#
# Ops with no init IR counterpart
#===------------------------------------------------------------------------===#

cat >bad.py <<'EOF'
import torch
import torch.nn as nn
from torch.nn.init import sparse_


class Holder(nn.Module):
    def __init__(self, shape=(8, 8), dtype=torch.float32):
        super().__init__()
        self.w = nn.Parameter(torch.empty(shape, dtype=dtype))


def sparse_imported():
    m = Holder()
    sparse_(m.w, 0.5)
    return m


def init_call(call, shape=(8, 8)):
    m = Holder(shape)
    with torch.no_grad():
        eval(call, {"w": m.w, "nn": nn, "torch": torch})
    return m
EOF

refused "sparse_ imported by name" "model: torch.nn.init.sparse_ has no init IR counterpart .*tensor w, at .*bad.py:14" \
  --factory bad.py:sparse_imported

# Random values that PyTorch repeats (expand, broadcasting, a tensor read at two positions)
# cannot be independent draws: the capture stops, naming the tensor and the source lines.
cat >repeats.py <<'EOF'
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self, case):
        super().__init__()
        with torch.no_grad():
            if case == "expand_clone":
                self.w = nn.Parameter(torch.randn(1, 256).expand(64, 256).clone())
            elif case == "expand_copy":
                self.w = nn.Parameter(torch.empty(64, 256))
                self.w.copy_(torch.randn(1, 256).expand(64, 256))
            elif case == "expand_param":
                self.w = nn.Parameter(torch.randn(32).expand(16, 32))
            elif case == "expand_math":
                self.w = nn.Parameter(torch.randn(1, 32).expand(16, 32) * 2.0)
            elif case == "expand_reshape":
                self.w = nn.Parameter(torch.randn(4, 1, 8).expand(4, 3, 8).reshape(12, 8))
            elif case == "broadcast_add":
                self.w = nn.Parameter(torch.randn(1, 32) + torch.zeros(16, 32))
            elif case == "symmetric":
                a = torch.randn(32, 32)
                self.w = nn.Parameter((a + a.t()) / 2)
            elif case == "mirrored":
                self.w = nn.Parameter(torch.randn(8, 16))
                self.w[:, 8:] = -self.w[:, :8]
            elif case == "overlapping":
                a = torch.rand(40)
                self.w = nn.Parameter(a[:30] + a[10:])


def build(case):
    return M(case)
EOF
for case in expand_clone expand_copy expand_param expand_math expand_reshape broadcast_add; do
  refused "$case" "model: broadcasting a tensor of shape .* repeats the values of the random tensor drawn at .*repeats.py:[0-9]+ .* \\(tensor w, at .*repeats.py:[0-9]+\\)" \
    --factory repeats.py:build --kwargs "{\"case\": \"$case\"}"
done
for case in symmetric mirrored overlapping; do
  refused "$case" "model: w holds some elements of the random tensor drawn at .*repeats.py:[0-9]+ more than once \\(read at .*repeats.py:[0-9]+\\)" \
    --factory repeats.py:build --kwargs "{\"case\": \"$case\"}"
done

# The op without a counterpart is named, not a later op reading its result.
cat >named.py <<'EOF'
import math

import torch
import torch.nn as nn

OUTSIDE = torch.ones(3)


def norm():
    e = nn.Embedding(10, 8)
    with torch.no_grad():
        e.weight /= e.weight.norm(dim=1, keepdim=True)
    return e


def abs_max():
    lin = nn.Linear(8, 8)
    with torch.no_grad():
        lin.weight.mul_(1 / lin.weight.abs().max())
    return lin


def weight_norm():
    return nn.utils.weight_norm(nn.Linear(4, 4))


def outside():
    m = nn.Linear(3, 3)
    m.register_buffer("scale", OUTSIDE)
    return m


class Extra(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def get_extra_state(self):
        return {"version": 2}

    def set_extra_state(self, state):
        pass


def extra():
    return nn.Sequential(Extra())
EOF
refused "norm" "model: torch.Tensor.norm has no init IR counterpart \\(tensor weight, at .*named.py:12\\)" --factory named.py:norm
refused "abs then max" "model: torch.Tensor.abs has no init IR counterpart \\(tensor weight" --factory named.py:abs_max
refused "weight_norm" "named.py:24: torch.Tensor._weight_norm cannot run on the meta device in this PyTorch \\(Could not run 'aten::_weight_norm_interface'\\)" \
  --factory named.py:weight_norm
refused "a CPU tensor" "model: scale is a cpu tensor the capture never saw created: made outside the factory" \
  --factory named.py:outside
"$PYTHON" "$CAPTURE" --factory named.py:extra -o extra.mlir 2>extra.err || fail "a module with extra state: $(cat extra.err)"
grep -q "note: model.0: 0._extra_state is the module's extra state" extra.err || fail "no note on the extra state: $(cat extra.err)"
grep -q '"0.lin.weight"' extra.mlir && ! grep -q "_extra_state" extra.mlir || fail "extra state in the IR"

# MODULE:FUNCTION finds modules of the current directory, as python -m does.
mkdir -p pkgdir
cp ok.py pkgdir/mymodels.py
(cd pkgdir && "$PYTHON" "$CAPTURE" --factory mymodels:linear -o ../module.mlir) || fail "MODULE:FUNCTION from the module's directory"
(cd pkgdir && refused "no such module" "--factory: no module 'nosuch' \\(looked in the current directory" --factory nosuch:linear)

#===------------------------------------------------------------------------===#
# Arguments PyTorch refuses, or that init IR cannot take
#===------------------------------------------------------------------------===#

# bad_call NAME PATTERN CALL [SHAPE]: CALL (Python, on the parameter w of shape SHAPE, a JSON
# list) is refused.
bad_call() {
  local name=$1 pattern=$2 call=$3 shape=${4:-[8, 8]}
  refused "$name" "$pattern" --factory bad.py:init_call --kwargs "{\"call\": \"$call\", \"shape\": $shape}"
}
bad_call "negative std" ": [^ ]+:[0-9]+: torch.nn.init.normal_\\(mean=0.0, std=-1.0\\): std must be >= 0" \
  "nn.init.normal_(w, 0.0, -1.0)"
bad_call "Tensor.normal_ negative std" ":1: torch.Tensor.normal_: normal expects std >= 0.0" "w.normal_(1.0, -2.0)"
bad_call "empty range" "torch.nn.init.uniform_\\(1.0, 0.0\\): the lower bound is above the upper one" \
  "nn.init.uniform_(w, 1.0, 0.0)"
bad_call "infinite bounds" "torch.nn.init.uniform_\\(-3e\\+38, 3e\\+38\\): the bounds and their difference must be finite in f32" \
  "nn.init.uniform_(w, -3e38, 3e38)"
bad_call "trunc_normal std 0" "trunc_normal_\\(.*std=0.0.*\\): std must be positive" "nn.init.trunc_normal_(w, std=0.0)"
bad_call "trunc_normal a > b" "a must not be above b" "nn.init.trunc_normal_(w, a=1.0, b=-1.0)"
bad_call "negative gain" "torch.nn.init.xavier_normal_ with gain -1.0: PyTorch fails on a negative gain" \
  "nn.init.xavier_normal_(w, gain=-1.0)"
bad_call "fan of a vector" "torch.nn.init.kaiming_uniform_: fan in and fan out cannot be computed for a tensor of fewer than 2 dims \\(shape \\[8\\]\\)" \
  "nn.init.kaiming_uniform_(w)" "[8]"
bad_call "unknown nonlinearity" "torch.nn.init.kaiming_normal_: Unsupported nonlinearity bogus" \
  "nn.init.kaiming_normal_(w, nonlinearity='bogus')"
bad_call "unknown fan mode" "torch.nn.init.kaiming_normal_: mode 'fan_avg' must be 'fan_in' or 'fan_out'" \
  "nn.init.kaiming_normal_(w, mode='fan_avg')"

# A write through a view that is not a box says what the view is.
bad_call "step slicing" "model: normal_ on a view with strides \\[16, 1\\] at offset 0 of a tensor of shape \\[8, 8\\] \\(step slicing" \
  "w[::2].normal_()"
bad_call "flat range" "model: uniform_ on the elements 3 to 19 of a tensor of shape \\[8, 8\\], in storage order \\(not a box of it\\)" \
  "w.view(-1)[3:20].uniform_()"

echo "PASS capture_errors ($cases refusals)"
