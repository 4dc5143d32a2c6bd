"""initc-capture --hf on transformers' own model classes (tiny configs): the state-dict names,
shapes and dtypes of `from_config`'s model; deterministic elements bitwise equal to transformers'
eager init and random tensors equal in distribution (two-sample KS, two seeds); the same bits
from a 2x2 mesh on 4 ranks as from 1 rank; for the models `initc import hf` knows, the same
recipes as the import; and the --hf command line's bad input."""

import json
import os
import re
import subprocess
import sys

import pytest
import scipy.stats
import torch
from safetensors.torch import load_file

from conftest import INITC, ROOT, run

E2E_CONFIGS = os.path.join(ROOT, "tests", "e2e", "configs")
HF_CONFIGS = os.path.join(os.path.dirname(__file__), "data", "hf")
ARCHS = {
    "llama": os.path.join(E2E_CONFIGS, "llama_uneven.json"),
    "mistral": os.path.join(E2E_CONFIGS, "mistral_tiny.json"),
    "qwen2": os.path.join(E2E_CONFIGS, "qwen2_tiny.json"),
    "gpt2": os.path.join(E2E_CONFIGS, "gpt2_tiny.json"),
}
for _arch in ("qwen3", "phi3", "gemma3_text", "gpt_neox", "mixtral", "qwen3_moe", "bert", "t5",
              "vit", "deepseek_v3", "mamba"):
    ARCHS[_arch] = os.path.join(HF_CONFIGS, _arch + ".json")
IMPORTED = ("llama", "mistral", "qwen2", "gpt2", "mixtral", "qwen3_moe", "deepseek_v3")
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
          "f64": torch.float64, "i1": torch.bool, "i64": torch.int64}
PARAM = re.compile(r'^\s*init\.param @"?([^"\s]+)"? : tensor<([0-9x]*?)x?(f32|bf16|f16|f64|i1|i64)>(.*)$')


def capture(config, out, seed):
    """initc-capture --hf in this process (transformers is imported once for every model)."""
    from initc.capture.cli import main
    assert main(["--hf", config, "--seed", str(seed), "-o", str(out)]) == 0
    return out.read_text()


def eager_state_dict(config, seed):
    """The model transformers builds for `config` on the CPU, as initc-capture --hf builds it."""
    from initc.capture.hf import hf_factory
    factory, _ = hf_factory(config)
    torch.manual_seed(seed)
    with torch.no_grad():
        return factory().state_dict()


def params(text):
    """[(name, shape, dtype, rest of the line)] of every init.param line, in order."""
    out = []
    for line in text.splitlines():
        m = PARAM.match(line)
        if m:
            shape = tuple(int(s) for s in m.group(2).split("x")) if m.group(2) else ()
            out.append((m.group(1), shape, m.group(3), m.group(4)))
    return out


def compile_and_run(model, directory, mesh, shard, ranks):
    prog, ckpt = directory / ("prog-" + mesh), directory / ("ckpt-" + mesh)
    # Kernels for this CPU only (the bits never depend on the variant): half the compile time.
    run(INITC, "compile", model, "--mesh", mesh, "--shard", shard, "--target-cpu", "native",
        "-o", prog)
    command = [prog / "init", "--out", ckpt, "--threads", 1, "--quiet"]
    if ranks > 1:
        command = ["mpirun", "-np", ranks] + command
    run(*command, env=MPI_ENV)
    tensors = {}
    for name in sorted(os.listdir(ckpt)):
        if name.endswith(".safetensors"):
            tensors.update(load_file(str(ckpt / name)))
    return tensors


@pytest.fixture(scope="module", params=list(ARCHS))
def arch(request, tmp_path_factory):
    name, config = request.param, ARCHS[request.param]
    directory = tmp_path_factory.mktemp("hf-" + name)
    text = capture(config, directory / "model.mlir", 0)
    one = compile_and_run(directory / "model.mlir", directory, "dp=1", "replicated", 1)
    four = compile_and_run(directory / "model.mlir", directory, "dp=2,tp=2", "fsdp+tp", 4)
    capture(config, directory / "seed1.mlir", 1)
    (directory / "seed1").mkdir()
    seed1 = compile_and_run(directory / "seed1.mlir", directory / "seed1", "dp=1", "replicated", 1)
    eager = [eager_state_dict(config, seed) for seed in (0, 1, 2)]
    return dict(name=name, config=config, dir=directory, text=text, one=one, four=four,
                seeds=[one, seed1], eager=eager)


