"""Program.fill_box: any box of a parameter, into contiguous or strided numpy memory, from a
program compiled for another mesh, bitwise the 1-device prog/init output; for computed,
orthogonal (a whole-matrix transform) and loaded (init.load of a base checkpoint) parameters."""

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import initc
from conftest import INITC, run

ml_dtypes = pytest.importorskip("ml_dtypes")

MODEL = """init.seed 5
init.param @tall : tensor<90x40xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<90x40xf32>
  init.yield %0 : tensor<90x40xf32>
}
init.param @wide : tensor<24x70xbf16> {
  %0 = init.orthogonal gain 2.0 stream 1 strategy redundant : tensor<24x70xbf16>
  init.yield %0 : tensor<24x70xbf16>
}
init.param @emb : tensor<33x20xbf16> {
  %0 = init.load "BASE" ["emb"] : tensor<33x20xbf16>
  init.yield %0 : tensor<33x20xbf16>
}
init.param @plain : tensor<5x31x6xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<5x31x6xf32>
  init.yield %0 : tensor<5x31x6xf32>
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """(program for dp=2,tp=2, the 1-device reference's tensors)."""
    directory = tmp_path_factory.mktemp("box")
    rng = np.random.default_rng(3)
    base = directory / "base.safetensors"
    save_file({"emb": rng.standard_normal((33, 20)).astype(ml_dtypes.bfloat16)}, str(base))
    model = directory / "model.mlir"
    model.write_text(MODEL.replace("BASE", str(base)))
    rules = directory / "rules.json"
    rules.write_text('{"params": {"plain": [["dp"], ["tp"], null], "*": [["dp"], ["tp"]]}}')
    run(INITC, "compile", model, "--mesh", "dp=2,tp=2", "--shard", rules, "-o",
        directory / "prog4")
    run(INITC, "compile", model, "--mesh", "dp=1", "--shard", "replicated", "-o",
        directory / "prog1")
    run(directory / "prog1" / "init", "--layout", "ranks", "--threads", 1, "--out",
        directory / "ckpt1")
    reference = load_file(str(directory / "ckpt1" / "rank-00000-of-00001.safetensors"))
    assert (reference["emb"].view(np.uint16) == load_file(str(base))["emb"].view(np.uint16)).all()
    return directory / "prog4", reference


def test_random_boxes_contiguous_and_strided(programs):
    prog_dir, reference = programs
    rng = np.random.default_rng(52)
    with initc.load(prog_dir) as prog:
        for name, whole in reference.items():
            for trial in range(12):
                offset = [int(rng.integers(0, n + 1)) for n in whole.shape]
                shape = [int(rng.integers(0, n - o + 1)) for n, o in zip(whole.shape, offset)]
                box = tuple(slice(o, o + s) for o, s in zip(offset, shape))
                if trial % 2:
                    out = np.empty(shape, dtype=whole.dtype)
                else:
                    # A box of a larger, sentinel-filled array: padded rows, strided dims.
                    padded = np.full([s + 3 for s in shape], 7, dtype=whole.dtype)
                    out = padded[tuple(slice(1, 1 + s) for s in shape)]
                prog.fill_box(name, offset, out, threads=2)
                assert out.view(np.uint8).tobytes() == whole[box].view(np.uint8).tobytes(), \
                    (name, offset, shape)
                if not trial % 2:
                    mask = np.ones(padded.shape, bool)
                    mask[tuple(slice(1, 1 + s) for s in shape)] = False
                    assert (padded[mask] == np.array(7, dtype=whole.dtype)).all(), name


def test_refusals_name_the_parameter(programs):
    prog_dir, _ = programs
    with initc.load(prog_dir) as prog:
        with pytest.raises(initc.Error, match="tall is F32 but the array's elements are F64") as e:
            prog.fill_box("tall", (0, 0), np.empty((2, 2)))
        assert e.value.status == "INITRT_INVALID_ARGUMENT"
        with pytest.raises(initc.Error, match="tall.*innermost dim must be contiguous"):
            prog.fill_box("tall", (0, 0), np.empty((4, 4), np.float32).T)
        with pytest.raises(initc.Error, match=r"tall.*\[85, 95\) of dim 0 is outside \[0, 90\)"):
            prog.fill_box("tall", (85, 0), np.empty((10, 4), np.float32))
        with pytest.raises(initc.Error, match="no parameter named nope") as e:
            prog.fill_box("nope", (0,), np.empty(3, np.float32))
        assert e.value.status == "INITRT_NOT_FOUND"
        frozen = np.empty((2, 2), np.float32)
        frozen.flags.writeable = False
        with pytest.raises(ValueError, match="tall: the array is read-only"):
            prog.fill_box("tall", (0, 0), frozen)
        with pytest.raises(initc.Error, match="plain: the array has 2 dims but the box offset 3"):
            prog.fill_box("plain", (0, 0, 0), np.empty((2, 2), np.float32))
