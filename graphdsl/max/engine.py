"""MAX's engine (Modular's ``max.engine``, 26.7) over onnxruntime: load a graphdsl.max
:class:`~graphdsl.max.Graph` in an :class:`InferenceSession` and execute it.

``from max.engine import InferenceSession`` becomes ``from graphdsl.max.engine import
InferenceSession``; a MAX program's ``session = InferenceSession(devices=[CPU()])``, ``model =
session.load(graph, weights_registry=...)`` and ``model.execute(*inputs)`` then run as they
are. ``load`` exports the graph to ONNX once (``exporters.onnx.export``, its weights bound from
``weights_registry``) and keeps one onnxruntime session of it (``exporters.onnx.Session``): on
the CPU, or on onnxruntime's CUDA provider when the graph's values live on a GPU and the
session has that :class:`~graphdsl.max.driver.Accelerator`. ``execute`` takes
:class:`~graphdsl.max.driver.Buffer`\\s, DLPack tensors (numpy arrays) and Python scalars,
checks them as MAX does (MAX's errors and words) and returns a list of Buffers; a buffer
input (``BufferType``) is updated in place, as MAX updates it.

What MAX's engine does that onnxruntime cannot raises :class:`~graphdsl.max.UnsupportedError`
saying so: Mojo custom kernels (``custom_extensions``), MAX's compiled ``.mef`` files, a graph
spread over several devices.

This module is the one bridge from graphdsl.max to the exporters (it imports
``exporters.onnx`` inside ``load``; tests/test_import_layers.py allows that edge alone).

>>> import numpy as np
>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, ops
>>> from graphdsl.max.driver import CPU
>>> from graphdsl.max.engine import InferenceSession
>>> input_type = TensorType(dtype=DType.float32, shape=(1,), device=DeviceRef.CPU())
>>> with Graph("simple_add_graph", input_types=(input_type, input_type)) as graph:
...     lhs, rhs = graph.inputs
...     graph.output(ops.add(lhs, rhs))
>>> session = InferenceSession(devices=[CPU()])
>>> model = session.load(graph)
>>> model.input_metadata
[TensorSpec(shape=[1], dtype=DType.float32, name=input0), TensorSpec(shape=[1], dtype=DType.float32, name=input1)]
>>> output = model.execute(np.array([1.0], np.float32), np.array([1.0], np.float32))[0]
>>> output.to_numpy()
array([2.], dtype=float32)
"""  # noqa: E501

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from graphdsl.graph import Graph as _GdGraph
from graphdsl.graph import Symbol
from graphdsl.max._engine_spec import TensorSpec, _mlir, _spec
from graphdsl.max._errors import UnsupportedError
from graphdsl.max._types import DeviceRef
from graphdsl.max.driver import CPU, Accelerator, Buffer, Device, DLPackArray

__all__ = ["CompiledModel", "InferenceSession", "Model", "TensorSpec"]


