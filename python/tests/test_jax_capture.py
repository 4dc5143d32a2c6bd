"""initc.jax.capture and init_sharded (ir-spec/capture-jax.md): Equinox and Flax NNX
constructors captured into init IR; their pytrees built sharded on 1, 2, 4 and 8 host devices and
on 2 processes, bitwise the checkpoint prog/init writes for the captured IR, distributed as the
eager constructor's; and the constructors the capture refuses, each with the leaf and the line."""

import os
import socket
import subprocess
import sys

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("equinox")
pytest.importorskip("flax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import initc  # noqa: E402
import initc.jax as ij  # noqa: E402
from conftest import INITC, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 5  # jax_capture_worker.SEED


def _env(devices, references):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=%d" % devices)
    env["INITC"] = INITC
    env["INITC_JAX_CACHE"] = str(references / "programs")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__)), HERE] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """For each model of jax_models.py: its captured IR compiled for a 2-rank mesh (fsdp: each
    rank computes half of every tensor) and written by prog/init on 2 MPI ranks, assembled into
    MODEL.safetensors."""
    import jax_models
    from clients import MPI_ENV
    directory = tmp_path_factory.mktemp("jax-capture")
    for model, (fn, _) in jax_models.MODELS.items():
        mlir = directory / (model + ".mlir")
        names = ij.capture(fn, str(mlir), seed=SEED)
        assert names and (directory / (model + ".mlir")).exists()
        prog, ckpt = directory / (model + "-prog"), directory / (model + "-ckpt")
        run(INITC, "compile", mlir, "--mesh", "dp=2", "--shard", "fsdp", "--target-cpu",
            "native", "-o", prog)
        run("mpirun", "--bind-to", "none", "-np", 2, prog / "init", "--threads", 1, "--layout",
            "ranks", "--out", ckpt, env=dict(os.environ, OMPI_MCA_pml="ob1", **MPI_ENV))
        run(INITC, "assemble", ckpt, "-o", directory / (model + ".safetensors"))
    return directory


def test_eight_devices_every_mesh_bitwise_and_distributed_as_eager(references):
    result = subprocess.run([sys.executable, os.path.join(HERE, "jax_capture_worker.py"),
                             str(references)], capture_output=True, text=True, env=_env(8, references),
                            timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "shards bitwise equal on 1, 2, 4, 8 devices" in result.stdout, result.stdout
    assert "jax capture: refusals ok" in result.stdout, result.stdout


def test_two_processes_bitwise(references):
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    workers = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "jax_capture_worker.py"), str(references),
         "localhost:%d" % port, "2", str(i)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(4, references))
        for i in range(2)]
    outputs = []
    try:
        for worker in workers:
            outputs.append(worker.communicate(timeout=900)[0])
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    for i, (worker, output) in enumerate(zip(workers, outputs)):
        assert worker.returncode == 0, output
        assert "jax capture: process %d," % i in output, output


def test_streams_follow_the_leaf_not_the_key_order():
    """Splitting the keys in another order changes no value: a leaf's streams are numbered by
    its own draws, its name keys them."""
    def forward(key):
        k1, k2 = jax.random.split(key)
        return {"a": jax.random.normal(k1, (8,)), "b": jax.random.uniform(k2, (8,))}

    def backward(key):
        k1, k2 = jax.random.split(key)
        return {"a": jax.random.normal(k2, (8,)), "b": jax.random.uniform(k1, (8,))}
    assert ij.capture_ir(forward)[0] == ij.capture_ir(backward)[0]


def test_names_follow_the_pytree_path():
    text, _ = ij.capture_ir(lambda key: {"layers": [{"w": jnp.ones((2,))}, jnp.zeros((3,))]})
    assert '@"layers[0].w"' in text and '@"layers[1]"' in text


def test_one_draw_read_twice_is_one_stream():
    def fn(key):
        w = jax.random.normal(key, (4, 4))
        return {"w": w * w}
    text, _ = ij.capture_ir(fn)
    assert text.count("init.normal") == 1, text


def test_a_constructor_that_reads_data(tmp_path):
    data = tmp_path / "w.npy"
    np.save(data, np.arange(12, dtype=np.float32).reshape(3, 4))

    def fn(key):
        return {"w": jnp.asarray(np.load(data)) * 2.0}
    with pytest.raises(ij.CaptureError, match=r"^w: .*test_jax_capture.py:\d+.*reads data"):
        ij.capture_ir(fn)


def test_paths_that_collide_after_naming():
    with pytest.raises(ij.CaptureError, match=r"both named 'a\.b'"):
        ij.capture_ir(lambda key: {"a.b": jnp.ones(2), "a": {"b": jnp.zeros(2)}})


