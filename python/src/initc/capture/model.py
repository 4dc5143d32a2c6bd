"""A model's state dict as init IR: the factory runs under the capture, then every parameter
and persistent buffer is printed."""

import sys

import torch
import torch.nn as nn

from .diagnostics import CaptureError
from .._ir_printer import ParamEmitter, mlir_string, quote, tensor_type
from .emission import check_final, emittable, logical_axes, module_path
from .expressions import DTYPES, fill, random_leaves
from .hf import eager_cpu_init
from .hooks import InitHooks, LegacyConstructors
from .recording import Capture
from .storages import storage_key
from .streams import assign_streams, read_key, reads_overlap


def capture_model(factory, kwargs, seed, model_name):
    capture = Capture()
    with InitHooks(capture), LegacyConstructors(), eager_cpu_init(), capture, torch.no_grad():
        model = factory(**kwargs)
    if not isinstance(model, nn.Module):
        raise CaptureError("the factory returned %s, not a torch.nn.Module" % type(model).__name__)

    if not model.state_dict(keep_vars=True):
        raise CaptureError("the factory's %s has no parameters or buffers: there is nothing to "
                           "initialize" % type(model).__name__)
    param_ids = {id(p) for p in model.parameters()}
    axes = logical_axes(model)
    lines = ['module attributes {init.model = "%s"} {' % mlir_string(model_name), "  init.seed %d" % seed]
    primary = {}
    shared_random = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if name.rsplit(".", 1)[-1] == "_extra_state":
            print("initc-capture: note: %s: %s is the module's extra state (get_extra_state), not "
                  "a parameter or buffer: the checkpoint does not hold it (load it with "
                  "strict=False, or let the module set it)" % (module_path(name), name),
                  file=sys.stderr)
            continue
        is_buffer = id(t) not in param_ids
        st = capture.state(t)
        if st is None:
            raise CaptureError(
                "%s: %s is a %s tensor the capture never saw created: made outside the factory "
                "(at module scope), or by a call that bypasses torch's function hooks (a legacy "
                "constructor such as torch.cuda.FloatTensor(data), torch.from_numpy); create it "
                "in the factory with torch.empty, torch.zeros, torch.full, ..."
                % (module_path(name), name, t.device))
        dtype = DTYPES.get(t.dtype)
        if dtype is None:
            raise CaptureError("%s: %s has dtype %s, which init IR does not have" % (module_path(name), name, t.dtype))
        ty = tensor_type(tuple(t.shape), dtype)
        key = (storage_key(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if key in primary:
            lines.append("  init.param %s : %s tied_to %s" % (quote(name), ty, quote(primary[key])))
            continue
        primary[key] = name
        if t.numel() == 0:  # no element needs a value
            final, roots = fill(0, tuple(t.shape), dtype), []
        else:
            final = capture.value(t)
            check_final(name, final)
            # Earlier versions of the storage that can be printed stay as dead values.
            roots = [v for v in st.versions[:-1] if emittable(v)] if tuple(t.shape) == st.shape else []
        roots.append(final)
        for n in random_leaves(final):
            shared_random.setdefault(n.seq, {}).setdefault(name, {})[read_key(n)] = n
        emitter = ParamEmitter([])
        emitter.streams = assign_streams(name, final, roots)
        for r in roots:
            emitter.emit(r)
        result = emitter.emit(final)
        head = "  init.param %s : %s" % (quote(name), ty)
        if name in axes and len(axes[name]) == len(t.shape):
            head += " axes [%s]" % ", ".join('"%s"' % a for a in axes[name])
        if is_buffer:
            head += " buffer"
        lines.append(head + " {")
        lines.extend(emitter.lines)
        lines.append("    init.yield %s : %s" % (result, ty))
        lines.append("  }")
    lines.append("}")
    noted = set()
    for reads in shared_random.values():
        names = tuple(reads)
        if len(names) > 1 and names not in noted and reads_overlap(reads):
            noted.add(names)
            print("initc-capture: note: %s hold the same random values in PyTorch (copies, as "
                  "copy.deepcopy of a layer makes, or values computed from one random tensor); "
                  "the capture draws each of them independently, with the same distribution"
                  % ", ".join(names), file=sys.stderr)
    return "\n".join(lines) + "\n"
