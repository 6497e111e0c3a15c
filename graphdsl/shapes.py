"""Static shapes: integer and symbolic (string) dimensions, broadcasting, axes.

>>> broadcast_shapes(("batch", 1, 4), (3, 1))
('batch', 3, 4)
>>> broadcast_shapes((2, 3), (4, 3))  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
graphdsl.shapes.ShapeError: shapes (2, 3) and (4, 3) do not broadcast: dimension 2 vs 4; ...
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import TypeAlias

__all__ = [
    "Dim",
    "Shape",
    "ShapeError",
    "bind_dim",
    "broadcast_shapes",
    "derived_dim",
    "dim_factors",
    "dim_poly",
    "dim_terms",
    "floordiv_dim",
    "format_shape",
    "normalize_axes",
    "normalize_axis",
    "render_dim",
    "render_poly",
    "shape_of",
    "sum_dims",
]

Dim: TypeAlias = int | str
Shape: TypeAlias = tuple[Dim, ...]


class ShapeError(ValueError):
    """Shapes that do not fit an op (broadcasting, matmul, reshape, axes)."""


def format_shape(shape: Shape) -> str:
    """``(batch, 4)``; a scalar is ``()``."""
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def shape_of(dims: Sequence[int | str]) -> Shape:
    """Validate and normalize a user-given shape."""
    out: list[Dim] = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            raise ShapeError(
                f"a dimension must be an int or a symbolic name (str), got {d!r} in "
                f"{tuple(dims)}; use sizes like 3 and names like 'batch'"
            )
        if isinstance(d, int) and d < 0:
            raise ShapeError(
                f"a dimension must be >= 0, got {d} in {tuple(dims)}; name a dimension whose "
                "size varies ('batch') instead of -1"
            )
        if isinstance(d, str) and not d:
            raise ShapeError(
                f"a symbolic dimension needs a name, got '' in {tuple(dims)}; use a name "
                "like 'batch'"
            )
        out.append(int(d) if isinstance(d, int) else d)
    return tuple(out)


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy broadcasting; a symbolic dim matches itself or 1, nothing else."""
    nonscalar = [s for s in shapes if s]
    if not nonscalar:
        return ()
    if all(s == nonscalar[0] for s in nonscalar):
        return nonscalar[0]
    ndim = max(len(s) for s in shapes)
    result: list[Dim] = []
    for i in range(-ndim, 0):
        dim: Dim = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif dim != d:
                listed = " and ".join(format_shape(x) for x in shapes)
                raise ShapeError(
                    f"shapes {listed} do not broadcast: dimension {dim} vs {d}; dimensions "
                    "aligned from the right must be equal or 1 (reshape or broadcast_to first)"
                )
        result.append(dim)
    return tuple(result)


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ShapeError(f"{what} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ShapeError(
            f"{what} {axis} is out of range for a value of rank {ndim}; use an axis from "
            f"{-ndim} to {ndim - 1}"
        )
    return axis % ndim


def normalize_axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Sorted, unique, non-negative axes; None means all axes."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (int, list, tuple)):
        raise ShapeError(f"axis must be an int, a sequence of ints or None, got {axis!r}")
    axes = [axis] if isinstance(axis, int) else list(axis)
    norm = sorted(normalize_axis(a, ndim) for a in axes)
    if len(set(norm)) != len(norm):
        raise ShapeError(f"repeated axis in {axis}; name each axis once")
    return tuple(norm)


def num_elements(shape: Shape) -> int | None:
    """The element count, or None if a dimension is symbolic."""
    if any(isinstance(d, str) for d in shape):
        return None
    return math.prod(int(d) for d in shape)


# A symbolic dimension is a polynomial in its names: a sum of terms, each a rational coefficient
# times a product of names raised to (possibly negative) powers. Its text form is what
# render_poly writes and dim_poly reads: terms joined by "+", each "-"? then factors joined by
# "*", then at most one "/" and the divisors ("n*2+m*3/2+-4"). A term may also be a floor
# division "(num)//(den)" (floordiv_dim; graphdsl.max writes MAX's floor divisions so): one
# opaque factor, which bind_dim evaluates. A string that is not of that form is a name of the
# user's own: one opaque factor.
Term: TypeAlias = frozenset[tuple[str, int]]  # (name, power), powers non-zero
Poly: TypeAlias = dict[Term, Fraction]  # term -> coefficient, coefficients non-zero

_FACTOR = r"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)"
_PRODUCT = rf"{_FACTOR}(?:\*{_FACTOR})*"
_TERM = re.compile(rf"-?{_PRODUCT}(?:/{_PRODUCT})?")
_ONE: Term = frozenset()


