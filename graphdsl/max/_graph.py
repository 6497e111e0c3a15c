"""MAX's ``Graph`` and ``TensorValue`` over graphdsl's: a graphdsl graph (the ``max-graph``
promotion policy by default) whose values have MAX's methods and record their devices.

>>> import numpy as np
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
>>> with Graph("demo", input_types=[TensorType(DType.float32, [2, 3], DeviceRef.CPU())]) as g:
...     x = g.inputs[0].tensor
...     y = x.max(axis=-1)  # MAX's reductions keep the reduced axis
...     g.output(y, x.argmax())
>>> print(*g.output_types, sep="\\n")
TensorType(dtype=DType.float32, shape=[2, 1], device=cpu:0)
TensorType(dtype=DType.int64, shape=[2, 1], device=cpu:0)
>>> import graphdsl as gd
>>> gd.evaluate(g, [np.array([[1, 5, 2], [7, 0, 7]], np.float32)])
[array([[5.],
       [7.]], dtype=float32), array([[1],
       [0]])]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from os import PathLike
from typing import Any

import graphdsl.ops as gdops
from graphdsl.dtypes import DType
from graphdsl.graph import Graph as _GdGraph
from graphdsl.graph import GraphError, Symbol
from graphdsl.max._types import DeviceRef, TensorType, UnsupportedError
from graphdsl.policies import Policy
from graphdsl.symbol import Operand
from graphdsl.types import OpTypeError
from graphdsl.types import TensorType as _GdTensorType

__all__ = ["Graph", "TensorValue", "Weight"]

_CPU = DeviceRef.CPU()


class TensorValue(Symbol):
    """A value of a :class:`Graph`: a graphdsl :class:`~graphdsl.Symbol` with MAX's
    ``TensorValue`` methods where they differ from graphdsl's: reductions that keep the
    reduced axis (``x.max(axis=-1)``), ``&``, ``|``, ``^`` and ``~`` as logical ops,
    ``x < y`` as ``not (x >= y)`` (MAX's definition: true where either is NaN), ``device``,
    ``to(device)``, ``cast(dtype)``, ``round(x)``, ``divmod``; and ``.tensor`` (itself).

    ``type`` and ``shape`` are graphdsl's (a :class:`graphdsl.TensorType`; a tuple of ints
    and names); ``device`` is the value's device.
    """

    __slots__ = ()

    @property
    def tensor(self) -> TensorValue:
        """The value itself, as MAX's ``Value.tensor``."""
        return self

    @property
    def device(self) -> DeviceRef:
        """The device of the value (CPU unless an input, constant or transfer said another)."""
        graph = self.graph
        return graph.device_of(self) if isinstance(graph, Graph) else _CPU

    def cast(self, dtype: DType | str) -> TensorValue:  # MAX's parameter name
        """Casts to ``dtype`` (``ops.cast``)."""
        return _tv(gdops.cast(self, dtype))

    def to(self, device: DeviceRef) -> TensorValue:
        """The value on ``device`` (``ops.transfer_to``)."""
        return _graph_of(self, "to").transfer(self, device)

    def argmax(self, axis: int = -1) -> TensorValue:
        """Indices (int64) of the maxima along ``axis``, which stays with size 1."""
        return _tv(gdops.argmax(self, axis, keepdims=True))

    def max(self, axis: int = -1) -> TensorValue:
        """The maximum along ``axis``, which stays with size 1."""
        return _tv(gdops.max(self, axis, keepdims=True))

    def min(self, axis: int = -1) -> TensorValue:
        """The minimum along ``axis``, which stays with size 1."""
        return _tv(gdops.min(self, axis, keepdims=True))

    def mean(self, axis: int = -1) -> TensorValue:
        """The mean along ``axis``, which stays with size 1."""
        return _tv(gdops.mean(self, axis, keepdims=True))

    def var(self, axis: int = -1) -> TensorValue:
        """The population variance along ``axis`` (size 1), as MAX builds it:
        ``((x - x.mean(axis)) ** 2).mean(axis)``."""
        if self.dtype is DType.bool:
            raise OpTypeError("var: variance is undefined for bool values (as in MAX)")
        return _tv((self - self.mean(axis)) ** 2).mean(axis)

    def stdev(self, axis: int = -1) -> TensorValue:
        """The square root of :meth:`var`."""
        return _tv(gdops.sqrt(self.var(axis)))

    def rebind(self, shape: Iterable[int | str], message: str = "") -> TensorValue:
        """MAX's run-time shape assertion: graphdsl lacks it."""
        raise UnsupportedError(
            "TensorValue.rebind (MAX's run-time shape assertion): graphdsl has no such op; "
            "give the input its shape in its TensorType"
        )

    def print(self, label: str = "debug_tensor") -> None:
        """MAX's debug print: graphdsl lacks it."""
        raise UnsupportedError(
            "TensorValue.print (MAX's debug print op): graphdsl has no such op; output the "
            "value and print what graphdsl.evaluate or exporters.onnx.run return"
        )

    # -- MAX's operators where they differ from graphdsl's
    def __and__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_and(self, o))

    def __rand__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_and(o, self))

    def __or__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_or(self, o))

    def __ror__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_or(o, self))

    def __xor__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_xor(self, o))

    def __rxor__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_xor(o, self))

    def __invert__(self) -> TensorValue:
        return _tv(gdops.logical_not(self))

    def __lt__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_not(gdops.greater_equal(self, o)))

    def __le__(self, o: Operand) -> TensorValue:
        return _tv(gdops.logical_not(gdops.greater(self, o)))

    def __round__(self) -> TensorValue:
        return _tv(gdops.round(self))

    def __divmod__(self, o: Operand) -> tuple[TensorValue, TensorValue]:
        return _tv(gdops.floordiv(self, o)), _tv(gdops.mod(self, o))

    def __rdivmod__(self, o: Operand) -> tuple[TensorValue, TensorValue]:
        return _tv(gdops.floordiv(o, self)), _tv(gdops.mod(o, self))


