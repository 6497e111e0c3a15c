"""Static shapes: integer and symbolic dimensions, broadcasting, axes.

A shape is a tuple of dimensions: a static size is a plain ``int``, a symbolic one a
:class:`~graphdsl.dims.SymbolicDim` (a name) or :class:`~graphdsl.dims.AlgebraicDim` (a
polynomial in names, with MAX's algebra: :mod:`graphdsl.dims`), both ``str`` subclasses whose
value is graphdsl's text (``"batch"``, ``"n*2+-1"``). A shape given by the user
(:func:`shape_of`) may name its dimensions with plain strs; a str that is graphdsl's text of
a dimension (``"n*2+-1"``, what graphdsl prints) reads back as that dimension.

>>> broadcast_shapes(("batch", 1, 4), (3, 1))
('batch', 3, 4)
>>> x, y = shape_of(("b", "past", 8)), shape_of(("b", "seq", 8))
>>> x[1] + y[1], shape_of(("b", x[1] + y[1])) == ("b", "past+seq")
(Dim('past') + Dim('seq'), True)
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
from typing import Any, TypeAlias

from graphdsl import dims as _dims
from graphdsl.dims import (
    AlgebraicDim,
    FloorDiv,
    Poly,
    StaticDim,
    SymbolicDim,
    as_dim,
    core_dim,
    dim_text,
)

__all__ = [
    "AlgebraicDim",
    "Dim",
    "Shape",
    "ShapeError",
    "StaticDim",
    "SymbolicDim",
    "as_dim",
    "bind_dim",
    "broadcast_shapes",
    "core_dim",
    "derived_dim",
    "dim_factors",
    "dim_poly",
    "dim_repr",
    "dim_terms",
    "dim_text",
    "dims_of",
    "floordiv_dim",
    "format_shape",
    "normalize_axes",
    "normalize_axis",
    "render_dim",
    "render_poly",
    "shape_of",
    "shape_repr",
    "sum_dims",
]

# A dimension in graphdsl's shapes: an int, or a str (a SymbolicDim or AlgebraicDim; a plain
# str where a user gave one, until shape_of or an op's type rule reads it)
Dim: TypeAlias = int | str
Shape: TypeAlias = tuple[Dim, ...]


class ShapeError(ValueError):
    """Shapes that do not fit an op (broadcasting, matmul, reshape, axes).

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.float32, (2, 3))})
    >>> g.inputs[0].reshape(4, 2)
    Traceback (most recent call last):
        ...
    graphdsl.shapes.ShapeError: reshape (at ...): cannot reshape (2, 3) (6 elements) to (4, 2)
    (8 elements); the element counts must match
    """


def format_shape(shape: Sequence[Any]) -> str:
    """``(batch, 4)``, dims in graphdsl's text (``(n*2+-1, 4)``); a scalar is ``()``."""
    if len(shape) == 1:
        return f"({dim_text(shape[0])},)"
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


def dim_repr(d: Any) -> str:
    """A dimension as graphdsl's messages quote it: an int as itself, a symbolic one as its
    text in quotes (``'n*2'``, as a user writes it; ``repr()`` gives MAX's ``Dim('n') * Dim(2)``).

    >>> dim_repr(3), dim_repr(as_dim("n") * 2)
    ('3', "'n*2'")
    """
    return repr(d) if isinstance(d, int) else repr(dim_text(d))


