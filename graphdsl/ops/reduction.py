"""Reductions: sum, prod, max, min, mean, any, all, var, std, logsumexp over axes (all axes
when ``axis`` is None).

Results keep the operand's dtype (JAX's choice: integer sums wrap); a bool sum counts in the
policy's default int; mean, var, std and logsumexp of integers are in its default float;
any and all take their operand by truth value and give bool. Over an empty set each gives
its identity: 0, 1, the dtype's lowest (max) or highest (min) value, NaN (mean, var, std),
False (any), True (all), -inf (logsumexp).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.opdef import Impl, Rule
from graphdsl.ops._define import (
    FLOAT,
    NUMERIC,
    REAL,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    need,
    op,
)
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import Shape, normalize_axes
from graphdsl.types import OpTypeError, TensorType

__all__ = ["all", "any", "logsumexp", "max", "mean", "min", "prod", "std", "sum", "var"]

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


def _reduction(
    kinds: frozenset[Kind], *, bool_to: str | None, to_float: bool = False, keeps_bool: bool = False
) -> Rule:
    """``keeps_bool``: under a policy with ``bool_arithmetic`` (max-graph) a bool operand
    types as bool, as max.graph types it (sum, prod, mean), and is not computed."""

    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        t = types[0]
        c = Promoted(t.dtype, t.ambiguous)
        max_bool = t.dtype is DType.bool and keeps_bool and p.bool_arithmetic
        if t.dtype is DType.bool and bool_to == "int" and not max_bool:
            c = Promoted(p.default_int, t.ambiguous)
        if to_float and t.dtype.kind in TO_FLOAT and not max_bool:
            integer = keeps_bool and c.dtype.kind.is_integer
            typing = p.op_typing("float_math", [c]) if integer else None
            if typing is not None:  # max-graph: mean(int8) is int8, computed in float64
                need(kinds | TO_FLOAT, typing.result, types, p)
                out = TensorType(typing.result.dtype, _reduce_shape(t, attrs), t.ambiguous)
                return typing.in_dtypes, out
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
    _reduction(NUMERIC, bool_to="int", keeps_bool=True),
    _reduce_impl(lambda x, **k: np.sum(x, dtype=x.dtype, **k)),
    "numeric; bool -> default int",
)
define(
    prod,
    _reduction(NUMERIC, bool_to="int", keeps_bool=True),
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
    _reduction(FLOAT | {Kind.complex}, bool_to=None, to_float=True, keeps_bool=True),
    _reduce_impl(_mean),
    "floating; integers -> default float",
)


# ---------------------------------------------------------------- truth values


def any(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Whether any element over ``axis`` is true, by truth value (x != 0; NaN is true);
    any dtype, the result is bool; over an empty set, False.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("any", input_types={"x": gd.TensorType(gd.float32, (3, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.any(x, axis=1)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[0.0, -0.0], [0.0, np.nan], [2.0, 0.0]], gd.float32.np)})[0]
    array([False,  True,  True])
    """
    return _reduce("any", x, axis, keepdims)


