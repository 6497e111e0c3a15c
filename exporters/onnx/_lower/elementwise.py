"""Lowerings of the arithmetic ops: + - * / with wrapping, exact integer and float floor
division and modulo (numpy's signs), exact integer powers, maximum and minimum."""

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
from exporters.onnx._types import storage
from graphdsl.dtypes import Kind
from graphdsl.graph import Symbol

# ---------------------------------------------------------------- arithmetic
# Integers: ONNX Add/Sub/Mul wrap; a widened computation cast back wraps the same way.
LOWER["add"] = simple("Add", bits=True)
LOWER["sub"] = simple("Sub", bits=True)
LOWER["mul"] = simple("Mul", bits=True)
LOWER["div"] = simple("Div")  # floats only (the DSL makes integer division a float op)


def _max_min(onnx_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, y = args
        if x.dtype.kind is Kind.float and not b.exact:
            # onnxruntime's Max/Min propagate NaN; only which zero a tie gives differs
            return b.elementwise(onnx_op, args, narrow_in_f32=True)
        if x.dtype.kind is Kind.float:
            # NaN propagates and a tie goes to y (so max(-0.0, 0.0) is 0.0), as the
            # reference; onnxruntime's float32 Max returns x on a tie
            f = T.float32 if x.dtype in NARROW else storage(x.dtype)
            xf, yf = b.cast(x, f), b.cast(y, f)
            first = b.elementwise("Greater" if onnx_op == "Max" else "Less", [xf, yf],
                                  result_bool=True)  # fmt: skip
            nan = b.node("IsNaN", [xf.name], T.bool)
            take_x = b.node("Or", [first.name, nan.name], T.bool)
            return b.cast(b.select(take_x, xf, yf), x.dtype)
        if storage(x.dtype) is T.int64:
            # onnxruntime 1.31's Max/Min on int64 are wrong for |x| in [2**31, 2**41)
            lt = b.elementwise("Less", args, result_bool=True)
            return b.select(lt, y, x) if onnx_op == "Max" else b.select(lt, x, y)
        return b.elementwise(onnx_op, args)

    return lower


LOWER["maximum"] = _max_min("Max")
LOWER["minimum"] = _max_min("Min")


# ---------------------------------------------------------------- division family


def _int_divmod(b: Builder, a: V, d: V) -> tuple[V, V]:
    """numpy floor division and modulo for integers, without the ONNX traps.

    ONNX Div truncates and errors (or traps) on zero and on INT_MIN / -1; numpy floors,
    gives 0 for division by zero and wraps INT_MIN // -1 to INT_MIN.
    """
    t = a.dtype
    signed = t.kind is Kind.signed
    zero = b.elementwise("Equal", [d, b.scalar(0, t)], result_bool=True)
    bad = zero
    if signed:
        m1 = b.elementwise("Equal", [d, b.scalar(-1, t)], result_bool=True)
        bad = b.node("Or", [zero.name, m1.name], T.bool)
    safe = b.select(bad, b.scalar(1, t), d)
    q = b.elementwise("Div", [a, safe])  # truncates
    # fmod=0 is integer modulo with the divisor's sign (numpy's); fmod=1 goes through double
    r = b.elementwise("Mod", [a, safe], fmod=0)
    if signed:
        nonzero = b.node(
            "Not", [b.elementwise("Equal", [r, b.scalar(0, t)], result_bool=True).name], T.bool
        )
        sign_differs = b.node(
            "Xor",
            [b.elementwise("Less", [a, b.scalar(0, t)], result_bool=True).name,
             b.elementwise("Less", [safe, b.scalar(0, t)], result_bool=True).name],
            T.bool,
        )  # fmt: skip
        adjust = b.node("And", [nonzero.name, sign_differs.name], T.bool)
        q = b.elementwise("Sub", [q, b.cast(adjust, t)], bits=True)
        q = b.select(m1, b.elementwise("Neg", [a]), q)  # INT_MIN // -1 wraps to INT_MIN
    zero_t = b.scalar(0, t)
    return b.select(zero, zero_t, q), b.select(zero, zero_t, r)


def _float_divmod(b: Builder, a: V, d: V) -> tuple[V, V]:
    """numpy's npy_divmod for floats: fmod, then adjust to the divisor's sign and snap."""
    out = a.dtype
    f = T.float32 if out in NARROW else storage(out)
    a, d = b.cast(a, f), b.cast(d, f)
    m = b.elementwise("Mod", [a, d], key="Mod_fmod", fmod=1)
    zero, one, half = b.scalar(0, f), b.scalar(1, f), b.scalar(0.5, f)
    nonzero = b.node("Not", [b.elementwise("Equal", [m, zero], result_bool=True).name], T.bool)
    sign_differs = b.node(
        "Xor",
        [b.elementwise("Less", [d, zero], result_bool=True).name,
         b.elementwise("Less", [m, zero], result_bool=True).name],
        T.bool,
    )  # fmt: skip
    adjust = b.node("And", [nonzero.name, sign_differs.name], T.bool)
    mod = b.select(adjust, b.elementwise("Add", [m, d]), m)
    div = b.elementwise("Div", [b.elementwise("Sub", [a, m]), d])
    div = b.select(adjust, b.elementwise("Sub", [div, one]), div)
    floor = b.elementwise("Floor", [div])
    snap = b.elementwise("Greater", [b.elementwise("Sub", [div, floor]), half], result_bool=True)
    floor = b.select(snap, b.elementwise("Add", [floor, one]), floor)
    quotient = b.elementwise("Div", [a, d])
    if b.exact:
        # zeros carry numpy's signs: a zero remainder takes the divisor's sign, a zero
        # quotient that of a / b (1 / x < 0 tells -0.0 from 0.0)
        neg_zero = b.scalar(-0.0, f)
        mod = b.select(
            b.elementwise("Equal", [mod, zero], result_bool=True),
            b.select(b.signbit(d), neg_zero, zero),
            mod,
        )
        floor = b.select(
            b.elementwise("Equal", [div, zero], result_bool=True),
            b.select(b.signbit(quotient), neg_zero, zero),
            floor,
        )
    by_zero = b.elementwise("Equal", [d, zero], result_bool=True)
    floor = b.select(by_zero, quotient, floor)
    return b.cast(floor, out), b.cast(mod, out)


@register("floordiv")
def _floordiv(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    fn = _float_divmod if args[0].dtype.kind is Kind.float else _int_divmod
    return fn(b, args[0], args[1])[0]


@register("mod")
def _mod(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    fn = _float_divmod if args[0].dtype.kind is Kind.float else _int_divmod
    return fn(b, args[0], args[1])[1]


@register("pow")
def _pow(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    base, exp = args
    t = base.dtype
    if t.kind is Kind.float:
        return b.elementwise("Pow", args, narrow_in_f32=True)
    # Exact integer power, wrapping: square-and-multiply over the exponent's bits
    # (ONNX Pow on integers goes through floating point and saturates).
    signed = t.kind is Kind.signed
    zero, one, two = b.scalar(0, t), b.scalar(1, t), b.scalar(2, t)
    neg = b.elementwise("Less", [exp, zero], result_bool=True) if signed else None
    e = b.select(neg, zero, exp) if neg is not None else exp
    result, sq = one, base
    for _ in range(t.bits - (1 if signed else 0)):
        half = b.elementwise("Div", [e, two])
        bit = b.elementwise(
            "Equal", [b.elementwise("Sub", [e, b.elementwise("Mul", [half, two], bits=True)],
                                    bits=True), one],
            result_bool=True,
        )  # fmt: skip
        result = b.select(bit, b.elementwise("Mul", [result, sq], bits=True), result)
        sq = b.elementwise("Mul", [sq, sq], bits=True)
        e = half
    if neg is None:
        return result
    # negative exponent: 1 / base**n truncated toward zero
    inv = b.select(b.elementwise("Equal", [base, one], result_bool=True), one, zero)
    parity = b.elementwise("Mod", [exp, two], fmod=0)  # 0 or 1, exact
    odd = b.elementwise("Equal", [parity, one], result_bool=True)
    minus_one = b.scalar(-1, t)
    inv = b.select(
        b.elementwise("Equal", [base, minus_one], result_bool=True),
        b.select(odd, minus_one, one),
        inv,
    )
    return b.select(neg, inv, result)
