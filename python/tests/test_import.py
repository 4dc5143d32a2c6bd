"""`import initc` stays light: no torch, no jax, not even the native module until a program is
loaded; the capture imports without the native module."""

import json
import subprocess
import sys

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
