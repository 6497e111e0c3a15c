"""Lowerings of comparisons, logical and bitwise ops, and ``where`` (exact for -0.0)."""

from __future__ import annotations

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import (
    LOWER,
    Lowering,
    SymbolicDims,
    T,
    register,
    simple,
)
from graphdsl.graph import Symbol

# ---------------------------------------------------------------- comparisons and logic


def _compare(onnx_op: str, negate: bool = False) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        r = b.elementwise(onnx_op, args, result_bool=True, narrow_in_f32=True)
        return b.node("Not", [r.name], T.bool) if negate else r

    return lower


LOWER["equal"] = _compare("Equal")
LOWER["not_equal"] = _compare("Equal", negate=True)
LOWER["less"] = _compare("Less")
LOWER["less_equal"] = _compare("LessOrEqual")
LOWER["greater"] = _compare("Greater")
LOWER["greater_equal"] = _compare("GreaterOrEqual")
for _n, _o in (("logical_and", "And"), ("logical_or", "Or"), ("logical_xor", "Xor"),
               ("logical_not", "Not")):  # fmt: skip
    LOWER[_n] = simple(_o)


def _bitwise(bool_op: str, int_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        if args[0].dtype is T.bool:
            return b.elementwise(bool_op, args)
        return b.elementwise(int_op, args, bits=True)

    return lower


LOWER["bitwise_and"] = _bitwise("And", "BitwiseAnd")
LOWER["bitwise_or"] = _bitwise("Or", "BitwiseOr")
LOWER["bitwise_xor"] = _bitwise("Xor", "BitwiseXor")
LOWER["bitwise_not"] = _bitwise("Not", "BitwiseNot")


@register("where")
def _where(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.select(args[0], args[1], args[2])
