"""Lowerings of the activations and further transcendental functions (graphdsl.ops.activation).

onnxruntime's kernel tables (exporters/onnx/kernels/) have no Tan, Sinh, Cosh, Erf, Asin,
Acos, Atan or Atanh kernel (and ONNX has no Log1p or Expm1): each is composed from Exp, Log,
Sin, Cos and arithmetic, in float64 for float32 and narrower floats (so that the composed
errors stay within a few ulps of numpy's function), with the error bound beside it.
"""

from __future__ import annotations

import numpy as np

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._types import storage
from graphdsl.graph import Symbol


def _sigmoid_f(b: Builder, x: V) -> V:
    """sigmoid(x) in x's dtype, as graphdsl.ops.unary.sigmoid's reference computes it."""
    f = x.dtype
    e = b.elementwise("Exp", [b.elementwise("Neg", [b.elementwise("Abs", [x])])])
    one = b.scalar(1.0, f)
    denom = b.elementwise("Add", [one, e])
    pos = b.elementwise("GreaterOrEqual", [x, b.scalar(0.0, f)], result_bool=True)
    return b.elementwise("Div", [b.select(pos, one, e), denom])


@register("silu")
def _silu(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # x * sigmoid(x) in float32 for narrow floats, one rounding at the end (the reference's
    # steps: inexact only through Exp)
    out = args[0].dtype
    x = b.cast(args[0], T.float32 if out in NARROW else storage(out))
    return b.cast(b.elementwise("Mul", [x, _sigmoid_f(b, x)]), out)


def _wide(b: Builder, x: V) -> V:
    """x in float64: the composed formulas below run there for every float dtype."""
    return b.cast(x, T.float64)


@register("tan")
def _tan(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # Sin / Cos in float64 (no Tan kernel): for float32 and narrower within an ulp after the
    # final rounding. For float64, onnxruntime's Sin and Cos are accurate to about an eps
    # absolutely, not relatively (sin(3.1415870468567) is off by 1e5 ulps): tan is off by up
    # to about eps * (1 + tan**2) near its zeros k*pi and poles (k + 1/2)*pi, elsewhere
    # within a few ulps
    x = _wide(b, args[0])
    r = b.elementwise("Div", [b.elementwise("Sin", [x]), b.elementwise("Cos", [x])])
    return b.cast(r, args[0].dtype)


def _with_sign(b: Builder, magnitude: V, x: V) -> V:
    """``magnitude`` (>= 0 or NaN) with x's sign bit: times -1 or 1 (exact; -0.0 kept)."""
    f = x.dtype
    s = b.elementwise("Where", [b.scalar(-1.0, f), b.scalar(1.0, f)],
                      fixed=[b.signbit(x).name], bits=True)  # fmt: skip
    return b.elementwise("Mul", [magnitude, s])


def _exp_pair(b: Builder, a: V) -> tuple[V, V]:
    """(e**a, e**-a) for a = |x| in float64 (e**a overflows for a in [709.78, 710.48),
    where cosh and sinh are still finite: :func:`_large` replaces those)."""
    e = b.elementwise("Exp", [a])
    return e, b.elementwise("Div", [b.scalar(1.0, T.float64), e])


def _half_exp(b: Builder, a: V) -> V:
    """e**a / 2 for large a (> 20: e**-a is negligible there), spelled
    (e**(a/2) / 2) * e**(a/2): finite up to cosh's own overflow threshold, within about
    2 ulps."""
    h = b.elementwise("Exp", [b.elementwise("Mul", [a, b.scalar(0.5, T.float64)])])
    return b.elementwise("Mul", [b.elementwise("Mul", [h, b.scalar(0.5, T.float64)]), h])


def _large(b: Builder, a: V, small: V) -> V:
    """``_half_exp(a)`` where a > 20 (and NaN stays NaN through ``small``), else ``small``."""
    big = b.elementwise("Greater", [a, b.scalar(20.0, T.float64)], result_bool=True)
    return b.elementwise("Where", [_half_exp(b, a), small], fixed=[big.name], bits=True)


@register("cosh")
def _cosh(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # (e**|x| + e**-|x|) / 2 in float64 (no Cosh kernel): no cancellation, within about
    # 2.5 ulps of cosh for float64 (half an ulp after rounding to float32 and narrower);
    # e**(|x|/2) squared past |x| = 20 keeps [709.78, 710.48) finite
    x = _wide(b, args[0])
    a = b.elementwise("Abs", [x])
    e, inv = _exp_pair(b, a)
    small = b.elementwise("Mul", [b.elementwise("Add", [e, inv]), b.scalar(0.5, T.float64)])
    return b.cast(_large(b, a, small), args[0].dtype)


@register("sinh")
def _sinh(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # sign(x) * sinh(|x|) in float64 (no Sinh kernel). For |x| >= 1, (e**a - e**-a) / 2
    # (cancellation at most 1.31x: within about 2.5 ulps); below 1, 2t / (1 - t**2) with
    # t = tanh(a/2) (no cancellation, 1 - t**2 >= 0.78: within about 3 ulps); below 2**-26
    # sinh(a) rounds to a itself (a / 2 could underflow: subnormals pass unchanged)
    x = _wide(b, args[0])
    f = T.float64
    a = b.elementwise("Abs", [x])
    e, inv = _exp_pair(b, a)
    mid = b.elementwise("Mul", [b.elementwise("Sub", [e, inv]), b.scalar(0.5, f)])
    t = b.elementwise("Tanh", [b.elementwise("Mul", [a, b.scalar(0.5, f)])])
    den = b.elementwise("Sub", [b.scalar(1.0, f), b.elementwise("Mul", [t, t])])
    low = b.elementwise("Div", [b.elementwise("Add", [t, t]), den])
    below_one = b.elementwise("Less", [a, b.scalar(1.0, f)], result_bool=True)
    r = b.elementwise("Where", [low, mid], fixed=[below_one.name], bits=True)
    tiny = b.elementwise("Less", [a, b.scalar(2.0**-26, f)], result_bool=True)
    r = b.elementwise("Where", [a, r], fixed=[tiny.name], bits=True)
    return b.cast(_with_sign(b, _large(b, a, r), x), args[0].dtype)


def _log1p_f64(b: Builder, x: V) -> V:
    """log1p(x) for float64 x, its sign lost where it is zero (see _log1p)."""
    f = T.float64
    u = b.elementwise("Add", [b.scalar(1.0, f), x])
    ratio = b.elementwise("Div", [x, b.elementwise("Sub", [u, b.scalar(1.0, f)])])
    r = b.elementwise("Mul", [b.elementwise("Log", [u]), ratio])
    one = b.elementwise("Equal", [u, b.scalar(1.0, f)], result_bool=True)
    r = b.elementwise("Where", [x, r], fixed=[one.name], bits=True)
    inf = b.elementwise("Equal", [x, b.scalar(np.inf, f)], result_bool=True)
    return b.elementwise("Where", [x, r], fixed=[inf.name], bits=True)


@register("log1p")
def _log1p(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # ONNX has no Log1p. In float64, u = 1 + x; log(u) * (x / (u - 1)) (Goldberg's
    # formula: the rounding of 1 + x cancels out; within a few ulps of log1p), x itself
    # where u == 1 (x below half an eps), +inf at +inf (the formula's inf / inf). log1p has
    # x's sign: the magnitude gets it back exactly (Where would turn a chosen -0.0 into +0.0)
    x = _wide(b, args[0])
    r = _log1p_f64(b, x)
    return b.cast(_with_sign(b, b.elementwise("Abs", [r]), x), args[0].dtype)


@register("expm1")
def _expm1(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # ONNX has no Expm1. In float64, u = e**x; (u - 1) * (x / log(u)) (Kahan's formula:
    # within a few ulps of expm1), x itself where u == 1, -1 below x = -40 (expm1 rounds
    # to -1 there; onnxruntime's Log of a subnormal u is off by 1e-5 relative) and +inf
    # where u is +inf (the formula's inf / inf). expm1 has x's sign: the magnitude gets it
    # back exactly (Where would turn a chosen -0.0 into +0.0)
    x = _wide(b, args[0])
    f = T.float64
    u = b.elementwise("Exp", [x])
    ratio = b.elementwise("Div", [x, b.elementwise("Log", [u])])
    r = b.elementwise("Mul", [b.elementwise("Sub", [u, b.scalar(1.0, f)]), ratio])
    one = b.elementwise("Equal", [u, b.scalar(1.0, f)], result_bool=True)
    r = b.elementwise("Where", [x, r], fixed=[one.name], bits=True)
    low = b.elementwise("Less", [x, b.scalar(-40.0, f)], result_bool=True)
    r = b.elementwise("Where", [b.scalar(-1.0, f), r], fixed=[low.name], bits=True)
    inf = b.elementwise("Equal", [u, b.scalar(np.inf, f)], result_bool=True)
    r = b.elementwise("Where", [u, r], fixed=[inf.name], bits=True)
    return b.cast(_with_sign(b, b.elementwise("Abs", [r]), x), args[0].dtype)


@register("atanh")
def _atanh(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # No Atanh kernel. In float64, a = |x|: atanh(a) = log1p(2a / (1 - a)) / 2 (1 - a is
    # exact from 0.5 up; log1p as above: within a few ulps), x's sign put back exactly;
    # a = 1 gives +inf, a > 1 NaN (log1p of a negative below -1)
    x = _wide(b, args[0])
    f = T.float64
    a = b.elementwise("Abs", [x])
    z = b.elementwise("Div", [b.elementwise("Add", [a, a]),
                              b.elementwise("Sub", [b.scalar(1.0, f), a])])  # fmt: skip
    r = b.elementwise("Mul", [_log1p_f64(b, z), b.scalar(0.5, f)])
    return b.cast(_with_sign(b, r, x), args[0].dtype)


# pi/2 and pi/4 as float64 plus the remainder of each (pi/2 - float(pi/2))
_PI_2 = (float(np.pi / 2), 6.123233995736766e-17)
_PI_4 = (float(np.pi / 4), 3.061616997868383e-17)
_ATAN_TERMS = 23  # |t| <= tan(pi/8) < 0.4143: t**46 / 47 is below 2**-60 of t


def _atan_f64(b: Builder, x: V) -> V:
    """atan(|x|) for float64 x (NaN stays NaN): reduced to |t| <= tan(pi/8) by
    atan(a) = pi/2 + atan(-1/a) above tan(3pi/8) and pi/4 + atan((a - 1)/(a + 1)) above
    tan(pi/8), then the Taylor series t * sum((-t**2)**k / (2k + 1)) by Horner's rule
    (alternating and decreasing: within about an ulp), the offset added as two parts."""
    f = T.float64
    a = b.elementwise("Abs", [x])
    one = b.scalar(1.0, f)
    high = b.elementwise("Greater", [a, b.scalar(2.414213562373095, f)], result_bool=True)
    mid = b.elementwise("Greater", [a, b.scalar(0.41421356237309503, f)], result_bool=True)
    t_high = b.elementwise("Neg", [b.elementwise("Div", [one, a])])
    t_mid = b.elementwise("Div", [b.elementwise("Sub", [a, one]),
                                  b.elementwise("Add", [a, one])])  # fmt: skip
    t = b.elementwise("Where", [t_mid, a], fixed=[mid.name], bits=True)
    t = b.elementwise("Where", [t_high, t], fixed=[high.name], bits=True)
    z = b.elementwise("Mul", [t, t])
    p = b.scalar((-1.0) ** (_ATAN_TERMS - 1) / (2 * _ATAN_TERMS - 1), f)
    for k in range(_ATAN_TERMS - 2, -1, -1):
        p = b.elementwise("Add", [b.elementwise("Mul", [p, z]),
                                  b.scalar((-1.0) ** k / (2 * k + 1), f)])  # fmt: skip
    zero = b.scalar(0.0, f)
    hi = b.elementwise("Where", [b.scalar(_PI_4[0], f), zero], fixed=[mid.name], bits=True)
    hi = b.elementwise("Where", [b.scalar(_PI_2[0], f), hi], fixed=[high.name], bits=True)
    lo = b.elementwise("Where", [b.scalar(_PI_4[1], f), zero], fixed=[mid.name], bits=True)
    lo = b.elementwise("Where", [b.scalar(_PI_2[1], f), lo], fixed=[high.name], bits=True)
    return b.elementwise("Add", [hi, b.elementwise("Add", [b.elementwise("Mul", [t, p]), lo])])


@register("atan")
def _atan(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # No Atan kernel: _atan_f64 (within a couple of ulps for float64; +-inf gives +-pi/2)
    # with x's sign put back exactly
    x = _wide(b, args[0])
    return b.cast(_with_sign(b, _atan_f64(b, x), x), args[0].dtype)


@register("asin")
def _asin(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # No Asin kernel. In float64, a = |x|: asin(a) = atan(a / sqrt((1 - a) * (1 + a)))
    # (1 - a exact from 0.5 up; atan's condition number is at most 1: within a few ulps);
    # a = 1 gives atan(inf) = pi/2, a > 1 NaN; x's sign put back exactly
    x = _wide(b, args[0])
    one = b.scalar(1.0, T.float64)
    a = b.elementwise("Abs", [x])
    d = b.elementwise("Mul", [b.elementwise("Sub", [one, a]), b.elementwise("Add", [one, a])])
    w = b.elementwise("Div", [a, b.elementwise("Sqrt", [d])])
    return b.cast(_with_sign(b, _atan_f64(b, w), x), args[0].dtype)


@register("acos")
def _acos(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # No Acos kernel. In float64, acos(x) = 2 atan(sqrt((1 - x) / (1 + x))) (one of 1 - x,
    # 1 + x is exact for |x| >= 0.5; within a few ulps); x = -1 gives 2 atan(inf) = pi,
    # |x| > 1 NaN
    x = _wide(b, args[0])
    one = b.scalar(1.0, T.float64)
    q = b.elementwise("Div", [b.elementwise("Sub", [one, x]), b.elementwise("Add", [one, x])])
    r = _atan_f64(b, b.elementwise("Sqrt", [q]))
    return b.cast(b.elementwise("Add", [r, r]), args[0].dtype)
