"""Comparisons, logical and bitwise ops, and ``where``: elementwise, broadcasting.

Comparisons promote their operands and give bool; logical ops take operands by truth value
(``x != 0``); bitwise ops take bool and integers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._define import (
    ANY,
    INTEGER,
    REAL,
    Operand,
    Symbol,
    define,
    elementwise,
    np_impl,
    op,
    promote,
)
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import broadcast_shapes
from graphdsl.types import TensorType

__all__ = [
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "equal", "greater",
    "greater_equal", "less", "less_equal", "logical_and", "logical_not", "logical_or",
    "logical_xor", "not_equal", "where",
]  # fmt: skip

# the loops below register ops that share a rule; their variables hold functions
_fn: Callable[..., Any]
_np_fn: Callable[..., Any]

# ---------------------------------------------------------------------------- comparisons


def equal(x: Operand, y: Operand) -> Symbol:
    """x == y. Operands promote; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("equal", input_types={"x": gd.TensorType(gd.int16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.equal(x, 7)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int16.np)})[0]
    array([ True, False, False])
    """
    return op("equal", x, y)


def not_equal(x: Operand, y: Operand) -> Symbol:
    """x != y. Operands promote; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("not_equal", input_types={"x": gd.TensorType(gd.int16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.not_equal(x, 7)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int16.np)})[0]
    array([False,  True,  True])
    """
    return op("not_equal", x, y)


def less(x: Operand, y: Operand) -> Symbol:
    """x < y. Operands promote; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("less", input_types={"x": gd.TensorType(gd.uint8, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.less(x, 1.5)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0, 1, 255], gd.uint8.np)})[0]
    array([ True,  True, False])
    """
    return op("less", x, y)


def less_equal(x: Operand, y: Operand) -> Symbol:
    """x <= y. Operands promote; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("less_equal", input_types={"x": gd.TensorType(gd.uint8, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.less_equal(x, 1)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0, 1, 255], gd.uint8.np)})[0]
    array([ True,  True, False])
    """
    return op("less_equal", x, y)


def greater(x: Operand, y: Operand) -> Symbol:
    """x > y. Operands promote; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("greater", input_types={"x": gd.TensorType(gd.float16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.greater(x, 1)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.5, 1.0, np.inf], gd.float16.np)})[0]
    array([False, False,  True])
    """
    return op("greater", x, y)


def greater_equal(x: Operand, y: Operand) -> Symbol:
    """x >= y. Operands promote; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("greater_equal", input_types={"x": gd.TensorType(gd.float16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.greater_equal(x, 1)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.5, 1.0, np.nan], gd.float16.np)})[0]
    array([False,  True, False])
    """
    return op("greater_equal", x, y)


for _fn, _np_fn, _kinds in (
    (equal, np.equal, ANY),
    (not_equal, np.not_equal, ANY),
    (less, np.less, REAL | {Kind.bool}),
    (less_equal, np.less_equal, REAL | {Kind.bool}),
    (greater, np.greater, REAL | {Kind.bool}),
    (greater_equal, np.greater_equal, REAL | {Kind.bool}),
):
    define(_fn, elementwise(_kinds, result_bool=True), np_impl(_np_fn), "comparable")

# ---------------------------------------------------------------------------- logic and bits


def logical_and(x: Operand, y: Operand) -> Symbol:
    """Logical and by truth value: operands are cast to bool (x != 0); the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("logical_and", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.logical_and(x, True)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int32.np)})[0]
    array([ True,  True, False])
    """
    return op("logical_and", x, y)


def logical_or(x: Operand, y: Operand) -> Symbol:
    """Logical or by truth value: operands are cast to bool; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("logical_or", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.logical_or(x, False)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.0, np.nan, -0.0], gd.float32.np)})[0]
    array([False,  True, False])
    """
    return op("logical_or", x, y)


def logical_xor(x: Operand, y: Operand) -> Symbol:
    """Logical xor by truth value: operands are cast to bool; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("logical_xor", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.logical_xor(x, 1)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int32.np)})[0]
    array([False, False,  True])
    """
    return op("logical_xor", x, y)


def logical_not(x: Operand) -> Symbol:
    """Logical not by truth value: the operand is cast to bool; the result is bool.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("logical_not", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.logical_not(x)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int32.np)})[0]
    array([False, False,  True])
    """
    return op("logical_not", x)


def _logical(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    p.op_typing("logical", [Promoted(t.dtype, t.ambiguous) for t in types])  # may refuse
    shape = broadcast_shapes(*(t.shape for t in types)) if len(types) > 1 else types[0].shape
    return (DType.bool,) * len(types), TensorType(DType.bool, shape)


for _fn, _np_fn in ((logical_and, np.logical_and), (logical_or, np.logical_or),
                    (logical_xor, np.logical_xor), (logical_not, np.logical_not)):  # fmt: skip
    define(_fn, _logical, np_impl(_np_fn), "any (by truth value)", truthy=(0, 1))


def bitwise_and(x: Operand, y: Operand) -> Symbol:
    """x & y for bool and integers; operands promote.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("bitwise_and", input_types={"x": gd.TensorType(gd.uint8, (3,))})
    >>> x, = g.inputs
    >>> z = x & 10
    >>> z.type
    TensorType(uint8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([255, 12, 1], gd.uint8.np)})[0]
    array([10,  8,  0], dtype=uint8)
    """
    return op("bitwise_and", x, y)


def bitwise_or(x: Operand, y: Operand) -> Symbol:
    """x | y for bool and integers; operands promote.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("bitwise_or", input_types={"x": gd.TensorType(gd.uint8, (3,))})
    >>> x, = g.inputs
    >>> z = x | 2
    >>> z.type
    TensorType(uint8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([255, 12, 1], gd.uint8.np)})[0]
    array([255,  14,   3], dtype=uint8)
    """
    return op("bitwise_or", x, y)


def bitwise_xor(x: Operand, y: Operand) -> Symbol:
    """x ^ y for bool and integers; operands promote.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("bitwise_xor", input_types={"x": gd.TensorType(gd.int8, (3,))})
    >>> x, = g.inputs
    >>> z = x ^ 3
    >>> z.type
    TensorType(int8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-1, 12, 1], gd.int8.np)})[0]
    array([-4, 15,  2], dtype=int8)
    """
    return op("bitwise_xor", x, y)


def bitwise_not(x: Operand) -> Symbol:
    """~x for bool and integers; keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("bitwise_not", input_types={"x": gd.TensorType(gd.int8, (3,))})
    >>> x, = g.inputs
    >>> z = ~x
    >>> z.type
    TensorType(int8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-1, 12, 0], gd.int8.np)})[0]
    array([  0, -13,  -1], dtype=int8)
    """
    return op("bitwise_not", x)


for _fn, _np_fn in ((bitwise_and, np.bitwise_and), (bitwise_or, np.bitwise_or),
                    (bitwise_xor, np.bitwise_xor), (bitwise_not, np.invert)):  # fmt: skip
    define(_fn, elementwise(INTEGER | {Kind.bool}), np_impl(_np_fn), "bool or integer")

# ---------------------------------------------------------------------------- selection


def where(cond: Operand, x: Operand, y: Operand) -> Symbol:
    """``x`` where ``cond`` else ``y``. ``cond`` is cast to bool by truth value; the two
    branches promote together; shapes broadcast.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("where", input_types={"x": gd.TensorType(gd.int16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.where(x > 0, x, 0.5)
    >>> z.type
    TensorType(float32?[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int16.np)})[0]
    array([7. , 0.5, 0.5], dtype=float32)
    """
    return op("where", cond, x, y)


def _where_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    cond, x, y = types
    c = promote(p, [x, y])
    shape = broadcast_shapes(cond.shape, x.shape, y.shape)
    return (DType.bool, c.dtype, c.dtype), TensorType(c.dtype, shape, c.ambiguous)


define(where, _where_rule, np_impl(np.where), "cond: any (truth value); branches: any",
       truthy=(0,))  # fmt: skip
