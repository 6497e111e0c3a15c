"""MAX's ops that graphdsl.max adds over graphdsl's new op families (``graphdsl.max.ops``):
``bottom_k``, the combining scatters, ``nonzero``, ``fold``, ``roi_align``, ``rebind``,
``print``, ``hann_window``, ``irfft`` and ``as_interleaved_complex``.

``hann_window`` is a constant (its length is a Python int). ``irfft`` is a product with a
real basis (``Re X @ C + Im X @ S``, the Hermitian inverse transform numpy's ``irfft``
computes) computed in the graph, exported as two MatMuls. ``print`` is a no-op: a graphdsl
graph has no side effects (output the value and print what ``evaluate`` or ``run``
return).
"""

from __future__ import annotations

import builtins
import enum
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.dtypes import DType as CoreDType
from graphdsl.graph import Symbol
from graphdsl.max._common import (
    DimLike,
    TensorValueLike,
    _arg,
    _rank,
    _scatter_words,
    _value,
)
from graphdsl.max._dim import Dim, StaticDim
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._elementwise import _k_at_least_0
from graphdsl.max._errors import UnsupportedError, max_words
from graphdsl.max._types import DeviceRef
from graphdsl.max._value import HOOKS, TensorValue, current_graph, maxop, note_effect
from graphdsl.max._value import tv as _tv
from graphdsl.types import OpTypeError

# ---------------------------------------------------------------------------- selection


@maxop("bottom_k")
def bottom_k(input: TensorValueLike, k: int, axis: int = -1) -> tuple[TensorValue, TensorValue]:
    """The ``k`` smallest values along ``axis`` and their indices, smallest first
    (graphdsl's ``bottom_k``: one ONNX TopK with ``largest=0``)."""
    _k_at_least_0(input, k, axis)
    values, indices = gd.bottom_k(_arg(input), k, axis)
    return _tv(values), _tv(indices)


# ---------------------------------------------------------------------------- scatters


def _scatter(name: str, elements: bool) -> Any:
    fn = getattr(gd, name)
    if elements:

        def op(
            input: TensorValueLike,
            updates: TensorValueLike,
            indices: TensorValueLike,
            axis: int = -1,
        ) -> TensorValue:
            with max_words(_scatter_words(input, updates, axis, indices)):
                return _tv(fn(_arg(input), _arg(updates), _arg(indices), axis))

    else:

        def op(  # type: ignore[misc]
            input: TensorValueLike, updates: TensorValueLike, indices: TensorValueLike
        ) -> TensorValue:
            with max_words(_scatter_words(input, updates, None, indices, nd=True)):
                return _tv(fn(_arg(input), _arg(updates), _arg(indices)))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"graphdsl's ``{name}`` (ONNX Scatter{'Elements' if elements else 'ND'} with a reduction)."
    )
    return maxop(name)(op)


scatter_max = _scatter("scatter_max", True)
scatter_min = _scatter("scatter_min", True)
scatter_mul = _scatter("scatter_mul", True)
scatter_nd_max = _scatter("scatter_nd_max", False)
scatter_nd_min = _scatter("scatter_nd_min", False)
scatter_nd_mul = _scatter("scatter_nd_mul", False)


# ---------------------------------------------------------------------------- sizes at run time


@maxop("nonzero")
def nonzero(x: TensorValueLike, out_dim: DimLike) -> TensorValue:
    """The indices (int64, ``(out_dim, rank)``) of the non-zero elements, ``out_dim`` their
    count when the model runs (graphdsl's ``nonzero``: ONNX NonZero)."""
    with max_words("Scalar inputs not supported" if _rank(x) == 0 else None):
        return _tv(gd.nonzero(_arg(x), dim_to_core(out_dim)))


@maxop("rebind")
def rebind(
    x: TensorValueLike, shape: Iterable[DimLike], message: str = "", layout: object = None
) -> TensorValue:
    """``x`` with ``shape`` (same rank), its static dimensions checked when the model runs
    (graphdsl's ``rebind``)."""
    return _tv(gd.rebind(_arg(x), [dim_to_core(d) for d in shape], message))


def print(value: str | TensorValue, label: str = "debug_tensor") -> None:
    """MAX's debug print: a no-op in graphdsl, whose graphs have no side effects (output the
    value, and print what graphdsl.evaluate or exporters.onnx.run return)."""
    if not isinstance(value, (str, TensorValue)) or isinstance(value, Dim):
        raise TypeError(f"print takes a str or a TensorValue, got {value!r}")
    note_effect(value.device if isinstance(value, TensorValue) else DeviceRef.CPU())


HOOKS["print"] = print


