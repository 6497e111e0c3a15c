"""Named weights (``g.weight``) from ``.npz`` and ``.safetensors`` files: round trips through
both formats on every dtype (evaluate, and export to ONNX external data run on
onnxruntime), prefixes and renaming, the errors (missing, extra, dtype, shape), files that
must be converted (compressed, Fortran order, big-endian), and the export's memory: no more
than one weight beyond what was there before (in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import floats
import ml_dtypes
import numpy as np
import onnx
import pytest
from backend import export, run
from onnx import TensorProto

import graphdsl as gd
from exporters.onnx import ExportError
from exporters.onnx._weights import ALIGN, ALIGN_ABOVE

ROOT = Path(__file__).resolve().parent.parent
DTYPES = [gd.bool, gd.int8, gd.int16, gd.int32, gd.int64, gd.uint8, gd.uint16, gd.uint32,
          gd.uint64, gd.float16, gd.bfloat16, gd.float32, gd.float64, gd.float8_e4m3fn,
          gd.float8_e5m2]  # fmt: skip
FORMATS = ["safetensors", "npz"]


def values(dt: gd.DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Values of ``dt`` with its extremes, negative zero, NaN and inf where it has them."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dt is gd.bool:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.is_integer:
        info = np.iinfo(dt.np)
        specials = np.array([info.min, info.max, 0, 1], dt.np)
        arr = rng.integers(info.min, info.max, n, dtype=dt.np, endpoint=True)
    else:
        fi = ml_dtypes.finfo(dt.np)
        specials = np.array([float(fi.max), -0.0, np.nan, -np.inf], np.float64).astype(dt.np)
        arr = (rng.standard_normal(n) * 4).astype(dt.np)
    arr[: len(specials)] = specials[:n]
    return arr.reshape(shape)


def bits(a: np.ndarray) -> np.ndarray:
    """The bytes of ``a``: compares NaN payloads and zero signs too."""
    return np.ascontiguousarray(a).view(np.uint8)


def model_of(dt: gd.DType) -> gd.Graph:
    """out0 = w (returned as it is), out1 = concat(x, v) along the rows."""
    g = gd.Graph(f"w_{dt.name}", input_types={"x": gd.TensorType(dt, (1, 3))})
    (x,) = g.inputs
    w = g.weight("block.w", dt, (2, 3))
    v = g.weight("block.v", dt, (2, 3))
    g.output(w, gd.ops.concat([x, v], axis=0))
    return g


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_round_trip_through_the_file_evaluate_and_onnxruntime(
    fmt: str, dt: gd.DType, tmp_path: Path
) -> None:
    arrays = {"layers.2.block.w": values(dt, (2, 3), 1), "layers.2.block.v": values(dt, (2, 3), 2),
              "layers.3.block.w": values(dt, (2, 3), 3)}  # fmt: skip
    path = tmp_path / f"weights.{fmt}"
    gd.save_weights(path, arrays)
    w = gd.load_weights(path, prefix="layers.2.")
    assert w.names() == ["block.v", "block.w"]
    g = model_of(dt)
    x = values(dt, (1, 3), 4)
    want_w = arrays["layers.2.block.w"]
    want_cat = np.concatenate([x, arrays["layers.2.block.v"]])
    got = gd.evaluate(g, {"x": x}, weights=w)
    # data moved: every byte (tests/floats.py's assert_bits on the bytes)
    assert got[0].dtype == dt.np
    floats.assert_bits(bits(got[0]), bits(want_w))
    floats.assert_bits(bits(got[1]), bits(want_cat))
    out = str(tmp_path / "model.onnx")
    model = export(g, out, weights=w, check="full")
    inits = {t.name: t for t in model.graph.initializer}
    assert set(inits) >= {"block.w", "block.v"}
    assert all(inits[n].data_location == TensorProto.EXTERNAL for n in ("block.w", "block.v"))
    onnx.checker.check_model(out, full_check=True)
    ran = run(out, {"x": x})
    floats.assert_bits(bits(ran[0]), bits(want_w))
    floats.assert_bits(ran[1], want_cat)  # NaN payloads aside (a lowering may widen)
    # exported without a path, the weights are embedded
    embedded = export(g, weights=w)
    assert all(t.data_location == TensorProto.DEFAULT for t in embedded.graph.initializer)
    floats.assert_bits(bits(run(embedded, {"x": x})[0]), bits(want_w))


def test_raw_bytes_are_copied_file_to_file(tmp_path: Path) -> None:
    """safetensors and stored npz hold C-order little-endian data: it is copied as it is."""
    arrays = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(5, np.int16)}
    for fmt in FORMATS:
        path = tmp_path / f"w.{fmt}"
        gd.save_weights(path, arrays)
        w = gd.load_weights(path)
        for name, arr in arrays.items():
            where = w.raw(name)
            assert where is not None
            file, offset, length = where
            with open(file, "rb") as f:
                f.seek(offset)
                assert f.read(length) == arr.tobytes()
            assert isinstance(w.array(name), np.memmap)  # memory-mapped, not read


@pytest.mark.parametrize("kind", ["compressed", "fortran", "big_endian"])
def test_npz_members_that_need_converting(kind: str, tmp_path: Path) -> None:
    arr = np.arange(6, dtype=np.float64).reshape(2, 3) - 2.5
    path = str(tmp_path / "w.npz")
    if kind == "compressed":
        np.savez_compressed(path, w=arr)
    elif kind == "fortran":
        np.savez(path, w=np.asfortranarray(arr))
    else:
        np.savez(path, w=arr.astype(">f8"))
    w = gd.load_weights(path)
    assert w.raw("w") is None  # converted one at a time through memory, not copied
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float64, (2, 3))})
    g.output(g.inputs[0] + g.weight("w", gd.float64, (2, 3)))
    x = np.full((2, 3), 0.5)
    floats.assert_bits(gd.evaluate(g, [x], weights=w)[0], x + arr)  # an add: rounds once
    out = str(tmp_path / "m.onnx")
    export(g, out, weights=w)
    floats.assert_bits(run(out, [x])[0], x + arr)


def test_compressed_members_are_not_memory_mapped(tmp_path: Path) -> None:
    path = str(tmp_path / "w.npz")
    np.savez_compressed(path, w=np.ones(3))
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("w.npy").compress_type != zipfile.ZIP_STORED


def test_rename_and_non_strict(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    gd.save_weights(path, {"model.wq": np.ones(2, np.float32), "model.wk": np.zeros(2, np.float32),
                           "lm_head": np.ones(1, np.float32)})  # fmt: skip
    g = gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, (2,))})
    g.output(g.inputs[0] * g.weight("q", gd.float32, (2,)) + g.weight("k", gd.float32, (2,)))
    x = np.array([3.0, -1.0], np.float32)

    def rename(name: str) -> str | None:
        return name.removeprefix("model.w") if name.startswith("model.") else None

    got = gd.evaluate(g, [x], weights=gd.load_weights(path, rename=rename))
    assert got[0].tolist() == [3.0, -1.0]
    mapping = {"model.wq": "q", "model.wk": "k"}
    with pytest.raises(gd.WeightError, match="not declared by the graph: 'lm_head'"):
        gd.evaluate(g, [x], weights=gd.load_weights(path, rename=mapping))
    relaxed = gd.load_weights(path, rename=mapping, strict=False)
    assert gd.evaluate(g, [x], weights=relaxed)[0].tolist() == [3.0, -1.0]


def test_errors_name_the_weights_and_both_types(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    gd.save_weights(path, {"a": np.ones(3, np.float16), "b": np.ones((2, 2), np.int32),
                           "extra": np.ones(1, np.int8)})  # fmt: skip
    g = gd.Graph("e", input_types={"x": gd.TensorType(gd.float32, (3,))})
    a = g.weight("a", gd.float32, (3,))
    b = g.weight("b", gd.int32, (4,))
    c = g.weight("c", gd.float32, (3,))
    g.output(g.inputs[0] + a + c, b)
    with pytest.raises(gd.WeightError) as err:
        gd.evaluate(g, [np.ones(3, np.float32)], weights=path)
    msg = str(err.value)
    assert "missing: 'c'" in msg
    assert "not declared by the graph: 'extra'" in msg
    assert "weight 'a' is float16" in msg and "declares it float32" in msg
    assert "weight 'b' has shape (2, 2)" in msg and "declares (4,)" in msg
    with pytest.raises(gd.WeightError, match="missing: 'c'"):
        export(g, str(tmp_path / "m.onnx"), weights=path)
    assert not (tmp_path / "m.onnx").exists()  # nothing written
    with pytest.raises(gd.WeightError, match="declares weights 'a', 'b', 'c': pass their data"):
        gd.evaluate(g, [np.ones(3, np.float32)])
    with pytest.raises(gd.WeightError, match="pass their data"):
        export(g)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(gd.WeightError, match="no weight file"):
        gd.load_weights(tmp_path / "absent.safetensors")
    (tmp_path / "w.bin").write_bytes(b"0")
    with pytest.raises(gd.WeightError, match=r"\.npz and \.safetensors"):
        gd.load_weights(tmp_path / "w.bin")
    (tmp_path / "bad.safetensors").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}")
    with pytest.raises(gd.WeightError, match="cannot read the weight file"):
        gd.load_weights(tmp_path / "bad.safetensors")
    gd.save_weights(tmp_path / "one.npz", {"w": np.ones(2)})
    gd.save_weights(tmp_path / "two.safetensors", {"w": np.ones(2)})
    with pytest.raises(gd.WeightError, match=r"weight 'w' is in .* and in"):
        gd.load_weights(tmp_path / "one.npz", tmp_path / "two.safetensors")


def test_declarations() -> None:
    g = gd.Graph("d", input_types={"x": gd.TensorType(gd.float32, (2,))})
    w = g.weight("w", gd.float32, (2,))
    assert g.weight("w", "float32", [2]) is w  # the same declaration: the same value
    with pytest.raises(gd.GraphError, match=r"declared float16\[2\], but it was declared"):
        g.weight("w", gd.float16, (2,))
    with pytest.raises(gd.ShapeError, match="symbolic dimension"):
        g.weight("v", gd.float32, ("n",))
    with pytest.raises(gd.GraphError, match="has an input of that name"):
        g.weight("x", gd.float32, (2,))
    with pytest.raises(gd.GraphError, match="non-empty name"):
        g.weight("", gd.float32, (2,))
    g.output(w * 2)
    assert "weight name=w" in str(g)
    gd.verify.verify(g)
    gd.verify.verify(gd.passes.canonicalize(g), explicit_casts=True)


def test_weights_are_never_folded_or_read_at_export(tmp_path: Path) -> None:
    g = gd.Graph("f", input_types={"x": gd.TensorType(gd.float32, (2,))})
    w = g.weight("w", gd.float32, (2,))
    g.output(g.inputs[0] + w * 2)
    lowered = gd.passes.canonicalize(g)
    assert [n.op for n in lowered.nodes if n.op != "input"] == ["weight", "constant", "mul", "add"]


def test_weight_names_and_onnx_names(tmp_path: Path) -> None:
    g = gd.Graph("n", input_types={"x": gd.TensorType(gd.float32, (2,))})
    (x,) = g.inputs
    # a weight named as a name the exporter would make (Mul_2, const_1): those skip it
    g.output(x * g.weight("Mul_2", gd.float32, (2,)) + g.weight("const_1", gd.float32, ()))
    w = {"Mul_2": np.array([2.0, 3.0], np.float32), "const_1": np.array(0.5, np.float32)}
    m = export(g, weights=w, check="full")
    floats.assert_bits(run(m, [np.ones(2, np.float32)])[0], np.array([2.5, 3.5], np.float32))
    bad = gd.Graph("o", input_types={"x": gd.TensorType(gd.float32, (2,))})
    bad.output(bad.inputs[0] + bad.weight("output0", gd.float32, (2,)))
    with pytest.raises(ExportError, match="name their outputs output0"):
        export(bad, weights={"output0": np.ones(2, np.float32)})


def test_large_weights_are_aligned_for_onnxruntime(tmp_path: Path) -> None:
    big = np.arange(ALIGN_ABOVE // 4 + 3, dtype=np.float32)
    path = tmp_path / "w.safetensors"
    gd.save_weights(path, {"small": np.ones(3, np.int8), "big": big})
    g = gd.Graph("a", input_types={"x": gd.TensorType(gd.float32, (big.size,))})
    g.output(g.inputs[0] + g.weight("big", gd.float32, big.shape),
             g.weight("small", gd.int8, (3,)))  # fmt: skip
    out = str(tmp_path / "m.onnx")
    model = export(g, out, weights=path)
    info = {t.name: {e.key: e.value for e in t.external_data} for t in model.graph.initializer}
    assert int(info["big"]["offset"]) % ALIGN == 0
    assert info["big"]["location"] == "m.onnx.data"
    got = run(out, [np.zeros(big.size, np.float32)])
    floats.assert_bits(got[0], big)  # 0 + big: exact
    assert got[1].tolist() == [1, 1, 1]


_CHILD = r"""
import json, resource, sys
import graphdsl as gd
from exporters.onnx import export
src, out, k, dim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, ("b", dim))})
y = g.inputs[0]
for i in range(k):
    y = y @ g.weight(f"w{i}", gd.float32, (dim, dim))
g.output(y)
w = gd.load_weights(src)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
export(g, out, weights=w, check="full")
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps([before * 1024, after * 1024]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB: Linux")
def test_export_holds_less_than_one_weight_in_memory(tmp_path: Path) -> None:
    """4 weights of 16 MB: the export's peak RSS grows by less than one of them (a fresh
    process: Linux keeps a parent's peak across fork and exec, so the parent writes the
    file from a child too)."""
    k, dim = 4, 2048
    src = str(tmp_path / "w.safetensors")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    write = (
        "import sys, numpy as np, graphdsl as gd; gd.save_weights(sys.argv[1], "
        f"{{f'w{{i}}': np.full(({dim}, {dim}), 0.5, np.float32) for i in range({k})}})"
    )
    subprocess.run([sys.executable, "-c", write, src], check=True, env=env)
    done = subprocess.run([sys.executable, "-c", _CHILD, src, str(tmp_path / "m.onnx"), str(k),
                           str(dim)], capture_output=True, text=True, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    before, after = json.loads(done.stdout)
    one = dim * dim * 4
    assert os.path.getsize(tmp_path / "m.onnx.data") >= k * one
    assert after - before < one, f"peak RSS grew by {(after - before) / 1e6:.1f} MB"