def test_a_primitive_the_ir_cannot_express():
    def fn(key):
        return {"gate": jnp.tanh(jax.random.normal(key, (8,)))}
    with pytest.raises(ij.CaptureError,
                       match=r"^gate: jax primitive tanh has no init IR counterpart "
                             r"\(at .*test_jax_capture.py:\d+"):
        ij.capture_ir(fn)


def test_a_random_function_the_ir_cannot_express():
    # (exponential is -log1p(-u) since init.log1p, and captured.)
    def fn(key):
        return {"w": jax.random.gamma(key, 2.0, (8,))}
    with pytest.raises(ij.CaptureError, match=r"^w: jax primitive .* \(at .*test_jax_capture"):
        ij.capture_ir(fn)


def test_exponential_is_minus_log1p_of_a_uniform(monkeypatch, tmp_path):
    """jax.random.exponential is -log1p(-u) in JAX's own code: captured as init.log1p of a
    uniform, distributed as JAX's own draws on several seeds (two-sample KS)."""
    from scipy.stats import ks_2samp
    monkeypatch.setenv("INITC", INITC)
    monkeypatch.setenv("INITC_JAX_CACHE", str(tmp_path))

    def fn(key):
        return {"w": jax.random.exponential(key, (20000,))}
    text, _ = ij.capture_ir(fn)
    assert "init.log1p" in text and "init.uniform" in text, text
    mesh = jax.make_mesh((1,), ("dp",))
    for seed in range(3):
        ours = np.asarray(ij.init_sharded(fn, mesh, seed=seed)["w"])
        theirs = np.asarray(fn(jax.random.key(seed))["w"])
        assert ours.min() >= 0
        assert ks_2samp(ours, theirs).pvalue >= 1e-3, seed


def test_power_is_within_one_ulp(monkeypatch, tmp_path):
    """jnp.power of a float exponent (RoPE's theta ** (arange / dim), a tensor to a tensor)
    becomes init.pow: within 1 ulp of the exact power (float64's, rounded)."""
    monkeypatch.setenv("INITC", INITC)
    monkeypatch.setenv("INITC_JAX_CACHE", str(tmp_path))

    def fn(key):
        t = jnp.arange(0, 128, 2).astype(jnp.float32) / 128.0
        x = jnp.arange(1, 65).astype(jnp.float32) / 8.0
        return {"inv_freq": 1.0 / jnp.power(10000.0, t), "xt": jnp.power(x, t * 6.0 - 3.0)}
    text, _ = ij.capture_ir(fn)
    assert "init.pow" in text, text
    built = ij.init_sharded(fn, jax.make_mesh((1,), ("dp",)))
    t = np.arange(0, 128, 2).astype(np.float32) / np.float32(128.0)
    x = np.arange(1, 65).astype(np.float32) / np.float32(8.0)
    xt = (t * np.float32(6.0) - np.float32(3.0)).astype(np.float64)
    exact = {"inv_freq": (1.0 / np.power(10000.0, t.astype(np.float64))),
             "xt": np.power(x.astype(np.float64), xt)}
    for name, values in exact.items():
        want = values.astype(np.float32).view(np.int32).astype(np.int64)
        got = np.asarray(built[name]).view(np.int32).astype(np.int64)
        assert np.abs(got - want).max() <= 1, (name, np.abs(got - want).max())


def test_a_random_value_broadcast_repeats_elements():
    def fn(key):
        return {"w": jnp.broadcast_to(jax.random.normal(key, (1, 8)), (4, 8))}
    with pytest.raises(ij.CaptureError, match=r"^w: broadcasting a random value repeats"):
        ij.capture_ir(fn)


def test_deterministic_leaves_are_jaxs_own(monkeypatch, tmp_path):
    """Fills, masks and index arithmetic have no randomness: init_sharded gives JAX's bits
    (pad, concatenate, eye, triu of ones, iota arithmetic cast to float, where)."""
    monkeypatch.setenv("INITC", INITC)
    monkeypatch.setenv("INITC_JAX_CACHE", str(tmp_path))

    def fn(key):
        rows = jnp.arange(6)[:, None]
        return {"padded": jnp.pad(jnp.full((3,), 0.5), (1, 2)),
                "shifted_eye": jnp.concatenate([jnp.zeros((2, 8)), jnp.eye(6, 8)], 0),
                "causal": jnp.triu(jnp.ones((5, 5), jnp.bfloat16), 1),
                "positions": (rows * 4 + jnp.arange(4)[None, :] - 3).astype(jnp.float32),
                "halves": jnp.where(jnp.arange(10) < 4, 2.0, -1.0),
                "mask": jnp.tril(jnp.ones((4, 4), bool))}
    mesh = jax.make_mesh((1,), ("dp",))
    built = ij.init_sharded(fn, mesh)
    want = fn(jax.random.key(0))
    assert set(built) == set(want)
    for name, array in want.items():
        got = np.asarray(built[name])
        assert got.dtype == np.asarray(array).dtype, name
        assert got.tobytes() == np.asarray(array).tobytes(), (name, got, array)


