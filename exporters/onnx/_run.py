"""``run``: execute a graph, ModelProto or model file on onnxruntime, with cached sessions."""

from __future__ import annotations

import ctypes
import os
import re
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import ModelProto

from exporters.onnx import _optimizers
from exporters.onnx._devices import providers_for
from exporters.onnx._export import DATA_FOLDER, export
from exporters.onnx._files import external_data_problem, file_stamp, writes
from exporters.onnx._lower.checks import INDEX_CHECK
from exporters.onnx._skeleton import read_skeleton, split_weights
from graphdsl.dtypes import DType
from graphdsl.graph import Graph
from graphdsl.inputs import InputError, bind_inputs, match_names

__all__ = [
    "Options",
    "RunError",
    "inference_session",
    "options",
    "run",
    "session_options",
]

_RAW: dict[int, tuple[type, DType]] = {  # onnx types numpy cannot hand to onnxruntime
    onnx.TensorProto.BFLOAT16: (np.uint16, DType.bfloat16),
    onnx.TensorProto.FLOAT8E4M3FN: (np.uint8, DType.float8_e4m3fn),
    onnx.TensorProto.FLOAT8E5M2: (np.uint8, DType.float8_e5m2),
}
_NP_OF_ONNX = {  # for checking inputs of models not built from a Graph
    t: np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t))
    for t in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13)
}


class RunError(ValueError):
    """Inputs that do not fit the model, or a model that onnxruntime cannot load or run (its
    message, with the graphdsl op and source line of the node that failed)."""


# every exception onnxruntime's binding raises (Fail, InvalidGraph, NotImplemented,
# RuntimeException, InvalidArgument, ...): each becomes a RunError
_ORT_ERRORS: tuple[type[BaseException], ...] = tuple(
    v for v in vars(ort.capi.onnxruntime_pybind11_state).values()
    if isinstance(v, type) and issubclass(v, Exception)
)  # fmt: skip
_CUDA = "CUDAExecutionProvider"
# run options that keep onnxruntime from logging a failing node to stderr: the RunError says it
_QUIET = ort.RunOptions()
_QUIET.log_severity_level = 4
_NODE_NAME = re.compile(r"(?:Name:|node with name )'([^']*)'")


@dataclass(frozen=True)
class Options:
    """How run() makes a session: providers with their options, threads, the user's
    SessionOptions (by identity). One value, the session cache's key with the model."""

    providers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    threads: int | None = None
    session_options: Any = None  # an ort.SessionOptions, compared by identity

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Options)
            and self.providers == other.providers
            and self.threads == other.threads
            and self.session_options is other.session_options
        )

    def __hash__(self) -> int:
        return hash((self.providers, self.threads, id(self.session_options)))

    @property
    def names(self) -> list[str]:
        return [p for p, _ in self.providers]

    def for_ort(self) -> tuple[list[str], list[dict[str, str]]]:
        return self.names, [dict(o) for _, o in self.providers]


def options(
    providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
    *,
    threads: int | None = None,
    session_options: Any = None,
    provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    tf32: bool = False,
) -> Options:
    """run()'s session options as one value (what :func:`run` and :func:`inference_session`
    take as keywords).

    ``providers``: names, or (name, options) pairs as onnxruntime takes them; those not
    available here are dropped with one warning, and the CPU provider always ends the list
    (it runs the nodes the others have no kernel for). ``provider_options``: options by
    provider name, merged over those of the pairs. ``tf32``: the CUDA provider's
    ``use_tf32`` (off by default, so that float32 MatMuls and convolutions round as on the
    CPU: onnxruntime's own default is on, 1e-3 off the reference). ``threads``: the session's
    intra-op threads (onnxruntime's default: one per core). ``session_options``: an
    ``onnxruntime.SessionOptions`` to start from; run() adds its config entries to it, and
    leaves out the optimizers that change results in any case.

    >>> from exporters.onnx import options
    >>> o = options(threads=1, tf32=True)
    >>> o.names, o.threads
    (['CPUExecutionProvider'], 1)
    """
    listed = _entries(providers, provider_options, tf32)
    chosen = _available(listed)
    return Options(
        tuple((n, tuple(sorted(o.items()))) for n, o in chosen), threads, session_options
    )


