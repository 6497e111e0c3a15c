"""``run``: execute a graph, ModelProto or model file on onnxruntime, with cached sessions.

The session options and the sessions are made here (:func:`options`,
:func:`session_options`, :func:`inference_session`) and cached by model; what a session
checks per call is ``_run_session``, what run() says when onnxruntime refuses is
``_run_errors``. The ``import x as x`` names are those ``exporters.onnx._session`` reads
here; tests and scripts set ``session_options``, ``file_stamp``, ``_warned_fallback`` and
``_last`` here, so their users stay in this module.
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import ModelProto

from exporters.onnx import _optimizers
from exporters.onnx._devices import providers_for
from exporters.onnx._export import export
from exporters.onnx._files import file_stamp, writes
from exporters.onnx._run_errors import _ORT_ERRORS as _ORT_ERRORS
from exporters.onnx._run_errors import RunError, _reference_says
from exporters.onnx._run_errors import _describe as _describe
from exporters.onnx._run_errors import _explain as _explain
from exporters.onnx._run_options import _CPU_ONLY, _CUDA, Options, _entries
from exporters.onnx._run_session import _QUIET as _QUIET
from exporters.onnx._run_session import _RAW as _RAW
from exporters.onnx._run_session import _check_model_inputs, _folder_of, _load, _Session
from exporters.onnx._run_session import _from_ortvalue as _from_ortvalue
from exporters.onnx._run_session import _onnx_of as _onnx_of
from exporters.onnx._skeleton import split_weights
from graphdsl.graph import Graph
from graphdsl.inputs import InputError, bind_inputs

__all__ = [
    "Options",
    "RunError",
    "inference_session",
    "options",
    "run",
    "session_options",
]


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
    :class:`RunError`.

    >>> import numpy as np, graphdsl as gd
    >>> from exporters.onnx import export, inference_session
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.int8, (2,))})
    >>> g.output(g.inputs[0] // 2)
    >>> sess = inference_session(export(g), threads=1)
    >>> [i.name for i in sess.get_inputs()], sess.run(None, {"x": np.array([5, -5], np.int8)})
    (['x'], [array([ 2, -3], dtype=int8)])
    """
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


def _cached(
    model: ModelProto | str,
    opts: Options,
    source: bytes | ModelProto | tuple[tuple[str, tuple[int, ...]], ...] | None = None,
    written: int = 0,
    loaded: ModelProto | None = None,
) -> _Session:
    """A session of ``model`` for the cache (``loaded``: the model at path ``model``, read
    already); ``source`` and ``written`` say what it was made from (see :class:`_Session`)."""
    proto = model if isinstance(model, ModelProto) else loaded or _load(model)
    folder = os.path.dirname(model) if isinstance(model, str) else _folder_of(model)
    return _Session(_new_session(model, proto, folder, opts), proto, opts, source, written)


_graph_sessions: weakref.WeakKeyDictionary[Graph, dict[Options, _Session]] = (
    weakref.WeakKeyDictionary()
)
# by (path, options) or (id of a proto, options); the entry keeps the proto alive while
# its id is the key, and each hit is checked to be current (the file or proto unchanged)
_model_sessions: OrderedDict[tuple[Any, Options], tuple[Any, _Session]] = OrderedDict()
_MAX_CACHED = 16
# protos smaller than this are checked by their serialization, larger ones by equality
_SERIALIZE_BELOW = 1 << 16
_warned_fallback = False  # (tests set it back to see the warning again)
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
            sess = per[opts] = _cached(proto, opts)
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
        sess = _cached(path, opts, _stamps(path, stamp, proto), written, proto)
    elif _small(model):
        sess = _cached(model, opts, model.SerializeToString())
    else:
        snapshot = ModelProto()
        snapshot.CopyFrom(model)
        sess = _cached(model, opts, snapshot)
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

    >>> import numpy as np, graphdsl as gd
    >>> from exporters.onnx import export, run
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.int16, ("n",))})
    >>> g.output(g.inputs[0] * 3, g.inputs[0] / 2)
    >>> run(g, {"x": np.array([1, -2], np.int16)})  # a Graph: exported on first use
    [array([ 3, -6], dtype=int16), array([ 0.5, -1. ], dtype=float32)]
    >>> run(export(g), [np.array([7], np.int16)], threads=1)  # a ModelProto, inputs in order
    [array([21], dtype=int16), array([3.5], dtype=float32)]
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
                # a graphdsl.max Graph: the graphdsl graph underneath (inputs are symbols)
                arrays, _ = bind_inputs(getattr(model, "core_graph", model), inputs)
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