def test_names_shapes_dtypes_are_the_state_dicts(arch):
    state = arch["eager"][0]
    listed = params(arch["text"])
    assert [p[0] for p in listed] == list(state), "the IR's parameters are not state_dict()'s"
    for name, shape, dtype, rest in listed:
        assert shape == tuple(state[name].shape), name
        assert DTYPES[dtype] == state[name].dtype, name
        assert "nonpersistent" not in rest, name
    # Tied weights are stored once: the checkpoint holds the names that are not tied.
    stored = [p[0] for p in listed if "tied_to" not in p[3]]
    assert sorted(arch["one"]) == sorted(stored)
    tied = [p[0] for p in listed if "tied_to" in p[3]]
    for name in tied:
        target = re.search(r'tied_to @"?([^"\s]+)"?', dict((p[0], p[3]) for p in listed)[name]).group(1)
        assert state[name].data_ptr() == state[target].data_ptr(), (name, target)


def test_four_ranks_write_the_bits_of_one(arch):
    assert sorted(arch["four"]) == sorted(arch["one"])
    for name, t in arch["one"].items():
        assert torch.equal(arch["four"][name].view(torch.uint8), t.view(torch.uint8)), name


def _bits(t):
    """One row of bytes per element (0-d tensors too)."""
    return t.reshape(-1).contiguous().view(torch.uint8).view(t.numel(), t.element_size())


def transcendental_params(text):
    """Names of the parameters whose recipe takes a transcendental op (init IR's own, rng.md
    rule 7, within 1 ulp of torch's)."""
    out, name = set(), None
    for line in text.splitlines():
        m = PARAM.match(line)
        if m:
            name = m.group(1)
        elif name and re.search(r"= init\.(exp|log|expm1|log1p|erfinv) ", line):
            out.add(name)
    return out


def ulps(a, b):
    """|a - b| in units in the last place, elementwise (floats of one sign order as integers)."""
    ints = {torch.float32: torch.int32, torch.float64: torch.int64, torch.bfloat16: torch.int16,
            torch.float16: torch.int16}[a.dtype]
    return (a.view(ints).long() - b.view(ints).long()).abs()


def test_values_match_transformers(arch):
    """Elements equal in two eager seeds are deterministic: bitwise equal here (within 1 ulp
    where the recipe takes a transcendental function); the others are random: the same
    distribution as transformers' (KS, p >= 1e-3, two seeds each)."""
    e0, e1, e2 = arch["eager"]
    transcendental = transcendental_params(arch["text"])
    checked_random = 0
    for name, ours in arch["one"].items():
        ref = e0[name]
        assert ours.dtype == ref.dtype and ours.shape == ref.shape, name
        same = (_bits(e0[name]) == _bits(e1[name])).all(dim=-1)
        fixed = same.view(ref.shape)
        if name in transcendental:
            if fixed.any():
                assert ulps(ours[fixed], ref[fixed]).max().item() <= 1, \
                    "%s: deterministic elements more than 1 ulp from transformers'" % name
        else:
            assert torch.equal(_bits(ours)[same], _bits(ref)[same]), \
                "%s: deterministic elements differ from transformers'" % name
        if fixed.all():
            continue
        checked_random += 1
        for seed, (mine, theirs) in enumerate(zip(arch["seeds"], (e1, e2))):
            a = mine[name][~fixed].double().numpy()
            b = theirs[name][~fixed].double().numpy()
            p = scipy.stats.ks_2samp(a, b).pvalue
            assert p >= 1e-3, "%s (seed %d): KS p = %g: not transformers' distribution" % (name, seed, p)
    assert checked_random > 0


