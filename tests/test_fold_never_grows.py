"""Constant folding never grows a model (issue 15): a node on constants becomes a constant
only when its value takes no more bytes than the constants it is made from, or is tiny.

The issue: an int8 weight-only model exported every int8 weight of up to 65,536 elements
folded into a float32 initializer (4x the bytes). Here such a model exports its weights as
the int8 initializers they are, the file within 10% of their bytes.
"""

from __future__ import annotations

from collections import Counter

import floats
import numpy as np
import onnx
import pytest
from backend import export, run

import graphdsl as gd
from graphdsl.passes import canonicalize, dce, fold_constants
from graphdsl.passes.rewrite import MAX_FOLDED_ELEMENTS, TINY_FOLDED_ELEMENTS

# [K, N] weights: the first has MAX_FOLDED_ELEMENTS elements, the most the old rule folded
LAYERS = [(256, 256), (256, 128), (128, 10)]


def _weights(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (rng.integers(-127, 128, size=(k, n)).astype(np.int8),
         rng.uniform(0.001, 0.02, size=n).astype(np.float32))
        for k, n in LAYERS
    ]  # fmt: skip


def _hand_written(weights: list[tuple[np.ndarray, np.ndarray]]) -> gd.Graph:
    """The issue's model: each int8 weight cast to float32 and scaled per output channel by
    hand (ops any graph has: cast, mul, matmul), ReLU between the layers."""
    g = gd.Graph("int8_mlp", input_types={"x": gd.TensorType(gd.float32, ("batch", 256))})
    (h,) = g.inputs
    for k, (w, scale) in enumerate(weights):
        dequantized = gd.ops.cast(g.constant(w), gd.float32) * g.constant(scale)
        h = h @ dequantized
        if k < len(weights) - 1:
            h = gd.ops.relu(h)
    g.output(h)
    return g


