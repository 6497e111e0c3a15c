"""Conversions: ``cast`` (explicit) and MAX's ``implicit_cast`` (both operands to their join)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind, dtype
from graphdsl.ops._convert import cast_array
from graphdsl.ops._define import Operand, Symbol, define, op
from graphdsl.policies import Policy
from graphdsl.types import OpTypeError, TensorType

__all__ = ["cast", "cast_array", "implicit_cast"]


def cast(x: Operand, to: DType | str) -> Symbol:
    """Explicit conversion to ``to`` (never ambiguous). Integers narrow by wrapping; floats
    to integers truncate toward zero and saturate (NaN -> 0); to bool is ``x != 0``.

    >>> import graphdsl as gd
    >>> g = gd.Graph("c", input_types=[gd.TensorType(gd.float32, (2,))])
    >>> gd.ops.cast(g.inputs[0], gd.int8).type
    TensorType(int8[2])
    """
    return op("cast", x, to=dtype(to))


def _cast_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    to: DType = attrs["to"]
    t = types[0]
    if t.dtype.kind is Kind.complex and to.kind is not Kind.complex:
        raise OpTypeError(
            f"casting {t} to {to.name} would drop the imaginary part; take gd.ops.real/abs "
            "first or cast to a complex dtype"
        )
    return (t.dtype,), TensorType(to, t.shape)


def _cast_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return cast_array(args[0], attrs["to"])


define(cast, _cast_rule, _cast_impl, "any")


def implicit_cast(lhs: Symbol, rhs: Symbol) -> tuple[Symbol, Symbol]:
    """MAX's ``implicit_cast``: both symbols cast to ``implicit_cast_type`` of their dtypes.

    A symbol already of that dtype is returned unchanged.

    >>> import graphdsl as gd
    >>> g = gd.Graph("ic", input_types=[gd.int16, gd.float32])
    >>> a, b = gd.ops.implicit_cast(*g.inputs)
    >>> a.dtype, b is g.inputs[1]
    (DType.float32, True)
    """
    if not isinstance(lhs, Symbol) or not isinstance(rhs, Symbol):
        raise OpTypeError("implicit_cast takes two Symbols")
    to = lhs.graph.policy.promote_types(lhs.dtype, rhs.dtype)
    a = lhs if lhs.dtype is to and not lhs.ambiguous else cast(lhs, to)
    b = rhs if rhs.dtype is to and not rhs.ambiguous else cast(rhs, to)
    return a, b
