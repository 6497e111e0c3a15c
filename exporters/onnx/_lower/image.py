"""Lowerings of ``fold`` and ``roi_align``.

``fold``: ONNX Col2Im (onnxruntime's only kernel is float32) for float32 and narrower floats,
whose overlapping blocks it sums in its own order (within the sum's float32 rounding of the
reference); float64, which Col2Im would round to float32, is a ScatterElements add of every
block entry into the padded image, in the reference's order (exact). ``roi_align``: NHWC to
ONNX RoiAlign's NCHW and back, the rois split into batch indices and boxes, in float32 (float64
in float64).
"""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower._index import arange, on_axis
from exporters.onnx._types import storage
from graphdsl.graph import Symbol


@register("fold")
def _fold(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    if storage(node.dtype) is T.float64:
        return _fold_scatter(b, node, args[0])
    x = b.cast(args[0], T.float32)
    a = node.attrs
    (ph, pw) = a["padding"]
    made = b.node("Col2Im", [x.name, b.int64s(list(a["output_size"])),
                             b.int64s(list(a["kernel_size"]))], T.float32,
                  dilations=list(a["dilation"]), strides=list(a["stride"]),
                  pads=[ph, pw, ph, pw])  # fmt: skip
    return b.cast(made, node.dtype)


def _fold_scatter(b: Builder, node: Symbol, x: V) -> V:
    """fold as a scatter-add of each block entry into the padded image (exact, in order)."""
    a = node.attrs
    (h, w), (kh, kw) = a["output_size"], a["kernel_size"]
    (sh, sw), (dh, dw), (ph, pw) = a["stride"], a["dilation"], a["padding"]
    hp, wp = h + 2 * ph, w + 2 * pw
    bh = (hp - dh * (kh - 1) - 1) // sh + 1
    bw = (wp - dw * (kw - 1) - 1) // sw + 1
    entries = kh * kw * bh * bw
    # block entry (i, j) of block (bi, bj) lands at (i * dh + bi * sh) * wp + j * dw + bj * sw
    # of the padded image: the sum of a range per axis of (kh, kw, bh, bw), in the model
    steps = [(kh, dh * wp), (kw, dw), (bh, sh * wp), (bw, sw)]
    where = on_axis(b, arange(b, kh, 0, dh * wp), 0, 4)
    for axis, (n, step) in enumerate(steps[1:], start=1):
        where = b.node("Add", [where.name, on_axis(b, arange(b, n, 0, step), axis, 4).name],
                       T.int64)  # fmt: skip
    rows = b.node("Reshape", [x.name, b.int64s([-1, entries])], x.dtype)
    n_rows = b.node("Shape", [rows.name], T.int64, start=0, end=1)
    flat = b.node("Reshape", [where.name, b.int64s([1, entries])], T.int64)
    index = b.node("Expand", [flat.name, b.node("Concat", [n_rows.name, b.int64s([entries])],
                                                T.int64, axis=0).name], T.int64)  # fmt: skip
    zeros = b.node("Expand", [b.scalar(0.0, x.dtype).name,
                              b.node("Concat", [n_rows.name, b.int64s([hp * wp])], T.int64,
                                     axis=0).name], x.dtype)  # fmt: skip
    summed = b.node("ScatterElements", [zeros.name, index.name, rows.name], x.dtype, axis=1,
                    reduction="add")  # fmt: skip
    lead = b.node("Shape", [x.name], T.int64, start=0, end=1)
    shape = b.node("Concat", [lead.name, b.int64s([-1, hp, wp])], T.int64, axis=0)
    img = b.node("Reshape", [summed.name, shape.name], x.dtype)
    return b.node("Slice", [img.name, b.int64s([ph, pw]), b.int64s([ph + h, pw + w]),
                            b.int64s([2, 3])], x.dtype)  # fmt: skip


@register("roi_align")
def _roi_align(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    run = T.float64 if storage(node.dtype) is T.float64 else T.float32
    x, rois = (b.cast(v, run) for v in args)
    a = node.attrs
    nchw = b.node("Transpose", [x.name], run, perm=[0, 3, 1, 2])
    index = b.node("Slice", [rois.name, b.int64s([0]), b.int64s([1]), b.int64s([1])], run)
    batch = b.cast(b.node("Squeeze", [index.name, b.int64s([1])], run), T.int64)
    boxes = b.node("Slice", [rois.name, b.int64s([1]), b.int64s([5]), b.int64s([1])], run)
    pooled = b.node(
        "RoiAlign", [nchw.name, boxes.name, batch.name], run,
        mode=a["mode"], output_height=a["output_height"], output_width=a["output_width"],
        sampling_ratio=a["sampling_ratio"], spatial_scale=a["spatial_scale"],
        coordinate_transformation_mode="half_pixel" if a["aligned"] else "output_half_pixel",
    )  # fmt: skip
    back = b.node("Transpose", [pooled.name], run, perm=[0, 2, 3, 1])
    return b.cast(back, node.dtype)
