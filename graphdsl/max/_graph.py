"""MAX's ``Graph`` over graphdsl's: a graph built with MAX's API, whose values are
:class:`~graphdsl.max.TensorValue`\\s on devices and whose buffers are threaded through its
inputs and outputs. Underneath is a graphdsl graph (:class:`CoreGraph`, the ``max-graph``
promotion policy by default): ``graph.inputs`` gives MAX's values, always, and
``graph.core_graph`` the graphdsl graph that graphdsl's own modules (evaluation, passes,
exporters) read as graphdsl's IR, whose ``inputs`` are graphdsl's symbols.

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

from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from types import FunctionType
from typing import Any

from graphdsl.dims import AlgebraicDim
from graphdsl.graph import Graph as _GdGraph
from graphdsl.graph import Symbol
from graphdsl.max import _value
from graphdsl.max._buffer import BufferValue
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._types import BufferType, DeviceRef, TensorType, UnsupportedError, Weight
from graphdsl.max._value import CPU, TensorValue, Value, arg, tv
from graphdsl.max.mlir import Context, KernelLibrary, check_placeholder
from graphdsl.policies import Policy
from graphdsl.types import TensorType as _GdTensorType

__all__ = ["CoreGraph", "Graph"]


class CoreGraph(_GdGraph):
    """The graphdsl graph under a graphdsl.max :class:`Graph` (its ``core_graph``):
    graphdsl's IR, whose ``inputs`` are graphdsl's symbols and which owns every symbol the
    MAX graph builds, with what MAX adds to it: the device of each input and output, the
    devices its values use, its buffer inputs' state, and each input as MAX's value.

    graphdsl's own modules (evaluation, passes, exporters) take this graph; MAX code never
    needs it.

    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
    >>> g = Graph("core", input_types=[TensorType(DType.int8, ["n"], DeviceRef.GPU())])
    >>> core = g.core_graph
    >>> core.inputs[0].type, core.device_of(core.inputs[0])
    (TensorType(int8[n]), gpu:0)
    >>> core.inputs[0] is g.inputs[0].symbol
    True
    """

    def __init__(
        self, name: str, types: list[TensorType | BufferType], policy: str | Policy
    ) -> None:
        self._devices: dict[int, DeviceRef] = {}  # input and output symbol id -> device
        self._seen: dict[DeviceRef, None] = {}
        self._buffers: dict[int, BufferValue] = {}  # buffer input symbol id -> its state
        self._user_outputs: list[Symbol] = []
        self._input_values: dict[int, Value] = {}
        super().__init__(name, [t.as_graphdsl() for t in types], policy=policy)
        for sym, t in zip(self.inputs, types, strict=True):
            self._devices[sym.id] = t.device
            self.note_device(t.device)
            if isinstance(t, BufferType):
                self._buffers[sym.id] = BufferValue(self, sym, t)

    def value_of_input(self, s: Symbol) -> Value:
        """Input ``s`` as MAX's value: a TensorValue on its device, or its BufferValue."""
        found = self._input_values.get(s.id)
        if found is None:
            found = self._buffers.get(s.id) or tv(s, self._devices.get(s.id, CPU))
            self._input_values[s.id] = found
        return found

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

    def is_buffer_input(self, s: Symbol) -> bool:
        """Whether input ``s`` is a ``BufferType`` one (state: its final value is an extra
        output)."""
        return s.id in self._buffers and s.id < len(self.inputs) and self.inputs[s.id] is s

    @property
    def user_outputs(self) -> list[Symbol]:
        """The outputs the MAX program gave ``output()``: the graph's outputs without the
        final values of its buffer inputs that follow them."""
        return list(self._user_outputs)


class _Inputs:
    """``Graph.inputs``: MAX's values, a TensorValue per tensor input and a BufferValue per
    buffer input (graphdsl's symbols: ``graph.core_inputs``)."""

    def __get__(self, obj: Graph | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        core = obj.core_graph
        return [core.value_of_input(s) for s in core.inputs]


class _Current:
    """``Graph.current``: the graph of the innermost ``with Graph(...)`` block."""

    def __get__(self, obj: object, owner: type | None = None) -> Graph:
        return _value.current_graph()  # type: ignore[no-any-return]


class _Chain:
    """A device's execution chain in MAX: the ordering of its side effects. graphdsl's graphs
    are pure, so a chain is a marker: the device and how many effects (prints, buffer loads
    and stores) were ordered on it before; equal chains, no effect between them."""

    def __init__(self, device: DeviceRef | None, version: int = 0) -> None:
        self.device, self.version = device, version  # (device None: the global chain)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Chain) and (self.device, self.version) == (
            other.device, other.version)  # fmt: skip

    def __hash__(self) -> int:
        return hash((self.device, self.version))

    def __repr__(self) -> str:
        return f"_Chain({self.device}, {self.version})"


_ChainValue = _Chain  # MAX's name for a chain value


