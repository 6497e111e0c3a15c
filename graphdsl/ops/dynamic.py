"""Ops whose result has a size known only when the model runs, named by the caller (MAX's
``out_dim``): ``nonzero`` (the indices of the non-zero elements), ``dynamic_range`` (a range
with tensor bounds) and ``dynamic_slice`` (a slice with tensor bounds); and ``dim_size``, a
dimension's size as a value, known when the model runs for a symbolic one.

The named dimension is bound when the graph is evaluated, from the first value that has
it, like an input's symbolic dimension.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._define import INTEGER, REAL, Operand, Symbol, define, need, op
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import Dim, ShapeError, bound_size, normalize_axis, shape_of
from graphdsl.types import OpTypeError, TensorType

__all__ = ["dim_size", "dynamic_range", "dynamic_slice", "nonzero"]


def _out_dim(d: object, op_name: str) -> int | str:
    if isinstance(d, bool) or not isinstance(d, (int, str)) or d == "":
        raise ShapeError(f"{op_name}: out_dim must be an int or a dimension name, got {d!r}")
    return d


def nonzero(x: Operand, out_dim: int | str) -> Symbol:
    """The indices (int64, shape ``(out_dim, rank)``) of the non-zero elements of ``x`` in
    row-major order, as MAX's ``nonzero`` (numpy's ``argwhere``): NaN is non-zero, -0.0 is
    zero. ``out_dim`` names their count, known when the model runs (ONNX ``NonZero``).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("nz", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> x, = g.inputs
    >>> z = gd.ops.nonzero(x, "count")
    >>> z.type
    TensorType(int64[count, 2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([[0, 1.5, -0.0], [np.nan, 0, 2]], np.float32)})[0]
    array([[0, 1],
           [1, 0],
           [1, 2]])
    """
    return op("nonzero", x, out_dim=out_dim)


def _nonzero_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    if t.rank == 0:
        raise ShapeError("nonzero: scalar inputs are not supported (MAX's rule); reshape to [1]")
    d = _out_dim(attrs["out_dim"], "nonzero")
    return (t.dtype,), TensorType(DType.int64, (d, t.rank))


def _nonzero_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return np.argwhere(args[0]).astype(np.int64)


define(nonzero, _nonzero_rule, _nonzero_impl, "any; the indices: int64")


def dynamic_range(
    start: Operand, stop: Operand, step: Operand, out_dim: int | str, *, dtype: DType
) -> Symbol:
    """``start, start + step, ...`` below ``stop`` (scalar tensors) in ``dtype``: ONNX
    ``Range``, ``ceil((stop - start) / step)`` values (computed in ``dtype``), their number
    named ``out_dim``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("dr", input_types={"n": gd.TensorType(gd.int32, ())})
    >>> n, = g.inputs
    >>> r = gd.ops.dynamic_range(0, n, 2, "k", dtype=gd.int32)
    >>> r.type
    TensorType(int32[k])
    >>> g.output(r)
    >>> gd.evaluate(g, {"n": np.int32(5)})[0]
    array([0, 2, 4], dtype=int32)
    """
    return op("dynamic_range", start, stop, step, out_dim=out_dim, dtype=dtype)


def _dynamic_range_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    dt: DType = attrs["dtype"]
    if dt.kind not in INTEGER and dt.kind is not Kind.float:
        raise OpTypeError(f"dynamic_range cannot produce {dt.name}; give an integer or float dtype")
    for name, t in zip(("start", "stop", "step"), types, strict=True):
        if t.rank != 0:
            raise ShapeError(f"dynamic_range: {name} must be a scalar, got {t}")
        need(REAL, Promoted(t.dtype, t.ambiguous), [t], p)
    d = _out_dim(attrs["out_dim"], "dynamic_range")
    return (dt, dt, dt), TensorType(dt, (d,))


def _dynamic_range_impl(
    args: list[np.ndarray], attrs: dict[str, Any], out: TensorType
) -> np.ndarray:
    start, stop, step = (a.item() for a in args)
    if step == 0:
        raise ShapeError("dynamic_range: the step is zero when the model runs")
    n = max(0, math.ceil((stop - start) / step))
    with np.errstate(all="ignore"):
        i = np.arange(n, dtype=args[0].dtype)
        return np.asarray(args[0] + i * args[2], dtype=args[0].dtype)


define(dynamic_range, _dynamic_range_rule, _dynamic_range_impl,
       "start, stop, step: real scalars (converted to the dtype)")  # fmt: skip


def dynamic_slice(
    x: Operand, axis: int, start: Operand, stop: Operand, step: Operand, out_dim: int | str
) -> Symbol:
    """``x`` sliced along ``axis`` from ``start`` to ``stop`` by ``step`` (int64 scalars; a
    positive step; bounds clamped as numpy's), its length named ``out_dim`` (ONNX
    ``Slice`` with tensor bounds).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("ds", input_types={"x": gd.TensorType(gd.int8, (5,)),
    ...                                 "b": gd.TensorType(gd.int64, ())})
    >>> x, b = g.inputs
    >>> g.output(gd.ops.dynamic_slice(x, 0, b, np.int64(2**62), np.int64(1), "k"))
    >>> gd.evaluate(g, {"x": np.arange(5, dtype=np.int8), "b": np.int64(3)})[0]
    array([3, 4], dtype=int8)
    """
    return op("dynamic_slice", x, start, stop, step, axis=axis, out_dim=out_dim)


def _dynamic_slice_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    axis = normalize_axis(attrs["axis"], t.rank)
    attrs["axis"] = axis
    for name, b in zip(("start", "stop", "step"), types[1:], strict=True):
        if b.rank != 0 or b.dtype.kind not in INTEGER:
            raise OpTypeError(f"dynamic_slice: {name} must be an integer scalar, got {b}")
    d = _out_dim(attrs["out_dim"], "dynamic_slice")
    shape = tuple(d if i == axis else s for i, s in enumerate(t.shape))
    return (t.dtype, DType.int64, DType.int64, DType.int64), TensorType(t.dtype, shape, t.ambiguous)


def _dynamic_slice_impl(
    args: list[np.ndarray], attrs: dict[str, Any], out: TensorType
) -> np.ndarray:
    x, start, stop, step = args
    if int(step) <= 0:
        raise ShapeError(
            f"dynamic_slice: the step is {int(step)} when the model runs; it must be > 0"
        )
    key = [slice(None)] * x.ndim
    key[attrs["axis"]] = slice(int(start), int(stop), int(step))
    return np.array(x[tuple(key)])


define(dynamic_slice, _dynamic_slice_rule, _dynamic_slice_impl,
       "x: any; start, stop, step: integer scalars")  # fmt: skip


def dim_size(d: Dim) -> Symbol:
    """The size of dimension ``d`` as an int64 scalar (MAX's ``Dim`` used as a tensor): a
    static one is its value; a symbolic one, a name or an expression of names such as
    ``n * 2 + 1``, is known when the model runs, from the graph inputs that have those names
    (evaluating or exporting a graph where none has one is refused). With no Symbol
    operand, it builds in the graph of the enclosing ``with graph:`` block.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("d", input_types={"x": gd.TensorType(gd.float32, ("n", 3))})
    >>> with g:
    ...     size = gd.ops.dim_size(g.inputs[0].shape[0] * 2 + 1)
    >>> size.type
    TensorType(int64[])
    >>> g.output(size)
    >>> gd.evaluate(g, {"x": np.zeros((4, 3), np.float32)})
    [array(9)]
    """
    return op("dim_size", dim=d)


def _dim_size_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    (d,) = shape_of([attrs["dim"]])
    if isinstance(d, int) and d < 0:
        raise ShapeError(f"dim_size: a dimension is a size >= 0, got {d}")
    attrs["dim"] = d
    return (), TensorType(DType.int64, ())


def _dim_size_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> Any:
    return np.array(bound_size(attrs.get("_bound", {}), attrs["dim"]), np.int64)


define(dim_size, _dim_size_rule, _dim_size_impl, "no operands; int64")
