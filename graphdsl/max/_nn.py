"""MAX's normalizations, convolutions, pooling and resizing (``graphdsl.max.ops``)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

import numpy as np

import graphdsl.ops as gd
from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Symbol
from graphdsl.max._common import (
    DimLike,
    TensorValueLike,
    _arg,
    _dims,
    _layout,
    _only,
    _rank,
    _value,
)
from graphdsl.max._errors import UnsupportedError, max_words
from graphdsl.max._types import (
    ConvInputLayout,
    FilterLayout,
    InterpolationMode,
)
from graphdsl.max._value import TensorValue, current_graph, maxop
from graphdsl.max._value import tv as _tv

# ---------------------------------------------------------------------------- nn


@maxop("layer_norm")
def layer_norm(
    input: TensorValue, gamma: TensorValueLike, beta: TensorValueLike, epsilon: float
) -> TensorValue:
    """Layer normalization over the last axis (graphdsl's ``layer_norm``)."""
    x, g = _arg(input), _arg(gamma)
    words = None
    if isinstance(x, Symbol) and isinstance(g, Symbol) and x.rank and g.rank == 1:
        n, size = g.shape[0], x.shape[-1]
        if n != size:
            words = f"Gamma size {n} does not match dimension of reduction {size}."
    with max_words(words):
        return _tv(gd.layer_norm(x, g, _arg(beta), epsilon))


@maxop("rms_norm")
def rms_norm(
    input: TensorValueLike,
    weight: TensorValueLike,
    epsilon: float,
    weight_offset: float = 0.0,
    multiply_before_cast: bool = False,
) -> TensorValue:
    """RMS normalization over the last axis (graphdsl's ``rms_norm``)."""
    return _tv(gd.rms_norm(_arg(input), _arg(weight), epsilon, weight_offset,
                           multiply_before_cast))  # fmt: skip


@maxop("group_norm")
def group_norm(
    input: TensorValueLike,
    gamma: TensorValueLike,
    beta: TensorValueLike,
    num_groups: int,
    epsilon: float,
) -> TensorValue:
    """Group normalization (graphdsl's ``group_norm``)."""
    return _tv(gd.group_norm(_arg(input), _arg(gamma), _arg(beta), num_groups, epsilon))


@maxop("conv2d")
def conv2d(
    x: TensorValueLike,
    filter: TensorValueLike,
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    groups: int = 1,
    bias: TensorValueLike | None = None,
    input_layout: ConvInputLayout = ConvInputLayout.NHWC,
    filter_layout: FilterLayout = FilterLayout.RSCF,
) -> TensorValue:
    """2-D convolution (graphdsl's ``conv2d``). With a symbolic channel count, which
    graphdsl's ``conv2d`` refuses (its filter is static) and MAX accepts, the convolution is
    built as MAX defines it: for each kernel tap, the strided window of the (padded) input
    times that tap's ``(channels, filters)`` matrix, summed over the taps (MatMuls and Adds
    in the model; groups 1)."""
    xs = _arg(x)
    fs = _weak_array(_arg(filter), xs)
    words = None
    if _rank(xs) not in (None, 4):
        words = (
            "input to a 2-D convolution must be rank 4 with shape (batch_size, height, width, "
            "in_channels)"
        )
    symbolic = (
        isinstance(xs, Symbol)
        and isinstance(fs, Symbol)
        and any(isinstance(d, str) for d in fs.shape)
    )
    with max_words(words):
        if symbolic and groups == 1:
            return _tv(_conv2d_by_taps(xs, fs, stride, dilation, padding, _arg(bias),
                                       _layout(input_layout), _layout(filter_layout)))  # fmt: skip
        return _tv(gd.conv2d(xs, fs, stride, dilation, padding, groups, _arg(bias),
                             _layout(input_layout), _layout(filter_layout)))  # fmt: skip


def _weak_array(a: Any, like: Any) -> Any:
    """A numpy filter as max.graph takes it: a weak value, a constant of the input's dtype
    where its values convert exactly (float arrays to float dtypes, integer arrays to any);
    otherwise unchanged (graphdsl promotes it as a strong value)."""
    if not isinstance(a, np.ndarray) or not isinstance(like, Symbol):
        return a
    target = like.dtype
    if not (target.is_float or (target.is_integer and a.dtype.kind in "iub")):
        return a
    if a.dtype.kind == "f" and not target.is_float:
        return a
    with np.errstate(invalid="ignore", over="ignore"):
        converted = a.astype(target.np)
        if a.dtype.kind != "f" and not np.array_equal(converted.astype(a.dtype), a):
            return a
    return current_graph().constant(converted, target)


def _conv2d_by_taps(
    x: Symbol,
    f: Symbol,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int, int, int],
    bias: Any,
    input_layout: str,
    filter_layout: str,
) -> Symbol:
    """conv2d as a sum over kernel taps of window @ tap matrix (NHWC, RSCF inside)."""
    if input_layout == "NCHW":
        x = gd.permute(x, [0, 2, 3, 1])
    if filter_layout == "FCRS":
        f = gd.permute(f, [2, 3, 1, 0])
    elif filter_layout != "RSCF":
        raise UnsupportedError(f"conv2d: filter layout {filter_layout} with symbolic channels")
    kh, kw = f.shape[0], f.shape[1]
    h, w = x.shape[1], x.shape[2]
    if not all(isinstance(d, int) for d in (kh, kw, h, w)):
        raise UnsupportedError(
            "conv2d with symbolic channels: graphdsl needs static kernel and spatial sizes"
        )
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = stride, dilation, padding
    if any(padding):
        x = gd.pad(x, [0, 0, pt, pb, pl, pr, 0, 0])
    ho = (int(h) + pt + pb - dh * (int(kh) - 1) - 1) // sh + 1
    wo = (int(w) + pl + pr - dw * (int(kw) - 1) - 1) // sw + 1
    total: Any = None
    for a in builtins.range(int(kh)):
        for b in builtins.range(int(kw)):
            window = gd.slice_tensor(
                x,
                [
                    slice(None),
                    slice(a * dh, a * dh + sh * (ho - 1) + 1, sh),
                    slice(b * dw, b * dw + sw * (wo - 1) + 1, sw),
                ],
            )
            term = gd.matmul(window, f[a, b])
            total = term if total is None else gd.add(total, term)
    if bias is not None:
        total = gd.add(total, bias)
    return total if input_layout != "NCHW" else gd.permute(total, [0, 3, 1, 2])


