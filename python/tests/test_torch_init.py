"""initc.torch.init_: a module's parameters filled in the training process, bitwise the 1-device
prog/init output, whatever the module's sharding (FSDP2, tensor parallel, both; under torchrun
with gloo on the CPU) and whatever mesh the program was compiled for."""

import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

import initc  # noqa: E402
import initc.torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "..", "tests", "e2e", "configs", "llama_uneven.json")


def bits(tensor):
    return tensor.detach().contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32,
                                              8: torch.int64}[tensor.element_size()])


def meta_llama():
    config = transformers.LlamaConfig.from_json_file(CONFIG)
    with torch.device("meta"):
        return transformers.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)


def test_meta_module_filled_whole_bitwise(mesh_program_bf16, reference_bf16):
    reference_prog, reference = reference_bf16
    model = meta_llama()
    # HF's rotary embedding keeps a second copy no checkpoint or program has.
    with pytest.warns(UserWarning, match="original_inv_freq"):
        assert initc.torch.init_(model, mesh_program_bf16, threads=1) is model
    expected = load_file(str(reference))
    state = model.state_dict()
    assert sorted(state) == sorted(expected)
    for name, value in state.items():
        assert not value.is_meta
        assert bits(value).equal(bits(expected[name])), name
    with initc.load(reference_prog) as prog:  # 1 device: rank 0 holds the whole buffer
        inv_freq = prog.array("model.rotary_emb.inv_freq")
    assert model.model.rotary_emb.inv_freq.numpy().tobytes() == inv_freq.tobytes()


def test_names_map_and_tied_parameters_are_filled_once(mesh_program_bf16, reference_bf16):
    _, reference = reference_bf16
    expected = load_file(str(reference))

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(1001, 64, dtype=torch.bfloat16)
            self.head = torch.nn.Linear(64, 1001, bias=False, dtype=torch.bfloat16)
            self.head.weight = self.embed.weight

    with torch.device("meta"):
        module = Tied()
    initc.torch.init_(module, mesh_program_bf16, names={"embed.weight": "lm_head.weight",
                                                        "head.weight": "lm_head.weight"})
    assert module.head.weight is module.embed.weight  # to_empty did not untie them
    assert bits(module.embed.weight).equal(bits(expected["lm_head.weight"]))


def test_refusals_write_nothing(mesh_program_bf16):
    with initc.load(mesh_program_bf16) as prog:
        def fresh():
            module = torch.nn.Linear(64, 64, bias=False, dtype=torch.bfloat16)
            torch.nn.init.zeros_(module.weight)
            return module
        q = "model.layers.0.self_attn.q_proj.weight"
        module = fresh()
        with pytest.raises(KeyError, match="no parameter 'weight'"):
            initc.torch.init_(module, prog)
        with pytest.raises(KeyError, match="does not have"):
            initc.torch.init_(module, prog, names={"bias": q})
        module = torch.nn.Linear(64, 32, bias=False, dtype=torch.bfloat16)
        with pytest.raises(ValueError, match=r"shape \[32, 64\].*\[64, 64\]"):
            initc.torch.init_(module, prog, names={"weight": q})
        module = torch.nn.Linear(64, 64, bias=False)
        with pytest.raises(TypeError, match="torch.float32.*BF16"):
            initc.torch.init_(module, prog, names={"weight": q})

        class Two(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = fresh()
                self.b = fresh()
        two = Two()
        with pytest.raises(ValueError, match="two tensors but both map"):
            initc.torch.init_(two, prog, names={"a.weight": q, "b.weight": q})
        assert not two.a.weight.any() and not two.b.weight.any()


@pytest.mark.parametrize("mode,processes", [("fsdp", 1), ("fsdp", 4), ("tp", 2), ("fsdp+tp", 4)])
def test_distributed_shards_bitwise(mode, processes, mesh_program_bf16, reference_bf16):
    _, reference = reference_bf16
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # The package under test, as this process imports it.
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         "--nproc-per-node", str(processes), os.path.join(HERE, "torch_dist_worker.py"), mode,
         str(mesh_program_bf16), str(reference), CONFIG],
        capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    # The processes share stdout, so one rank's line may run into another's: count the ranks.
    ranks = set(re.findall(r"rank (\d+): \d+ tensors \(\d+ DTensors\) bitwise equal", result.stdout))
    assert ranks == {str(r) for r in range(processes)}, result.stdout + result.stderr


