"""test_jax_init.py's torchax process (8 host devices): a PyTorch LlamaForCausalLM run under
torchax gets its parameters as sharded jax.Arrays from initc.jax.init by state-dict name, bitwise
the PyTorch path's (initc.torch.init_), and its forward under torchax matches PyTorch's.

    python torchax_worker.py PROG CONFIG"""

import sys

import jax
import numpy as np
import torch
import torchax
import torchax.interop
import transformers
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import initc
import initc.jax
import initc.torch


def meta_llama(config):
    with torch.device("meta"):
        return transformers.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)


def main():
    prog_dir, config_path = sys.argv[1:3]
    config = transformers.LlamaConfig.from_json_file(config_path)
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(AxisType.Auto,) * 2)
    model = meta_llama(config)
    with initc.load(prog_dir) as prog:
        # Every tensor by its state-dict name; the non-persistent rotary buffer as well, and
        # HF's second copy of it from the same program tensor.
        names = list(model.state_dict()) + ["model.rotary_emb.inv_freq"]
        shardings = {name: NamedSharding(mesh, P(None, "tp") if len(prog.param(name)
                                                                   .global_shape) == 2 else P())
                     for name in names}
        arrays = initc.jax.init(prog, shardings, threads=1)
        reference = initc.torch.init_(meta_llama(config), prog, threads=1)
    expected = reference.state_dict()
    for name in expected:
        assert arrays[name].sharding == shardings[name], name
        assert np.asarray(arrays[name]).tobytes() == \
            expected[name].view(torch.int16).numpy().tobytes(), name + " differs"

    env = torchax.default_env()
    params = {name: env.j2t_iso(arrays[name]) for name in expected}
    inv_freq = env.j2t_iso(arrays["model.rotary_emb.inv_freq"])
    buffers = {"model.rotary_emb.inv_freq": inv_freq,
               "model.rotary_emb.original_inv_freq": inv_freq}
    tokens = np.arange(16).reshape(2, 8) % config.vocab_size
    with env:
        logits = torchax.interop.JittableModule(model).functional_call(
            "forward", params, buffers, env.j2t_iso(jax.numpy.asarray(tokens))).logits
    got = torch.from_numpy(np.array(env.t2j_iso(logits).astype(np.float32)))
    with torch.no_grad():
        want = reference(input_ids=torch.from_numpy(tokens)).logits.float()
    torch.testing.assert_close(got, want, atol=0.05, rtol=0.05)
    print("torchax: %d tensors bitwise equal, forward matches" % len(expected), flush=True)


if __name__ == "__main__":
    main()
