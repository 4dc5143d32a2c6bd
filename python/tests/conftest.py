"""Shared fixtures: the checkout, its build (INITC_BUILD_DIR, default build/) and small programs
compiled from tests/e2e/configs/llama_uneven.json with build/bin/initc."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("INITC_BUILD_DIR", os.path.join(ROOT, "build"))
INITC = os.path.join(BUILD_DIR, "bin", "initc")
# initc.compile and the JAX frontend find the compiler as a user's job would: through $INITC.
os.environ.setdefault("INITC", INITC)


def run(*args, **kwargs):
    """Runs a command; on failure the assertion shows its output."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, "%s failed (%d):\n%s%s" % (
        " ".join(map(str, args)), result.returncode, result.stdout, result.stderr)
    return result


def compile_program(directory, dtype, mesh="tp=2", shard="tp"):
    """prog/ and the checkpoint that `prog/init --out` writes for each rank of it."""
    assert os.access(INITC, os.X_OK), "no %s: build the tree first (tools/setup.sh)" % INITC
    config = os.path.join(ROOT, "tests", "e2e", "configs", "llama_uneven.json")
    model, prog, ckpt = directory / "model.mlir", directory / "prog", directory / "ckpt"
    run(INITC, "import", "hf", config, "--dtype", dtype, "--seed", "7", "-o", model)
    run(INITC, "compile", model, "--mesh", mesh, "--shard", shard, "-o", prog)
    ranks = 1
    for axis in mesh.split(","):
        ranks *= int(axis.split("=")[1])
    for rank in range(ranks):
        run(prog / "init", "--rank", rank, "--threads", 1, "--layout", "ranks", "--out", ckpt)
    return prog, ckpt


@pytest.fixture(scope="session")
def program_f32(tmp_path_factory):
    return compile_program(tmp_path_factory.mktemp("f32"), "f32")


@pytest.fixture(scope="session")
def program_bf16(tmp_path_factory):
    return compile_program(tmp_path_factory.mktemp("bf16"), "bf16")


@pytest.fixture
def python():
    return sys.executable


def compile_reference(directory, dtype):
    """The 1-device program of llama_uneven.json and its prog/init output (layout ranks): every
    tensor whole, the values any mesh's shards must have."""
    config = os.path.join(ROOT, "tests", "e2e", "configs", "llama_uneven.json")
    model, prog, ckpt = directory / "model.mlir", directory / "prog1", directory / "ckpt1"
    run(INITC, "import", "hf", config, "--dtype", dtype, "--seed", "7", "-o", model)
    run(INITC, "compile", model, "--mesh", "dp=1", "--shard", "replicated", "-o", prog)
    run(prog / "init", "--layout", "ranks", "--threads", 1, "--out", ckpt)
    return prog, ckpt / "rank-00000-of-00001.safetensors"


@pytest.fixture(scope="session")
def reference_bf16(tmp_path_factory):
    """(1-device prog, its whole-tensor safetensors file) for bf16 llama_uneven."""
    return compile_reference(tmp_path_factory.mktemp("ref-bf16"), "bf16")


@pytest.fixture(scope="session")
def mesh_program_bf16(tmp_path_factory):
    """bf16 llama_uneven compiled for a dp=2,tp=2 mesh (fsdp+tp): a training job whose own
    sharding differs asks for its boxes of it all the same."""
    directory = tmp_path_factory.mktemp("mesh-bf16")
    config = os.path.join(ROOT, "tests", "e2e", "configs", "llama_uneven.json")
    model, prog = directory / "model.mlir", directory / "prog"
    run(INITC, "import", "hf", config, "--dtype", "bf16", "--seed", "7", "-o", model)
    run(INITC, "compile", model, "--mesh", "dp=2,tp=2", "--shard", "fsdp+tp", "-o", prog)
    return prog


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory):
    """Checkpoints written by prog/init in each layout, each made once per session (clients.py)."""
    from clients import Checkpoints
    return Checkpoints(tmp_path_factory.mktemp("checkpoints"))


@pytest.fixture(scope="session")
def medium_program_bf16(tmp_path_factory):
    """(prog, config) of a llama of about 44 MB in bf16 (vocab 16000, hidden 512, 2 layers): large
    enough that a process's shards, not the interpreter, dominate a peak-memory measurement."""
    import json
    directory = tmp_path_factory.mktemp("medium-bf16")
    config = directory / "config.json"
    config.write_text(json.dumps({
        "model_type": "llama", "vocab_size": 16000, "hidden_size": 512,
        "intermediate_size": 1376, "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 4, "initializer_range": 0.02, "pad_token_id": 0,
        "rope_theta": 10000.0}))
    model, prog = directory / "model.mlir", directory / "prog"
    run(INITC, "import", "hf", config, "--dtype", "bf16", "--seed", "7", "-o", model)
    run(INITC, "compile", model, "-o", prog)
    return prog, config