@maxop("conv3d")
def conv3d(
    x: TensorValueLike,
    filter: TensorValueLike,
    stride: tuple[int, int, int] = (1, 1, 1),
    dilation: tuple[int, int, int] = (1, 1, 1),
    padding: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0),
    groups: int = 1,
    bias: TensorValueLike | None = None,
    input_layout: ConvInputLayout = ConvInputLayout.NHWC,
    filter_layout: FilterLayout = FilterLayout.QRSCF,
) -> TensorValue:
    """3-D convolution (graphdsl's ``conv3d``)."""
    return _tv(gd.conv3d(_arg(x), _arg(filter), stride, dilation, padding, groups, _arg(bias),
                         _layout(input_layout), _layout(filter_layout)))  # fmt: skip


@maxop("conv2d_transpose")
def conv2d_transpose(
    x: TensorValueLike,
    filter: TensorValueLike,
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    output_paddings: tuple[int, int] = (0, 0),
    bias: TensorValueLike | None = None,
    input_layout: ConvInputLayout = ConvInputLayout.NHWC,
    filter_layout: FilterLayout = FilterLayout.RSCF,
) -> TensorValue:
    """Transposed 2-D convolution (graphdsl's ``conv2d_transpose``)."""
    xs = _arg(x)
    return _tv(gd.conv2d_transpose(xs, _weak_array(_arg(filter), xs), stride, dilation, padding,
                                   output_paddings, _arg(bias), _layout(input_layout),
                                   _layout(filter_layout)))  # fmt: skip


@maxop("max_pool2d")
def max_pool2d(
    input: TensorValueLike,
    kernel_size: tuple[DimLike, DimLike],
    stride: int | tuple[int, int] = 1,
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    ceil_mode: bool = False,
) -> TensorValue:
    """2-D max pooling of an NHWC input (graphdsl's ``max_pool2d``)."""
    kernel = (int(kernel_size[0]), int(kernel_size[1]))
    return _tv(gd.max_pool2d(_arg(input), kernel, stride, dilation, padding, ceil_mode))


