"""Image ops from MAX: ``fold`` (col2im: sliding blocks summed back into an image, ONNX
``Col2Im``) and ``roi_align`` (average or max pooling of bilinear samples over regions,
ONNX ``RoiAlign``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._define import Operand, Symbol, define, op
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, format_shape
from graphdsl.types import OpTypeError, TensorType

__all__ = ["fold", "roi_align"]


def _pair(v: int | Sequence[int], what: str) -> tuple[int, int]:
    pair = (v, v) if isinstance(v, int) else tuple(v)
    if len(pair) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) for n in pair):
        raise ShapeError(f"fold: {what} must be an int or two ints, got {v!r}")
    return (int(pair[0]), int(pair[1]))


def fold(
    x: Operand,
    output_size: Sequence[int],
    kernel_size: Sequence[int],
    stride: int | Sequence[int] = 1,
    dilation: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
) -> Symbol:
    """Sliding blocks summed into an image (col2im, as MAX's and PyTorch's ``fold``): ``x``
    of shape ``(N, C * kh * kw, L)`` holds ``L`` blocks; the result is ``(N, C, H, W)`` for
    ``output_size = (H, W)``, each block added at its place (overlaps add up, in block
    order). Floating dtypes.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("fold", input_types={"x": gd.TensorType(gd.float32, (1, 4, 4))})
    >>> x, = g.inputs
    >>> y = gd.ops.fold(x, (3, 3), (2, 2))
    >>> y.type
    TensorType(float32[1, 1, 3, 3])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.ones((1, 4, 4), np.float32)})[0][0, 0]
    array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]], dtype=float32)
    """
    return op("fold", x, output_size=_pair(tuple(output_size), "output_size"),
              kernel_size=_pair(tuple(kernel_size), "kernel_size"),
              stride=_pair(stride, "stride"), dilation=_pair(dilation, "dilation"),
              padding=_pair(padding, "padding"))  # fmt: skip


def _blocks(attrs: dict[str, Any]) -> tuple[int, int]:
    (h, w), (kh, kw) = attrs["output_size"], attrs["kernel_size"]
    (sh, sw), (dh, dw), (ph, pw) = attrs["stride"], attrs["dilation"], attrs["padding"]
    bh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    bw = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return bh, bw


def _fold_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    if t.dtype.kind is not Kind.float:
        raise OpTypeError(f"fold sums blocks of floating values; the input is {t}: cast it")
    if t.rank != 3:
        raise ShapeError(f"fold needs an input of shape (N, C * kh * kw, L), got {t}")
    n, ck, length = t.shape
    kh, kw = attrs["kernel_size"]
    if isinstance(ck, int) and ck % (kh * kw):
        raise ShapeError(
            f"Dim 1 of the input tensor ({ck}) must be a multiple of the product of the total "
            f"kernel size ({kh * kw})"
        )
    bh, bw = _blocks(attrs)
    if isinstance(length, int) and length != bh * bw:
        raise ShapeError(
            f"fold: the input has {length} blocks, but output_size {attrs['output_size']}, "
            f"kernel {attrs['kernel_size']}, stride, dilation and padding make {bh * bw}"
        )
    c = ck // (kh * kw) if isinstance(ck, int) else f"{ck}/{kh * kw}"
    h, w = attrs["output_size"]
    return (t.dtype,), TensorType(t.dtype, (n, c, h, w), t.ambiguous)


def _fold_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    n, ck, _ = x.shape
    (h, w), (kh, kw) = attrs["output_size"], attrs["kernel_size"]
    (sh, sw), (dh, dw), (ph, pw) = attrs["stride"], attrs["dilation"], attrs["padding"]
    bh, bw = _blocks(attrs)
    c = ck // (kh * kw)
    cols = x.reshape(n, c, kh, kw, bh, bw)
    img = np.zeros((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (bh - 1) + 1, sh)
            cols_ = slice(j * dw, j * dw + sw * (bw - 1) + 1, sw)
            img[:, :, rows, cols_] += cols[:, :, i, j]
    return img[:, :, ph : ph + h, pw : pw + w]


define(fold, _fold_rule, _fold_impl, "floating")


def roi_align(
    x: Operand,
    rois: Operand,
    output_height: int,
    output_width: int,
    spatial_scale: float = 1.0,
    sampling_ratio: int = 0,
    aligned: bool = False,
    mode: str = "avg",
) -> Symbol:
    """Region-of-interest pooling of an NHWC image ``x`` (MAX's ``roi_align``): each row of
    ``rois`` (M, 5) is (batch index, x0, y0, x1, y1) in input coordinates times
    ``spatial_scale``; the region is split into ``output_height x output_width`` bins, each
    the average (``mode="avg"``) or maximum (``"max"``) of a grid of bilinear samples
    (``sampling_ratio`` per side, or ``ceil(bin size)`` when 0); ``aligned`` shifts by
    half a pixel. The result is (M, output_height, output_width, C). Floating dtypes;
    ONNX ``RoiAlign`` (whose max mode takes the maximum of the weighted corner terms).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("roi", input_types={"x": gd.TensorType(gd.float32, (1, 4, 4, 1))})
    >>> x, = g.inputs
    >>> y = gd.ops.roi_align(x, np.array([[0, 0, 0, 4, 4]], np.float32), 2, 2, 1.0, 2)
    >>> g.output(y)  # each bin: the mean of 4 samples (a sample past the edge is clamped)
    >>> gd.evaluate(g, {"x": np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)})[0][0, :, :, 0]
    array([[ 5.  ,  6.75],
           [12.  , 13.75]], dtype=float32)
    """
    return op("roi_align", x, rois, output_height=int(output_height),
              output_width=int(output_width), spatial_scale=float(spatial_scale),
              sampling_ratio=int(sampling_ratio), aligned=bool(aligned),
              mode=str(mode).lower())  # fmt: skip


def _roi_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    x, r = types
    if x.dtype.kind is not Kind.float or r.dtype.kind is not Kind.float:
        raise OpTypeError(f"roi_align takes floating images and regions, got {x} and {r}")
    if DType.float8_e8m0fnu in (x.dtype, r.dtype):
        raise OpTypeError(
            "roi_align: float8_e8m0fnu (powers of two: no zero, no negatives) cannot hold the "
            "regions' coordinates nor the interpolated values; cast to float32 first"
        )
    if x.rank != 4:
        raise ShapeError(f"roi_align needs an NHWC input of rank 4, got {x}")
    if r.rank != 2 or r.shape[1] != 5:
        raise ShapeError(
            f"roi_align needs rois of shape (M, 5): batch index, x0, y0, x1, y1; got "
            f"{format_shape(r.shape)}"
        )
    if attrs["mode"] not in ("avg", "max"):
        raise ShapeError(f"roi_align mode must be 'AVG' or 'MAX', got {attrs['mode']!r}")
    shape = (r.shape[0], attrs["output_height"], attrs["output_width"], x.shape[3])
    return (x.dtype, x.dtype), TensorType(x.dtype, shape, x.ambiguous)


def _bilinear(img: np.ndarray, y: float, x: float) -> tuple[list[float], list[tuple[int, int]]]:
    """ONNX RoiAlign's bilinear sample: the four corner weights and positions (none outside
    [-1, size])."""
    h, w = img.shape[:2]
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return [], []
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    return [hy * hx, hy * lx, ly * hx, ly * lx], [(y0, x0), (y0, x1), (y1, x0), (y1, x1)]


def _roi_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x, rois = (a.astype(np.float64) for a in args)
    oh, ow = attrs["output_height"], attrs["output_width"]
    scale, ratio, offset = attrs["spatial_scale"], attrs["sampling_ratio"], 0.5 * attrs["aligned"]
    res = np.zeros((rois.shape[0], oh, ow, x.shape[3]), np.float64)
    for m, (b, x0, y0, x1, y1) in enumerate(rois):
        img = x[int(b)]
        sx, sy = x0 * scale - offset, y0 * scale - offset
        rw, rh = x1 * scale - offset - sx, y1 * scale - offset - sy
        if not attrs["aligned"]:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        count = max(gh * gw, 1)
        for i in range(oh):
            for j in range(ow):
                acc: np.ndarray | None = np.zeros(x.shape[3]) if attrs["mode"] == "avg" else None
                for iy in range(gh):
                    yy = sy + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = sx + j * bw + (ix + 0.5) * bw / gw
                        weights, corners = _bilinear(img, yy, xx)
                        if attrs["mode"] == "avg":
                            for wgt, (cy, cx) in zip(weights, corners, strict=True):
                                acc = wgt * img[cy, cx] + (0.0 if acc is None else acc)
                        else:
                            pairs = zip(weights, corners, strict=True)
                            terms = [wgt * img[cy, cx] for wgt, (cy, cx) in pairs]
                            best = np.max(terms, axis=0) if terms else np.zeros(x.shape[3])
                            acc = best if acc is None else np.maximum(acc, best)
                assert acc is not None
                res[m, i, j] = acc / count if attrs["mode"] == "avg" else acc
    return res


define(roi_align, _roi_rule, _roi_impl, "floating")
