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

import operator
from collections.abc import Sequence
from itertools import product
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._convert import cast_array
from graphdsl.ops._define import (
    ANY,
    FLOAT,
    REAL,
    TO_FLOAT,
    Operand,
    Symbol,
    define,
    need,
    op,
    promote,
)
from graphdsl.ops._windows import (
    INTERPOLATIONS,
    interpolation_taps,
    nearest_indices,
    pool_extra,
    pool_size,
    tap_counts,
    to_channels_first,
    to_channels_last,
    window_size,
    windows,
)
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import Dim, ShapeError, derived_dim, floordiv_dim, format_shape, sum_dims
from graphdsl.types import OpTypeError, TensorType

__all__ = [
    "avg_pool2d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "max_pool2d",
    "pad",
    "resize",
]

# accepted layout names -> (channels last?, the canonical name)
_LAYOUTS = {
    2: {"NHWC": True, "NCHW": False},
    3: {"NDHWC": True, "NCDHW": False, "NHWC": True, "NCHW": False},  # MAX's enum names too
}
_FILTER_LAYOUTS = {
    2: {"RSCF": True, "FCRS": False, "OIHW": False},
    3: {"QRSCF": True, "FCQRS": False, "OIDHW": False},
}
PAD_MODES = ("constant", "reflect", "edge")


# ---------------------------------------------------------------------------- arguments


def _ints(value: object, n: int, what: str, minimum: int) -> tuple[int, ...]:
    """``value`` as ``n`` Python ints >= ``minimum`` (one int stands for ``n`` equal ones)."""
    items = [value] * n if isinstance(value, (int, np.integer)) else value
    if not isinstance(items, (list, tuple)) or len(items) != n:
        raise OpTypeError(f"{what} must be an int or {n} ints, got {value!r}")
    out = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise OpTypeError(f"{what} must hold Python ints, got {value!r}")
        if v < minimum:
            raise OpTypeError(f"{what} entries must be >= {minimum}, got {value!r}")
        out.append(operator.index(v))
    return tuple(out)


def _channels_last(value: object, nd: int) -> bool:
    names = _LAYOUTS[nd]
    if value not in names:
        raise OpTypeError(
            f"input_layout must be one of {sorted(names)} (channels last or first), got {value!r}"
        )
    return names[str(value)]


def _filter_last(value: object, nd: int, input_last: bool) -> bool:
    names = _FILTER_LAYOUTS[nd]
    if value is None:  # follows the input: RSCF beside NHWC, FCRS (OIHW) beside NCHW
        return input_last
    if value not in names:
        raise OpTypeError(
            f"filter_layout must be one of {sorted(names)} or None (follow input_layout), "
            f"got {value!r}"
        )
    return names[str(value)]


def _symbol(x: Operand, what: str) -> Symbol:
    if not isinstance(x, Symbol):
        raise OpTypeError(
            f"{what} must be a Symbol (a graph value), got {type(x).__name__}; make a "
            "constant with g.constant(...) first"
        )
    return x


def _first(x: Symbol, rank: int, last: bool, what: str) -> Symbol:
    """``x`` (of ``rank``) channels first: as is, or the value a channels-last ``transpose``
    was made from (the transpose then goes unused), or a new ``transpose``."""
    if x.rank != rank:
        layout = "channels last" if last else "channels first"
        raise ShapeError(
            f"{what} must have rank {rank} ({layout}), got {x.type}; reshape or expand_dims "
            "it first"
        )
    if not last:
        return x
    if x.op == "transpose" and tuple(x.attrs["perm"]) == to_channels_last(rank):
        return x.inputs[0]
    return _transpose(x, to_channels_first(rank))


def _transpose(x: Symbol, perm: tuple[int, ...]) -> Symbol:
    return op("transpose", x, perm=perm)


def _filter(f: Operand, nd: int, last: bool) -> Operand:
    """The filter with its kernel axes last: (a, b, *K) from channels-last (*K, b, a); a numpy
    filter is transposed here, a Symbol by a ``transpose`` node."""
    if isinstance(f, Symbol):
        if f.rank != nd + 2:
            raise ShapeError(f"the filter must have rank {nd + 2}, got {f.type}")
        return _transpose(f, (nd + 1, nd, *range(nd))) if last else f
    arr = np.asarray(f)
    if arr.ndim != nd + 2:
        raise ShapeError(f"the filter must have rank {nd + 2}, got an array of shape {arr.shape}")
    return np.ascontiguousarray(np.transpose(arr, (nd + 1, nd, *range(nd)))) if last else arr