def _entries(
    providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None,
    provider_options: Mapping[str, Mapping[str, Any]] | None,
    tf32: bool,
) -> list[tuple[str, dict[str, str]]]:
    """(name, options) per provider: ``provider_options`` merged over the pairs' own, and
    CUDA's use_tf32 from ``tf32`` unless given."""
    listed: list[tuple[str, dict[str, str]]] = []
    for p in providers or [_CPU_ONLY[0]]:
        name, opts = (p, {}) if isinstance(p, str) else (p[0], dict(p[1]))
        listed.append((name, {k: str(v) for k, v in opts.items()}))
    for name, extra in (provider_options or {}).items():
        for entry in listed:
            if entry[0] == name:
                entry[1].update({k: str(v) for k, v in extra.items()})
    for name, opts in listed:
        if name == _CUDA:
            opts.setdefault("use_tf32", "1" if tf32 else "0")
    return listed


def session_options(opts: Options | None = None) -> ort.SessionOptions:
    """The options of run()'s sessions: the user's SessionOptions (``opts.session_options``)
    or onnxruntime's defaults (every graph optimization, ORT_ENABLE_ALL) with warnings not
    logged, and ``opts.threads`` intra-op threads. The optimizers that change results are
    left out when the session is made (:func:`inference_session`)."""
    so = opts.session_options if opts is not None and opts.session_options is not None else None
    if so is None:
        so = ort.SessionOptions()
        so.log_severity_level = 3
    if opts is not None and opts.threads is not None:
        so.intra_op_num_threads = opts.threads
    return so


def inference_session(
    model: ModelProto | str | os.PathLike[str],
    providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
    **kwargs: Any,
) -> Any:
    """An onnxruntime session of ``model`` (a ModelProto or a path) made as run() makes its
    own: :func:`session_options` with the model's config entries, without the optimizers
    that would change its results (``exporters.onnx._optimizers``), TF32 off on CUDA; a
    ModelProto's large weights are handed to onnxruntime as arrays instead of being
    serialized with it. ``kwargs``: :func:`options`' keywords (``threads``, ``tf32``,
    ``session_options``, ``provider_options``). A model onnxruntime cannot load raises
    :class:`RunError`."""
    opts = options(providers, **kwargs)
    if isinstance(model, ModelProto):
        return _new_session(model, model, _folder_of(model), opts)
    path = os.fspath(model)
    return _new_session(path, _load(path), os.path.dirname(path), opts)


def _new_session(
    source: str | ModelProto, proto: ModelProto, folder: str | None, opts: Options
) -> Any:
    """A session of ``source`` (a path, or a ModelProto whose large weights go to onnxruntime
    as OrtValues: ``exporters/onnx/_skeleton.py``); ``proto`` is the model as read."""
    so = session_options(opts)
    config, off = _optimizers.session_settings(proto, folder, opts.names)
    for key, value in config.items():
        so.add_session_config_entry(key, value)
    providers, provider_options = opts.for_ort()
    try:
        if isinstance(source, str):
            return ort.InferenceSession(source, so, providers=providers,
                                        provider_options=provider_options,
                                        disabled_optimizers=off)  # fmt: skip
        serialized, names, values = split_weights(source, folder)
        if names:
            so.add_external_initializers(names, values)
        sess = ort.InferenceSession(serialized, so, providers=providers,
                                    provider_options=provider_options,
                                    disabled_optimizers=off)  # fmt: skip
    except _ORT_ERRORS as e:
        raise RunError(_explain(f"onnxruntime could not load {_describe(source)}", e, proto,
                                opts)) from None  # fmt: skip
    sess.graphdsl_weights = values  # the arrays onnxruntime reads: alive while the session is
    return sess


