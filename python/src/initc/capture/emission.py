"""What the PyTorch capture adds to the IR printer (initc._ir_printer): which trees can be printed,
the module path of a tensor and the logical axes a module type tells."""

import torch.nn as nn

from .diagnostics import CaptureError


def emittable(node):
    return all(n.op not in ("empty", "unsupported") for n in node.walk())


def module_path(name):
    parts = name.split(".")[:-1]
    return ".".join(["model"] + parts)


def check_final(name, node):
    for n in node.walk():
        if n.op == "unsupported":
            raise CaptureError("%s: %s (tensor %s, at %s)" % (module_path(name), n.attrs["what"], name, n.where))
    if node.find("empty") is not None:
        raise CaptureError("%s: %s is never initialized (it comes from torch.empty and nothing "
                           "writes all of it); initialize it in the constructor" % (module_path(name), name))


LINEAR_TYPES = (nn.Linear,)


def logical_axes(model):
    """Logical axis names for dims whose meaning the module type tells."""
    axes = {}
    for prefix, module in model.named_modules():
        dot = prefix + "." if prefix else ""
        if isinstance(module, nn.Linear):
            axes[dot + "weight"] = ["out", "in"]
            axes[dot + "bias"] = ["out"]
        elif isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
            axes[dot + "weight"] = ["vocab", "embed"]
    return axes