def test_a_failing_fill_says_what_was_filled(tmp_path):
    from safetensors.torch import save_file
    from conftest import INITC, run
    base = tmp_path / "base.safetensors"
    save_file({"b": torch.ones(4, 3)}, str(base))
    model = tmp_path / "model.mlir"
    model.write_text("""init.seed 1
init.param @a : tensor<4x3xf32> {
  %%0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x3xf32>
  init.yield %%0 : tensor<4x3xf32>
}
init.param @b : tensor<4x3xf32> {
  %%0 = init.load "%s" ["b"] : tensor<4x3xf32>
  init.yield %%0 : tensor<4x3xf32>
}
""" % base)
    run(INITC, "compile", model, "-o", tmp_path / "prog")
    base.unlink()  # the program opens; filling the loaded tensor fails

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.zeros(4, 3))
            self.b = torch.nn.Parameter(torch.zeros(4, 3))
    module = Two()
    # Every box is checked before any is written: the unreadable base is found first.
    with pytest.raises(initc.Error, match=r"boxes\[1\]: .*\(none of the module's 2 tensors were "
                                          r"filled\)") as e:
        initc.torch.init_(module, tmp_path / "prog")
    assert e.value.status == "INITRT_BAD_BASE"
    assert not module.a.any() and not module.b.any()


def test_layout_and_placement_refusals_write_nothing(mesh_program_bf16):
    # A destination initc cannot write in place, a DTensor whose placements do not fit its local
    # tensor, and a Partial one: each a ValueError naming the parameter, before any write.
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor, Partial, Shard, init_device_mesh
    q = "model.layers.0.self_attn.q_proj.weight"
    k = "model.layers.0.self_attn.k_proj.weight"

    class Two(torch.nn.Module):
        def __init__(self, second):
            super().__init__()
            self.first = torch.nn.Parameter(torch.zeros(32, 64, dtype=torch.bfloat16))
            self.second = torch.nn.Parameter(second)

    names = {"first": k, "second": q}
    with initc.load(mesh_program_bf16) as prog:
        transposed = Two(torch.zeros(64, 64, dtype=torch.bfloat16).t())
        with pytest.raises(ValueError, match=re.escape(q) + r": the local tensor's strides "
                           r"\[1, 64\] .* not row-major"):
            initc.torch.init_(transposed, prog, names=names)
        assert not transposed.first.any() and not transposed.second.any()
        # Every other column: the innermost dim is not contiguous.
        gapped = Two(torch.zeros(64, 128, dtype=torch.bfloat16)[:, ::2])
        with pytest.raises(ValueError, match=re.escape(q) + ": the local tensor's strides"):
            initc.torch.init_(gapped, prog, names=names)
        assert not gapped.first.any()

        store = dist.HashStore()
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            mesh = init_device_mesh("cpu", (1,))
            # Shard(0) on one device places the whole 64 x 64 tensor, the local one is 32 x 64.
            half = DTensor.from_local(torch.zeros(32, 64, dtype=torch.bfloat16), mesh,
                                      [Shard(0)], run_check=False, shape=torch.Size([64, 64]),
                                      stride=(64, 1))
            module = Two(half)
            with pytest.raises(ValueError, match=re.escape(q) + r": the DTensor's local tensor "
                               r"has shape \[32, 64\], but its placements .* locate 4096"):
                initc.torch.init_(module, prog, names=names)
            assert not module.first.any()
            partial = DTensor.from_local(torch.zeros(64, 64, dtype=torch.bfloat16), mesh,
                                         [Partial()], run_check=False)
            module = Two(partial)
            with pytest.raises(ValueError, match=re.escape(q) + ": a DTensor with Partial"):
                initc.torch.init_(module, prog, names=names)
            assert not module.first.any()
        finally:
            dist.destroy_process_group()


# Scratch beyond a process's shards while it fills them: the runtime computes straight into the
# destination (no orthogonal parameter here, the one whole-tensor scratch), so what remains is
# thread stacks and malloc arenas of the fill's threads and DTensor/FSDP bookkeeping, well under
# this; a gathered or staged copy of the model (44 MB, 22 MB per process) would exceed it.
SCRATCH_BOUND = 16 << 20


def test_peak_memory_is_the_shards_plus_bounded_scratch(medium_program_bf16):
    prog, config = medium_program_bf16
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(initc.__file__))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         os.path.join(HERE, "memory_worker.py"), "torch", str(prog), str(config)],
        capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.findall(r"rank (\d): peak rise (\d+) bytes, shards (\d+) bytes", result.stdout)
    assert sorted(r for r, _, _ in found) == ["0", "1"], result.stdout + result.stderr
    for rank, rise, shards in found:
        assert 20 << 20 < int(shards) < 24 << 20, (rank, shards)  # half the model each
        assert int(rise) <= int(shards) + SCRATCH_BOUND, (
            "rank %s: the peak rose %d bytes for %d bytes of shards" % (rank, int(rise),
                                                                       int(shards)))
