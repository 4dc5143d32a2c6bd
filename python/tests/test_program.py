"""initc.load over the native module: a rank's shard of each parameter, bytewise the tensor that
`prog/init --out` writes into that rank's checkpoint file (read with safetensors)."""

import os
import threading

import numpy as np
import pytest
from safetensors import safe_open

import initc


def rank_file(ckpt, rank, world):
    return os.path.join(ckpt, "rank-%05d-of-%05d.safetensors" % (rank, world))


def checkpoint_bytes(path, name):
    # The "pt" framework reads every dtype (numpy has no bfloat16); the bytes are compared.
    import torch
    with safe_open(path, framework="pt") as f:
        t = f.get_tensor(name).contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def persistent(prog, rank):
    return [p for p in prog.params(rank) if p.persistent]


def test_params_describe_each_rank(program_f32):
    prog_dir, _ = program_f32
    with initc.load(prog_dir) as prog:
        assert prog.world_size == 2
        names = [p.name for p in prog.params(0)]
        assert "model.embed_tokens.weight" in names and len(set(names)) == len(names)
        q0, q1 = (prog.param("model.layers.0.self_attn.q_proj.weight", r) for r in (0, 1))
        assert q0.dtype == "F32" and q0.global_shape == (64, 64)
        assert q0.slice_shape[0] + q1.slice_shape[0] == 64 and q1.slice_offset[0] == q0.slice_shape[0]
        assert q0.bytes == 4 * q0.elements


@pytest.mark.parametrize("fixture", ["program_f32", "program_bf16"])
def test_fill_equals_checkpoint_bytewise(fixture, request):
    prog_dir, ckpt = request.getfixturevalue(fixture)
    with initc.load(prog_dir) as prog:
        for rank in range(prog.world_size):
            params = persistent(prog, rank)
            assert params
            for p in params:
                got = prog.array(p.name, rank, threads=1)
                assert got.shape == p.slice_shape and got.nbytes == p.bytes
                assert got.tobytes() == checkpoint_bytes(rank_file(ckpt, rank, 2), p.name), p.name


def test_fill_raw_buffer_and_threads(program_f32):
    prog_dir, ckpt = program_f32
    with initc.load(prog_dir) as prog:
        p = prog.param("model.layers.1.mlp.up_proj.weight", 1)
        raw = bytearray(p.bytes)
        prog.fill(p.name, raw, rank=1)
        assert bytes(raw) == checkpoint_bytes(rank_file(ckpt, 1, 2), p.name)
        # One handle from several threads at once (the GIL is released while kernels run).
        outs = [np.empty(p.slice_shape, np.float32) for _ in range(4)]
        workers = [threading.Thread(target=prog.fill, args=(p.name, o, 1, 1)) for o in outs]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert all(o.tobytes() == bytes(raw) for o in outs)


def test_unknown_parameter(program_f32):
    prog_dir, _ = program_f32
    with initc.load(prog_dir) as prog:
        with pytest.raises(initc.Error, match="no.such.weight") as e:
            prog.fill("no.such.weight", bytearray(16))
        assert e.value.status == "INITRT_NOT_FOUND"
        with pytest.raises(KeyError, match="no.such.weight"):
            prog.array("no.such.weight")


def test_wrong_buffers(program_f32):
    prog_dir, _ = program_f32
    name = "model.norm.weight"
    with initc.load(prog_dir) as prog:
        p = prog.param(name)
        with pytest.raises(TypeError, match=r"model\.norm\.weight is F32 \(numpy float32\), the array is float64"):
            prog.fill(name, np.empty(p.slice_shape, np.float64))
        with pytest.raises(ValueError, match="slice of shape"):
            prog.fill(name, np.empty((p.elements + 1,), np.float32))
        q = prog.param("model.layers.0.self_attn.q_proj.weight")
        with pytest.raises(ValueError, match="C-contiguous"):
            prog.fill(q.name, np.empty(tuple(reversed(q.slice_shape)), np.float32).T)
        with pytest.raises(initc.Error) as e:
            prog.fill(name, bytearray(p.bytes - 4))
        assert e.value.status == "INITRT_SIZE_MISMATCH"
        assert str(p.bytes) in str(e.value) and name in str(e.value)
        with pytest.raises(initc.Error) as e:
            prog.fill(name, bytearray(p.bytes), rank=2)
        assert e.value.status == "INITRT_INVALID_ARGUMENT"
        with pytest.raises(BufferError, match="not writable"):
            prog.fill(name, bytes(p.bytes))
    with pytest.raises(ValueError, match="closed"):
        prog.params()


