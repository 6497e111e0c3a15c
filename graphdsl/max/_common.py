"""What graphdsl.max's op modules share: the operand types and argument conversions."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from enum import Enum
from typing import Any

import numpy as np

from graphdsl.graph import Symbol
from graphdsl.max._dim import Dim
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._errors import UnsupportedError, refuse
from graphdsl.max._types import Weight
from graphdsl.max._value import TensorValue, arg
from graphdsl.types import OpTypeError

TensorValueLike = TensorValue | Weight | Symbol | Dim | int | float | np.ndarray | np.generic
"""What an op takes as a tensor operand, as max.graph's ``TensorValueLike``: a
:class:`~graphdsl.max.TensorValue` (or graphdsl's :class:`~graphdsl.Symbol`), a
:class:`~graphdsl.max.Weight` (added to the current graph), a static ``Dim`` (an int64
scalar), a Python number (a literal, promoted as max.graph promotes one) or a numpy array
or scalar (a constant)."""
DimLike = int | str | Dim | np.integer


def _arg(x: Any) -> Any:
    """An operand as graphdsl takes it (see :func:`graphdsl.max._value.arg`)."""
    return arg(x)


def _value(x: Any, what: str) -> Symbol:
    x = arg(x)
    if not isinstance(x, Symbol):
        raise OpTypeError(
            f"{what}: {x!r} is not a tensor value; make it one with ops.constant(value, dtype, "
            "device)"
        )
    return x


def _dims(shape: Iterable[Any], what: str) -> list[int | str]:
    """A shape given as dims (ints, names, Dims) as graphdsl's dimensions."""
    if isinstance(shape, (Symbol, TensorValue)):
        raise UnsupportedError(
            f"{what}: a shape given as a tensor value (MAX's dynamic shapes) is not supported "
            "by graphdsl; give the dimensions (ints and names)"
        )
    return [dim_to_core(d.item() if isinstance(d, np.generic) else d) for d in shape]


def _layout(layout: Enum | str) -> str:
    return str(layout.value) if isinstance(layout, Enum) else layout


def _number(v: Any) -> bool | int | float:
    return v.item() if isinstance(v, np.generic) else v  # type: ignore[no-any-return]


def _rank(x: Any) -> int | None:
    """The rank of a tensor operand (None for others: literals, weights)."""
    if isinstance(x, TensorValue):
        return x._symbol.rank
    return x.rank if isinstance(x, Symbol) else None


def _axis_words(x: Any, axis: Any, words: str, *, extra: int = 0) -> str | None:
    """MAX's ``words`` (see :func:`graphdsl.max._errors.max_words`) for ``axis`` out of range
    of ``x``, formatted with ``axis``, ``rank`` (``x``'s), ``lo``, ``hi`` and ``end`` (the
    axes allowed: ``lo..hi``, ``hi = end - 1``; ``extra`` more for an op that adds axes);
    None when ``axis`` is in range or not an int, or ``x``'s rank is unknown."""
    rank = _rank(x)
    if rank is None or isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        return None
    end = rank + extra
    if -end <= axis < end:
        return None
    return words.format(axis=axis, rank=rank, lo=-end, hi=end - 1, end=end)


def _dtype_words(x: Any) -> str:
    """A tensor operand's dtype as MAX's messages quote it: ``'DType.float32'``."""
    return f"'DType.{x.dtype.name}'"


def _scatter_words(
    input: Any, updates: Any, axis: Any, indices: Any = None, *, nd: bool = False
) -> str | None:
    """MAX's checks of a scatter (along ``axis``; ``nd``: a scatter_nd): an axis out of
    range gives MAX's words (returned, for graphdsl's error to follow); updates of another
    dtype than the input, or indices other than int32 and int64, MAX refuses (graphdsl's
    own scatters would promote them), raised here with MAX's words."""
    words = None
    if not nd:
        words = _axis_words(
            input, axis, "Invalid axis value {axis}. Axis must be in range [{lo}, {hi}]"
        )
    a, b = arg(input), arg(updates)
    if words is None and isinstance(a, Symbol) and isinstance(b, Symbol) and a.dtype != b.dtype:
        if nd:
            first = (
                f"The input dtype (DType.{a.dtype.name}) and updates dtype "
                f"(DType.{b.dtype.name}) must match"
            )
        else:
            first = (
                f"The input dtype {_dtype_words(a)} and updates dtype {_dtype_words(b)} "
                "must match."
            )
        refuse(first, "(graphdsl: cast the updates to the input's dtype first)")
    if words is None and indices is not None:
        words = _indices_words(indices)
        if words is not None:
            refuse(words, "(graphdsl: cast the indices to int64 first)")
    return words


def _indices_words(indices: Any) -> str | None:
    """MAX's words for the index tuples of a scatter_nd of a dtype other than int32, int64."""
    i = arg(indices)
    if isinstance(i, Symbol) and i.dtype.name not in ("int32", "int64"):
        return f"Invalid indices dtype: {_dtype_words(i)}. Indices must be of type int32 or int64."
    return None


def _axis(axis: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise OpTypeError(f"{what}: axis must be an int, got {axis!r}")
    return operator.index(axis)


def _only(op: str, **given: tuple[object, object]) -> None:
    for name, (value, supported) in given.items():
        if value != supported:
            raise UnsupportedError(
                f"{op}: {name}={value!r} is not supported by graphdsl (only {supported!r})"
            )
