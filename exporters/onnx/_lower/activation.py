"""Lowerings of the activations and further transcendental functions (graphdsl.ops.activation).

onnxruntime's kernel tables (exporters/onnx/kernels/) have no Tan, Sinh, Cosh, Asin, Acos,
Atan or Atanh kernel (and ONNX has no Log1p or Expm1): each is composed from Exp, Log, Sin,
Cos and arithmetic, in float64 for float32 and narrower floats (so that the composed errors
stay within a few ulps of numpy's function), with the error bound beside it. Erf and Gelu
run their float32 kernels (float64 composes them: Cody's rational approximations of erf;
narrow floats run in float32 unless the target's narrow kernel rounds once, CUDA's).
"""

from __future__ import annotations

import numpy as np

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import SymbolicDims, T, register
from exporters.onnx._lower.cast import convert
from exporters.onnx._types import storage, type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.ops.activation import (
    GELU_QUICK_SCALE,
    GELU_SQRT1_2,
    GELU_TANH_CUBIC,
    GELU_TANH_SCALE,
)


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
    # x / (1 + exp(-x)) in float32 for narrow floats, one rounding at the end (the
    # reference's steps: inexact only through Exp); 4 nodes
    out = args[0].dtype
    x = b.cast(args[0], T.float32 if out in NARROW else storage(out))
    denom = b.elementwise("Add", [b.scalar(1.0, x.dtype),
                                  b.elementwise("Exp", [b.elementwise("Neg", [x])])])  # fmt: skip
    return b.cast(b.elementwise("Div", [x, denom]), out)


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


# ---------------------------------------------------------------------------- erf, gelu

# W. J. Cody's rational Chebyshev approximations of erf and erfc (Math. Comp. 23, 1969;
# netlib specfun CALERF), as (leading coefficient, the others in Cody's loop order):
# erf(y) = y * A(y**2) / B(y**2) for small y; erfc(y) = exp(-y**2) * C(y) / D(y) up to 4;
# erfc(y) = exp(-y**2) / y * (1/sqrt(pi) - w * P(w) / Q(w)), w = 1/y**2, above 4
# fmt: off
_ERF_A = (1.85777706184603153e-1, (3.16112374387056560e00, 1.13864154151050156e02,
                                   3.77485237685302021e02, 3.20937758913846947e03))
_ERF_B = (1.0, (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
                2.84423683343917062e03))
_ERF_C = (2.15311535474403846e-8, (5.64188496988670089e-1, 8.88314979438837594e00,
                                   6.61191906371416295e01, 2.98635138197400131e02,
                                   8.81952221241769090e02, 1.71204761263407058e03,
                                   2.05107837782607147e03, 1.23033935479799725e03))
_ERF_D = (1.0, (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
                1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
                3.43936767414372164e03, 1.23033935480374942e03))
_ERF_P = (1.63153871373020978e-2, (3.05326634961232344e-1, 3.60344899949804439e-1,
                                   1.25781726111229246e-1, 1.60837851487422766e-2,
                                   6.58749161529837803e-4))
_ERF_Q = (1.0, (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
                6.05183413124413191e-2, 2.33520497626869185e-3))
# fmt: on
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1
# Cody switches from erf's rational to 1 - erfc at 0.46875; the first rational is as
# accurate up to 0.5 (about an ulp from the exact erf, computed in exact arithmetic at
# 0.46875, 0.48 and 0.5), and from 0.5 on erf >= 0.52: an ulp of erfc is at most one of erf
_ERF_SMALL = 0.5
# erfc(y) underflows to 0 from y = 27.3 on; y is clamped to 28 (the formula's NaN at inf)
_ERFC_CLAMP = 28.0


def _cody(b: Builder, z: V, coefficients: tuple[float, tuple[float, ...]]) -> V:
    """Cody's loop: s = lead * z; s = (s + c) * z for every c but the last; s + last."""
    f = T.float64
    lead, rest = coefficients
    s = z if lead == 1.0 else b.elementwise("Mul", [z, b.scalar(lead, f)])
    for c in rest[:-1]:
        s = b.elementwise("Mul", [b.elementwise("Add", [s, b.scalar(c, f)]), z])
    return b.elementwise("Add", [s, b.scalar(rest[-1], f)])