def all(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """Whether every element over ``axis`` is true, by truth value (x != 0; NaN is true);
    any dtype, the result is bool; over an empty set, True.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("all", input_types={"x": gd.TensorType(gd.int8, (2, 'n'))})
    >>> x, = g.inputs
    >>> z = gd.ops.all(x, axis=1)
    >>> z.type
    TensorType(bool[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1, -3], [5, 0]], gd.int8.np)})[0]
    array([ True, False])
    >>> gd.evaluate(g, {"x": np.zeros((2, 0), gd.int8.np)})[0]
    array([ True,  True])
    """
    return _reduce("all", x, axis, keepdims)


def _truth_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    return (DType.bool,), TensorType(DType.bool, _reduce_shape(t, attrs))


define(
    any,
    _truth_rule,
    _reduce_impl(lambda x, **k: np.any(x, **k)),
    "any (by truth value); over an empty set: False",
    truthy=(0,),
)
define(
    all,
    _truth_rule,
    _reduce_impl(lambda x, **k: np.all(x, **k)),
    "any (by truth value); over an empty set: True",
    truthy=(0,),
)


# ---------------------------------------------------------------- statistics


def var(x: Operand, axis: Axis = None, keepdims: bool = False, correction: float = 0) -> Symbol:
    """Variance over ``axis``: sum((x - mean)**2) / max(n - correction, 0), as numpy's
    ``var`` with ``ddof=correction`` (two passes: the mean, then the squared deviations).
    Floating dtypes are kept (float16/bfloat16 compute in float32 and round once); integers
    and bool give the policy's default float; over an empty set, NaN.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("var", input_types={"x": gd.TensorType(gd.int32, (2, 4))})
    >>> x, = g.inputs
    >>> z = gd.ops.var(x, axis=1, correction=1)
    >>> z.type
    TensorType(float32[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[1, 2, 3, 4], [5, 5, 5, 5]], gd.int32.np)})[0]
    array([1.6666666, 0.       ], dtype=float32)
    """
    return op("var", x, axis=_axis_attr(axis), keepdims=bool(keepdims), correction=correction)


def std(x: Operand, axis: Axis = None, keepdims: bool = False, correction: float = 0) -> Symbol:
    """Standard deviation over ``axis``: the square root of :func:`var` (same arguments and
    result types); over an empty set, NaN.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("std", input_types={"x": gd.TensorType(gd.float16, (4,))})
    >>> x, = g.inputs
    >>> z = gd.ops.std(x)
    >>> z.type
    TensorType(float16[])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1, 3, 1, 3], gd.float16.np)})[0]
    array(1., dtype=float16)
    """
    return op("std", x, axis=_axis_attr(axis), keepdims=bool(keepdims), correction=correction)


def logsumexp(x: Operand, axis: Axis = None, keepdims: bool = False) -> Symbol:
    """log(sum(exp(x))) over ``axis``, computed stably as m + log(sum(exp(x - m))) with m
    the maximum (0 where m is infinite): all -inf gives -inf, a +inf gives inf, a NaN NaN;
    over an empty set, -inf. Floating dtypes are kept (float16/bfloat16 compute in float32
    and round once); integers and bool give the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("logsumexp", input_types={"x": gd.TensorType(gd.float32, (3, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.logsumexp(x, axis=1)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 1.0]], gd.float32.np)
    >>> np.round(gd.evaluate(g, {"x": x})[0], 2)  # 1000 + log(2): no overflow
    array([1000.69,     -inf,      inf], dtype=float32)
    """
    return _reduce("logsumexp", x, axis, keepdims)


def _axis_attr(axis: Axis) -> int | tuple[int, ...] | None:
    return axis if axis is None or isinstance(axis, int) else tuple(axis)


def _moment_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    c = attrs.get("correction", 0)
    if (
        isinstance(c, bool)
        or not isinstance(c, (int, float, np.integer, np.floating))
        or not math.isfinite(c)
        or c < 0
    ):
        raise OpTypeError(
            f"correction must be a finite number >= 0 (a Python int or float: 0 for the "
            f"population variance, 1 for the sample variance), got {c!r}"
        )
    attrs["correction"] = int(c) if isinstance(c, (int, np.integer)) else float(c)
    return _reduction(FLOAT, bool_to=None, to_float=True)(p, types, attrs)


def _count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    return math.prod(x.shape[a] for a in axes)


def _var(x: np.ndarray, axis: tuple[int, ...], keepdims: bool, correction: float) -> Any:
    # the two-pass formula, written out (numpy's own var does the same), so that the ONNX
    # lowering can follow it step by step: the sum over n, the squared deviations, the sum
    n = _count(x, axis)
    dt = x.dtype.type
    if not axis:  # nothing reduced: each element is its own mean
        squares = (x - x) * (x - x)
    else:
        mean = np.sum(x, axis=axis, keepdims=True, dtype=x.dtype) / dt(n)
        d = x - mean
        squares = np.sum(d * d, axis=axis, keepdims=keepdims, dtype=x.dtype)
    # (``max`` here is the op above: the divisor is written without it)
    return squares / dt(n - correction if n > correction else 0)


def _moment_impl(root: bool) -> Impl:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        with np.errstate(all="ignore"):
            v = _var(args[0], attrs["axis"], bool(attrs.get("keepdims")), attrs["correction"])
            return np.asarray(np.sqrt(v) if root else v)

    return impl


def _logsumexp(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> Any:
    # m + log(sum(exp(x - m))): the largest term is exp(0) = 1, so nothing overflows and the
    # sum is at least 1; an infinite m shifts by 0 (exp then gives inf or 0, as it should)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf) if axis else x
    shift = np.where(np.isfinite(m), m, np.zeros_like(m))
    e = np.exp(x - shift)
    s = np.sum(e, axis=axis, keepdims=True, dtype=x.dtype) if axis else e
    r = np.log(s) + shift
    return r if keepdims or not axis else np.squeeze(r, axis=axis)


define(
    var,
    _moment_rule,
    _moment_impl(root=False),
    "floating; integers -> default float; over an empty set: NaN",
)
define(
    std,
    _moment_rule,
    _moment_impl(root=True),
    "floating; integers -> default float; over an empty set: NaN",
)
define(
    logsumexp,
    _reduction(FLOAT, bool_to=None, to_float=True),
    _reduce_impl(_logsumexp),
    "floating; integers -> default float; over an empty set: -inf",
)
