"""The suite's one rule for comparing floats (issue 29). Every test that compares a float
result of onnxruntime (or of any second computation) with the reference goes through here.

**Bit for bit only where the result is exact by construction**, and the helper checks the
construction rather than assuming it:

- an elementwise op that rounds once (add, mul, div, sqrt, casts, ...) is correctly rounded
  by IEEE 754 on every conforming processor: :func:`assert_bits`;
- a sum (a dot product's, a matmul's, a window's) is exact when every term is representable
  in the compute dtype and every partial sum, in any order, is too: :func:`exactly_summable`
  checks a sufficient condition (below), and :func:`assert_exact_sum` refuses to compare bit
  for bit when it does not hold.

**Everywhere else, a bound derived from the op** (:func:`assert_close` with one of the bounds
below). u is the unit roundoff of the dtype the sum is computed in (2**-24 for float32,
2**-53 for float64; onnxruntime's CPU kernels and ``gd.evaluate`` compute float16 and bfloat16
sums in float32), γ_n = n u / (1 - n u) (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §3.1):

- A dot product of length n computed in any order, with or without fused multiply-adds:
  ``|ŝ - Σ a_i b_i| <= γ_n Σ |a_i b_i|`` (Higham (3.5); an FMA only removes roundings). A sum
  of n terms is the case b_i = 1 (γ_{n-1} would do; γ_n is kept for one formula).
- Rounding ŝ to the output dtype (unit roundoff u_o, smallest subnormal s_o) moves it by at
  most ``u_o |ŝ| + s_o / 2 <= u_o / (1 - u_o) |r| + s_o / 2`` where r is the rounded value.
- Two such computations (onnxruntime's and the reference's, each in its own order) of the
  same exact value v differ by at most the sum of their distances to v:
  ``|r1 - r2| <= 2 γ_n S + u_o / (1 - u_o) (|r1| + |r2|) + s_o`` with S = Σ |a_i b_i|
  (computed here in float64, and rounded up by a few float64 ulps: :func:`dot_bound`).
- A transcendental kernel (exp, tanh, erf ...) is within k ulps of the correctly rounded
  value, k stated per kernel by its caller: :func:`ulp_bound`.

**The sign of a zero** is promised only where the math decides it: an elementwise op that
rounds once (``-1.0 * 0.0`` is -0.0 everywhere). A sum whose terms cancel, or whose terms
are all -0.0, may be +0.0 or -0.0 depending on the order and on whether the accumulator
starts at +0.0 (BLAS kernels and onnxruntime's do; numpy's first product does not), so
:func:`assert_exact_sum` and :func:`assert_close` ignore zero signs. docs/semantics.md says so.

**Exact summability** (:func:`exactly_summable`): let every term t_i be representable in the
dtype (p significand bits, smallest subnormal s), and q the largest power of two that divides
all of them (q >= s). Every partial sum, in any order, is then an integer multiple of q, and
no larger in magnitude than Σ |t_i|; if Σ |t_i| <= 2**p q, every such multiple is
representable, so no addition rounds and every order gives the exact sum.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import graphdsl as gd
from graphdsl import DType

__all__ = [
    "assert_bits",
    "assert_close",
    "assert_exact_sum",
    "assert_matmul",
    "compute_dtype",
    "dot_bound",
    "exactly_summable",
    "gamma",
    "matmul_terms",
    "sum_bound",
    "ulp_bound",
    "unit_roundoff",
]


def _np(dt: DType | np.dtype | type) -> np.dtype:
    return dt.np if isinstance(dt, DType) else np.dtype(dt)


def unit_roundoff(dt: DType | np.dtype | type) -> float:
    """u = 2**-p for a dtype of p significand bits (half its machine epsilon)."""
    return float(ml_dtypes.finfo(_np(dt)).eps) / 2


def _smallest(dt: DType | np.dtype | type) -> float:
    return float(ml_dtypes.finfo(_np(dt)).smallest_subnormal)


def compute_dtype(dt: DType | np.dtype | type) -> np.dtype:
    """The dtype a sum of ``dt`` values is computed in: float64 for float64, float32 for the
    narrower floats (onnxruntime's CPU kernels, the exporter's half-precision lowerings under
    ``exact=True`` and ``gd.evaluate`` all widen them)."""
    return np.dtype(np.float64) if _np(dt).itemsize >= 8 else np.dtype(np.float32)


def gamma(n: int, dt: DType | np.dtype | type) -> float:
    """γ_n = n u / (1 - n u) for the unit roundoff u of ``dt`` (needs n u < 1)."""
    nu = n * unit_roundoff(dt)
    assert nu < 1, f"γ_{n} undefined for {dt}: n u = {nu}"
    return nu / (1 - nu)


def _up(x: np.ndarray) -> np.ndarray:
    """A float64 value computed with a few roundings, made an upper bound of the exact one."""
    return np.asarray(x, np.float64) * (1 + 2.0**-48)


def dot_bound(
    abs_sum: np.ndarray, n: int, out: DType | np.dtype | type, got: np.ndarray,
    want: np.ndarray, compute: DType | np.dtype | type | None = None,
) -> np.ndarray:  # fmt: skip
    """``|got - want|`` allowed for two evaluations of the same sums of n products, each in
    its own order in ``compute`` (default: :func:`compute_dtype` of ``out``), rounded to
    ``out``; ``abs_sum`` is S = Σ |a_i b_i| per element (see the module's derivation)."""
    c = compute if compute is not None else compute_dtype(out)
    u_o = unit_roundoff(out)
    with np.errstate(all="ignore"):
        g = np.abs(np.asarray(got, np.float64))
        w = np.abs(np.asarray(want, np.float64))
        b = 2 * gamma(max(n, 1), c) * _up(abs_sum) + u_o / (1 - u_o) * (g + w) + _smallest(out)
    return np.asarray(_up(b))


def sum_bound(
    abs_sum: np.ndarray, n: int, out: DType | np.dtype | type, got: np.ndarray,
    want: np.ndarray, compute: DType | np.dtype | type | None = None,
) -> np.ndarray:  # fmt: skip
    """:func:`dot_bound` for a plain sum of n terms (each term a product with 1)."""
    return dot_bound(abs_sum, n, out, got, want, compute)


def ulp_bound(want: np.ndarray, dt: DType | np.dtype | type, ulps: float) -> np.ndarray:
    """``ulps`` units in the last place of ``dt`` at ``want`` (eps |want| + the smallest
    subnormal: at least one ulp there), for kernels stated to be within that many."""
    with np.errstate(all="ignore"):
        w = np.abs(np.asarray(want, np.float64))
        eps = float(ml_dtypes.finfo(_np(dt)).eps)
        return np.asarray(ulps * (eps * w + _smallest(dt)))


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split of float64 ``x`` into two halves of 26 bits, x = hi + lo exactly."""
    c = 134217729.0 * x  # 2**27 + 1
    hi = c - (c - x)
    return hi, x - hi


def _product_error(a: np.ndarray, b: np.ndarray, p: np.ndarray) -> np.ndarray:
    """a * b - p exactly, for p = fl(a * b) in float64 (Dekker's TwoProduct): 0 where the
    float64 product is exact (barring overflow and underflow, checked apart)."""
    ah, al = _split(a)
    bh, bl = _split(b)
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def matmul_terms(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The products a[..., i, k] * b[..., k, j] of ``a @ b`` in float64, shape [..., i, j, k];
    a product float64 cannot hold exactly (float64 operands only: float32 ones have 24 bits
    each) is NaN, so that no sum of it passes as exact."""
    a64 = np.asarray(a, np.float64)
    b64 = np.asarray(b, np.float64)
    if a64.ndim == 1:
        a64 = a64[None, :]
    if b64.ndim == 1:
        b64 = b64[:, None]
    bt = np.swapaxes(b64, -1, -2)
    with np.errstate(all="ignore"):
        x, y = a64[..., :, None, :], bt[..., None, :, :]
        terms = np.asarray(x * y)
        inexact = _product_error(x, y, terms) != 0
        # a product in float64's subnormal range may have lost bits the split cannot see
        inexact |= (np.abs(terms) < 2.0**-969) & (x != 0) & (y != 0)
    return np.where(inexact & np.isfinite(terms), np.nan, terms)


def _terms_exact(terms: np.ndarray, dt: np.dtype) -> bool:
    """Is each float64 term representable in ``dt``?"""
    return bool(np.all(terms.astype(dt).astype(np.float64) == terms))


def exactly_summable(terms: np.ndarray, dt: DType | np.dtype | type, axis: int = -1) -> bool:
    """Is every sum of ``terms`` along ``axis`` exact in ``dt`` in any order (the module's
    condition, per sum: all terms finite and representable, Σ|t| <= 2**p q)? ``terms`` are
    the exact values, in float64 (:func:`matmul_terms` makes them NaN where it cannot)."""
    d = _np(dt)
    t = np.moveaxis(np.asarray(terms, np.float64), axis, -1)
    if not np.all(np.isfinite(t)) or not _terms_exact(t, d):
        return False
    p = int(ml_dtypes.finfo(d).nmant) + 1
    # per sum, the largest power of two dividing every term: its lowest set significand bit
    mant, exp = np.frexp(np.abs(t))  # |t| = mant * 2**exp, 0.5 <= mant < 1
    ints = (mant * 2.0**53).astype(np.int64)
    low = np.log2(np.maximum(ints & -ints, 1).astype(np.float64)) - 53 + exp
    low = np.where(t == 0, np.inf, low).min(axis=-1)  # a sum of zeros: any q
    with np.errstate(over="ignore"):  # (inf: a sum of zeros, or q past the dtype's range)
        top = np.minimum(np.exp2(np.minimum(low + p, 1024.0)), float(ml_dtypes.finfo(d).max))
    total = np.abs(t).sum(axis=-1)
    return bool(np.all((total == 0) | (total <= top)))


def _check_layout(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, reference {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, reference {want.shape}"


def _report(bad: np.ndarray, got: np.ndarray, want: np.ndarray, what: str, extra: str) -> str:
    idx = np.argwhere(bad)[:5]
    rows = [f"  at {tuple(int(i) for i in ix)}: got {got[tuple(ix)]!r}, want {want[tuple(ix)]!r}"
            for ix in idx]  # fmt: skip
    return f"{what}: {int(bad.sum())} of {bad.size} elements differ{extra}\n" + "\n".join(rows)


def assert_bits(got: np.ndarray, want: np.ndarray, what: str = "result") -> None:
    """Equal bit for bit: dtype, shape, every value and the sign of every zero; NaN where the
    reference has NaN (payloads are not compared). For results exact by construction only:
    a once-rounded elementwise op, integers, bools, data movement."""
    got, want = np.asarray(got), np.asarray(want)
    _check_layout(got, want, what)
    if not gd.dtype(want.dtype).is_inexact:
        bad = np.asarray(got != want)
    else:
        g = got.astype(np.complex128 if np.iscomplexobj(got) else np.float64)
        w = want.astype(g.dtype)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        with np.errstate(all="ignore"):
            same = (g == w) & (np.signbit(g.real) == np.signbit(w.real))
        bad = ~(same | (nan_g & nan_w))
    assert not bad.any(), _report(bad, got, want, what, " bit for bit")


def assert_close(
    got: np.ndarray, want: np.ndarray, bound: np.ndarray | float, what: str = "result"
) -> None:
    """``|got - want| <= bound`` elementwise, with NaN exactly where the reference has NaN and
    infinities equal; zero signs are not compared (see the module). ``bound`` comes from one
    of the derived bounds here (dot_bound, sum_bound, ulp_bound) or a derivation beside the
    test that states it."""
    got, want = np.asarray(got), np.asarray(want)
    _check_layout(got, want, what)
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    with np.errstate(all="ignore"):
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        inf = np.isinf(g) | np.isinf(w)
        near = np.abs(g - w) <= np.asarray(bound, np.float64)
        ok = np.where(nan_g | nan_w, nan_g & nan_w, np.where(inf, g == w, near))
    bad = ~ok
    worst = ""
    if bad.any():
        with np.errstate(all="ignore"):
            excess = np.where(bad & ~(nan_g | nan_w | inf), np.abs(g - w), 0)
        worst = f" (largest difference {excess.max():.3g} beyond a bound of the op)"
    assert not bad.any(), _report(bad, got, want, what, worst)


def assert_exact_sum(
    got: np.ndarray, want: np.ndarray, terms: np.ndarray, what: str = "result",
    compute: DType | np.dtype | type | None = None,
) -> None:  # fmt: skip
    """``got`` equals ``want`` exactly (zero signs aside), after checking that every sum of
    ``terms`` (shape [*got.shape, n]) is exact in any order in the narrower of ``compute``
    and the result dtype: the test's claim of exactness is verified, not assumed."""
    got, want = np.asarray(got), np.asarray(want)
    out = np.dtype(want.dtype)
    c = np.dtype(compute if compute is not None else compute_dtype(out))
    narrow = out if out.itemsize <= c.itemsize else c
    assert exactly_summable(terms, narrow), (
        f"{what}: not exact by construction in {narrow} (terms not representable, or their "
        "partial sums may round): compare with a bound (tests/floats.py dot_bound)"
    )
    assert_close(got, want, 0.0, what)


def assert_matmul(
    got: np.ndarray, want: np.ndarray, a: np.ndarray, b: np.ndarray, what: str = "matmul"
) -> None:
    """A float matmul's result against the reference: bit for bit where its sums are exact
    by construction (:func:`exactly_summable`), else within :func:`dot_bound`."""
    terms = matmul_terms(a, b)
    out = np.dtype(np.asarray(want).dtype)
    narrow = out if out.itemsize <= compute_dtype(out).itemsize else compute_dtype(out)
    if exactly_summable(terms, narrow):
        assert_exact_sum(got, want, terms, what)
        return
    with np.errstate(all="ignore"):
        s = np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64))
    s = s.reshape(np.asarray(want).shape)
    assert_close(got, want, dot_bound(s, terms.shape[-1], out, got, want), what)
