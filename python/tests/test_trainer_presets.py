"""The trainer presets (ir-spec/sharding.md, "Trainer presets"): every rank's shards are the
trainer's own. torchtitan against torchtitan's own llama3 and parallelize_llama (under torchrun
with gloo) and its plan written out on transformers' llama, MaxText against flax's
logical_to_mesh_axes and jax's NamedSharding with MaxText's rules, Megatron against megatron-core's own GPTModel (under torchrun with gloo) and its documented
partitioning."""

import json
import math
import os
import re
import subprocess
import sys

import pytest

from conftest import INITC, run

import initc

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "..", "tests", "e2e", "configs")

# A llama whose tensor-parallel dims divide over tp x dp (torchtitan's FSDP2 nests in them) and
# whose hidden size (65) does not: FSDP2's uneven dim-0 chunks on the row-parallel weights and
# norms.
LLAMA = {"model_type": "llama", "vocab_size": 1024, "hidden_size": 65, "head_dim": 16,
         "intermediate_size": 176, "num_hidden_layers": 4, "num_attention_heads": 5,
         "num_key_value_heads": 1, "initializer_range": 0.02, "pad_token_id": 0,
         "rope_theta": 10000.0}


def import_model(directory, config, name="model"):
    if isinstance(config, dict):
        path = directory / (name + ".json")
        path.write_text(json.dumps(config))
        config = path
    model = directory / (name + ".mlir")
    run(INITC, "import", "hf", config, "--dtype", "bf16", "--seed", "7", "-o", model)
    return model


def compile_model(model, mesh, shard, prog):
    run(INITC, "compile", model, "--mesh", mesh, "--shard", shard, "-o", prog)
    return prog


def subprocess_env(**extra):
    env = dict(os.environ, OMP_NUM_THREADS="1", **extra)
    # The package under test, as this process imports it.
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def torchtitan_ir(directory):
    """torchtitan's own llama3 (torchtitan_model.py) captured with its init_weights, under
    its own state-dict names, and the 1-rank program's file of it."""
    model = directory / "model.mlir"
    result = subprocess.run(
        [sys.executable, "-m", "initc.capture", "--factory",
         os.path.join(HERE, "torchtitan_model.py") + ":build", "--seed", "7", "-o",
         str(model)], capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    reference = compile_model(model, "dp=1", "replicated", directory / "prog1")
    run(reference / "init", "--threads", 1, "--layout", "ranks", "--out", directory / "ckpt1",
        "--quiet")
    return model, directory / "ckpt1" / "rank-00000-of-00001.safetensors"


@pytest.fixture(scope="module")
def torchtitan_model(tmp_path_factory):
    pytest.importorskip("torchtitan")
    return torchtitan_ir(tmp_path_factory.mktemp("torchtitan"))


def run_torchtitan(tmp_path, ir, mesh, shard):
    model, reference = ir
    prog = compile_model(model, mesh, shard, tmp_path / "prog")
    for rank in range(4):
        run(prog / "init", "--rank", rank, "--threads", 1, "--layout", "ranks", "--out",
            tmp_path / "ckpt", "--quiet")
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
         os.path.join(HERE, "torchtitan_worker.py"), mesh, str(prog), str(tmp_path / "ckpt"),
         str(reference)],
        capture_output=True, text=True, env=subprocess_env(), timeout=600)


@pytest.mark.parametrize("mesh", ["dp_shard=2,tp=2", "pp=2,tp=2"])
def test_torchtitan_rank_files_are_its_own_parallelize_llama_shards(tmp_path, torchtitan_model,
                                                                    mesh):
    # Its hidden size (65) does not divide over dp_shard: FSDP2's uneven dim-0 chunks on the
    # row-parallel weights and the norms.
    result = run_torchtitan(tmp_path, torchtitan_model, mesh, "torchtitan")
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = set(re.findall(r"rank (\d+): [1-9]\d* tensors equal torchtitan's local shards and "
                           r"the 1-rank program's", result.stdout))
    assert ranks == {"0", "1", "2", "3"}, result.stdout + result.stderr
    if not mesh.startswith("pp"):
        assert len(re.findall(r"a forward step ran", result.stdout)) == 4, result.stdout


def test_torchtitan_check_fails_on_another_layout(tmp_path, torchtitan_model):
    # fsdp+tp puts the data axis on dim 1 of the column-parallel weights: the same values, in
    # other boxes than torchtitan's, which the comparison must see.
    result = run_torchtitan(tmp_path, torchtitan_model, "dp_shard=2,tp=2", "fsdp+tp")
    assert result.returncode != 0, result.stdout
    assert re.search(r"rank \d: tok_embeddings\.weight is \(256, 65\) in torchtitan's layout, "
                     r"\(512, 3[23]\) in the file", result.stderr), result.stdout + result.stderr


