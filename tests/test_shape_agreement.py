"""The type system, ``gd.evaluate`` and the exported model agree on every shape, or the user
gets a clear error at the line that built the op (never a raw numpy or onnxruntime one).

Reshape's 0 is numpy's zero-length dimension (ONNX would copy the input's dimension; the
exporter sets ``allowzero=1``). To keep a dimension, name it.
"""

from __future__ import annotations

import numpy as np
import pytest

import graphdsl as gd
from exporters.onnx import RunError, export, run


def agree(g: gd.Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """evaluate and onnxruntime give the same arrays, with shapes that fit the static types."""
    want = gd.evaluate(g, feeds)
    got = run(export(g, check="full"), feeds)
    bound: dict[str, int] = {}
    for s, arr in zip(g.inputs, feeds.values(), strict=True):
        bound.update({d: n for d, n in zip(s.shape, arr.shape, strict=True) if isinstance(d, str)})
    for o, w, r in zip(g.outputs, want, got, strict=True):
        assert r.dtype == w.dtype and r.shape == w.shape
        np.testing.assert_array_equal(r, w)
        assert len(o.shape) == w.ndim
        for d, n in zip(o.shape, w.shape, strict=True):
            if isinstance(d, int):
                assert d == n, f"type says {o.shape}, value has {w.shape}"
            elif d in bound:
                assert bound[d] == n, f"type says {o.shape} with {bound}, value has {w.shape}"
    return want


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