def expressions(text):
    """{name: (shape and dtype, how it is stored, the yielded value as one expression)} of a
    module printed by initc-opt, axes left out (the capture and the import name them
    differently; they choose a sharding, never a value)."""
    out, name, defs, head = {}, None, {}, None
    for line in text.splitlines():
        m = PARAM.match(line)
        if m:
            rest = re.sub(r' axes \[[^]]*\]', "", m.group(4)).rstrip(" {")
            name, defs, head = m.group(1), {}, (m.group(2), m.group(3), rest.strip())
            if "tied_to" in rest:
                out[name] = (head, None)
            continue
        d = re.match(r'^\s*(%\d+) = (.*)$', line)
        if d and name:
            defs[d.group(1)] = d.group(2)
        y = re.match(r'^\s*init\.yield (%\d+)', line)
        if y and name:
            def expand(v):
                return re.sub(r'%\d+', lambda m: "(" + expand(m.group(0)) + ")", defs[v])
            out[name] = (head, expand(y.group(1)))
            name = None
    return out


@pytest.mark.parametrize("name", IMPORTED)
def test_capture_and_import_agree_on_every_recipe(name, tmp_path):
    config = ARCHS[name]
    captured = tmp_path / "captured.mlir"
    capture(config, captured, 7)
    imported = tmp_path / "imported.mlir"
    run(INITC, "import", "hf", config, "--seed", "7", "-o", imported)
    recipes = []
    for path in (captured, imported):
        opt = tmp_path / (path.stem + ".opt.mlir")
        run(os.path.join(os.path.dirname(INITC), "initc-opt"), "--init-eliminate-dead-inits",
            path, "-o", opt)
        recipes.append(expressions(opt.read_text()))
    ours, theirs = recipes
    # The import also computes the non-persistent buffers forward() needs (rotary inv_freq,
    # gpt2's masks); state_dict() has none, so the capture has none.
    theirs = {k: v for k, v in theirs.items() if "nonpersistent" not in v[0][2]}
    assert list(ours) == list(theirs)
    for param in ours:
        assert ours[param] == theirs[param], param
    assert "init.seed 7" in captured.read_text()


# -- bad input ------------------------------------------------------------------------------------

def capture_cli(tmp_path, *args):
    out = tmp_path / "out.mlir"
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "initc-capture"),
                             *map(str, args), "-o", str(out)], capture_output=True, text=True,
                            cwd=tmp_path)
    return result, out


