"""Checkpoints written by `prog/init --layout LAYOUT` for the tests that load them with the real
clients (transformers, PyTorch DCP, orbax): each program is compiled once per session and each
(program, layout, options) written once, so the suite stays fast."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUILD_DIR, INITC, ROOT, run

CONFIGS = os.path.join(ROOT, "tests", "e2e", "configs")
# mpirun as root on a machine with fewer cores than ranks.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
# The model types whose configs the tests load with transformers.
MODELS = {"llama": "llama_uneven.json", "mistral": "mistral_tiny.json",
          "qwen2": "qwen2_tiny.json", "gpt2": "gpt2_tiny.json", "mixtral": "mixtral_tiny.json",
          "qwen3_moe": "qwen3_moe_tiny.json", "deepseek_v3": "deepseek_v3_tiny.json"}


def mesh_size(mesh):
    size = 1
    for axis in (mesh.split(",") if mesh else []):
        size *= int(axis.split("=")[1])
    return size


def mpi_env():
    env = dict(os.environ)
    env.update(MPI_ENV)
    return env


def init_command(prog, out, layout, ranks, *options):
    """The command that writes prog's checkpoint into out: mpirun for more than one rank."""
    init = [str(prog / "init"), "--out", str(out), "--layout", layout, "--quiet"] + list(options)
    return (["mpirun", "-np", str(ranks)] + init) if ranks > 1 else init


class Checkpoints:
    """Compiles each (config, dtype, mesh, shard) once and writes each of its layouts once."""

    def __init__(self, base):
        self.base = base
        self.programs = {}
        self.outputs = {}
        self.layouts = {}

    def program(self, config, dtype="bf16", mesh="dp=2,tp=2", shard="tp"):
        key = (config, dtype, mesh, shard)
        if key not in self.programs:
            assert os.access(INITC, os.X_OK), "no %s: build the tree first (tools/setup.sh)" % INITC
            directory = self.base / ("p%d" % len(self.programs))
            directory.mkdir()
            model, prog = directory / "model.mlir", directory / "prog"
            run(INITC, "import", "hf", os.path.join(CONFIGS, config), "--dtype", dtype,
                "--seed", "7", "-o", model)
            # One kernel variant, for this CPU: the bits never depend on the variant.
            compile_args = ["compile", model, "--shard", shard, "-o", prog, "--target-cpu", "native"]
            if mesh:
                compile_args += ["--mesh", mesh]
            run(INITC, *compile_args)
            self.programs[key] = prog
        return self.programs[key]

    def supports(self, prog, layout):
        """Whether prog/init lists the layout in its --help (the writers may not be built yet)."""
        if prog not in self.layouts:
            lines = run(prog / "init", "--help").stdout.splitlines()
            start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("--layout")), None)
            text = ""
            if start is not None:
                # The option's line and the lines its description wraps onto.
                end = start + 1
                while end < len(lines) and lines[end].startswith(" " * 8):
                    end += 1
                text = " ".join(lines[start:end])
            self.layouts[prog] = set(re.findall(r"[A-Za-z0-9_+-]+", text))
        return layout in self.layouts[prog]

    def require(self, prog, layout):
        if not self.supports(prog, layout):
            pytest.skip("prog/init --help lists no layout '%s': its writer is not built" % layout)

    def get(self, config, layout="hf", dtype="bf16", mesh="dp=2,tp=2", shard="tp", options=()):
        """The directory that `prog/init --layout LAYOUT OPTIONS` wrote for the program."""
        prog = self.program(config, dtype, mesh, shard)
        self.require(prog, layout)
        key = (prog, layout, tuple(options))
        if key not in self.outputs:
            out = prog.parent / ("%s%d" % (layout, len(self.outputs)))
            cmd = init_command(prog, out, layout, mesh_size(mesh), *options)
            run(*cmd, env=mpi_env())
            self.outputs[key] = out
        return self.outputs[key]

    def reference(self, config, dtype="bf16"):
        """The whole tensors of a 1-rank run (ranks layout: one file), as torch tensors."""
        from safetensors.torch import load_file
        out = self.get(config, "ranks", dtype, mesh="", shard="replicated")
        return load_file(str(out / "rank-00000-of-00001.safetensors"))


def process_tree(root):
    """root and every process descended from it (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    # The parent's pid follows the command, which may hold spaces: after ')'.
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def crash(root):
    """SIGKILLs root and all its descendants, as a node failure would: mpirun starts the ranks
    in process groups of their own, and a killed mpirun can forward nothing. Each process is
    stopped first, so that none notices another's death and reacts before it dies."""
    killed = set()
    while True:
        alive = [pid for pid in process_tree(root) if pid not in killed]
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed.add(pid)


def interrupted_run(prog, out, layout, ranks, is_started, timeout=120):
    """Starts prog/init and SIGKILLs it and every process it started as soon as is_started(out)
    holds: the directory a crashed job leaves. Fails if the run ends first."""
    cmd = init_command(prog, out, layout, ranks)
    proc = subprocess.Popen(cmd, env=mpi_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            if os.path.isdir(out) and is_started(out):
                break
            if proc.poll() is not None:
                pytest.fail("prog/init ended (%d) before it could be interrupted: the model is too "
                            "small for this machine\n%s" % (proc.returncode, proc.stderr.read().decode()))
            time.sleep(0.005)
        else:
            pytest.fail("prog/init wrote nothing into %s in %d s" % (out, timeout))
    finally:
        crash(proc.pid)
        proc.wait()
    return sorted(os.listdir(out))


def torch_bytes(tensor):
    """A tensor's bytes in row-major order (bf16 included, which numpy lacks)."""
    import torch
    t = tensor.detach().contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def read_json(path):
    with open(path) as f:
        return json.load(f)
