"""initc: the initialization of a neural network compiled ahead of time into per-rank programs.

Importing the package imports neither torch nor jax; each framework's part is its own
subpackage (initc.capture needs torch)."""
