"""transformers loads the hf layout that a 4-rank dp=2,tp=2 `prog/init --layout hf` writes: no key
missing, unexpected or re-initialized, every tensor bitwise equal to a 1-rank run, the step-0
loss where transformers' own initialization puts it, and the files assigned to tensors exactly as
save_pretrained assigns them: an MoE model's in the original per-expert format of its default
save (the hf layout's default, --hf-experts per-expert), and with `--hf-experts stacked` with its
experts stacked (save_original_format=False); initc reads either back."""

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
SHARD_SIZE, SHARD_BYTES = "100KB", 100 * 1000


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

# The hf layout writes an MoE model per expert unless told otherwise (ir-spec/checkpoint.md,
# "MoE models"); these write transformers 5's stacked format.
STACKED = ("--hf-experts", "stacked")


def stacked_option(model_type):
    return STACKED if model_type in MOE_MODELS else ()


@pytest.mark.parametrize("model_type", sorted(MODELS))
def test_from_pretrained_loads_every_tensor_bitwise(checkpoints, model_type):
    directory = checkpoints.get(MODELS[model_type], "hf", options=stacked_option(model_type))
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
    directory = checkpoints.get(MODELS[model_type], "hf")  # per expert for an MoE model
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


MOE_MODELS = ("mixtral", "qwen3_moe", "deepseek_v3")


def save_pretrained(directory, saved, **options):
    """save_pretrained at SHARD_SIZE of the model that transformers makes from directory's config
    (from_config, as a training run from scratch saves it), in the checkpoint's dtype. The dtype
    is from_config's, not a .to() after it: that keeps the modules a model holds in f32 whatever
    the dtype (deepseek_v3's router) in f32, as the model trains and saves them."""
    loaded, _ = load(directory)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(directory)),
                                             dtype=loaded.dtype)
    model.save_pretrained(str(saved), max_shard_size=SHARD_SIZE, **options)


@pytest.mark.parametrize("model_type", sorted(MODELS))
def test_files_assigned_as_save_pretrained(checkpoints, model_type, tmp_path):
    """The files hold the tensors that save_pretrained puts in them, in the module order. (A model
    that from_pretrained loaded is saved by transformers 5.24 with its state dict sorted by name
    first, so it is not the reference.) An MoE model's reference keeps transformers 5's own
    format, the experts stacked (save_original_format=False): the hf layout writes that format,
    and the default save converts it (the test below)."""
    directory = checkpoints.get(MODELS[model_type], "hf",
                                options=("--max-shard-size", SHARD_SIZE) + stacked_option(model_type))
    save_pretrained(directory, tmp_path,
                    **({"save_original_format": False} if model_type in MOE_MODELS else {}))
    assert_same_files(directory, tmp_path)


# save_pretrained's default (save_original_format=True) writes an MoE model in the original
# per-expert format: its revert_weight_conversion splits each stacked experts tensor into one
# tensor per expert under other names, sorts the state dict by name and packs each split group
# as one storage (ir-spec/checkpoint.md, "MoE models"). The hf layout writes that by default;
# these tests name it.
PER_EXPERT = ("--hf-experts", "per-expert")


def per_expert(checkpoints, model_type, mesh="dp=2,tp=2", shard="tp"):
    return checkpoints.get(MODELS[model_type], "hf", mesh=mesh, shard=shard,
                           options=("--max-shard-size", SHARD_SIZE) + PER_EXPERT)


def headers(directory):
    """Each data file's header bytes (length prefix and JSON), by file name."""
    out = {}
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".safetensors")):
        with open(directory / name, "rb") as f:
            length = int.from_bytes(f.read(8), "little")
            out[name] = f.read(length)
    return out


@pytest.mark.parametrize("model_type", MOE_MODELS)
def test_files_assigned_as_save_pretrained_original_format(checkpoints, model_type, tmp_path):
    directory = per_expert(checkpoints, model_type)
    save_pretrained(directory, tmp_path)
    assert_same_files(directory, tmp_path)
    # The files' headers too: every tensor's name, dtype, shape and offset as the reference's.
    assert headers(directory) == headers(tmp_path)