@maxop("masked_scatter")
def masked_scatter(
    input: TensorValueLike, mask: TensorValueLike, updates: TensorValueLike, out_dim: DimLike
) -> TensorValue:
    """``input`` with the places where ``mask`` (bool, broadcast to ``input``) holds filled,
    in row-major order, with the elements of ``updates`` one after another (MAX's and
    PyTorch's ``masked_scatter``). Built without a data-dependent size: each masked place
    takes the update at its running count (``cumsum`` of the mask), others keep
    ``input``'s value; ``out_dim`` (MAX's name for the count) is accepted."""
    x, m, u = (_value(v, "masked_scatter") for v in (input, mask, updates))
    if m.dtype.name != "bool":
        raise OpTypeError(f"masked_scatter: the mask must be bool, got {m.type}")
    if m.shape != x.shape:
        m = gd.broadcast_to(m, x.shape)
    flat_u = gd.reshape(u, [-1])
    n = flat_u.shape[0]
    if not isinstance(n, int):
        raise UnsupportedError("masked_scatter: graphdsl needs updates of a static size")
    if n == 0:
        return _tv(x)
    flat_m = gd.reshape(m, [-1])
    count = gd.cumsum(gd.cast(flat_m, CoreDType.int64))
    at = gd.minimum(gd.maximum(gd.sub(count, 1), 0), n - 1)
    filled = gd.where(flat_m, gd.gather(flat_u, at, axis=0), gd.reshape(x, [-1]))
    return _tv(gd.reshape(filled, list(x.shape)))


# ---------------------------------------------------------------------------- images


@maxop("fold")
def fold(
    input: TensorValueLike,
    output_size: tuple[DimLike, DimLike],
    kernel_size: tuple[DimLike, DimLike],
    stride: int | tuple[int, int] = 1,
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
) -> TensorValue:
    """Sliding blocks summed into an image (col2im; graphdsl's ``fold``: ONNX Col2Im)."""
    size = [int(dim_to_core(d)) for d in output_size]
    kernel = [int(dim_to_core(d)) for d in kernel_size]
    value, words = _arg(input), None
    if isinstance(value, Symbol) and value.rank == 2:  # (MAX checks dim 1 before the rank)
        d = value.shape[1]
        if isinstance(d, int) and d % math.prod(kernel):
            words = (
                f"Dim 1 of the input tensor ({d}) must be a multiple of the product of the total "
                f"kernel size ({kernel[0]} * {kernel[1]})."
            )
    with max_words(words):
        return _tv(gd.fold(value, size, kernel, stride, dilation, padding))


@maxop("roi_align")
def roi_align(
    input: TensorValueLike,
    rois: TensorValueLike,
    output_height: int,
    output_width: int,
    spatial_scale: float = 1.0,
    sampling_ratio: float = 0.0,
    aligned: bool = False,
    mode: str = "AVG",
) -> TensorValue:
    """Region-of-interest pooling of an NHWC input (graphdsl's ``roi_align``: ONNX
    RoiAlign)."""
    if mode not in ("AVG", "MAX"):
        raise ValueError(f"roi_align mode must be 'AVG' or 'MAX', got {mode!r}")
    words = None
    if _rank(input) not in (None, 4):
        words = "roi_align: input must be a rank-4 tensor (NHWC)"
    elif _rank(rois) not in (None, 2):
        words = "roi_align: rois must be a rank-2 tensor of shape [M, 5]"
    with max_words(words):
        return _tv(gd.roi_align(_arg(input), _arg(rois), output_height, output_width,
                                spatial_scale, int(sampling_ratio), aligned, mode))  # fmt: skip


# ---------------------------------------------------------------------------- signals