class _DeviceChains(dict[DeviceRef, _Chain]):
    """MAX's device-chain map: a device looked up gets its chain (its current one, after the
    effects so far); iteration and repr go in device order (CPUs, then GPUs, each by id),
    whatever the order of first use."""

    def __init__(self, effects: dict[Any, int]) -> None:
        super().__init__()
        self._effects = effects

    def __getitem__(self, device: DeviceRef) -> _Chain:
        chain = _Chain(device, self._effects.get(device, 0))
        super().__setitem__(device, chain)
        return chain

    def _order(self) -> list[DeviceRef]:
        return sorted(super().keys(), key=lambda d: (str(d.device_type) != "cpu", d.id))

    def __iter__(self) -> Iterator[DeviceRef]:
        return iter(self._order())

    def keys(self) -> Any:
        return self._order()

    def items(self) -> Any:
        return [(d, self[d]) for d in self._order()]

    def values(self) -> Any:
        return [self[d] for d in self._order()]

    def copy(self) -> dict[DeviceRef, _Chain]:
        return dict(self.items())

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{d}: {self[d]!r}" for d in self._order()) + "}"


class Graph(_GdGraph):
    """A graph built with MAX's API: ``Graph(name, input_types=[TensorType(...), ...])``.

    Its values are :class:`TensorValue`\\s (``graph.inputs[i]``, a ``Value``; ``.tensor`` as
    in MAX). Underneath is graphdsl's graph, ``graph.core_graph`` (a :class:`CoreGraph`
    under the ``max-graph`` policy, max.graph 26's promotion), which owns the symbols: a MAX
    Graph is a :class:`graphdsl.Graph` whose every graphdsl attribute and method
    (``nodes``, ``outputs``, ``policy``, ``verify()``, ``print(graph)``...) is its core
    graph's, but for ``inputs``, which are MAX's values. ``gd.evaluate``, the passes and
    ``exporters.onnx.export`` and ``run`` take it as any graphdsl graph (they read its
    ``core_graph``); ``run`` picks onnxruntime's CUDA provider when the graph uses a GPU.

    ``forward`` and the extra arguments it receives are MAX's; ``policy`` is graphdsl's. A
    ``BufferType`` input is state: its value after the graph's ``buffer_store``\\s becomes an
    extra output (after the graph's own, in input order). graphdsl has no MLIR and no kernel
    libraries: an empty :class:`~graphdsl.max.KernelLibrary` as ``kernel_library`` and a
    :class:`graphdsl.max.mlir.Context` as ``context=`` (placeholders, taken from the
    keyword arguments) are accepted and ignored; MAX's MLIR ``path``, custom kernels
    (``custom_extensions``) and ``module`` raise :class:`UnsupportedError`.

    >>> import graphdsl as gd
    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
    >>> with Graph("g", input_types=[TensorType(DType.float32, [2], DeviceRef.CPU())]) as g:
    ...     g.output(g.inputs[0] * 2)
    >>> type(g.inputs[0]).__name__, type(g.core_inputs[0]).__name__
    ('TensorValue', 'Symbol')
    >>> isinstance(g, gd.Graph), g.policy.name, len(g.nodes)
    (True, 'max-graph', 3)
    """

    current = _Current()
    inputs = _Inputs()
    _core: CoreGraph  # graphdsl's graph underneath: every other attribute is its

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
        check_placeholder(name, "kernel_library", kernel_library, KernelLibrary)
        if isinstance(kwargs.get("context"), Context):  # (an MLIR context: a placeholder)
            del kwargs["context"]
        for what, given in (
            ("path", path is not None),
            ("module", module),
            ("custom_extensions", list(custom_extensions)),
        ):
            if given:
                raise UnsupportedError(
                    f"Graph {name!r}: {what} (MAX's MLIR files and custom kernels) is not "
                    "supported by graphdsl"
                )
        types = [_max_type(t, name) for t in input_types]
        # the one attribute of its own: every other one is the core graph's (__setattr__)
        object.__setattr__(self, "_core", CoreGraph(name, types, policy))
        if forward is not None:
            with self:
                result = forward(*self.inputs, *args, **kwargs)
                if result is not None:
                    outs = [result] if isinstance(result, (TensorValue, Symbol)) else list(result)
                    self.output(*outs)

    # -- the core graph
    @property
    def core_graph(self) -> CoreGraph:
        """graphdsl's graph underneath: graphdsl's IR, which graphdsl's evaluation, passes
        and exporters read (its ``inputs`` are graphdsl's symbols)."""
        return self._core

    @property
    def core_inputs(self) -> list[Symbol]:
        """graphdsl's input symbols (``inputs`` gives MAX's values)."""
        return self._core.inputs

    def __getattr__(self, name: str) -> Any:
        """The core graph's attribute (``nodes``, ``outputs``, ``policy``, ...)."""
        if name == "_core":  # (not set yet: an error in __init__, or an unpickled copy)
            raise AttributeError(name)
        return getattr(self._core, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._core, name, value)

    def __enter__(self) -> Graph:
        self._core.__enter__()
        _value.STACK.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _value.STACK.remove(self)
        self._core.__exit__(*exc)

    def value_of_input(self, s: Symbol) -> Value:
        """Input ``s`` as MAX's value: a TensorValue on its device, or its BufferValue."""
        return self._core.value_of_input(s)

    # -- devices
    def note_device(self, device: DeviceRef) -> None:
        """Record that a value of the graph lives on ``device``."""
        self._core.note_device(device)

    def device_of(self, value: Symbol) -> DeviceRef:
        """The device of an input or output of the graph (CPU for others)."""
        return self._core.device_of(value)

    @property
    def devices(self) -> list[DeviceRef]:
        """The devices the graph's values live on, in order of first use."""
        return self._core.devices

    @property
    def device_chains(self) -> dict[DeviceRef, _Chain]:
        """MAX's per-device execution chains: one for each device the graph's values use
        (as max 26.7: tests/data/max_graph_api.json) and each looked up, iterated in device
        order; graphdsl's graphs are pure, so a chain is only a marker."""
        state = self._core.__dict__
        chains: _DeviceChains = state.setdefault(
            "_chains", _DeviceChains(state.setdefault("_effects", {}))
        )
        for d in self.devices:
            chains[d]  # (a device in use has its chain)
        return chains

    @property
    def _current_chain(self) -> _Chain:
        """MAX's global chain: a new one after each side effect the graph orders (a print,
        a buffer load or store, a call of a subgraph that has one)."""
        return _Chain(None, self._core.__dict__.get("_effects", {}).get(None, 0))

    # -- outputs
    def output(self, *values: Any, **named: Any) -> None:
        """Set the graph's outputs (TensorValues, graph inputs or Python numbers); the final
        value of each buffer input follows them, then graphdsl's named outputs, if any."""
        core = self._core
        _check_signature(core)
        symbols = []
        for v in values:
            if isinstance(v, TensorValue):
                core._devices[v.symbol.id] = v.device
            symbols.append(arg(v))
        state = [b.current for b in core._buffers.values()]
        core.output(*symbols, *state, **{k: arg(v) for k, v in named.items()})
        core._user_outputs = list(core.outputs[: len(symbols)])

    @property
    def output_types(self) -> list[TensorType]:
        """The outputs' types (MAX's), with their devices; buffers' final values included."""
        core = self._core
        return [tv(o, core.device_of(o)).type for o in core.outputs]

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
                     policy=self._core.policy)  # fmt: skip

    def add_weight(self, weight: Weight, force_initial_weight_on_host: bool = True) -> TensorValue:
        """``weight`` as a value of this graph (graphdsl's :meth:`graphdsl.Graph.weight`)."""
        shape = [int(dim_to_core(d)) for d in weight.shape]
        core = self._core
        value = tv(core.weight(weight.name, dtype_to_core(weight.dtype), shape), weight.device)
        core.note_device(weight.device)
        return value


