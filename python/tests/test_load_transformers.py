"""transformers loads the hf layout that a 4-rank dp=2,tp=2 `prog/init --layout hf` writes: no key
missing, unexpected or re-initialized, every tensor bitwise equal to a 1-rank run, the step-0
loss where transformers' own initialization puts it, and the files assigned to tensors exactly as
save_pretrained assigns them."""

import math
import os

import pytest
import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModelForCausalLM

from clients import MODELS, read_json, torch_bytes

# Random token sequences for the step-0 loss: a few, fixed by a seed.
LOSS_SEED, LOSS_BATCH, LOSS_LENGTH = 1234, 4, 32
# Small enough that every test config spans several files.
SHARD_SIZE = "100KB"


def load(directory):
    # dtype="auto": the checkpoint's own dtype, so that the loaded bytes are the file's bytes.
    return AutoModelForCausalLM.from_pretrained(str(directory), dtype="auto",
                                                output_loading_info=True)


def file_tensors(directory):
    """Every tensor of the hf files, by name, as safetensors reads it."""
    index = read_json(directory / "model.safetensors.index.json")
    tensors = {}
    for name in sorted(set(index["weight_map"].values())):
        with safe_open(str(directory / name), framework="pt") as f:
            for key in f.keys():
                assert index["weight_map"][key] == name, key
                tensors[key] = f.get_tensor(key)
    assert set(tensors) == set(index["weight_map"])
    return tensors


def stored_name(model, key, stored):
    """The file's tensor that model parameter `key` holds: itself, or the tensor it is tied to."""
    if key in stored:
        return key
    params = dict(model.named_parameters(remove_duplicate=False))
    assert key in params, "%s is neither in the checkpoint nor a parameter" % key
    tied = [k for k in stored if k in params and params[k] is params[key]]
    assert len(tied) == 1, "%s is not in the checkpoint and tied to none of its tensors" % key
    return tied[0]


def step0_loss(model, vocab):
    model = model.float().eval()
    generator = torch.Generator().manual_seed(LOSS_SEED)
    tokens = torch.randint(vocab, (LOSS_BATCH, LOSS_LENGTH), generator=generator)
    with torch.no_grad():
        return model(input_ids=tokens, labels=tokens).loss.item()


@pytest.mark.parametrize("model_type", sorted(MODELS))
def test_from_pretrained_loads_every_tensor_bitwise(checkpoints, model_type):
    directory = checkpoints.get(MODELS[model_type], "hf")
    assert (directory / "config.json").is_file(), "prog/init --layout hf wrote no config.json"
    model, info = load(directory)
    assert model.config.model_type == model_type
    assert not info["missing_keys"], info
    assert not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    assert not info["error_msgs"], info

    stored = file_tensors(directory)
    reference = checkpoints.reference(MODELS[model_type])
    assert set(stored) == set(reference)
    used = set()
    # Every tensor the model holds is the file's, byte for byte: none was re-initialized.
    for key, value in model.state_dict().items():
        name = stored_name(model, key, stored)
        used.add(name)
        assert value.dtype == stored[name].dtype and value.shape == stored[name].shape, key
        assert torch_bytes(value) == torch_bytes(stored[name]), "%s differs from the file" % key
        assert torch_bytes(value) == torch_bytes(reference[name]), "%s differs from 1 rank" % key
    assert used == set(stored)


@pytest.mark.parametrize("model_type", sorted(MODELS))
def test_step0_loss_is_transformers_own(checkpoints, model_type):
    directory = checkpoints.get(MODELS[model_type], "hf")
    model, _ = load(directory)
    vocab = model.config.vocab_size
    loaded = step0_loss(model, vocab)
    torch.manual_seed(0)
    own = step0_loss(AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(directory))),
                     vocab)
    assert abs(loaded - math.log(vocab)) <= 0.02 * math.log(vocab), (loaded, math.log(vocab))
    assert abs(loaded - own) <= 0.01 * own, (loaded, own)


def assert_same_files(directory, saved):
    ours = read_json(directory / "model.safetensors.index.json")
    theirs = read_json(saved / "model.safetensors.index.json")
    assert len(set(theirs["weight_map"].values())) > 1, "%s gives one file" % SHARD_SIZE
    assert ours["weight_map"] == theirs["weight_map"]
    assert ours["metadata"]["total_size"] == theirs["metadata"]["total_size"]
    names = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
    assert names == sorted(n for n in os.listdir(saved) if n.endswith(".safetensors"))
    assert names == sorted(set(ours["weight_map"].values()))


# MoE models: transformers 5.24 assigns their tensors to files otherwise than the hf layout's
# rule does (the same names, other files); not yet matched. Strict, so a fix shows.
MOE_FILES_DIFFER = pytest.mark.xfail(
    strict=True, reason="save_pretrained puts an MoE model's tensors in other files")


@pytest.mark.parametrize("model_type", [
    pytest.param(m, marks=MOE_FILES_DIFFER) if m in ("mixtral", "qwen3_moe", "deepseek_v3") else m
    for m in sorted(MODELS)])
def test_files_assigned_as_save_pretrained(checkpoints, model_type, tmp_path):
    """As save_pretrained assigns a model that transformers made (from_config, as a training run
    from scratch saves it): its tensors in the module order. (A model that from_pretrained loaded
    is saved by transformers 5.24 with its state dict sorted by name first, so it is not the
    reference.)"""
    directory = checkpoints.get(MODELS[model_type], "hf", options=("--max-shard-size", SHARD_SIZE))
    loaded, _ = load(directory)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(directory)))
    model.to(loaded.dtype).save_pretrained(str(tmp_path), max_shard_size=SHARD_SIZE)
    assert_same_files(directory, tmp_path)