def shape_repr(shape: Sequence[Any]) -> str:
    """A shape as graphdsl's messages quote it, a tuple of ints and texts: ``('b', 4)``."""
    inner = ", ".join(dim_repr(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def shape_of(dims: Sequence[Any]) -> Shape:
    """Validate and normalize a user-given shape: ints (a ``StaticDim`` too), dims, and strs
    (a name, or graphdsl's text of a dimension: :func:`~graphdsl.dims.as_dim`).

    >>> shape_of(["batch", 4, "n*2+-1"])
    (Dim('batch'), 4, (Dim('n') * Dim(2)) + Dim(-1))
    """
    out: list[Dim] = []
    for d in dims:
        if type(d) is int or isinstance(d, (SymbolicDim, AlgebraicDim)):
            v: Any = d
        elif isinstance(d, StaticDim) or (isinstance(d, int) and not isinstance(d, bool)):
            v = int(d)
        elif isinstance(d, str) and d:
            v = core_dim(d)
        elif isinstance(d, str):
            raise ShapeError(
                f"a symbolic dimension needs a name, got '' in {tuple(dims)}; use a name "
                "like 'batch'"
            )
        else:
            raise ShapeError(
                f"a dimension must be an int or a symbolic name (str), got {d!r} in "
                f"{tuple(dims)}; use sizes like 3 and names like 'batch'"
            )
        if isinstance(v, int) and v < 0:
            raise ShapeError(
                f"a dimension must be >= 0, got {v} in {tuple(dims)}; name a dimension whose "
                "size varies ('batch') instead of -1"
            )
        out.append(v)
    return tuple(out)


def dims_of(shape: tuple[Any, ...]) -> Shape:
    """An op's result shape with its dims as graphdsl's shapes hold them (ints, and
    SymbolicDim or AlgebraicDim for a plain str); the same tuple where they already are."""
    if all(type(d) is int or isinstance(d, (SymbolicDim, AlgebraicDim)) for d in shape):
        return shape
    return tuple(core_dim(d) for d in shape)


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
                    f"shapes {listed} do not broadcast: dimension {dim_text(dim)} vs "
                    f"{dim_text(d)}; dimensions aligned from the right must be equal or 1 "
                    "(reshape or broadcast_to first)"
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


def dim_poly(d: Dim | _dims.Dim) -> Poly:
    """Dimension ``d`` as a polynomial: a term (a sorted tuple of (atom, power), an atom a
    name or a :class:`~graphdsl.dims.FloorDiv`) -> its non-zero coefficient.

    >>> dim_poly("n*2+-1")
    {(('n', 1),): Fraction(2, 1), (): Fraction(-1, 1)}
    """
    return _dims.dim_poly(as_dim(d))


def render_poly(poly: Poly) -> Dim:
    """The dimension of a polynomial: an int where it is static and whole."""
    return core_dim(_dims.poly_dim(poly))


def _atom_text(a: str | FloorDiv) -> str:
    return a if isinstance(a, str) else a.text


def dim_factors(d: Dim) -> tuple[Fraction, Counter[str]]:
    """A one-term dimension as coefficient * product of names / product of names (a name
    counts -1; a floor division is a name, its text); a sum is one opaque factor.

    >>> dim_factors("b*3/2"), dim_factors("n+1")
    ((Fraction(3, 2), Counter({'b': 1})), (Fraction(1, 1), Counter({'n+1': 1})))
    """
    terms = dim_poly(d)
    if len(terms) > 1:
        return Fraction(1), Counter({dim_text(as_dim(d)): 1})
    if not terms:
        return Fraction(0), Counter()
    ((term, coef),) = terms.items()
    return coef, Counter({_atom_text(a): p for a, p in term})


def render_dim(coef: Fraction, names: Counter[str]) -> Dim:
    """coef * product of names (negative counts divide; a name may be any dimension's text),
    in lowest terms; a zero coefficient is the static size 0 (``n*0`` is 0 whatever ``n``).

    >>> render_dim(Fraction(3, 2), Counter({"b": 1})), render_dim(Fraction(2), Counter())
    (Dim('b') * Dim(3) / Dim(2), 2)
    """
    value: _dims.Dim = _dims.poly_dim({(): coef} if coef else {})
    for name, k in names.items():
        for _ in range(abs(k) if coef else 0):
            value = value * as_dim(name) if k > 0 else _dims.divide(value, as_dim(name))
    return core_dim(value)


def derived_dim(numerator: Sequence[Dim], denominator: Sequence[Dim]) -> Dim:
    """The dimension prod(numerator) / prod(denominator), products distributed over sums and
    written in lowest terms, so a whole result is an int:

    >>> derived_dim(["batch", 4], [2]), derived_dim(["batch", 3], [2])
    (Dim('batch') * Dim(2), Dim('batch') * Dim(3) / Dim(2))
    >>> derived_dim(["batch*4"], [4]), derived_dim(["b", "t"], ["t"]), derived_dim(["n", 6], ["n"])
    (Dim('batch'), Dim('b'), 6)
    >>> derived_dim(["n+1", 15], []), derived_dim(["n+1", "m"], ["n+1"])
    ((Dim('n') * Dim(15)) + Dim(15), Dim('m'))

    A division by a sum that does not cancel is kept whole, as one opaque name that no
    sizes bind: ``derived_dim(["n"], ["n+1"])`` is ``'(n)/(n+1)'``.
    """
    num, den = [as_dim(d) for d in numerator], [as_dim(d) for d in denominator]
    for p in list(den):  # a factor on both sides cancels, sums included
        if p in num:
            num.remove(p)
            den.remove(p)
    top: _dims.Dim = StaticDim(1)
    for p in num:
        top = top * p
    bottom: _dims.Dim = StaticDim(1)
    for p in den:
        bottom = bottom * p
    return core_dim(_dims.divide(top, bottom))


def sum_dims(dims: Sequence[Dim]) -> Dim:
    """The dimension sum(dims) (concat's result), like terms added: an int when whole.

    >>> sum_dims([2, 3]), sum_dims(["n", "n"]), sum_dims(["n", -2]) == "n+-2"
    (5, Dim('n') * Dim(2), True)
    >>> dim_text(sum_dims(["n", 3, "m*2", "n"]))
    'm*2+n*2+3'
    """
    total: _dims.Dim = StaticDim(0)
    for d in dims:
        total = total + as_dim(d)
    return core_dim(total)


def floordiv_dim(d: Dim, k: int) -> Dim:
    """The dimension floor(d / k) for a positive int ``k`` (a strided window's count): an
    int for a static ``d``; the exact quotient where each named term's coefficient is a
    multiple of ``k``; otherwise the floor division ``d // k``, which :func:`bind_dim`
    evaluates and :func:`sum_dims` adds to like a name.

    >>> floordiv_dim(7, 2), floordiv_dim("n*2+3", 2), dim_text(floordiv_dim("h+-1", 2))
    (3, Dim('n') + Dim(1), '(h+-1)//(2)')
    >>> bind_dim(sum_dims([floordiv_dim("h+-1", 2), 1]), {"h": 224})
    112
    """
    if k < 1:
        raise ValueError(f"floordiv_dim divides by a positive int, got {k}")
    if isinstance(d, int):
        return d // k
    dim = as_dim(d)
    poly = _dims.dim_poly(dim)
    named = {t: c for t, c in poly.items() if t}
    constant = poly.get((), Fraction(0))
    if constant.denominator == 1 and all(
        c.denominator == 1 and c.numerator % k == 0 for c in named.values()
    ):
        quotient = {t: c / k for t, c in named.items()}
        if constant // k:
            quotient[()] = Fraction(constant.numerator // k)
        return core_dim(_dims.poly_dim(quotient))
    return core_dim(dim // k if k != 1 else dim)


def dim_terms(d: Dim) -> list[tuple[Fraction, Counter[str]]]:
    """A dimension as a sum of products (``'n*2+3'``), each as :func:`dim_factors` gives."""
    return [(c, Counter({_atom_text(a): p for a, p in t})) for t, c in dim_poly(d).items()] or [
        (Fraction(0), Counter())
    ]


def bind_dim(d: Dim | _dims.Dim, sizes: dict[str, int]) -> int | None:
    """The size of dimension ``d`` when its names have ``sizes``; None if one is unbound or
    the size is not whole (a derived ``'b*3/2'`` with an odd ``b``).

    >>> bind_dim("batch*2", {"batch": 3}), bind_dim("b*3/2", {"b": 3}), bind_dim(4, {})
    (6, None, 4)
    >>> bind_dim(derived_dim(["n+1", 15], []), {"n": 2}), bind_dim(sum_dims(["n", -2]), {"n": 5})
    (45, 3)
    """
    if isinstance(d, int):
        return d
    if isinstance(d, StaticDim):
        return d.dim
    if d in sizes:
        return sizes[d]  # type: ignore[index]
    total = Fraction(0)
    for term, coef in dim_poly(d).items():
        value = coef
        for atom, power in term:
            size = sizes.get(_atom_text(atom))
            if size is None and isinstance(atom, FloorDiv):
                num, den = bind_dim(atom.num, sizes), bind_dim(atom.den, sizes)
                size = num // den if num is not None and den else None
            if size is None or (size == 0 and power < 0):
                return None
            value *= Fraction(size) ** power
        total += value
    return int(total) if total.denominator == 1 else None


def bound_size(dims: dict[str, int], d: Dim) -> int:
    """The run-time size of a dimension of a target shape (a name, or one derived from names)."""
    if isinstance(d, int):
        return d
    size = bind_dim(d, dims)
    if size is None:
        if d in dims or all(n in dims for n in re.findall(r"[A-Za-z_]\w*", d)):
            raise ShapeError(
                f"the dimension {dim_repr(d)} is not a whole size when {dims}; bind the inputs' "
                "dimensions to sizes for which it is"
            )
        raise ShapeError(
            f"the symbolic dimension {dim_repr(d)} is not a dimension of any graph input, so "
            "its size "
            "is unknown at run time; use a concrete size or a name that an input has"
        )
    return size
