"""examples/int8_mlp.py: a weight-only int8 MLP, checked against a numpy reference written
here (independently of graphdsl: float64 products of the int8 weights and their scales),
its exported file within 10% of the int8 weights' bytes, its weights INT8 initializers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import pytest
from backend import export, run
from script_modules import ROOT, load_script

import graphdsl as gd

SCRIPT = ROOT / "examples" / "int8_mlp.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_script("examples/int8_mlp.py", "int8_mlp")


def numpy_mlp(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """x @ (q * scale) + b per layer, ReLU between, in float64."""
    h = x.astype(np.float64)
    for k, (q, scale, b) in enumerate(layers):
        h = h @ (q.astype(np.float64) * scale.astype(np.float64)) + b.astype(np.float64)
        if k < len(layers) - 1:
            h = np.maximum(h, 0.0)
    return h


def test_weights_are_symmetric_int8_per_output_channel(example: ModuleType) -> None:
    floats = example.float_weights(np.random.default_rng(0))
    for (w, b), (q, scale, b2) in zip(floats, example.quantize_weights(floats), strict=True):
        assert q.dtype == np.int8 and q.shape == w.shape and b2 is b
        np.testing.assert_array_equal(scale, (np.abs(w).max(axis=0) / 127).astype(np.float32))
        # w / scale in float32, rounded half to even (Python's round), within [-127, 127]
        ratio = (w / scale).astype(np.float64)
        want = np.vectorize(round)(ratio).astype(np.int8)
        np.testing.assert_array_equal(q, want)
        assert np.abs(q.astype(np.int16)).max() == 127


def test_matches_a_numpy_reference_on_both_backends(example: ModuleType) -> None:
    layers = example.quantize_weights(example.float_weights(np.random.default_rng(0)))
    g = example.build(layers)
    model = export(g, check="full")
    rng = np.random.default_rng(1)
    for batch in (0, 1, 7):  # the batch is symbolic
        x = rng.standard_normal((batch, example.SIZES[0])).astype(np.float32)
        want = numpy_mlp(layers, x)
        # float32 roundings: the dequantized weights (an eps each), sums of up to 1024 terms
        tol = 1e-4 * max(float(np.abs(want).max(initial=0.0)), 1.0)
        for got in (gd.evaluate(g, {"x": x})[0], run(model, {"x": x})[0]):
            assert got.dtype == np.float32 and got.shape == (batch, example.SIZES[-1])
            np.testing.assert_allclose(got, want, rtol=0, atol=tol)


def test_file_is_the_int8_weights_within_10_percent(example: ModuleType, tmp_path: Path) -> None:
    layers = example.quantize_weights(example.float_weights(np.random.default_rng(0)))
    path = tmp_path / "int8_mlp.onnx"
    model = export(example.build(layers), path)
    weight_bytes = sum(q.nbytes for q, _, _ in layers)
    size = path.stat().st_size
    assert weight_bytes <= size <= 1.1 * weight_bytes, (size, weight_bytes)
    types = {tuple(t.dims): t.data_type for t in model.graph.initializer}
    for q, _, _ in layers:
        assert types[q.shape] == onnx.TensorProto.INT8
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMul") == 3 and "Cast" not in ops  # no float copy of a weight
    # the float32 model of the same weights is 4 times larger
    dequantized = export(example.build(layers, dequantized=True), tmp_path / "f32.onnx")
    assert all(t.data_type == onnx.TensorProto.FLOAT for t in dequantized.graph.initializer)
    assert (tmp_path / "f32.onnx").stat().st_size > 3.9 * weight_bytes


def test_the_script_prints_sizes_times_and_agreement(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "exported int8_mlp.onnx: " in out and " x the int8 weights" in out
    assert "ONNX nodes: {'DequantizeLinear': 3, 'MatMul': 3" in out
    assert out.count("us/call") == 10  # five timings for each of two batch sizes
    assert out.rstrip().endswith("within 0.0001 x max|output|: True")
    assert (tmp_path / "int8_mlp.onnx").stat().st_size > 0