def test_console_script_matches_in_process_capture(tmp_path):
    result, out = capture_cli(tmp_path, "--hf", ARCHS["gpt2"], "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert out.read_text() == capture(ARCHS["gpt2"], tmp_path / "again.mlir", 3)


def capture_in_process(capsys, tmp_path, *args):
    from initc.capture.cli import main
    out = tmp_path / "out.mlir"
    code = main([*map(str, args), "-o", str(out)])
    lines = [l for l in capsys.readouterr().err.splitlines() if l.startswith("initc-capture:")]
    return code, lines, out


@pytest.mark.parametrize("config, message", [
    ({"model_type": "no_such_model", "hidden_size": 8},
     "model_type 'no_such_model' is not a model transformers"),
    ({"hidden_size": 8}, 'has no "model_type"'),
    ({"model_type": "llama", "auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}},
     "which the capture runs only with --trust-remote-code"),
    ([1, 2], "must hold a JSON object"),
])
def test_bad_config_is_one_message_and_no_file(capsys, tmp_path, config, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, lines, out = capture_in_process(capsys, tmp_path, "--hf", path)
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("initc-capture: error: --hf: "), lines
    assert message in lines[0], lines
    assert not out.exists() and os.listdir(tmp_path) == ["config.json"]


@pytest.mark.parametrize("args, message", [
    (["--hf", "missing.json"], "--hf: no file 'missing.json'"),
    (["--hf", "broken.json"], "is not a JSON config"),
    (["--hf", ARCHS["llama"], "--kwargs", '{"a": 1}'], "--kwargs goes with --factory"),
    (["--hf", ARCHS["llama"], "--auto-class", "AutoNothing"], "no auto class 'AutoNothing'"),
    (["--factory", "x.py:f", "--trust-remote-code"], "go with --hf"),
])
def test_bad_command_lines(capsys, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.json").write_text("{")
    code, lines, out = capture_in_process(capsys, tmp_path, *args)
    assert code == 1 and len(lines) == 1 and message in lines[0], lines
    assert not out.exists()


@pytest.mark.parametrize("body, message", [
    ("    raise RuntimeError('no such layer')\n",
     "the factory raised RuntimeError: no such layer (at "),
    ("    m = nn.Linear(4, 4)\n    m.weight.data = torch.randn(4, 4).abs()\n    return m\n",
     "torch.Tensor.abs has no init IR counterpart"),
    ("    m = nn.Linear(4, 4)\n    m.weight.data.exponential_()\n    return m\n",
     "torch.Tensor.exponential_ has no init IR counterpart"),
])
def test_bad_factory_is_one_message_and_no_file(tmp_path, body, message):
    (tmp_path / "bad.py").write_text("import torch\nimport torch.nn as nn\n\n\ndef build():\n" + body)
    result, out = capture_cli(tmp_path, "--factory", "bad.py:build")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert "bad.py:" in result.stderr
    assert not out.exists()


# -- ops of real constructors ---------------------------------------------------------------------

OPS = os.path.join(os.path.dirname(__file__), "data", "capture_ops.py")


def import_capture_ops():
    """data/capture_ops.py as a module, for the eager reference."""
    sys.path.insert(0, os.path.dirname(OPS))
    try:
        import capture_ops
    finally:
        sys.path.pop(0)
    return capture_ops


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_pow_forms_give_torchs_bits(tmp_path, dtype):
    """x ** 2, 3, 0.5, -0.5, -1, -2, 0, 1 and constant powers, as buffers: bitwise torch's."""
    from initc.capture.cli import main
    model = tmp_path / "powers.mlir"
    assert main(["--factory", OPS + ":powers", "--kwargs", json.dumps({"dtype": dtype}),
                 "-o", str(model)]) == 0
    ours = compile_and_run(model, tmp_path, "dp=1", "replicated", 1)
    capture_ops = import_capture_ops()
    eager = capture_ops.powers(dtype).state_dict()
    buffers = [k for k in eager if not k.startswith("lin.")]
    assert len(buffers) == 10
    ints = {torch.float32: torch.int32, torch.bfloat16: torch.int16, torch.float16: torch.int16}
    for name in buffers:
        a, b = ours[name], eager[name]
        if name in ("root", "rsqrt"):
            # torch's vectorized sqrt is within 1 ulp of the correctly rounded one, as init.sqrt
            # is (the values here are positive: bit patterns order them).
            ulps = (a.view(ints[a.dtype]).long() - b.view(ints[b.dtype]).long()).abs()
            assert ulps.max() <= 1, "%s: %s != %s" % (name, a, b)
        else:
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), "%s: %s != %s" % (name, a, b)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_other_powers_within_one_ulp_of_torch(tmp_path, dtype):
    """Every other power (RoPE's 10000 ** (arange / dim) kept as a persistent buffer, x ** 1.5,
    number ** tensor, tensor ** tensor, negative bases) is init.pow: within 1 ulp of torch's own,
    with torch's signs."""
    from initc.capture.cli import main
    model = tmp_path / "general_powers.mlir"
    assert main(["--factory", OPS + ":general_powers", "--kwargs", json.dumps({"dtype": dtype}),
                 "-o", str(model)]) == 0
    assert "init.pow" in model.read_text()
    ours = compile_and_run(model, tmp_path, "dp=1", "replicated", 1)
    eager = import_capture_ops().general_powers(dtype).state_dict()
    assert sorted(ours) == sorted(eager) and len(eager) == 10
    ints = {torch.float32: torch.int32, torch.bfloat16: torch.int16}
    exact = 0
    for name in eager:
        a, b = ours[name], eager[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert torch.equal(torch.signbit(a), torch.signbit(b)), "%s: %s != %s" % (name, a, b)
        ulps = (a.abs().view(ints[a.dtype]).long() - b.abs().view(ints[b.dtype]).long()).abs()
        assert ulps.max() <= 1, "%s: %s != %s" % (name, a, b)
        exact += int((ulps == 0).sum())
    assert exact >= 0.9 * 10 * 64  # mostly the very bits


def test_deterministic_ops_give_torchs_bits(tmp_path):
    """cat, stack, repeat, views of aranges, masked_fill, outer, expand, clamp: bitwise
    torch's; exp, log, expm1 and log1p (init IR's own, rng.md) within 1 ulp."""
    from initc.capture.cli import main
    model = tmp_path / "ops.mlir"
    assert main(["--factory", OPS + ":ops", "-o", str(model)]) == 0
    ours = compile_and_run(model, tmp_path, "dp=1", "replicated", 1)
    capture_ops = import_capture_ops()
    eager = capture_ops.ops().state_dict()
    assert sorted(ours) == sorted(eager)
    for name, b in eager.items():
        a = ours[name]
        if name in ("exp", "log", "expm1", "log1p", "expm1_", "log1p_"):
            assert a.dtype == b.dtype and ulps(a, b).max() <= 1, "%s: %s != %s" % (name, a, b)
        else:
            assert a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8)), \
                "%s: %s != %s" % (name, a, b)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_linspace_and_cumsum_give_torchs_bits(tmp_path, dtype):
    """torch.linspace (both halves, a viewed one) and cumsum of constants and aranges: bitwise
    torch's CPU kernels (linspace's fused multiply-add as on every x86 CPU with AVX2)."""
    from initc.capture.cli import main
    model = tmp_path / "linspaces.mlir"
    assert main(["--factory", OPS + ":linspaces", "--kwargs", json.dumps({"dtype": dtype}),
                 "-o", str(model)]) == 0
    assert "init.linspace dim 1 start -1.0 end 1.0" in model.read_text()
    ours = compile_and_run(model, tmp_path, "dp=1", "replicated", 1)
    capture_ops = import_capture_ops()
    eager = capture_ops.linspaces(dtype).state_dict()
    buffers = [k for k in eager if not k.startswith("lin.")]
    assert len(buffers) == len(capture_ops.LINSPACES) + 7
    for name in buffers:
        a, b = ours[name], eager[name]
        assert a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8)), \
            "%s: %s != %s" % (name, a, b)


def test_linspace_and_cumsum_without_counterpart_are_refused(capsys, tmp_path):
    (tmp_path / "bad.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "def build(op):\n"
        "    m = nn.Linear(4, 4)\n"
        "    if op == 'f64':\n"
        "        m.register_buffer('b', torch.linspace(0, 1, 8, dtype=torch.float64))\n"
        "    else:\n"
        "        m.register_buffer('b', torch.randn(8).cumsum(0))\n"
        "    return m\n")
    for op, message in [("f64", "torch.linspace in f64 (init.linspace makes f32, bf16 and f16"),
                        ("cumsum", "torch.cumsum of a tensor other than a constant or an "
                                   "integer arange")]:
        code, lines, out = capture_in_process(capsys, tmp_path, "--factory",
                                              tmp_path / "bad.py:build", "--kwargs",
                                              json.dumps({"op": op}))
        assert code == 1 and len(lines) == 1 and not out.exists(), lines
        assert message in lines[0] and "bad.py:" in lines[0], lines


def test_concatenated_random_parts_have_torchs_distributions(tmp_path):
    """torch.cat / stack of random draws and constants: the constants bitwise, each random part
    in its own distribution (KS against eager torch, two seeds), the same bits on 4 ranks."""
    from initc.capture.cli import main
    capture_ops = import_capture_ops()
    parts = {"cat": [(slice(0, 64), slice(None)), (slice(72, 128), slice(None))],
             "stack": [(slice(None), 0), (slice(None), 2)],
             "fans": [(slice(None), slice(0, 64)), (slice(None), slice(64, 112))]}
    constants = {"cat": ((slice(64, 72), slice(None)), 0.0), "stack": ((slice(None), 1), 1.0)}
    runs = []
    for seed in (0, 1):
        model = tmp_path / ("parts-%d.mlir" % seed)
        assert main(["--factory", OPS + ":random_parts", "--seed", str(seed), "-o", str(model)]) == 0
        (tmp_path / str(seed)).mkdir()
        runs.append(compile_and_run(model, tmp_path / str(seed), "dp=1", "replicated", 1))
    four = compile_and_run(tmp_path / "parts-0.mlir", tmp_path, "dp=2,tp=2", "fsdp+tp", 4)
    for name, t in runs[0].items():
        assert torch.equal(four[name].view(torch.uint8), t.view(torch.uint8)), name
    for seed, ours in enumerate(runs):
        torch.manual_seed(seed)
        eager = capture_ops.random_parts().state_dict()
        assert sorted(ours) == sorted(eager)
        for name, (where, value) in constants.items():
            assert torch.equal(ours[name][where], torch.full_like(eager[name][where], value)), name
        for name, regions in parts.items():
            for where in regions:
                a, b = ours[name][where].reshape(-1).double(), eager[name][where].reshape(-1).double()
                p = scipy.stats.ks_2samp(a.numpy(), b.numpy()).pvalue
                assert p >= 1e-3, "%s%s (seed %d): KS p = %g" % (name, where, seed, p)


def test_a_random_part_used_twice_is_refused(capsys, tmp_path):
    code, lines, out = capture_in_process(capsys, tmp_path, "--factory", OPS + ":random_parts",
                                          "--kwargs", '{"repeated": true}')
    assert code == 1 and len(lines) == 1 and not out.exists(), lines
    assert "twice holds some elements of the random tensor drawn at " in lines[0], lines
    assert "capture_ops.py:" in lines[0] and "more than once" in lines[0], lines


def test_distributions_take_constant_tensor_arguments(capsys, tmp_path):
    code, lines, out = capture_in_process(capsys, tmp_path, "--factory", OPS + ":tensor_arguments")
    assert code == 0, lines
    text = out.read_text()
    assert "init.uniform -0.5, 0.5 stream 0 : tensor<64x64xf32>" in text
    assert "init.normal mean 0.0 std 0.25 stream 0 : tensor<64x64xf32>" in text
    assert "init.uniform 1.0, 2.0 stream 0 : tensor<64xf32>" in text
    out.unlink()
    code, lines, out = capture_in_process(capsys, tmp_path, "--factory", OPS + ":tensor_arguments",
                                          "--kwargs", '{"random_std": true}')
    assert code == 1 and len(lines) == 1 and not out.exists()
    assert "capture_ops.py:" in lines[0] and "torch.nn.init.normal_ with a tensor argument that " \
        "is not a known constant" in lines[0], lines


def test_an_op_without_counterpart_names_the_parameter_and_line(capsys, tmp_path):
    (tmp_path / "blocks.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n"
        "        with torch.no_grad():\n"
        "            self.proj.bias.copy_(torch.rand(4).sinh())\n\n\n"
        "def build():\n"
        "    return nn.ModuleDict({'layers': nn.ModuleList([Block(), Block()])})\n")
    code, lines, out = capture_in_process(capsys, tmp_path, "--factory",
                                          tmp_path / "blocks.py:build")
    assert code == 1 and len(lines) == 1 and not out.exists(), lines
    assert re.match(r"initc-capture: error: model\.layers\.0\.proj: torch\.Tensor\.sinh has no "
                    r"init IR counterpart \(tensor layers\.0\.proj\.bias, at .*blocks\.py:10\)$",
                    lines[0]), lines


def test_dtype_option_is_from_configs(capsys, tmp_path):
    code, lines, out = capture_in_process(capsys, tmp_path, "--hf", ARCHS["llama"], "--dtype",
                                          "bfloat16")
    assert code == 0, lines
    from initc.capture.hf import hf_factory
    factory, _ = hf_factory(ARCHS["llama"], dtype="bfloat16")
    state = factory().state_dict()
    assert [(p[0], p[1], DTYPES[p[2]]) for p in params(out.read_text())] == \
        [(k, tuple(v.shape), v.dtype) for k, v in state.items()]
    assert all(v.dtype == torch.bfloat16 for v in state.values())
