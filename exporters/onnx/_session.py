"""``Session``: one model's onnxruntime session as run() makes it, with inputs and outputs
that may stay on the device (onnxruntime's IO binding).

``Session(model)`` holds the session :func:`run` would use for ``model`` and the same
options (the same disabled optimizers, session options, TF32 off on CUDA, errors as
:class:`RunError`). Calling it is run(): numpy in, numpy out. :meth:`Session.run_with_ortvalues`
binds its inputs and outputs instead: an input may be a numpy array, an onnxruntime
``OrtValue`` or any DLPack tensor (a PyTorch tensor, a CuPy array: anything with
``__dlpack__``), taken without a copy where it already lies where onnxruntime can read it;
the outputs are OrtValues on the provider's device (CUDA device 0 for a CUDA session, else
the CPU), themselves DLPack tensors (``torch.from_dlpack(out)``), or numpy arrays with
``outputs="numpy"``. An output fed back as the next call's input never leaves the device.

>>> import numpy as np, graphdsl as gd
>>> from exporters.onnx import Session
>>> g = gd.Graph("step", input_types={"x": gd.TensorType(gd.float32, ("n",))})
>>> g.output(g.inputs[0] * 2 + 1)
>>> s = Session(g)
>>> s({"x": np.array([1, 2], np.float32)})
[array([3., 5.], dtype=float32)]
>>> (y,) = s.run_with_ortvalues({"x": np.array([1, 2], np.float32)})
>>> (z,) = s.run_with_ortvalues([y])  # the OrtValue goes back in as it is
>>> z.numpy()
array([ 7., 11.], dtype=float32)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import onnxruntime as ort
from onnx import ModelProto

from exporters.onnx import _run
from exporters.onnx._carried import CARRIER
from exporters.onnx._run import RunError
from exporters.onnx._run_session import check_derived
from graphdsl.graph import Graph
from graphdsl.inputs import InputError, match_names

__all__ = ["Session"]

_CUDA = "CUDAExecutionProvider"
# what onnxruntime raises: its binding's exceptions, and RuntimeError from run_with_iobinding
_FAILURES: tuple[type[BaseException], ...] = (*_run._ORT_ERRORS, RuntimeError)
# run()'s quiet run options, with the GPU graph id set to its default (0): onnxruntime's
# run_with_iobinding looks the entry up, and a missing one costs ~90 us (an exception in C++)
_BOUND = ort.RunOptions()
_BOUND.log_severity_level = _run._QUIET.log_severity_level
_BOUND.add_run_config_entry("gpu_graph_id", "0")


class Session:
    """``model`` (a Graph, a ModelProto or a path) on onnxruntime, made as :func:`run` makes
    its session: ``providers`` and ``kwargs`` are run()'s (``threads=``, ``tf32=``,
    ``provider_options=``, ``session_options=``), and a Graph's default providers are
    :func:`providers_for`'s. The session is the model as it was when the Session was made
    (run() would notice a model file written again; a Session keeps what it loaded).

    ``session(inputs)`` is ``run(model, inputs)``. :meth:`run_with_ortvalues` takes and
    returns device tensors; :attr:`device` says where its outputs are bound.

    >>> import numpy as np, graphdsl as gd
    >>> from exporters.onnx import Session
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.int8, (4,))})
    >>> g.output((g.inputs[0] & 3) + 1)
    >>> session = Session(g, threads=1)
    >>> session([np.array([1, 2, 3, 4], np.int8)]), session.device
    ([array([2, 3, 4, 1], dtype=int8)], ('cpu', 0))
    """

    def __init__(
        self,
        model: Graph | ModelProto | str | os.PathLike[str],
        providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
        **kwargs: Any,
    ) -> None:
        self._model, self._sess = _run.session_of(model, providers, **kwargs)
        sess = self._sess
        self.input_names: list[str] = list(sess.names)
        self.output_names: list[str] = list(sess.output_names)
        self.providers: list[str] = list(sess.sess.get_providers())
        self.device: tuple[str, int] = _device_of(sess.opts)
        # per input: the element type as onnxruntime names it ('tensor(float)'), its dims
        self._want = [(i.name, i.type, tuple(i.shape)) for i in sess.inputs]

    @property
    def model(self) -> Graph | ModelProto | str:
        """The model the session runs, as it was given (a path as a string)."""
        return self._model

    @property
    def inference_session(self) -> Any:
        """The ``onnxruntime.InferenceSession`` (shared with run()'s cache)."""
        return self._sess.sess

    def __call__(self, inputs: Mapping[str, Any] | Sequence[Any]) -> list[np.ndarray]:
        """run(): numpy arrays (or values that convert exactly) in, numpy arrays out."""
        return _run.execute(self._sess, self._model, inputs)

    def ortvalue(self, value: Any) -> Any:
        """``value`` (a numpy array, an OrtValue or a DLPack tensor) as an OrtValue on this
        session's :attr:`device` (copied there if it is elsewhere; OrtValues and DLPack
        tensors already there are taken as they are)."""
        v = _as_ortvalue(value, "value")
        if v.device_name().lower() == self.device[0]:
            return v
        on_device = ort.OrtValue.ortvalue_from_shape_and_type(
            v.shape(), v.element_type(), self.device[0], self.device[1]
        )
        on_device.update_inplace(v)
        return on_device

    def run_binding(self, binding: Any) -> None:
        """``inference_session.run_with_iobinding(binding)`` with run()'s quiet options, a
        failure as :class:`RunError` naming the graphdsl op and line of the node that failed
        (the Generator's steps: inputs bound and checked once by their caller)."""
        try:
            self._sess.sess.run_with_iobinding(binding, _BOUND)
        except _FAILURES as e:
            what = f"onnxruntime could not run {_run._describe(self._model)}"
            raise RunError(_run._explain(what, e, self._sess.proto, self._sess.opts)) from None

    def run_with_ortvalues(
        self,
        inputs: Mapping[str, Any] | Sequence[Any],
        *,
        outputs: Literal["ortvalue", "numpy"] = "ortvalue",
        check: bool = True,
    ) -> list[Any]:
        """Run with onnxruntime's IO binding: ``inputs`` (a dict by name or a list in order)
        are numpy arrays, OrtValues or DLPack tensors (``__dlpack__``: PyTorch, CuPy, JAX),
        bound where they lie; a numpy array must have the input's dtype exactly (no
        conversions: a device tensor is never converted either), and every input's element
        type and shape are checked against the model's (dimension names bound alike) before
        onnxruntime sees them.

        ``outputs="ortvalue"`` (default): one OrtValue per output, on :attr:`device`
        (``torch.from_dlpack`` / ``cupy.from_dlpack`` take them without a copy; pass one back
        as an input and it stays there). ``outputs="numpy"``: bound to the CPU and returned
        as numpy arrays, as run() returns them. ``check``: each output's shape against the
        declared one, as run() checks it.

        A device tensor must be ready when it is passed (PyTorch: made on the current
        stream and synchronized, or onnxruntime's own output): onnxruntime reads it on its
        own stream.
        """
        if outputs not in ("ortvalue", "numpy"):
            raise ValueError(f"outputs={outputs!r}: expected 'ortvalue' or 'numpy'")
        sess = self._sess
        try:
            values = match_names("the model", self.input_names, inputs)
        except InputError as e:
            raise RunError(str(e)) from None
        binding = sess.sess.io_binding()
        shapes = []
        bound: dict[str, int] = {}
        first: dict[str, str] = {}
        for (name, want, dims), value in zip(self._want, values, strict=True):
            v = _as_ortvalue(value, name)
            shapes.append(_check_input(name, want, dims, v, bound))
            first.update({d: name for d in dims if isinstance(d, str) and d not in first})
            binding.bind_ortvalue_input(name, v)
        check_derived(bound, first)
        kind, index = ("cpu", 0) if outputs == "numpy" else self.device
        for name in self.output_names:
            binding.bind_output(name, kind, index)
        try:
            sess.sess.run_with_iobinding(binding, _BOUND)
        except _FAILURES as e:
            what = f"onnxruntime could not run {_run._describe(self._model)}"
            raise RunError(_run._explain(what, e, sess.proto, sess.opts)) from None
        outs = binding.get_outputs()
        if check:
            sess.check_shapes([tuple(o.shape()) for o in outs], shapes)
        if outputs == "numpy":
            return sess.uncarry(
                [_run._from_ortvalue(o, r) for o, r in zip(outs, sess.raw_out, strict=True)]
            )
        return list(outs)


def _device_of(opts: _run.Options) -> tuple[str, int]:
    """Where a session with ``opts`` binds its outputs: the CUDA provider's device, else the
    CPU."""
    for name, provider_options in opts.providers:
        if name == _CUDA:
            return "cuda", int(dict(provider_options).get("device_id", "0"))
    return "cpu", 0


# numpy dtypes onnxruntime takes only reinterpreted (ml_dtypes' bfloat16, float8): storage
# dtype and graphdsl DType
_RAW_BY_NP = {d.np: (store, d) for store, d in _run._RAW.values()}
_CARRIED_BY_NP = {d.np: c for d, c in CARRIER.items()}


def _as_ortvalue(value: Any, name: str) -> Any:
    """``value`` as an OrtValue without copying it: an OrtValue as it is, a numpy array
    wrapped (bfloat16 and float8 reinterpreted as their ONNX type), any other DLPack tensor
    imported (onnxruntime shares its memory)."""
    if isinstance(value, ort.OrtValue):
        return value
    if isinstance(value, np.ndarray | np.generic):
        arr = np.ascontiguousarray(value)  # keeps rank 0; copies only a strided array
        carried = _CARRIED_BY_NP.get(arr.dtype)
        if carried is not None:  # exactly into its carrier (exporters/onnx/_carried.py)
            arr = arr.astype(carried.np)
        raw = _RAW_BY_NP.get(arr.dtype)
        if raw is not None:
            return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                arr.view(raw[0]), _run._onnx_of(raw[1])
            )
        try:
            return ort.OrtValue.ortvalue_from_numpy(arr)
        except RuntimeError as e:  # a dtype onnxruntime has no type for
            raise RunError(f"input {name!r}: onnxruntime cannot take a {arr.dtype} array "
                           f"({e})") from None  # fmt: skip
    if hasattr(value, "__dlpack__"):
        try:
            return ort.OrtValue.from_dlpack(value)
        except Exception as e:  # strided, or a dtype DLPack or onnxruntime lacks
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RunError(f"input {name!r}: onnxruntime cannot import this DLPack tensor "
                           f"({first}); pass a contiguous one (PyTorch: .contiguous())"
                           ) from None  # fmt: skip
    raise RunError(f"input {name!r}: expected a numpy array, an OrtValue or a DLPack tensor, "
                   f"got {type(value).__name__}")  # fmt: skip


def _check_input(
    name: str, want: str, dims: tuple[int | str | None, ...], v: Any, bound: dict[str, int]
) -> tuple[int, ...]:
    """The shape of the OrtValue ``v`` bound to input ``name``, checked against its element
    type ``want`` ('tensor(float)') and ``dims`` (dimension names bound in ``bound``)."""
    got = v.data_type()
    if got != want:
        raise RunError(f"input {name!r}: expected {want}, got {got}")
    shape = tuple(v.shape())
    if shape == dims:
        return shape
    ok = len(shape) == len(dims)
    if ok:
        for d, n in zip(dims, shape, strict=True):
            if isinstance(d, int):
                ok = ok and d == n
            elif isinstance(d, str):
                size = bound.setdefault(d, n)
                if size != n:
                    raise RunError(f"input {name!r}: dimension {d!r} is {n}, but an earlier "
                                   f"input bound it to {size}; inputs sharing a dimension "
                                   "name must agree")  # fmt: skip
    if not ok:
        raise RunError(f"input {name!r}: expected shape {list(dims)}, got {list(shape)}")
    return shape
