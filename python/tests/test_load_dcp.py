"""PyTorch DCP (torch.distributed.checkpoint.load with HuggingFaceStorageReader, the path
torchtitan's initial_load_in_hf takes) loads prog/init's hf and dcp layouts into DTensors on a 2x2
CPU mesh, from checkpoints written on other meshes: every local shard bitwise equal to the 1-rank
tensors. The load runs under torchrun (dcp_worker.py)."""

import os
import subprocess
import sys

import pytest


HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = "llama_uneven.json"
# The torchrun launcher of the Python that runs the tests (the pinned venv).
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")


def dcp_load(checkpoint, reference):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(
        [TORCHRUN, "--standalone", "--nproc-per-node", "4", os.path.join(HERE, "dcp_worker.py"),
         str(checkpoint), str(reference)],
        capture_output=True, text=True, env=env, timeout=600)


def load_raised(result):
    """Whether dcp_load ended because torch.distributed.checkpoint.load raised."""
    return result.returncode != 0 and "DCP load raised" in result.stderr


def reference_file(checkpoints):
    out = checkpoints.get(CONFIG, "ranks", mesh="", shard="replicated")
    return out / "rank-00000-of-00001.safetensors"


def assert_loads(checkpoint, reference):
    result = dcp_load(checkpoint, reference)
    assert result.returncode == 0, "DCP load failed:\n%s%s" % (result.stdout, result.stderr)
    assert "loaded " in result.stdout


def test_dcp_loads_hf(checkpoints):
    assert_loads(checkpoints.get(CONFIG, "hf"), reference_file(checkpoints))


# Written on meshes other than the loader's 2x2 (and on the same one): the slices differ.
@pytest.mark.parametrize("mesh,shard", [("dp=2,tp=2", "tp"), ("tp=2", "tp"), ("dp=4", "fsdp")])
def test_dcp_loads_dcp_written_on_another_mesh(checkpoints, mesh, shard):
    assert_loads(checkpoints.get(CONFIG, "dcp", mesh=mesh, shard=shard),
                 reference_file(checkpoints))
