"""``run``: execute a graph, ModelProto or model file on onnxruntime, with cached sessions."""

from __future__ import annotations

import ctypes
import os
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import ModelProto

from exporters.onnx import _optimizers
from exporters.onnx._devices import providers_for
from exporters.onnx._export import export
from exporters.onnx._files import external_data_problem, file_stamp, writes
from exporters.onnx._skeleton import read_skeleton, split_weights
from graphdsl.dtypes import DType
from graphdsl.graph import Graph
from graphdsl.inputs import InputError, bind_inputs, match_names

__all__ = [
    "RunError",
    "inference_session",
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
    """Inputs that do not fit the model, or a model that cannot run."""


def session_options() -> ort.SessionOptions:
    """The options of run()'s sessions: onnxruntime's defaults (every graph optimization,
    ORT_ENABLE_ALL), warnings not logged. The optimizers that change results are left out
    when the session is made (:func:`inference_session`)."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return so


def inference_session(
    model: ModelProto | str | os.PathLike[str], providers: Sequence[str] | None = None
) -> Any:
    """An onnxruntime session of ``model`` (a ModelProto or a path) made as run() makes its
    own: :func:`session_options` with the model's config entries, without the optimizers
    that would change its results (``exporters.onnx._optimizers``); a ModelProto's large
    weights are handed to onnxruntime as arrays instead of being serialized with it."""
    if isinstance(model, ModelProto):
        return _new_session(model, model, None, list(providers or _CPU_ONLY))
    path = os.fspath(model)
    return _new_session(path, _load(path), os.path.dirname(path), list(providers or _CPU_ONLY))


def _new_session(
    source: str | ModelProto, proto: ModelProto, folder: str | None, providers: list[str]
) -> Any:
    """A session of ``source`` (a path, or a ModelProto whose large weights go to onnxruntime
    as OrtValues: ``exporters/onnx/_skeleton.py``); ``proto`` is the model as read."""
    so = session_options()
    for key, value in _optimizers.session_config(proto).items():
        so.add_session_config_entry(key, value)
    off = set(_optimizers.optimizers_off(proto, folder))
    if isinstance(source, str):
        return ort.InferenceSession(source, so, providers=providers, disabled_optimizers=off)
    serialized, names, values = split_weights(source)
    if names:
        so.add_external_initializers(names, values)
    sess = ort.InferenceSession(serialized, so, providers=providers, disabled_optimizers=off)
    sess.graphdsl_weights = values  # the arrays onnxruntime reads: alive while the session is
    return sess


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
        providers: list[str],
        source: bytes | ModelProto | tuple[tuple[str, tuple[int, ...]], ...] | None = None,
        written: int = 0,
        loaded: ModelProto | None = None,
    ) -> None:
        self.source = source
        self.written = written
        proto = model if isinstance(model, ModelProto) else loaded or _load(model)
        folder = os.path.dirname(model) if isinstance(model, str) else None
        self.sess = _new_session(model, proto, folder, providers)
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
            outs = self.sess.run(self.output_names, dict(zip(self.names, arrays, strict=True)))
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
        outs = self.sess.run_with_ort_values(self.output_names, feeds)
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


_graph_sessions: weakref.WeakKeyDictionary[Graph, dict[tuple[str, ...], _Session]] = (
    weakref.WeakKeyDictionary()
)
# by (path, providers) or (id of a proto, providers); the entry keeps the proto alive while
# its id is the key, and each hit is checked to be current (the file or proto unchanged)
_model_sessions: OrderedDict[tuple[Any, tuple[str, ...]], tuple[Any, _Session]] = OrderedDict()
_MAX_CACHED = 16
# protos smaller than this are checked by their serialization, larger ones by equality
_SERIALIZE_BELOW = 1 << 16
_warned_fallback = False


_CPU_ONLY = ["CPUExecutionProvider"]
_last: tuple[Any, Any, _Session] | None = None


def _providers(requested: Sequence[str] | None) -> list[str]:
    global _warned_fallback
    if not requested:
        return _CPU_ONLY
    available = set(ort.get_available_providers())
    chosen = [p for p in requested if p in available]
    missing = [p for p in requested if p not in available]
    if missing and not _warned_fallback:
        _warned_fallback = True
        warnings.warn(
            f"onnxruntime providers {missing} are not available here (available: "
            f"{sorted(available)}); running on {chosen or ['CPUExecutionProvider']}",
            RuntimeWarning,
            stacklevel=3,
        )
    if "CPUExecutionProvider" not in chosen:
        chosen.append("CPUExecutionProvider")
    return chosen


def _session_for(model: Graph | ModelProto | str, providers: list[str]) -> _Session:
    key = tuple(providers)
    if isinstance(model, Graph):
        per = _graph_sessions.setdefault(model, {})
        sess = per.get(key)
        if sess is None:
            target = "cuda" if "CUDAExecutionProvider" in providers else "cpu"
            # onnx.checker serializes the whole model to check its structure, which
            # onnxruntime checks as it loads it: a third of a large model's first run()
            proto = export(model, target=target, check=False)
            sess = per[key] = _Session(proto, providers)
        return sess
    if isinstance(model, str):
        path = os.path.abspath(model)
        mkey: tuple[Any, tuple[str, ...]] = (path, key)
    else:
        mkey = (id(model), key)
    hit = _model_sessions.get(mkey)
    if hit is not None and hit[1].current(model):
        _model_sessions.move_to_end(mkey)
        return hit[1]
    if isinstance(model, str):
        written = writes(path)
        stamp = _stamp_file(path)  # before reading: a change after it shows at the next call
        proto = _load(path)
        sess = _Session(path, providers, _stamps(path, stamp, proto), written, proto)
    elif _small(model):
        sess = _Session(model, providers, model.SerializeToString())
    else:
        snapshot = ModelProto()
        snapshot.CopyFrom(model)
        sess = _Session(model, providers, snapshot)
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
    providers: Sequence[str] | None = None,
) -> list[np.ndarray]:
    """Execute on onnxruntime; returns one numpy array per output.

    ``model`` is a Graph (exported for the provider's target on first use, then cached),
    a ModelProto or a path. Sessions are cached by what decides the model: a Graph by
    identity (it is frozen once exported), a path by its file and data files as they are
    on disk (a model exported again to the same path gets a new session), a ModelProto by
    its content (compared with a copy at each call: for big models, pass the Graph or the
    path). ``inputs`` is a dict by name or a list in order; they are
    checked (names, dtypes, shapes, symbolic dims) before onnxruntime sees them. The
    default provider is CPU, or :func:`providers_for` of a Graph (CUDA first for a
    graphdsl.max graph with values on ``DeviceRef.GPU()``); ``providers=
    ["CUDAExecutionProvider", "CPUExecutionProvider"]`` uses CUDA where onnxruntime-gpu and
    a GPU are present and otherwise warns once and runs on CPU.

    Sessions keep onnxruntime's graph optimizations (ORT_ENABLE_ALL) but those that would
    change the model's results (exporters/onnx/_optimizers.py; docs/semantics.md lists
    them); :func:`inference_session` makes the same session. A Graph is exported with
    ``check=False`` (onnxruntime checks the model as it loads it), and a large model's
    weights reach onnxruntime as arrays, not serialized (exporters/onnx/_skeleton.py).
    """
    global _last
    last = _last
    if last is not None and last[0] is model and last[1] is providers and last[2].current(model):
        sess = last[2]  # the same model again, unchanged: skip the lookups
    else:
        if isinstance(model, os.PathLike):
            model = os.fspath(model)
        if isinstance(model, str) and not os.path.exists(model):
            raise RunError(f"no model file at {model!r}")
        default = providers_for(model) if isinstance(model, Graph) else None
        sess = _session_for(model, _providers(providers if providers is not None else default))
        _last = (model, providers, sess)
    try:
        feeds = sess.fast_feeds(inputs) if sess.plain else None
        if feeds is not None:  # the common case: arrays that fit exactly, no conversions
            outs: list[np.ndarray] = sess.sess.run(sess.output_names, feeds)
            return outs
        if isinstance(model, Graph):
            try:
                arrays, _ = bind_inputs(model, inputs)
            except InputError as e:
                raise RunError(str(e)) from None
            return sess(arrays)
        return sess(_check_model_inputs(sess, inputs))
    except (ort.capi.onnxruntime_pybind11_state.Fail,
            ort.capi.onnxruntime_pybind11_state.InvalidArgument,
            ort.capi.onnxruntime_pybind11_state.RuntimeException) as e:  # fmt: skip
        # inputs were checked against the model's types: what fails here is a size that the
        # types leave open (a symbolic one that holds only for some bindings)
        raise RunError(f"onnxruntime could not run {_describe(model)}: {e}") from None


def _describe(model: object) -> str:
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