def _erf_parts(b: Builder, y: V) -> tuple[V, V]:
    """(erf(y), erfc(y)) for float64 y >= 0 (or NaN): the first meant for y <= 0.5, the
    second for y > 0.5, each within a few ulps there (Cody's rationals; exp(-y**2) as
    exp(-s**2) * exp(-(y - s)(y + s)) with s = y rounded down to 1/16, Cody's way of keeping
    the rounding of y**2 out of it)."""
    f = T.float64
    z = b.elementwise("Mul", [y, y])
    ratio = b.elementwise("Div", [_cody(b, z, _ERF_A), _cody(b, z, _ERF_B)])
    small = b.elementwise("Mul", [y, ratio])
    big = b.elementwise("Greater", [y, b.scalar(_ERFC_CLAMP, f)], result_bool=True)
    yc = b.elementwise("Where", [b.scalar(_ERFC_CLAMP, f), y], fixed=[big.name], bits=True)
    mid = b.elementwise("Div", [_cody(b, yc, _ERF_C), _cody(b, yc, _ERF_D)])
    w = b.elementwise("Div", [b.scalar(1.0, f), b.elementwise("Mul", [yc, yc])])
    tail = b.elementwise("Div", [_cody(b, w, _ERF_P), _cody(b, w, _ERF_Q)])
    tail = b.elementwise("Sub", [b.scalar(_ONE_OVER_SQRT_PI, f), b.elementwise("Mul", [w, tail])])
    tail = b.elementwise("Div", [tail, yc])
    above4 = b.elementwise("Greater", [yc, b.scalar(4.0, f)], result_bool=True)
    r = b.elementwise("Where", [tail, mid], fixed=[above4.name], bits=True)
    sixteenths = b.elementwise("Floor", [b.elementwise("Mul", [yc, b.scalar(16.0, f)])])
    s = b.elementwise("Mul", [sixteenths, b.scalar(1 / 16, f)])
    d = b.elementwise("Mul", [b.elementwise("Sub", [yc, s]), b.elementwise("Add", [yc, s])])
    e1 = b.elementwise("Exp", [b.elementwise("Neg", [b.elementwise("Mul", [s, s])])])
    e2 = b.elementwise("Exp", [b.elementwise("Neg", [d])])
    return small, b.elementwise("Mul", [b.elementwise("Mul", [e1, e2]), r])


def _erf_f64(b: Builder, x: V) -> V:
    """erf(x) for float64 x: within 3 eps relatively of C's erf (4 ulps where erf(x) lies
    just below a power of two; 2.9 eps measured over 9M points), within an ulp for
    subnormal x, exact at NaN, +-inf and +-0: tests/test_norm_ops.py."""
    f = T.float64
    y = b.elementwise("Abs", [x])
    small, erfc = _erf_parts(b, y)
    big = b.elementwise("Add", [b.elementwise("Sub", [b.scalar(0.5, f), erfc]), b.scalar(0.5, f)])
    low = b.elementwise("LessOrEqual", [y, b.scalar(_ERF_SMALL, f)], result_bool=True)
    r = b.elementwise("Where", [small, big], fixed=[low.name], bits=True)
    return _with_sign(b, r, x)


def _result(b: Builder, r: V, out: DType) -> V:
    """The float64 result ``r`` in the node's dtype: rounded, or for an integer or bool result
    (a policy that keeps those dtypes, max-graph's) converted as graphdsl converts."""
    return b.cast(r, out) if out.is_float else convert(b, r, out)