def _last(r: Symbol, last: bool) -> Symbol:
    return _transpose(r, to_channels_last(r.rank)) if last else r


def _static(dims: Sequence[Dim], what: str) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in dims):
        raise ShapeError(f"{what} must be static (ints), got {format_shape(tuple(dims))}")
    return tuple(int(d) for d in dims)


def _window_dim(
    d: Dim, k: int, stride: int, dilation: int, lo: int, hi: int, axis: str, transpose: bool
) -> Dim:
    """A convolution's output size along one spatial axis (``transpose``: the transposed
    convolution's, (d - 1) * stride - lo - hi + dilation * (k - 1) + 1, where ``hi`` is
    net of output padding)."""
    span = dilation * (k - 1) + 1
    if isinstance(d, int):
        if transpose:
            n = (d - 1) * stride - lo - hi + span if d else 0
        else:
            n = window_size(d, k, stride, dilation, lo, hi)
        if n < 1 and not (transpose and d == 0):
            raise ShapeError(
                f"along {axis} the kernel spans {span} elements (dilation included), more "
                f"than the {d + lo + hi} of the padded input: no output; use a smaller "
                "kernel or dilation, or pad more"
            )
        return n
    extra = span - stride - lo - hi if transpose else lo + hi - span + 1
    if extra < 0:  # (a size that would be negative for a small d: the type cannot say so)
        raise ShapeError(
            f"{axis} is symbolic ({d!r}) and its output size would be negative for small "
            f"sizes of {d!r} (with this kernel and padding); give {axis} a static size, or "
            "pad by at least dilation * (kernel - 1) in all ('same' padding, or "
            "kernel // 2 on each side)"
        )
    if transpose:
        return sum_dims([derived_dim([d, stride], []), extra])
    # floor((d + lo + hi - span) / stride) + 1
    return sum_dims([floordiv_dim(sum_dims([d, extra - 1]), stride), 1])


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
    last = _channels_last(input_layout, nd)
    xs = _symbol(x, "x")
    xf = _first(xs, nd + 2, last, "the input x")
    f = _filter(filter, nd, _filter_last(filter_layout, nd, last))
    operands = (xf, f) if bias is None else (xf, f, bias)
    try:
        r = op(name, *operands, **attrs)
    except ShapeError as e:
        hint = _layout_hint(xs, f, last, nd, name, attrs)
        if hint is None:
            raise
        raise ShapeError(f"{e}; {hint}") from None
    return _last(r, last)


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
        stride = _ints(attrs.get("stride"), nd, "stride", 1)
        dilation = _ints(attrs.get("dilation"), nd, "dilation", 1)
        padding = _ints(attrs.get("padding"), 2 * nd, "padding", 0)
        attrs.update(stride=stride, dilation=dilation, padding=padding)
        if transpose:
            groups = 1
            out_pad = attrs["output_paddings"] = _ints(
                attrs.get("output_paddings"), nd, "output_paddings", 0)  # fmt: skip
        else:
            groups = attrs["groups"] = _ints(attrs.get("groups"), 1, "groups", 1)[0]
            out_pad = (0,) * nd
        fdims = _static(f.shape, "the filter's shape")
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
            _window_dim(d, k, s, dl, padding[2 * i], padding[2 * i + 1] - out_pad[i],
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


# ---------------------------------------------------------------------------- pooling


def max_pool2d(
    x: Operand,
    kernel_size: tuple[int, int],
    stride: int | tuple[int, int] = 1,
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    ceil_mode: bool = False,
    input_layout: str = "NHWC",
) -> Symbol:
    """The maximum of each ``kernel_size`` window, as MAX's ``max_pool2d`` (NHWC;
    ``input_layout="NCHW"`` for PyTorch's layout): ``padding`` (pad_h, pad_w) adds -inf
    (the dtype's lowest value) on both sides, at most half the dilated kernel; NaN
    propagates and -0.0 < +0.0; ``ceil_mode`` as PyTorch. Keeps the dtype (real or bool).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("max_pool2d", input_types={"x": gd.TensorType(gd.int8, ("n", 3, 3, 1))})
    >>> x, = g.inputs
    >>> z = gd.ops.max_pool2d(x, (2, 2), stride=2, ceil_mode=True)
    >>> z.type
    TensorType(int8[n, 2, 2, 1])
    >>> g.output(z)
    >>> x = np.array([[-5, 1, -2], [3, -1, -8], [-7, -6, -9]], np.int8).reshape(1, 3, 3, 1)
    >>> gd.evaluate(g, {"x": x})[0][0, :, :, 0]
    array([[ 3, -2],
           [-6, -9]], dtype=int8)
    """
    return _pool("max_pool2d", x, input_layout, kernel_size=kernel_size, stride=stride,
                 dilation=dilation, padding=padding, ceil_mode=ceil_mode)  # fmt: skip


def avg_pool2d(
    x: Operand,
    kernel_size: tuple[int, int],
    stride: int | tuple[int, int] = 1,
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    ceil_mode: bool = False,
    count_boundary: bool = True,
    input_layout: str = "NHWC",
) -> Symbol:
    """The mean of each ``kernel_size`` window, as MAX's ``avg_pool2d`` (NHWC;
    ``input_layout="NCHW"`` for PyTorch's layout): ``padding`` (pad_h, pad_w) adds zeros on
    both sides, at most half the kernel; ``count_boundary`` (PyTorch's
    ``count_include_pad``) divides by the taps inside the padded input, else by those
    inside the input; ``ceil_mode`` as PyTorch (taps past the padding never count).
    Floating dtypes are kept, integers and bool give the policy's default float; the sum
    is computed in float64 and the mean rounded once.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("avg_pool2d", input_types={"x": gd.TensorType(gd.float32, (1, 2, 2, 1))})
    >>> x, = g.inputs
    >>> a = gd.ops.avg_pool2d(x, (2, 2), padding=1, stride=2)
    >>> b = gd.ops.avg_pool2d(x, (2, 2), padding=1, stride=2, count_boundary=False)
    >>> a.type
    TensorType(float32[1, 2, 2, 1])
    >>> g.output(a, b)
    >>> x = np.array([1.0, 2.0, 3.0, 4.0], np.float32).reshape(1, 2, 2, 1)
    >>> [r[0, :, :, 0] for r in gd.evaluate(g, {"x": x})]
    [array([[0.25, 0.5 ],
           [0.75, 1.  ]], dtype=float32), array([[1., 2.],
           [3., 4.]], dtype=float32)]
    """
    return _pool("avg_pool2d", x, input_layout, kernel_size=kernel_size, stride=stride,
                 dilation=dilation, padding=padding, ceil_mode=ceil_mode,
                 count_boundary=count_boundary)  # fmt: skip


def _pool(name: str, x: Operand, input_layout: str, **attrs: Any) -> Symbol:
    last = _channels_last(input_layout, 2)
    return _last(op(name, _first(_symbol(x, "x"), 4, last, "the input x"), **attrs), last)


def _pool_dim(
    d: Dim, k: int, stride: int, dilation: int, pad: int, ceil: bool, axis: str
) -> Dim:  # fmt: skip
    span = dilation * (k - 1) + 1
    if isinstance(d, int):
        if d + 2 * pad < span:
            raise ShapeError(
                f"along {axis} the window spans {span} elements (dilation included), more "
                f"than the {d + 2 * pad} of the padded input; use a smaller kernel_size"
            )
        n = pool_size(d, k, stride, dilation, pad, ceil)
        if not all(tap_counts(d, k, stride, dilation, n, pad, pad + d)):
            raise ShapeError(
                f"along {axis} (size {d}) a window of kernel {k} with dilation {dilation} "
                f"and padding {pad} holds only padding; use a smaller dilation or padding"
            )
        return n
    if (ceil and stride != 1) or 2 * pad + 1 < span or pad >= span:
        raise ShapeError(
            f"{axis} is symbolic ({d!r}) and the pooled size cannot be written for every "
            f"size of {d!r} (a negative count, a window of padding only, or ceil_mode's last "
            f"window); give {axis} a static size, or use padding of at least half the "
            "dilated kernel and less than it (without ceil_mode where the stride is not 1)"
        )
    # floor((d + 2 pad - span) / stride) + 1
    return sum_dims([floordiv_dim(sum_dims([d, 2 * pad - span]), stride), 1])


def _pool_rule(average: bool) -> Any:
    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        t = types[0]
        c = Promoted(t.dtype, t.ambiguous)
        if average and t.dtype.kind in TO_FLOAT:
            c = Promoted(p.default_float, t.ambiguous)
        need(FLOAT if average else REAL | {Kind.bool}, c, types, p)
        kernel = _ints(attrs.get("kernel_size"), 2, "kernel_size", 1)
        stride = _ints(attrs.get("stride"), 2, "stride", 1)
        dilation = _ints(attrs.get("dilation"), 2, "dilation", 1)
        padding = _ints(attrs.get("padding"), 2, "padding", 0)
        ceil = attrs.get("ceil_mode")
        if not isinstance(ceil, (bool, np.bool_)):
            raise OpTypeError(f"ceil_mode must be a bool, got {ceil!r}")
        attrs.update(kernel_size=kernel, stride=stride, dilation=dilation, padding=padding,
                     ceil_mode=bool(ceil))  # fmt: skip
        if average:
            attrs["count_boundary"] = bool(attrs.get("count_boundary"))
        for k, d, pd, axis in zip(kernel, dilation, padding, "HW", strict=True):
            half = (k if average else d * (k - 1) + 1) // 2
            if pd > half:
                raise ShapeError(
                    f"padding {padding} along {axis}: at most half the "
                    f"{'' if average else 'dilated '}kernel ({half}) may be padding, as "
                    "PyTorch requires; use a smaller padding or a bigger kernel_size"
                )
        out = tuple(_pool_dim(t.shape[2 + i], kernel[i], stride[i], dilation[i], padding[i],
                              bool(ceil), "HW"[i]) for i in range(2))  # fmt: skip
        return (c.dtype,), TensorType(c.dtype, (*t.shape[:2], *out), c.ambiguous)

    return rule


def _pool_geometry(x: np.ndarray, attrs: dict[str, Any]) -> tuple[list[int], ...]:
    """Per spatial axis: output size, padding before, padding after (ceil mode's extra)."""
    outs, los, his = [], [], []
    for i in range(2):
        n, k, s, d, p = (x.shape[2 + i], attrs["kernel_size"][i], attrs["stride"][i],
                         attrs["dilation"][i], attrs["padding"][i])  # fmt: skip
        o = pool_size(n, k, s, d, p, attrs["ceil_mode"])
        outs.append(o)
        los.append(p)
        his.append(p + pool_extra(n, k, s, d, p, o))
    return outs, los, his


def _lowest(dt: np.dtype[Any]) -> Any:
    if dt.kind == "b":
        return False
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return -np.inf


def _max_pool_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    outs, los, his = _pool_geometry(x, attrs)
    xp = np.pad(x, [(0, 0), (0, 0), *zip(los, his, strict=True)], constant_values=_lowest(x.dtype))
    win = windows(xp, attrs["kernel_size"], attrs["stride"], attrs["dilation"], outs)
    taps = (-2, -1)
    r = np.max(win, axis=taps, initial=_lowest(x.dtype))  # NaN propagates
    if x.dtype.kind == "f":  # zeros ordered as IEEE 754-2019: +0.0 wins over -0.0
        positive_zero = np.any((win == 0) & ~np.signbit(win), axis=taps)
        r = np.where(r == 0, np.where(positive_zero, 0.0, -0.0).astype(x.dtype), r)
    return np.asarray(r)


def _avg_pool_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0].astype(np.float64)
    outs, los, his = _pool_geometry(x, attrs)
    xp = np.pad(x, [(0, 0), (0, 0), *zip(los, his, strict=True)])
    ks, strides, dils = attrs["kernel_size"], attrs["stride"], attrs["dilation"]
    win = windows(xp, ks, strides, dils, outs)
    counts = []
    for i in range(2):  # the divisor: taps inside the padded input, or inside the input
        n, p = x.shape[2 + i], attrs["padding"][i]
        lo, hi = (0, n + 2 * p) if attrs["count_boundary"] else (p, p + n)
        counts.append(tap_counts(n, ks[i], strides[i], dils[i], outs[i], lo, hi))
    with np.errstate(all="ignore"):
        return np.asarray(np.sum(win, axis=(-2, -1)) / np.multiply.outer(counts[0], counts[1]))


