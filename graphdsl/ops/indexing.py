"""Indexing by index arrays: gathers and scatters, with MAX's names and signatures
(``gather``, ``gather_nd``, ``scatter``, ``scatter_nd``, and the adding scatters); slices,
ranges and band masks are in :mod:`graphdsl.ops.slicing`.

Index operands accept any integer dtype and never promote the data they index. Negative
indices count from the end, as in numpy; an index outside its axis is an
:class:`~graphdsl.IndexRangeError` from ``gd.evaluate`` (and from the exporter's ``run()``,
whose onnxruntime kernels check bounds), never garbage.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.ops._define import (
    INTEGER,
    Operand,
    Symbol,
    define,
    op,
    promote,
    types_str,
)
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, format_shape, normalize_axis
from graphdsl.types import IndexRangeError, OpTypeError, TensorType

__all__ = ["gather", "gather_nd", "scatter", "scatter_add", "scatter_nd", "scatter_nd_add"]

_I64_MAX = 2**63 - 1


def index_dtype(t: TensorType, what: str) -> DType:
    """The dtype an index operand is read in: its own (an ambiguous literal: int64)."""
    if t.dtype.kind not in INTEGER:
        raise OpTypeError(
            f"{what} must have an integer dtype, got {t}; cast them first "
            "(gd.ops.cast(indices, gd.int64))"
        )
    return DType.int64 if t.ambiguous else t.dtype


def _check_range(idx: np.ndarray, size: int, what: str) -> np.ndarray:
    """``idx`` as int64 with negative entries counted from the end; raise for an index
    outside ``size`` (uint64 ones past int64's range included: they never wrap)."""
    wide = np.minimum(idx, np.uint64(_I64_MAX)) if idx.dtype == np.uint64 else idx
    i = wide.astype(np.int64)
    bad = (i < -size) | (i >= size)
    if bad.any():
        first = idx[bad].reshape(-1)[0].item()
        raise IndexRangeError(
            f"index {first} is out of range for {what} of size {size}; indices must be in "
            f"[{-size}, {size})"
        )
    return np.where(i < 0, i + size, i)


# ---------------------------------------------------------------------------- gather


def gather(input: Operand, indices: Operand, axis: int = 0) -> Symbol:
    """Take entries of ``input`` along ``axis`` at ``indices`` (MAX's ``gather``, numpy's
    ``take``): the result has shape ``input.shape[:axis] + indices.shape +
    input.shape[axis + 1:]`` and ``input``'s dtype.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("gather", input_types={"table": gd.TensorType(gd.float32, (4, 2)),
    ...                                     "ids": gd.TensorType(gd.int64, ('batch', 'seq'))})
    >>> table, ids = g.inputs
    >>> z = gd.ops.gather(table, ids)
    >>> z.type
    TensorType(float32[batch, seq, 2])
    >>> g.output(z)
    >>> t = np.arange(8, dtype=np.float32).reshape(4, 2)
    >>> gd.evaluate(g, {"table": t, "ids": np.array([[3, -4]])})[0]
    array([[[6., 7.],
            [0., 1.]]], dtype=float32)
    """
    return op("gather", input, indices, axis=axis)


def _gather_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, idx = types
    if x.rank == 0:
        raise ShapeError("gather needs an input of rank >= 1; a scalar has no axis to index")
    axis = normalize_axis(attrs.get("axis", 0), x.rank)
    attrs["axis"] = axis
    di = index_dtype(idx, "gather's indices")
    if isinstance(x.shape[axis], int) and x.shape[axis] == 0 and idx.shape and 0 not in idx.shape:
        raise IndexRangeError(
            f"gather from axis {axis} of size 0 (input {x}): every index is out of range"
        )
    shape = (*x.shape[:axis], *idx.shape, *x.shape[axis + 1 :])
    return (x.dtype, di), TensorType(x.dtype, shape, x.ambiguous)


def _gather_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, idx = args
    axis = attrs["axis"]
    i = _check_range(idx, x.shape[axis], f"axis {axis}")
    return np.take(x, i, axis=axis)


define(gather, _gather_rule, _gather_impl, "input: any; indices: integer")


def gather_nd(input: Operand, indices: Operand, batch_dims: int = 0) -> Symbol:
    """Gather slices of ``input`` at the index tuples in the last axis of ``indices`` (MAX's
    and ONNX's ``gather_nd``): with ``k = indices.shape[-1]`` the result has shape
    ``indices.shape[:-1] + input.shape[batch_dims + k:]``; the first ``batch_dims`` axes
    of both are shared.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("gather_nd", input_types={"x": gd.TensorType(gd.int32, (2, 3)),
    ...                                        "i": gd.TensorType(gd.int64, (2, 2))})
    >>> x, i = g.inputs
    >>> z = gd.ops.gather_nd(x, i)
    >>> z.type
    TensorType(int32[2])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.arange(6, dtype=np.int32).reshape(2, 3),
    ...                 "i": np.array([[1, 2], [0, -1]])})[0]
    array([5, 2], dtype=int32)
    """
    return op("gather_nd", input, indices, batch_dims=batch_dims)


def _gather_nd_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, idx = types
    b = attrs.get("batch_dims", 0)
    di = index_dtype(idx, "gather_nd's indices")
    if idx.rank < 1 or not isinstance(idx.shape[-1], int):
        raise ShapeError(
            f"gather_nd needs indices of rank >= 1 with a static last dimension (the length "
            f"of each index tuple), got {idx}"
        )
    k = int(idx.shape[-1])
    if isinstance(b, bool) or not isinstance(b, int) or b < 0 or b >= idx.rank:
        raise ShapeError(
            f"gather_nd: batch_dims {b!r} must be an int in [0, {idx.rank - 1}] for indices {idx}"
        )
    if b + k > x.rank:
        raise ShapeError(
            f"gather_nd: index tuples of length {k} after {b} batch dimensions need an input "
            f"of rank >= {b + k}, got {x}"
        )
    if idx.shape[:b] != x.shape[:b]:
        raise ShapeError(
            f"gather_nd: the {b} batch dimensions differ: input {format_shape(x.shape)}, "
            f"indices {format_shape(idx.shape)}; they must be equal"
        )
    shape = (*idx.shape[:-1], *x.shape[b + k :])
    return (x.dtype, di), TensorType(x.dtype, shape, x.ambiguous)


def _nd_rows(x_shape: tuple[int, ...], idx: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """The index tuples of ``idx`` (rows of length ``k``) as fancy indices, range-checked."""
    rows = idx.reshape(-1, k)
    return tuple(
        _check_range(rows[:, c], x_shape[c], f"axis {c} of the input") for c in builtins.range(k)
    )


def _gather_nd_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, idx = args
    b = attrs["batch_dims"]
    k = idx.shape[-1]
    batch = int(np.prod(x.shape[:b], dtype=np.int64))
    xb = x.reshape((batch, *x.shape[b:]))
    ib = idx.reshape((batch, *idx.shape[b:]))
    rest = x.shape[b + k :]
    parts = [xb[j][_nd_rows(xb.shape[1:], ib[j], k)] for j in builtins.range(batch)]
    flat = np.stack(parts) if parts else np.empty((0, 0, *rest), x.dtype)
    return flat.reshape((*idx.shape[:-1], *rest))


define(gather_nd, _gather_nd_rule, _gather_nd_impl, "input: any; indices: integer")


# ---------------------------------------------------------------------------- scatter


def scatter(input: Operand, updates: Operand, indices: Operand, axis: int = -1) -> Symbol:
    """A copy of ``input`` with ``updates`` written along ``axis`` at ``indices`` (MAX's
    ``scatter``, ONNX's ScatterElements, PyTorch's ``scatter``): for each position ``p`` of
    ``indices``, ``out[p with p[axis] = indices[p]] = updates[p]``. ``input`` and ``updates``
    promote together; ``indices`` and ``updates`` have one shape, no larger than ``input``'s
    off the axis. Where indices repeat, the last write (in row-major order) wins.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("scatter", input_types={"x": gd.TensorType(gd.float32, (2, 3)),
    ...                                      "u": gd.TensorType(gd.float32, (2, 1)),
    ...                                      "i": gd.TensorType(gd.int32, (2, 1))})
    >>> x, u, i = g.inputs
    >>> g.output(gd.ops.scatter(x, u, i, axis=1))
    >>> gd.evaluate(g, {"x": np.zeros((2, 3), np.float32), "u": np.array([[1], [2]], np.float32),
    ...                 "i": np.array([[2], [0]], np.int32)})[0]
    array([[0., 0., 1.],
           [2., 0., 0.]], dtype=float32)
    """
    return op("scatter", input, updates, indices, axis=axis)


def scatter_add(input: Operand, updates: Operand, indices: Operand, axis: int = -1) -> Symbol:
    """:func:`scatter` that adds ``updates`` into ``input`` (repeated indices add up), as
    PyTorch's ``scatter_add`` and ONNX's ScatterElements with ``reduction="add"``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("scatter_add", input_types={"x": gd.TensorType(gd.int32, (3,)),
    ...                                          "i": gd.TensorType(gd.int64, (4,))})
    >>> x, i = g.inputs
    >>> g.output(gd.ops.scatter_add(x, np.ones(4, np.int32), i, axis=0))
    >>> gd.evaluate(g, {"x": np.zeros(3, np.int32), "i": np.array([0, 2, 2, -1])})[0]
    array([1, 0, 3], dtype=int32)
    """
    return op("scatter_add", input, updates, indices, axis=axis)


def _scatter_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, u, idx = types
    c = promote(p, [x, u])
    di = index_dtype(idx, "scatter's indices")
    if x.rank == 0:
        raise ShapeError("scatter needs an input of rank >= 1; a scalar has no axis to index")
    axis = normalize_axis(attrs.get("axis", -1), x.rank)
    attrs["axis"] = axis
    if u.shape != idx.shape or idx.rank != x.rank:
        raise ShapeError(
            f"scatter: updates and indices must have one shape, of the input's rank; got "
            f"input {format_shape(x.shape)}, updates {format_shape(u.shape)}, indices "
            f"{format_shape(idx.shape)}"
        )
    for d, (n, m) in enumerate(zip(idx.shape, x.shape, strict=True)):
        if d != axis and isinstance(n, int) and isinstance(m, int) and n > m:
            raise ShapeError(
                f"scatter: indices {format_shape(idx.shape)} are larger than the input "
                f"{format_shape(x.shape)} in dimension {d}; off the axis they must fit"
            )
    return (c.dtype, c.dtype, di), TensorType(c.dtype, x.shape, c.ambiguous)


def _scatter_where(x: np.ndarray, idx: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    grids: list[np.ndarray] = list(np.indices(idx.shape, sparse=True))
    grids[axis] = _check_range(idx, x.shape[axis], f"axis {axis}")
    return tuple(grids)


def _scatter_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, u, idx = args
    res: np.ndarray = x.copy()
    res[_scatter_where(x, idx, attrs["axis"])] = u  # repeated indices: the last write wins
    return res


def _scatter_add_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, u, idx = args
    res: np.ndarray = x.copy()
    with np.errstate(all="ignore"):
        np.add.at(res, _scatter_where(x, idx, attrs["axis"]), u)  # in row-major order
    return res


def _numbers_only(rule: Any, why: str) -> Any:
    """``rule`` refusing bool values, saying ``why`` after the operand types and policy
    (the scatters that add or combine take numbers; max-graph types them as bool, as
    max.graph does, and computing them raises: uncomputable)."""

    def checked(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        in_dtypes, out = rule(p, types, attrs)
        if out.dtype is DType.bool and not p.bool_arithmetic:  # (max-graph: typed, as MAX)
            raise OpTypeError(
                f"operand types {types_str(types)} (in argument order) are bool under policy "
                f"{p.name!r}{why} cast input and updates to an integer dtype first "
                "(gd.ops.cast)"
            )
        return in_dtypes, out

    return checked


def _adding(rule: Any) -> Any:
    """``rule`` for the scatters that add: bool values cannot add."""
    return _numbers_only(rule, ", which cannot be added;")


define(scatter, _scatter_rule, _scatter_impl, "input, updates: any (promote); indices: integer")
define(scatter_add, _adding(_scatter_rule), _scatter_add_impl,
       "input, updates: numeric (promote); indices: integer")  # fmt: skip


def scatter_nd(input: Operand, updates: Operand, indices: Operand) -> Symbol:
    """A copy of ``input`` with ``updates`` written at the index tuples in the last axis of
    ``indices`` (MAX's ``scatter_nd``, ONNX's ScatterND): ``updates`` has shape
    ``indices.shape[:-1] + input.shape[k:]`` for tuples of length ``k``. Where tuples
    repeat, the last write wins.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("scatter_nd", input_types={"x": gd.TensorType(gd.int8, (2, 2))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.scatter_nd(x, np.array([7, 9], np.int8), np.array([[0, 1], [1, 0]])))
    >>> gd.evaluate(g, {"x": np.zeros((2, 2), np.int8)})[0]
    array([[0, 7],
           [9, 0]], dtype=int8)
    """
    return op("scatter_nd", input, updates, indices)


def scatter_nd_add(input: Operand, updates: Operand, indices: Operand) -> Symbol:
    """:func:`scatter_nd` that adds ``updates`` into ``input`` (repeated tuples add up).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("scatter_nd_add", input_types={"x": gd.TensorType(gd.int8, (2, 2))})
    >>> x, = g.inputs
    >>> u = np.array([[7, 7], [9, 9]], np.int8)  # two updates of row 1
    >>> g.output(gd.ops.scatter_nd_add(x, u, np.array([[1], [1]])))
    >>> gd.evaluate(g, {"x": np.ones((2, 2), np.int8)})[0]
    array([[ 1,  1],
           [17, 17]], dtype=int8)
    """
    return op("scatter_nd_add", input, updates, indices)


def _scatter_nd_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, u, idx = types
    c = promote(p, [x, u])
    di = index_dtype(idx, "scatter_nd's indices")
    if idx.rank < 1 or not isinstance(idx.shape[-1], int) or idx.shape[-1] > x.rank:
        raise ShapeError(
            f"scatter_nd needs indices of rank >= 1 whose static last dimension (the tuple "
            f"length) is at most the input's rank; got indices {idx} for input {x}"
        )
    k = int(idx.shape[-1])
    want = (*idx.shape[:-1], *x.shape[k:])
    if u.shape != want:
        raise ShapeError(
            f"scatter_nd: updates must have shape indices.shape[:-1] + input.shape[{k}:] = "
            f"{format_shape(want)}, got {format_shape(u.shape)}"
        )
    return (c.dtype, c.dtype, di), TensorType(c.dtype, x.shape, c.ambiguous)


def _scatter_nd_parts(
    args: list[np.ndarray],
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    x, u, idx = args
    k = idx.shape[-1]
    where = _nd_rows(x.shape, idx, k)
    return x.copy(), u.reshape((-1, *x.shape[k:])), where


def _scatter_nd_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    res, u, where = _scatter_nd_parts(args)
    res[where] = u  # repeated tuples: the last write wins
    return res


def _scatter_nd_add_impl(
    args: list[np.ndarray], attrs: dict[str, Any], out: TensorType
) -> np.ndarray:
    res, u, where = _scatter_nd_parts(args)
    with np.errstate(all="ignore"):
        np.add.at(res, where, u)
    return res


define(scatter_nd, _scatter_nd_rule, _scatter_nd_impl,
       "input, updates: any (promote); indices: integer")  # fmt: skip
define(scatter_nd_add, _adding(_scatter_nd_rule), _scatter_nd_add_impl,
       "input, updates: numeric (promote); indices: integer")  # fmt: skip
