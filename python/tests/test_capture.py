"""initc.capture on the venv's torch (2.x): importable, and its command lines (the console
script, python -m, the checkout's driver) write the same IR, which build/bin/initc reads."""

import os
import subprocess
import sys

from conftest import INITC, ROOT, run

MODELS = os.path.join(ROOT, "tests", "capture", "models.py")


def test_capture_importable():
    import initc.capture
    assert callable(initc.capture.capture_model) and issubclass(initc.capture.CaptureError, Exception)


def test_capture_command_lines(tmp_path):
    scripts = os.path.dirname(sys.executable)
    outs = []
    for i, command in enumerate([
            [os.path.join(scripts, "initc-capture")],
            [sys.executable, "-m", "initc.capture"],
            [sys.executable, os.path.join(ROOT, "tools", "capture", "initc_capture.py")]]):
        out = tmp_path / ("mlp%d.mlir" % i)
        run(*command, "--factory", MODELS + ":mlp", "--kwargs", '{"dim": 8, "hidden": 16, "out": 4}',
            "--seed", "3", "-o", out, cwd=tmp_path)
        outs.append(out.read_text())
    assert outs[0] == outs[1] == outs[2]
    assert "init.param" in outs[0]
    run(INITC, "inspect", tmp_path / "mlp0.mlir")


def test_capture_error_is_one_line(tmp_path):
    (tmp_path / "bad.py").write_text("import torch.nn as nn\n\ndef f():\n    return nn.Sequential(nn.ReLU())\n")
    result = subprocess.run([sys.executable, "-m", "initc.capture", "--factory", "bad.py:f"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ("initc-capture: error: the factory's Sequential has no parameters or "
                             "buffers: there is nothing to initialize\n")