define(max_pool2d, _pool_rule(average=False), _max_pool_impl, "real or bool; keeps the dtype")
define(avg_pool2d, _pool_rule(average=True), _avg_pool_impl, "floating; integers -> default float")


# ---------------------------------------------------------------------------- pad, resize


def pad(
    x: Operand, paddings: Sequence[int], mode: str = "constant", value: bool | int | float = 0
) -> Symbol:
    """Pad every axis, as MAX's ``pad``: ``paddings`` is (before_0, after_0, before_1,
    after_1, ...), 2 * rank counts >= 0. ``mode`` "constant" fills with ``value`` (a Python
    number, which must fit the dtype; floats round to it), "reflect" mirrors without
    repeating the edge (numpy's and ONNX's reflect: at most size - 1 per side), "edge"
    repeats the edge element. Keeps the dtype; a symbolic axis takes constant padding.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("pad", input_types={"x": gd.TensorType(gd.uint8, ("n", 3))})
    >>> x, = g.inputs
    >>> a, b = gd.ops.pad(x, (0, 1, 2, 0), value=255), gd.ops.pad(x, (0, 0, 2, 1), "reflect")
    >>> a.type, b.type
    (TensorType(uint8[n+1, 5]), TensorType(uint8[n, 6]))
    >>> g.output(a, b)
    >>> gd.evaluate(g, {"x": np.array([[1, 2, 3]], np.uint8)})
    [array([[255, 255,   1,   2,   3],
           [255, 255, 255, 255, 255]], dtype=uint8), array([[3, 2, 1, 2, 3, 2]], dtype=uint8)]
    """
    return op("pad", x, paddings=paddings, mode=mode, value=value)


