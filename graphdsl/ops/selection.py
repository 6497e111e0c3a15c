"""Selection and scans: argmax, argmin, top_k, argsort (int64 indices) and cumsum.

Order is numpy's: values compare with ``<``, so -0.0 and +0.0 tie; a tie goes to the lower
index; NaN counts as the largest value (argmax and argmin both return the first NaN, as
numpy's do; a descending order puts NaNs first, an ascending one last). Index-like
arguments (``axis``, ``k``) are Python ints, never tensors, and never promote the data.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._define import REAL, Operand, Symbol, define, need, op
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import Shape, ShapeError, format_shape, normalize_axis
from graphdsl.types import OpTypeError, TensorType

__all__ = ["argmax", "argmin", "argsort", "cumsum", "top_k"]

ORDERED = REAL | {Kind.bool}  # what argmax, top_k and argsort order


def _python_int(value: object, what: str) -> int:
    """``value`` as an int: a Python int or numpy integer (not bool, not a tensor)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise OpTypeError(
            f"{what} must be a Python int, got {value!r} (of type {type(value).__name__}); "
            "pass a constant int (tensor-valued arguments are not supported)"
        )
    return operator.index(value)


def _checked(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> tuple[TensorType, int]:
    """The operand's type (of a dtype that can be ordered) and its normalized ``axis``."""
    t = types[0]
    need(ORDERED, Promoted(t.dtype, t.ambiguous), types, p)
    if t.rank == 0:
        raise ShapeError(
            f"the operand is a scalar ({t}); it needs rank >= 1: expand_dims or reshape it first"
        )
    axis = normalize_axis(_python_int(attrs.get("axis", -1), "axis"), t.rank)
    attrs["axis"] = axis
    return t, axis


def _flip_index(idx: np.ndarray, n: int) -> np.ndarray:
    return np.asarray(n - 1 - idx)


def _order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices sorting ``x`` along ``axis``, stably (ties keep the lower index first).

    numpy's stable sort is ascending with NaN last; a descending order that keeps ties in
    index order sorts the reversed array ascending and reads the result backwards.
    """
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return _flip_index(np.flip(backwards, axis), n)


# ---------------------------------------------------------------- argmax, argmin


def argmax(x: Operand, axis: int = -1, keepdims: bool = False) -> Symbol:
    """The index of the largest value along ``axis`` (int64): the first one on a tie, the
    first NaN where there is one (numpy's ``argmax``); -0.0 and +0.0 tie. Real dtypes and
    bool; the axis must not be empty.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("argmax", input_types={"x": gd.TensorType(gd.float32, (3, 4))})
    >>> x, = g.inputs
    >>> z = gd.ops.argmax(x)
    >>> z.type
    TensorType(int64[3])
    >>> g.output(z)
    >>> x = np.array([[1, 5, 5, 2], [1, np.nan, 9, np.nan], [-0.0, 0.0, -1, -2]], gd.float32.np)
    >>> gd.evaluate(g, {"x": x})[0]
    array([1, 1, 0])
    """
    return op("argmax", x, axis=axis, keepdims=bool(keepdims))


def argmin(x: Operand, axis: int = -1, keepdims: bool = False) -> Symbol:
    """The index of the smallest value along ``axis`` (int64): the first one on a tie, the
    first NaN where there is one (numpy's ``argmin``); -0.0 and +0.0 tie. Real dtypes and
    bool; the axis must not be empty.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("argmin", input_types={"x": gd.TensorType(gd.uint64, (2, 3))})
    >>> x, = g.inputs
    >>> z = gd.ops.argmin(x, axis=0, keepdims=True)
    >>> z.type
    TensorType(int64[1, 3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[2**64 - 1, 3, 7], [2**63, 3, 1]], gd.uint64.np)})[0]
    array([[1, 0, 1]])
    """
    return op("argmin", x, axis=axis, keepdims=bool(keepdims))


def _arg_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t, axis = _checked(p, types, attrs)
    if t.shape[axis] == 0:
        raise ShapeError(
            f"axis {axis} of shape {format_shape(t.shape)} is empty, so there is no index to "
            "return; reduce over a non-empty axis"
        )
    keep = bool(attrs.get("keepdims"))
    shape: Shape = tuple(1 if i == axis else d for i, d in enumerate(t.shape) if keep or i != axis)
    return (t.dtype,), TensorType(DType.int64, shape)


def _arg_impl(fn: Any) -> Any:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        x, axis = args[0], attrs["axis"]
        if x.shape[axis] == 0:
            raise ShapeError(
                f"axis {axis} of a value of shape {x.shape} is empty at run time, so there is "
                "no index to return; bind its dimension to a size >= 1"
            )
        return np.asarray(fn(x, axis=axis, keepdims=bool(attrs.get("keepdims"))), np.int64)

    return impl


define(argmax, _arg_rule, _arg_impl(np.argmax), "real or bool; the index: int64")
define(argmin, _arg_rule, _arg_impl(np.argmin), "real or bool; the index: int64")


# ---------------------------------------------------------------- top_k, argsort


def top_k(input: Operand, k: int, axis: int = -1) -> tuple[Symbol, Symbol]:
    """The ``k`` largest values along ``axis`` and their indices (int64), largest first;
    ties keep the lower index first, NaN counts as the largest value. ``k`` is a Python int,
    0 <= k <= the axis size. Real dtypes and bool; the values keep the dtype.

    As MAX's ``top_k`` (its signature), returns the tuple (values, indices): two nodes of op
    ``top_k`` (attribute ``result``), exported as one ONNX TopK.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("top_k", input_types={"x": gd.TensorType(gd.float32, (2, 4))})
    >>> x, = g.inputs
    >>> values, indices = gd.ops.top_k(x, 2)
    >>> values.type, indices.type
    (TensorType(float32[2, 2]), TensorType(int64[2, 2]))
    >>> g.output(values, indices)
    >>> x = np.array([[1, 3, 3, 2], [np.nan, 1, 5, 0]], gd.float32.np)
    >>> gd.evaluate(g, {"x": x})
    [array([[ 3.,  3.],
           [nan,  5.]], dtype=float32), array([[1, 2],
           [0, 2]])]
    """
    values = op("top_k", input, k=k, axis=axis, result="values")
    source = values.inputs[0]  # (a numpy array operand became a constant once)
    return values, op("top_k", source, k=k, axis=axis, result="indices")


_RESULTS = ("values", "indices")


def _top_k_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t, axis = _checked(p, types, attrs)
    k = _python_int(attrs.get("k"), "k")
    n = t.shape[axis]
    if k < 0 or (isinstance(n, int) and k > n):
        size = f"size {n}" if isinstance(n, int) else f"size {n!r}"
        raise ShapeError(
            f"k={k} for axis {axis} of shape {format_shape(t.shape)} ({size}); k must be "
            f"between 0 and the axis size"
        )
    attrs["k"] = k
    result = attrs.get("result", "values")
    if result not in _RESULTS:
        raise OpTypeError(f"result must be one of {_RESULTS}, got {result!r}")
    shape = tuple(k if i == axis else d for i, d in enumerate(t.shape))
    if result == "indices":
        return (t.dtype,), TensorType(DType.int64, shape)
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


def _top_k_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, axis, k = args[0], attrs["axis"], attrs["k"]
    if k > x.shape[axis]:
        raise ShapeError(
            f"top_k with k={k} on a value of shape {x.shape}: axis {axis} has only "
            f"{x.shape[axis]} elements at run time; bind its dimension to a size >= {k}"
        )
    idx = np.take(_order(x, axis, descending=True), np.arange(k), axis=axis).astype(np.int64)
    return idx if attrs["result"] == "indices" else np.take_along_axis(x, idx, axis)


# (top_k returns two symbols, each a node of op top_k: registered as the function of the op)
define(
    cast(Callable[..., Symbol], top_k),
    _top_k_rule,
    _top_k_impl,
    "real or bool; values keep the dtype, indices int64",
)


def argsort(x: Operand, ascending: bool = True, axis: int = -1) -> Symbol:
    """The indices (int64) that sort ``x`` along ``axis``, stably: equal values keep their
    order; NaN sorts as the largest value (last when ascending, first when descending);
    -0.0 and +0.0 are equal. Real dtypes and bool (MAX's ``argsort``; numpy's
    ``argsort(kind="stable")`` when ascending).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("argsort", input_types={"x": gd.TensorType(gd.float32, (5,))})
    >>> x, = g.inputs
    >>> z = gd.ops.argsort(x, ascending=False)
    >>> z.type
    TensorType(int64[5])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([2, np.nan, 7, 2, -1], gd.float32.np)})[0]
    array([1, 2, 0, 3, 4])
    """
    return op("argsort", x, ascending=bool(ascending), axis=axis)


def _argsort_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t, _ = _checked(p, types, attrs)
    return (t.dtype,), TensorType(DType.int64, t.shape)


def _argsort_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    order = _order(args[0], attrs["axis"], descending=not attrs["ascending"])
    return np.asarray(order, np.int64)


define(argsort, _argsort_rule, _argsort_impl, "real or bool; the indices: int64")


# ---------------------------------------------------------------- cumsum


def cumsum(x: Operand, axis: int = -1, exclusive: bool = False, reverse: bool = False) -> Symbol:
    """Running sums along ``axis`` (MAX's ``cumsum``), added in order, one at a time.
    ``exclusive``: each sum leaves its own element out: the inclusive sums shifted by one,
    after a +0.0 (as ONNX's reference CumSum); ``reverse``: sums run from the end. Keeps the
    dtype: integers wrap; float16/bfloat16 add in float32 and round once at the end. bool is
    refused (cast to an integer dtype first).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("cumsum", input_types={"x": gd.TensorType(gd.int8, (4,))})
    >>> x, = g.inputs
    >>> z = gd.ops.cumsum(x, exclusive=True)
    >>> z.type
    TensorType(int8[4])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([100, 27, 1, 5], gd.int8.np)})[0]
    array([   0,  100,  127, -128], dtype=int8)
    """
    return op("cumsum", x, axis=axis, exclusive=bool(exclusive), reverse=bool(reverse))


def _cumsum_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    if t.dtype is DType.bool and not p.bool_arithmetic:  # (max-graph types it as bool)
        raise OpTypeError(
            f"the operand is {t}: running sums of bool values are refused (they would "
            "overflow bool); cast to an integer dtype first, e.g. gd.ops.cast(x, gd.int32), "
            "to count"
        )
    need(REAL, Promoted(t.dtype, t.ambiguous), types, p)
    if t.rank == 0:
        raise ShapeError(f"the operand is a scalar ({t}); it needs rank >= 1: expand_dims it first")
    attrs["axis"] = normalize_axis(_python_int(attrs.get("axis", -1), "axis"), t.rank)
    return (t.dtype,), TensorType(t.dtype, t.shape, t.ambiguous)


def _cumsum_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, axis = args[0], attrs["axis"]
    n = x.shape[axis]
    if attrs["reverse"]:
        x = np.flip(x, axis)
    with np.errstate(all="ignore"):
        r = np.cumsum(x, axis=axis, dtype=x.dtype)
    if attrs["exclusive"] and n:
        # +0.0, then the inclusive sums but the last: sum(x[:j]) is cumsum(x)[j - 1] (so
        # the sum of a lone -0.0 is -0.0, as numpy's sum of it)
        zero = np.zeros_like(np.take(r, [0], axis=axis))
        r = np.concatenate([zero, np.take(r, np.arange(n - 1), axis=axis)], axis=axis)
    return np.flip(r, axis) if attrs["reverse"] else r


define(cumsum, _cumsum_rule, _cumsum_impl, "real (not bool); keeps the dtype")