def _forwarded(name: str, attr: FunctionType | property) -> FunctionType | property:
    """graphdsl.Graph's method or property ``name``, on a MAX Graph's core graph."""
    if isinstance(attr, property):
        return property(lambda self: getattr(self._core, name),
                        doc=f"The core graph's ``{name}`` (:class:`graphdsl.Graph`).")  # fmt: skip

    def method(self: Graph, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._core, name)(*args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"Graph.{name}"
    method.__doc__ = f"The core graph's ``{name}`` (:meth:`graphdsl.Graph.{name}`)."
    return method  # type: ignore[return-value]


# Every method and property of graphdsl.Graph that the MAX Graph does not define itself
# works on its core graph: one that builds a node makes it there (the symbols' graph), one
# that checks ownership sees the core graph (``__init__`` aside: a MAX Graph makes its core)
for _name, _attr in list(vars(_GdGraph).items()):
    _own = _name in vars(Graph) or _name == "__init__"
    if not _own and isinstance(_attr, (FunctionType, property)):
        setattr(Graph, _name, _forwarded(_name, _attr))


def _check_signature(core: Any) -> None:
    """max.graph verifies a graph at ``output`` and refuses an input type with a dimension
    that is an expression (``n + 1``): its function signatures take static and symbolic
    dimensions only (graphdsl's own graphs take them)."""
    for s in core.inputs:
        for d in s.type.shape:
            if isinstance(d, AlgebraicDim):
                raise ValueError(
                    "Graph failed to verify. Please file an issue. This should be impossible. "
                    f"(max.graph: Expressions are not (currently) allowed in function "
                    f"signatures: input {s.attrs['name']!r} has dimension {d}; give it a "
                    "symbolic dimension of its own, or build the graph with graphdsl.Graph, "
                    "which takes such inputs)"
                )


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