class InferenceSession:
    """Where models are loaded and run, as MAX's ``InferenceSession(devices=..., num_threads=
    ...)``: ``devices`` (:class:`~graphdsl.max.driver.CPU`,
    :class:`~graphdsl.max.driver.Accelerator`; the CPU is always added, as in MAX) and
    onnxruntime's intra-op thread count (None: onnxruntime's default). MAX's Mojo
    ``custom_extensions`` and compiled-artifact stores (``precompiled_mefs``,
    ``export_mefs``) raise :class:`~graphdsl.max.UnsupportedError`.

    >>> from graphdsl.max.driver import CPU
    >>> from graphdsl.max.engine import InferenceSession
    >>> InferenceSession(devices=[CPU()], num_threads=2).devices
    [Device(type=cpu,id=0)]
    """

    def __init__(
        self,
        devices: Iterable[Device] = (),
        num_threads: int | None = None,
        *,
        custom_extensions: Any = None,
        precompiled_mefs: Any = None,
        export_mefs: Any = None,
    ) -> None:
        _no_custom_extensions(custom_extensions, "InferenceSession")
        for what, given in (("precompiled_mefs", precompiled_mefs), ("export_mefs", export_mefs)):
            if given is not None:
                raise UnsupportedError(
                    f"InferenceSession({what}=...): MAX's compiled-graph artifacts (.mef) are "
                    "not supported by graphdsl, which exports each graph to ONNX when it is "
                    "loaded"
                )
        chosen: list[Device] = []
        for d in [*devices, CPU()]:
            if not isinstance(d, Device):
                raise TypeError(
                    f"InferenceSession(devices=...): expected graphdsl.max.driver devices "
                    f"(CPU(), Accelerator()), got {d!r}"
                )
            if d not in chosen:
                chosen.append(d)
        self._devices = chosen
        self.num_threads = num_threads

    @property
    def devices(self) -> list[Device]:
        """The devices of the session, the CPU included."""
        return list(self._devices)

    def __repr__(self) -> str:
        threads = f"num_threads={self.num_threads}" if self.num_threads else ""
        return f"<graphdsl.max engine InferenceSession({threads})>"

    def load(
        self,
        model: _GdGraph | str | os.PathLike[str],
        *,
        custom_extensions: Any = None,
        weights_registry: Mapping[str, Any] | None = None,
        tile_based_fusion: bool = False,
    ) -> Model:
        """``model`` (a graphdsl.max Graph, or a graphdsl graph) ready to execute: exported
        to ONNX once, its weights bound from ``weights_registry`` (each weight's name to a
        numpy array, a :class:`~graphdsl.max.driver.Buffer` or another DLPack tensor; names
        the graph does not declare are ignored, as MAX ignores them), on an onnxruntime
        session of the device its values live on. A weight missing from the registry is
        MAX's ValueError; one of another dtype or shape is graphdsl's ``WeightError`` (a
        ValueError; MAX's load takes it). ``tile_based_fusion`` is MAX's compiler's option
        and changes nothing here.

        >>> import numpy as np
        >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType, Weight, ops
        >>> from graphdsl.max.driver import CPU
        >>> from graphdsl.max.engine import InferenceSession
        >>> cpu = DeviceRef.CPU()
        >>> with Graph("scale", input_types=[TensorType(DType.float32, ["n"], cpu)]) as g:
        ...     scale = Weight("scale", DType.float32, [], cpu)
        ...     g.output(g.inputs[0].tensor * g.add_weight(scale))
        >>> session = InferenceSession(devices=[CPU()])
        >>> model = session.load(g, weights_registry={"scale": np.float32(3.0)})
        >>> model.execute(np.arange(3, dtype=np.float32))[0].to_numpy()
        array([0., 3., 6.], dtype=float32)
        """
        compiled = self._compiled(model, custom_extensions, "load")
        return self.init(compiled, weights_registry=weights_registry)

    def compile(
        self,
        model: _GdGraph | str | os.PathLike[str],
        *,
        custom_extensions: Any = None,
        tile_based_fusion: bool = False,
    ) -> CompiledModel:
        """The first half of :meth:`load`, as MAX's ``compile``: ``model`` checked (its
        devices against the session's) and kept for :meth:`init`, which exports it with its
        weights (graphdsl binds weights into the ONNX model, so the export waits for them).

        >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
        >>> from graphdsl.max.driver import CPU
        >>> from graphdsl.max.engine import InferenceSession
        >>> with Graph("neg", input_types=[TensorType(DType.int8, [2], DeviceRef.CPU())]) as g:
        ...     g.output(-g.inputs[0].tensor)
        >>> session = InferenceSession(devices=[CPU()])
        >>> import numpy as np
        >>> model = session.init(session.compile(g))
        >>> model.execute(np.array([1, -128], np.int8))[0].to_numpy()
        array([  -1, -128], dtype=int8)
        """
        return self._compiled(model, custom_extensions, "compile")

    def init(
        self, compiled: CompiledModel, *, weights_registry: Mapping[str, Any] | None = None
    ) -> Model:
        """The second half of :meth:`load`, as MAX's ``init``: the graph of ``compiled``
        exported with the weights of ``weights_registry`` and made a :class:`Model`."""
        if not isinstance(compiled, CompiledModel):
            raise TypeError(f"InferenceSession.init takes what compile() returns, got {compiled!r}")
        return Model(self, compiled._graph, weights_registry)

    def _compiled(self, model: Any, custom_extensions: Any, method: str) -> CompiledModel:
        _no_custom_extensions(custom_extensions, f"InferenceSession.{method}")
        if isinstance(model, (str, os.PathLike)):
            raise UnsupportedError(
                f"InferenceSession.{method}({os.fspath(model)!r}): MAX's compiled model files "
                "(.mef) are not supported by graphdsl; load the Graph itself"
            )
        if not isinstance(model, _GdGraph):
            raise TypeError(f"InferenceSession.{method} takes a Graph, got {type(model).__name__}")
        _device_for(model, self)  # (a graph on a GPU the session lacks fails here, as in MAX)
        return CompiledModel(model)


