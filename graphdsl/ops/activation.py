"""Activations and further transcendental functions: silu, tan, sinh, cosh, log1p, expm1,
atanh, atan, asin, acos, erf, gelu. Like the transcendental functions of
:mod:`~graphdsl.ops.unary`, they are floating only: integers and bool compute in the policy's
default float (unless the policy types them itself: op class ``float_math``).
"""

from __future__ import annotations

import math
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
from graphdsl.policies import Policy
from graphdsl.types import OpTypeError, TensorType

__all__ = [
    "acos",
    "asin",
    "atan",
    "atanh",
    "cosh",
    "erf",
    "expm1",
    "gelu",
    "log1p",
    "silu",
    "sinh",
    "tan",
]

_fn: Callable[..., Any]
_np_fn: Callable[..., Any]


def silu(x: Operand) -> Symbol:
    """x * sigmoid(x) (SiLU, Swish), MAX's ``silu``, computed as ``x / (1 + exp(-x))`` (as
    PyTorch's CPU kernel does): four steps in the result's float type (float32 for narrower
    ones). Below about -88.7 in float32 (-709.8 in float64) ``exp(-x)`` overflows and the
    result is -0.0, where x times a separately computed sigmoid would keep a subnormal.
    Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("silu", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.silu(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> np.round(gd.evaluate(g, {"x": np.array([0.0, 1.0, -2.0], gd.float32.np)})[0], 4)
    array([ 0.    ,  0.7311, -0.2384], dtype=float32)
    """
    return op("silu", x)


def _silu(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / (1 + np.exp(-x)))


def tan(x: Operand) -> Symbol:
    """Tangent. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("tan", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.tan(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> np.round(gd.evaluate(g, {"x": np.array([0.0, 0.7853982, -1.0], gd.float32.np)})[0], 4)
    array([ 0.    ,  1.    , -1.5574], dtype=float32)
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
    >>> np.round(gd.evaluate(g, {"x": np.array([-0.0, 1.0, 100.0], gd.float32.np)})[0], 4)
    array([-0.    ,  1.1752,     inf], dtype=float32)
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
    >>> np.round(gd.evaluate(g, {"x": np.array([0.0, -1.0, 100.0], gd.float32.np)})[0], 4)
    array([1.    , 1.5431,    inf], dtype=float32)
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
    >>> np.round(gd.evaluate(g, {"x": np.array([1e-20, -np.inf, 1.0], gd.float64.np)})[0], 4)
    array([ 0.    , -1.    ,  1.7183])
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
    >>> np.round(gd.evaluate(g, {"x": np.array([0.5, -1.0, 2.0], gd.float32.np)})[0], 4)
    array([0.5493,   -inf,    nan], dtype=float32)
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
    >>> np.round(gd.evaluate(g, {"x": np.array([1.0, -np.inf, -0.0], gd.float32.np)})[0], 4)
    array([ 0.7854, -1.5708, -0.    ], dtype=float32)
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
    >>> np.round(gd.evaluate(g, {"x": np.array([0.5, -1.0, 2.0], gd.float32.np)})[0], 4)
    array([ 0.5236, -1.5708,     nan], dtype=float32)
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
    >>> np.round(gd.evaluate(g, {"x": np.array([0.5, -1.0, 2.0], gd.float32.np)})[0], 4)
    array([1.0472, 3.1416,    nan], dtype=float32)
    """
    return op("acos", x)


for _fn, _np_fn in ((silu, _silu), (tan, np.tan), (sinh, np.sinh), (cosh, np.cosh),
                    (log1p, np.log1p), (expm1, np.expm1), (atanh, np.arctanh),
                    (atan, np.arctan), (asin, np.arcsin), (acos, np.arccos)):  # fmt: skip
    define(_fn, elementwise(FLOAT, to_float=TO_FLOAT, op_class="float_math"), np_impl(_np_fn),
           "floating; integers -> default float")  # fmt: skip


def erf(x: Operand) -> Symbol:
    """The error function, 2/sqrt(pi) * integral of exp(-t**2) from 0 to x, as MAX's ``erf``:
    computed in float64 (C's ``erf``, within an ulp) and rounded once to the result dtype.
    Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("erf", input_types={"x": gd.TensorType(gd.float32, (4,))})
    >>> x, = g.inputs
    >>> z = gd.ops.erf(x)
    >>> z.type
    TensorType(float32[4])
    >>> g.output(z)
    >>> np.round(gd.evaluate(g, {"x": np.array([0.5, -1.0, 3.0, -np.inf], gd.float32.np)})[0], 4)
    array([ 0.5205, -0.8427,  1.    , -1.    ], dtype=float32)
    """
    return op("erf", x)


