"""MAX's indexing (``x[...]`` and ``ops.slice_tensor``) over graphdsl's ``slice_tensor``:
ints, slices with positive steps, ``None``, ``...``, a scalar integer tensor (a gather),
and ``(slice, out_dim)`` for a slice whose bounds are tensors (its length, ``out_dim``, is
known when the model runs: ONNX ``Slice`` with tensor bounds). A slice with int bounds of a
symbolic dimension has MAX's algebraic size (``x[:-1]`` of ``n`` is ``n - 1``).

>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
>>> with Graph("s", input_types=[TensorType(DType.int8, ["n", 4], DeviceRef.CPU())]) as g:
...     x = g.inputs[0].tensor
...     print(x[1:].shape, x[::2, None, -1].shape)
[Dim('n') + Dim(-1), Dim(4)] [(Dim('n') + Dim(1)) // Dim(2), Dim(1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.graph import Symbol
from graphdsl.max._dim import Dim, StaticDim
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._value import HOOKS, TensorValue, arg, maxop, tv

__all__ = ["getitem", "slice_tensor"]


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _tensor(v: object) -> bool:
    return isinstance(v, (TensorValue, Symbol))


def _slice_size(d: Dim, s: slice) -> Dim:
    """MAX's size of slice ``s`` (int bounds, positive step) of symbolic dimension ``d``."""
    step = 1 if s.step is None else int(s.step)
    start = 0 if s.start is None else int(s.start)
    stop = d if s.stop is None else int(s.stop)
    begin: Dim = d + start if start < 0 else Dim(start)
    end: Dim = d + stop if isinstance(stop, int) and stop < 0 else Dim(stop)
    return (end - begin + (step - 1)) // step


def _entry(it: Any, dim: Any) -> Any:
    """One index entry as graphdsl's slice_tensor takes it."""
    if isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], slice):
        s, out_dim = it
        if any(_tensor(b) for b in (s.start, s.stop, s.step)):
            return ("dynamic", s, out_dim)
        return (s, dim_to_core(out_dim))
    if isinstance(it, slice):
        _check_step(it)
        _check_bounds(it, dim)
        if any(_tensor(b) for b in (it.start, it.stop)):
            raise TypeError(
                f"slice {it}: bounds given as tensors need the result's dimension, as MAX asks: "
                "ops.slice_tensor(x, [(slice(start, stop), 'out_dim')])"
            )
        if dim is not None and not isinstance(dim, StaticDim) and it != slice(None):
            return (it, dim_to_core(_slice_size(dim, it)))
        return it
    if isinstance(it, Dim):
        return int(it)
    return it


def _check_bounds(s: slice, dim: Any) -> None:
    """MAX's checks of a slice's int bounds (where graphdsl would clamp them, as numpy
    does): a negative bound before the start of a static dimension, and a start after the
    stop."""
    start, stop = s.start, s.stop
    if not all(b is None or _is_int(b) for b in (start, stop)):
        return
    size = int(dim) if isinstance(dim, StaticDim) else None
    fail = "Failed to create op 'SliceOp': [rmo.slice {}]"
    norm = []
    for name, b in (("start", start), ("stop", stop)):
        if b is None or size is None or int(b) >= 0:
            norm.append(None if b is None else int(b))
            continue
        if int(b) + size < 0:
            raise ValueError(
                fail.format(f"{name} index {int(b) + size} out of range for dimension size {size}")
                + f" (graphdsl: {s} of a dimension of size {size})"
            )
        norm.append(int(b) + size)
    a, b = norm
    if a is not None and b is not None and (a >= 0) == (b >= 0) and a > b:
        step = 1 if s.step is None else int(s.step)
        raise ValueError(
            fail.format(
                "start and stop should be increasing for positive step and decreasing for "
                f"negative step, but got start {a}, stop {b} for step {step}"
            )
            + f" (graphdsl: {s} would be empty)"
        )


def _check_step(s: slice) -> None:
    if s.step is not None and _is_int(s.step) and int(s.step) <= 0:
        raise ValueError(f"expected positive integer step but got {s.step}")