def _pad_value(value: object, dt: DType) -> bool | int | float:
    """The fill value as a Python number of ``dt``'s kind; an error if it does not fit."""
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        number = int(value)
        if dt is DType.bool and number in (0, 1):
            return bool(number)
        if dt.is_integer and dt.min <= number <= dt.max:
            return number
        if dt.is_float:
            return float(number)
    elif isinstance(value, (float, np.floating)) and dt.is_float:
        return float(value)
    raise OpTypeError(
        f"pad value {value!r} does not fit {dt.name}, the dtype of x; give a value of the "
        "dtype's range (an int for integer x, 0 or 1 for bool), or cast x first"
    )


def _pad_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    pads = _ints(attrs.get("paddings"), 2 * t.rank, "paddings", 0)
    mode = attrs.get("mode")
    if mode not in PAD_MODES:
        raise OpTypeError(f"pad mode must be one of {PAD_MODES}, got {mode!r}")
    attrs.update(paddings=pads, value=_pad_value(attrs.get("value"), t.dtype))
    shape: list[Dim] = []
    for i, d in enumerate(t.shape):
        lo, hi = pads[2 * i], pads[2 * i + 1]
        if mode != "constant" and (lo or hi):
            most = "size - 1" if mode == "reflect" else "any count, if the size is >= 1"
            if not isinstance(d, int) or d < 1 or (mode == "reflect" and max(lo, hi) > d - 1):
                raise ShapeError(
                    f"{mode} padding of axis {i} (size {d}) by ({lo}, {hi}): an axis padded "
                    f"in mode {mode!r} must be static and takes {most} per side; use "
                    "mode 'constant' or smaller paddings"
                )
        shape.append(sum_dims([d, lo + hi]) if lo + hi else d)
    return (t.dtype,), TensorType(t.dtype, tuple(shape), t.ambiguous)