def _explain(what: str, e: BaseException, proto: ModelProto | None, opts: Options) -> str:
    """``what`` failed with onnxruntime's error ``e``: the failing node's graphdsl op and
    source line (the exporter names each node after them), what went wrong where it is
    known (an index out of range, shapes that do not broadcast), and onnxruntime's own
    message with the providers."""
    msg = str(e).strip()
    first = msg.splitlines()[0] if msg else type(e).__name__
    found = _NODE_NAME.search(msg)
    name = found.group(1) if found else ""
    if name and " at " not in name and proto is not None:
        # a node an optimizer made, named after the output of the one it replaced (the NCHWc
        # layout's "<output>_nchwc"): that node's name (its op and line)
        made_from = name.removesuffix("_nchwc")
        name = next((n.name for n in proto.graph.node if made_from in n.output), name)
    where = name.split("/", 1)[0] if "/" in name else name
    reason = _reason(msg, name)
    detail = f"onnxruntime on {', '.join(opts.names)}: {first}"
    if where and reason:
        return f"{where}: {reason} ({what}; {detail})"
    if where:
        return f"{what} at node {where!r} ({detail})"
    return f"{what} ({detail})"


_GATHER_RANGE = re.compile(r"idx=(-?\d+) must be within the inclusive range \[(-?\d+),(-?\d+)\]")
# GatherND's and ScatterND's kernels: "invalid index found, index = 5", "invalid indice
# found, indice = 5" (the value, not its position)
_ND_RANGE = re.compile(r"invalid ind(?:ice|ex) found, ind(?:ice|ex) = (-?\d+)")
_BROADCAST = re.compile(r"broadcast an axis by a dimension other than 1\. (\d+) by (\d+)")
# the CPU Conv and pools refuse an empty spatial axis ("Invalid input shape: {0,5}")
_EMPTY_WINDOWS = re.compile(r"Invalid input shape: \{([0-9,]*\b0\b[0-9,]*)\}")


def _reason(msg: str, node: str) -> str:
    """What onnxruntime's message ``msg`` about node ``node`` means, in the reference's words
    where it is one of the errors run() knows; "" otherwise."""
    m = _GATHER_RANGE.search(msg)
    if m:
        size = int(m.group(3)) + 1
        return f"index {m.group(1)} is out of range for an axis of size {size}"
    m = _ND_RANGE.search(msg)
    if m:
        return f"index {m.group(1)} is out of range for its axis"
    if INDEX_CHECK in node:
        return "an index is out of range for its axis"
    m = _BROADCAST.search(msg)
    if m:
        return f"sizes {m.group(1)} and {m.group(2)} do not broadcast"
    m = _EMPTY_WINDOWS.search(msg)
    if m:
        return (
            f"onnxruntime's kernel refuses the empty spatial size ({m.group(1)}) that the "
            "reference gives an empty result for; give the window op non-empty sizes"
        )
    return ""