class CompiledModel:
    """A graph :meth:`InferenceSession.compile` checked, ready for
    :meth:`InferenceSession.init`, as MAX's ``CompiledModel`` (graphdsl exports it at
    ``init``, when its weights are known; MAX's ``export_mef`` raises
    :class:`~graphdsl.max.UnsupportedError`).

    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
    >>> from graphdsl.max.engine import InferenceSession
    >>> with Graph("id", input_types=[TensorType(DType.bool, [1], DeviceRef.CPU())]) as g:
    ...     g.output(g.inputs[0].tensor)
    >>> InferenceSession().compile(g)
    CompiledModel()
    """

    def __init__(self, graph: _GdGraph) -> None:
        self._graph = graph

    def __repr__(self) -> str:
        return "CompiledModel()"

    def export_mef(self, path: str | os.PathLike[str]) -> None:
        """MAX's compiled-artifact file: not supported (graphdsl exports ONNX)."""
        raise UnsupportedError(
            "CompiledModel.export_mef: MAX's compiled-graph artifacts (.mef) are not "
            "supported by graphdsl; export the graph to ONNX with exporters.onnx.export"
        )


class Model:
    """A loaded graph, as MAX's ``Model`` (made by :meth:`InferenceSession.load`):
    ``execute(*inputs)`` runs it and returns a list of
    :class:`~graphdsl.max.driver.Buffer`\\s, one per output of the graph; ``model(...)``
    takes the inputs by position or by name (``input0``...); ``input_metadata`` and
    ``output_metadata`` describe them (:class:`TensorSpec`).

    An input is a Buffer, a DLPack tensor (a numpy array: shared, not copied) or a Python
    or numpy scalar (a rank-0 tensor of the input's dtype); it must have the input's dtype
    and shape (symbolic dimensions bind to the first size seen): no conversion, as in MAX,
    whose ValueErrors (and words) a mistake raises here too. A ``BufferType`` input is
    updated in place with its value after the graph's stores (a numpy array given for it
    sees the new values), and is not among the outputs, as in MAX.

    >>> import numpy as np
    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
    >>> from graphdsl.max.driver import CPU, Buffer
    >>> from graphdsl.max.engine import InferenceSession
    >>> t = TensorType(DType.int32, ["n"], DeviceRef.CPU())
    >>> with Graph("twice", input_types=[t]) as g:
    ...     g.output(g.inputs[0].tensor * 2)
    >>> model = InferenceSession(devices=[CPU()]).load(g)
    >>> model(input0=Buffer.from_numpy(np.array([1, 2], np.int32)))[0].to_numpy()
    array([2, 4], dtype=int32)
    >>> model.execute(np.array([1.5], np.float32))
    Traceback (most recent call last):
        ...
    ValueError: Input at position 0: Buffer of type [(1), f32] does not match expected type [(*), si32]
    """  # noqa: E501

    def __init__(
        self, session: InferenceSession, graph: _GdGraph, weights_registry: Mapping[str, Any] | None
    ) -> None:
        from exporters.onnx import Session, export  # (the engine's one bridge: see the module)

        core: _GdGraph = getattr(graph, "core_graph", graph)
        self._name = core.name
        self._device = _device_for(graph, session)
        user_outputs: list[Symbol] = getattr(core, "user_outputs", core.outputs)
        self._n_outputs = len(user_outputs)
        is_buffer = getattr(core, "is_buffer_input", lambda s: False)
        self._buffers = [k for k, s in enumerate(core.inputs) if is_buffer(s)]
        self._in = [_spec(s, s.attrs["name"]) for s in core.inputs]
        self._out = [_spec(s, f"output{k}") for k, s in enumerate(user_outputs)]
        self._in_dims = [tuple(s.shape) for s in core.inputs]
        on_gpu = not self._device.is_host
        weights = _weights(core, weights_registry)
        proto = export(core, target="cuda" if on_gpu else "cpu", weights=weights)
        cuda = [("CUDAExecutionProvider", {"device_id": str(self._device.id)})]
        providers: list[Any] = [*(cuda if on_gpu else []), "CPUExecutionProvider"]
        self._session = Session(proto, providers, threads=session.num_threads)
        device_of = getattr(core, "device_of", lambda s: DeviceRef.CPU())
        self._in_devices = [self._driver_device(device_of(s)) for s in core.inputs]
        self._out_devices = [self._driver_device(device_of(s)) for s in user_outputs]

    def _driver_device(self, ref: DeviceRef) -> Device:
        return CPU() if ref.is_cpu() else self._device

    # -- metadata
    @property
    def name(self) -> str:
        """The graph's name."""
        return self._name

    @property
    def input_metadata(self) -> list[TensorSpec]:
        """The inputs' names, shapes and dtypes."""
        return list(self._in)

    @property
    def output_metadata(self) -> list[TensorSpec]:
        """The outputs' names, shapes and dtypes."""
        return list(self._out)

    @property
    def input_devices(self) -> list[Device]:
        """The device of each input."""
        return list(self._in_devices)

    @property
    def output_devices(self) -> list[Device]:
        """The device of each output."""
        return list(self._out_devices)

    @property
    def devices(self) -> list[Device]:
        """The devices the model runs on."""
        return [self._device]

    @property
    def signature(self) -> inspect.Signature:
        """The inputs as the parameters of ``model(...)``, by name."""
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        return inspect.Signature([inspect.Parameter(s.name, kind) for s in self._in])

    def __repr__(self) -> str:
        return f"Model(inputs={self._in})"

    # -- running
    def __call__(self, *args: Any, **kwargs: Any) -> list[Buffer]:
        """:meth:`execute`, the inputs given by position or by name."""
        bound = self.signature.bind(*args, **kwargs)
        return self.execute(*bound.arguments.values())

    def execute(self, *args: Any) -> list[Buffer]:
        """Run the model on ``args`` (one per input, in order); one Buffer per output."""
        if len(args) != len(self._in):
            raise ValueError(
                f"Number of inputs ({len(args)}) does not match expected number "
                f"({len(self._in)}) for model"
            )
        buffers = [self._buffer(k, a) for k, a in enumerate(args)]
        self._check(buffers)
        if self._device.is_host:
            outs: list[Any] = self._session([b.to_numpy() for b in buffers])
            results = [Buffer._of(o) for o in outs[: self._n_outputs]]
        else:
            values = [self._on_device(b) for b in buffers]
            outs = self._session.run_with_ortvalues(values)
            results = [
                Buffer._of_ortvalue(o, d, s.dtype)
                for o, d, s in zip(outs, self._out_devices, self._out, strict=False)
            ]
        for k, state in zip(self._buffers, outs[self._n_outputs :], strict=True):
            buffers[k]._replace(state)
        return results

    def _buffer(self, k: int, arg: Any) -> Buffer:
        """Input ``k`` as a Buffer, as MAX's execute takes it."""
        if (isinstance(arg, np.ndarray) and not arg.flags.c_contiguous) or (
            isinstance(arg, Buffer) and not arg.is_contiguous
        ):
            raise ValueError(
                "Max does not currently support executing non-contiguous tensors. Before "
                "passing these tensors to Max, please make a contiguous copy of them using "
                "`.contiguous()` before feeding them into the `execute` or `load` APIs."
            )
        if isinstance(arg, Buffer):
            return arg
        if isinstance(arg, DLPackArray):
            return Buffer.from_dlpack(arg)
        if isinstance(arg, (bool, int, float, np.generic)):
            return Buffer.scalar(arg, self._in[k].dtype)
        raise ValueError(
            "All positional arguments must be of the type `max.driver.Buffer` or a tensor "
            "type implementing the dlpack protocol. We do not currently support inputs of "
            f"the type {type(arg)}."
        )

    def _check(self, buffers: Sequence[Buffer]) -> None:
        """Each input of its dtype and shape, symbolic dimensions bound alike (MAX's
        words)."""
        bound: dict[str, int] = {}
        for k, (b, spec, dims) in enumerate(zip(buffers, self._in, self._in_dims, strict=True)):
            shape = b.shape
            ok = b.dtype is spec.dtype and len(shape) == len(dims)
            ok = ok and all(isinstance(d, str) or d == n for d, n in zip(dims, shape, strict=False))
            if not ok:
                raise ValueError(
                    f"Input at position {k}: Buffer of type {_mlir(shape, b.dtype)} does not "
                    f"match expected type {_mlir(dims, spec.dtype)}"
                )
            for d, n in zip(dims, shape, strict=True):
                if isinstance(d, str) and d.isidentifier() and bound.setdefault(d, n) != n:
                    raise ValueError(
                        f"symbolic dimension '{d}' for input {k} does not match prior uses of "
                        f"that dimension: it is {n} here, {bound[d]} in an earlier input"
                    )

    def _on_device(self, b: Buffer) -> Any:
        """An input for the GPU session: the OrtValue of a buffer on its GPU, else a numpy
        array (onnxruntime copies it there)."""
        if b.device == self._device:
            return b._ort
        return b.to_numpy()


