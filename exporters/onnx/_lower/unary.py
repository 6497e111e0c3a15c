"""Lowerings of the unary ops: transcendental functions, sigmoid (exact formula), sign, abs,
negative (unsigned wraps), relu (-0.0 -> 0.0) and rounding."""

from __future__ import annotations

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import (
    LOWER,
    Lowering,
    SymbolicDims,
    T,
    register,
    simple,
)
from exporters.onnx._types import storage, type_name
from graphdsl.dtypes import Kind
from graphdsl.graph import Symbol

for _n, _o in (("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"), ("sin", "Sin"),
               ("cos", "Cos"), ("tanh", "Tanh")):  # fmt: skip
    LOWER[_n] = simple(_o)


@register("sigmoid")
def _sigmoid(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # e = exp(-|x|); x >= 0: 1 / (1 + e), else e / (1 + e), as the reference computes it
    # (onnxruntime's Sigmoid kernel is an approximation, off by ~1e-5 relative)
    out = args[0].dtype
    f = T.float32 if out in NARROW else out
    x = b.cast(args[0], f)
    e = b.elementwise("Exp", [b.elementwise("Neg", [b.elementwise("Abs", [x])])])
    one = b.scalar(1.0, f)
    denom = b.elementwise("Add", [one, e])
    pos = b.elementwise("GreaterOrEqual", [x, b.scalar(0.0, f)], result_bool=True)
    num = b.select(pos, one, e)
    return b.cast(b.elementwise("Div", [num, denom]), out)


@register("rsqrt")
def _rsqrt(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # 1 / sqrt(x) with both steps in float32 for narrow floats and one rounding at the end,
    # as the reference computes it (Reciprocal could be an approximation: Div is exact)
    out = args[0].dtype
    f = T.float32 if out in NARROW else out
    root = b.elementwise("Sqrt", [b.cast(args[0], f)])
    return b.cast(b.elementwise("Div", [b.scalar(1.0, f), root]), out)


@register("sign")
def _sign(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if storage(x.dtype) is T.int64:  # Sign on int64 is wrong for |x| in [2**31, 2**41)
        zero = b.scalar(0, T.int64)
        pos = b.cast(b.elementwise("Greater", [x, zero], result_bool=True), T.int64)
        neg = b.cast(b.elementwise("Less", [x, zero], result_bool=True), T.int64)
        return b.cast(b.elementwise("Sub", [pos, neg]), x.dtype)
    f = T.float32 if x.dtype in NARROW else storage(x.dtype)
    if x.dtype.kind is Kind.float and not b.target.has("Sign", type_name(f)):
        # CUDA's Sign(NaN) is 0 (the reference: NaN): x itself where it is NaN
        xf = b.cast(x, f)
        nan = b.node("IsNaN", [xf.name], T.bool)
        r = b.node("Where", [nan.name, xf.name, b.node("Sign", [xf.name], f).name], f)
        return b.cast(r, x.dtype)
    return b.elementwise("Sign", args, narrow_in_f32=True)


@register("abs")
def _abs(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    if args[0].dtype.kind in (Kind.unsigned, Kind.bool):
        return args[0]
    return b.elementwise("Abs", args, narrow_in_f32=True)


@register("negative")
def _negative(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if x.dtype.kind is Kind.unsigned:  # numpy wraps: -x == 0 - x
        return b.elementwise("Sub", [b.scalar(0, x.dtype), x], bits=True)
    return b.elementwise("Neg", args, narrow_in_f32=True)


@register("relu")
def _relu(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if x.dtype.kind is Kind.unsigned:
        return x
    if storage(x.dtype) is T.int64:  # no int64 Relu kernel, and int64 Max is broken
        zero = b.scalar(0, x.dtype)
        return b.select(b.elementwise("Less", [x, zero], result_bool=True), zero, x)
    if x.dtype.kind is not Kind.float:
        return b.elementwise("Relu", args)
    # onnxruntime's Relu passes -0.0 through; max(x, 0) is +0.0 there (ONNX's reference):
    # adding +0.0 turns -0.0 into +0.0 and changes nothing else. Not needed where x holds no
    # -0.0 (a convolution with a bias, a sum with such a value: Builder.no_negative_zero)
    f = T.float32 if x.dtype in NARROW else storage(x.dtype)
    r = b.elementwise("Relu", [b.cast(x, f)])
    if not b.exact or r.name in b.no_negative_zero:
        return b.cast(r, x.dtype)
    return b.cast(b.node("Add", [r.name, b.scalar(0.0, f).name], f), x.dtype)


def _rounding(onnx_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        if args[0].dtype.kind is not Kind.float:
            return args[0]  # integers are unchanged
        return b.elementwise(onnx_op, args, narrow_in_f32=True)

    return lower


LOWER["floor"] = _rounding("Floor")
LOWER["ceil"] = _rounding("Ceil")
LOWER["round"] = _rounding("Round")  # half to even, as numpy.rint


@register("trunc")
def _trunc(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # ONNX has no Trunc: Floor(|x|) with x's sign put back by multiplying by +-1 (exact;
    # -0.5 and -0.0 give -0.0, NaN and inf pass). A Where between Ceil and Floor would lose
    # the -0.0 (onnxruntime's float Where returns +0.0 for a selected -0.0).
    x = args[0]
    if x.dtype.kind is not Kind.float:
        return x  # integers are unchanged
    f = T.float32 if x.dtype in NARROW else storage(x.dtype)
    xf = b.cast(x, f)
    r = b.elementwise("Floor", [b.elementwise("Abs", [xf])])
    s = b.elementwise("Where", [b.scalar(-1.0, f), b.scalar(1.0, f)],
                      fixed=[b.signbit(xf).name], bits=True)  # fmt: skip
    return b.cast(b.elementwise("Mul", [r, s]), x.dtype)


def _float_test(onnx_op: str) -> Lowering:
    # IsNaN/IsInf have kernels for every float dtype on both targets; an integer is never
    # NaN or inf: Not(Equal(x, x)) is all False, of x's shape
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x = args[0]
        if x.dtype.kind is Kind.float:
            return b.elementwise(onnx_op, [x], result_bool=True)
        same = b.elementwise("Equal", [x, x], result_bool=True)
        return b.node("Not", [same.name], T.bool)

    return lower


LOWER["is_nan"] = _float_test("IsNaN")
LOWER["is_inf"] = _float_test("IsInf")


@register("clip")
def _clip(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # minimum(maximum(x, min), max) through those ops' lowerings (exact: NaN propagates,
    # ties go to the bound). ONNX Clip takes scalar bounds only, and onnxruntime's float
    # Clip does not propagate a NaN bound; its results on NaN x are not specified.
    r, k = args[0], 1
    if node.attrs["has_min"]:
        r, k = LOWER["maximum"](b, node, [r, args[k]], dims), k + 1
    if node.attrs["has_max"]:
        r = LOWER["minimum"](b, node, [r, args[k]], dims)
    return r
