"""Elementwise unary ops: sign and magnitude, transcendental functions, activations and
rounding. Transcendental functions compute integers and bool in the policy's default float,
unless the policy types them itself (op class ``float_math``: ``max-graph`` keeps the
integer dtype, as max.graph does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.ops._define import (
    FLOAT,
    NUMERIC,
    REAL,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    elementwise,
    need,
    np_impl,
    op,
)
from graphdsl.policies import Policy, Promoted
from graphdsl.types import TensorType

__all__ = ["abs", "ceil", "clamp", "clip", "cos", "exp", "floor", "is_inf", "is_nan", "log",
           "negative", "relu", "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "tanh",
           "trunc"]  # fmt: skip

# the loops below register ops that share a rule; their variables hold functions
_fn: Callable[..., Any]
_np_fn: Callable[..., Any]


def negative(x: Operand) -> Symbol:
    """-x; keeps the dtype (unsigned integers wrap).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("negative", input_types={"x": gd.TensorType(gd.uint8, (3,))})
    >>> x, = g.inputs
    >>> z = -x
    >>> z.type
    TensorType(uint8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0, 1, 255], gd.uint8.np)})[0]
    array([  0, 255,   1], dtype=uint8)
    """
    return op("negative", x)


def sign(x: Operand) -> Symbol:
    """Sign of x (-1, 0, 1); keeps the dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sign", input_types={"x": gd.TensorType(gd.int8, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.sign(x)
    >>> z.type
    TensorType(int8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([7, -7, 0], gd.int8.np)})[0]
    array([ 1, -1,  0], dtype=int8)
    """
    return op("sign", x)


define(negative, elementwise(NUMERIC), np_impl(np.negative), "numeric")
define(sign, elementwise(NUMERIC), np_impl(np.sign), "numeric")


def abs(x: Operand) -> Symbol:
    """|x|; keeps the dtype (complex gives its real dtype; abs(int8 -128) wraps to -128).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("abs", input_types={"x": gd.TensorType(gd.int8, (3,))})
    >>> x, = g.inputs
    >>> z = abs(x)
    >>> z.type
    TensorType(int8[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-128, -7, 7], gd.int8.np)})[0]
    array([-128,    7,    7], dtype=int8)
    """
    return op("abs", x)


def _abs_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    need(NUMERIC, Promoted(t.dtype, t.ambiguous), types, p)
    real = {DType.complex64: DType.float32, DType.complex128: DType.float64}.get(t.dtype, t.dtype)
    return (t.dtype,), TensorType(real, t.shape, t.ambiguous)


define(abs, _abs_rule, np_impl(np.abs), "numeric")

# ---------------------------------------------------------------------------- floating


def exp(x: Operand) -> Symbol:
    """e**x. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("exp", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.exp(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> np.round(gd.evaluate(g, {"x": np.array([0, 1, -1], gd.int32.np)})[0], 4)
    array([1.    , 2.7183, 0.3679], dtype=float32)
    """
    return op("exp", x)


def log(x: Operand) -> Symbol:
    """Natural log. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("log", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.log(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1.0, 0.0, -1.0], gd.float32.np)})[0]
    array([  0., -inf,  nan], dtype=float32)
    """
    return op("log", x)


def sqrt(x: Operand) -> Symbol:
    """Square root. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sqrt", input_types={"x": gd.TensorType(gd.float64, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.sqrt(x)
    >>> z.type
    TensorType(float64[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([4.0, 2.0, -0.0], gd.float64.np)})[0]
    array([ 2.        ,  1.41421356, -0.        ])
    """
    return op("sqrt", x)


def rsqrt(x: Operand) -> Symbol:
    """1 / sqrt(x), as MAX's ``rsqrt`` (two correctly rounded steps, as numpy computes it).
    Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("rsqrt", input_types={"x": gd.TensorType(gd.int32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.rsqrt(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([4, 0, -1], gd.int32.np)})[0]
    array([0.5, inf, nan], dtype=float32)
    """
    return op("rsqrt", x)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.asarray(1 / np.sqrt(x))


def sin(x: Operand) -> Symbol:
    """Sine. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sin", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.sin(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> np.round(gd.evaluate(g, {"x": np.array([0.0, 1.5707964, -0.0], gd.float32.np)})[0], 4)
    array([ 0.,  1., -0.], dtype=float32)
    """
    return op("sin", x)


def cos(x: Operand) -> Symbol:
    """Cosine. Floating only: integers and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("cos", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.cos(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> np.round(gd.evaluate(g, {"x": np.array([0.0, 3.1415927, 1.0], gd.float32.np)})[0], 4)
    array([ 1.    , -1.    ,  0.5403], dtype=float32)
    """
    return op("cos", x)


def tanh(x: Operand) -> Symbol:
    """Hyperbolic tangent. Floating only: integers and bool compute in the policy's default
    float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("tanh", input_types={"x": gd.TensorType(gd.bfloat16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.tanh(x)
    >>> z.type
    TensorType(bfloat16[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.0, 1.0, 20.0], gd.bfloat16.np)})[0]
    array([0, 0.761719, 1], dtype=bfloat16)
    """
    return op("tanh", x)


def sigmoid(x: Operand) -> Symbol:
    """1 / (1 + e**-x). Floating only: integers and bool compute in the policy's default
    float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("sigmoid", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.sigmoid(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> y = gd.evaluate(g, {"x": np.array([0.0, 100.0, -100.0], gd.float32.np)})[0]
    >>> y[:2], bool(0 < y[2] < 1e-43)  # sigmoid(-100), about 3.7e-44: a subnormal, not 0
    (array([0.5, 1. ], dtype=float32), True)
    """
    return op("sigmoid", x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.asarray(np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype))


for _fn, _np_fn in ((exp, np.exp), (log, np.log), (sqrt, np.sqrt), (rsqrt, _rsqrt),
                    (sin, np.sin), (cos, np.cos), (tanh, np.tanh),
                    (sigmoid, _sigmoid)):  # fmt: skip
    define(_fn, elementwise(FLOAT, to_float=TO_FLOAT, op_class="float_math"), np_impl(_np_fn),
           "floating; integers -> default float")  # fmt: skip


def relu(x: Operand) -> Symbol:
    """max(x, 0) for real dtypes, keeping the dtype: NaN passes, -0.0 becomes 0.0 (as in
    ONNX's reference implementation of Relu).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("relu", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.relu(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-1.0, np.nan, -0.0], gd.float32.np)})[0]
    array([ 0., nan,  0.], dtype=float32)
    """
    return op("relu", x)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.where((x > 0) | (x != x), x, np.zeros((), x.dtype)))


define(relu, elementwise(REAL), np_impl(_relu), "real; max(x, 0), NaN passes")

# ---------------------------------------------------------------------------- rounding


def floor(x: Operand) -> Symbol:
    """Round toward -inf; keeps the dtype (integers are returned unchanged, as in JAX).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("floor", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.floor(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-1.5, 2.5, 3.0], gd.float32.np)})[0]
    array([-2.,  2.,  3.], dtype=float32)
    """
    return op("floor", x)


def ceil(x: Operand) -> Symbol:
    """Round toward +inf; keeps the dtype (integers are returned unchanged).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("ceil", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.ceil(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-1.5, 2.5, 3.0], gd.float32.np)})[0]
    array([-1.,  3.,  3.], dtype=float32)
    """
    return op("ceil", x)


def round(x: Operand) -> Symbol:
    """Round half to even; keeps the dtype (integers are returned unchanged).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("round", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.round(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([0.5, 1.5, -2.5], gd.float32.np)})[0]
    array([ 0.,  2., -2.], dtype=float32)
    """
    return op("round", x)


def _int_identity(fn: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], Any]:
    return lambda x: x if x.dtype.kind in "iub" else fn(x)


define(floor, elementwise(REAL), np_impl(_int_identity(np.floor)), "real; integers unchanged")
define(ceil, elementwise(REAL), np_impl(_int_identity(np.ceil)), "real; integers unchanged")
define(round, elementwise(REAL), np_impl(_int_identity(np.rint)), "real; half to even")


def trunc(x: Operand) -> Symbol:
    """Round toward zero; keeps the dtype (integers are returned unchanged; -0.5 gives
    -0.0, NaN and inf pass).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("trunc", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.trunc(x)
    >>> z.type
    TensorType(float32[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-1.5, 2.5, -0.5], gd.float32.np)})[0]
    array([-1.,  2., -0.], dtype=float32)
    """
    return op("trunc", x)


define(trunc, elementwise(REAL), np_impl(_int_identity(np.trunc)), "real; integers unchanged")


def is_nan(x: Operand) -> Symbol:
    """True where x is NaN, as MAX's ``is_nan``; any real dtype (integers: all False).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("is_nan", input_types={"x": gd.TensorType(gd.float16, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.is_nan(x)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1.0, np.nan, np.inf], gd.float16.np)})[0]
    array([False,  True, False])
    """
    return op("is_nan", x)


def is_inf(x: Operand) -> Symbol:
    """True where x is +inf or -inf, as MAX's ``is_inf``; any real dtype (integers: all
    False).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("is_inf", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> x, = g.inputs
    >>> z = gd.ops.is_inf(x)
    >>> z.type
    TensorType(bool[3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-np.inf, np.nan, 3e38], gd.float32.np)})[0]
    array([ True, False, False])
    """
    return op("is_inf", x)


define(is_nan, elementwise(REAL, result_bool=True), np_impl(np.isnan), "real; -> bool")
define(is_inf, elementwise(REAL, result_bool=True), np_impl(np.isinf), "real; -> bool")


def clip(x: Operand, min: Operand | None = None, max: Operand | None = None) -> Symbol:
    """Limit x to [min, max]: ``minimum(maximum(x, min), max)``, a bound left out (None)
    is no limit. x and the bounds promote together like a binary op (bounds may be
    Python scalars or Symbols, broadcasting); NaN in x or a bound propagates, and
    min > max gives max. Also exported as ``clamp`` (the PyTorch name).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("clip", input_types={"x": gd.TensorType(gd.float32, (4,))})
    >>> x, = g.inputs
    >>> z = gd.ops.clip(x, 0, 2.5)
    >>> z.type
    TensorType(float32[4])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([-3, np.nan, 2, 7], gd.float32.np)})[0]
    array([0. , nan, 2. , 2.5], dtype=float32)
    """
    bounds = [b for b in (min, max) if b is not None]
    return op("clip", x, *bounds, has_min=min is not None, has_max=max is not None)


clamp = clip


def _extremum(a: np.ndarray, b: np.ndarray, first: Callable[..., Any]) -> np.ndarray:
    # graphdsl's maximum/minimum: NaN in a propagates, a tie goes to b (b's NaN loses every
    # comparison, so it propagates too)
    r = np.where(first(a, b), a, b)
    return np.asarray(np.where(a != a, a, r))


def _clip(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    r, k = args[0], 1
    with np.errstate(all="ignore"):
        if attrs["has_min"]:
            r, k = _extremum(r, args[k], np.greater), k + 1
        if attrs["has_max"]:
            r = _extremum(r, args[k], np.less)
    return np.asarray(r)


define(clip, elementwise(REAL), _clip, "real; bounds promote with x")
