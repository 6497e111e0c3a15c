"""Neural-network ops: ``matmul`` and ``softmax`` (later: norms, convolution, pooling)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphdsl.ops._define import (
    FLOAT,
    NUMERIC,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    elementwise,
    need,
    np_impl,
    op,
    promote,
)
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, broadcast_shapes, format_shape, normalize_axis
from graphdsl.types import TensorType

__all__ = ["logsoftmax", "matmul", "softmax"]


def matmul(x: Operand, y: Operand) -> Symbol:
    """Matrix product (numpy's rules for 1-D and batched operands); operands promote.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("matmul", input_types={"x": gd.TensorType(gd.int8, ('batch', 4)),
    ...                                     "y": gd.TensorType(gd.int8, (4, 2))})
    >>> x, y = g.inputs
    >>> z = x @ y
    >>> z.type
    TensorType(int8[batch, 2])
    >>> g.output(z)
    >>> w = np.array([[100, 1], [0, 1], [0, 1], [0, 1]], gd.int8.np)  # 100 + 2 + 3 + 4 wraps
    >>> gd.evaluate(g, {"x": np.array([[1, 2, 3, 4]], gd.int8.np), "y": w})[0]
    array([[100,  10]], dtype=int8)
    """
    return op("matmul", x, y)


def _matmul_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    a, b = types
    c = promote(p, types)
    need(NUMERIC, c, types, p)
    if a.rank == 0 or b.rank == 0:
        raise ShapeError(
            f"matmul needs operands of rank >= 1, got {a} and {b}; multiply by a scalar "
            "with mul (*) instead"
        )
    sa = a.shape if a.rank > 1 else (1, *a.shape)
    sb = b.shape if b.rank > 1 else (*b.shape, 1)
    if sa[-1] != sb[-2]:
        raise ShapeError(
            f"matmul of shapes {format_shape(a.shape)} and {format_shape(b.shape)}: "
            f"contracting dimensions {sa[-1]} and {sb[-2]} differ; the first operand's last "
            "dimension must equal the second's second-to-last (transpose one of them?)"
        )
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    shape = (*batch, *((sa[-2],) if a.rank > 1 else ()), *((sb[-1],) if b.rank > 1 else ()))
    return (c.dtype, c.dtype), TensorType(c.dtype, shape, c.ambiguous)


define(matmul, _matmul_rule, np_impl(np.matmul), "numeric")


def softmax(x: Operand, axis: int = -1) -> Symbol:
    """exp(x - max) / sum(exp(x - max)) along ``axis``. Floating only: integers and bool
    compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("softmax", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> x, = g.inputs
    >>> z = gd.ops.softmax(x)
    >>> z.type
    TensorType(float32[2, 3])
    >>> g.output(z)
    >>> x = np.array([[0.0, 0.0, 0.0], [1.0, -np.inf, 1.0]], gd.float32.np)
    >>> np.round(gd.evaluate(g, {"x": x})[0], 4)
    array([[0.3333, 0.3333, 0.3333],
           [0.5   , 0.    , 0.5   ]], dtype=float32)
    """
    return op("softmax", x, axis=axis)


def _softmax_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    axis = attrs["axis"]
    if x.size == 0:  # nothing to normalize (np.max of an empty axis would raise)
        return x
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return np.asarray(e / np.sum(e, axis=axis, keepdims=True))


def _softmax_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    in_d, out = elementwise(FLOAT, to_float=TO_FLOAT, op_class="float_math")(p, types, attrs)
    if out.rank == 0:
        raise ShapeError("softmax needs a value of rank >= 1; expand_dims a scalar first")
    attrs["axis"] = normalize_axis(attrs.get("axis", -1), out.rank)
    return in_d, out


define(softmax, _softmax_rule, _softmax_impl, "floating; integers -> default float")


def logsoftmax(x: Operand, axis: int = -1) -> Symbol:
    """log(softmax(x)) along ``axis``, computed as (x - max) - log(sum(exp(x - max))): a NaN or
    a +inf makes its whole slice NaN, as does a slice of -inf only. Floating only: integers
    and bool compute in the policy's default float.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("logsoftmax", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> x, = g.inputs
    >>> z = gd.ops.logsoftmax(x)
    >>> z.type
    TensorType(float32[2, 3])
    >>> g.output(z)
    >>> x = np.array([[0.0, 0.0, 0.0], [1000.0, -np.inf, 1000.0]], gd.float32.np)
    >>> np.round(gd.evaluate(g, {"x": x})[0], 3)  # -log(3), -log(2)
    array([[-1.099, -1.099, -1.099],
           [-0.693,   -inf, -0.693]], dtype=float32)
    """
    return op("logsoftmax", x, axis=axis)


def _logsoftmax_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    axis = attrs["axis"]
    if x.size == 0:  # nothing to normalize (np.max of an empty axis would raise)
        return x
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        return np.asarray(shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True)))


def _logsoftmax_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    in_d, out = elementwise(FLOAT, to_float=TO_FLOAT, op_class="float_math")(p, types, attrs)
    if out.rank == 0:
        raise ShapeError("logsoftmax needs a value of rank >= 1; expand_dims a scalar first")
    attrs["axis"] = normalize_axis(attrs.get("axis", -1), out.rank)
    return in_d, out


define(logsoftmax, _logsoftmax_rule, _logsoftmax_impl, "floating; integers -> default float")
