"""A compiled program directory (prog/ from `initc compile`), as a training process uses it: the
parameters a rank holds, and their values written into the process's own buffers."""

import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass

from ._errors import Error

# safetensors' dtype names (initrt.h) -> numpy's; BF16 is ml_dtypes' bfloat16.
_NUMPY_DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
                 "BOOL": "bool", "I64": "int64"}


@dataclass(frozen=True)
class Param:
    """One parameter or buffer as one rank holds it: the box [offset, offset + shape) of the
    global tensor."""
    name: str
    dtype: str             # "F32", "BF16", "F16", "F64", "BOOL", "I64"
    is_buffer: bool
    persistent: bool       # False for a buffer a checkpoint does not store
    global_shape: tuple
    slice_offset: tuple
    slice_shape: tuple
    elements: int
    bytes: int


def _numpy_dtype(dtype):
    import numpy as np
    if dtype == "BF16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("a BF16 parameter needs ml_dtypes' bfloat16 in numpy "
                            "(pip install ml_dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY_DTYPES[dtype])


class Program:
    """A program directory opened by the runtime (initc.load). A handle may be used from several
    threads at once; each fill runs on its own worker threads, with the GIL released."""

    def __init__(self, prog_dir):
        from . import _native
        self._native = _native.Program(str(prog_dir))
        self._params = None

    def close(self):
        """Releases the program (its kernels); later calls raise ValueError. The directory of an
        initc.compile with no `out` is removed."""
        self._native.close()
        directory = getattr(self, "_directory", None)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def world_size(self):
        """Ranks in the program's mesh."""
        return self._native.world_size()

    def params(self, rank=0):
        """Every parameter and buffer, in program order, as `rank` holds it."""
        return [Param(*self._native.param_info(rank, i))
                for i in range(self._native.param_count())]

    def param(self, name, rank=0):
        """The parameter (or buffer) `name` as `rank` holds it; KeyError when there is none."""
        for p in self.params(rank):
            if p.name == name:
                return p
        raise KeyError("the program has no parameter %r" % name)

    def fill(self, name, out, rank=0, threads=0):
        """Writes `rank`'s shard of `name` into `out`: a C-contiguous numpy array of the
        parameter's dtype and slice shape, or any writable C-contiguous buffer of its bytes (a
        tied name is accepted as the runtime accepts it, checked by size). threads <= 0: one per
        CPU the process may run on; processes of one host sharing CPUs should divide them."""
        dtype = getattr(out, "dtype", None)
        if dtype is not None and hasattr(out, "shape"):
            param = next((p for p in self.params(rank) if p.name == name), None)
            if param is not None:
                expected = _numpy_dtype(param.dtype)
                if dtype != expected:
                    raise TypeError("%s is %s (numpy %s), the array is %s"
                                    % (name, param.dtype, expected, dtype))
                if tuple(out.shape) != param.slice_shape:
                    raise ValueError("%s: rank %d holds a slice of shape %s, the array has shape %s"
                                     % (name, rank, list(param.slice_shape), list(out.shape)))
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("%s: the array must be C-contiguous and writeable" % name)
            # Raw bytes: the buffer protocol has no format for bfloat16.
            out = out.reshape(-1).view("uint8")
        self._native.fill(rank, name, out, threads)

    def fill_box(self, name, offset, out, threads=0):
        """Writes the box [offset, offset + out.shape) of the global tensor `name` into `out`,
        whatever mesh the program was compiled for: a numpy array (or anything DLPack exports on
        the CPU, e.g. a torch tensor) of the parameter's dtype, any strides with a contiguous
        innermost dim. Raises initc.Error naming the parameter."""
        np = sys.modules.get("numpy")
        if np is not None and isinstance(out, np.ndarray):
            if not out.flags.writeable:
                raise ValueError("%s: the array is read-only" % name)
            if out.dtype.name == "bfloat16":
                out = out.view(np.uint16)  # numpy exports no bfloat16 through DLPack
        self._native.fill_box(name, [int(o) for o in offset], out, threads)

    def fill_boxes(self, boxes, threads=0):
        """Fills every (name, offset, out) of `boxes` as fill_box would, in one run of the
        runtime's threads, which then meet once rather than once per box (what a busy host makes
        costly). Every box is checked before any is written; a refusal is initc.Error naming
        the box (boxes[i]) and its parameter."""
        np = sys.modules.get("numpy")
        converted = []
        for name, offset, out in boxes:
            if np is not None and isinstance(out, np.ndarray):
                if not out.flags.writeable:
                    raise ValueError("%s: the array is read-only" % name)
                if out.dtype.name == "bfloat16":
                    out = out.view(np.uint16)  # numpy exports no bfloat16 through DLPack
            converted.append((name, [int(o) for o in offset], out))
        self._native.fill_boxes(converted, threads)

    def array(self, name, rank=0, threads=0):
        """A new numpy array holding `rank`'s shard of `name`."""
        import numpy as np
        param = self.param(name, rank)
        out = np.empty(param.slice_shape, dtype=_numpy_dtype(param.dtype))
        self.fill(name, out, rank, threads)
        return out