def _tv(s: Symbol) -> TensorValue:
    """``s`` as a TensorValue: a value of a graphdsl.max Graph."""
    if not isinstance(s, TensorValue):
        raise GraphError(
            f"{s!r} belongs to a graphdsl.Graph, not a graphdsl.max.Graph: build MAX programs "
            "in graphdsl.max.Graph (whose values have MAX's methods and devices)"
        )
    return s


def _graph_of(x: Symbol, what: str) -> Graph:
    graph = x.graph
    if not isinstance(graph, Graph):
        raise GraphError(f"{what}: {x!r} is not a value of a graphdsl.max.Graph")
    return graph


class Weight:
    """A named weight, as MAX's ``Weight(name, dtype, shape, device)``: add it to a graph with
    :meth:`Graph.add_weight` (graphdsl's :meth:`graphdsl.Graph.weight`); its data is bound
    by name at export (``exporters.onnx.export(graph, weights=...)``) or evaluation.
    """

    __slots__ = ("device", "dtype", "name", "shape")

    def __init__(
        self,
        name: str,
        dtype: DType,
        shape: Iterable[int],
        device: DeviceRef = _CPU,
        quantization_encoding: object = None,
        align: int | None = None,
    ) -> None:
        if quantization_encoding is not None:
            raise UnsupportedError(
                f"Weight {name!r}: quantization_encoding (MAX's GGUF-style quantized weights) "
                "is not supported by graphdsl; store the weight dequantized"
            )
        self.name = name
        self.dtype = dtype
        self.shape = [int(d) for d in shape]
        self.device = device

    def __repr__(self) -> str:
        return f"Weight({self.name!r}, {self.dtype}, {self.shape}, {self.device})"


class _Current:
    """``Graph.current``: the graph of the innermost ``with Graph(...)`` block."""

    def __get__(self, obj: object, owner: type | None = None) -> Graph:
        if not _STACK:
            raise GraphError("no current graph: build MAX ops inside `with Graph(...) as graph:`")
        return _STACK[-1]