def _top_terms(d: str) -> list[str]:
    """``d`` split at its "+" signs outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(d):
        depth += (ch == "(") - (ch == ")")
        if ch == "+" and depth == 0:
            parts.append(d[start:i])
            start = i + 1
    parts.append(d[start:])
    return parts


def _floordiv_term(t: str) -> tuple[Dim, Dim] | None:
    """(numerator, denominator) of a term "(num)//(den)" (each balanced), else None."""
    if not t.startswith("("):
        return None
    depths = list(itertools.accumulate((ch == "(") - (ch == ")") for ch in t))
    close = depths.index(0) if 0 in depths else len(t)  # the "(" at 0 closes here
    rest = t[close + 1 :]
    if not (rest.startswith("//(") and rest.endswith(")")):
        return None
    num, den = t[1:close], rest[3:-1]
    depth = 0
    for ch in den:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return None
    if depth or not num or not den:
        return None
    return (int(num) if num.lstrip("-").isdigit() else num,
            int(den) if den.isdigit() else den)  # fmt: skip


def dim_factors(d: Dim) -> tuple[Fraction, Counter[str]]:
    """A one-term dimension as coefficient * product of names / product of names (a name
    counts -1); a sum, or a name of the user's own, is one opaque factor."""
    if isinstance(d, int):
        return Fraction(d), Counter()
    if "+" in d or not _TERM.fullmatch(d):
        return Fraction(1), Counter({d: 1})
    coef, names = Fraction(-1 if d.startswith("-") else 1), Counter[str]()
    for sign, part in zip((1, -1), d.lstrip("-").split("/"), strict=False):
        for t in part.split("*"):
            if t.isdigit():
                coef = coef * int(t) if sign > 0 else coef / int(t)
            else:
                names[t] += sign
    return coef, names


def dim_poly(d: Dim) -> Poly:
    """Dimension ``d`` as a polynomial in its names (see the comment above)."""
    if isinstance(d, int):
        return {_ONE: Fraction(d)} if d else {}
    terms = _top_terms(d)
    if not all(_TERM.fullmatch(t) or _floordiv_term(t) for t in terms):
        return {frozenset({(d, 1)}): Fraction(1)}
    poly: Poly = {}
    for t in terms:
        if _TERM.fullmatch(t):
            coef, names = dim_factors(t)
            _add(poly, frozenset((k, v) for k, v in names.items() if v), coef)
        else:
            _add(poly, frozenset({(t, 1)}), Fraction(1))
    return poly


def _add(poly: Poly, term: Term, coef: Fraction) -> None:
    total = poly.get(term, Fraction(0)) + coef
    if total:
        poly[term] = total
    else:
        poly.pop(term, None)


