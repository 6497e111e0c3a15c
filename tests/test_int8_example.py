"""examples/int8_mlp.py: a weight-only int8 MLP, checked against a numpy reference written
here (independently of graphdsl: float64 products of the int8 weights and their scales),
its exported file within 10% of the int8 weights' bytes, its weights INT8 initializers.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import floats
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


def float32_bound(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                  x: np.ndarray) -> np.ndarray:  # fmt: skip
    """How far a float32 evaluation of the MLP (each sum in its own order) may be from
    :func:`numpy_mlp`, derived layer by layer (tests/floats.py's rule, u = 2**-24). With h
    the exact layer values (float64 here, a margin for its roundings), W = q * scale, and e
    the distance of the computed layer from h: the dequantized weight rounds once (W(1 + δ),
    |δ| <= u); a dot product of n terms is within γ_n of Σ|ĥ Ŵ| of the exact products of
    the values it reads (Higham (3.5)), and those are within e of h; so with c = γ_n (1 + u)
    + u the product is within ((1 + c) e + c |h|) |W| of h W; adding b rounds once more (u
    |h W + b| and u of that error); ReLU moves nothing apart."""
    u = floats.unit_roundoff(np.float32)
    h = x.astype(np.float64)
    e = np.zeros_like(h)
    for k, (q, scale, b) in enumerate(layers):
        w = q.astype(np.float64) * scale.astype(np.float64)
        c = floats.gamma(q.shape[0], np.float32) * (1 + u) + u
        s = h @ w + b.astype(np.float64)
        e = (1 + u) * ((1 + c) * e + c * np.abs(h) * (1 + 2.0**-40)) @ np.abs(w) + u * np.abs(s)
        h = np.maximum(s, 0.0) if k < len(layers) - 1 else s
    return e * (1 + 2.0**-40)


def test_weights_are_symmetric_int8_per_output_channel(example: ModuleType) -> None:
    fw = example.float_weights(np.random.default_rng(0))
    for (w, b), (q, scale, b2) in zip(fw, example.quantize_weights(fw), strict=True):
        assert q.dtype == np.int8 and q.shape == w.shape and b2 is b
        # a maximum, a division: rounded once
        floats.assert_bits(scale, (np.abs(w).max(axis=0) / 127).astype(np.float32))
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
        # float32 roundings: the dequantized weights (an u each), sums of up to 1024 terms
        bound = float32_bound(layers, x)
        for got in (gd.evaluate(g, {"x": x})[0], run(model, {"x": x})[0]):
            assert got.dtype == np.float32 and got.shape == (batch, example.SIZES[-1])
            floats.assert_close(got.astype(np.float64), want, bound, "int8 MLP")


def test_bit_for_bit_where_every_sum_is_exact(example: ModuleType) -> None:
    """The bound above grows with |W| layer by layer (loose: 0.24 where the outputs reach
    0.9). The same graph bit for bit where its sums are exact by construction, which the
    helper checks: weights in {-1, 0, 1}, 40 of them nonzero per column, scales 1/8, biases
    in eighths, x in {-1, 0, 1}: each layer's terms are multiples of 8**-layer, their sums
    at most 40**layer of them (under float32's 2**24 for 4 layers)."""
    rng = np.random.default_rng(5)
    layers = []
    for fan_in, fan_out in itertools.pairwise(example.SIZES):
        q = np.zeros((fan_in, fan_out), np.int8)
        for j in range(fan_out):
            rows = rng.choice(fan_in, 40, replace=False)
            q[rows, j] = rng.choice(np.array([-1, 1], np.int8), 40)
        scale = np.full(fan_out, 0.125, np.float32)
        layers.append((q, scale, (rng.integers(-8, 9, fan_out) / 8).astype(np.float32)))
    g = example.build(layers)
    x = rng.integers(-1, 2, (7, example.SIZES[0])).astype(np.float32)
    h = x.astype(np.float64)
    for k, (q, scale, b) in enumerate(layers):
        terms = floats.matmul_terms(h, q.astype(np.float64) * scale)
        terms = np.concatenate([terms, np.broadcast_to(b[:, None], (*terms.shape[:2], 1))], -1)
        assert floats.exactly_summable(terms, np.float32), k
        h = terms.sum(axis=-1)
        h = np.maximum(h, 0.0) if k < len(layers) - 1 else h
    assert np.abs(h).max() > 1  # (not all zero after the ReLUs)
    for got in (gd.evaluate(g, {"x": x})[0], run(export(g), {"x": x})[0]):
        floats.assert_exact_sum(got, h.astype(np.float32), terms, "int8 MLP, exact sums")


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