@pytest.mark.parametrize("model_type", MOE_MODELS)
def test_per_expert_loads_as_the_stacked_checkpoint(checkpoints, model_type):
    """from_pretrained loads the per-expert files into the model's stacked tensors, bitwise the
    stacked checkpoint's; and each file tensor is its expert's part of the stacked one."""
    directory = per_expert(checkpoints, model_type)
    stacked = file_tensors(checkpoints.get(MODELS[model_type], "hf", options=STACKED))
    model, info = load(directory)
    assert not info["missing_keys"], info
    assert not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    assert not info["error_msgs"], info
    state = model.state_dict()
    for name, value in stacked.items():
        assert name in state, name
        assert torch_bytes(state[name]) == torch_bytes(value), "%s differs from stacked" % name
    stored = file_tensors(directory)
    projs = ({"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"} if model_type == "mixtral"
             else {})
    block = "block_sparse_moe" if model_type == "mixtral" else "mlp"
    expected = {}
    for name, value in stacked.items():
        prefix, _, last = name.rpartition(".experts.")
        prefix = prefix.replace(".mlp", "." + block) if model_type == "mixtral" else prefix
        if last == "gate_up_proj":
            for e in range(value.shape[0]):
                gate, up = value[e].chunk(2, dim=0)
                expected["%s.experts.%d.%s.weight" % (prefix, e, projs.get("gate_proj", "gate_proj"))] = gate
                expected["%s.experts.%d.%s.weight" % (prefix, e, projs.get("up_proj", "up_proj"))] = up
        elif last == "down_proj":
            for e in range(value.shape[0]):
                expected["%s.experts.%d.%s.weight" % (prefix, e, projs.get("down_proj", "down_proj"))] = value[e]
        else:
            expected[name.replace(".mlp.", "." + block + ".")] = value
    assert set(stored) == set(expected)
    for name, value in expected.items():
        assert stored[name].shape == value.shape, name
        assert torch_bytes(stored[name]) == torch_bytes(value.contiguous()), name


@pytest.mark.parametrize("model_type", MOE_MODELS)
def test_per_expert_one_rank_and_four_ranks_byte_identical(checkpoints, model_type):
    one = per_expert(checkpoints, model_type, mesh="", shard="replicated")
    four = per_expert(checkpoints, model_type)
    names = sorted(n for n in os.listdir(four) if n.endswith(".safetensors") or n.endswith(".json")
                   and n != "initc-checkpoint.json")
    assert names == sorted(n for n in os.listdir(one) if n.endswith(".safetensors") or
                           n.endswith(".json") and n != "initc-checkpoint.json")
    assert len([n for n in names if n.endswith(".safetensors")]) > 1
    for name in names:
        assert (one / name).read_bytes() == (four / name).read_bytes(), name


