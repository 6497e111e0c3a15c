"""Lowering of ``bottom_k``: one ONNX TopK with ``largest=0`` for both of its results (the
selection module's TopK, whose order is the reference's: NaN the largest, so last here;
ties to the lower index; measured in tests/test_onnx_matrix.py's rows)."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import SymbolicDims, register
from exporters.onnx._lower.selection import selected
from graphdsl.graph import Symbol


@register("bottom_k")
def _bottom_k(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return selected(b, node, args[0], 0)