class _Session:
    """An onnxruntime session and what run() checks per call, for one model as it was.

    ``source`` is what the session was made from: a ModelProto's serialization if it is
    small (serializing and comparing bytes: 0.5 us for a tiny model) or else a copy of it
    (message equality runs at memcmp speed: 0.7 ms for 16 MB of weights), the stamps of the
    model file and its data files for a path (with the number of times this process exported
    to it: file timestamps are too coarse to tell two quick exports apart), or None for a
    Graph (frozen once exported).
    :meth:`current` says whether the model is still that.
    """

    def __init__(
        self,
        model: ModelProto | str,
        opts: Options,
        source: bytes | ModelProto | tuple[tuple[str, tuple[int, ...]], ...] | None = None,
        written: int = 0,
        loaded: ModelProto | None = None,
    ) -> None:
        self.source = source
        self.written = written
        proto = model if isinstance(model, ModelProto) else loaded or _load(model)
        folder = os.path.dirname(model) if isinstance(model, str) else _folder_of(model)
        self.proto = proto
        self.opts = opts
        self.sess = _new_session(model, proto, folder, opts)
        self.inputs = self.sess.get_inputs()
        self.names = [i.name for i in self.inputs]
        self.output_names = [o.name for o in self.sess.get_outputs()]
        types = _io_types(proto)
        self.raw_in = {n: _RAW[t] for n, t in types[0].items() if t in _RAW}
        self.raw_out = [_RAW.get(types[1].get(n, 0)) for n in self.output_names]
        self.in_types = types[0]
        self.in_shapes = {i.name: i.shape for i in self.inputs}
        # (name, numpy dtype, dims) for the per-call fast check
        self.spec = [
            (n, self.raw_in[n][1].np if n in self.raw_in else _NP_OF_ONNX.get(self.in_types[n]),
             tuple(self.in_shapes[n]))
            for n in self.names
        ]  # fmt: skip
        self.plain = not self.raw_in and not any(self.raw_out)
        # the declared output dims: ints, dimension names (bound by the inputs) or None
        self.out_dims = [tuple(o.shape) for o in self.sess.get_outputs()]
        self.symbolic_out = any(isinstance(d, str) for dims in self.out_dims for d in dims)

    def check_outputs(self, outs: Sequence[np.ndarray], arrays: Sequence[np.ndarray]) -> None:
        """Each output has its declared shape, its dimension names bound as the inputs bind
        them: a result the reference would refuse (an optimizer that turned an error into a
        clamped value, say) is a RunError, not an answer."""
        self.check_shapes([np.shape(o) for o in outs], [np.shape(a) for a in arrays])

    def check_shapes(
        self, out_shapes: Sequence[tuple[int, ...]], in_shapes: Sequence[tuple[int, ...]]
    ) -> None:
        """:meth:`check_outputs` from the shapes alone (of OrtValues, say: no arrays)."""
        bound: dict[str, int] = {}
        if self.symbolic_out:
            for (_, _, dims), in_shape in zip(self.spec, in_shapes, strict=True):
                for d, n in zip(dims, in_shape, strict=False):
                    if isinstance(d, str):
                        bound.setdefault(d, n)
        for name, dims, shape in zip(self.output_names, self.out_dims, out_shapes, strict=True):
            if shape == dims:
                continue
            ok = len(shape) == len(dims) and all(
                not isinstance(d, int | str) or n == (bound.get(d, n) if isinstance(d, str) else d)
                for d, n in zip(dims, shape, strict=True)
            )
            if not ok:
                raise RunError(
                    f"output {name!r}: onnxruntime returned shape {shape}, but the model "
                    f"declares {list(dims)} with {bound or 'no dimension names'} bound by the "
                    "inputs; this result is not the reference's (an index or size it refuses)"
                )

    def current(self, model: object) -> bool:
        """Whether ``model`` is still what this session was made from."""
        src = self.source
        if src is None:
            return True
        if isinstance(src, bytes):
            return bool(model.SerializeToString() == src)  # type: ignore[attr-defined]
        if isinstance(src, ModelProto):
            return bool(model == src)
        if writes(src[0][0]) != self.written:
            return False
        try:
            for p, stamp in src:  # file_stamp, inlined: one stat per file and call
                st = os.stat(p)
                if (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns) != stamp:
                    return False
        except OSError:
            return False
        return True

    def fast_feeds(self, inputs: object) -> dict[str, np.ndarray] | None:
        """``inputs`` if it is a dict of arrays that exactly fit; None means: check slowly."""
        if type(inputs) is not dict or len(inputs) != len(self.spec):
            return None
        bound: dict[str, int] = {}
        for name, want, dims in self.spec:
            arr = inputs.get(name)
            if type(arr) is not np.ndarray or (arr.dtype is not want and arr.dtype != want):
                return None
            shape = arr.shape
            if shape == dims:  # a static shape (the common case) matches in one comparison
                continue
            if len(shape) != len(dims):
                return None
            for d, n in zip(dims, shape, strict=True):
                if isinstance(d, int):
                    if d != n:
                        return None
                elif d is not None and bound.setdefault(d, n) != n:
                    return None
        return inputs

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if not self.raw_in and not any(self.raw_out):
            feeds = dict(zip(self.names, arrays, strict=True))
            outs = self.sess.run(self.output_names, feeds, _QUIET)
            return [np.asarray(o) for o in outs]
        feeds = {}
        for name, arr in zip(self.names, arrays, strict=True):
            raw = self.raw_in.get(name)
            if raw is None:
                feeds[name] = ort.OrtValue.ortvalue_from_numpy(arr)
            else:
                flat = arr if arr.flags.c_contiguous else arr.copy(order="C")  # keeps rank 0
                view: np.ndarray = flat.view(raw[0])
                feeds[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                    view, _onnx_of(raw[1])
                )
        outs = self.sess.run_with_ort_values(self.output_names, feeds, _QUIET)
        return [_from_ortvalue(v, r) for v, r in zip(outs, self.raw_out, strict=True)]


