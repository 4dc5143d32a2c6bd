"""`initc import hf` of the mixture-of-experts models against transformers' own model built from
the same config.json on the meta device: the state dict's names in order, shapes, dtypes (f32
and bf16) and which tensors are buffers, and the parameter count, for the tiny test configs (one
with a hidden size that is not a multiple of its heads) and the published Mixtral-8x7B,
Qwen3-30B-A3B and DeepSeek-V3 configs."""

import os
import re

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from conftest import INITC, ROOT, run

CONFIGS = {
    "mixtral_tiny": "tests/e2e/configs/mixtral_tiny.json",
    "qwen3_moe_tiny": "tests/e2e/configs/qwen3_moe_tiny.json",
    "deepseek_v3_tiny": "tests/e2e/configs/deepseek_v3_tiny.json",
    # hidden_size 100 over 6 heads: MixtralConfig floors the head dimension to 16.
    "mixtral_uneven_heads": "tests/e2e/configs/mixtral_uneven_heads.json",
    "mixtral-8x7b": "benchmarks/configs/mixtral-8x7b.json",
    "qwen3-30b-a3b": "benchmarks/configs/qwen3-30b-a3b.json",
    "deepseek-v3": "benchmarks/configs/deepseek-v3.json",
}
# The model cards' totals (DeepSeek-V3's 671B leaves out its multi-token prediction module,
# which transformers does not build), as (figure, its last digit's unit): the cards round, so a
# count matches when it rounds to the card's figure.
PUBLISHED = {"mixtral-8x7b": (46.7e9, 0.1e9), "qwen3-30b-a3b": (30.5e9, 0.1e9),
             "deepseek-v3": (671e9, 1e9)}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
PARAM = re.compile(r'^\s*init\.param @"?([^"\s]+)"? : tensor<([0-9x]*?)x?(f32|bf16)>(.*)$')


def imported(config, dtype, tmp_path):
    """[(name, shape, dtype, buffer, nonpersistent, tied)] of every init.param, in order."""
    out = tmp_path / "model.mlir"
    run(INITC, "import", "hf", os.path.join(ROOT, config), "--dtype", dtype, "-o", out)
    params = []
    for line in out.read_text().splitlines():
        m = PARAM.match(line)
        if m:
            rest = m.group(4)
            params.append((m.group(1), tuple(int(s) for s in m.group(2).split("x")),
                           DTYPES[m.group(3)], " buffer" in rest, "nonpersistent" in rest,
                           "tied_to" in rest))
    return params


def transformers_model(config, dtype):
    cfg = AutoConfig.from_pretrained(os.path.join(ROOT, config))
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(cfg, dtype=DTYPES[dtype])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name", list(CONFIGS))
def test_state_dict_is_transformers(name, dtype, tmp_path):
    ours = imported(CONFIGS[name], dtype, tmp_path)
    model = transformers_model(CONFIGS[name], dtype)
    state = model.state_dict()
    buffers = dict(model.named_buffers())
    persistent = [p for p in ours if not p[4]]
    assert [p[0] for p in persistent] == list(state), "not state_dict()'s names and order"
    for name_, shape, type_, buffer, _, _ in persistent:
        assert shape == tuple(state[name_].shape), name_
        assert type_ == state[name_].dtype, (name_, type_, state[name_].dtype)
        assert buffer == (name_ in buffers), name_
    # The buffers forward() computes and no checkpoint holds are transformers' too.
    for name_, shape, type_, buffer, nonpersistent, _ in ours:
        if nonpersistent:
            assert buffer and name_ in buffers and name_ not in state, name_
            assert shape == tuple(buffers[name_].shape) and type_ == buffers[name_].dtype, name_
    count = sum(p.numel() for p in model.parameters())
    assert sum(torch.Size(p[1]).numel() for p in ours if not p[3] and not p[5]) == count
    if name in PUBLISHED:
        figure, unit = PUBLISHED[name]
        assert abs(count - figure) <= unit / 2, count
