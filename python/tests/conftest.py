"""Shared fixtures: the checkout, its build (INITC_BUILD_DIR, default build/) and small programs
compiled from tests/e2e/configs/llama_uneven.json with build/bin/initc."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("INITC_BUILD_DIR", os.path.join(ROOT, "build"))
INITC = os.path.join(BUILD_DIR, "bin", "initc")


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


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory):
    """Checkpoints written by prog/init in each layout, each made once per session (clients.py)."""
    from clients import Checkpoints
    return Checkpoints(tmp_path_factory.mktemp("checkpoints"))
