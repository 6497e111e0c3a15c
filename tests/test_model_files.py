"""Model files and sessions: run() never serves a stale model, export() never loses one.

- run() keys its sessions by what decides the model: a path by the model file (and its
  external data files) as they are on disk now, a ModelProto by its content.
- export() is atomic: both files are written under temporary names beside the target,
  checked, then renamed into place; on any failure (an ExportError, a full disk, Ctrl-C)
  the files at the path are as they were, and no temporary file is left behind.
- run() on a model whose external data is missing or too short raises RunError naming the
  file and the tensor (onnxruntime would read past the end of a memory map: SIGBUS).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import floats
import numpy as np
import onnx
import pytest
from backend import export, run

import graphdsl as gd
from exporters.onnx import ExportError, RunError
from exporters.onnx import _export as export_module
from exporters.onnx._files import ALIGN, ALIGN_ABOVE

X = {"x": np.arange(4, dtype=np.float32)}


def affine(scale: float) -> gd.Graph:
    """x * w with w a 4-element constant."""
    g = gd.Graph(f"affine{scale}", input_types={"x": gd.TensorType(gd.float32, (4,))})
    g.output(g.inputs[0] * g.constant(np.full(4, scale, np.float32)))
    return g


def weighted(scale: float) -> gd.Graph:
    """A graph with a 1 KiB weight; exported with external data when the threshold is low."""
    g = gd.Graph(f"weighted{scale}", input_types={"x": gd.TensorType(gd.float32, (4,))})
    g.output(g.inputs[0] @ g.constant(np.full((4, 64), scale, np.float32)))
    return g


def weighted_result(scale: float) -> np.ndarray:
    return np.full(64, X["x"].sum() * scale, np.float32)


def check_weighted(got: np.ndarray, scale: float) -> None:
    """``weighted(scale)``'s result: sums of 0..3 times scale, exact by construction (the
    helper checks it)."""
    terms = floats.matmul_terms(X["x"], np.full((4, 64), scale, np.float32))[0]
    floats.assert_exact_sum(got, weighted_result(scale), terms, f"weighted({scale})")


@pytest.fixture
def external(monkeypatch: pytest.MonkeyPatch) -> None:
    """Constants of 1 KiB and more go to external data (normally from 1 GiB)."""
    monkeypatch.setattr(export_module, "EXTERNAL_DATA_THRESHOLD", 1024)


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("as_path", [str, Path])
def test_reexport_to_the_same_path_runs_the_new_model(tmp_path: Path, as_path: type) -> None:
    path = as_path(tmp_path / "m.onnx")
    export(affine(2.0), path)
    floats.assert_bits(run(path, X)[0], X["x"] * 2)  # x * w: rounds once
    export(affine(3.0), path)
    floats.assert_bits(run(path, X)[0], X["x"] * 3)  # x * w: rounds once
    export(affine(2.0), path)  # back again: not the first session either
    floats.assert_bits(run(path, X)[0], X["x"] * 2)  # x * w: rounds once


def test_reexport_with_external_data_runs_the_new_model(tmp_path: Path, external: None) -> None:
    path = tmp_path / "m.onnx"
    export(weighted(1.0), path)
    assert (tmp_path / "m.onnx.data").is_file()
    check_weighted(run(path, X)[0], 1.0)
    export(weighted(0.5), path)
    check_weighted(run(path, X)[0], 0.5)


def test_proto_changed_in_place_runs_the_new_model() -> None:
    m = export(affine(2.0))
    floats.assert_bits(run(m, X)[0], X["x"] * 2)  # x * w: rounds once
    m.CopyFrom(export(affine(5.0)))
    floats.assert_bits(run(m, X)[0], X["x"] * 5)  # x * w: rounds once
    # a change to one initializer's bytes, nothing else
    (init,) = [t for t in m.graph.initializer if t.dims == [4]]
    init.CopyFrom(onnx.numpy_helper.from_array(np.full(4, 7.0, np.float32), init.name))
    floats.assert_bits(run(m, X)[0], X["x"] * 7)  # x * w: rounds once


def test_failed_export_leaves_the_previous_files(tmp_path: Path, external: None) -> None:
    path = tmp_path / "m.onnx"
    export(weighted(1.0), path)
    before = files(tmp_path)
    assert set(before) == {"m.onnx", "m.onnx.data"}
    g = gd.Graph("bad", input_types={"x": gd.TensorType(gd.float32, (4,))})
    w = g.constant(np.full((4, 64), 3.0, np.float32))  # other bytes than the saved weights
    g.output(gd.ops.cast(g.inputs[0] @ w, gd.complex64))
    with pytest.raises(ExportError, match="complex"):
        export(g, path)  # fails while lowering, after the weights were written
    assert files(tmp_path) == before
    check_weighted(run(path, X)[0], 1.0)


@pytest.mark.parametrize(
    "failure", [KeyboardInterrupt(), OSError(errno.ENOSPC, "No space left on device")]
)
@pytest.mark.parametrize("big", [False, True])
def test_interrupted_save_leaves_the_previous_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException, big: bool
) -> None:
    if big:
        monkeypatch.setattr(export_module, "EXTERNAL_DATA_THRESHOLD", 1024)
    path = tmp_path / "m.onnx"
    export(weighted(1.0), path)
    before = files(tmp_path)
    real_save = onnx.save_model

    def save_then_fail(model: onnx.ModelProto, target: str, *args: object, **kw: object) -> None:
        real_save(model, target, *args, **kw)  # half way: a file is written
        with open(target, "r+b") as f:
            f.truncate(7)
        raise failure

    monkeypatch.setattr(onnx, "save_model", save_then_fail)
    # a full disk is an ExportError naming the path; Ctrl-C stays a KeyboardInterrupt
    if isinstance(failure, OSError):
        with pytest.raises(ExportError, match=r"cannot write the model to .*m\.onnx.*No space"):
            export(weighted(0.5), path)
    else:
        with pytest.raises(KeyboardInterrupt):
            export(weighted(0.5), path)
    monkeypatch.setattr(onnx, "save_model", real_save)
    assert files(tmp_path) == before  # nothing changed, no temporary file left
    check_weighted(run(path, X)[0], 1.0)


def test_export_into_a_missing_folder_is_an_export_error(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="cannot write"):
        export(affine(2.0), tmp_path / "no" / "such" / "m.onnx")


@pytest.mark.parametrize("damage", ["truncate", "remove"])
def test_damaged_external_data_is_a_run_error(tmp_path: Path, external: None, damage: str) -> None:
    path = tmp_path / "m.onnx"
    export(weighted(1.0), path)
    data = tmp_path / "m.onnx.data"
    if damage == "truncate":
        with open(data, "r+b") as f:
            f.truncate(os.path.getsize(data) // 2)
    else:
        data.unlink()
    model = onnx.load(str(path), load_external_data=False)
    (tensor,) = [t.name for t in model.graph.initializer if t.data_location == 1]
    with pytest.raises(RunError, match=rf"m\.onnx\.data.*{tensor}|{tensor}.*m\.onnx\.data"):
        run(path, X)
    with pytest.raises(RunError):  # the same again: no session was cached for it
        run(str(path), X)


def test_run_of_a_file_replaced_by_garbage_is_a_run_error(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    export(affine(2.0), path)
    run(path, X)
    path.write_bytes(b"not a model")
    with pytest.raises(RunError, match=r"cannot read an ONNX model from .*m\.onnx"):
        run(path, X)


def test_quick_reexports_run_the_new_model_even_where_file_stamps_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # file timestamps come from a coarse clock and a replaced file's inode can be reused:
    # two exports of equal size within one tick can stamp alike (the fuzzer, exporting every
    # graph to one path, met it); this process's own exports are counted per path
    from exporters.onnx import _run as run_module

    monkeypatch.setattr(run_module, "file_stamp", lambda p: (1, 1, 1, 1))
    path = tmp_path / "m.onnx"
    for scale in (2.0, 3.0, 2.0):
        export(affine(scale), path)
        floats.assert_bits(run(path, X)[0], X["x"] * scale)  # x * w: rounds once


def test_the_data_file_keeps_only_the_bytes_a_tensor_reads(tmp_path: Path) -> None:
    # export(exact=False) makes a 4-bit constant MatMulNBits' own packed copy: the constant's
    # INT4 bytes, written when it was lowered, are read by no tensor of the saved model, and
    # the data file is rewritten without them (every range still aligned; the model runs)
    w = np.random.default_rng(0).normal(size=(1024, 4096)).astype(np.float32)
    q, scale, zp = gd.ops.quantize_weights(w, "int4", block_size=32)
    g = gd.Graph("q4", input_types={"x": gd.TensorType(gd.float32, ("n", 1024))})
    x = g.inputs[0]
    y = gd.ops.qmatmul(x, q, scale, zp, axis=0, block_size=32)
    g.output(y * g.weight("s", gd.float32, (1,)))
    path = tmp_path / "m.onnx"
    weights = {"s": np.array([2.0], np.float32)}
    model = export(g, path, weights=weights, exact=False)
    saved = onnx.load(str(path), load_external_data=False)
    ranges = sorted((int(e["offset"]), int(e["length"])) for e in (
        {x.key: x.value for x in t.external_data} for t in saved.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL))  # fmt: skip
    assert any(length >= ALIGN_ABOVE for _, length in ranges)  # (the packed weight)
    assert all(o % ALIGN == 0 for o, length in ranges if length >= ALIGN_ABOVE)
    size = os.path.getsize(str(path) + ".data")
    end = max(o + length for o, length in ranges)
    assert size == end and size - sum(length for _, length in ranges) < ALIGN * len(ranges)
    feeds = [np.random.default_rng(1).normal(size=(3, 1024)).astype(np.float32)]
    floats.assert_bits(run(str(path), feeds)[0], run(model, feeds)[0], "the saved model")
