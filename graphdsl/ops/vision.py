"""Vision ops for convolutional networks: conv2d, conv3d, conv2d_transpose, max_pool2d,
avg_pool2d, pad and resize, with MAX's names, signatures and defaults.

Layouts. The public functions take MAX's layouts: channels last by default (NHWC input,
RSCF filter: kernel height, kernel width, input channels / groups, output channels), and
``input_layout="NCHW"`` for PyTorch's and ONNX's channels-first input, whose filter then
follows it (FCRS, PyTorch's OIHW) unless ``filter_layout`` says otherwise. The ops they
build compute channels first (the layout ONNX's operators take): a channels-last value goes
through a ``transpose`` node on the way in and on the way out, a numpy filter is transposed
as it becomes a constant, and a value that a ``transpose`` made channels last from a
channels-first one is read from before that transpose, so consecutive channels-last ops
pay one transpose in and one out (the ones between are dead and dropped before export).
``resize`` is NCHW, as MAX's is.

Types. Convolution operands (x, filter, bias) promote together under the graph's policy
and must be floating: MAX's convolution kernels are floating-point only, so an integer
convolution is an error (cast first) rather than a silent change of dtype. ``avg_pool2d``
is a windowed ``mean``: floating dtypes are kept, integers and bool give the policy's
default float. ``max_pool2d`` keeps any real dtype or bool; ``pad`` and nearest ``resize``
keep any dtype; bilinear and bicubic ``resize`` are floating (integers: default float).

Numerics. The references compute convolutions, average pools and interpolations in
float64 and round once to the result's dtype (float16/bfloat16 operands are exact in
float64 too); a backend that accumulates in float32, in another order, is within
n * eps * sum|terms| of them (the tolerance the tests use). Max pooling pads with -inf
(the dtype's lowest value for integers), propagates NaN and orders -0.0 < +0.0 as the
``max`` reduction does. Sizes follow PyTorch: floor((n + pads - dilation*(k-1) - 1) /
stride) + 1, and in ``ceil_mode`` the ceiling, less a last window that would start in the
right padding. Symbolic batch dimensions are allowed, and symbolic spatial ones where the
size is >= 0 for every input size (padding of at least dilation * (kernel - 1) in all, as
'same' padding and PyTorch's usual kernel // 2 on each side give): strided, the size is a
floor division, ``'(h+-1)//(2)+1'`` for a 3x3 window with stride 2 and padding 1, which
run() binds and checks like any other.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np

from graphdsl.ops._define import FLOAT, Operand, Symbol, define, need, op, promote
from graphdsl.ops._vision_args import (
    channels_last,
    filter_last,
    int_args,
    kernel_last_filter,
    static_dims,
    symbol_arg,
    to_first,
    to_last,
    window_dim,
)
from graphdsl.ops._windows import window_size, windows
from graphdsl.ops.pooling import avg_pool2d, max_pool2d, pad, resize
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, format_shape
from graphdsl.types import TensorType

__all__ = [
    "avg_pool2d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "max_pool2d",
    "pad",
    "resize",
]

# ---------------------------------------------------------------------------- convolution


def conv2d(
    x: Operand,
    filter: Operand,
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    groups: int = 1,
    bias: Operand | None = None,
    input_layout: str = "NHWC",
    filter_layout: str | None = None,
) -> Symbol:
    """2-D convolution (cross-correlation, as every framework computes it), as MAX's
    ``conv2d``: x is NHWC, the filter RSCF (kh, kw, in_channels / groups, out_channels),
    the optional bias (out_channels,); ``padding`` is (top, bottom, left, right) of zeros;
    ``groups`` splits the channels into independent convolutions.
    ``input_layout="NCHW"`` takes PyTorch's layout, with an FCRS (OIHW) filter unless
    ``filter_layout`` is given. Operands promote together and must be floating; the sum is
    computed in float64 and rounded once.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("conv2d", input_types={"x": gd.TensorType(gd.float32, ("batch", 3, 3, 1))})
    >>> x, = g.inputs
    >>> w = np.ones((2, 2, 1, 1), np.float32)  # a 2x2 filter of ones: window sums
    >>> z = gd.ops.conv2d(x, w, padding=(0, 1, 0, 1))
    >>> z.type
    TensorType(float32[batch, 3, 3, 1])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)})[0][0, :, :, 0]
    array([[ 8., 12.,  7.],
           [20., 24., 13.],
           [13., 15.,  8.]], dtype=float32)
    """
    return _conv("conv2d", 2, x, filter, bias, input_layout, filter_layout, stride=stride,
                 dilation=dilation, padding=padding, groups=groups)  # fmt: skip


def conv3d(
    x: Operand,
    filter: Operand,
    stride: tuple[int, int, int] = (1, 1, 1),
    dilation: tuple[int, int, int] = (1, 1, 1),
    padding: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0),
    groups: int = 1,
    bias: Operand | None = None,
    input_layout: str = "NDHWC",
    filter_layout: str | None = None,
) -> Symbol:
    """3-D convolution, as MAX's ``conv3d``: x is NDHWC, the filter QRSCF (kd, kh, kw,
    in_channels / groups, out_channels); ``padding`` is (front, back, top, bottom, left,
    right). ``input_layout="NCDHW"`` takes PyTorch's layout with an FCQRS (OIDHW) filter.
    Otherwise as :func:`conv2d`.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("conv3d", input_types={"x": gd.TensorType(gd.float64, (1, 2, 2, 2, 1))})
    >>> x, = g.inputs
    >>> z = gd.ops.conv3d(x, np.ones((2, 2, 2, 1, 3)), bias=np.array([0.0, 1.0, 2.0]))
    >>> z.type
    TensorType(float64[1, 1, 1, 1, 3])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.arange(8.0).reshape(1, 2, 2, 2, 1)})[0].ravel()
    array([28., 29., 30.])
    """
    return _conv("conv3d", 3, x, filter, bias, input_layout, filter_layout, stride=stride,
                 dilation=dilation, padding=padding, groups=groups)  # fmt: skip


def conv2d_transpose(
    x: Operand,
    filter: Operand,
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    output_paddings: tuple[int, int] = (0, 0),
    bias: Operand | None = None,
    input_layout: str = "NHWC",
    filter_layout: str | None = None,
) -> Symbol:
    """Transposed 2-D convolution (the gradient of :func:`conv2d` with respect to its
    input), as MAX's ``conv2d_transpose``: each input element adds its value times the
    filter to the output at (i * stride + j * dilation); ``padding`` (top, bottom, left,
    right) crops the result, ``output_paddings`` (each < stride) adds rows and columns at
    the end. x is NHWC, the filter RSCF: (kh, kw, out_channels, in_channels);
    ``input_layout="NCHW"`` takes PyTorch's layout with its (in_channels, out_channels,
    kh, kw) filter. Output size: (n - 1) * stride - top - bottom + dilation * (k - 1) +
    output_padding + 1.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("convt", input_types={"x": gd.TensorType(gd.float32, (1, 2, 2, 1))})
    >>> x, = g.inputs
    >>> z = gd.ops.conv2d_transpose(x, np.ones((2, 2, 1, 1), np.float32), stride=(2, 2))
    >>> z.type
    TensorType(float32[1, 4, 4, 1])
    >>> g.output(z)
    >>> gd.evaluate(g, {"x": np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)})[0][0, :, :, 0]
    array([[1., 1., 2., 2.],
           [1., 1., 2., 2.],
           [3., 3., 4., 4.],
           [3., 3., 4., 4.]], dtype=float32)
    """
    return _conv("conv2d_transpose", 2, x, filter, bias, input_layout, filter_layout,
                 stride=stride, dilation=dilation, padding=padding,
                 output_paddings=output_paddings)  # fmt: skip


def _conv(
    name: str, nd: int, x: Operand, filter: Operand, bias: Operand | None, input_layout: str,
    filter_layout: str | None, **attrs: Any,
) -> Symbol:  # fmt: skip
    last = channels_last(input_layout, nd)
    xs = symbol_arg(x, "x")
    xf = to_first(xs, nd + 2, last, "the input x")
    f = kernel_last_filter(filter, nd, filter_last(filter_layout, nd, last))
    operands = (xf, f) if bias is None else (xf, f, bias)
    try:
        r = op(name, *operands, **attrs)
    except ShapeError as e:
        hint = _layout_hint(xs, f, last, nd, name, attrs)
        if hint is None:
            raise
        raise ShapeError(f"{e}; {hint}") from None
    return to_last(r, last)


def _layout_hint(
    x: Symbol, f: Operand, last: bool, nd: int, name: str, attrs: dict[str, Any]
) -> str | None:
    """Where x's channels do not match the filter's in the layout given but would in the
    other one, the layout to name (a PyTorch NCHW value given to the NHWC default)."""
    shape = f.shape if isinstance(f, Symbol) else np.shape(f)
    if len(shape) != nd + 2 or not isinstance(shape[0], int) or not isinstance(shape[1], int):
        return None
    groups = attrs.get("groups", 1)
    wanted = shape[0] if name == "conv2d_transpose" else shape[1] * (
        groups if isinstance(groups, int) else 1)  # fmt: skip
    given, other = (x.shape[-1], x.shape[1]) if last else (x.shape[1], x.shape[-1])
    if given == wanted or other != wanted:
        return None
    if last:
        layout = "NCHW" if nd == 2 else "NCDHW"
        return (
            f"x's axis 1 has the filter's {wanted} input channels: if x is channels first "
            f"(PyTorch's layout), pass input_layout={layout!r} (the filter then follows it: "
            "FCRS, PyTorch's OIHW, unless filter_layout= says otherwise)"
        )
    layout = "NHWC" if nd == 2 else "NDHWC"
    return (
        f"x's last axis has the filter's {wanted} input channels: if x is channels last, "
        f"pass input_layout={layout!r} (MAX's default; the filter then follows it: RSCF)"
    )


def _conv_rule(nd: int, transpose: bool) -> Any:
    """x (N, C, *spatial); filter (F, C / groups, *K), or (C, F, *K) when ``transpose``."""

    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        c = promote(p, types)
        need(FLOAT, c, types, p)
        x, f = types[0], types[1]
        stride = int_args(attrs.get("stride"), nd, "stride", 1)
        dilation = int_args(attrs.get("dilation"), nd, "dilation", 1)
        padding = int_args(attrs.get("padding"), 2 * nd, "padding", 0)
        attrs.update(stride=stride, dilation=dilation, padding=padding)
        if transpose:
            groups = 1
            out_pad = attrs["output_paddings"] = int_args(
                attrs.get("output_paddings"), nd, "output_paddings", 0)  # fmt: skip
        else:
            groups = attrs["groups"] = int_args(attrs.get("groups"), 1, "groups", 1)[0]
            out_pad = (0,) * nd
        fdims = static_dims(f.shape, "the filter's shape")
        kernel = fdims[2:]
        f_out, f_in = fdims[1::-1] if transpose else fdims[:2]
        channels = x.shape[1]
        if not isinstance(channels, int):
            raise ShapeError(
                f"the channel dimension of x must be static, got {format_shape(x.shape)}; "
                "give the input a concrete number of channels"
            )
        if f_out % groups or channels % groups or channels // groups != f_in:
            raise ShapeError(
                f"channels: x has {channels} input channels; the filter {format_shape(f.shape)} "
                f"takes {f_in} per group and gives {f_out}, with groups={groups}: x's "
                "channels must be groups * the filter's input channels, and groups must "
                "divide the output channels"
            )
        if any(o >= s for o, s in zip(out_pad, stride, strict=True)):
            raise ShapeError(
                f"output_paddings {out_pad} must each be smaller than the stride {stride}"
            )
        if len(types) == 3 and types[2].shape != (f_out,):
            raise ShapeError(
                f"the bias must have shape ({f_out},) (one value per output channel), got "
                f"{types[2]}"
            )
        axes = "DHW"[3 - nd :]
        spatial = tuple(
            window_dim(d, k, s, dl, padding[2 * i], padding[2 * i + 1] - out_pad[i],
                        axes[i], transpose)
            for i, (d, k, s, dl) in enumerate(zip(x.shape[2:], kernel, stride, dilation,
                                                  strict=True))
        )  # fmt: skip
        out = TensorType(c.dtype, (x.shape[0], f_out, *spatial), c.ambiguous)
        return (c.dtype,) * len(types), out

    return rule


def _with_bias(r: np.ndarray, args: list[np.ndarray]) -> np.ndarray:
    if len(args) < 3:
        return r
    return r + args[2].astype(np.float64).reshape(1, -1, *[1] * (r.ndim - 2))


def _conv_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, f = args[0].astype(np.float64), args[1].astype(np.float64)  # f: (F, C / groups, *K)
    nd, g = x.ndim - 2, attrs["groups"]
    n, c, fo = x.shape[0], x.shape[1], f.shape[0]
    pads = attrs["padding"]
    ks, strides, dils = f.shape[2:], attrs["stride"], attrs["dilation"]
    outs = [window_size(x.shape[2 + i], ks[i], strides[i], dils[i], pads[2 * i], pads[2 * i + 1])
            for i in range(nd)]  # fmt: skip
    xp = np.pad(x, [(0, 0), (0, 0), *zip(pads[::2], pads[1::2], strict=True)])
    win = windows(xp, ks, strides, dils, outs)  # (N, C, *O, *K)
    win = win.reshape(n, g, c // g, *win.shape[2:])
    w = f.reshape(g, fo // g, c // g, *ks)
    o, k = "dhw"[3 - nd :], "ijk"[:nd]
    with np.errstate(all="ignore"):
        r = np.einsum(f"ngc{o}{k},gfc{k}->ngf{o}", win, w, optimize=False)
        return _with_bias(r.reshape(n, fo, *outs), args)


def _conv_transpose_impl(
    args: list[np.ndarray], attrs: dict[str, Any], out: TensorType
) -> np.ndarray:
    x, f = args[0].astype(np.float64), args[1].astype(np.float64)  # f: (C_in, C_out, *K)
    nd = x.ndim - 2
    ins, ks = x.shape[2:], f.shape[2:]
    strides, dils, pads = attrs["stride"], attrs["dilation"], attrs["padding"]
    # each input element i adds its value times filter tap j at i * stride + j * dilation
    full = [max((n - 1) * s + d * (k - 1) + 1, 0) + e
            for n, s, d, k, e in zip(ins, strides, dils, ks, attrs["output_paddings"],
                                     strict=True)]  # fmt: skip
    r = np.zeros((x.shape[0], f.shape[1], *full), np.float64)
    every = (slice(None), slice(None))
    with np.errstate(all="ignore"):
        for tap in product(*(range(k) for k in ks)):
            at_tap: tuple[slice | int, ...] = (*every, *tap)
            part = np.einsum("nc...,cf->nf...", x, f[at_tap])
            at: tuple[slice, ...] = (*every, *(
                slice(j * d, j * d + (n - 1) * s + 1, s)
                for j, d, n, s in zip(tap, dils, ins, strides, strict=True)))  # fmt: skip
            r[at] += part
        crop: tuple[slice, ...] = (*every, *(slice(pads[2 * i], full[i] - pads[2 * i + 1])
                                             for i in range(nd)))  # fmt: skip
        return _with_bias(r[crop], args)


_CONV_ACCEPTS = "floating (x, filter and bias promote together; integers: cast first)"
define(conv2d, _conv_rule(2, transpose=False), _conv_impl, _CONV_ACCEPTS)
define(conv3d, _conv_rule(3, transpose=False), _conv_impl, _CONV_ACCEPTS)
define(conv2d_transpose, _conv_rule(2, transpose=True), _conv_transpose_impl, _CONV_ACCEPTS)
