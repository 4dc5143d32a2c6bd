#!/usr/bin/env bash
# initc in the training process against the frameworks' own initialization (python_init.py):
# initc.torch.init_ on an FSDP2 transformers llama vs its own init_weights(), and initc.jax.init
# vs jax.jit(init, out_shardings=...) compile included, on the TinyLlama-1.1B config in bf16,
# in the pinned venv (python/venv.sh builds it and installs this checkout's package).
#
#   BUILD_DIR=build benchmarks/python_init.sh [python_init.py ARGS...]
#
# PROCS=N runs the script under torchrun with N processes (gloo, CPU; rank 0 then runs the jax
# part alone; default 1: a world of one process and a one-device mesh, what a 2-CPU host fits).
# JAX_DEVICES=N gives JAX N host devices (default 1). No number here is a pass/fail criterion.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
[ -x "$build/bin/initc" ] || { echo "no $build/bin/initc: build first (or set BUILD_DIR)" >&2; exit 2; }
venv=$(bash "$here/../python/venv.sh")
work=$(mktemp -d /tmp/initc-python-init.XXXXXX)
trap 'rm -rf "$work"' EXIT
export XLA_FLAGS="--xla_force_host_platform_device_count=${JAX_DEVICES:-1} ${XLA_FLAGS:-}"
procs=${PROCS:-1}
if [ "$procs" -gt 1 ]; then
  # Every process runs the torch part; rank 0 then the jax part, alone. (Not exec: the trap
  # removes the work directory.)
  "$venv/bin/python" -m torch.distributed.run --standalone --nproc-per-node "$procs" \
    "$here/python_init.py" --initc "$build/bin/initc" --work "$work" "$@"
  exit
fi
"$venv/bin/python" "$here/python_init.py" --initc "$build/bin/initc" --work "$work" "$@"
