"""Pooling, padding and resizing images: max_pool2d, avg_pool2d, pad and resize, with MAX's
names, signatures and defaults (layouts, types and numerics as graphdsl.ops.vision says)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._convert import cast_array
from graphdsl.ops._define import ANY, FLOAT, REAL, TO_FLOAT, Operand, Symbol, define, need, op
from graphdsl.ops._vision_args import (
    PAD_MODES,
    channels_last,
    int_args,
    symbol_arg,
    to_first,
    to_last,
)
from graphdsl.ops._windows import (
    INTERPOLATIONS,
    interpolation_taps,
    nearest_indices,
    pool_extra,
    pool_size,
    tap_counts,
    windows,
    windows_reach_input,
)
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import (
    Dim,
    ShapeError,
    bound_size,
    dim_repr,
    floordiv_dim,
    format_shape,
    shape_of,
    sum_dims,
)
from graphdsl.types import OpTypeError, TensorType

__all__ = ["avg_pool2d", "max_pool2d", "pad", "resize"]


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
    last = channels_last(input_layout, 2)
    return to_last(op(name, to_first(symbol_arg(x, "x"), 4, last, "the input x"), **attrs), last)


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
        if not windows_reach_input(d, k, stride, dilation, pad, n):
            raise ShapeError(
                f"along {axis} (size {d}) a window of kernel {k} with dilation {dilation} "
                f"and padding {pad} holds only padding; use a smaller dilation or padding"
            )
        return n
    if (ceil and stride != 1) or 2 * pad + 1 < span or pad >= span:
        raise ShapeError(
            f"{axis} is symbolic ({dim_repr(d)}) and the pooled size cannot be written for "
            f"every size of {dim_repr(d)} (a negative count, a window of padding only, or "
            f"ceil_mode's last window); give {axis} a static size, or use padding of at least "
            "half the dilated kernel and less than it (without ceil_mode where the stride is "
            "not 1)"
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
        kernel = int_args(attrs.get("kernel_size"), 2, "kernel_size", 1)
        stride = int_args(attrs.get("stride"), 2, "stride", 1)
        dilation = int_args(attrs.get("dilation"), 2, "dilation", 1)
        padding = int_args(attrs.get("padding"), 2, "padding", 0)
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
    pads = int_args(attrs.get("paddings"), 2 * t.rank, "paddings", 0)
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


def resize(x: Operand, shape: Sequence[Dim], interpolation: str = "bilinear") -> Symbol:
    """Resize an NCHW value to ``shape`` (N, C, H, W), as MAX's ``resize``: each axis whose
    size changes is resized on its own (N, then C, H and W), with half-pixel coordinates
    (src = (o + 0.5) * in / out - 0.5): "nearest" takes the element at src rounded half down
    (any dtype, exact); "bilinear" blends the two neighbours (src clamped at 0, as PyTorch);
    "bicubic" uses four with Keys' kernel (a = -0.75); edges repeat. Interpolation is floating
    (integers give the policy's default float), in float64, rounded once; an axis whose size
    does not change (at run time, for symbolic sizes) is copied. Sizes may be symbolic.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("resize", input_types={"x": gd.TensorType(gd.float32, ("n", 1, 1, 2))})
    >>> x, = g.inputs
    >>> z = gd.ops.resize(x, ("n", 1, 1, 4))
    >>> z.type
    TensorType(float32[n, 1, 1, 4])
    >>> g.output(z, gd.ops.resize(x, (x.shape[0] * 2, 1, 1, 3), "nearest"))
    >>> gd.evaluate(g, {"x": np.array([0.0, 4.0], np.float32).reshape(1, 1, 1, 2)})
    [array([[[[0., 1., 3., 4.]]]], dtype=float32), array([[[[0., 0., 4.]]],
    <BLANKLINE>
    <BLANKLINE>
           [[[0., 0., 4.]]]], dtype=float32)]
    """
    return op("resize", x, shape=tuple(shape), interpolation=interpolation)


AXES = "NCHW"


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
    if not isinstance(attrs["shape"], (list, tuple)) or len(attrs["shape"]) != 4:
        raise ShapeError(
            f"resize of {t} to {attrs['shape']!r}: give 4 sizes (N, C, H, W), each an int "
            "or a symbolic dimension"
        )
    want = shape_of(attrs["shape"])
    for axis, (d_in, d_out) in enumerate(zip(t.shape, want, strict=True)):
        if d_in == d_out:  # (not resized: copied, empty or not)
            continue
        if isinstance(d_out, int) and d_out < 1:
            raise ShapeError(
                f"resize of {t} to {format_shape(want)}: the output's {AXES[axis]} is "
                f"{d_out}; a resized axis must have a size >= 1"
            )
        if d_in == 0:  # (the outputs are >= 1: an empty axis has nothing to take them from)
            raise ShapeError(
                f"resize of {t} to {format_shape(want)}: x's {AXES[axis]} is 0, and an empty "
                "axis has no values to resize to a non-empty one; resize a non-empty value, or "
                "make the empty result directly (gd.ops.broadcast_to of a constant)"
            )
    attrs["shape"] = want
    return (c.dtype,), TensorType(c.dtype, want, c.ambiguous)


def _resize_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    mode = attrs["interpolation"]
    sizes = [bound_size(attrs.get("_bound", {}), d) for d in attrs["shape"]]
    if mode != "nearest":
        x = x.astype(np.float64)
    for axis, n_out in enumerate(sizes):
        n_in = x.shape[axis]
        if n_in == n_out:
            continue
        if n_in == 0:
            raise ShapeError(
                f"at run time, resize's input has {AXES[axis]} = 0 (shape {x.shape}), and an "
                f"empty axis has no values to resize to {n_out}; feed a non-empty value"
            )
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
