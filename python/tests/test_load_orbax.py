"""orbax-checkpoint loads prog/init's hf layout (index + several model-*.safetensors files) with
its safetensors checkpoint layout into jax.Arrays sharded over 8 CPU devices: every shard bitwise
equal to the 1-rank tensors. The load runs in its own process (orbax_worker.py), which sets
XLA_FLAGS before jax is imported."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = "llama_uneven.json"


def test_orbax_loads_hf(checkpoints):
    # A small shard size, so that orbax reads a directory of several files.
    hf = checkpoints.get(CONFIG, "hf", options=("--max-shard-size", "100KB"))
    assert len([n for n in os.listdir(hf) if n.endswith(".safetensors")]) > 1
    reference = checkpoints.get(CONFIG, "ranks", mesh="", shard="replicated")
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, "orbax_worker.py"), str(hf),
         str(reference / "rank-00000-of-00001.safetensors")],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, "orbax load failed:\n%s%s" % (result.stdout, result.stderr)
    assert "loaded " in result.stdout
