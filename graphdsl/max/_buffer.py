"""MAX's mutable buffers over graphdsl's pure graphs: a ``BufferType`` input is state threaded
through the graph. Its value starts as the input; ``buffer_store`` and
``buffer_store_slice`` replace it (a slice store concatenates slices of the current value
and the source); ``buffer_load`` reads it; the graph's value after the last
store becomes an extra output (after the graph's own, in input order), which the caller
feeds back as the next run's input. ``buffer_create`` makes a buffer that lives inside
one run (zeros, or ``init_value``: a scalar broadcast).

>>> import numpy as np, graphdsl as gd
>>> from graphdsl.max import BufferType, DeviceRef, DType, Graph, TensorType, ops
>>> cpu = DeviceRef.CPU()
>>> types = [BufferType(DType.int32, [2, 3], cpu), TensorType(DType.int32, [3], cpu)]
>>> with Graph("acc", input_types=types) as g:
...     state, row = g.inputs[0].buffer, g.inputs[1].tensor
...     ops.buffer_store_slice(state, ops.buffer_load(state)[1] + row, [1])
...     g.output(ops.sum(ops.buffer_load(state), axis=0))
>>> out, new_state = gd.evaluate(g, [np.zeros((2, 3), np.int32), np.arange(3, dtype=np.int32)])
>>> out.tolist(), new_state.tolist()
([[0, 1, 2]], [[0, 0, 0], [0, 1, 2]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.graph import Symbol
from graphdsl.max._dim import Shape
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._errors import UnsupportedError, raising
from graphdsl.max._types import BufferType, DeviceRef, TensorType
from graphdsl.max._value import HOOKS, TensorValue, Value, arg, current_graph, note_effect, tv
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError

__all__ = [
    "BufferValue",
    "BufferValueLike",
    "buffer_create",
    "buffer_load",
    "buffer_store",
    "buffer_store_slice",
]


class BufferValue(Value):
    """A mutable buffer of a graphdsl.max Graph, as max.graph's ``BufferValue``: ``b[...]``
    loads it, ``b[index] = value`` stores into it; ``type``, ``shape``, ``dtype`` and
    ``device`` are its :class:`~graphdsl.max.BufferType`'s.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl.max import BufferType, DeviceRef, DType, Graph, TensorType, ops
    >>> cpu = DeviceRef.CPU()
    >>> types = [BufferType(DType.int32, [3], cpu), TensorType(DType.int32, [3], cpu)]
    >>> with Graph("acc", input_types=types) as g:
    ...     buf, x = g.inputs[0].buffer, g.inputs[1].tensor
    ...     buf[...] = buf[...] + x  # load, add, store
    ...     buf[0] = ops.constant(7, DType.int32, cpu)  # store at index 0
    ...     g.output(buf[1:])
    >>> buf
    BufferValue(dtype=int32, shape=[Dim(3)], device=cpu:0)
    >>> gd.evaluate(g, [np.zeros(3, np.int32), np.array([1, 2, 3], np.int32)])
    [array([2, 3], dtype=int32), array([7, 2, 3], dtype=int32)]
    """

    __slots__ = ("_graph", "_type", "current")

    @property
    def buffer(self) -> BufferValue:
        """The buffer itself, as MAX's ``Value.buffer``."""
        return self

    def __init__(self, graph: Any, initial: Symbol, type: BufferType) -> None:
        self._graph = graph
        self._type = type
        self.current = initial  # graphdsl's symbol of the buffer's value now

    @property
    def type(self) -> BufferType:
        return self._type

    @property
    def shape(self) -> Shape:
        return self._type.shape

    @property
    def dtype(self) -> DType:
        return self._type.dtype

    @property
    def device(self) -> DeviceRef:
        return self._type.device

    @property
    def rank(self) -> int:
        return self._type.rank

    def __repr__(self) -> str:
        return (
            f"BufferValue(dtype={self.dtype!r}, shape={list(self.shape)!r}, device={self.device})"
        )

    def __getitem__(self, index: Any) -> TensorValue:
        x = buffer_load(self)
        return x if index is Ellipsis else x[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        if index is Ellipsis:
            buffer_store(self, value)
        else:
            buffer_store_slice(self, value, index if isinstance(index, Sequence) else (index,))

    def print(self, label: str = "debug_buffer") -> None:
        """MAX's debug print of the buffer's value: a no-op in graphdsl."""
        HOOKS["print"](self[...], label)


BufferValueLike = BufferValue  # (MAX's alias: what a buffer op takes)
"""What a buffer op (``ops.buffer_load``, ``ops.buffer_store``...) takes, as max.graph's
``BufferValueLike``: here :class:`BufferValue` itself."""


def buffer_create(type: BufferType, init_value: float | bool | None = None) -> BufferValue:
    """A buffer of ``type`` that lives inside one run of the graph: zeros, or
    ``init_value`` everywhere (one scalar broadcast to the buffer's shape in the graph)."""
    if not isinstance(type, BufferType):
        raise TypeError(f"buffer_create needs a BufferType, got {type!r}")
    graph = current_graph()
    if not Shape.is_static(type.shape):
        raise UnsupportedError(
            f"buffer_create of {type}: graphdsl makes buffers of static shapes only"
        )
    dims = [int(d) for d in type.shape]
    core = dtype_to_core(type.dtype)
    value = np.asarray(0 if init_value is None else init_value).astype(core.np)
    return BufferValue(graph, gd.broadcast_to(graph.constant(value, core), dims), type)


def buffer_load(x: BufferValue) -> TensorValue:
    """The buffer's current value, as a tensor."""
    if not isinstance(x, BufferValue):
        raise TypeError(f"buffer_load needs a BufferValue, got {x!r}")
    note_effect(x.device)
    return tv(x.current, x.device)


def buffer_store(destination: BufferValue, source: Any) -> None:
    """Replace the buffer's value with ``source`` (of its dtype and shape)."""
    with raising("buffer_store"):
        value = _source(destination, source)
        _same_type(destination, TensorType(value.dtype, value.shape, destination.device))
        destination.current = value.symbol
        note_effect(destination.device)


def buffer_store_slice(destination: BufferValue, source: Any, indices: Sequence[Any]) -> None:
    """Store ``source`` (broadcast to the slice's shape) into ``destination[indices]`` (ints,
    slices with any step, ``...`` and ``None``; static shapes), as numpy's assignment does:
    slices of the buffer and the source, concatenated (:func:`_stored`)."""
    with raising("buffer_store_slice"):
        value = _source(destination, source)
        if not Shape.is_static(destination.shape):
            raise UnsupportedError(
                "buffer_store_slice: graphdsl stores slices into buffers of static shapes only"
            )
        if value.dtype != destination.dtype:
            raise OpTypeError(
                f"buffer_store_slice: the source is {value.dtype}, the buffer "
                f"{destination.dtype}; cast the source first"
            )
        dims = [int(d) for d in destination.shape]
        items = _items(dims, indices)
        destination.current = _stored(destination.current, dims, value.symbol, items)
        note_effect(destination.device)


def _items(dims: list[int], indices: Sequence[Any]) -> list[Any]:
    """``indices`` with ``...`` (or the axes left out) as full slices: an int or a slice per
    axis of ``dims``, and the Nones (new axes of size 1) where they were."""
    items = list(indices)
    for it in items:
        if not (it is Ellipsis or it is None or isinstance(it, slice) or _is_int(it)):
            raise UnsupportedError(
                f"buffer_store_slice: graphdsl takes ints, slices, ... and None as indices, "
                f"got {it!r}"
            )
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if items.count(Ellipsis) > 1 or used > len(dims):
        raise IndexError(
            f"buffer_store_slice: {len(dims)}-dimensional buffer indexed by {items!r} (at most "
            "one ... and one int or slice per axis)"
        )
    at = items.index(Ellipsis) if Ellipsis in items else len(items)
    items[at : at + 1] = [slice(None)] * (len(dims) - used)
    axis = 0
    for it in items:
        if it is None:
            continue
        if not isinstance(it, slice) and not -dims[axis] <= int(it) < dims[axis]:
            raise IndexError(
                f"index {int(it)} is out of bounds for axis {axis} with size {dims[axis]}"
            )
        axis += 1
    return items


def _stored(current: Symbol, dims: list[int], source: Symbol, items: list[Any]) -> Symbol:
    """``current`` (of ``dims``) with ``source`` at ``current[items]``, made of slices and
    concatenations of the two (exact for every dtype; nothing of the buffer's size is made
    while building the graph): the source broadcast to the slice's shape and given an axis
    per axis of the buffer (an int index is a slice of one), then :func:`_put`."""
    spans: list[tuple[int, int, int]] = []  # per axis: start, step, count
    shape: list[int] = []  # the slice's (numpy's x[items].shape)
    for it in items:
        if it is None:
            shape.append(1)
        elif isinstance(it, slice):
            start, stop, step = it.indices(dims[len(spans)])
            spans.append((start, step, len(range(start, stop, step))))
            shape.append(spans[-1][2])
        else:
            spans.append((int(it) % dims[len(spans)], 1, 1))
    spread = source if list(source.shape) == shape else gd.broadcast_to(source, shape)
    counts = [c for _, _, c in spans]
    if 0 in counts:
        return current  # (an empty slice: nothing stored)
    if list(spread.shape) != counts:
        spread = gd.reshape(spread, counts)
    return _put(current, spread, spans, 0)


def _along(x: Symbol, axis: int, start: int | None, stop: int | None, step: int = 1) -> Symbol:
    items = [slice(None)] * x.rank
    items[axis] = slice(start, stop, step)
    return gd.slice_tensor(x, items)


def _put(current: Symbol, source: Symbol, spans: list[tuple[int, int, int]], a: int) -> Symbol:
    """``current`` with ``source`` at positions start + k * step (k < count) along each axis
    from ``a`` on: the part of ``current`` those positions span along axis ``a``, with the
    source put in it along the next axes, between the parts before and after it; a step of
    s > 1 puts the rows in every s-th place of the span, as the first column of the span
    seen as (count - 1, s) blocks, then the last row."""
    if a == len(spans):
        return source
    start, step, count = spans[a]
    d = int(current.shape[a])
    if (start, step, count) == (0, 1, d):  # the whole axis
        return _put(current, source, spans, a + 1)
    if step < 0:  # the same places in ascending order, the source's rows reversed
        start, step = start + (count - 1) * step, -step
        source = _along(source, a, None, None, -1)
    end = start + (count - 1) * step + 1  # the span: [start, end)
    middle = _put(_along(current, a, start, end, step), source, spans, a + 1)
    if step > 1 and count > 1:
        shape = list(middle.shape)
        blocks = [*shape[:a], count - 1, step, *shape[a + 1 :]]
        span = gd.reshape(_along(current, a, start, end - 1), blocks)
        rows = [*blocks[: a + 1], 1, *blocks[a + 2 :]]  # (count - 1, 1) on axes a, a + 1
        first = gd.reshape(_along(middle, a, None, count - 1), rows)
        filled = gd.concat([first, _along(span, a + 1, 1, None)], a + 1)
        filled = gd.reshape(filled, [*shape[:a], (count - 1) * step, *shape[a + 1 :]])
        middle = gd.concat([filled, _along(middle, a, count - 1, None)], a)
    parts = [_along(current, a, None, start)] if start else []
    parts.append(middle)
    if end < d:
        parts.append(_along(current, a, end, None))
    return gd.concat(parts, a) if len(parts) > 1 else middle


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _source(destination: BufferValue, source: Any) -> TensorValue:
    if not isinstance(destination, BufferValue):
        raise TypeError(f"a buffer store needs a BufferValue destination, got {destination!r}")
    if isinstance(source, TensorValue):
        if source.device != destination.device:
            raise ValueError("Input values must be on the same device")
        return source
    return tv(gd.cast(arg(source), dtype_to_core(destination.dtype)), destination.device)


def _same_type(destination: BufferValue, t: TensorType) -> None:
    if t.dtype != destination.dtype:
        raise OpTypeError(
            f"buffer_store: the source is {t.dtype}, the buffer {destination.dtype}; cast the "
            "source first"
        )
    if t.shape != destination.shape:
        raise ShapeError(
            f"buffer_store: the source's shape {list(t.shape)} is not the buffer's "
            f"{list(destination.shape)}"
        )
