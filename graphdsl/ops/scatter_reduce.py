"""Scatters that combine: ``scatter_max``, ``scatter_min``, ``scatter_mul`` (along an axis, as
ONNX's ScatterElements with a reduction) and their ``_nd`` forms (index tuples, ONNX's
ScatterND with a reduction), as MAX's ops of those names.

Each update combines with what is at its target, one after another in the indices'
row-major order (numpy's ``np.maximum.at``, ``np.minimum.at``, ``np.multiply.at``): a NaN
update or target makes the result NaN for max and min; integer products wrap. The shapes,
dtypes and index rules are :func:`graphdsl.ops.scatter`'s and :func:`graphdsl.ops.scatter_nd`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.ops._define import Operand, Symbol, define, op
from graphdsl.ops.indexing import (
    _numbers_only,
    _scatter_nd_parts,
    _scatter_nd_rule,
    _scatter_rule,
    _scatter_where,
)
from graphdsl.types import TensorType

__all__ = [
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_mul",
]


def scatter_max(input: Operand, updates: Operand, indices: Operand, axis: int = -1) -> Symbol:
    """A copy of ``input`` where each update along ``axis`` at ``indices`` keeps the larger of
    itself and what is there (NaN wins), as MAX's ``scatter_max``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("smax", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_max(x, np.array([5, -1, 2], np.float32), np.array([0, 1, 0])))
    >>> gd.evaluate(g, {"x": np.array([1, 0, np.nan], np.float32)})[0]
    array([ 5.,  0., nan], dtype=float32)
    """
    return op("scatter_max", input, updates, indices, axis=axis)


def scatter_min(input: Operand, updates: Operand, indices: Operand, axis: int = -1) -> Symbol:
    """:func:`scatter_max` keeping the smaller (NaN wins), as MAX's ``scatter_min``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("smin", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_min(x, np.array([5, -1, 2], np.int32), np.array([0, 1, 0])))
    >>> gd.evaluate(g, {"x": np.array([3, 0, 7], np.int32)})[0]
    array([ 2, -1,  7], dtype=int32)
    """
    return op("scatter_min", input, updates, indices, axis=axis)


def scatter_mul(input: Operand, updates: Operand, indices: Operand, axis: int = -1) -> Symbol:
    """:func:`scatter_max` multiplying (repeated indices multiply in turn; integers wrap),
    as MAX's ``scatter_mul``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("smul", input_types={"x": gd.TensorType(gd.int8, (2,))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_mul(x, np.array([16, 16, 3], np.int8), np.array([0, 0, 1])))
    >>> gd.evaluate(g, {"x": np.array([1, 2], np.int8)})[0]
    array([0, 6], dtype=int8)
    """
    return op("scatter_mul", input, updates, indices, axis=axis)


def scatter_nd_max(input: Operand, updates: Operand, indices: Operand) -> Symbol:
    """:func:`graphdsl.ops.scatter_nd` keeping the larger (NaN wins), as MAX's
    ``scatter_nd_max``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sndmax", input_types={"x": gd.TensorType(gd.float32, (2, 2))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_nd_max(x, np.array([[3, -3]], np.float32), np.array([[1]])))
    >>> gd.evaluate(g, {"x": np.zeros((2, 2), np.float32)})[0]
    array([[0., 0.],
           [3., 0.]], dtype=float32)
    """
    return op("scatter_nd_max", input, updates, indices)


def scatter_nd_min(input: Operand, updates: Operand, indices: Operand) -> Symbol:
    """:func:`graphdsl.ops.scatter_nd` keeping the smaller (NaN wins), as MAX's
    ``scatter_nd_min``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sndmin", input_types={"x": gd.TensorType(gd.int64, (2, 2))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_nd_min(x, np.array([-4, 4]), np.array([[0, 1], [1, 1]])))
    >>> gd.evaluate(g, {"x": np.zeros((2, 2), np.int64)})[0]
    array([[ 0, -4],
           [ 0,  0]])
    """
    return op("scatter_nd_min", input, updates, indices)


def scatter_nd_mul(input: Operand, updates: Operand, indices: Operand) -> Symbol:
    """:func:`graphdsl.ops.scatter_nd` multiplying, as MAX's ``scatter_nd_mul``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sndmul", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_nd_mul(x, np.array([2, 4], np.float32), np.array([[1], [1]])))
    >>> gd.evaluate(g, {"x": np.array([3, 5], np.float32)})[0]
    array([ 3., 40.], dtype=float32)
    """
    return op("scatter_nd_mul", input, updates, indices)


def _numeric(rule: Any, what: str) -> Any:
    """``rule`` refusing bool values (MAX's combining scatters take numbers)."""
    return _numbers_only(rule, f"; {what} combines numbers:")


def _elements_impl(kind: str) -> Any:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        x, u, idx = args
        res: np.ndarray = x.copy()
        where = _scatter_where(x, idx, attrs["axis"])
        with np.errstate(all="ignore"):
            _combine(kind, res, where, np.broadcast_to(u, idx.shape))
        return res

    return impl


def _nd_impl(kind: str) -> Any:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        res, u, where = _scatter_nd_parts(args)
        with np.errstate(all="ignore"):
            _combine(kind, res, where, u)
        return res

    return impl


def _combine(kind: str, res: np.ndarray, where: Any, u: np.ndarray) -> None:
    """Combine ``u`` into ``res`` at ``where``, one update after another in order."""
    ufunc = {"max": np.maximum, "min": np.minimum, "mul": np.multiply}[kind]
    ufunc.at(res, where, u)  # maximum/minimum propagate NaN, as the lowering does


for _kind in ("max", "min", "mul"):
    _what = f"scatter_{_kind}"
    define(
        {"max": scatter_max, "min": scatter_min, "mul": scatter_mul}[_kind],
        _numeric(_scatter_rule, _what),
        _elements_impl(_kind),
        "input, updates: numeric (promote); indices: integer",
    )
    define(
        {"max": scatter_nd_max, "min": scatter_nd_min, "mul": scatter_nd_mul}[_kind],
        _numeric(_scatter_nd_rule, f"scatter_nd_{_kind}"),
        _nd_impl(_kind),
        "input, updates: numeric (promote); indices: integer",
    )
