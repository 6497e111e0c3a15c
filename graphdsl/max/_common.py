"""What graphdsl.max's op modules share: the operand types and argument conversions."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from enum import Enum
from typing import Any

import numpy as np

from graphdsl.graph import Symbol
from graphdsl.max._core_dims import to_core as dim_to_core
from graphdsl.max._dim import Dim
from graphdsl.max._errors import UnsupportedError
from graphdsl.max._types import Weight
from graphdsl.max._value import TensorValue, arg
from graphdsl.types import OpTypeError

TensorValueLike = TensorValue | Weight | Symbol | Dim | int | float | np.ndarray | np.generic
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
