"""Printing init IR values: one op per line, the text both frontends (initc.capture for PyTorch,
initc.jax_capture for JAX) write. Imports neither torch nor jax, so that each frontend loads only
its own framework."""

import math

# The elementwise ops of the init dialect (ir-spec/dialect.md), printed `init.OP %a[, %b] : T`.
UNARY_OPS = ("erfinv", "exp", "log", "expm1", "log1p", "sqrt", "sign")
BINARY_OPS = ("add", "sub", "mul", "div", "pow")


def fmt_float(v):
    v = float(v)
    if math.isnan(v):
        return "0x7FF8000000000000"
    if math.isinf(v):
        return "0x7FF0000000000000" if v > 0 else "0xFFF0000000000000"
    text = repr(v)
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def tensor_type(shape, dtype):
    return "tensor<%s%s>" % ("".join("%dx" % s for s in shape), dtype)


def mlir_string(text):
    """`text` as the body of an MLIR string literal: quotes, backslashes and control characters
    escaped as \\XX (hex), other characters as UTF-8."""
    out = []
    for ch in text:
        if ch in ('"', "\\") or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\%02X" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def quote(name):
    return '@"%s"' % mlir_string(name)


class ParamEmitter:
    def __init__(self, lines):
        self.lines, self.names, self.streams, self.texts = lines, {}, {}, {}

    def emit(self, node):
        if id(node) in self.names:
            return self.names[id(node)]
        args = [self.emit(a) for a in node.args]
        ty, a = tensor_type(node.shape, node.dtype), node.attrs
        stream = lambda: self.streams[id(node)]
        op = node.op
        if op == "uniform":
            text = "init.uniform %s, %s stream %d : %s" % (fmt_float(a["low"]), fmt_float(a["high"]), stream(), ty)
        elif op == "normal":
            text = "init.normal mean %s std %s stream %d : %s" % (fmt_float(a["mean"]), fmt_float(a["std"]), stream(), ty)
        elif op == "trunc_normal":
            text = "init.trunc_normal mean %s std %s bounds [%s, %s] stream %d : %s" % (
                fmt_float(a["mean"]), fmt_float(a["std"]), fmt_float(a["a"]), fmt_float(a["b"]), stream(), ty)
        elif op == "variance_scaling":
            text = "init.variance_scaling scale %s %s %s stream %d : %s" % (
                fmt_float(a["scale"]), a["mode"], a["distribution"], stream(), ty)
        elif op == "orthogonal":
            text = "init.orthogonal gain %s stream %d strategy redundant : %s" % (fmt_float(a["gain"]), stream(), ty)
        elif op == "fill":
            text = "init.fill %s : %s" % (fmt_float(a["value"]), ty)
        elif op == "iota":
            text = "init.iota dim %d start %s step %s : %s" % (a["dim"], fmt_float(a["start"]), fmt_float(a["step"]), ty)
        elif op == "linspace":
            text = "init.linspace dim %d start %s end %s : %s" % (a["dim"], fmt_float(a["start"]), fmt_float(a["end"]), ty)
        elif op == "eye":
            text = "init.eye : %s" % ty
        elif op in ("tril", "triu"):
            text = "init.%s diagonal %d : %s" % (op, a["diagonal"], ty)
        elif op == "index_mask":
            text = "init.index_mask dim %d index %d : %s" % (a["dim"], a["index"], ty)
        elif op in BINARY_OPS:
            text = "init.%s %s, %s : %s" % (op, args[0], args[1], ty)
        elif op in UNARY_OPS:
            text = "init.%s %s : %s" % (op, args[0], ty)
        elif op == "clamp":
            text = "init.clamp %s min %s max %s : %s" % (args[0], fmt_float(a["min"]), fmt_float(a["max"]), ty)
        elif op == "select":
            text = "init.select %s, %s, %s : %s, %s" % (args[0], args[1], args[2],
                                                        tensor_type(node.shape, "i1"), ty)
        elif op == "cast":
            text = "init.cast %s : %s to %s" % (args[0], tensor_type(node.args[0].shape, node.args[0].dtype), ty)
        else:
            raise AssertionError("cannot print " + op)
        if text in self.texts:  # the same op on the same operands: one value (ops are pure)
            self.names[id(node)] = self.texts[text]
            return self.texts[text]
        name = "%%%d" % len(self.texts)
        self.names[id(node)] = self.texts[text] = name
        self.lines.append("    %s = %s" % (name, text))
        return name
