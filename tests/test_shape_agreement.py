"""The type system, ``gd.evaluate`` and the exported model agree on every shape, or the user
gets a clear error at the line that built the op (never a raw numpy or onnxruntime one).

Reshape's 0 is numpy's zero-length dimension (ONNX would copy the input's dimension; the
exporter sets ``allowzero=1``). To keep a dimension, name it.
"""

from __future__ import annotations

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd
from exporters.onnx import RunError


def agree(g: gd.Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """evaluate and onnxruntime give the same arrays, with shapes that fit the static types."""
    want = gd.evaluate(g, feeds)
    got = run(export(g, check="full"), feeds)
    bound: dict[str, int] = {}
    for s, arr in zip(g.inputs, feeds.values(), strict=True):
        bound.update({d: n for d, n in zip(s.shape, arr.shape, strict=True) if isinstance(d, str)})
    for o, w, r in zip(g.outputs, want, got, strict=True):
        assert r.dtype == w.dtype and r.shape == w.shape
        assert_same(r, w)
        assert len(o.shape) == w.ndim
        for d, n in zip(o.shape, w.shape, strict=True):
            if isinstance(d, int):
                assert d == n, f"type says {o.shape}, value has {w.shape}"
            elif d in bound:
                assert bound[d] == n, f"type says {o.shape} with {bound}, value has {w.shape}"
    return want


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, NaN matching NaN and zero signs (tests/floats.py): the values here are
    data moved, or 0s and 1s, whose sums, products, means and softmax (exp(0) = 1, 1 / n
    rounded once) are exact by construction."""
    floats.assert_bits(got, want)


def seq_graph(*dims: int | str) -> gd.Graph:
    return gd.Graph("r", input_types={"x": gd.TensorType(gd.float32, dims)})


def test_reshape_zero_is_a_zero_length_dimension_not_a_copy() -> None:
    g = seq_graph("b", "seq", 8)
    with pytest.raises(gd.ShapeError, match=r"zero-length.*\('b', 'seq', 2, 4\)"):
        gd.ops.reshape(g.inputs[0], (0, 0, 2, 4))


def test_reshape_keeps_named_dimensions() -> None:
    g = seq_graph("b", "seq", 8)
    y = gd.ops.reshape(g.inputs[0], ("b", "seq", 2, 4))
    assert y.shape == ("b", "seq", 2, 4)
    g.output(y)
    agree(g, {"x": np.arange(48, dtype=np.float32).reshape(2, 3, 8)})


def test_reshape_of_zero_length_dimensions_agrees() -> None:
    g = seq_graph("b", 0, 4)
    x = g.inputs[0]
    a, b_, c = gd.ops.reshape(x, ("b", 4, 0)), gd.ops.reshape(x, (-1, 4)), gd.ops.reshape(x, (0,))
    assert (a.shape, b_.shape, c.shape) == (("b", 4, 0), (0, 4), (0,))
    g.output(a, b_, c)
    agree(g, {"x": np.zeros((3, 0, 4), np.float32)})


@pytest.mark.parametrize(
    ("dims", "target", "words"),
    [
        (("b", 8), ("c", 8), "cannot tell"),  # c is no dimension of x
        (("b", 8), ("b", 4), "b\\*8.*b\\*4"),
        (("b", "seq", 8), (0, 0, 2, 4), "zero-length"),
        ((2, 0), (0, -1), "-1"),  # numpy: cannot infer -1 next to a zero-length dim
    ],
)
def test_reshape_that_cannot_hold_is_a_shape_error(
    dims: tuple[int | str, ...], target: tuple[int | str, ...], words: str
) -> None:
    g = seq_graph(*dims)
    with pytest.raises(gd.ShapeError, match=words):
        gd.ops.reshape(g.inputs[0], target)


def test_reshape_whose_size_fails_at_run_time_is_a_clear_error() -> None:
    # (b, 3) -> (-1, 2) holds only for even b: the type says b*3/2
    g = seq_graph("b", 3)
    y = gd.ops.reshape(g.inputs[0], (-1, 2))
    assert y.shape == ("b*3/2", 2)
    g.output(y)
    agree(g, {"x": np.ones((4, 3), np.float32)})
    odd = {"x": np.ones((3, 3), np.float32)}
    at_line = r"reshape \(at .*test_shape_agreement.*9 elements\).*\(-1, 2\)"
    with pytest.raises(gd.ShapeError, match=at_line):
        gd.evaluate(g, odd)
    with pytest.raises(RunError, match="Reshape"):
        run(export(g), odd)


# Reductions over an empty set (a symbolic dimension bound to 0 at run time). numpy has no
# answer for max/min; ONNX's (and TensorFlow's) is the identity: the dtype's lowest value for
# max (-inf for floats), its highest for min. mean is NaN (numpy, JAX); sum 0, prod 1.
REDUCE_DTYPES = [gd.bool, gd.int8, gd.int16, gd.int32, gd.int64, gd.uint8, gd.uint16,
                 gd.uint32, gd.uint64, gd.float16, gd.bfloat16, gd.float32, gd.float64]  # fmt: skip


def empty_identity(op: str, dt: gd.DType) -> float | int | bool:
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    if op == "mean":
        return float("nan")
    lowest = op == "max"
    if dt is gd.bool:
        return not lowest
    if dt.is_float:
        return -np.inf if lowest else np.inf
    return int(dt.min if lowest else dt.max)


@pytest.mark.parametrize("dt", REDUCE_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean"])
def test_reductions_over_an_empty_axis_agree(op: str, dt: gd.DType) -> None:
    g = gd.Graph("empty", input_types={"x": gd.TensorType(dt, ("n", 3))})
    y = getattr(gd.ops, op)(g.inputs[0], axis=0)  # every reduction takes every dtype here
    g.output(y, getattr(gd.ops, op)(g.inputs[0], axis=0, keepdims=True))
    out = agree(g, {"x": np.zeros((0, 3), dt.np)})
    assert_same(out[0], np.full((3,), empty_identity(op, dt)).astype(y.dtype.np))
    # the same model, bound to other sizes afterwards: nothing was specialized to n = 0
    agree(g, {"x": np.ones((2, 3), dt.np)})


@pytest.mark.parametrize("dt", [gd.float32, gd.float16, gd.int32])
def test_softmax_over_an_empty_axis_is_empty(dt: gd.DType) -> None:
    g = gd.Graph("sm", input_types={"x": gd.TensorType(dt, (2, "n"))})
    g.output(gd.ops.softmax(g.inputs[0], axis=-1), gd.ops.softmax(g.inputs[0], axis=0))
    out = agree(g, {"x": np.zeros((2, 0), dt.np)})
    assert out[0].shape == (2, 0)
    agree(g, {"x": np.ones((2, 3), dt.np)})


@pytest.mark.parametrize(
    "dt", [gd.int8, gd.int16, gd.int32, gd.int64, gd.uint8, gd.uint16, gd.uint32, gd.uint64,
           gd.float16, gd.bfloat16, gd.float32, gd.float64], ids=lambda d: d.name
)  # fmt: skip
def test_matmul_and_sums_over_an_empty_contraction(dt: gd.DType) -> None:
    g = gd.Graph("mm", input_types={"x": gd.TensorType(dt, (2, "n")),
                                    "y": gd.TensorType(dt, ("n", 3))})  # fmt: skip
    x, y = g.inputs
    g.output(x @ y, gd.ops.sum(x, axis=1), gd.ops.prod(y, axis=0))
    out = agree(g, {"x": np.zeros((2, 0), dt.np), "y": np.zeros((0, 3), dt.np)})
    assert_same(out[0], np.zeros((2, 3), dt.np))
    assert_same(out[2], np.ones(3, dt.np))