@maxop("hann_window")
def hann_window(
    window_length: int,
    device: DeviceRef,
    periodic: bool = True,
    dtype: DType = DType.float32,
) -> TensorValue:
    """The Hann window of ``window_length`` values, ``0.5 - 0.5 cos(2 pi k / N)`` with ``N``
    the length (``periodic``) or the length - 1, computed in float64 and rounded to
    ``dtype`` (a constant)."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(
            f"window_length must be an integer, got {type(window_length).__name__}"
        )
    if window_length < 0:
        raise ValueError("window_length must be non-negative")
    core = dtype_to_core(dtype)
    if not core.is_float:
        raise ValueError(f"Unsafe cast: Can't promote python float to dtype({dtype}).")
    n = window_length if periodic else window_length - 1
    if window_length == 1:
        values = np.ones(1)
    else:
        values = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(window_length) / max(n, 1))
    return _tv(current_graph().constant(values.astype(core.np), core), device)


class Normalization(enum.Enum):
    """The normalization of ``irfft``, as MAX's: backward divides by n, ortho by sqrt(n),
    forward not at all."""

    BACKWARD = "backward"
    ORTHO = "ortho"
    FORWARD = "forward"


@maxop("irfft")
def irfft(
    input_tensor: TensorValueLike,
    n: int | None = None,
    axis: int = -1,
    normalization: Normalization | str = Normalization.BACKWARD,
    input_is_complex: bool = False,
    buffer_size_mb: int = 512,
) -> TensorValue:
    """The inverse real FFT along ``axis`` (numpy's ``irfft``), as MAX's: float32 input, real
    (imaginary parts 0) or interleaved complex (a last axis of 2); truncated or zero-padded
    to ``n // 2 + 1`` values; ``n`` values out (default ``2 * (m - 1)``). A product with a
    basis computed in the graph (ONNX MatMul), within float32 rounding of numpy's."""
    x = _tv(_value(input_tensor, "irfft"))
    if x.dtype != DType.float32:
        raise ValueError(f"Input tensor must be of type float32, got {x.dtype}.")
    if input_is_complex and x.shape[-1] != StaticDim(2):
        raise ValueError(
            "Input tensor is marked as complex, but last dimension is not 2. Got input shape "
            f"{list(x.shape)}."
        )
    rank = x.rank - 1 if input_is_complex else x.rank
    ax = axis % rank
    if input_is_complex:
        re, im = x[..., 0], x[..., 1]
    else:
        re, im = x, None
    if ax != rank - 1:
        re = re.transpose(ax, rank - 1)
        im = None if im is None else im.transpose(ax, rank - 1)
    m = int(re.shape[-1])
    size = n or 2 * (m - 1)
    keep = size // 2 + 1
    norm = Normalization(normalization.value if isinstance(normalization, Normalization)
                         else normalization)  # fmt: skip
    scale = {Normalization.BACKWARD: 1 / size, Normalization.ORTHO: 1 / math.sqrt(size),
             Normalization.FORWARD: 1.0}[norm]  # fmt: skip
    rows = builtins.min(m, keep)
    graph = current_graph()
    with graph:
        cos, sin = _irfft_basis(graph, rows, size, scale)
    y = gd.matmul(_slice_last(re, rows).symbol, cos)
    if im is not None:
        y = gd.add(y, gd.matmul(_slice_last(im, rows).symbol, sin))
    out = _tv(y)
    return out if ax == rank - 1 else out.transpose(ax, rank - 1)


def _irfft_basis(graph: Any, rows: int, size: int, scale: float) -> tuple[Symbol, Symbol]:
    """irfft's real basis, (rows, size) float32, computed in the graph (it is as large as the
    input's last axis times the output's): ``w_k cos(2 pi k t / size)`` and ``-w_k sin(...)``
    with ``w_k`` 1 (k = 0, and k = size / 2 for an even size) or 2, times ``scale``; the angle
    in float64 as numpy computes ``2 * pi * k * t / size``, rounded once to float32."""
    f64 = CoreDType.float64

    def number(v: float) -> Symbol:
        made: Symbol = graph.constant(np.asarray(v, np.float64))
        return made

    k = gd.range(0, rows, dtype=CoreDType.int64)
    t = gd.cast(gd.range(0, size, dtype=CoreDType.int64), f64)
    once = gd.equal(k, 0)
    if size % 2 == 0:
        once = gd.logical_or(once, gd.equal(k, size // 2))
    once = gd.reshape(once, [rows, 1])
    angle = gd.mul(gd.mul(number(2 * np.pi), gd.reshape(gd.cast(k, f64), [rows, 1])),
                   gd.reshape(t, [1, size]))  # fmt: skip
    angle = gd.div(angle, number(size))
    basis = []
    for fn, sign in ((gd.cos, 1.0), (gd.sin, -1.0)):
        weight = gd.where(once, number(sign * scale), number(sign * 2.0 * scale))
        basis.append(gd.cast(gd.mul(weight, fn(angle)), CoreDType.float32))
    return basis[0], basis[1]


def _slice_last(v: TensorValue, m: int) -> TensorValue:
    return v if int(v.shape[-1]) == m else v[..., :m]


# ---------------------------------------------------------------------------- complex


@maxop("as_interleaved_complex")
def as_interleaved_complex(x: TensorValueLike) -> TensorValue:
    """The last axis (of even size) as pairs (real, imaginary): ``[..., n]`` to
    ``[..., n // 2, 2]``."""
    v = _tv(_value(x, "as_interleaved_complex"))
    last = v.shape[-1]
    if not isinstance(last, StaticDim):
        raise TypeError(
            f"The last dimension must be static, got {last!r} (graphdsl: its pairs are "
            "split at a known size)"
        )
    if int(last) % 2:
        raise ValueError("The last dimension must be divisible by 2.")
    dims: Sequence[Any] = [*(dim_to_core(d) for d in v.shape[:-1]), int(last) // 2, 2]
    return _tv(gd.reshape(v.symbol, list(dims)))


@maxop("complex_mul")
def complex_mul(lhs: TensorValueLike, rhs: TensorValueLike) -> TensorValue:
    """The product of interleaved complex values (a last axis of 2: real, imaginary)."""
    a, b = _tv(_value(lhs, "mul")), _tv(_value(rhs, "mul"))
    for side, t in (("lhs", a), ("rhs", b)):
        if t.rank == 0 or t.shape[-1] != Dim(2):
            raise ValueError(
                f"complex.mul: {side} {t.type} is not complex: its last dimension must be 2 "
                "(real, imaginary); make one with ops.as_interleaved_complex"
            )
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    re = ar * br - ai * bi
    im = ar * bi + ai * br
    return _tv(gd.stack([re.symbol, im.symbol], -1))
