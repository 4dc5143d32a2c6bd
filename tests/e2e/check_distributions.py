#!/usr/bin/env python3
"""Checks an assembled checkpoint against the initializer formulas of transformers (--style hf)
or PyTorch's module defaults (--style torch), derived here from the config alone (references:
shared/reference/hf_init.md and torch_init.md). Random parameters: Kolmogorov-Smirnov test against
the exact distribution (p > 0.001), mean and std within tolerance, bounds respected. Deterministic
ones: exact values."""
import argparse
import json
import math
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, __import__("os").path.dirname(__file__))
from safetensors_check import load  # noqa: E402


def expected_llama(cfg, style):
    """{name: spec} where spec is ("normal", std) | ("uniform", bound) | ("const", value)."""
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim", h // heads)
    r = cfg.get("initializer_range", 0.02)
    bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    linear = (lambda fan_in: ("normal", r)) if style == "hf" else \
             (lambda fan_in: ("uniform", 1 / math.sqrt(fan_in)))
    linear_bias = (lambda fan_in: ("const", 0.0)) if style == "hf" else \
                  (lambda fan_in: ("uniform", 1 / math.sqrt(fan_in)))
    spec = {"model.embed_tokens.weight": ("normal", r if style == "hf" else 1.0),
            "model.norm.weight": ("const", 1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for proj in ("q", "k", "v"):
            spec[p + f"self_attn.{proj}_proj.weight"] = linear(h)
            if bias:
                spec[p + f"self_attn.{proj}_proj.bias"] = linear_bias(h)
        spec[p + "self_attn.o_proj.weight"] = linear(heads * hd)
        spec[p + "mlp.gate_proj.weight"] = linear(h)
        spec[p + "mlp.up_proj.weight"] = linear(h)
        spec[p + "mlp.down_proj.weight"] = linear(inter)
        spec[p + "input_layernorm.weight"] = ("const", 1.0)
        spec[p + "post_attention_layernorm.weight"] = ("const", 1.0)
    if not cfg.get("tie_word_embeddings", False):
        spec["lm_head.weight"] = linear(h)
    return spec


def expected_gpt2(cfg, style):
    e, layers = cfg["n_embd"], cfg["n_layer"]
    r = cfg.get("initializer_range", 0.02)
    emb = ("normal", r if style == "hf" else 1.0)
    proj = ("normal", r / math.sqrt(2 * layers) if style == "hf" else 0.02)
    spec = {"transformer.wte.weight": emb, "transformer.wpe.weight": emb,
            "transformer.ln_f.weight": ("const", 1.0), "transformer.ln_f.bias": ("const", 0.0)}
    for i in range(layers):
        p = f"transformer.h.{i}."
        spec.update({p + "ln_1.weight": ("const", 1.0), p + "ln_1.bias": ("const", 0.0),
                     p + "ln_2.weight": ("const", 1.0), p + "ln_2.bias": ("const", 0.0),
                     p + "attn.c_attn.weight": ("normal", 0.02 if style == "torch" else r),
                     p + "attn.c_attn.bias": ("const", 0.0),
                     p + "attn.c_proj.weight": proj, p + "attn.c_proj.bias": ("const", 0.0),
                     p + "mlp.c_fc.weight": ("normal", 0.02 if style == "torch" else r),
                     p + "mlp.c_fc.bias": ("const", 0.0),
                     p + "mlp.c_proj.weight": proj, p + "mlp.c_proj.bias": ("const", 0.0)})
    return spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("checkpoint")
    ap.add_argument("--style", choices=["hf", "torch"], required=True)
    args = ap.parse_args()
    cfg = json.load(open(args.config))
    tensors, _ = load(args.checkpoint)
    spec = (expected_gpt2 if cfg["model_type"] == "gpt2" else expected_llama)(cfg, args.style)
    pad = cfg.get("pad_token_id")
    problems = []
    for name, (kind, value) in spec.items():
        if name not in tensors:
            problems.append(f"{name}: missing")
            continue
        t = tensors[name].astype(np.float64)
        if name.endswith(("embed_tokens.weight",)) and pad is not None:
            if np.any(t[pad] != 0):
                problems.append(f"{name}: padding row {pad} is not zero")
            t = np.delete(t, pad, axis=0)
        x = t.ravel()
        if kind == "const":
            if not np.all(x == value):
                problems.append(f"{name}: expected all {value}")
            continue
        if kind == "normal":
            dist = stats.norm(0, value)
            std = value
        else:
            dist = stats.uniform(-value, 2 * value)
            std = value / math.sqrt(3)
            if x.min() < -value or x.max() > value:
                problems.append(f"{name}: values outside [-{value}, {value}]")
        p = stats.kstest(x, dist.cdf).pvalue if x.size >= 1000 else 1.0
        mean_tol = 5 * std / math.sqrt(x.size)
        std_tol = 5 * std * math.sqrt(2 / x.size) + 1e-3 * std
        ok = p > 1e-3 and abs(x.mean()) < mean_tol and abs(x.std() - std) < std_tol
        line = (f"{name:45s} {kind:7s} {value:.6g}: n={x.size} mean={x.mean():+.3e} "
                f"std={x.std():.5g} (want {std:.5g}) KS p={p:.3g}")
        print(("ok   " if ok else "FAIL ") + line)
        if not ok:
            problems.append(line)
    if cfg["model_type"] == "gpt2":
        # GPT-2's attention buffers (the causal mask, the masked-out score) are not persistent.
        for i in range(cfg["n_layer"]):
            for name in ("bias", "masked_bias"):
                if f"transformer.h.{i}.attn.{name}" in tensors:
                    problems.append(f"transformer.h.{i}.attn.{name}: non-persistent, but stored")
    extra = sorted(set(tensors) - set(spec))
    print(f"{len(spec)} tensors checked; not checked: {extra or 'none'}")
    if extra:
        problems.append(f"unexpected tensors: {extra}")
    if problems:
        print("\n".join(["problems:"] + problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
