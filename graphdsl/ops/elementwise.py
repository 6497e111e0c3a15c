"""Elementwise arithmetic: + - * / // % **, maximum and minimum (comparisons, logic and
``where`` are in :mod:`graphdsl.ops.logic`; unary functions in :mod:`graphdsl.ops.unary`).

Operands may be Symbols, Python scalars (ambiguous literals) or numpy arrays (constants);
they promote under the graph's policy and broadcast as numpy's do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphdsl.dtypes import Kind
from graphdsl.opdef import Impl
from graphdsl.ops._define import (
    NUMERIC,
    REAL,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    elementwise,
    np_impl,
    op,
)
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError

__all__ = ["add", "div", "floordiv", "maximum", "minimum", "mod", "mul", "outer", "pow",
           "sub"]  # fmt: skip

# the loops below register ops that share a rule; their variables hold functions
_fn: Callable[..., Any]
_np_fn: Callable[..., Any]

# ---------------------------------------------------------------------------- arithmetic


def add(x: Operand, y: Operand) -> Symbol:
    """x + y. Operands promote under the graph's policy; integers wrap; bool + bool is an
    error (use logical_or).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("add", input_types={"x": gd.TensorType(gd.int8, (3,))})
    >>> x, = g.inputs
    >>> z = x + 100
    >>> z.type
    TensorType(int8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([100, -7, 0], gd.int8.np)})[0]
    array([-56,  93, 100], dtype=int8)
    """
    return op("add", x, y)


def sub(x: Operand, y: Operand) -> Symbol:
    """x - y. Operands promote under the graph's policy; integers wrap.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sub", input_types={"x": gd.TensorType(gd.uint8, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.sub(x, 1)
    >>> z.type
    TensorType(uint8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0, 1, 255], gd.uint8.np)})[0]
    array([255,   0, 254], dtype=uint8)
    """
    return op("sub", x, y)


def mul(x: Operand, y: Operand) -> Symbol:
    """x * y. Operands promote under the graph's policy; integers wrap.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("mul", input_types={"x": gd.TensorType(gd.int16, (3,))})
    >>> x, = g.inputs
    >>> z = x * 2.5
    >>> z.type
    TensorType(float32?[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([2, -3, 200], gd.int16.np)})[0]
    array([  5. ,  -7.5, 500. ], dtype=float32)
    """
    return op("mul", x, y)


for _fn, _np_fn in ((add, np.add), (sub, np.subtract), (mul, np.multiply)):
    define(_fn, elementwise(NUMERIC), np_impl(_np_fn), "numeric")


def div(x: Operand, y: Operand) -> Symbol:
    """True division x / y. Operands promote; an integer or bool result type becomes the
    policy's default float (float32 in 'default'). A policy may type it itself (op class
    ``true_divide``): under ``max-graph`` two integers divide in float64, as in max.graph.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("div", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = x / 2
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int32.np)})[0]
    array([ 3.5, -3.5,  0. ], dtype=float32)
    """
    return op("div", x, y)


define(div, elementwise(NUMERIC | {Kind.bool}, to_float=TO_FLOAT, op_class="true_divide"),
       np_impl(np.true_divide), "numeric; integers compute in the default float")  # fmt: skip


def floordiv(x: Operand, y: Operand) -> Symbol:
    """Floor division x // y (numpy's: rounds toward -inf). Operands promote; integer
    division by zero gives 0.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("floordiv", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = x // -2
    >>> z.type
    TensorType(int32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int32.np)})[0]
    array([-4,  3,  0], dtype=int32)
    """
    return op("floordiv", x, y)


def mod(x: Operand, y: Operand) -> Symbol:
    """x % y with the sign of the divisor (numpy's). Operands promote; integer modulo by
    zero gives 0.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("mod", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = x % -2
    >>> z.type
    TensorType(int32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int32.np)})[0]
    array([-1, -1,  0], dtype=int32)
    """
    return op("mod", x, y)


define(floordiv, elementwise(REAL), np_impl(np.floor_divide), "real")
define(mod, elementwise(REAL), np_impl(np.mod), "real")


def pow(x: Operand, y: Operand) -> Symbol:
    """x ** y. Operands promote; integer powers are exact and wrap, a negative integer
    exponent truncates 1/x**n toward zero.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("pow", input_types={"x": gd.TensorType(gd.int8, (3,))})
    >>> x, = g.inputs
    >>> z = x ** 7
    >>> z.type
    TensorType(int8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([2, -1, 3], gd.int8.np)})[0]
    array([-128,   -1, -117], dtype=int8)
    """
    return op("pow", x, y)


def _int_pow(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """Exact integer power with wraparound; a negative exponent truncates 1/b**n toward 0."""
    neg = exp < 0
    pos = np.power(base, np.where(neg, 0, exp).astype(exp.dtype))
    one = np.ones_like(pos)
    odd = (np.where(neg, -exp, 0) % 2) == 1 if base.dtype.kind == "i" else np.zeros_like(neg)
    inv = np.where(base == 1, one, 0)
    if base.dtype.kind == "i":
        inv = np.where(base == -1, np.where(odd, -one, one), inv)
    return np.asarray(np.where(neg, inv, pos).astype(pos.dtype))


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return _int_pow(a, b)
    # C's pow, which ONNX's Pow follows: numpy computes a scalar (or broadcast) exponent of
    # 0.5 as sqrt, so that (-inf) ** 0.5 is NaN, not inf, and (-0.0) ** 0.5 is -0.0, not
    # 0.0; with a full, flat exponent array it runs its pow loop
    shape = np.broadcast_shapes(a.shape, b.shape)
    base = np.broadcast_to(a, shape).reshape(-1)
    exponent = np.array(np.broadcast_to(b, shape)).reshape(-1)
    return np.asarray(np.power(base, exponent).reshape(shape))


define(pow, elementwise(NUMERIC), np_impl(_pow), "numeric")


def maximum(x: Operand, y: Operand) -> Symbol:
    """Elementwise maximum; operands promote; NaN propagates; a tie (-0.0 vs 0.0) goes to
    the second operand.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("maximum", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.maximum(x, 0.0)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1.0, np.nan, -0.0], gd.float32.np)})[0]
    array([ 1., nan,  0.], dtype=float32)
    """
    return op("maximum", x, y)


def minimum(x: Operand, y: Operand) -> Symbol:
    """Elementwise minimum; operands promote; NaN propagates; a tie goes to the second
    operand.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("minimum", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.minimum(x, 0.0)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1.0, np.nan, -2.0], gd.float32.np)})[0]
    array([ 0., nan, -2.], dtype=float32)
    """
    return op("minimum", x, y)


def _extremum(pick_first: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Impl:
    """max/min with NaN propagating and ties going to the second operand (-0.0 vs 0.0).

    Spelled out rather than np.maximum, whose tie-breaking differs between its float16
    and float32 loops.
    """

    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        r = np.where(pick_first(a, b), a, b)
        if a.dtype.kind == "f":
            r = np.where(np.isnan(a), a, r)
        return np.asarray(r)

    return np_impl(fn)


define(maximum, elementwise(REAL | {Kind.bool}), _extremum(np.greater), "real or bool")
define(minimum, elementwise(REAL | {Kind.bool}), _extremum(np.less), "real or bool")


def outer(lhs: Operand, rhs: Operand) -> Symbol:
    """The outer product of two vectors, ``lhs[:, None] * rhs[None, :]`` (MAX's and
    numpy's ``outer``); dtypes promote as in :func:`mul`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("outer", input_types={"pos": gd.TensorType(gd.float32, ('seq',))})
    >>> pos, = g.inputs
    >>> z = gd.ops.outer(pos, np.array([1.0, 0.5], np.float32))
    >>> z.type
    TensorType(float32[seq, 2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"pos": np.array([0, 1, 2], np.float32)})[0]
    array([[0. , 0. ],
           [1. , 0.5],
           [2. , 1. ]], dtype=float32)
    """
    for name, v in (("lhs", lhs), ("rhs", rhs)):
        if np.ndim(v) != 1 if not isinstance(v, Symbol) else v.rank != 1:
            raise ShapeError(f"outer needs two vectors (rank 1); {name} is {v!r}")
    g = lhs.graph if isinstance(lhs, Symbol) else rhs.graph if isinstance(rhs, Symbol) else None
    if g is None:
        raise OpTypeError("outer: no operand is a Symbol, so there is no graph to build in")
    return mul(g._apply("expand_dims", (lhs,), {"axis": -1}),
               g._apply("expand_dims", (rhs,), {"axis": 0}))  # fmt: skip