# numpy has no erf (and scipy is no dependency): C's, element by element. glibc's erf and
# erfc are within an ulp of the exact values.
_erf_ufunc = np.frompyfunc(math.erf, 1, 1)
_erfc_ufunc = np.frompyfunc(math.erfc, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf_ufunc(np.asarray(x, np.float64)), np.float64)


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erfc_ufunc(np.asarray(x, np.float64)), np.float64)


define(erf, elementwise(FLOAT, to_float=TO_FLOAT, op_class="float_math"), np_impl(_erf),
       "floating; integers -> default float")  # fmt: skip

GELU_APPROXIMATIONS = ("none", "tanh", "quick")
# the constants both the reference and the ONNX lowering use, as float64
GELU_SQRT1_2 = math.sqrt(0.5)  # x / sqrt(2) is computed as x * GELU_SQRT1_2
GELU_TANH_SCALE = 2 * math.sqrt(2 / math.pi)  # 2 * sqrt(2/pi): tanh(u) = 2 sigmoid(2u) - 1
GELU_TANH_CUBIC = 0.044715
GELU_QUICK_SCALE = 1.702


def gelu(x: Operand, approximate: str = "none") -> Symbol:
    """The Gaussian error linear unit x * Phi(x), as MAX's ``gelu``. ``approximate``:

    - ``"none"``: x/2 * (1 + erf(x / sqrt(2))), evaluated without cancellation (for x < 0,
      1 + erf(x / sqrt(2)) is erfc(-x / sqrt(2)), C's ``erfc``);
    - ``"tanh"``: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3))) (GPT-2's ``gelu_new``),
      evaluated as x * sigmoid(2 sqrt(2/pi) * (x + 0.044715 x**3)), the same function
      without cancellation;
    - ``"quick"``: x * sigmoid(1.702 x).

    The reference computes in float64 and rounds once to the result dtype; gelu(-inf) is NaN
    (-inf * 0, as the formula gives in IEEE arithmetic, and as PyTorch and onnxruntime give).
    Floating only: integers and bool compute in the policy's default float.

    The ONNX export runs onnxruntime's float32 Gelu kernel for float32 and narrower floats,
    which computes 1 + erf (1 + tanh) in float32: below x = -3 or so that sum cancels and the
    result is accurate to about eps * |x| absolutely, not relatively (0 below x = -5.4).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("gelu", input_types={"x": gd.TensorType(gd.float32, (4,))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.gelu(x), gd.ops.gelu(x, approximate="tanh"),
    ...          gd.ops.gelu(x, approximate="quick"))
    >>> with np.printoptions(precision=3):  # 4 significant digits
    ...     for r in gd.evaluate(g, {"x": np.array([1.0, -0.5, 3.0, -7.0], gd.float32.np)}):
    ...         print(r)
    [ 8.413e-01 -1.543e-01  2.996e+00 -8.959e-12]
    [ 8.412e-01 -1.543e-01  2.996e+00 -2.315e-15]
    [ 8.458e-01 -1.496e-01  2.982e+00 -4.687e-05]
    """
    return op("gelu", x, approximate=approximate)


def _gelu_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    approximate = attrs.get("approximate", "none")
    if approximate not in GELU_APPROXIMATIONS:
        raise OpTypeError(
            f"gelu's approximate must be one of {', '.join(map(repr, GELU_APPROXIMATIONS))}, "
            f"got {approximate!r}"
        )
    return elementwise(FLOAT, to_float=TO_FLOAT, op_class="float_math")(p, types, attrs)


def _gelu(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = np.asarray(args[0], np.float64)
    approximate = attrs.get("approximate", "none")
    with np.errstate(all="ignore"):
        if approximate == "quick":
            return np.asarray(x * _sigmoid(GELU_QUICK_SCALE * x))
        if approximate == "tanh":
            z = GELU_TANH_SCALE * (x + GELU_TANH_CUBIC * (x * x * x))
            return np.asarray(x * _sigmoid(z))
        t = x * GELU_SQRT1_2
        # 1 + erf(t), which is erfc(-t): the latter where it does not cancel (x < 0; NaN too)
        return np.asarray(0.5 * x * np.where(x >= 0, 1 + _erf(t), _erfc(-t)))


define(gelu, _gelu_rule, _gelu, "floating; integers -> default float")