@pytest.mark.parametrize("model_type", MOE_MODELS)
def test_verify_checks_every_expert(checkpoints, model_type, tmp_path):
    """`initc verify` accepts the per-expert checkpoint and finds a byte changed in any expert's
    tensor, including one that is not its stacked tensor's first."""
    import shutil
    import subprocess
    from conftest import INITC
    directory = per_expert(checkpoints, model_type)
    result = subprocess.run([str(INITC), "verify", str(directory)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    record = read_json(directory / "initc-checkpoint.json")
    name, tensor = next((n, t) for n, t in record["tensors"].items() if n.endswith("down_proj")
                        and "pieces" in t)
    file_index, offset, size = tensor["pieces"][-1]
    damaged = tmp_path / "damaged"
    shutil.copytree(directory, damaged)
    path = damaged / record["files"][file_index]["name"]
    data = bytearray(path.read_bytes())
    data[offset + size // 2] ^= 0x40
    path.write_bytes(bytes(data))
    result = subprocess.run([str(INITC), "verify", str(damaged)], capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert name in result.stdout + result.stderr


def natural_key(name):
    """transformers' dot_natural_key: the parts between dots, numbers before words, a number by
    value, a word with a numeric suffix by the word and then the suffix's value."""
    key = []
    for part in name.split("."):
        word = part.rstrip("0123456789")
        if not word:
            key.append((0, int(part)))
        else:
            key.append((1, word, int(part[len(word):])) if word != part else (1, word))
    return key


def original_format_files(directory, model_type):
    """The weight map and total size of the original per-expert format, computed from the hf
    layout's own files by the rule of ir-spec/checkpoint.md ("MoE models")."""
    stacked = {}
    for name in sorted(set(read_json(directory / "model.safetensors.index.json")["weight_map"]
                           .values())):
        with safe_open(str(directory / name), framework="pt") as f:
            for key in f.keys():
                tensor = f.get_tensor(key)
                stacked[key] = (list(tensor.shape), tensor.element_size())
    # mixtral's names, as its conversion mapping gives them back; the others keep theirs.
    block, projs = (("block_sparse_moe", {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"})
                    if model_type == "mixtral" else ("mlp", {}))

    def rename(name):
        return name.replace(".mlp.", "." + block + ".")

    # Units in the sorted order: a group of per-expert tensors that share one storage, or a
    # tensor left alone; each with its bytes.
    units = []
    for name in sorted(stacked, key=natural_key):
        shape, size = stacked[name]
        prefix, _, last = name.rpartition(".experts.")
        if last in ("gate_up_proj", "down_proj"):
            experts = shape[0]
            halves = ("gate_proj", "up_proj") if last == "gate_up_proj" else ("down_proj",)
            for proj in halves:
                proj = projs.get(proj, proj)
                units.append(([rename("%s.experts.%d.%s.weight" % (prefix, e, proj))
                               for e in range(experts)],
                              math.prod(shape) * size // len(halves)))
        else:
            units.append(([rename(name)], math.prod(shape) * size))
    # huggingface_hub's split_state_dict_into_shards over the units.
    files, current, current_bytes = [], [], 0
    for names, size in units:
        if size > SHARD_BYTES:
            files.append(names)
            continue
        if current_bytes + size > SHARD_BYTES:
            files.append(current)
            current, current_bytes = [], 0
        current += names
        current_bytes += size
    if current:
        files.append(current)
    weight_map = {name: "model-%05d-of-%05d.safetensors" % (i + 1, len(files))
                  for i, names in enumerate(files) for name in names}
    return weight_map, sum(size for _, size in units)


@pytest.mark.parametrize("model_type", MOE_MODELS)
def test_original_format_rule_is_save_pretrained(checkpoints, model_type, tmp_path):
    """The spec's rule for the original per-expert format, derived from what the hf layout holds
    (the stacked tensors' names and shapes), is the files save_pretrained's default writes."""
    directory = checkpoints.get(MODELS[model_type], "hf",
                                options=("--max-shard-size", SHARD_SIZE) + STACKED)
    save_pretrained(directory, tmp_path)
    theirs = read_json(tmp_path / "model.safetensors.index.json")
    weight_map, total = original_format_files(directory, model_type)
    assert len(set(weight_map.values())) > 1
    assert weight_map == theirs["weight_map"]
    assert total == theirs["metadata"]["total_size"]


@pytest.mark.parametrize("model_type", MOE_MODELS)
def test_assemble_writes_per_expert(checkpoints, model_type, tmp_path):
    """`initc assemble --hf-experts per-expert` of the stacked checkpoint writes the files that
    prog/init writes per expert, byte for byte, and `initc verify` accepts them."""
    from conftest import INITC, run
    out = tmp_path / "assembled"
    run(INITC, "assemble", checkpoints.get(MODELS[model_type], "hf", options=STACKED), "-o", out,
        "--max-shard-size", SHARD_SIZE, *PER_EXPERT)
    written = per_expert(checkpoints, model_type)
    names = sorted(n for n in os.listdir(written) if n.endswith(".safetensors"))
    assert names == sorted(n for n in os.listdir(out) if n.endswith(".safetensors"))
    for name in names + ["model.safetensors.index.json", "config.json"]:
        assert (out / name).read_bytes() == (written / name).read_bytes(), name
    run(INITC, "verify", out)


def test_per_expert_reads_back(checkpoints, tmp_path):
    """A per-expert checkpoint reads back: assembled into the stacked format, the stacked
    checkpoint's files byte for byte, and into one file, the stacked one's; and a job of the
    other --hf-experts refuses its directory rather than mix the formats."""
    import subprocess
    from conftest import INITC, run
    from clients import init_command, mpi_env
    directory = per_expert(checkpoints, "qwen3_moe")
    stacked = checkpoints.get(MODELS["qwen3_moe"], "hf",
                              options=("--max-shard-size", SHARD_SIZE) + STACKED)
    run(INITC, "assemble", directory, "-o", tmp_path / "back", "--max-shard-size", SHARD_SIZE,
        *STACKED)
    names = sorted(n for n in os.listdir(stacked) if n.startswith("model"))
    assert names == sorted(n for n in os.listdir(tmp_path / "back") if n.startswith("model"))
    for name in names + ["config.json"]:
        assert (tmp_path / "back" / name).read_bytes() == (stacked / name).read_bytes(), name
    for source, out in ((directory, "per.safetensors"), (stacked, "stacked.safetensors")):
        run(INITC, "assemble", source, "-o", tmp_path / out)
    assert file_tensors_of(tmp_path / "per.safetensors") == file_tensors_of(
        tmp_path / "stacked.safetensors")
    prog = checkpoints.program(MODELS["qwen3_moe"])
    result = subprocess.run([str(a) for a in init_command(prog, directory, "hf", 4,
                                                          "--max-shard-size", SHARD_SIZE,
                                                          *STACKED)],
                            capture_output=True, text=True, env=mpi_env())
    assert result.returncode != 0
    assert "--hf-experts per-expert, not stacked" in result.stdout + result.stderr, result.stderr


def file_tensors_of(path):
    """Every tensor of one safetensors file, by name: its dtype, shape and bytes."""
    with safe_open(str(path), "pt") as f:
        return {name: (str(t.dtype), list(t.shape), torch_bytes(t))
                for name in f.keys() for t in [f.get_tensor(name)]}