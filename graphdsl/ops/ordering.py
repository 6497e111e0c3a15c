"""``bottom_k``: the k smallest values along an axis and their indices, smallest first, as
MAX's ``bottom_k`` (the mirror of :func:`graphdsl.ops.top_k`).

Order is numpy's: NaN counts as the largest value (so it comes last), -0.0 and +0.0 tie,
and a tie goes to the lower index.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.ops._define import Operand, Symbol, define, op
from graphdsl.ops.selection import _checked, _python_int
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, format_shape
from graphdsl.types import OpTypeError, TensorType

__all__ = ["bottom_k"]


def bottom_k(input: Operand, k: int, axis: int = -1) -> tuple[Symbol, Symbol]:
    """The ``k`` smallest values along ``axis`` and their indices (int64), smallest first;
    ties keep the lower index first, NaN counts as the largest value. ``k`` is a Python
    int, 0 <= k <= the axis size. Real dtypes and bool; the values keep the dtype. Two
    nodes of op ``bottom_k`` (attribute ``result``), exported as one ONNX TopK with
    ``largest=0``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("bottom_k", input_types={"x": gd.TensorType(gd.float32, (2, 4))})
    >>> x, = g.inputs
    >>> values, indices = gd.ops.bottom_k(x, 2)
    >>> g.output(values, indices)
    >>> x = np.array([[1, 3, 1, 2], [np.nan, 1, -5, 0]], gd.float32.np)
    >>> gd.evaluate(g, {"x": x})
    [array([[ 1.,  1.],
           [-5.,  0.]], dtype=float32), array([[0, 2],
           [2, 3]])]
    """
    values = op("bottom_k", input, k=k, axis=axis, result="values")
    source = values.inputs[0]
    return values, op("bottom_k", source, k=k, axis=axis, result="indices")


def _rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t, axis = _checked(p, types, attrs)
    k = _python_int(attrs.get("k"), "k")
    n = t.shape[axis]
    if k < 0 or (isinstance(n, int) and k > n):
        raise ShapeError(
            f"k={k} for axis {axis} of shape {format_shape(t.shape)}; k must be between 0 and "
            "the axis size"
        )
    attrs["k"] = k
    result = attrs.get("result", "values")
    if result not in ("values", "indices"):
        raise OpTypeError(f"result must be 'values' or 'indices', got {result!r}")
    shape = tuple(k if i == axis else d for i, d in enumerate(t.shape))
    if result == "indices":
        return (t.dtype,), TensorType(DType.int64, shape)
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


def _impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, axis, k = args[0], attrs["axis"], attrs["k"]
    if k > x.shape[axis]:
        raise ShapeError(
            f"bottom_k with k={k} on a value of shape {x.shape}: axis {axis} has only "
            f"{x.shape[axis]} elements at run time"
        )
    order = np.argsort(x, axis=axis, kind="stable")  # ascending, NaN last, ties in order
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return idx if attrs["result"] == "indices" else np.take_along_axis(x, idx, axis)


define(cast(Any, bottom_k), _rule, _impl, "real or bool; values keep the dtype, indices int64")
