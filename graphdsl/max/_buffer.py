"""MAX's mutable buffers over graphdsl's pure graphs: a ``BufferType`` input is state threaded
through the graph. Its value starts as the input; ``buffer_store`` and
``buffer_store_slice`` replace it (a slice store is a scatter into the current value);
``buffer_load`` reads it; the graph's value after the last store becomes an extra output
(after the graph's own, in input order), which the caller feeds back as the next run's
input. ``buffer_create`` makes a buffer that lives inside one run (zeros, or
``init_value``).

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
from graphdsl.max._value import HOOKS, TensorValue, Value, arg, current_graph, tv
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
    ``device`` are its :class:`~graphdsl.max.BufferType`'s."""

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


def buffer_create(type: BufferType, init_value: float | bool | None = None) -> BufferValue:
    """A buffer of ``type`` that lives inside one run of the graph: zeros, or
    ``init_value`` everywhere."""
    if not isinstance(type, BufferType):
        raise TypeError(f"buffer_create needs a BufferType, got {type!r}")
    graph = current_graph()
    dims = [int(d) for d in type.shape] if Shape.is_static(type.shape) else None
    if dims is None:
        raise UnsupportedError(
            f"buffer_create of {type}: graphdsl makes buffers of static shapes only"
        )
    core = dtype_to_core(type.dtype)
    value = np.full(dims, 0 if init_value is None else init_value).astype(core.np)
    return BufferValue(graph, graph.constant(value, core), type)


def buffer_load(x: BufferValue) -> TensorValue:
    """The buffer's current value, as a tensor."""
    if not isinstance(x, BufferValue):
        raise TypeError(f"buffer_load needs a BufferValue, got {x!r}")
    return tv(x.current, x.device)


def buffer_store(destination: BufferValue, source: Any) -> None:
    """Replace the buffer's value with ``source`` (of its dtype and shape)."""
    with raising("buffer_store"):
        value = _source(destination, source)
        _same_type(destination, TensorType(value.dtype, value.shape, destination.device))
        destination.current = value.symbol


def buffer_store_slice(destination: BufferValue, source: Any, indices: Sequence[Any]) -> None:
    """Store ``source`` into ``destination[indices]`` (ints and slices): a scatter of the
    slice's elements into the current value (static shapes)."""
    with raising("buffer_store_slice"):
        value = _source(destination, source)
        if not Shape.is_static(destination.shape):
            raise UnsupportedError(
                "buffer_store_slice: graphdsl stores slices into buffers of static shapes only"
            )
        dims = [int(d) for d in destination.shape]
        positions = np.arange(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)
        where = positions.reshape(dims)[tuple(indices)]
        if value.dtype != destination.dtype:
            raise OpTypeError(
                f"buffer_store_slice: the source is {value.dtype}, the buffer "
                f"{destination.dtype}; cast the source first"
            )
        graph = current_graph()
        updates = gd.reshape(gd.broadcast_to(value.symbol, where.shape), [-1])
        flat = gd.reshape(destination.current, [-1])
        index = graph.constant(where.reshape(-1, 1))
        new = gd.scatter_nd(flat, updates, index)
        destination.current = gd.reshape(new, dims)


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