def _onnx_of(d: DType) -> int:
    from exporters.onnx._types import onnx_type

    return onnx_type(d)


def _from_ortvalue(v: Any, raw: tuple[type, DType] | None) -> np.ndarray:
    if raw is None:
        out: np.ndarray = np.asarray(v.numpy())
        return out
    data = ctypes.string_at(v.data_ptr(), v.tensor_size_in_bytes())
    result: np.ndarray = np.frombuffer(data, dtype=raw[0]).view(raw[1].np)
    shaped: np.ndarray = result.reshape(v.shape()).copy()
    return shaped


def _folder_of(model: ModelProto) -> str | None:
    """Where the external data of a model returned by export(graph, path) lies."""
    for entry in model.metadata_props:
        if entry.key == DATA_FOLDER:
            return str(entry.value)
    return None


def _load(path: str) -> ModelProto:
    """The model at ``path`` without the data of its large tensors (``read_skeleton``: the
    weights' bytes are not read); its external data is checked to be whole."""
    try:
        m = read_skeleton(path)
    except Exception as e:  # protobuf's DecodeError, or anything else a bad file raises
        raise RunError(f"cannot read an ONNX model from {path!r}: {e}") from None
    problem = external_data_problem(m, os.path.dirname(path))
    if problem is not None:
        raise RunError(f"model {path!r}: {problem[0]}; {problem[1]}")
    return m


def _io_types(m: ModelProto) -> tuple[dict[str, int], dict[str, int]]:
    ins = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
    outs = {o.name: o.type.tensor_type.elem_type for o in m.graph.output}
    return ins, outs


_graph_sessions: weakref.WeakKeyDictionary[Graph, dict[Options, _Session]] = (
    weakref.WeakKeyDictionary()
)
# by (path, options) or (id of a proto, options); the entry keeps the proto alive while
# its id is the key, and each hit is checked to be current (the file or proto unchanged)
_model_sessions: OrderedDict[tuple[Any, Options], tuple[Any, _Session]] = OrderedDict()
_MAX_CACHED = 16
# protos smaller than this are checked by their serialization, larger ones by equality
_SERIALIZE_BELOW = 1 << 16
_warned_fallback = False


_CPU_ONLY = ["CPUExecutionProvider"]
# the last call's (model, its options key, session): the same model again skips the lookups
_last: tuple[Any, Any, _Session] | None = None