class Graph(_GdGraph):
    """A graph built with MAX's API: ``Graph(name, input_types=[TensorType(...)])``.

    A :class:`graphdsl.Graph` under the ``max-graph`` policy (max.graph 26's promotion, from
    recorded goldens) whose values are :class:`TensorValue`\\s; ``graph.inputs[i].tensor`` as
    in MAX. ``exporters.onnx.export`` and ``run`` take it as any graphdsl graph; ``run``
    picks onnxruntime's CUDA provider when the graph uses a GPU (``DeviceRef.GPU()``) and
    CUDA is available, else CPU. ``forward`` (called with the inputs, its result the
    outputs) and the extra ``*args``/``**kwargs`` it receives are as in MAX; ``policy`` is
    graphdsl's. MAX's MLIR ``path``, custom kernels (``custom_extensions``,
    ``kernel_library``) and ``module`` raise :class:`UnsupportedError`.
    """

    current = _Current()

    def __init__(
        self,
        name: str,
        forward: Callable[..., Any] | None = None,
        input_types: Iterable[TensorType | _GdTensorType] = (),
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
        self._devices: dict[int, DeviceRef] = {}  # node id -> device (explicit or inherited)
        super().__init__(name, [t.as_graphdsl() for t in types], policy=policy)
        for sym, t in zip(self.inputs, types, strict=True):
            self._devices[sym.id] = t.device
        if forward is not None:
            with self:
                result = forward(*self.inputs, *args, **kwargs)
                if result is not None:
                    outs = [result] if isinstance(result, Symbol) else list(result)
                    self.output(*outs)

    def __enter__(self) -> Graph:
        super().__enter__()
        _STACK.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _STACK.remove(self)
        super().__exit__(*exc)

    def _add(self, *args: Any) -> Symbol:
        sym = super()._add(*args)
        # graphdsl builds Symbols; a max graph's values are TensorValues (the same slots: a
        # Symbol with MAX's methods), each on the device of its first operand that has one
        sym.__class__ = TensorValue
        for i in sym.inputs:
            device = self._devices.get(i.id)
            if device is not None:
                self._devices[sym.id] = device
                break
        return sym

    # -- branches and loop bodies (graphdsl.ops.control traces them into nested graphs)
    def nested(self, name: str, inputs: Sequence[tuple[str, _GdTensorType]] = ()) -> _GdGraph:
        sub = super().nested(name, inputs)
        # graphdsl nests a graphdsl.Graph; in a max graph it is a max graph too (the same
        # attributes, and a device map), so that MAX's methods hold inside a branch
        sub.__class__ = Graph
        assert isinstance(sub, Graph)
        sub._devices = {}
        for node in sub.nodes:
            node.__class__ = TensorValue
        return sub

    def capture(self, v: Symbol, op: str = "capture") -> Symbol:
        new = super().capture(v, op)
        outer = v.graph
        if new.id not in self._devices and isinstance(outer, Graph) and v.id in outer._devices:
            self._devices[new.id] = outer._devices[v.id]  # a captured value keeps its device
        return new

    # -- devices
    def device_of(self, value: Symbol) -> DeviceRef:
        """The device of ``value``: that of its input or constant, inherited from its first
        operand that has one, else CPU."""
        return self._devices.get(value.id, _CPU)

    def place(self, value: Symbol, device: DeviceRef) -> None:
        """Record that ``value`` (an input, constant or weight) lives on ``device``."""
        if not isinstance(device, DeviceRef):
            raise TypeError(f"a device must be a DeviceRef, got {device!r}")
        self._devices[value.id] = device

    @property
    def devices(self) -> list[DeviceRef]:
        """The devices the graph's values live on, in order of first use."""
        return list(dict.fromkeys(self._devices.values()))

    def transfer(self, x: Symbol, device: DeviceRef) -> TensorValue:
        """``x`` on ``device`` (MAX's ``transfer_to``): a new value, no data movement in the
        exported model (onnxruntime runs a model on one provider)."""
        if self.device_of(x) == device:
            return _tv(x)
        moved = _tv(gdops.cast(x, x.dtype))  # a new node; the exporter emits nothing for it
        self.place(moved, device)
        return moved

    # -- MAX's graph API
    @property
    def output_types(self) -> list[TensorType]:
        """The outputs' types, with their devices."""
        return [TensorType(o.dtype, o.shape, self.device_of(o)) for o in self.outputs]

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
        reads only those: pass weights as arguments). ``devices`` is accepted; the inputs'
        types carry the devices. The exporter makes it one ONNX local function.

        >>> from graphdsl.max import DeviceRef, Graph, TensorType, ops
        >>> from graphdsl import int32
        >>> t = TensorType(int32, ["n"], DeviceRef.CPU())
        >>> with Graph("model", input_types=[t]) as graph:
        ...     double = graph.add_subgraph("double", lambda v: v * 2, input_types=[t])
        ...     (y,) = ops.call(double, ops.call(double, graph.inputs[0])[0])
        ...     graph.output(y)
        >>> y.type
        TensorType(int32[n])
        """
        return Graph(name, forward, input_types, path, custom_extensions=custom_extensions,
                     policy=self.policy)  # fmt: skip

    def add_weight(self, weight: Weight, force_initial_weight_on_host: bool = True) -> TensorValue:
        """``weight`` as a value of this graph (graphdsl's :meth:`graphdsl.Graph.weight`)."""
        value = _tv(self.weight(weight.name, weight.dtype, weight.shape))
        self.place(value, weight.device)
        return value


_STACK: list[Graph] = []


def _max_type(t: object, graph: str) -> TensorType:
    """An input type as MAX's TensorType (a graphdsl type lives on the CPU)."""
    if isinstance(t, TensorType):
        return t
    if isinstance(t, _GdTensorType):
        return TensorType(t.dtype, t.shape, _CPU)
    raise UnsupportedError(
        f"Graph {graph!r}: input type {t!r} is not a TensorType (MAX's BufferType and other "
        "input types are not supported by graphdsl)"
    )