@maxop("avg_pool2d")
def avg_pool2d(
    input: TensorValueLike,
    kernel_size: tuple[DimLike, DimLike],
    stride: int | tuple[int, int] = 1,
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    ceil_mode: bool = False,
    count_boundary: bool = True,
) -> TensorValue:
    """2-D average pooling of an NHWC input (graphdsl's ``avg_pool2d``)."""
    kernel = (int(kernel_size[0]), int(kernel_size[1]))
    return _tv(gd.avg_pool2d(_arg(input), kernel, stride, dilation, padding, ceil_mode,
                             count_boundary))  # fmt: skip


@maxop("resize")
def resize(
    input: TensorValueLike,
    shape: Iterable[DimLike],
    interpolation: InterpolationMode = InterpolationMode.BILINEAR,
) -> TensorValue:
    """Resizes an NCHW input to ``shape``, any of its four axes (graphdsl's ``resize``),
    keeping the input's dtype as MAX does."""
    mode = InterpolationMode(interpolation)
    sizes = _dims(shape, "resize")
    words = None
    rank = _rank(input)
    if rank is not None and rank != 4:
        words = (
            f"Input tensor must have rank 4 (NCHW format) for resize operation, but got rank {rank}"
        )
    elif len(sizes) != 4:
        words = (
            "shape must have 4 elements for NCHW format (batch, channels, height, width), but "
            f"got {len(sizes)} elements"
        )
    with max_words(words):
        return _tv(_interpolate(_value(input, "resize"), sizes, mode.value))


def _interpolate(x: Symbol, sizes: list[Any], mode: str) -> Symbol:
    """MAX's resize keeps the dtype (measured on max 26.7's CPU, tests/data/max_graph_runtime
    .json): an integer or bool input interpolates in floats and converts back, bicubic once
    at the end (int32 [[0, 4], [9, 1]] to 4x4 is the float result truncated), bilinear after
    each axis it resizes, H before W (the same to 4x4 gives [2, 2, 2, 3] in row 1, where
    truncating the float result gives [2, 2, 3, 3]): graphdsl composes the same, in float64."""
    if mode == "nearest" or x.dtype.kind is Kind.float:
        return gd.resize(x, sizes, mode)
    if mode == "bicubic":
        return gd.cast(gd.resize(gd.cast(x, DType.float64), sizes, mode), x.dtype)
    for axis in range(4):
        if x.shape[axis] != sizes[axis]:
            step = [*x.shape[:axis], sizes[axis], *x.shape[axis + 1 :]]
            x = gd.cast(gd.resize(gd.cast(x, DType.float64), step, mode), x.dtype)
    return x


@maxop("resize_linear")
def resize_linear(
    input: TensorValueLike,
    size: Iterable[DimLike],
    coordinate_transform_mode: int = 0,
    antialias: bool = False,
) -> TensorValue:
    """Bilinear resize with half-pixel coordinates (mode 0) of an NCHW input's H and W."""
    _only("resize_linear", coordinate_transform_mode=(coordinate_transform_mode, 0),
          antialias=(antialias, False))  # fmt: skip
    return _tv(_interpolate(_value(input, "resize_linear"), _dims(size, "resize_linear"),
                            "bilinear"))  # fmt: skip


@maxop("resize_nearest")
def resize_nearest(
    input: TensorValueLike,
    size: Iterable[DimLike],
    coordinate_transform_mode: int = 0,
    round_mode: int = 0,
) -> TensorValue:
    """Nearest resize with half-pixel coordinates rounded half down (modes 0 and 0)."""
    _only("resize_nearest", coordinate_transform_mode=(coordinate_transform_mode, 0),
          round_mode=(round_mode, 0))  # fmt: skip
    return _tv(gd.resize(_arg(input), _dims(size, "resize_nearest"), "nearest"))


@maxop("resize_bicubic")
def resize_bicubic(input: TensorValueLike, size: Iterable[DimLike]) -> TensorValue:
    """Bicubic resize (Keys, a = -0.75, half-pixel) of an NCHW input's H and W."""
    return _tv(_interpolate(_value(input, "resize_bicubic"), _dims(size, "resize_bicubic"),
                            "bicubic"))  # fmt: skip