def _pad_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, pads = args[0], attrs["paddings"]
    if not any(pads):  # (numpy cannot pad a 0-d array, even by nothing)
        return x
    pairs = list(zip(pads[::2], pads[1::2], strict=True))
    if attrs["mode"] != "constant":
        return np.pad(x, pairs, mode=attrs["mode"])
    fill = cast_array(np.asarray(attrs["value"]), out.dtype).astype(x.dtype)
    return np.pad(x, pairs, constant_values=fill)


define(pad, _pad_rule, _pad_impl, "any; keeps the dtype")


def resize(x: Operand, shape: Sequence[int | str], interpolation: str = "bilinear") -> Symbol:
    """Resize the spatial axes of an NCHW value to ``shape`` (N, C, H, W; N and C as x's),
    as MAX's ``resize``, with half-pixel coordinates (src = (o + 0.5) * in / out - 0.5):
    "nearest" takes the element at src rounded half down (any dtype, exact); "bilinear"
    blends the two neighbours (src clamped at 0, as PyTorch); "bicubic" uses four with
    Keys' kernel (a = -0.75); edges repeat. Interpolation is floating (integers give the
    policy's default float), in float64, rounded once; an axis of unchanged size is
    copied. x's H and W must be static.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("resize", input_types={"x": gd.TensorType(gd.float32, ("n", 1, 1, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.resize(x, ("n", 1, 1, 4))
    >>> z.type
    TensorType(float32[n, 1, 1, 4])
    >>> g.output(z, gd.ops.resize(x, ("n", 1, 1, 3), "nearest"))
    >>> gd.evaluate(g, {"x": np.array([0.0, 4.0], np.float32).reshape(1, 1, 1, 2)})
    [array([[[[0., 1., 3., 4.]]]], dtype=float32), array([[[[0., 0., 4.]]]], dtype=float32)]
    """
    return op("resize", x, shape=tuple(shape), interpolation=interpolation)