def _times(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ta, ca in a.items():
        for tb, cb in b.items():
            powers = Counter(dict(ta))
            powers.update(dict(tb))
            _add(out, frozenset((k, v) for k, v in powers.items() if v), ca * cb)
    return out


def render_dim(coef: Fraction, names: Counter[str]) -> Dim:
    """coef * product of names (negative counts divide), written in lowest terms; a zero
    coefficient is the static size 0 (``n*0`` is 0 whatever ``n`` is)."""
    if coef == 0:
        return 0
    sign, coef = ("-" if coef < 0 else ""), abs(coef)
    up = [k for k, v in names.items() for _ in range(v)]
    down = [k for k, v in names.items() for _ in range(-v)]
    if coef.numerator != 1 or not up:
        up.append(str(coef.numerator))
    if coef.denominator != 1:
        down.append(str(coef.denominator))
    if not down and len(up) == 1 and up[0].isdigit():
        return int(sign + up[0])
    text = sign + "*".join(up)
    return f"{text}/{'*'.join(down)}" if down else text


def render_poly(poly: Poly) -> Dim:
    """A polynomial's text form (its constant term last); an int when it is constant."""
    parts = [str(render_dim(c, Counter(dict(t)))) for t, c in poly.items() if t]
    if not parts:
        return int(poly.get(_ONE, 0))  # a constant polynomial is whole where dims are made
    if _ONE in poly:
        parts.append(str(render_dim(poly[_ONE], Counter())))
    return "+".join(parts)


def derived_dim(numerator: Sequence[Dim], denominator: Sequence[Dim]) -> Dim:
    """The dimension prod(numerator) / prod(denominator), products distributed over sums and
    written in lowest terms, so a whole result is an int:

    >>> derived_dim(["batch", 4], [2]), derived_dim(["batch", 3], [2])
    ('batch*2', 'batch*3/2')
    >>> derived_dim(["batch*4"], [4]), derived_dim(["b", "t"], ["t"]), derived_dim(["n", 6], ["n"])
    ('batch', 'b', 6)
    >>> derived_dim(["n+1", 15], []), derived_dim(["n+1", "m"], ["n+1"])
    ('n*15+15', 'm')

    A division by a sum that does not cancel is kept whole, as one opaque name that no
    sizes bind: ``derived_dim(["n"], ["n+1"])`` is ``'(n)/(n+1)'``.
    """
    num, den = [dim_poly(d) for d in numerator], [dim_poly(d) for d in denominator]
    for p in list(den):  # a factor on both sides cancels, sums included
        if p in num:
            num.remove(p)
            den.remove(p)
    top: Poly = {_ONE: Fraction(1)}
    for p in num:
        top = _times(top, p)
    bottom: Poly = {_ONE: Fraction(1)}
    for p in den:
        bottom = _times(bottom, p)
    if len(bottom) != 1:  # a sum (or zero) below: not a polynomial
        return f"({render_poly(top)})/({render_poly(bottom)})"
    ((term, coef),) = bottom.items()
    inverse: Poly = {frozenset((k, -v) for k, v in term): 1 / coef}
    return render_poly(_times(top, inverse))


def sum_dims(dims: Sequence[Dim]) -> Dim:
    """The dimension sum(dims) (concat's result), like terms added: an int when whole.

    >>> sum_dims([2, 3]), sum_dims(["n", "n"]), sum_dims(["n", 3, "m*2", "n"]), sum_dims(["n", -2])
    (5, 'n*2', 'n*2+m*2+3', 'n+-2')
    """
    total: Poly = {}
    for d in dims:
        for term, coef in dim_poly(d).items():
            _add(total, term, coef)
    return render_poly(total)


def floordiv_dim(d: Dim, k: int) -> Dim:
    """The dimension floor(d / k) for a positive int ``k`` (a strided window's count): an
    int for a static ``d``; the exact quotient where each named term's coefficient is a
    multiple of ``k``; otherwise the opaque term ``"(d)//(k)"``, which :func:`bind_dim`
    evaluates and :func:`sum_dims` adds to like a name.

    >>> floordiv_dim(7, 2), floordiv_dim("n*2+3", 2), floordiv_dim("h+-1", 2)
    (3, 'n+1', '(h+-1)//(2)')
    >>> bind_dim(sum_dims([floordiv_dim("h+-1", 2), 1]), {"h": 224})
    112
    """
    if k < 1:
        raise ValueError(f"floordiv_dim divides by a positive int, got {k}")
    if isinstance(d, int):
        return d // k
    poly = dim_poly(d)
    named = {t: c for t, c in poly.items() if t}
    if all(c.denominator == 1 and c.numerator % k == 0 for c in named.values()):
        constant = poly.get(_ONE, Fraction(0))
        quotient = {t: c / k for t, c in named.items()}
        if constant.denominator == 1:
            _add(quotient, _ONE, Fraction(constant.numerator // k))
            return render_poly(quotient)
    return f"({d})//({k})" if k != 1 else d


def dim_terms(d: Dim) -> list[tuple[Fraction, Counter[str]]]:
    """A dimension as a sum of products (``'n*2+3'``), each as :func:`dim_factors` gives."""
    return [(c, Counter(dict(t))) for t, c in dim_poly(d).items()] or [(Fraction(0), Counter())]


def bind_dim(d: Dim, sizes: dict[str, int]) -> int | None:
    """The size of dimension ``d`` when its names have ``sizes``; None if one is unbound or
    the size is not whole (a derived ``'b*3/2'`` with an odd ``b``).

    >>> bind_dim("batch*2", {"batch": 3}), bind_dim("b*3/2", {"b": 3}), bind_dim(4, {})
    (6, None, 4)
    >>> bind_dim(derived_dim(["n+1", 15], []), {"n": 2}), bind_dim(sum_dims(["n", -2]), {"n": 5})
    (45, 3)
    """
    if isinstance(d, int):
        return d
    if d in sizes:
        return sizes[d]
    total = Fraction(0)
    for term, coef in dim_poly(d).items():
        value = coef
        for name, power in term:
            size = sizes.get(name)
            parts = _floordiv_term(name) if size is None else None
            if parts is not None:
                num, den = (bind_dim(x, sizes) for x in parts)
                size = num // den if num is not None and den else None
            if size is None or (size == 0 and power < 0):
                return None
            value *= Fraction(size) ** power
        total += value
    return int(total) if total.denominator == 1 else None
