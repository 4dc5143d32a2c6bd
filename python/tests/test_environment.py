"""The pinned venv (requirements-test.txt, requirements-torchtitan.txt) holds what the framework
tests import, together."""

import importlib
import subprocess
import sys

import pytest

FRAMEWORKS = ["torch", "transformers", "safetensors", "numpy", "scipy", "jax", "equinox", "flax",
              "orbax.checkpoint", "torchax", "ml_dtypes", "megatron.core",
              # What torchtitan_worker.py imports, installed without pip's dependency check.
              "torchtitan.models.llama3", "torchtitan.distributed.pipeline_parallel",
              "torchtitan.trainer"]


@pytest.mark.parametrize("module", FRAMEWORKS)
def test_imports(module):
    # Each in a fresh interpreter: one import must not hide another's failure.
    subprocess.run([sys.executable, "-c", "import %s" % module], check=True)


def test_jax_runs_on_the_cpu():
    jax = importlib.import_module("jax")
    assert jax.devices()[0].platform == "cpu"
