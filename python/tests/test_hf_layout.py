"""The hf layout as Hugging Face's own tools read it: `from_pretrained` loads the checkpoint that
a 2-rank job writes (several files with --max-shard-size), every tensor equal to the ranks
layout assembled by `initc assemble`."""

import os
import shutil

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from conftest import INITC, ROOT, compile_program, run


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun")
def test_from_pretrained_loads_the_hf_layout(tmp_path):
    prog, _ = compile_program(tmp_path, "bf16")
    out, ranks_ckpt = tmp_path / "hf", tmp_path / "ranks"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1")
    job = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", 2, prog / "init", "--threads",
           1, "--quiet"]
    run(*job, "--out", out, "--max-shard-size", "100KB", env=env)
    run(*job, "--out", ranks_ckpt, "--layout", "ranks", env=env)
    files = sorted(p.name for p in out.iterdir() if p.name.endswith(".safetensors"))
    assert len(files) > 1 and files[0] == "model-00001-of-%05d.safetensors" % len(files)
    if not (out / "config.json").exists():  # a program imported before it carried its config
        shutil.copy(os.path.join(ROOT, "tests", "e2e", "configs", "llama_uneven.json"),
                    out / "config.json")
    assembled = tmp_path / "assembled.safetensors"
    run(INITC, "assemble", ranks_ckpt, "-o", assembled)
    expected = load_file(str(assembled))

    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.bfloat16)
    loaded = model.state_dict()
    for name, tensor in expected.items():
        assert torch.equal(loaded[name], tensor), name
    stored = {}
    for name in files:
        stored.update(load_file(str(out / name)))
    assert stored.keys() == expected.keys()
