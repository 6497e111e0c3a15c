"""The cast lowering: float -> integer truncates and saturates, NaN -> 0 (graphdsl's
conversion semantics, which ONNX's Cast leaves undefined)."""

from __future__ import annotations

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import (
    SymbolicDims,
    T,
    register,
)
from exporters.onnx._types import storage
from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Symbol

# ---------------------------------------------------------------- casts


@register("cast")
def _cast(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return convert(b, args[0], node.attrs["to"])


def convert(b: Builder, x: V, to: DType) -> V:
    """graphdsl's conversion semantics: float -> integer truncates and saturates, NaN -> 0."""
    src = x.dtype
    if src in (T.float8_e4m3fn, T.float8_e5m2, T.float8_e4m3fnuz, T.float8_e5m2fnuz):
        x = b.cast(x, T.float32)  # exact; onnxruntime's float8 -> bool reads -0 as True
        src = T.float32
    if not (src.kind is Kind.float and to.is_integer):
        return b.cast(x, to)
    f = T.float32 if src in NARROW else storage(src)
    xf = b.cast(x, f)
    hi, lo = b.scalar(float(to.max), f), b.scalar(float(to.min), f)
    nan = b.node("IsNaN", [xf.name], T.bool)
    big = b.elementwise("GreaterOrEqual", [xf, hi], result_bool=True)
    small = b.elementwise("LessOrEqual", [xf, lo], result_bool=True)
    out_of_range = b.node(
        "Or", [b.node("Or", [big.name, small.name], T.bool).name, nan.name], T.bool
    )
    safe = b.select(out_of_range, b.scalar(0, f), xf)
    c = b.cast(safe, to)
    return b.select(big, b.scalar(to.max, to), b.select(small, b.scalar(to.min, to), c))
