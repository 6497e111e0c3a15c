"""Refusals fuzzed: run-time indices that may be out of range and inputs whose sizes may not
agree. Whatever the reference (``gd.evaluate``) refuses, ``run()`` refuses too, with a
``RunError`` naming the op and its line; whatever it accepts, ``run()`` returns the same
arrays. Nothing the reference refuses may come back as a result (issue 26: a Gather of a
Range past its table came back as a clamped slice).

The main fuzzer (tests/test_fuzz.py) draws its indices in range, as constants; here they
are graph inputs, drawn over [-n, n) for an axis of n, or over [-n - 3, n + 3) (half the
index sets), so many cases hold one out of range.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from backend import export, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphdsl as gd
from exporters.onnx import RunError

SETTINGS = settings(max_examples=30, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
INDEX_OPS = ["gather", "gather_nd", "scatter", "scatter_add", "scatter_nd", "scatter_nd_add"]


def _both(g: gd.Graph, inputs: list[np.ndarray]) -> tuple[Any, Any]:
    """(the reference's outputs or its refusal, run()'s outputs or its refusal)."""
    try:
        want: Any = gd.evaluate(g, inputs)
    except (gd.IndexRangeError, gd.InputError, gd.ShapeError) as e:
        want = e
    try:
        got: Any = run(export(g), inputs)
    except RunError as e:
        got = e
    return want, got


def _agree(want: Any, got: Any, op: str) -> None:
    if isinstance(want, Exception):
        assert isinstance(got, RunError), f"the reference refused ({want}), run() gave {got}"
        if isinstance(want, gd.IndexRangeError):  # the op and the user's line, as evaluate's
            assert re.search(rf"\b{op} at test_fuzz_refusals\.py:\d+", str(got)), str(got)
            assert "out of range" in str(got)
        return
    assert not isinstance(got, Exception), f"the reference accepted, run() refused: {got}"
    for w, o in zip(want, got, strict=True):
        assert w.dtype == o.dtype and w.shape == o.shape
        assert np.array_equal(w, o), (w, o)


@st.composite
def index_cases(draw: st.DrawFn, op: str) -> tuple[str, gd.Graph, list[np.ndarray]]:
    rows, cols = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    symbolic = draw(st.booleans())  # the data's first axis named: its size known at run time
    data_shape: tuple[int | str, int] = ("n" if symbolic else rows, cols)
    itype = draw(st.sampled_from([gd.int32, gd.int64]))
    k = draw(st.integers(1, 4))

    def idx(n: int, shape: tuple[int, ...]) -> np.ndarray:
        wide = 3 if draw(st.booleans()) else 0  # half the index sets may leave the range
        size = int(np.prod(shape))
        values = draw(st.lists(st.integers(-n - wide, n - 1 + wide), min_size=size,
                               max_size=size))  # fmt: skip
        return np.array(values, itype.np).reshape(shape)

    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) + 1
    if op == "gather":
        axis = draw(st.sampled_from([0, 1, -1]))
        i = idx(x.shape[axis], (k,))
        types = [gd.TensorType(gd.float32, data_shape), gd.TensorType(itype, ("k",))]
        g = gd.Graph(op, input_types=types)
        g.output(gd.ops.gather(g.inputs[0], g.inputs[1], axis=axis))
        return op, g, [x, i]
    if op == "gather_nd":
        i = np.stack([idx(rows, (k,)), idx(cols, (k,))], axis=-1)
        types = [gd.TensorType(gd.float32, data_shape), gd.TensorType(itype, ("k", 2))]
        g = gd.Graph(op, input_types=types)
        g.output(gd.ops.gather_nd(g.inputs[0], g.inputs[1]))
        return op, g, [x, i]
    if op in ("scatter", "scatter_add"):  # along axis 1 of x, one index per update
        i = idx(cols, (rows, 1))
        u = np.full((rows, 1), 100.0, np.float32)
        column = (data_shape[0], 1)
        types = [gd.TensorType(gd.float32, data_shape), gd.TensorType(gd.float32, column),
                 gd.TensorType(itype, column)]  # fmt: skip
        g = gd.Graph(op, input_types=types)
        g.output(getattr(gd.ops, op)(*g.inputs, axis=1))
        return op, g, [x, u, i]
    # scatter_nd, scatter_nd_add: whole rows, distinct where the reference writes in order
    i = idx(rows, (k, 1))
    if op == "scatter_nd":
        i = i[np.unique(np.where(i < 0, i + rows, i).ravel(), return_index=True)[1]]
    u = np.full((len(i), cols), 100.0, np.float32)
    types = [gd.TensorType(gd.float32, data_shape), gd.TensorType(gd.float32, ("k", cols)),
             gd.TensorType(itype, ("k", 1))]  # fmt: skip
    g = gd.Graph(op, input_types=types)
    g.output(getattr(gd.ops, op)(*g.inputs))
    return op, g, [x, u, i]


@pytest.mark.parametrize("op", INDEX_OPS)
def test_out_of_range_indices_are_refused_by_both(op: str) -> None:
    @SETTINGS
    @given(index_cases(op))
    def check(case: tuple[str, gd.Graph, Any]) -> None:
        _, g, inputs = case
        want, got = _both(g, inputs)
        _agree(want, got, op)

    check()


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 8), st.booleans())
def test_positions_past_the_table_are_refused_by_both(rows: int, seq: int, dyn: bool) -> None:
    """The position embeddings of a sequence (``range`` over its length, gathered from a
    table of ``rows``): a sequence longer than the table is an error on both sides."""
    g = gd.Graph("pos", input_types={"ids": gd.TensorType(gd.int64, ("seq",))})
    with g:
        table = g.constant(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2))
        pos = gd.ops.range(0, g.inputs[0].shape[0])
        out = gd.ops.gather(table, pos)
        g.output(out + gd.ops.gather(table, g.inputs[0]) if dyn else out)
    ids = np.zeros(seq, np.int64)
    want, got = _both(g, [ids])
    assert isinstance(want, gd.IndexRangeError) == (seq > rows)
    _agree(want, got, "gather")


@SETTINGS
@given(st.integers(0, 4), st.integers(0, 4), st.sampled_from(["add", "matmul", "concat"]))
def test_sizes_that_do_not_agree_are_refused_by_both(n: int, m: int, how: str) -> None:
    """Two inputs that share the dimension name ``n``, bound to sizes that may differ."""
    g = gd.Graph("sizes", input_types={"x": gd.TensorType(gd.float32, ("n", 2)),
                                       "y": gd.TensorType(gd.float32, ("n", 2))})  # fmt: skip
    x, y = g.inputs
    if how == "add":
        g.output(x + y)
    elif how == "matmul":
        g.output(gd.ops.matmul(gd.ops.transpose(x, (1, 0)), y))
    else:
        g.output(gd.ops.concat([x, y], axis=1))
    xs = [np.ones((n, 2), np.float32), np.ones((m, 2), np.float32)]
    want, got = _both(g, xs)
    assert isinstance(want, gd.InputError) == (n != m)
    _agree(want, got, how)


@pytest.mark.parametrize("op", INDEX_OPS)
def test_the_refusals_are_drawn(op: str) -> None:
    """Not vacuous: the strategy gives refused and accepted cases of every op (the same
    derandomized draws as the test above)."""
    seen = {True: 0, False: 0}

    @SETTINGS
    @given(index_cases(op))
    def count(case: tuple[str, gd.Graph, Any]) -> None:
        _, g, inputs = case
        try:
            gd.evaluate(g, inputs)
            seen[False] += 1
        except gd.IndexRangeError:
            seen[True] += 1

    count()
    assert seen[True] >= 3 and seen[False] >= 3, seen


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
