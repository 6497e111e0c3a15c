"""Lowerings of the combining scatters (``scatter_max``/``min``/``mul`` and their ``_nd``
forms): ONNX ScatterElements / ScatterND with ``reduction`` max, min or mul, run in a dtype
with a kernel (onnxruntime's CPU kernels apply the updates in the indices' row-major order,
as the reference does). Max and min propagate NaN as the reference's ``np.maximum.at``:
where an update or a target is NaN, a second scatter (``max`` of ``IsNaN`` as 0/1) marks
the targets that met one, and those become NaN.
"""

from __future__ import annotations

from typing import Any

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower.checks import int64_indices
from exporters.onnx._types import storage
from graphdsl.dtypes import Kind
from graphdsl.graph import Symbol

# onnxruntime's CPU kernels take every dtype here but the half and float8 ones (measured);
# those are exact in float32, where max and min are exact and products round once, as the
# reference's
_WIDE = {T.float8_e4m3fn: T.float32, T.float8_e5m2: T.float32, T.float8_e4m3fnuz: T.float32,
         T.float8_e5m2fnuz: T.float32, T.float16: T.float32, T.bfloat16: T.float32}  # fmt: skip


def _scatter(elements: bool, kind: str) -> None:
    onnx_op = "ScatterElements" if elements else "ScatterND"
    name = ("scatter_" if elements else "scatter_nd_") + kind

    @register(name)
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, u, idx = args
        attrs: dict[str, Any] = {"reduction": kind}
        if elements:
            attrs["axis"] = int(node.attrs["axis"]) % node.inputs[0].rank
        d = storage(x.dtype)
        wide = _WIDE.get(d, d)
        xc, uc = b.cast(x, wide), b.cast(u, wide)
        index = int64_indices(b, idx)
        out = b.node(onnx_op, [xc.name, index, uc.name], wide, **attrs)
        if kind != "mul" and d.kind is Kind.float:
            out = _nan_marks(b, onnx_op, attrs, xc, uc, index, out)
        return b.cast(out, x.dtype)


def _nan_marks(
    b: Builder, onnx_op: str, attrs: dict[str, Any], x: V, u: V, index: str, out: V
) -> V:
    """``out`` with NaN where the reference's max or min met a NaN (target or update)."""
    f = T.float32
    xn = b.cast(b.node("IsNaN", [x.name], T.bool), f)
    un = b.cast(b.node("IsNaN", [u.name], T.bool), f)
    marks = b.node(onnx_op, [xn.name, index, un.name], f, **{**attrs, "reduction": "max"})
    hit = b.cast(marks, T.bool)
    return b.node("Where", [hit.name, b.scalar(float("nan"), out.dtype).name, out.name],
                  out.dtype)  # fmt: skip


for _elements in (True, False):
    for _kind in ("max", "min", "mul"):
        _scatter(_elements, _kind)
