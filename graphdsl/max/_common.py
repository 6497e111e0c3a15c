"""What graphdsl.max's op modules share: the operand types and argument conversions."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from enum import Enum
from typing import Any

import numpy as np

from graphdsl.graph import Symbol
from graphdsl.max._graph import Graph, TensorValue, Weight
from graphdsl.max._types import (
    Dim,
    UnsupportedError,
)
from graphdsl.types import OpTypeError

TensorValueLike = TensorValue | Weight | Symbol | int | float | np.ndarray | np.generic
DimLike = int | str


def _arg(x: Any) -> Any:
    """An operand as graphdsl takes it: a Weight becomes a value of the current graph."""
    return Graph.current.add_weight(x) if isinstance(x, Weight) else x


def _value(x: Any, what: str) -> Symbol:
    x = _arg(x)
    if not isinstance(x, Symbol):
        raise OpTypeError(
            f"{what}: {x!r} is not a tensor value; make it one with ops.constant(value, dtype, "
            "device)"
        )
    return x


def _dims(shape: Iterable[Any], what: str) -> list[int | str]:
    if isinstance(shape, Symbol):
        raise UnsupportedError(
            f"{what}: a shape given as a tensor value (MAX's dynamic shapes) is not supported "
            "by graphdsl; give the dimensions (ints and names)"
        )
    return [Dim(d.item() if isinstance(d, np.generic) else d) for d in shape]


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