def test_torchtitan_plan_on_transformers_names(tmp_path):
    # The preset's transformers names (model.embed_tokens, self_attn.q_proj, ...) and bf16,
    # which torchtitan's own model (below) does not have: LlamaForCausalLM laid out by
    # torchtitan's plan, written out with parallelize_module and fully_shard.
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(dict(LLAMA, num_hidden_layers=2)))
    model = import_model(tmp_path, config)
    prog = compile_model(model, "dp_shard=2,tp=2", "torchtitan", tmp_path / "prog")
    for rank in range(4):
        run(prog / "init", "--rank", rank, "--threads", 1, "--layout", "ranks", "--out",
            tmp_path / "ckpt", "--quiet")
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
         os.path.join(HERE, "torchtitan_hf_worker.py"), str(prog), str(tmp_path / "ckpt"),
         str(config)],
        capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = set(re.findall(r"rank (\d+): \d+ tensors equal torchtitan's local shards",
                           result.stdout))
    assert ranks == {"0", "1", "2", "3"}, result.stdout + result.stderr


# jax shards a dim in equal parts only: a hidden size that divides.
MAXTEXT_LLAMA = dict(LLAMA, hidden_size=64, num_attention_heads=4, num_key_value_heads=2)


@pytest.mark.parametrize("config,mesh", [
    (MAXTEXT_LLAMA, "fsdp=2,fsdp_transpose=2,tensor=2"),
    (MAXTEXT_LLAMA, "data=2,fsdp=2,tensor_transpose=2"),
    (dict(json.load(open(os.path.join(CONFIGS, "mixtral_tiny.json"))), vocab_size=1024),
     "expert=2,fsdp=2,tensor=2"),
])
def test_maxtext_boxes_are_flax_rules_on_jax_meshes(tmp_path, config, mesh):
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    model = import_model(tmp_path, config)
    prog = compile_model(model, mesh, "maxtext", tmp_path / "prog")
    devices = 1
    for axis in mesh.split(","):
        devices *= int(axis.split("=")[1])
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, "maxtext_worker.py"), str(prog), str(model), mesh],
        capture_output=True, text=True, timeout=600,
        env=subprocess_env(XLA_FLAGS="--xla_force_host_platform_device_count=%d" % devices,
                           JAX_PLATFORMS="cpu"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"maxtext: [1-9]\d* tensors on %d ranks" % devices, result.stdout), \
        result.stdout


# One mesh without stages, and one with all three axes in Megatron's rank order (tp fastest,
# then dp, then pp): 8 processes.
@pytest.mark.parametrize("mesh", ["dp=2,tp=2", "pp=2,dp=2,tp=2"])
def test_megatron_rank_files_are_megatron_core_local_weights(tmp_path, mesh):
    pytest.importorskip("torch")
    pytest.importorskip("megatron.core")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(MAXTEXT_LLAMA))  # Megatron needs query groups to divide tp
    model = import_model(tmp_path, config)
    prog = compile_model(model, mesh, "megatron", tmp_path / "prog")
    world = math.prod(int(axis.split("=")[1]) for axis in mesh.split(","))
    for rank in range(world):
        run(prog / "init", "--rank", rank, "--threads", 1, "--layout", "ranks", "--out",
            tmp_path / "ckpt", "--quiet")
    reference = compile_model(model, "dp=1", "replicated", tmp_path / "prog1")
    run(reference / "init", "--threads", 1, "--layout", "ranks", "--out", tmp_path / "ckpt1",
        "--quiet")
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
         str(world), os.path.join(HERE, "megatron_worker.py"), str(prog),
         str(tmp_path / "ckpt1" / "rank-00000-of-00001.safetensors"), str(tmp_path / "ckpt"),
         str(config), mesh],
        capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = set(re.findall(r"rank (\d+) \(pp \d, dp \d, tp \d\): [1-9]\d* tensors on Megatron's "
                           r"boxes and bytes", result.stdout))
    assert ranks == {str(rank) for rank in range(world)}, result.stdout + result.stderr


# The same three-axis mesh read from the rules alone, without megatron-core: Megatron's
# partitioning as megatron.core documents it: ColumnParallelLinear splits the
# weight's output dim (dim 0 of [out, in]) into tp equal parts, RowParallelLinear the input dim
# (dim 1), VocabParallelEmbedding the vocabulary (vocab_range_from_global_vocab_size), each with
# megatron.core.utils.divide (exact); norms are whole on every tensor-parallel rank; data
# parallel ranks hold replicas; get_num_layers_to_build gives each pipeline stage L / pp
# consecutive layers, the embedding on the first stage, the final norm and output layer on the
# last.
MEGATRON_COLUMN = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight",
                   "up_proj.weight", "lm_head.weight", "embed_tokens.weight")
MEGATRON_ROW = ("o_proj.weight", "down_proj.weight")