@register("erf")
def _erf(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # onnxruntime's Erf has a float32 kernel only, within an ulp of the exact erf over the
    # float32 grid (measured: every 37th float32 in [2**-126, 4] and its negative): float32
    # and narrower run it (narrow ones in float32, rounded once; on CUDA float16 and bfloat16
    # run their own kernel, which computes erff in float32 and rounds once: Target.rounds_once).
    # float64, and every dtype on targets without the kernel, run Cody's rationals in float64
    x, out = args[0], args[0].dtype
    if out.is_float and out is not T.float64 and b.target.has("Erf", "FLOAT"):
        narrow = not b.target.rounds_once("Erf", type_name(storage(out)))
        return b.elementwise("Erf", [x], narrow_in_f32=narrow)
    return _result(b, _erf_f64(b, _wide(b, x)), out)


def _gelu_f64(b: Builder, x: V, approximate: str) -> V:
    """gelu(x) for float64 x, as graphdsl.ops.activation.gelu's reference computes it."""
    f = T.float64
    if approximate == "quick":
        return b.elementwise(
            "Mul", [x, _sigmoid_f(b, b.elementwise("Mul", [x, b.scalar(GELU_QUICK_SCALE, f)]))]
        )
    if approximate == "tanh":
        cube = b.elementwise("Mul", [b.elementwise("Mul", [x, x]), x])
        inner = b.elementwise(
            "Add", [x, b.elementwise("Mul", [b.scalar(GELU_TANH_CUBIC, f), cube])]
        )
        z = b.elementwise("Mul", [b.scalar(GELU_TANH_SCALE, f), inner])
        return b.elementwise("Mul", [x, _sigmoid_f(b, z)])
    # 1 + erf(t): 1 + erf or 2 - erfc for t >= 0, 1 - erf or erfc (no cancellation) below
    t = b.elementwise("Mul", [x, b.scalar(GELU_SQRT1_2, f)])
    y = b.elementwise("Abs", [t])
    small, erfc = _erf_parts(b, y)
    one, two = b.scalar(1.0, f), b.scalar(2.0, f)
    low = b.elementwise("LessOrEqual", [y, b.scalar(_ERF_SMALL, f)], result_bool=True)
    pos = b.elementwise("Where", [b.elementwise("Add", [one, small]),
                                  b.elementwise("Sub", [two, erfc])],
                        fixed=[low.name], bits=True)  # fmt: skip
    neg = b.elementwise("Where", [b.elementwise("Sub", [one, small]), erfc],
                        fixed=[low.name], bits=True)  # fmt: skip
    nonneg = b.elementwise("GreaterOrEqual", [x, b.scalar(0.0, f)], result_bool=True)
    v = b.elementwise("Where", [pos, neg], fixed=[nonneg.name], bits=True)
    return b.elementwise("Mul", [b.elementwise("Mul", [x, b.scalar(0.5, f)]), v])


@register("gelu")
def _gelu(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # onnxruntime's Gelu (opset 20; approximate "none" or "tanh") has a float32 kernel only:
    # float32 and narrower run it (narrow ones in float32, rounded once; CUDA's float16
    # kernel of "none" computes in float32 and rounds once, so float16 runs it there:
    # Target.rounds_once; its "tanh" and bfloat16 kernels round each step). It computes
    # x/2 * (1 + erf(x/sqrt 2)) (1 + tanh(...)) in float32, so below x = -3 or so the sum
    # cancels: measured within 4 ulps + 2 eps |x| of the reference on 3M float32 values
    # (0 below -5.4 where the reference is -1e-7 and smaller). float64, "quick" (ONNX has no
    # such op) and targets without the kernel compose the reference's formulas in float64
    x, out = args[0], args[0].dtype
    approximate = str(node.attrs.get("approximate", "none"))
    key = "Gelu" if approximate == "none" else "Gelu_tanh"
    native = approximate != "quick" and out.is_float and out is not T.float64
    if native and b.target.has(key, "FLOAT"):
        narrow = not b.target.rounds_once(key, type_name(storage(out)))
        scalar = node.rank == 0 and b.target.quirk("gelu_rank0")
        if scalar:  # CUDA's Gelu refuses a rank-0 input: as a [1]
            x = b.node("Reshape", [x.name, b.int64s([1])], x.dtype)
        r = b.elementwise("Gelu", [x], key=key, narrow_in_f32=narrow, approximate=approximate)
        return b.node("Reshape", [r.name, b.int64s([])], r.dtype) if scalar else r
    return _result(b, _gelu_f64(b, _wide(b, x), approximate), out)
