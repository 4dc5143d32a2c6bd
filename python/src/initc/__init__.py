"""initc: the initialization of a neural network compiled ahead of time into per-rank programs.

    import initc
    with initc.load("prog/") as prog:          # or initc.compile("model.mlir", mesh="dp=2")          # a directory from `initc compile`
        for p in prog.params(rank):            # name, dtype, global shape, the rank's slice
            prog.fill(p.name, buffers[p.name], rank)

Importing the package imports neither torch nor jax, nor the native module (until a program is
loaded); each framework's part is its own module: initc.torch (init_: fill a module's DTensor or
plain tensors in place), initc.jax (init: sharded jax.Arrays) and initc.capture need theirs."""

from ._errors import Error
from ._program import Param, Program, compile, load

__all__ = ["Error", "Param", "Program", "compile", "load"]