def _resize_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    mode = attrs.get("interpolation")
    if mode not in INTERPOLATIONS:
        raise OpTypeError(f"interpolation must be one of {INTERPOLATIONS}, got {mode!r}")
    c = Promoted(t.dtype, t.ambiguous)
    if mode != "nearest":
        if t.dtype.kind in TO_FLOAT:
            c = Promoted(p.default_float, t.ambiguous)
        need(FLOAT, c, types, p)
    else:
        need(ANY, c, types, p)
    if t.rank != 4:
        raise ShapeError(f"resize needs an NCHW value of rank 4, got {t}; reshape it first")
    want = tuple(attrs["shape"])
    if len(want) != 4 or want[:2] != t.shape[:2]:
        raise ShapeError(
            f"resize of {t} to {want}: give 4 sizes (N, C, H, W) with N and C those of x "
            f"({format_shape(t.shape[:2])}); only H and W are resized"
        )
    hw_in = _static(t.shape[2:], "x's H and W")
    hw = _ints(list(want[2:]), 2, "the output H and W", 1)
    if 0 in hw_in:  # (the outputs are >= 1: an empty axis has nothing to take them from)
        axis = "H" if hw_in[0] == 0 else "W"
        raise ShapeError(
            f"resize of {t} to {format_shape(tuple(want))}: x's {axis} is 0, and an empty "
            "axis has no values to resize to a non-empty one; resize a non-empty value, or "
            "make the empty result directly (gd.ops.broadcast_to of a constant)"
        )
    attrs["shape"] = (*t.shape[:2], *hw)
    return (c.dtype,), TensorType(c.dtype, (*t.shape[:2], *hw), c.ambiguous)


def _resize_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    mode = attrs["interpolation"]
    if mode != "nearest":
        x = x.astype(np.float64)
    for axis in (2, 3):
        n_in, n_out = x.shape[axis], attrs["shape"][axis]
        if n_in == n_out:
            continue
        if mode == "nearest":
            x = np.take(x, nearest_indices(n_in, n_out), axis=axis)
            continue
        idx, w = interpolation_taps(n_in, n_out, mode)
        taps = np.take(x, idx.reshape(-1), axis=axis)
        shape = [*x.shape[:axis], n_out, idx.shape[1], *x.shape[axis + 1 :]]
        weights = w.reshape(n_out, idx.shape[1], *[1] * (x.ndim - axis - 1))
        with np.errstate(all="ignore"):
            x = np.sum(taps.reshape(shape) * weights, axis=axis + 1)
    return x


define(resize, _resize_rule, _resize_impl,
       "nearest: any; bilinear, bicubic: floating, integers -> default float")  # fmt: skip
