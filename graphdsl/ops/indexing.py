"""Indexing: slices, gathers, scatters, ranges and band masks, with MAX's names and
signatures (``slice_tensor``, ``gather``, ``gather_nd``, ``scatter``, ``scatter_nd``,
``range``, ``band_part``) and numpy's/PyTorch's where users look for them (``x[...]``,
``tril``, ``triu``, ``one_hot``).

Index operands accept any integer dtype and never promote the data they index. Negative
indices count from the end, as in numpy; an index outside its axis is an
:class:`~graphdsl.IndexRangeError` from ``gd.evaluate`` (and from the exporter's ``run()``,
whose onnxruntime kernels check bounds), never garbage.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.dtypes import dtype as as_dtype
from graphdsl.ops._define import (
    INTEGER,
    Operand,
    Symbol,
    define,
    op,
    promote,
    types_str,
)
from graphdsl.ops.shape import _bound, expand_dims
from graphdsl.policies import Policy
from graphdsl.shapes import Dim, Shape, ShapeError, format_shape, normalize_axis
from graphdsl.symbol import register_extension
from graphdsl.types import IndexRangeError, OpTypeError, TensorType

__all__ = [
    "band_part",
    "gather",
    "gather_nd",
    "one_hot",
    "range",
    "scatter",
    "scatter_add",
    "scatter_nd",
    "scatter_nd_add",
    "slice_tensor",
    "tril",
    "triu",
]

_I64_MAX = 2**63 - 1


def _index_dtype(t: TensorType, what: str) -> DType:
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
    di = _index_dtype(idx, "gather's indices")
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
    di = _index_dtype(idx, "gather_nd's indices")
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
    di = _index_dtype(idx, "scatter's indices")
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


def _adding(rule: Any) -> Any:
    """``rule`` for the scatters that add: bool values cannot add."""

    def checked(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        in_dtypes, out = rule(p, types, attrs)
        if out.dtype is DType.bool:
            raise OpTypeError(
                f"operand types {types_str(types)} (in argument order) are bool under policy "
                f"{p.name!r}, which cannot be added; cast input and updates to an integer "
                "dtype first (gd.ops.cast)"
            )
        return in_dtypes, out

    return checked


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
    di = _index_dtype(idx, "scatter_nd's indices")
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


# ---------------------------------------------------------------------------- slices

# One entry per input axis in a normalized slice: ("i", index) takes one entry (the axis
# goes), ("s", start, stop, step, dim) keeps a slice of it (bounds as the user gave them,
# None for an open end), and ("n",) in between inserts a new axis of size 1.
SliceItem = tuple[Any, ...]


def slice_tensor(x: Operand, indices: Sequence[Any]) -> Symbol:
    """numpy's basic indexing, as MAX's ``slice_tensor``: one entry per axis, each an int
    (the axis goes), a ``slice`` (negative bounds and steps as in numpy), ``None`` (a new
    axis of size 1) or ``...`` (every axis not otherwise named); axes past the entries are
    kept whole. ``x[...]`` on a Symbol builds the same node.

    On a symbolic dimension, only ``:`` and ``::-1`` keep the dimension's name; any other
    slice of it needs the result's dimension named, as MAX asks:
    ``(slice(1, None), "seq_1")``.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("slice", input_types={"x": gd.TensorType(gd.int32, ('batch', 4, 5))})
    >>> x, = g.inputs
    >>> z = gd.ops.slice_tensor(x, [..., None, slice(1, 3), slice(None, None, -2)])
    >>> z.type, x[:, -1].type
    (TensorType(int32[batch, 1, 2, 3]), TensorType(int32[batch, 5]))
    >>> g.output(x[0, 1:3, ::-2])
    >>> gd.evaluate(g, {"x": np.arange(20, dtype=np.int32).reshape(1, 4, 5)})[0]
    array([[ 9,  7,  5],
           [14, 12, 10]], dtype=int32)
    """
    index = indices if isinstance(indices, (tuple, list)) else (indices,)
    return op("slice_tensor", x, index=tuple(_hashable(it) for it in index))


def _hashable(it: Any) -> Any:
    """An index entry as node attributes hold it (a slice becomes ("slice", start, stop,
    step[, dim]): attributes are hashed when common subexpressions merge)."""
    if isinstance(it, slice):
        return ("slice", it.start, it.stop, it.step)
    if isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], slice):
        return ("slice", it[0].start, it[0].stop, it[0].step, it[1])
    return int(it) if _is_int(it) else it


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _bound_arg(v: object, what: str) -> int | None:
    if v is None or _is_int(v):
        return None if v is None else int(v)  # type: ignore[call-overload]
    raise OpTypeError(
        f"slice {what} {v!r} must be a Python int or None (data-dependent bounds give shapes "
        "the type system cannot know; gather with a range instead)"
    )


def _normalize_index(shape: Shape, index: Sequence[Any]) -> list[SliceItem]:
    """``index`` as one item per input axis (and ``("n",)`` for new axes)."""
    consumes = [it for it in index if it is not None and it is not Ellipsis]
    if sum(1 for it in index if it is Ellipsis) > 1:
        raise IndexRangeError("an index can have only one ellipsis (...)")
    if len(consumes) > len(shape):
        raise IndexRangeError(
            f"too many indices: {len(consumes)} for a value of rank {len(shape)} "
            f"(shape {format_shape(shape)})"
        )
    fill = [("slice", None, None, None)] * (len(shape) - len(consumes))
    items = list(index)
    if Ellipsis in [it for it in items if not isinstance(it, np.ndarray)]:
        k = next(i for i, it in enumerate(items) if it is Ellipsis)
        items[k : k + 1] = fill
    else:
        items += fill
    out: list[SliceItem] = []
    axis = 0
    for it in items:
        if it is None:
            out.append(("n",))
            continue
        d = shape[axis]
        if _is_int(it):
            i = int(it)
            if isinstance(d, int) and not -d <= i < d:
                raise IndexRangeError(
                    f"index {i} is out of range for axis {axis} of size {d} (shape "
                    f"{format_shape(shape)}); indices must be in [{-d}, {d})"
                )
            out.append(("i", i % d if isinstance(d, int) else i))
        elif isinstance(it, tuple) and it and it[0] == "slice":
            named = it[4] if len(it) == 5 else None
            start, stop = _bound_arg(it[1], "start"), _bound_arg(it[2], "stop")
            step = _bound_arg(it[3], "step")
            if step == 0:
                raise IndexRangeError("slice step cannot be zero")
            out.append(("s", start, stop, step or 1, _slice_dim(d, start, stop, step, named)))
        else:
            raise OpTypeError(
                f"cannot index with {it!r} (of type {type(it).__name__}); use ints, slices, "
                "None, ... or one integer Symbol or array (a gather)"
            )
        axis += 1
    return out


def _slice_dim(d: Dim, start: int | None, stop: int | None, step: int | None, named: Any) -> Dim:
    """The size a slice leaves of dimension ``d``."""
    if isinstance(d, int):
        n = len(builtins.range(*slice(start, stop, step).indices(d)))
        if named is not None and named != n:
            raise ShapeError(
                f"the slice {slice(start, stop, step)} of a dimension of size {d} has size "
                f"{n}, not the {named!r} given for it"
            )
        return n
    if named is not None:
        if isinstance(named, bool) or not isinstance(named, (int, str)) or named == "":
            raise ShapeError(f"a slice's result dimension must be an int or a name, got {named!r}")
        return named
    if start is None and stop is None and step in (None, 1, -1):
        return d
    raise ShapeError(
        f"the slice {slice(start, stop, step)} of the symbolic dimension {d!r} has a size the "
        "type system cannot name; name it as MAX does: "
        f"gd.ops.slice_tensor(x, [..., (slice({start}, {stop}, {step}), 'n')]) (a new name, "
        "or an existing one that it equals)"
    )


def _slice_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    items = _normalize_index(t.shape, attrs["index"])
    attrs["items"] = tuple(items)
    shape: list[Dim] = []
    for it in items:
        if it[0] == "n":
            shape.append(1)
        elif it[0] == "s":
            shape.append(it[4])
    return (t.dtype,), TensorType(t.dtype, tuple(shape), t.ambiguous)


def _slice_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    key: list[Any] = []
    axis = 0
    for it in attrs["items"]:
        if it[0] == "n":
            key.append(None)
            continue
        if it[0] == "i":
            size = x.shape[axis]
            if not -size <= it[1] < size:
                raise IndexRangeError(
                    f"index {it[1]} is out of range for axis {axis} of size {size}"
                )
            key.append(it[1])
        else:
            key.append(slice(it[1], it[2], it[3]))
        axis += 1
    return np.array(x[tuple(key)])  # a copy (a view would alias the operand)


define(slice_tensor, _slice_rule, _slice_impl, "any")


def _getitem(x: Symbol, index: Any) -> Symbol:
    """``x[index]``: basic indexing (slice_tensor), plus one integer Symbol or array as in
    numpy (a gather along its axis; the other entries must not be ints, as numpy would then
    move the gathered axes first)."""
    items = index if isinstance(index, tuple) else (index,)
    arrays = [k for k, it in enumerate(items) if isinstance(it, (Symbol, np.ndarray, list))]
    if not arrays:
        return slice_tensor(x, items)
    if len(arrays) > 1 or any(_is_int(it) for it in items):
        raise OpTypeError(
            f"x[{index!r}]: only one Symbol or array index per step, and no int beside it "
            "(numpy would move the gathered axes); index in two steps, e.g. x[0][:, idx]"
        )
    k = arrays[0]
    idx = items[k]
    if isinstance(idx, list):
        idx = np.asarray(idx)
    if (isinstance(idx, np.ndarray) and idx.dtype == np.bool_) or (
        isinstance(idx, Symbol) and idx.dtype is DType.bool
    ):
        raise OpTypeError(
            "a boolean mask index gives a shape that depends on the data; use "
            "gd.ops.where(mask, x, fill) instead"
        )
    before = items[:k]
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    axis = 0
    for it in before:
        if it is Ellipsis:
            axis += x.rank - consumed
        else:
            axis += 1
    basic = (*before, slice(None), *items[k + 1 :])
    trivial = all(it is Ellipsis or it == slice(None) for it in basic)
    y = x if trivial else slice_tensor(x, basic)
    return gather(y, idx, axis=axis)


register_extension("getitem", _getitem)


# ---------------------------------------------------------------------------- ranges


def range(
    start: int | float | str,
    stop: int | float | str,
    step: int | float = 1,
    out_dim: int | str | None = None,
    *,
    dtype: DType | str | None = None,
) -> Symbol:
    """Evenly spaced values ``start, start + step, ...`` up to (not including) ``stop``, as
    MAX's and numpy's ``range``/``arange``. ``start`` and ``stop`` may be symbolic dimensions
    (``x.shape[1]``): ``range(0, 'seq')`` has the dimension ``seq``, bound at run time from
    the input that has it; another length over a symbolic bound needs ``out_dim``. The
    dtype defaults to int64 for ints and names, else the policy's default float; each value
    is ``start + i * step`` computed exactly (int64, or float64) and then converted.
    With no Symbol operand, it builds in the graph of the enclosing ``with graph:`` block.

    >>> import numpy as np, graphdsl as gd
    >>> with gd.Graph("range", input_types={"ids": gd.TensorType(gd.int64, ('b', 'seq'))}) as g:
    ...     ids, = g.inputs
    ...     pos = gd.ops.range(0, ids.shape[1])
    ...     g.output(pos, gd.ops.range(0.0, 1.0, 0.25))
    >>> pos.type
    TensorType(int64[seq])
    >>> gd.evaluate(g, {"ids": np.zeros((2, 3), np.int64)})
    [array([0, 1, 2]), array([0.  , 0.25, 0.5 , 0.75], dtype=float32)]
    """
    return op("range", start=start, stop=stop, step=step, out_dim=out_dim,
              dtype=None if dtype is None else as_dtype(dtype))  # fmt: skip


def _range_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        ok = isinstance(v, (int, float, str, np.integer, np.floating)) and not isinstance(v, bool)
        if not ok or (name == "step" and isinstance(v, str)):
            raise OpTypeError(
                f"range {name} must be a Python int or float"
                + (" or a dimension name" if name != "step" else "")
                + f", got {v!r}; a value computed in the graph gives a data-dependent length"
            )
    if step == 0:
        raise ShapeError("range step cannot be zero")
    floats = any(isinstance(v, (float, np.floating)) for v in (start, stop, step))
    dt: DType = attrs["dtype"] or (p.default_float if floats else DType.int64)
    if dt.kind not in INTEGER and not dt.is_float:
        raise OpTypeError(f"range cannot produce {dt.name}; give an integer or floating dtype")
    if floats and any(isinstance(v, str) for v in (start, stop)):
        raise OpTypeError(
            f"range({start!r}, {stop!r}, {step!r}): a float range needs numeric bounds; over "
            "a symbolic dimension, build an int range and scale it (range(0, 'n') * step)"
        )
    if floats and not dt.is_float:
        raise OpTypeError(
            f"range with float bounds ({start}, {stop}, {step}) cannot produce {dt.name}; use "
            "int bounds or a floating dtype"
        )
    out_dim = attrs.get("out_dim")
    length: Dim
    if not isinstance(start, str) and not isinstance(stop, str):
        length = builtins.max(0, math.ceil((stop - start) / step))
        if out_dim is not None and out_dim != length:
            raise ShapeError(f"range({start}, {stop}, {step}) has {length} values, not {out_dim}")
    elif out_dim is not None:
        length = out_dim
    elif start == 0 and step == 1 and isinstance(stop, str):
        length = stop
    else:
        raise ShapeError(
            f"range({start!r}, {stop!r}, {step!r}) over a symbolic bound has a length the "
            "type system cannot name; give it: out_dim='n' (or start at 0 with step 1)"
        )
    attrs["dtype"] = dt
    return (), TensorType(dt, (length,))


def _range_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    bound = attrs.get("_bound", {})
    start, stop, step = (
        _bound(bound, v) if isinstance(v, str) else v
        for v in (attrs["start"], attrs["stop"], attrs["step"])
    )
    n = builtins.max(0, math.ceil((stop - start) / step))
    i = np.arange(n, dtype=np.int64)
    if out.dtype.is_float:
        return np.asarray(np.float64(start) + i.astype(np.float64) * np.float64(step))
    return np.asarray(np.int64(start) + i * np.int64(step))


define(range, _range_rule, _range_impl, "no operands: int, float or dimension-name bounds")


# ---------------------------------------------------------------------------- masks


def band_part(
    x: Operand, num_lower: int | None = None, num_upper: int | None = None, exclude: bool = False
) -> Symbol:
    """Keep the band of the last two axes where ``-num_lower <= col - row <= num_upper``
    (None: no limit on that side) and zero the rest, as MAX's and TensorFlow's
    ``band_part``; ``exclude=True`` zeroes the band instead. ``band_part(x, None, 0)`` is the
    causal (lower-triangular) mask. Any dtype (bool: False outside).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("band_part", input_types={"x": gd.TensorType(gd.int8, (3, 3))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.band_part(x, num_lower=1, num_upper=0))
    >>> gd.evaluate(g, {"x": np.ones((3, 3), np.int8)})[0]
    array([[1, 0, 0],
           [1, 1, 0],
           [0, 1, 1]], dtype=int8)
    """
    return op("band_part", x, num_lower=num_lower, num_upper=num_upper, exclude=exclude)


def _band_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    if t.rank < 2:
        raise ShapeError(f"band_part needs a value of rank >= 2 (a matrix), got {t}")
    for name in ("num_lower", "num_upper"):
        v = attrs.get(name)
        if v is not None and not _is_int(v):
            raise OpTypeError(f"band_part {name} must be a Python int or None, got {v!r}")
    return (t.dtype,), TensorType(t.dtype, t.shape, t.ambiguous)


def _band_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    rows, cols = x.shape[-2:]
    diff = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = np.ones((rows, cols), np.bool_)
    if attrs["num_lower"] is not None:
        keep &= diff >= -attrs["num_lower"]
    if attrs["num_upper"] is not None:
        keep &= diff <= attrs["num_upper"]
    if attrs["exclude"]:
        keep = ~keep
    return np.where(keep, x, np.zeros((), x.dtype))


define(band_part, _band_rule, _band_impl, "any")


def tril(x: Operand, k: int = 0) -> Symbol:
    """The lower triangle of the last two axes (``col - row <= k``), as numpy and PyTorch;
    builds :func:`band_part`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("tril", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.tril(x, k=1))
    >>> gd.evaluate(g, {"x": np.ones((2, 3), np.float32)})[0]
    array([[1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    return band_part(x, num_lower=None, num_upper=k)


def triu(x: Operand, k: int = 0) -> Symbol:
    """The upper triangle of the last two axes (``col - row >= k``), as numpy and PyTorch;
    builds :func:`band_part`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("triu", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> x, = g.inputs
    >>> g.output(gd.ops.triu(x))
    >>> gd.evaluate(g, {"x": np.ones((2, 3), np.float32)})[0]
    array([[1., 1., 1.],
           [0., 1., 1.]], dtype=float32)
    """
    return band_part(x, num_lower=-k, num_upper=None)


def one_hot(indices: Symbol, depth: int, dtype: DType | str | None = None) -> Symbol:
    """A new last axis of length ``depth`` holding 1 at each index and 0 elsewhere, as
    ``jax.nn.one_hot``: an index outside ``[0, depth)`` (a negative one included) gives a
    row of zeros. The dtype defaults to the policy's default float. Builds a compare with
    :func:`range`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("one_hot", input_types={"i": gd.TensorType(gd.int32, (3,))})
    >>> i, = g.inputs
    >>> g.output(gd.ops.one_hot(i, 3))
    >>> gd.evaluate(g, {"i": np.array([2, 0, 5], np.int32)})[0]
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 0., 0.]], dtype=float32)
    """
    if not isinstance(indices, Symbol):
        raise OpTypeError(f"one_hot needs a Symbol of indices, got {type(indices).__name__}")
    if not _is_int(depth) or depth < 0:
        raise OpTypeError(f"one_hot depth must be an int >= 0, got {depth!r}")
    _index_dtype(indices.type, "one_hot's indices")
    g = indices.graph
    # compared in int64: in a narrower dtype the range would wrap onto other indices
    wide = indices if indices.dtype is DType.int64 else indices.cast(DType.int64)
    classes = g._apply("range", (), {"start": 0, "stop": int(depth), "step": 1,
                                      "out_dim": None, "dtype": DType.int64})  # fmt: skip
    hit = expand_dims(wide, -1) == classes
    return hit.cast(as_dtype(dtype) if dtype is not None else g.policy.default_float)
