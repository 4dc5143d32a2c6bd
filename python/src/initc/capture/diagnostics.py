"""Errors the capture reports, and where in the factory they happened."""

import os
import traceback

import torch


class CaptureError(Exception):
    """A model the capture cannot express; the message names the op and where it happened."""


# Frames in this package and in torch are the tool's; the others are the factory's. Frames
# outside the command line's main only start it (the driver, runpy, a console script).
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CLI_FILE = os.path.join(_PACKAGE_DIR, "cli.py")
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def in_package(path):
    return os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep)


def user_location():
    """file:line of the innermost frame outside torch and this tool."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        path = os.path.abspath(frame.filename)
        if path == _CLI_FILE and frame.name == "main":
            break
        if not in_package(path) and not path.startswith(_TORCH_DIR):
            return "%s:%d" % (frame.filename, frame.lineno)
    return "?"


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0].strip() if text else type(e).__name__


def meta_failure(op, e):
    """The message for an op that raised on the meta device: either the op has no meta
    implementation in this PyTorch (then the capture cannot run it), or it refused its
    arguments, as it would on the CPU."""
    text = first_line(e)
    if "Could not run '" in text:  # the dispatcher's message, with every backend listed
        text = text.split(" with arguments from")[0]
    if isinstance(e, NotImplementedError) or "meta" in text.lower() or "Could not run" in text:
        return ("%s: %s cannot run on the meta device in this PyTorch (%s), so the capture cannot "
                "record it: it has no init IR counterpart; initialize the tensor with ops the "
                "capture records (ir-spec/capture.md), or do this step after loading the "
                "checkpoint" % (user_location(), op, text))
    return "%s: %s: %s" % (user_location(), op, text)