def test_megatron_boxes_follow_megatron_partitioning(tmp_path):
    config = MAXTEXT_LLAMA  # row-parallel dims divide over tp, as Megatron needs
    model = import_model(tmp_path, config)
    prog = initc.load(compile_model(model, "pp=2,dp=2,tp=2", "megatron", tmp_path / "prog"))
    layers, pp, dp, tp = config["num_hidden_layers"], 2, 2, 2
    checked = 0
    for rank in range(pp * dp * tp):
        stage, tp_rank = rank // (dp * tp), rank % tp
        for param in prog.params(rank):
            if param.is_buffer:
                continue
            layer = re.search(r"\.layers\.(\d+)\.", param.name)
            if layer:
                on = int(layer.group(1)) // (layers // pp) == stage
            else:
                on = stage == (0 if param.name.startswith("model.embed") else pp - 1)
            shape, offset = list(param.global_shape), [0] * len(param.global_shape)
            if not on:
                offset[0], shape[0] = shape[0], 0
            elif param.name.endswith(MEGATRON_COLUMN):
                shape[0] //= tp
                offset[0] = tp_rank * shape[0]
            elif param.name.endswith(MEGATRON_ROW):
                shape[1] //= tp
                offset[1] = tp_rank * shape[1]
            else:
                assert param.name.endswith("norm.weight"), param.name
            assert (list(param.slice_offset), list(param.slice_shape)) == (offset, shape), \
                (rank, param.name, param.slice_offset, param.slice_shape)
            checked += 1
    prog.close()
    assert checked == 8 * (2 + 9 * layers + 1)


def test_megatron_refuses_fewer_key_value_heads_than_tp(tmp_path):
    # Megatron's linear_qkv, split over tp=2 with one query group: rank 0 holds q heads 0-2,
    # rank 1 q head 3 with all of k and v (megatron-core 0.16.1's GPTModel on this config, as
    # megatron_worker.py reads it), which no split of k_proj gives.
    model = import_model(tmp_path, dict(MAXTEXT_LLAMA, num_key_value_heads=1))
    result = subprocess.run([INITC, "compile", str(model), "--mesh", "pp=2,tp=2", "--shard",
                             "megatron", "-o", str(tmp_path / "prog")],
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"parameter 'model.layers.0.self_attn.k_proj.weight' holds 1 key/value "
                     r"head \(num_key_value_heads\), which mesh axis 'tp' of 2 does not divide",
                     result.stderr), result.stderr
    assert not (tmp_path / "prog").exists()


@pytest.mark.parametrize("config,mesh,shard,message", [
    ("llama_uneven.json", "dp_shard=2,tp=2", "torchtitan",
     r"parameter 'model.embed_tokens.weight' dim 0 \(1001\) is split over 'tp' \(2\) and then, "
     r"within each tp shard, over 'dp_shard' \(2\) by FSDP2: that nests evenly only when 4 "
     r"divides it"),
    ("gpt2_tiny.json", "dp=2,tp=2", "torchtitan",
     r"parameter 'transformer.wte.weight' is none of those torchtitan's llama plan"),
    ("mixtral_tiny.json", "dp=2", "megatron",
     r"parameter 'model.layers.0.mlp.gate.weight' is none of those Megatron's llama layers"),
    ("llama_uneven.json", "tp=2", "megatron",
     r"parameter 'model.embed_tokens.weight' dim 0 \(1001\) does not divide over mesh axis 'tp' "
     r"of 2"),
    ("llama_uneven.json", "pp=3", "megatron",
     r"mesh axis 'pp' has 3 pipeline stages but the model has 2 layers: Megatron gives every "
     r"stage the same number of layers"),
    ("llama_uneven.json", "ep=2,tp=2", "torchtitan",
     r"the mesh ep=2,tp=2 has axis 'ep', which that layout does not have"),
    ("llama_uneven.json", "stage=2,tensor=2", "maxtext",
     r"preset 'maxtext' does not place MaxText's pipeline stages"),
    ("llama_uneven.json", "fsdp=2,tensor=2", "maxtext",
     r"parameter 'model.embed_tokens.weight' dim 0 \(1001, logical axis 'vocab'\) is split over "
     r"mesh axes 'tensor' in 2 parts, which do not divide it"),
    ("gpt2_tiny.json", "fsdp=2", "maxtext",
     r"parameter 'transformer.wpe.weight' dim 0 has 'positions', which MaxText's "
     r"logical_axis_rules have no counterpart for"),
])
def test_a_preset_that_does_not_fit_names_the_parameter(tmp_path, config, mesh, shard, message):
    model = import_model(tmp_path, os.path.join(CONFIGS, config))
    result = subprocess.run([INITC, "compile", str(model), "--mesh", mesh, "--shard", shard,
                             "-o", str(tmp_path / "prog")], capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(message, result.stderr), result.stderr
    assert not (tmp_path / "prog").exists()