def _slice(x: TensorValue, items: Sequence[Any]) -> TensorValue:
    shape = x.shape
    consumed = [it for it in items if it is not None and it is not Ellipsis]
    if len(consumed) > x.rank:
        raise ValueError(
            f"expected slice indices length {len(consumed)} to be less than or equal to input "
            f"rank {x.rank}"
        )
    # the dimension each entry indexes
    dims: list[Any] = []
    axis = 0
    for it in items:
        if it is None:
            dims.append(None)
        elif it is Ellipsis:
            dims.append(None)
            axis += x.rank - len(consumed)
        else:
            dims.append(shape[axis] if axis < x.rank else None)
            axis += 1
    entries = [_entry(it, d) for it, d in zip(items, dims, strict=True)]
    dynamic = [k for k, e in enumerate(entries) if isinstance(e, tuple) and e[0] == "dynamic"]
    value = x.symbol
    if dynamic:
        value = _dynamic(x, items, entries, dynamic)
        entries = [slice(None) if k in dynamic else e for k, e in enumerate(entries)]
    return tv(gd.slice_tensor(value, entries))


def _dynamic(x: TensorValue, items: Sequence[Any], entries: list[Any], which: list[int]) -> Symbol:
    from graphdsl.ops.dynamic import dynamic_slice

    value = x.symbol
    axis_of = _axes(items, x.rank)
    for k in which:
        _, s, out_dim = entries[k]
        start, stop, step = _bound(s.start, 0), _bound(s.stop, _END), _bound(s.step, 1)
        value = dynamic_slice(value, axis_of[k], start, stop, step, dim_to_core(out_dim))
    return value


_END = 2**63 - 1  # an open stop: numpy's slice clamps it to the axis


def _bound(v: Any, default: int) -> Any:
    """A slice bound as dynamic_slice takes it: a tensor's symbol or an int64 scalar."""
    if v is None:
        return np.int64(default)
    if _is_int(v):
        return np.int64(int(v))
    return arg(v)


def _axes(items: Sequence[Any], rank: int) -> list[int]:
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    out, axis = [], 0
    for it in items:
        out.append(axis)
        if it is Ellipsis:
            axis += rank - consumed
        elif it is not None:
            axis += 1
    return out


def _out_axis(items: Sequence[Any], k: int, rank: int) -> int:
    """The axis of the result of slicing with ``items`` that entry ``k`` (a slice) gives."""
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    axis = 0
    for it in items[:k]:
        if it is Ellipsis:
            axis += rank - consumed
        elif not _is_int(it):
            axis += 1
    return axis


def getitem(x: TensorValue, index: Any) -> TensorValue:
    """``x[index]`` as MAX indexes (see the module's docstring)."""
    items = index if isinstance(index, tuple) and not _is_pair(index) else (index,)
    return slice_tensor(x, list(items))


def _is_pair(index: tuple[Any, ...]) -> bool:
    """Whether ``x[index]`` is ``x[(slice, out_dim)]``: a slice and a symbolic dimension (a
    slice and an int are two indices, ``x[:, -1]``, as in MAX)."""
    return (
        len(index) == 2
        and isinstance(index[0], slice)
        and isinstance(index[1], (str, Dim))
        and not isinstance(index[1], (int, StaticDim))
    )


@maxop("slice_tensor")
def slice_tensor(x: Any, indices: Sequence[Any]) -> TensorValue:
    """Slices ``x`` as ``x[indices]`` does (MAX's ``slice_tensor``): ints, slices with
    positive steps, ``None``, ``...``, a scalar integer tensor, and ``(slice, out_dim)`` for
    tensor bounds."""
    value = x if isinstance(x, TensorValue) else tv(arg(x))
    items = [it for it in indices]
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise ValueError(
            f"more than one Ellipsis in slice indices {tuple(items)} (graphdsl: an index can "
            "have only one ...)"
        )
    tensors = [i for i, it in enumerate(items) if _tensor(it)]
    if tensors:  # slice the rest, then gather each tensor index, the last axis first
        rest = [slice(None) if i in tensors else it for i, it in enumerate(items)]
        sliced = _slice(value, rest).symbol
        for k in reversed(tensors):
            sliced = gd.gather(sliced, arg(items[k]), axis=_out_axis(rest, k, value.rank))
        return tv(sliced)
    return _slice(value, items)


HOOKS["getitem"] = getitem
