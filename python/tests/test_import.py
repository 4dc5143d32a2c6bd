"""`import initc` stays light: no torch, no jax, not even the native module until a program is
loaded; the capture imports without the native module; the JAX capture never imports torch."""

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ("torch", "jax", "jaxlib", "flax", "equinox", "orbax", "torchax", "transformers")


def imported_after(statement):
    code = "import json, sys\n%s\nprint(json.dumps(sorted(sys.modules)))" % statement
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_import_initc_pulls_in_no_framework():
    modules = imported_after("import initc")
    heavy = [m for m in modules if m.split(".")[0] in FRAMEWORKS]
    assert heavy == [], "import initc imported %s" % heavy
    assert "initc._native" not in modules


def test_capture_needs_no_native_module():
    modules = imported_after("import initc.capture")
    assert "torch" in modules
    assert "initc._native" not in modules


def test_jax_capture_imports_no_torch():
    """A JAX user pays for JAX alone: capturing an Equinox model prints its IR through the
    shared printer, which imports no torch (importing torch took most of a capture's time)."""
    pytest.importorskip("equinox")
    modules = imported_after(
        "import equinox as eqx\nimport initc.jax as ij\n"
        "text, _ = ij.capture_ir(lambda key: eqx.nn.Linear(8, 4, key=key))\n"
        "assert 'init.param @\"weight\"' in text, text")
    assert "initc.jax_capture" in modules and "equinox" in modules
    torch_modules = [m for m in modules if m.split(".")[0] == "torch" or m == "initc.capture"]
    assert torch_modules == [], "the JAX capture imported %s" % torch_modules[:5]
