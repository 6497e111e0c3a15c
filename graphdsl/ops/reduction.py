"""Reductions: sum, prod, max, min, mean over axes (all axes when ``axis`` is None).

Results keep the operand's dtype (JAX's choice: integer sums wrap); a bool sum counts in the
policy's default int, a mean of integers is in its default float. Over an empty set each
gives ONNX's identity: 0, 1, the dtype's lowest (max) or highest (min) value, NaN (mean).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.opdef import Impl, Rule
from graphdsl.ops._define import FLOAT, NUMERIC, REAL, TO_FLOAT, Operand, Symbol, define, need, op
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import Shape, normalize_axes
from graphdsl.types import TensorType

__all__ = ["max", "mean", "min", "prod", "sum"]

Axis = int | Sequence[int] | None


def _reduce(name: str, x: Operand, axis: Axis, keepdims: bool) -> Symbol:
    ax = tuple(axis) if isinstance(axis, list) else axis
    return op(name, x, axis=ax, keepdims=bool(keepdims))


def sum(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Sum over ``axis`` (all axes when None). Keeps the dtype (integers wrap); bool sums in
    the policy's default int; float16/bfloat16 accumulate in float32 and round once.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sum", input_types={"x": gd.TensorType(gd.int8, (2, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.sum(x, axis=1)
    >>> z.type
    TensorType(int8[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[100, 100], [1, 2]], gd.int8.np)})[0]
    array([-56,   3], dtype=int8)
    """
    return _reduce("sum", x, axis, keepdims)


def prod(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Product over ``axis``. Keeps the dtype (integers wrap); bool in the default int.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("prod", input_types={"x": gd.TensorType(gd.bool, (2, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.prod(x, axis=0)
    >>> z.type
    TensorType(int32[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[True, True], [True, False]], gd.bool.np)})[0]
    array([1, 0], dtype=int32)
    """
    return _reduce("prod", x, axis, keepdims)


def max(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Maximum over ``axis``; keeps the dtype; NaN propagates; -0.0 < +0.0 (IEEE 754-2019);
    over an empty set, the dtype's lowest value (-inf for floats).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("max", input_types={"x": gd.TensorType(gd.float32, (2, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.max(x, axis=1)
    >>> z.type
    TensorType(float32[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1.0, np.nan], [2.0, 3.0]], gd.float32.np)})[0]
    array([nan,  3.], dtype=float32)
    """
    return _reduce("max", x, axis, keepdims)


def min(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Minimum over ``axis``; keeps the dtype; NaN propagates; -0.0 < +0.0 (IEEE 754-2019);
    over an empty set, the dtype's highest value (inf for floats).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("min", input_types={"x": gd.TensorType(gd.int16, (2, 0))})
    >>> x, = g.inputs
    >>> z = gd.ops.min(x, axis=1)
    >>> z.type
    TensorType(int16[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[], []], gd.int16.np)})[0]
    array([32767, 32767], dtype=int16)
    """
    return _reduce("min", x, axis, keepdims)


def mean(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Mean over ``axis``. Floating dtypes are kept; integers and bool give the policy's
    default float; over an empty set, NaN.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("mean", input_types={"x": gd.TensorType(gd.int32, (2, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.mean(x, axis=1, keepdims=True)
    >>> z.type
    TensorType(float32[2, 1])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1, 2], [3, 5]], gd.int32.np)})[0]
    array([[1.5],
           [4. ]], dtype=float32)
    """
    return _reduce("mean", x, axis, keepdims)


def _reduce_shape(t: TensorType, attrs: dict[str, Any]) -> Shape:
    axes = normalize_axes(attrs.get("axis"), t.rank)
    attrs["axis"] = axes
    if attrs.get("keepdims"):
        return tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    return tuple(d for i, d in enumerate(t.shape) if i not in axes)


def _reduction(kinds: frozenset[Kind], *, bool_to: str | None, to_float: bool = False) -> Rule:
    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        t = types[0]
        c = Promoted(t.dtype, t.ambiguous)
        if t.dtype is DType.bool and bool_to == "int":
            c = Promoted(p.default_int, t.ambiguous)
        if to_float and t.dtype.kind in TO_FLOAT:
            c = Promoted(p.default_float, t.ambiguous)
        need(kinds, c, types, p)
        return (c.dtype,), TensorType(c.dtype, _reduce_shape(t, attrs), c.ambiguous)

    return rule


def _reduce_impl(fn: Callable[..., Any]) -> Impl:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        x = args[0]
        with np.errstate(all="ignore"):
            r = fn(x, axis=attrs["axis"], keepdims=bool(attrs.get("keepdims")))
        return np.asarray(r).astype(x.dtype if x.dtype.kind != "b" else np.bool_)

    return impl


def _identity(x: np.ndarray, lowest: bool) -> Any:
    """The identity of max (``lowest``) or min over ``x``'s dtype: ONNX's value for a
    reduction over an empty set (numpy has none and raises)."""
    if x.dtype.kind == "b":
        return not lowest
    if x.dtype.kind == "f":
        return -np.inf if lowest else np.inf
    info = np.iinfo(x.dtype)
    return info.min if lowest else info.max


def _extremum_impl(fn: Callable[..., Any], lowest: bool) -> Impl:
    def reduce(x: np.ndarray, axis: Any, keepdims: bool) -> Any:
        r = fn(x, axis=axis, keepdims=keepdims, initial=_identity(x, lowest))
        if x.dtype.kind != "f":
            return r
        # zeros compare equal, and which one numpy (or onnxruntime) keeps depends on the order
        # of accumulation: order them as IEEE 754-2019's maximum and minimum do, -0.0 < +0.0
        wanted = ~np.signbit(x) if lowest else np.signbit(x)  # max: a +0.0; min: a -0.0
        found = np.any((x == 0) & wanted, axis=axis, keepdims=keepdims)
        zero = np.where(found, 0.0 if lowest else -0.0, -0.0 if lowest else 0.0)
        return np.where(r == 0, zero.astype(x.dtype), r)

    return _reduce_impl(reduce)


def _mean(x: np.ndarray, axis: Any, keepdims: bool) -> Any:
    n = math.prod(x.shape[a] for a in axis) if axis else 1
    if n == 0:  # NaN, as numpy's mean of an empty slice (without its warning)
        return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, np.nan, x.dtype)
    return np.mean(x, axis=axis, dtype=x.dtype, keepdims=keepdims)


define(
    sum,
    _reduction(NUMERIC, bool_to="int"),
    _reduce_impl(lambda x, **k: np.sum(x, dtype=x.dtype, **k)),
    "numeric; bool -> default int",
)
define(
    prod,
    _reduction(NUMERIC, bool_to="int"),
    _reduce_impl(lambda x, **k: np.prod(x, dtype=x.dtype, **k)),
    "numeric; bool -> default int",
)
define(
    max,
    _reduction(REAL | {Kind.bool}, bool_to=None),
    _extremum_impl(np.max, lowest=True),
    "real or bool; over an empty set: the dtype's lowest value",
)
define(
    min,
    _reduction(REAL | {Kind.bool}, bool_to=None),
    _extremum_impl(np.min, lowest=False),
    "real or bool; over an empty set: the dtype's highest value",
)
define(
    mean,
    _reduction(FLOAT | {Kind.complex}, bool_to=None, to_float=True),
    _reduce_impl(_mean),
    "floating; integers -> default float",
)