def _mlp_bound(x: np.ndarray, weights: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """How far two float32 evaluations of ``_hand_written`` (each summing in its own order)
    may be apart. The dequantized weights W_l are the same float32 values on both sides (a
    cast and one rounded multiply). With h_l the exact layer values (float64 here, a margin
    for its roundings) and e_l a bound on one evaluation's distance from them: a layer's
    dot products of n terms are within γ_n Σ|h W| of the exact products of the values they
    read (Higham (3.5), the float32 result included), and those values are within e_{l-1}
    of h_{l-1}; ReLU moves nothing apart. So
    ``e_l = ((1 + γ_n) e_{l-1} + γ_n |h_{l-1}|) |W_l|``, e_0 = 0, and two evaluations are
    within 2 e_L."""
    h = x.astype(np.float64)
    e = np.zeros_like(h)
    for k, (w, scale) in enumerate(weights):
        wd = (w.astype(np.float32) * scale).astype(np.float64)
        g = floats.gamma(w.shape[0], np.float32)
        e = ((1 + g) * e + g * np.abs(h) * (1 + 2.0**-40)) @ np.abs(wd)
        h = h @ wd
        if k < len(weights) - 1:
            h = np.maximum(h, 0.0)
    return 2 * e


def _int8_bytes(model: onnx.ModelProto) -> int:
    return sum(
        t.dims[0] * t.dims[1]
        for t in model.graph.initializer
        if t.data_type == onnx.TensorProto.INT8
    )


def test_int8_weights_export_as_int8_and_the_file_is_their_size(tmp_path: object) -> None:
    weights = _weights()
    weight_bytes = sum(w.nbytes for w, _ in weights)
    assert LAYERS[0][0] * LAYERS[0][1] == MAX_FOLDED_ELEMENTS  # the old rule folded it
    g = _hand_written(weights)
    path = f"{tmp_path}/int8_mlp.onnx"
    model = export(g, path, check="full")
    inits = {tuple(t.dims): onnx.TensorProto.DataType.Name(t.data_type)
             for t in model.graph.initializer}  # fmt: skip
    for k, n in LAYERS:
        assert inits[(k, n)] == "INT8"
    assert _int8_bytes(model) == weight_bytes
    size = len(open(path, "rb").read())  # noqa: SIM115
    # the scales add 4 * (256 + 128 + 10) bytes (1.6%), the graph a few hundred
    assert weight_bytes <= size <= 1.1 * weight_bytes, (size, weight_bytes)
    # and it computes what the graph says, up to the order of float32 sums (256 terms a layer)
    x = np.random.default_rng(1).standard_normal((3, 256)).astype(np.float32)
    got, want = run(model, {"x": x})[0], gd.evaluate(g, {"x": x})[0]
    floats.assert_close(got, want, _mlp_bound(x, weights), "int8 MLP")
    # (that bound grows with |W| layer by layer: loose. Bit for bit where every sum is exact
    # by construction, checked: ternary weights, power-of-two scales, x in {-1, 0, 1})
    rng = np.random.default_rng(2)
    ternary = [(rng.integers(-1, 2, (k, n)).astype(np.int8), np.full(n, 2.0**-4, np.float32))
               for k, n in LAYERS]  # fmt: skip
    g3 = _hand_written(ternary)
    x = rng.integers(-1, 2, (3, 256)).astype(np.float32)
    h = x.astype(np.float64)
    for k, (w, scale) in enumerate(ternary):
        terms = floats.matmul_terms(h, w * scale.astype(np.float64))
        h = np.maximum(terms.sum(axis=-1), 0) if k < len(ternary) - 1 else terms.sum(axis=-1)
        assert floats.exactly_summable(terms, np.float32), k
    got = run(export(g3, check="full"), {"x": x})[0]
    floats.assert_exact_sum(got, gd.evaluate(g3, {"x": x})[0], terms, "int8 MLP, exact sums")


def _folded(g: gd.Graph) -> Counter[str]:
    return Counter(n.op for n in dce(fold_constants(g)).nodes)


def test_a_widening_cast_of_a_constant_is_not_folded() -> None:
    g = gd.Graph("w", input_types={"x": gd.TensorType(gd.float32, (300,))})
    (x,) = g.inputs
    w = g.constant(np.arange(300).astype(np.int8))
    g.output(x * gd.ops.cast(w, gd.float32))
    ops = _folded(g)
    assert ops["cast"] == 1  # 1200 bytes from 300: stays a cast of the int8 constant
    (const,) = [n for n in dce(fold_constants(g)).nodes if n.op == "constant"]
    assert const.dtype is gd.int8


def test_a_narrowing_or_same_size_result_is_folded() -> None:
    g = gd.Graph("n", input_types={"x": gd.TensorType(gd.int8, (300,))})
    (x,) = g.inputs
    wide = g.constant(np.arange(300).astype(np.float32))
    g.output(
        x + gd.ops.cast(wide, gd.int8),  # 300 bytes from 1200
        gd.ops.reshape(gd.ops.transpose(g.constant(np.ones((20, 15), np.int8))), (300,)) + x,
    )
    ops = _folded(g)
    assert ops["cast"] == 0 and ops["transpose"] == 0 and ops["reshape"] == 0
    assert all(n.dtype is gd.int8 for n in dce(fold_constants(g)).nodes if n.op == "constant")


def test_a_broadcast_scalar_stays_a_scalar_unless_the_result_is_tiny() -> None:
    g = gd.Graph("b", input_types={"x": gd.TensorType(gd.float32, (1000,)),
                                   "y": gd.TensorType(gd.float32, (8,))})  # fmt: skip
    x, y = g.inputs
    one = g.constant(np.float32(1.5))
    g.output(x + gd.ops.broadcast_to(one, (1000,)), y + gd.ops.broadcast_to(one, (8,)))
    folded = dce(fold_constants(g))
    assert Counter(n.op for n in folded.nodes)["broadcast_to"] == 1  # the 1000 one
    shapes = sorted(n.shape for n in folded.nodes if n.op == "constant")
    assert shapes == [(), (8,)]  # the tiny broadcast became a constant of 8 elements
    x_in = np.arange(1000, dtype=np.float32)
    y_in = np.arange(8, dtype=np.float32)
    a, b = gd.evaluate(folded, {"x": x_in, "y": y_in}), gd.evaluate(g, {"x": x_in, "y": y_in})
    for u, v in zip(a, b, strict=True):
        floats.assert_bits(u, v)  # x + 1.5: rounds once


def test_the_bytes_of_each_distinct_constant_count_once() -> None:
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float64, (100,))})
    (x,) = g.inputs
    c = g.constant(np.arange(100, dtype=np.float32))
    d = g.constant(np.ones(100, np.float32))
    # 800 float64 bytes: from c twice (400 bytes), no; from c and d (800 bytes), yes
    g.output(x + gd.ops.cast(c * c, gd.float64), x + (c + d).cast(gd.float64))
    folded = dce(fold_constants(g))
    ops = Counter(n.op for n in folded.nodes)
    assert ops["mul"] == 0 and ops["add"] == 2  # c * c and c + d fold (400 from 400, 800)
    assert ops["cast"] == 2  # both widening casts of 100 elements stay


@pytest.mark.parametrize("n", [TINY_FOLDED_ELEMENTS, TINY_FOLDED_ELEMENTS + 1])
def test_the_tiny_threshold(n: int) -> None:
    g = gd.Graph("t", input_types={"x": gd.TensorType(gd.float32, (n,))})
    (x,) = g.inputs
    g.output(x + gd.ops.cast(g.constant(np.ones(n, np.int8)), gd.float32))
    assert _folded(g)["cast"] == (0 if n <= TINY_FOLDED_ELEMENTS else 1)
    assert Counter(n.op for n in canonicalize(g).nodes)["cast"] == _folded(g)["cast"]
