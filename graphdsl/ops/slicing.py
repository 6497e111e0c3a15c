"""Slices, ranges and band masks, with MAX's names and signatures (``slice_tensor``,
``range``, ``band_part``) and numpy's/PyTorch's where users look for them (``x[...]``,
``tril``, ``triu``, ``one_hot``). Negative indices count from the end, as in numpy."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.dtypes import dtype as as_dtype
from graphdsl.ops._define import INTEGER, Operand, Symbol, define, op
from graphdsl.ops.indexing import gather, index_dtype
from graphdsl.ops.shape import expand_dims
from graphdsl.policies import Policy
from graphdsl.shapes import Dim, Shape, ShapeError, bound_size, dim_repr, format_shape
from graphdsl.symbol import register_extension
from graphdsl.types import IndexRangeError, OpTypeError, TensorType

__all__ = ["band_part", "one_hot", "range", "slice_tensor", "tril", "triu"]


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
        f"the slice {slice(start, stop, step)} of the symbolic dimension {dim_repr(d)} has a "
        "size the type system cannot name; name it as MAX does: "
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


def _range_length(start: Any, stop: Any, step: Any) -> int:
    """The number of values: ceil((stop - start) / step), exact for ints of any size (a
    float division would round 2**53 + 1 to 2**53)."""
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        return builtins.max(0, -((int(start) - int(stop)) // int(step)))
    return int(builtins.max(0, math.ceil((stop - start) / step)))


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
        length = _range_length(start, stop, step)
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
        bound_size(bound, v) if isinstance(v, str) else v
        for v in (attrs["start"], attrs["stop"], attrs["step"])
    )
    i = np.arange(_range_length(start, stop, step), dtype=np.int64)
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
    index_dtype(indices.type, "one_hot's indices")
    g = indices.graph
    # compared in int64: in a narrower dtype the range would wrap onto other indices
    wide = indices if indices.dtype is DType.int64 else indices.cast(DType.int64)
    classes = g._apply("range", (), {"start": 0, "stop": int(depth), "step": 1,
                                      "out_dim": None, "dtype": DType.int64})  # fmt: skip
    hit = expand_dims(wide, -1) == classes
    return hit.cast(as_dtype(dtype) if dtype is not None else g.policy.default_float)
