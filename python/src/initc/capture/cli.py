"""The command line: initc-capture, python -m initc.capture, tools/capture/initc_capture.py."""

import argparse
import importlib
import importlib.util
import json
import os
import sys
import traceback

from .diagnostics import _TORCH_DIR, CaptureError, first_line, in_package
from .model import capture_model


def load_factory(spec):
    if ":" not in spec:
        raise CaptureError("--factory '%s' must be FILE.py:FUNCTION or MODULE:FUNCTION" % spec)
    where, func = spec.rsplit(":", 1)
    if where.endswith(".py") or os.path.sep in where:
        if not os.path.exists(where):
            raise CaptureError("--factory: no file '%s'" % where)
        # As python does for a script: its directory first on the path.
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        mod_name = os.path.splitext(os.path.basename(where))[0]
        spec_ = importlib.util.spec_from_file_location(mod_name, where)
        module = importlib.util.module_from_spec(spec_)
        sys.modules[mod_name] = module
        spec_.loader.exec_module(module)
    else:
        # As `python -m` does: modules of the current directory first.
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name is None or not where.startswith(e.name):
                raise
            raise CaptureError("--factory: no module '%s' (looked in the current directory and "
                               "on sys.path): run from the directory that holds %s.py, or give "
                               "FILE.py:FUNCTION" % (where, where.replace(".", "/")))
    factory = getattr(module, func, None)
    if not callable(factory):
        raise CaptureError("--factory: '%s' has no function '%s'" % (where, func))
    return factory


def output_target(path):
    """The file that `-o path` writes and whether it is written in place: a pipe, /dev/null,
    /dev/stdout or another non-regular file is (a rename would replace it); a symbolic link to
    a regular file names the file that is replaced (the link stays). Raises CaptureError for
    paths that cannot be written."""
    import stat
    try:
        info = os.stat(path)  # follows links
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise CaptureError("cannot write %s: it is a directory: name a file" % path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        return path, True
    # A link to a file yet to be written: realpath names the file to create.
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(target) or "."
    if not os.path.isdir(directory):
        raise CaptureError("cannot write %s: directory %s does not exist" % (path, directory))
    return target, False


def write_output(path, text):
    """Writes `text` to `path` ('-': stdout) atomically: a temporary name next to the file, then
    a rename, so that a failure never leaves a partial file under the final name nor a
    temporary file behind; a pipe or a device is written as it is."""
    data = text.encode("utf-8")
    if path == "-":
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except OSError as e:
            raise CaptureError("cannot write to stdout: %s" % (e.strerror or e))
        return
    target, direct = output_target(path)
    if direct:
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as e:
            raise CaptureError("cannot write %s: %s" % (path, e.strerror or e))
        return
    directory, base = os.path.split(target)
    temp = os.path.join(directory, ".%s.tmp-%d" % (base[:200], os.getpid()))
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, target)
    except OSError as e:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise CaptureError("cannot write %s: %s" % (path, e.strerror or e))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="initc_capture.py",
        description="Capture a PyTorch model constructor (run on the meta device) into init IR.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--factory", help="FILE.py:FUNCTION or MODULE:FUNCTION returning an nn.Module")
    source.add_argument("--hf", metavar="CONFIG", help="a transformers config.json (or its directory): "
                        "the model class transformers picks for it, built as from_config builds it")
    parser.add_argument("--auto-class", help="with --hf: the transformers auto class to build "
                        "(default: the config's architectures, else the one its model type maps)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="with --hf: run model code that the config names outside transformers")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16", "float64"],
                        help="with --hf: the model's dtype (default: the config's, as from_config)")
    parser.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for the factory")
    parser.add_argument("-o", "--output", default="-", help="output .mlir ('-': stdout)")
    parser.add_argument("--seed", type=int, default=0, help="the init.seed of the module (default 0)")
    parser.add_argument("--name", help="model name (default: the factory's name)")
    opts = parser.parse_args(argv)
    try:
        try:
            kwargs = json.loads(opts.kwargs)
        except json.JSONDecodeError as e:
            raise CaptureError("--kwargs is not valid JSON: %s" % e)
        if not isinstance(kwargs, dict):
            raise CaptureError("--kwargs must be a JSON object, e.g. '{\"dim\": 512}'")
        if not 0 <= opts.seed < 2 ** 64:
            raise CaptureError("--seed must be an unsigned 64-bit integer")
        if opts.hf is None and (opts.auto_class or opts.trust_remote_code or opts.dtype):
            raise CaptureError("--auto-class, --trust-remote-code and --dtype go with --hf")
        if opts.output != "-":
            target, _ = output_target(opts.output)
            where = opts.hf or opts.factory.rsplit(":", 1)[0]
            if os.path.exists(where) and os.path.exists(target) and os.path.samefile(where, target):
                raise CaptureError("-o '%s' is the factory's file: choose another -o" % opts.output)
        if opts.name is not None:
            try:
                opts.name.encode("utf-8")
            except UnicodeEncodeError:
                raise CaptureError("--name must be valid UTF-8")
        if opts.hf is not None:
            if kwargs:
                raise CaptureError("--kwargs goes with --factory (an --hf model takes its config)")
            from .hf import hf_factory
            factory, default_name = hf_factory(opts.hf, opts.auto_class, opts.trust_remote_code,
                                               opts.dtype)
        else:
            factory = load_factory(opts.factory)
            default_name = opts.factory.rsplit(":", 1)[1]
        text = capture_model(factory, kwargs, opts.seed, opts.name or default_name)
    except CaptureError as e:
        print("initc-capture: error: %s" % e, file=sys.stderr)
        return 1
    except Exception as e:  # the factory itself failed
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not in_package(f.filename)]
        # The factory's own line (not torch's), and where it failed when that is elsewhere.
        user = [f for f in frames if not os.path.abspath(f.filename).startswith(_TORCH_DIR)]
        where = "%s:%d" % (user[-1].filename, user[-1].lineno) if user else "?"
        if frames and user and frames[-1] is not user[-1]:
            where += ", in %s:%d" % (frames[-1].filename, frames[-1].lineno)
        print("initc-capture: error: the factory raised %s: %s (at %s)"
              % (type(e).__name__, first_line(e), where), file=sys.stderr)
        return 1
    try:
        write_output(opts.output, text)
    except CaptureError as e:
        print("initc-capture: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
