"""The transformers front: `initc-capture --hf config.json` builds the model class transformers
picks for a config, as `AutoModel*.from_config` builds it on the CPU (constructor, then
`post_init`: `_init_weights` over every module and the weight ties), under the capture.

Depends on transformers only when --hf is given."""

import contextlib
import importlib.abc
import json
import os
import sys

from .diagnostics import CaptureError

# The auto classes tried, in order, for a config that names no architecture: an encoder-decoder
# is a seq2seq LM; an encoder with a masked-LM head (bert) gets that head rather than the
# decoder variant transformers also registers for it; then a causal LM; else the bare model
# (vision encoders such as vit).
AUTO_CLASSES = ("AutoModelForSeq2SeqLM", "AutoModelForMaskedLM", "AutoModelForCausalLM",
                "AutoModel")


def read_config(path):
    if not os.path.isfile(path):
        raise CaptureError("--hf: no file '%s' (give a transformers config.json)" % path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CaptureError("--hf: %s is not a JSON config: %s" % (path, e))
    if not isinstance(data, dict):
        raise CaptureError("--hf: %s must hold a JSON object (a transformers config.json)" % path)
    return data


def load_config(path, trust_remote_code):
    """The transformers config of `path` (a config.json or the directory holding one)."""
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    data = read_config(path)
    if "auto_map" in data and not trust_remote_code:
        raise CaptureError(
            "--hf: %s needs code from outside transformers (its auto_map names %s), which the "
            "capture runs only with --trust-remote-code: pass it if you trust that code"
            % (path, ", ".join(sorted(data["auto_map"])) or "classes"))
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise CaptureError("--hf: %s has no \"model_type\": transformers cannot tell which model "
                           "it configures" % path)
    # A local file never needs the network: transformers must not look anything up on the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers
    except ImportError:
        raise CaptureError("--hf needs the transformers package: pip install transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    if model_type not in CONFIG_MAPPING and "auto_map" not in data:
        raise CaptureError("--hf: %s: model_type '%s' is not a model transformers %s knows (a "
                           "newer transformers may; or pass a config of a known model type)"
                           % (path, model_type, transformers.__version__))
    try:
        config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as e:
        raise CaptureError("--hf: transformers refuses %s: %s" % (path, str(e).strip().splitlines()[0]
                                                                    if str(e).strip() else type(e).__name__))
    return transformers, config


def model_class(transformers, config, auto_class, trust_remote_code):
    """The class transformers builds for `config`: --auto-class if given, the config's
    `architectures` when transformers has that class, else the first auto class of
    AUTO_CLASSES that maps the config."""
    if auto_class is not None:
        auto = getattr(transformers, auto_class, None)
        if auto is None or not hasattr(auto, "from_config"):
            raise CaptureError("--auto-class: transformers has no auto class '%s' (e.g. %s)"
                               % (auto_class, ", ".join(AUTO_CLASSES)))
        return auto
    for name in getattr(config, "architectures", None) or ():
        cls = getattr(transformers, name, None)
        if cls is not None and hasattr(cls, "_from_config"):
            return cls
    if trust_remote_code and getattr(config, "auto_map", None):
        for name in ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForMaskedLM",
                     "AutoModel"):
            if name in config.auto_map:
                return getattr(transformers, name)
    from transformers.models.auto import modeling_auto
    mappings = {"AutoModelForSeq2SeqLM": modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
                "AutoModelForMaskedLM": modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
                "AutoModelForCausalLM": modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                "AutoModel": modeling_auto.MODEL_MAPPING_NAMES}
    for name in AUTO_CLASSES:
        if name == "AutoModelForSeq2SeqLM" and not getattr(config, "is_encoder_decoder", False):
            continue
        if config.model_type in mappings[name]:
            return getattr(transformers, name)
    raise CaptureError("--hf: transformers has no model class for model_type '%s'"
                       % config.model_type)


PROBED = "transformers.modeling_utils"


def _answer_cpu(modeling_utils, saved):
    saved.append((modeling_utils, modeling_utils.get_torch_context_manager_or_global_device))
    modeling_utils.get_torch_context_manager_or_global_device = lambda: None


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Answers the probe of transformers.modeling_utils as soon as a factory imports it."""

    def __init__(self, saved):
        self.saved = saved

    def find_spec(self, fullname, path, target=None):
        if fullname != PROBED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                loader, saved = spec.loader, self.saved

                def exec_module(module, _run=loader.exec_module):
                    _run(module)
                    _answer_cpu(module, saved)
                loader.exec_module = exec_module
                return spec
        return None


@contextlib.contextmanager
def eager_cpu_init():
    """`PreTrainedModel.init_weights` skips `_init_weights` when it sees the meta device (it
    probes `torch.tensor([]).device`, which the capture puts there); built eagerly on the CPU
    the weights are initialized, so while a factory runs the probe sees the CPU: for --hf and
    for a user's factory that builds a transformers model (from_config, the class itself, a
    subclass with its own `_init_weights`), whether transformers was imported before or by the
    factory. Costs nothing when the factory never imports transformers."""
    saved = []
    finder = None
    if PROBED in sys.modules:
        _answer_cpu(sys.modules[PROBED], saved)
    else:
        finder = _PatchOnImport(saved)
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for module, probe in reversed(saved):
            module.get_torch_context_manager_or_global_device = probe


def hf_factory(path, auto_class=None, trust_remote_code=False, dtype=None):
    """(factory, model name): the factory builds the model of config `path` as
    `<auto class>.from_config(config)` does."""
    transformers, config = load_config(path, trust_remote_code)
    cls = model_class(transformers, config, auto_class, trust_remote_code)
    kwargs = {}
    if dtype is not None:
        import torch
        kwargs["dtype"] = getattr(torch, dtype)
    if hasattr(cls, "_model_mapping"):  # an auto class
        if trust_remote_code:
            kwargs["trust_remote_code"] = True
        try:
            # Imports the modeling module now, outside the capture, which then records the
            # model's construction only.
            concrete = cls._model_mapping[type(config)]
        except KeyError:
            concrete = None  # remote code: from_config finds it

        def factory():
            return cls.from_config(config, **kwargs)
    else:
        concrete = cls

        def factory():
            return cls._from_config(config, **kwargs)
    return factory, getattr(concrete, "__name__", None) or config.model_type
