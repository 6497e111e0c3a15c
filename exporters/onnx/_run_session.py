"""The onnxruntime session run() keeps for one model as it was, and what it checks per call:
the inputs' dtypes and shapes (a model not built from a Graph), the outputs' declared shapes,
bfloat16 and float8 through raw OrtValues; and reading a model file for it."""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import ModelProto

from exporters.onnx._carried import carried_io
from exporters.onnx._export import DATA_FOLDER
from exporters.onnx._files import external_data_problem, writes
from exporters.onnx._run_errors import RunError
from exporters.onnx._run_options import Options
from exporters.onnx._skeleton import read_skeleton
from exporters.onnx._types import onnx_type, storage
from graphdsl.dtypes import DType
from graphdsl.inputs import InputError, match_names
from graphdsl.shapes import bind_dim

__all__: list[str] = []  # run() and Session use it through exporters.onnx._run

_RAW: dict[int, tuple[type, DType]] = {  # onnx types numpy cannot hand to onnxruntime
    onnx.TensorProto.BFLOAT16: (np.uint16, DType.bfloat16),
    onnx.TensorProto.FLOAT8E4M3FN: (np.uint8, DType.float8_e4m3fn),
    onnx.TensorProto.FLOAT8E5M2: (np.uint8, DType.float8_e5m2),
    onnx.TensorProto.FLOAT8E4M3FNUZ: (np.uint8, DType.float8_e4m3fnuz),
    onnx.TensorProto.FLOAT8E5M2FNUZ: (np.uint8, DType.float8_e5m2fnuz),
}
_NP_OF_ONNX = {  # for checking inputs of models not built from a Graph
    t: np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t))
    for t in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13)
}

# run options that keep onnxruntime from logging a failing node to stderr: the RunError says it
_QUIET = ort.RunOptions()
_QUIET.log_severity_level = 4


class _Session:
    """An onnxruntime session and what run() checks per call, for one model as it was.

    ``source`` is what the session was made from: a ModelProto's serialization if it is
    small (serializing and comparing bytes: 0.5 us for a tiny model) or else a copy of it
    (message equality runs at memcmp speed: 0.7 ms for 16 MB of weights), the stamps of the
    model file and its data files for a path (with the number of times this process exported
    to it: file timestamps are too coarse to tell two quick exports apart), or None for a
    Graph (frozen once exported).
    :meth:`current` says whether the model is still that. ``sess`` is the onnxruntime
    session made from it (``exporters.onnx._run``'s ``_new_session``), ``proto`` the model
    as read.
    """

    def __init__(
        self,
        sess: Any,
        proto: ModelProto,
        opts: Options,
        source: bytes | ModelProto | tuple[tuple[str, tuple[int, ...]], ...] | None = None,
        written: int = 0,
    ) -> None:
        self.source = source
        self.written = written
        self.proto = proto
        self.opts = opts
        self.sess = sess
        self.inputs = self.sess.get_inputs()
        self.names = [i.name for i in self.inputs]
        self.output_names = [o.name for o in self.sess.get_outputs()]
        types = _io_types(proto)
        self.raw_in = {n: _RAW[t] for n, t in types[0].items() if t in _RAW}
        self.raw_out = [_RAW.get(types[1].get(n, 0)) for n in self.output_names]
        # dtypes carried in a wider ONNX type (exporters/onnx/_carried.py): converted here
        carried_in, carried_out = carried_io({e.key: e.value for e in proto.metadata_props})
        self.carried_in = carried_in
        self.carried_out = [carried_out.get(n) for n in self.output_names]
        self.in_types = types[0]
        self.in_shapes = {i.name: i.shape for i in self.inputs}
        # (name, numpy dtype, dims) for the per-call fast check
        self.spec = [(n, self.want_np(n), tuple(self.in_shapes[n])) for n in self.names]
        # inputs with a derived dimension (past+seq): fast_feeds checks it against its names
        self.derived = any(isinstance(d, str) and not d.isidentifier()
                           for _, _, dims in self.spec for d in dims)  # fmt: skip
        self.plain = (
            not self.raw_in
            and not any(self.raw_out)
            and not carried_in
            and not any(self.carried_out)
        )
        # the declared output dims: ints, dimension names (bound by the inputs) or None
        self.out_dims = [tuple(o.shape) for o in self.sess.get_outputs()]
        self.symbolic_out = any(isinstance(d, str) for dims in self.out_dims for d in dims)

    def want_np(self, name: str) -> np.dtype[Any] | None:
        """The numpy dtype input ``name`` takes (None: one numpy lacks)."""
        if name in self.carried_in:
            return self.carried_in[name].np
        if name in self.raw_in:
            return self.raw_in[name][1].np
        return _NP_OF_ONNX.get(self.in_types[name])

    def uncarry(self, outs: list[np.ndarray]) -> list[np.ndarray]:
        """Outputs of carried dtypes as arrays of those dtypes (exact: each carrier value is
        one of the dtype's)."""
        if not any(self.carried_out):
            return outs
        return [o if d is None else np.asarray(o).astype(d.np)
                for o, d in zip(outs, self.carried_out, strict=True)]  # fmt: skip

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
        if self.derived and _derived_mismatch(bound) is not None:
            return None
        return inputs

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if self.carried_in:
            arrays = [a.astype(storage(self.carried_in[n]).np) if n in self.carried_in else a
                      for n, a in zip(self.names, arrays, strict=True)]  # fmt: skip
        return self.uncarry(self._call(arrays))

    def _call(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
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
        want = sess.want_np(name)
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
    check_derived({d: n for d, (n, _) in bound.items()}, {d: i for d, (_, i) in bound.items()})
    return out


def check_derived(sizes: Mapping[str, int], first: Mapping[str, str]) -> None:
    """Raise unless each derived dimension of the inputs (``past+seq``, ``n*2``) has the size
    its names' sizes make (``sizes``: every dimension's size, bound by the input ``first``
    names). onnxruntime checks none of them: a mismatch would fail deep in the model, or
    compute on."""
    bad = _derived_mismatch(sizes)
    if bad is not None:
        d, n, want = bad
        plain = {k: v for k, v in sizes.items() if k.isidentifier()}
        names = sorted(set(re.findall(r"[A-Za-z_]\w*", d)) & set(plain))
        said = " and ".join(f"{k} = {plain[k]}" for k in names)
        raise RunError(
            f"input {first[d]!r}: dimension {d!r} is {n}, but the inputs bind {said}, which "
            f"make it {want}; give that axis {want} elements (inputs sharing dimension names "
            "must agree)"
        )


def _derived_mismatch(sizes: Mapping[str, int]) -> tuple[str, int, int] | None:
    """The first derived dimension of ``sizes`` (every dimension's size, by name) whose
    size is not the one its names' sizes make: (dimension, size, size wanted), or None."""
    plain = {d: n for d, n in sizes.items() if d.isidentifier()}
    for d, n in sizes.items():
        want = None if d.isidentifier() else bind_dim(d, plain)
        if want is not None and want != n:
            return d, n, want
    return None
