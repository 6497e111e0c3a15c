"""MAX's normalizations, convolutions, pooling and resizing (``graphdsl.max.ops``)."""

from __future__ import annotations

from collections.abc import Iterable

import graphdsl.ops as gd
from graphdsl.max._common import (
    DimLike,
    TensorValueLike,
    _arg,
    _dims,
    _layout,
    _only,
)
from graphdsl.max._types import (
    ConvInputLayout,
    FilterLayout,
    InterpolationMode,
)
from graphdsl.max._value import TensorValue, maxop
from graphdsl.max._value import tv as _tv

# ---------------------------------------------------------------------------- nn


@maxop("layer_norm")
def layer_norm(
    input: TensorValue, gamma: TensorValueLike, beta: TensorValueLike, epsilon: float
) -> TensorValue:
    """Layer normalization over the last axis (graphdsl's ``layer_norm``)."""
    return _tv(gd.layer_norm(_arg(input), _arg(gamma), _arg(beta), epsilon))


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
    """2-D convolution (graphdsl's ``conv2d``)."""
    return _tv(gd.conv2d(_arg(x), _arg(filter), stride, dilation, padding, groups, _arg(bias),
                         _layout(input_layout), _layout(filter_layout)))  # fmt: skip


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
    return _tv(gd.conv2d_transpose(_arg(x), _arg(filter), stride, dilation, padding,
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
    """Resizes the H and W of an NCHW input to ``shape`` (graphdsl's ``resize``)."""
    mode = InterpolationMode(interpolation)
    return _tv(gd.resize(_arg(input), _dims(shape, "resize"), mode.value))


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
    return _tv(gd.resize(_arg(input), _dims(size, "resize_linear"), "bilinear"))


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
    return _tv(gd.resize(_arg(input), _dims(size, "resize_bicubic"), "bicubic"))