def test_expm1_and_log1p_are_within_one_ulp(monkeypatch, tmp_path):
    """jnp.expm1 and jnp.log1p become init.expm1 and init.log1p: within 1 ulp of the exact
    function (rng.md rule 7 bounds them). XLA's own expm1 is not: 2.76 ulp at 0.1875 on the CPU,
    so the reference is float64's, rounded."""
    monkeypatch.setenv("INITC", INITC)
    monkeypatch.setenv("INITC_JAX_CACHE", str(tmp_path))

    def fn(key):
        x = (jnp.arange(257) - 128).astype(jnp.float32) / 16.0
        return {"expm1": jnp.expm1(x), "log1p": jnp.log1p(jnp.abs(x))}
    text, _ = ij.capture_ir(fn)
    assert "init.expm1" in text and "init.log1p" in text, text
    built = ij.init_sharded(fn, jax.make_mesh((1,), ("dp",)))
    x = (np.arange(257) - 128).astype(np.float32) / np.float32(16.0)
    exact = {"expm1": np.expm1(x.astype(np.float64)),
             "log1p": np.log1p(np.abs(x).astype(np.float64))}
    for name, values in exact.items():
        want = values.astype(np.float32).view(np.int32).astype(np.int64)
        got = np.asarray(built[name]).view(np.int32).astype(np.int64)
        assert np.abs(got - want).max() <= 1, (name, np.abs(got - want).max())


def test_one_key_drawn_into_two_leaves_is_noted(tmp_path, capsys):
    def fn(key):
        return {"a": jax.random.normal(key, (4,)), "b": jax.random.normal(key, (4,))}
    ij.capture(fn, str(tmp_path / "m.mlir"))
    err = capsys.readouterr().err
    assert "a, b hold the same random values in JAX" in err, err


def test_a_bare_array_has_no_name():
    with pytest.raises(ij.CaptureError, match="bare array"):
        ij.capture_ir(lambda key: jax.random.normal(key, (4,)))


def test_a_sharding_tree(monkeypatch, tmp_path):
    """The sharding as a pytree of the constructor's structure; non-array leaves kept."""
    from jax.sharding import PartitionSpec as P
    monkeypatch.setenv("INITC", INITC)
    monkeypatch.setenv("INITC_JAX_CACHE", str(tmp_path))

    def fn(key):
        return {"w": jax.random.normal(key, (4, 2)), "n": 3, "b": jnp.zeros((4,))}
    mesh = jax.make_mesh((1,), ("dp",))
    built = ij.init_sharded(fn, mesh, sharding={"w": P("dp", None), "n": None, "b": P()})
    assert built["n"] == 3 and built["w"].sharding.spec == P("dp", None)
    assert np.asarray(built["b"]).tobytes() == np.zeros(4, np.float32).tobytes()


def test_more_layers_compile_and_match_eager(monkeypatch, tmp_path):
    """Other Equinox and Flax layers and jax.nn initializers, in one constructor: the captured IR
    compiles, every leaf has the eager constructor's shape, dtype and distribution."""
    import equinox as eqx
    from flax import nnx
    from jax_capture_worker import check_distribution, leaves
    monkeypatch.setenv("INITC", INITC)
    monkeypatch.setenv("INITC_JAX_CACHE", str(tmp_path))

    def fn(key):
        k = jax.random.split(key, 9)
        init = jax.nn.initializers
        return {"conv2d": eqx.nn.Conv2d(3, 8, 3, key=k[0]),
                "gru": eqx.nn.GRUCell(4, 8, key=k[1]),
                "lstm": eqx.nn.LSTMCell(4, 8, key=k[2]),
                "groupnorm": eqx.nn.GroupNorm(2, 8), "prelu": eqx.nn.PReLU(),
                "nnx_conv": nnx.split(nnx.Conv(3, 8, (3, 3), rngs=nnx.Rngs(k[3])))[1],
                "nnx_mha": nnx.split(nnx.MultiHeadAttention(2, 8, decode=False,
                                                            rngs=nnx.Rngs(k[4])))[1],
                "orthogonal": init.orthogonal(2.0)(k[5], (64, 32)),
                "glorot": init.glorot_uniform()(k[6], (64, 32)),
                "he": init.he_normal()(k[7], (3, 3, 16, 32)),
                "bernoulli": jax.random.bernoulli(k[8], 0.3, (256,))}
    built = leaves(ij.init_sharded(fn, jax.make_mesh((1,), ("dp",))))
    eager = leaves(fn(jax.random.key(0)))
    assert set(built) == set(eager)
    for name, array in built.items():
        assert array.shape == eager[name].shape and array.dtype == eager[name].dtype, name
    check_distribution("layers", fn, built)
    q = np.asarray(built["orthogonal"], np.float64)
    assert np.allclose(q.T @ q, 4.0 * np.eye(32), atol=1e-4)
