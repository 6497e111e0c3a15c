"""Static shapes: integer and symbolic (string) dimensions, broadcasting, axes.

>>> broadcast_shapes(("batch", 1, 4), (3, 1))
('batch', 3, 4)
>>> broadcast_shapes((2, 3), (4, 3))  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
graphdsl.shapes.ShapeError: shapes (2, 3) and (4, 3) do not broadcast: dimension 2 vs 4; ...
"""

from __future__ import annotations

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
    "dim_terms",
    "format_shape",
    "normalize_axes",
    "normalize_axis",
    "render_dim",
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


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def dim_factors(d: Dim) -> tuple[Fraction, Counter[str]]:
    """A dimension as coefficient * product of names / product of names (a name counts -1)."""
    if isinstance(d, int):
        return Fraction(d), Counter()
    coef, names = Fraction(1), Counter[str]()
    parts = d.split("/")
    tokens = [t for part in parts for t in part.split("*")]
    if len(parts) > 2 or not all(_TOKEN.fullmatch(t) for t in tokens):
        return coef, Counter({d: 1})  # a name of the user's own: one opaque factor
    for sign, part in zip((1, -1), parts, strict=False):
        for t in part.split("*"):
            if t.isdigit():
                coef = coef * int(t) if sign > 0 else coef / int(t)
            else:
                names[t] += sign
    return coef, names


def derived_dim(numerator: Sequence[Dim], denominator: Sequence[Dim]) -> Dim:
    """The dimension prod(numerator) / prod(denominator), in lowest terms.

    Names cancel and integer factors reduce, so a whole result is an int:

    >>> derived_dim(["batch", 4], [2]), derived_dim(["batch", 3], [2])
    ('batch*2', 'batch*3/2')
    >>> derived_dim(["batch*4"], [4]), derived_dim(["b", "t"], ["t"]), derived_dim(["n", 6], ["n"])
    ('batch', 'b', 6)
    """
    coef, names = Fraction(1), Counter[str]()
    for d, sign in [(d, 1) for d in numerator] + [(d, -1) for d in denominator]:
        c, n = dim_factors(d)
        coef = coef * c if sign > 0 else coef / c
        for k, v in n.items():
            names[k] += sign * v
    return render_dim(coef, names)


def render_dim(coef: Fraction, names: Counter[str]) -> Dim:
    """coef * product of names (negative counts divide), written in lowest terms; a zero
    coefficient is the static size 0 (``n*0`` is 0 whatever ``n`` is)."""
    if coef == 0:
        return 0
    up = [k for k, v in names.items() for _ in range(v)]
    down = [k for k, v in names.items() for _ in range(-v)]
    if coef.numerator != 1 or not up:
        up.append(str(coef.numerator))
    if coef.denominator != 1:
        down.append(str(coef.denominator))
    if not down and len(up) == 1 and up[0].isdigit():
        return int(up[0])
    text = "*".join(up)
    return f"{text}/{'*'.join(down)}" if down else text


def sum_dims(dims: Sequence[Dim]) -> Dim:
    """The dimension sum(dims) (concat's result), like terms added: an int when whole.

    >>> sum_dims([2, 3]), sum_dims(["n", "n"]), sum_dims(["n", 3, "m*2", "n"])
    (5, 'n*2', 'n*2+m*2+3')
    """
    terms: dict[frozenset[tuple[str, int]], Fraction] = {}
    for d in dims:
        for coef, names in dim_terms(d):
            key = frozenset((k, v) for k, v in names.items() if v)
            terms[key] = terms.get(key, Fraction(0)) + coef
    constant = terms.pop(frozenset(), Fraction(0))
    parts = [str(render_dim(c, Counter(dict(k)))) for k, c in terms.items() if c]
    if constant or not parts:
        parts.append(str(render_dim(constant, Counter())) if constant else "0")
    if len(parts) == 1 and parts[0].lstrip("-").isdigit():
        return int(parts[0])
    return "+".join(parts)


def dim_terms(d: Dim) -> list[tuple[Fraction, Counter[str]]]:
    """A dimension as a sum of products (``'n*2+3'``), each as :func:`dim_factors` gives."""
    if isinstance(d, str) and "+" in d and all(_TERM.fullmatch(t) for t in d.split("+")):
        return [dim_factors(t) for t in d.split("+")]
    return [dim_factors(d)]


_TERM = re.compile(r"[A-Za-z0-9_*/]+")


def bind_dim(d: Dim, sizes: dict[str, int]) -> int | None:
    """The size of dimension ``d`` when its names have ``sizes``; None if one is unbound or
    the size is not whole (a derived ``'b*3/2'`` with an odd ``b``).

    >>> bind_dim("batch*2", {"batch": 3}), bind_dim("b*3/2", {"b": 3}), bind_dim(4, {})
    (6, None, 4)
    """
    if isinstance(d, int):
        return d
    if d in sizes:
        return sizes[d]
    total = Fraction(0)
    for coef, names in dim_terms(d):
        if names == Counter({d: 1}):  # an opaque name of the user's own, unbound
            return None
        value = coef
        for name, power in names.items():
            if name not in sizes or (sizes[name] == 0 and power < 0):
                return None
            value *= Fraction(sizes[name]) ** power
        total += value
    return int(total) if total.denominator == 1 else None