def _available(listed: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
    """``listed`` without the providers onnxruntime lacks here (warned once), the CPU
    provider last."""
    global _warned_fallback
    available = set(ort.get_available_providers())
    chosen = [(n, o) for n, o in listed if n in available]
    missing = [n for n, _ in listed if n not in available]
    if missing and not _warned_fallback:
        _warned_fallback = True
        warnings.warn(
            f"onnxruntime providers {missing} are not available here (available: "
            f"{sorted(available)}); running on {[n for n, _ in chosen] or _CPU_ONLY}",
            RuntimeWarning,
            stacklevel=4,
        )
    if all(n != _CPU_ONLY[0] for n, _ in chosen):
        chosen.append((_CPU_ONLY[0], {}))
    return chosen


def _session_for(model: Graph | ModelProto | str, opts: Options) -> _Session:
    if isinstance(model, Graph):
        per = _graph_sessions.setdefault(model, {})
        sess = per.get(opts)
        if sess is None:
            target = "cuda" if _CUDA in opts.names else "cpu"
            # onnx.checker serializes the whole model to check its structure, which
            # onnxruntime checks as it loads it: a third of a large model's first run()
            proto = export(model, target=target, check=False)
            sess = per[opts] = _Session(proto, opts)
        return sess
    if isinstance(model, str):
        path = os.path.abspath(model)
        mkey: tuple[Any, Options] = (path, opts)
    else:
        mkey = (id(model), opts)
    hit = _model_sessions.get(mkey)
    if hit is not None and hit[1].current(model):
        _model_sessions.move_to_end(mkey)
        return hit[1]
    if isinstance(model, str):
        written = writes(path)
        stamp = _stamp_file(path)  # before reading: a change after it shows at the next call
        proto = _load(path)
        sess = _Session(path, opts, _stamps(path, stamp, proto), written, proto)
    elif _small(model):
        sess = _Session(model, opts, model.SerializeToString())
    else:
        snapshot = ModelProto()
        snapshot.CopyFrom(model)
        sess = _Session(model, opts, snapshot)
    _model_sessions[mkey] = (model, sess)
    _model_sessions.move_to_end(mkey)
    if len(_model_sessions) > _MAX_CACHED:
        _model_sessions.popitem(last=False)
    return sess


def _small(model: ModelProto) -> bool:
    """Is ``model`` under :data:`_SERIALIZE_BELOW` bytes? Estimated from its tensors' shapes
    and its node count (``ByteSize`` serializes the model to measure it: 0.2 s for 186 MB)."""
    size = 64 * len(model.graph.node)
    for t in model.graph.initializer:
        count = 1
        for d in t.dims:
            count *= d
        size += 8 * count + 64
        if size >= _SERIALIZE_BELOW:
            return False
    return size < _SERIALIZE_BELOW


def _stamp_file(path: str) -> tuple[int, ...]:
    try:
        return file_stamp(path)
    except OSError as e:
        raise RunError(f"cannot read the model {path!r}: {e.strerror or e}") from None


def _stamps(
    path: str, stamp: tuple[int, ...], proto: ModelProto
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The stamps of the model file at ``path`` and of the data files ``proto`` names."""
    stamps = [(path, stamp)]
    folder = os.path.dirname(path)
    for t in proto.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                data = os.path.join(folder, e.value)
                if all(p != data for p, _ in stamps):
                    stamps.append((data, _stamp_file(data)))
    return tuple(stamps)


def run(
    model: Graph | ModelProto | str | os.PathLike[str],
    inputs: Mapping[str, Any] | Sequence[Any],
    *,
    providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
    **kwargs: Any,
) -> list[np.ndarray]:
    """Execute on onnxruntime; returns one numpy array per output.

    ``model`` is a Graph (exported for the provider's target on first use, then cached),
    a ModelProto or a path. Sessions are cached by what decides the model and by the
    session's options: a Graph by identity (it is frozen once exported), a path by its file
    and data files as they are on disk (a model exported again to the same path gets a new
    session), a ModelProto by its content (compared with a copy at each call: for big
    models, pass the Graph or the path). ``inputs`` is a dict by name or a list in order;
    they are checked (names, dtypes, shapes, symbolic dims) before onnxruntime sees them.

    The default provider is CPU, or :func:`providers_for` of a Graph (CUDA first for a
    graphdsl.max graph with values on ``DeviceRef.GPU()``); ``providers=
    ["CUDAExecutionProvider", "CPUExecutionProvider"]`` uses CUDA where onnxruntime-gpu and
    a GPU are present and otherwise warns once and runs on CPU. ``kwargs`` are
    :func:`options`' keywords: ``threads=``, ``tf32=`` (CUDA's TF32, off by default: exact
    float32 products), ``provider_options={name: {...}}``, ``session_options=`` (an
    ``onnxruntime.SessionOptions`` to start from).

    Sessions keep onnxruntime's graph optimizations (ORT_ENABLE_ALL) but those that would
    change the model's results (exporters/onnx/_optimizers.py; docs/semantics.md lists
    them); :func:`inference_session` makes the same session. A Graph is exported with
    ``check=False`` (onnxruntime checks the model as it loads it), and a large model's
    weights reach onnxruntime as arrays, not serialized (exporters/onnx/_skeleton.py).
    Whatever onnxruntime refuses, at load or at run, is a :class:`RunError` that names the
    graphdsl op and source line of the node that failed, and the providers.
    """
    global _last
    last = _last
    key = (providers, *kwargs.values()) if kwargs else providers
    if last is not None and last[0] is model and last[1] == key and last[2].current(model):
        sess = last[2]  # the same model again, unchanged: skip the lookups
    else:
        model, sess = session_of(model, providers, **kwargs)
        _last = (model, key, sess)
    return execute(sess, model, inputs)


def session_of(
    model: Graph | ModelProto | str | os.PathLike[str],
    providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
    **kwargs: Any,
) -> tuple[Graph | ModelProto | str, _Session]:
    """run()'s session for ``model`` and its options (from the cache, or made and cached),
    with the model as run() keys it (a path as a string)."""
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if isinstance(model, str) and not os.path.exists(model):
        raise RunError(f"no model file at {model!r}")
    default = providers_for(model) if isinstance(model, Graph) else None
    opts = options(providers if providers is not None else default, **kwargs)
    return model, _session_for(model, opts)


def execute(
    sess: _Session, model: Graph | ModelProto | str, inputs: Mapping[str, Any] | Sequence[Any]
) -> list[np.ndarray]:
    """run() of ``model`` on its session ``sess``: the inputs checked (and converted as
    run() converts them), the outputs checked against their declared shapes, onnxruntime's
    errors as :class:`RunError`."""
    try:
        feeds = sess.fast_feeds(inputs) if sess.plain else None
        if feeds is not None:  # the common case: arrays that fit exactly, no conversions
            outs: list[np.ndarray] = sess.sess.run(sess.output_names, feeds, _QUIET)
            sess.check_outputs(outs, [feeds[n] for n in sess.names])
            return outs
        if isinstance(model, Graph):
            try:
                arrays, _ = bind_inputs(model, inputs)
            except InputError as e:
                raise RunError(str(e)) from None
        else:
            arrays = _check_model_inputs(sess, inputs)
        outs = sess(arrays)
        sess.check_outputs(outs, arrays)
        return outs
    except _ORT_ERRORS as e:
        # inputs were checked against the model's types: what fails here is a size that the
        # types leave open (a symbolic one that holds only for some bindings), or an index
        msg = _explain(f"onnxruntime could not run {_describe(model)}", e, sess.proto, sess.opts)
        if isinstance(model, Graph):
            msg = _reference_says(model, inputs) or msg
        raise RunError(msg) from None


def _reference_says(graph: Graph, inputs: Mapping[str, Any] | Sequence[Any]) -> str | None:
    """The reference's own error for ``inputs`` (the op, its source line and what is wrong,
    as gd.evaluate says it), where onnxruntime failed; None where the reference runs them
    (or needs weights run() does not have)."""
    from graphdsl.evaluate import evaluate
    from graphdsl.types import IndexRangeError
    from graphdsl.weights import declared_weights

    if declared_weights(graph):
        return None
    try:
        evaluate(graph, inputs)
    except (IndexRangeError, ValueError, TypeError) as e:
        return f"{e} (onnxruntime refused the inputs too)"
    except Exception:  # the reference failing otherwise says nothing about the inputs
        return None
    return None


def _describe(model: object) -> str:
    if isinstance(model, ModelProto):
        return f"model {model.graph.name!r}"
    if isinstance(model, Graph):
        return f"graph {model.name!r}"
    if isinstance(model, str):
        return f"model {model!r}"
    return f"model {getattr(getattr(model, 'graph', None), 'name', '?')!r}"


def _check_model_inputs(
    sess: _Session, inputs: Mapping[str, Any] | Sequence[Any]
) -> list[np.ndarray]:
    names = sess.names
    try:
        values = match_names("the model", names, inputs)
    except InputError as e:
        raise RunError(str(e)) from None
    out = []
    bound: dict[str, tuple[int, str]] = {}
    for name, v in zip(names, values, strict=True):
        arr = np.asarray(v)
        t = sess.in_types[name]
        want = sess.raw_in[name][1].np if name in sess.raw_in else _NP_OF_ONNX.get(t)
        if want is not None and arr.dtype != want:
            raise RunError(f"input {name!r}: expected dtype {want}, got {arr.dtype}")
        shape = sess.in_shapes[name]
        if len(shape) != arr.ndim or any(
            isinstance(d, int) and d != n for d, n in zip(shape, arr.shape, strict=True)
        ):
            raise RunError(f"input {name!r}: expected shape {shape}, got {arr.shape}")
        for d, n in zip(shape, arr.shape, strict=True):
            if isinstance(d, str):
                size, first = bound.setdefault(d, (n, name))
                if size != n:
                    raise RunError(
                        f"input {name!r}: dimension {d!r} is {n}, but input {first!r} bound it "
                        f"to {size}; inputs sharing a dimension name must agree"
                    )
        out.append(arr)
    return out
