"""Activations and further transcendental functions: silu, tan, sinh, cosh, log1p, expm1,
atanh, atan, asin, acos. Like the transcendental functions of :mod:`~graphdsl.ops.unary`,
they are floating only: integers and bool compute in the policy's default float.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphdsl.ops._define import (
    FLOAT,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    elementwise,
    np_impl,
    op,
)
from graphdsl.ops.unary import _sigmoid

__all__ = ["acos", "asin", "atan", "atanh", "cosh", "expm1", "log1p", "silu", "sinh", "tan"]

_fn: Callable[..., Any]
_np_fn: Callable[..., Any]


def silu(x: Operand) -> Symbol:
    """x * sigmoid(x) (SiLU, Swish), as MAX's ``silu``, with sigmoid as
    :func:`~graphdsl.ops.unary.sigmoid` computes it. Floating only: integers and bool compute
    in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("silu", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.silu(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.0, 1.0, -2.0], gd.float32.np)})[0]
    array([ 0.        ,  0.7310586 , -0.23840584], dtype=float32)
    """
    return op("silu", x)


def _silu(x: np.ndarray) -> np.ndarray:
    return np.asarray(x * _sigmoid(x))


def tan(x: Operand) -> Symbol:
    """Tangent. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("tan", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.tan(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.0, 0.7853982, -1.0], gd.float32.np)})[0]
    array([ 0.        ,  1.        , -1.5574077], dtype=float32)
    """
    return op("tan", x)


def sinh(x: Operand) -> Symbol:
    """Hyperbolic sine. Floating only: integers and bool compute in the policy's default
    float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sinh", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.sinh(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-0.0, 1.0, 100.0], gd.float32.np)})[0]
    array([-0.       ,  1.1752012,        inf], dtype=float32)
    """
    return op("sinh", x)


def cosh(x: Operand) -> Symbol:
    """Hyperbolic cosine. Floating only: integers and bool compute in the policy's default
    float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("cosh", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.cosh(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.0, -1.0, 100.0], gd.float32.np)})[0]
    array([1.       , 1.5430807,       inf], dtype=float32)
    """
    return op("cosh", x)


def log1p(x: Operand) -> Symbol:
    """log(1 + x), accurate for small x, as MAX's ``log1p``. Floating only: integers and bool
    compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("log1p", input_types={"x": gd.TensorType(gd.float64, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.log1p(x)
    >>> z.type
    TensorType(float64[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1e-20, -1.0, np.e - 1], gd.float64.np)})[0]
    array([1.e-20,   -inf, 1.e+00])
    """
    return op("log1p", x)


def expm1(x: Operand) -> Symbol:
    """e**x - 1, accurate for small x. Floating only: integers and bool compute in the
    policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("expm1", input_types={"x": gd.TensorType(gd.float64, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.expm1(x)
    >>> z.type
    TensorType(float64[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1e-20, -np.inf, 1.0], gd.float64.np)})[0]
    array([ 1.00000000e-20, -1.00000000e+00,  1.71828183e+00])
    """
    return op("expm1", x)


def atanh(x: Operand) -> Symbol:
    """Inverse hyperbolic tangent, as MAX's ``atanh`` (+-inf at +-1, NaN outside [-1, 1]).
    Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("atanh", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.atanh(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.5, -1.0, 2.0], gd.float32.np)})[0]
    array([0.54930615,       -inf,        nan], dtype=float32)
    """
    return op("atanh", x)


def atan(x: Operand) -> Symbol:
    """Inverse tangent, in (-pi/2, pi/2). Floating only: integers and bool compute in the
    policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("atan", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.atan(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1.0, -np.inf, -0.0], gd.float32.np)})[0]
    array([ 0.7853982, -1.5707964, -0.       ], dtype=float32)
    """
    return op("atan", x)


def asin(x: Operand) -> Symbol:
    """Inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1]). Floating only: integers and
    bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("asin", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.asin(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.5, -1.0, 2.0], gd.float32.np)})[0]
    array([ 0.5235988, -1.5707964,        nan], dtype=float32)
    """
    return op("asin", x)


def acos(x: Operand) -> Symbol:
    """Inverse cosine, in [0, pi] (NaN outside [-1, 1]), as MAX's ``acos``. Floating only:
    integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("acos", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.acos(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.5, -1.0, 2.0], gd.float32.np)})[0]
    array([1.0471976, 3.1415927,       nan], dtype=float32)
    """
    return op("acos", x)


for _fn, _np_fn in ((silu, _silu), (tan, np.tan), (sinh, np.sinh), (cosh, np.cosh),
                    (log1p, np.log1p), (expm1, np.expm1), (atanh, np.arctanh),
                    (atan, np.arctan), (asin, np.arcsin), (acos, np.arccos)):  # fmt: skip
    define(_fn, elementwise(FLOAT, to_float=TO_FLOAT), np_impl(_np_fn),
           "floating; integers -> default float")  # fmt: skip