# ---------------------------------------------------------------------------- helpers


def _no_custom_extensions(given: Any, where: str) -> None:
    if given:
        raise UnsupportedError(
            f"{where}(custom_extensions=...): MAX's Mojo custom kernels cannot run on "
            "onnxruntime, which graphdsl exports graphs to"
        )


def _device_for(graph: _GdGraph, session: InferenceSession) -> Device:
    """The device the model of ``graph`` runs on: the GPU its values live on (one of the
    session's devices), else the CPU."""
    gpus = sorted({d.id for d in getattr(graph, "devices", ()) if d.is_gpu()})
    if len(gpus) > 1:
        raise UnsupportedError(
            f"graph {graph.name!r} has values on GPUs {gpus}: MAX runs one graph across "
            "several devices, graphdsl exports one ONNX model, which onnxruntime runs on one "
            "device; put the graph's values on one GPU"
        )
    if not gpus:
        return CPU()
    for d in session.devices:
        if isinstance(d, Accelerator) and d.id == gpus[0]:
            return d
    raise RuntimeError(  # (MAX's class and first words: it compiles for a GPU it lacks)
        f"Failed to compile the model: graph {graph.name!r} has values on gpu:{gpus[0]}, but "
        f"the session's devices are {session.devices}; make the session with "
        f"InferenceSession(devices=[Accelerator({gpus[0]})])"
    )


def _weights(core: _GdGraph, registry: Mapping[str, Any] | None) -> dict[str, np.ndarray]:
    """The arrays of the weights ``core`` declares, from MAX's ``weights_registry``."""
    given = registry or {}
    arrays = {}
    for name in core.weights:
        if name not in given:
            raise ValueError(f"Weight {name!r} is not in the weights registry.")
        value = given[name]
        if isinstance(value, Buffer):
            arrays[name] = value.to_numpy()
        elif isinstance(value, DLPackArray) and not isinstance(value, np.ndarray):
            arrays[name] = Buffer.from_dlpack(value).to_numpy()
        else:
            arrays[name] = np.asarray(value)
    return arrays
