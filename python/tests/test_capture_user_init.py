"""initc-capture --factory over transformers models whose init the user changed after
construction (data/user_init_models.py): model.apply(user_init), a subclass overriding
_init_weights, a module whose reset_parameters is overridden and called. The captured program
writes the user's values (deterministic elements bitwise equal to the eager model's, random
ones the same distribution by two-sample KS) and its recipes differ from the unchanged model's
exactly where the user changed the init."""

import os

import pytest
import scipy.stats
import torch

from conftest import INITC, run
from test_capture_hf import _bits, compile_and_run, expressions

MODELS = os.path.join(os.path.dirname(__file__), "data", "user_init_models.py")
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LAYERS = range(2)
LINEAR_WEIGHTS = {"model.layers.%d.%s.%s.weight" % (i, "self_attn" if p[0] in "qkvo" else "mlp", p)
                  for i in LAYERS for p in LINEARS} | {"lm_head.weight"}
NORMS = {"model.layers.%d.%s.weight" % (i, n) for i in LAYERS
         for n in ("input_layernorm", "post_attention_layernorm")} | {"model.norm.weight"}
EMBEDDING = {"model.embed_tokens.weight"}
# The parameters whose recipe each change of the init changes (the others keep transformers').
CHANGED = {
    "applied": LINEAR_WEIGHTS | NORMS,
    "subclassed": LINEAR_WEIGHTS | NORMS | EMBEDDING,
    # RMSNorm has no reset_parameters; nn.Linear's (kaiming) and nn.Embedding's (normal(0, 1))
    # replace transformers' normal(0, 0.02); lm_head (and its new bias) is FanOutLinear's.
    "reset": LINEAR_WEIGHTS | EMBEDDING | {"lm_head.bias"},
}


def factory(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location("user_init_models", MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def capture(name, out, seed=0):
    from initc.capture.cli import main
    assert main(["--factory", MODELS + ":" + name, "--seed", str(seed), "-o", str(out)]) == 0
    return out


def recipes(path, directory):
    opt = directory / (path.stem + ".opt.mlir")
    run(os.path.join(os.path.dirname(INITC), "initc-opt"), "--init-eliminate-dead-inits", path,
        "-o", opt)
    return expressions(opt.read_text())


def eager(name, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        return factory(name)().state_dict()


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stock")
    return recipes(capture("stock", directory / "stock.mlir"), directory)


@pytest.fixture(scope="module", params=sorted(CHANGED))
def case(request, tmp_path_factory):
    name = request.param
    directory = tmp_path_factory.mktemp(name)
    model = capture(name, directory / "model.mlir")
    written = compile_and_run(model, directory, "dp=1", "replicated", 1)
    return dict(name=name, recipes=recipes(model, directory), written=written,
                eager=[eager(name, seed) for seed in (0, 1, 2)])


def test_recipes_differ_from_the_unchanged_model_where_the_user_changed_them(case, stock):
    ours = case["recipes"]
    changed = {p for p in ours if p not in stock or ours[p] != stock[p]}
    assert changed == CHANGED[case["name"]]
    assert set(ours) == set(case["eager"][0])


def test_values_are_the_users(case):
    """Elements equal under two eager seeds are deterministic: bitwise equal here; the others
    are random: the eager model's distribution (KS, p >= 1e-3)."""
    e0, e1, e2 = case["eager"]
    assert sorted(case["written"]) == sorted(e0)
    random = 0
    for name, ours in case["written"].items():
        ref = e0[name]
        assert ours.dtype == ref.dtype and ours.shape == ref.shape, name
        same = (_bits(e0[name]) == _bits(e1[name])).all(dim=-1)
        assert torch.equal(_bits(ours)[same], _bits(ref)[same]), \
            "%s: deterministic elements differ from the eager model's" % name
        fixed = same.view(ref.shape)
        if fixed.all():
            continue
        random += 1
        p = scipy.stats.ks_2samp(ours[~fixed].double().numpy(),
                                 e2[name][~fixed].double().numpy()).pvalue
        assert p >= 1e-3, "%s: KS p = %g: not the eager model's distribution" % (name, p)
    assert random > 0
