"""Lowering of ``bottom_k``: one ONNX TopK with ``largest=0`` for both of its results (the
selection module's TopK, whose order is the reference's: NaN the largest, so last here;
ties to the lower index; measured in tests/test_onnx_matrix.py's rows)."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower.selection import _INT64_MIN, _gathered, _top_k
from exporters.onnx._types import storage
from graphdsl.graph import Symbol


@register("bottom_k")
def _bottom_k(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    rank = node.inputs[0].rank
    axis = int(node.attrs["axis"]) % rank
    values, indices = _top_k(b, x, int(node.attrs["k"]), axis, 0, rank)
    if node.attrs["result"] == "indices":
        return indices
    if values is None:  # (floats: TopK ran on a key; the values are x's at the indices)
        return _gathered(b, x, indices, axis)
    if storage(x.dtype) is T.uint64:  # back from the order-preserving map of _ordered
        values = b.elementwise("Sub", [values, b.scalar(_INT64_MIN, T.int64)])
    return b.cast(values, x.dtype)
