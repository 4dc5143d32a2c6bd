"""`initc assemble CKPT -o DIR`: a directory Hugging Face loads as it loads save_pretrained's.
transformers' from_pretrained reads the sharded files through the index, with no key missing or
left over, and every tensor is bitwise the one-file output's."""

import json
import os
import shutil

import pytest

from conftest import INITC, ROOT, compile_program, run


@pytest.fixture(scope="module")
def assembled(tmp_path_factory):
    directory = tmp_path_factory.mktemp("assemble-hf")
    prog, _ = compile_program(directory, "bf16", mesh="dp=2,tp=2", shard="fsdp+tp")
    # The whole job, which writes the index (a --rank run writes its own file only).
    ckpt = directory / "job"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1")
    run("mpirun", "--oversubscribe", "--bind-to", "none", "-np", 4, prog / "init", "--out", ckpt,
        "--quiet", env=env)
    one = directory / "model.safetensors"
    run(INITC, "assemble", ckpt, "-o", one)
    out = directory / "hf"
    os.mkdir(out)
    # A ranks checkpoint records no config: the one put beside the weights is kept.
    shutil.copy(os.path.join(ROOT, "tests", "e2e", "configs", "llama_uneven.json"),
                out / "config.json")
    run(INITC, "assemble", ckpt, "-o", out, "--max-shard-size", "200KB")
    return one, out


def test_from_pretrained_loads_the_sharded_directory(assembled):
    import torch
    import transformers
    from safetensors.torch import load_file

    one, out = assembled
    index = json.load(open(out / "model.safetensors.index.json"))
    assert len(set(index["weight_map"].values())) > 1
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        out, dtype=torch.bfloat16, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    state = model.state_dict()
    expected = load_file(one)
    assert set(expected) == set(index["weight_map"])
    for name, tensor in expected.items():
        loaded = state[name].contiguous()
        assert loaded.dtype == tensor.dtype and loaded.shape == tensor.shape, name
        assert torch.equal(loaded.view(torch.uint8), tensor.contiguous().view(torch.uint8)), name
