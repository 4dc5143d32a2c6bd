"""Capture a PyTorch model constructor into init IR (ir-spec/capture.md).

    initc-capture --factory models.py:build_model --kwargs '{"dim": 512}' -o model.mlir
    (or python -m initc.capture ..., or /usr/bin/python3 tools/capture/initc_capture.py ...)

The factory runs on the meta device: no parameter memory is allocated. A TorchFunctionMode sees
every torch call; each tensor storage carries the expression (a tree of init IR ops over the
storage's shape) that computes its current value, and every in-place op, torch.nn.init function
or re-initialization replaces or extends that tree. At the end every parameter and persistent
buffer of the state dict becomes one `init.param` whose body evaluates its final tree (earlier,
overwritten trees stay in the body as dead values; init-eliminate-dead-inits drops them).

Depends only on torch (1.13 or later) and the Python standard library (never on initc's native
module). The modules follow the steps: diagnostics (errors and their locations), expressions,
storages (and views), recording (the TorchFunctionMode), hooks (what is patched in torch while
the factory runs), emission (which trees print; the printer itself is initc._ir_printer, shared
with the JAX capture), streams, model (capture_model) and cli.
"""

from .cli import main
from .diagnostics import CaptureError
from .model import capture_model

__all__ = ["CaptureError", "capture_model", "main"]
