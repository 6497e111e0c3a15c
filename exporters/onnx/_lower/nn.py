"""Lowerings of ``matmul`` (unsigned reinterpreted where onnxruntime fails) and ``softmax``."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import (
    SymbolicDims,
    T,
    register,
)
from exporters.onnx._types import storage
from graphdsl.graph import Symbol

# ---------------------------------------------------------------- matmul and reductions


_SAME_WIDTH_SIGNED = {T.uint32: T.int32, T.uint64: T.int64}


@register("matmul")
def _matmul(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    signed = _SAME_WIDTH_SIGNED.get(storage(args[0].dtype))
    if signed is not None:
        # onnxruntime's uint32/uint64 MatMul fail on an empty contraction (they write their
        # zeros as int32/int64); signed products and sums wrap the same way: exact
        r = b.elementwise("MatMul", [b.cast(a, signed) for a in args], bits=True)
        return b.cast(r, args[0].dtype)
    return b.elementwise("MatMul", args, narrow_in_f32=True, bits=True)


@register("softmax")
def _softmax(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.elementwise("Softmax", args, narrow_in_f32=True, axis=int(node.attrs["axis"]))
