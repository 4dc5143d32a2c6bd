"""initc.jax.init: jax.Arrays whose every device shard is filled by its own callback, bitwise the
1-device prog/init output, on 8 host devices (a 2 x 4 mesh, in a subprocess: the device count is
fixed when jax starts), and on 2 processes of 4 devices each, for a program compiled for another
mesh."""

import os
import re
import subprocess
import sys

import pytest

jax = pytest.importorskip("jax")
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding  # noqa: E402

import initc  # noqa: E402
import initc.jax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def test_eight_devices_two_by_four_mesh_bitwise(mesh_program_bf16, reference_bf16):
    _, reference = reference_bf16
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, "jax_worker.py"), str(mesh_program_bf16),
         str(reference)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "21 arrays, 168 shards bitwise equal" in result.stdout, result.stdout
    assert "replicas share one fill: 2 boxes for 8 shards, donation safe" in result.stdout, \
        result.stdout


def test_two_processes_on_localhost_bitwise(mesh_program_bf16, reference_bf16):
    """jax.distributed with 2 processes of 4 host devices each: each fills only its devices'
    shards of the 2 x 4 mesh."""
    import socket
    _, reference = reference_bf16
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    workers = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "jax_worker.py"), str(mesh_program_bf16),
         str(reference), "localhost:%d" % port, "2", str(i)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for i in range(2)]
    outputs = []
    try:
        for worker in workers:
            outputs.append(worker.communicate(timeout=600)[0])
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output
        assert "21 arrays, 84 shards bitwise equal" in output, output
        assert re.search(r"replicas share one fill: \d+ boxes for 4 shards, donation safe",
                         output), output


def test_torchax_model_gets_the_pytorch_paths_values(mesh_program_bf16):
    """A PyTorch model under torchax: jax.Arrays by state-dict name, bitwise initc.torch's."""
    pytest.importorskip("torchax")
    pytest.importorskip("transformers")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    config = os.path.join(HERE, "..", "..", "tests", "e2e", "configs", "llama_uneven.json")
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, "torchax_worker.py"), str(mesh_program_bf16), config],
        capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "torchax: 21 tensors bitwise equal, forward matches" in result.stdout, result.stdout


def test_path_names_and_refusals(mesh_program_bf16, reference_bf16):
    reference_prog, _ = reference_bf16
    device = SingleDeviceSharding(jax.devices()[0])
    path = jax.tree_util.tree_flatten_with_path({"model": {"layers": [{"w": 1}]}})[0][0][0]
    assert initc.jax.path_name(path) == "model.layers.0.w"
    with initc.load(mesh_program_bf16) as prog, initc.load(reference_prog) as whole:
        name = "model.layers.1.mlp.down_proj.weight"
        array = initc.jax.init(prog, {name: device})[name]
        assert np.asarray(array).tobytes() == whole.array(name).tobytes()
        with pytest.raises(KeyError, match="no parameter 'nope'"):
            initc.jax.init(prog, {"nope": device})
        with pytest.raises(ValueError, match=r"shape \[64, 64\]"):
            initc.jax.init(prog, {name: jax.ShapeDtypeStruct((64, 64), jax.numpy.bfloat16,
                                                             sharding=device)})
        with pytest.raises(TypeError, match="float32.*BF16"):
            initc.jax.init(prog, {name: jax.ShapeDtypeStruct((64, 176), jax.numpy.float32,
                                                             sharding=device)})
        with pytest.raises(TypeError, match="expected a jax.sharding.Sharding"):
            initc.jax.init(prog, {name: P("tp")})


def test_shardings_that_do_not_fit_and_shared_names(mesh_program_bf16):
    # A sharding that does not fit the parameter, and two tree leaves under one program name:
    # one ValueError naming it, before anything is computed.
    mesh = jax.make_mesh((1,), ("x",))
    name = "model.layers.1.mlp.down_proj.weight"
    with initc.load(mesh_program_bf16) as prog:
        # A PartitionSpec of three dims for a matrix.
        with pytest.raises(ValueError, match=re.escape(name) + ": its sharding does not fit the "
                           r"program's shape \[64, 176\]"):
            initc.jax.init(prog, {name: NamedSharding(mesh, P(None, None, "x"))})
        tree = {"a": NamedSharding(mesh, P()), "b": NamedSharding(mesh, P())}
        with pytest.raises(ValueError, match="two leaves of the tree are both named " +
                           re.escape(repr(name))):
            initc.jax.init_tree(prog, tree, name_of=lambda path: name)


def test_peak_memory_is_the_shards_plus_one_box_and_bounded_scratch(medium_program_bf16):
    # Each callback fills one device's box in a new numpy array, which jax copies into its
    # device buffer once it has every box of the array: beyond the shards, at most one array's
    # boxes in this process (the largest array's local bytes), plus the bounded scratch of the
    # torch test (thread stacks, malloc arenas; no orthogonal parameter here).
    prog, _ = medium_program_bf16
    result = subprocess.run([sys.executable, os.path.join(HERE, "memory_worker.py"), "jax",
                             str(prog), "4"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(r"jax: peak rise (\d+) bytes, shards (\d+) bytes, largest (\d+) bytes",
                      result.stdout)
    assert found, result.stdout + result.stderr
    rise, shards, largest = map(int, found.groups())
    assert 40 << 20 < shards < 48 << 20, shards  # every device's shard is in this process
    assert rise <= shards + largest + (16 << 20), (
        "the peak rose %d bytes for %d bytes of shards" % (rise, shards))


def test_python_init_benchmark_runs_and_prints_ratios(tmp_path):
    # benchmarks/python_init.py on the tiny config, so that it keeps working; no time asserted.
    from conftest import INITC, ROOT
    config = os.path.join(ROOT, "tests", "e2e", "configs", "llama_uneven.json")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "python_init.py"), "--initc", INITC,
         "--config", config, "--work", str(tmp_path), "--threads", "1"],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2"))
    assert result.returncode == 0, result.stdout + result.stderr
    for label in (r"initc\.torch\.init_ \(initc is Nx faster\)",
                  r"initc\.jax\.init \(initc is Nx faster\)"):
        assert re.search(label + r" +[0-9.]+ +[0-9.]+ +[0-9.]+x", result.stdout), result.stdout
    assert "jax: 2 device(s)" in result.stdout
    # Both sides of the torch pair initialized the weight (std 0.02).
    stds = re.search(r"std of one weight ([0-9.]+) \(own\) ([0-9.]+) \(initc\)", result.stdout)
    assert stds and all(0.01 < float(v) < 0.03 for v in stds.groups()), result.stdout