def load(prog_dir):
    """Opens a program directory (program.json and kernels.so, as `initc compile` writes it):
    the kernels for the best CPU variant this CPU runs (INITRT_TARGET_CPU names one), checked
    against their checksum. Raises initc.Error with the runtime's message."""
    return Program(prog_dir)


def _compiler():
    """The `initc` compiler binary: $INITC, else bin/initc installed inside the package, else
    `initc` on PATH."""
    named = os.environ.get("INITC")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise Error("INITC=%s is not an executable file: point it at the initc compiler "
                        "(build/bin/initc) or unset it" % named, "INITRT_NOT_FOUND")
        return named
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "initc")
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("initc")
    if found:
        return found
    raise Error("no initc compiler found: set INITC to its path (build/bin/initc of a build of "
                "this project), or put it on PATH", "INITRT_NOT_FOUND")


def _mesh_text(mesh):
    if isinstance(mesh, str):
        return mesh
    items = mesh.items() if hasattr(mesh, "items") else mesh
    return ",".join("%s=%d" % (axis, int(size)) for axis, size in items)


def compile(model, mesh=None, shard=None, out=None, target_cpu=None):
    """Compiles init IR (`model`, a .mlir file from `initc import` or initc.capture) into a
    program directory with the `initc` compiler (found as $INITC, bin/initc inside this package,
    or on PATH) and opens it: the Program that initc.load returns.

    mesh: "dp=2,tp=2" or {"dp": 2, "tp": 2} (the compiler's default, one device, when None);
    shard: a preset (replicated, fsdp, tp, fsdp+tp, torchtitan, megatron, maxtext) or a JSON
    rules file; out: the program directory to write (a temporary one, removed when the Program
    is closed or collected, when None); target_cpu: the compiler's --target-cpu list. A
    Program fills any box whatever mesh it was compiled for, so the mesh only matters to
    prog/init and to the rank-based calls.
    Raises initc.Error with the compiler's message when it fails."""
    model = os.fspath(model)
    if not os.path.isfile(model):
        raise Error("initc.compile: no IR file %s" % model, "INITRT_NOT_FOUND")
    compiler = _compiler()
    temporary = out is None
    out = tempfile.mkdtemp(prefix="initc-prog-") if temporary else os.fspath(out)
    # The compiler writes the directory itself, and refuses an existing non-program one.
    target = os.path.join(out, "prog") if temporary else out
    command = [compiler, "compile", model, "-o", target]
    if mesh is not None:
        command += ["--mesh", _mesh_text(mesh)]
    if shard is not None:
        command += ["--shard", os.fspath(shard)]
    if target_cpu is not None:
        command += ["--target-cpu", target_cpu]
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if result.returncode != 0:
            message = (result.stderr.strip() or result.stdout.strip()
                       or "exit status %d" % result.returncode)
            raise Error("initc.compile: %s" % message, "INITRT_INVALID_ARGUMENT")
        program = Program(target)
    except BaseException:
        if temporary:
            shutil.rmtree(out, ignore_errors=True)
        raise
    if temporary:
        weakref.finalize(program, shutil.rmtree, out, True)
        program._directory = out
    return program


__all__ = ["Error", "Param", "Program", "compile", "load"]
