"""MAX's ``Graph`` over graphdsl's: a graphdsl graph (the ``max-graph`` promotion policy by
default) built with MAX's API, whose values are :class:`~graphdsl.max.TensorValue`\\s on
devices and whose buffers are threaded through its inputs and outputs.

>>> import numpy as np
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
>>> with Graph("demo", input_types=[TensorType(DType.float32, [2, 3], DeviceRef.CPU())]) as g:
...     x = g.inputs[0].tensor
...     y = x.max(axis=-1)  # MAX's reductions keep the reduced axis
...     g.output(y, x.argmax())
>>> print(*g.output_types, sep="\\n")
TensorType(dtype=float32, shape=[Dim(2), Dim(1)], device=cpu:0)
TensorType(dtype=int64, shape=[Dim(2), Dim(1)], device=cpu:0)
>>> import graphdsl as gd
>>> gd.evaluate(g, [np.array([[1, 5, 2], [7, 0, 7]], np.float32)])
[array([[5.],
       [7.]], dtype=float32), array([[1],
       [0]])]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from os import PathLike
from typing import Any

from graphdsl.graph import Graph as _GdGraph
from graphdsl.graph import Symbol
from graphdsl.max import _value
from graphdsl.max._buffer import BufferValue
from graphdsl.max._core_dims import to_core as dim_to_core
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._types import BufferType, DeviceRef, TensorType, UnsupportedError, Weight
from graphdsl.max._value import CPU, TensorValue, Value, arg, tv
from graphdsl.policies import Policy
from graphdsl.types import TensorType as _GdTensorType

__all__ = ["Graph"]


def _internal(module: str) -> bool:
    """Whether code of ``module`` is graphdsl's own (its IR, passes, evaluation, exporters),
    which works on graphdsl's symbols, not on MAX's values."""
    return module.startswith(("graphdsl.", "exporters.")) and not module.startswith("graphdsl.max")


class _Inputs:
    """``Graph.inputs``: MAX's values (TensorValues; BufferValues for buffer inputs) for MAX
    code, graphdsl's input symbols for graphdsl's own modules (which read the graph as
    graphdsl's IR: evaluation, passes, exporters). The caller's module decides."""

    def __get__(self, obj: Graph | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        core: list[Symbol] = obj.__dict__["_inputs"]
        if _internal(sys._getframe(1).f_globals.get("__name__", "")):
            return core
        return [obj.value_of_input(s) for s in core]

    def __set__(self, obj: Graph, value: list[Symbol]) -> None:
        obj.__dict__["_inputs"] = value


class _Current:
    """``Graph.current``: the graph of the innermost ``with Graph(...)`` block."""

    def __get__(self, obj: object, owner: type | None = None) -> Graph:
        return _value.current_graph()  # type: ignore[no-any-return]


class _Chain:
    """A device's execution chain in MAX (ordering of side effects); graphdsl's graphs are
    pure, so a chain is only a marker."""

    def __init__(self, device: DeviceRef) -> None:
        self.device = device

    def __repr__(self) -> str:
        return f"_Chain({self.device})"


class Graph(_GdGraph):
    """A graph built with MAX's API: ``Graph(name, input_types=[TensorType(...), ...])``.

    A :class:`graphdsl.Graph` under the ``max-graph`` policy (max.graph 26's promotion) whose
    values are :class:`TensorValue`\\s (``graph.inputs[i]``, a ``Value``; ``.tensor`` as in
    MAX).
    ``exporters.onnx.export`` and ``run`` take it as any graphdsl graph; ``run`` picks
    onnxruntime's CUDA provider when the graph uses a GPU. ``forward`` and the extra
    arguments it receives are MAX's; ``policy`` is graphdsl's. A ``BufferType`` input is
    state: its value after the graph's ``buffer_store``\\s becomes an extra output (after
    the graph's own, in input order). MAX's MLIR ``path``, custom kernels
    (``custom_extensions``, ``kernel_library``) and ``module`` raise
    :class:`UnsupportedError`.
    """

    current = _Current()
    inputs = _Inputs()

    def __init__(
        self,
        name: str,
        forward: Callable[..., Any] | None = None,
        input_types: Iterable[TensorType | BufferType | _GdTensorType] = (),
        path: str | PathLike[str] | None = None,
        *args: Any,
        custom_extensions: Iterable[Any] = (),
        kernel_library: object = None,
        module: object = None,
        strict_device_placement: object = "warn",
        is_device_graph: bool = False,
        policy: str | Policy = "max-graph",
        **kwargs: Any,
    ) -> None:
        for what, given in (
            ("path", path is not None),
            ("kernel_library", kernel_library),
            ("module", module),
            ("custom_extensions", list(custom_extensions)),
        ):
            if given:
                raise UnsupportedError(
                    f"Graph {name!r}: {what} (MAX's MLIR files and custom kernels) is not "
                    "supported by graphdsl"
                )
        types = [_max_type(t, name) for t in input_types]
        self._devices: dict[int, DeviceRef] = {}  # input and output symbol id -> device
        self._seen: dict[DeviceRef, None] = {}
        self._buffers: dict[int, BufferValue] = {}  # buffer input symbol id -> its state
        self._user_outputs: list[Symbol] = []
        super().__init__(name, [t.as_graphdsl() for t in types], policy=policy)
        self._input_values: dict[int, Value] = {}
        for sym, t in zip(self.core_inputs, types, strict=True):
            self._devices[sym.id] = t.device
            self.note_device(t.device)
            if isinstance(t, BufferType):
                self._buffers[sym.id] = BufferValue(self, sym, t)
        if forward is not None:
            with self:
                result = forward(*self.inputs, *args, **kwargs)
                if result is not None:
                    outs = [result] if isinstance(result, (TensorValue, Symbol)) else list(result)
                    self.output(*outs)

    def __enter__(self) -> Graph:
        super().__enter__()
        _value.STACK.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _value.STACK.remove(self)
        super().__exit__(*exc)

    @property
    def core_inputs(self) -> list[Symbol]:
        """graphdsl's input symbols (``inputs`` gives MAX's values)."""
        return self.__dict__["_inputs"]  # type: ignore[no-any-return]

    def value_of_input(self, s: Symbol) -> Value:
        """Input ``s`` as MAX's value: a TensorValue on its device, or its BufferValue."""
        found = self._input_values.get(s.id)
        if found is None:
            found = self._buffers.get(s.id) or tv(s, self._devices.get(s.id, CPU))
            self._input_values[s.id] = found
        return found

    # -- devices
    def note_device(self, device: DeviceRef) -> None:
        """Record that a value of the graph lives on ``device``."""
        self._seen[device] = None

    def device_of(self, value: Symbol) -> DeviceRef:
        """The device of an input or output of the graph (CPU for others)."""
        return self._devices.get(value.id, CPU)

    @property
    def devices(self) -> list[DeviceRef]:
        """The devices the graph's values live on, in order of first use."""
        return list(self._seen)

    @property
    def device_chains(self) -> dict[DeviceRef, _Chain]:
        """MAX's per-device execution chains: one marker per device the graph uses
        (graphdsl's graphs have no side effects to order)."""
        return {d: _Chain(d) for d in self.devices}

    # -- outputs
    def output(self, *values: Any) -> None:
        """Set the graph's outputs (TensorValues, graph inputs or Python numbers); the final
        value of each buffer input follows them."""
        symbols = []
        for v in values:
            if isinstance(v, TensorValue):
                self._devices[v.symbol.id] = v.device
            symbols.append(arg(v))
        self._user_outputs = list(symbols)
        state = [b.current for b in self._buffers.values()]
        super().output(*symbols, *state)

    @property
    def output_types(self) -> list[TensorType]:
        """The outputs' types (MAX's), with their devices; buffers' final values included."""
        return [tv(o, self.device_of(o)).type for o in self.outputs]

    # -- MAX's graph API
    def add_subgraph(
        self,
        name: str,
        forward: Callable[..., Any] | None = None,
        input_types: Iterable[TensorType | _GdTensorType] = (),
        path: str | PathLike[str] | None = None,
        custom_extensions: Iterable[Any] = (),
        devices: Iterable[DeviceRef] = (),
    ) -> Graph:
        """A graph to call with ``ops.call`` (graphdsl's :meth:`graphdsl.Graph.subgraph`):
        built by ``forward`` or in a ``with`` block, this graph's policy, its own inputs (it
        reads only those: pass weights as arguments). The exporter makes it one ONNX local
        function.

        >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
        >>> t = TensorType(DType.int32, ["n"], DeviceRef.CPU())
        >>> with Graph("model", input_types=[t]) as graph:
        ...     double = graph.add_subgraph("double", lambda v: v * 2, input_types=[t])
        ...     (y,) = ops.call(double, ops.call(double, graph.inputs[0])[0])
        ...     graph.output(y)
        >>> y.type
        TensorType(dtype=int32, shape=[Dim('n')], device=cpu:0)
        """
        return Graph(name, forward, input_types, path, custom_extensions=custom_extensions,
                     policy=self.policy)  # fmt: skip

    def add_weight(self, weight: Weight, force_initial_weight_on_host: bool = True) -> TensorValue:
        """``weight`` as a value of this graph (graphdsl's :meth:`graphdsl.Graph.weight`)."""
        shape = [int(dim_to_core(d)) for d in weight.shape]
        value = tv(self.weight(weight.name, dtype_to_core(weight.dtype), shape), weight.device)
        self.note_device(weight.device)
        return value


def _max_type(t: object, graph: str) -> TensorType | BufferType:
    """An input type as MAX's (a graphdsl type lives on the CPU)."""
    if isinstance(t, (TensorType, BufferType)):
        return t
    if isinstance(t, _GdTensorType):
        return TensorType(t.dtype, list(t.shape), CPU)
    raise UnsupportedError(
        f"Graph {graph!r}: input type {t!r} is not a TensorType or BufferType (MAX's opaque "
        "and chain types are not supported by graphdsl)"
    )