def test_bad_program_directory(tmp_path):
    with pytest.raises(initc.Error) as e:
        initc.load(tmp_path / "missing")
    assert e.value.status == "INITRT_BAD_PROGRAM"
    assert "missing" in str(e.value)


def test_compile_returns_what_load_returns(program_f32, monkeypatch):
    # The same IR compiled from Python for the fixture's mesh: the same shards, bytewise.
    from conftest import INITC
    prog_dir, ckpt = program_f32
    monkeypatch.setenv("INITC", INITC)
    with initc.compile(prog_dir.parent / "model.mlir", mesh={"tp": 2}, shard="tp") as prog:
        assert isinstance(prog, initc.Program) and prog.world_size == 2
        directory = prog._directory
        assert os.path.isfile(os.path.join(directory, "prog", "program.json"))
        for rank in range(2):
            for p in persistent(prog, rank):
                got = prog.array(p.name, rank, threads=1)
                assert got.tobytes() == checkpoint_bytes(rank_file(ckpt, rank, 2), p.name), p.name
    # A temporary program directory goes with its Program.
    assert not os.path.exists(directory)


def test_compile_into_a_named_directory_on_path(program_f32, monkeypatch, tmp_path):
    # No INITC: the compiler on PATH, into the directory asked for, the mesh as the CLI spells it.
    from conftest import INITC
    prog_dir, _ = program_f32
    monkeypatch.delenv("INITC", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(INITC) + os.pathsep + os.environ.get("PATH", ""))
    out = tmp_path / "prog4"
    with initc.compile(str(prog_dir.parent / "model.mlir"), mesh="dp=2,tp=2",
                       shard="fsdp+tp", out=out) as prog:
        assert prog.world_size == 4
        name = "model.layers.0.mlp.down_proj.weight"
        whole = initc.load(prog_dir)
        # Any box, whatever mesh either was compiled for.
        a, b = np.empty((3, 5), np.float32), np.empty((3, 5), np.float32)
        prog.fill_box(name, (2, 7), a)
        whole.fill_box(name, (2, 7), b)
        whole.close()
        assert a.tobytes() == b.tobytes()
    assert os.path.isfile(out / "program.json")


def test_compile_failure_raises_the_compilers_message(tmp_path, monkeypatch):
    import tempfile
    from conftest import INITC
    monkeypatch.setenv("INITC", INITC)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    bad = tmp_path / "bad.mlir"
    bad.write_text("garbage {\n")
    with pytest.raises(initc.Error, match=r"initc\.compile: .*custom op 'garbage' is unknown"):
        initc.compile(bad)
    with pytest.raises(initc.Error, match="no IR file"):
        initc.compile(tmp_path / "absent.mlir")
    # A temporary directory of a failed compile is not left behind.
    assert os.listdir(scratch) == []


def test_compile_without_a_compiler_says_where_it_looked(tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    ir = tmp_path / "m.mlir"
    ir.write_text("")
    monkeypatch.setenv("INITC", str(tmp_path / "no-such-initc"))
    with pytest.raises(initc.Error, match="INITC=.*no-such-initc is not an executable"):
        initc.compile(ir)
    monkeypatch.delenv("INITC")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(initc.Error, match="no initc compiler found: set INITC"):
        initc.compile(ir)
    assert os.listdir(scratch) == []
