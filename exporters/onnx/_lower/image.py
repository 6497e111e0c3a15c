"""Lowerings of ``fold`` (ONNX Col2Im, in float32: onnxruntime's only kernel; float64 sums
in float32 there, so its results are float32-rounded) and ``roi_align`` (NHWC to ONNX
RoiAlign's NCHW and back; the rois split into batch indices and boxes)."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from graphdsl.graph import Symbol


@register("fold")
def _fold(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = b.cast(args[0], T.float32)
    a = node.attrs
    (ph, pw) = a["padding"]
    made = b.node("Col2Im", [x.name, b.int64s(list(a["output_size"])),
                             b.int64s(list(a["kernel_size"]))], T.float32,
                  dilations=list(a["dilation"]), strides=list(a["stride"]),
                  pads=[ph, pw, ph, pw])  # fmt: skip
    return b.cast(made, node.dtype)


@register("roi_align")
def _roi_align(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, rois = (b.cast(v, T.float32) for v in args)
    a = node.attrs
    nchw = b.node("Transpose", [x.name], T.float32, perm=[0, 3, 1, 2])
    index = b.node("Slice", [rois.name, b.int64s([0]), b.int64s([1]), b.int64s([1])], T.float32)
    batch = b.cast(b.node("Squeeze", [index.name, b.int64s([1])], T.float32), T.int64)
    boxes = b.node("Slice", [rois.name, b.int64s([1]), b.int64s([5]), b.int64s([1])], T.float32)
    pooled = b.node(
        "RoiAlign", [nchw.name, boxes.name, batch.name], T.float32,
        mode=a["mode"], output_height=a["output_height"], output_width=a["output_width"],
        sampling_ratio=a["sampling_ratio"], spatial_scale=a["spatial_scale"],
        coordinate_transformation_mode="half_pixel" if a["aligned"] else "output_half_pixel",
    )  # fmt: skip
    back = b.node("Transpose", [pooled.name], T.float32, perm=[0, 2, 3, 1])
    return b.cast(back, node.dtype)
