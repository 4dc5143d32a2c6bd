"""Factories for initc-capture --factory whose init the user changed after transformers built
the model: model.apply(user_init), a subclass overriding _init_weights, a module whose
reset_parameters is overridden (and called). Each also runs eagerly on the CPU, the reference."""

import json
import os

import torch
import torch.nn as nn
import transformers
from transformers import AutoModelForCausalLM, LlamaForCausalLM, LlamaModel, LlamaPreTrainedModel

LLAMA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "e2e", "configs",
                     "llama_uneven.json")


def llama_config():
    with open(LLAMA) as f:
        return transformers.LlamaConfig(**json.load(f))


def stock():
    """The model unchanged: what from_config gives."""
    return AutoModelForCausalLM.from_config(llama_config())


def user_init(module):
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif type(module).__name__.endswith("RMSNorm"):
        nn.init.constant_(module.weight, 0.5)


def applied():
    """(a) model.apply(user_init) after from_config."""
    model = AutoModelForCausalLM.from_config(llama_config())
    model.apply(user_init)
    return model


class WideInit:
    """(b) The user's _init_weights. transformers initializes each sub-model (LlamaModel inside
    LlamaForCausalLM) with that sub-model's own _init_weights, so both classes take it."""

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.1)
        elif isinstance(module, nn.Embedding):
            nn.init.uniform_(module.weight, -0.05, 0.05)
        elif type(module).__name__.endswith("RMSNorm"):
            nn.init.constant_(module.weight, 2.0)


class WideLlamaModel(WideInit, LlamaModel):
    pass


class WideLlama(WideInit, LlamaForCausalLM):
    def __init__(self, config):
        LlamaPreTrainedModel.__init__(self, config)
        self.model = WideLlamaModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()


def subclassed():
    return WideLlama(llama_config())


class FanOutLinear(nn.Linear):
    """(c) nn.Linear whose reset_parameters (called by nn.Linear.__init__) is the user's."""

    def reset_parameters(self):
        nn.init.kaiming_normal_(self.weight, mode="fan_out", nonlinearity="linear")
        if self.bias is not None:
            nn.init.constant_(self.bias, 0.25)


def reset():
    """(c) The llama's head replaced by a FanOutLinear, then every module's reset_parameters
    called again (nn.Embedding's: normal(0, 1))."""
    model = AutoModelForCausalLM.from_config(llama_config())
    config = model.config
    model.lm_head = FanOutLinear(config.hidden_size, config.vocab_size, bias=True)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model
